import CYaOK
import Testing
import YaOK
@testable import YaOKFFI

/// The ABI numbers of a message's status and direction come from the FFI layer's mapping
/// (MessageCodes+FFI.swift), not from the core's raw values, which are the SQLite encoding
/// (pinned by YaOKTests' MessageCodesStoredTests). Both are written out here as numbers: a
/// C app compiled against include/yaok.h keeps its numbers whatever the header or core do.
@Suite struct MessageCodesTests {
    @Test func statusesHaveTheirABINumbers() {
        let codes = MessageStatus.allCases.map { "\($0.name)=\($0.abiCode)" }
        #expect(codes == ["pending=0", "sending=1", "sent=2", "delivered=3", "failed=4"])
        #expect([YAOK_MESSAGE_PENDING, YAOK_MESSAGE_SENDING, YAOK_MESSAGE_SENT, YAOK_MESSAGE_DELIVERED,
                 YAOK_MESSAGE_FAILED] == [0, 1, 2, 3, 4])
    }

    @Test func directionsHaveTheirABINumbers() {
        #expect(MessageDirection.outgoing.abiCode == 0 && YAOK_DIRECTION_OUTGOING == 0)
        #expect(MessageDirection.incoming.abiCode == 1 && YAOK_DIRECTION_INCOMING == 1)
    }
}
