import CYaOK
import Testing
import YaOK
@testable import YaOKFFI

/// Every disconnect reason the core has gets a YAOK_DISCONNECT_* number of its own
/// (Connectivity+FFI.swift), in the header's numbering: a new reason without one, or two
/// sharing one, fails here.
@Suite struct ConnectionCodesTests {
    @Test func everyReasonHasADistinctHeaderNumber() {
        let codes = TransportConnection.Reason.allCases.map(ConnectionCodes.code)
        #expect(Set(codes).count == codes.count)
        #expect(!codes.contains(YAOK_DISCONNECT_NONE))
        #expect(ConnectionCodes.code(.radioOff) == YAOK_DISCONNECT_RADIO_OFF && YAOK_DISCONNECT_RADIO_OFF == 16)
        #expect(ConnectionCodes.code(.noNetwork) == YAOK_DISCONNECT_NO_NETWORK && YAOK_DISCONNECT_NO_NETWORK == 17)
    }

    @Test func noNetworkReadsBackFromDiagnostics() {
        let json = JSON.object([("state", .string("disconnected")), ("reason", .string("no_network"))])
        let codes = ConnectionCodes(json: json)
        #expect(codes.state == YAOK_CONNECTIVITY_DISCONNECTED && codes.reason == YAOK_DISCONNECT_NO_NETWORK)
    }
}
