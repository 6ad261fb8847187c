import CYaOK
import Testing
import YaOK
@testable import YaOKFFI

/// The C statuses and warning bits come from the FFI layer's mapping (StatusCodes+FFI.swift)
/// onto the header's constants, not from the core's raw values (the CLI's numbers). Both
/// sides are pinned: every core code has a header constant of its own and comes back from
/// it, and the header's numbers are written out, so a C app compiled against include/yaok.h
/// keeps its numbers whatever the core does.
@Suite struct StatusCodesTests {
    @Test func everyCodeMapsToADistinctHeaderStatusAndBack() {
        let statuses = YaOKError.Code.allCases.map(\.status)
        #expect(Set(statuses).count == statuses.count)
        #expect(!statuses.contains(statusOK))
        for code in YaOKError.Code.allCases {
            #expect(YaOKError.Code(status: code.status) == code, "\(code)")
        }
        #expect(YaOKError.Code(status: statusOK) == nil)
        #expect(YaOKError.Code(status: 99) == nil)
    }

    @Test func statusesHaveTheHeadersNumbers() {
        #expect(YaOKError.Code.nullArgument.status == Int32(YAOK_E_NULL_ARGUMENT))
        #expect(YaOKError.Code.invalidCard.status == Int32(YAOK_E_INVALID_CARD))
        #expect(YaOKError.Code.closed.status == Int32(YAOK_E_CLOSED))
        #expect(YaOKError.Code.relayUnavailable.status == Int32(YAOK_E_RELAY_UNAVAILABLE))
        #expect(YaOKError.Code.internal.status == Int32(YAOK_E_INTERNAL))
        // The numbers themselves, as C apps compiled against the header have them.
        let numbers = YaOKError.Code.allCases.map(\.status)
        #expect(numbers == [100, 101, 102, 103, 200, 201, 202, 203, 300, 301, 302, 303, 304, 305, 306,
                            400, 401, 402, 403, 404, 405, 406, 407, 408, 409, 410, 411, 412, 413, 414, 415, 416, 417,
                            500, 501, 502, 503, 504, 505, 506, 507, 600, 601, 602, 603, 604, 605, 606, 900, 901, 902])
        #expect(statusOK == 0)
    }

    @Test func theBoundaryReturnsTheHeadersStatus() {
        #expect(boundary { throw YaOKError(.wrongPIN) } == Int32(YAOK_E_WRONG_PIN))
        #expect(boundary { struct Other: Error {}; throw Other() } == Int32(YAOK_E_INTERNAL))
        #expect(boundary {} == Int32(YAOK_OK))
    }

    @Test func everyWarningHasItsHeaderBit() {
        #expect(Warnings.allZeroPIN.abiCode == YAOK_WARNING_ALL_ZERO_PIN)
        #expect(Warnings.autoLockDisabled.abiCode == YAOK_WARNING_AUTO_LOCK_DISABLED)
        #expect(Warnings([.allZeroPIN, .autoLockDisabled]).abiCode == YAOK_WARNING_ALL_ZERO_PIN | YAOK_WARNING_AUTO_LOCK_DISABLED)
        #expect(Warnings().abiCode == 0)
        #expect([YAOK_WARNING_ALL_ZERO_PIN, YAOK_WARNING_AUTO_LOCK_DISABLED] == [1, 2])
    }
}
