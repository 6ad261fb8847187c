import CYaOK
import Foundation
import Testing
@testable import YaOKFFI

private let ok = Int32(YAOK_OK)
private let invalidArgument = Int32(YAOK_E_INVALID_ARGUMENT)

/// Handles of the wrong type, in the Swift suite (the C and Python tests have their own):
/// every entry point refuses a live handle of another type before it dereferences it.
@Suite struct WrongHandleTypeTests {
    @Test func anEntryPointRefusesALiveHandleOfAnotherType() throws {
        var identity: OpaquePointer?
        #expect(yaok_identity_new("Alice", &identity) == ok)
        defer { yaok_identity_free(identity) }
        var json: UnsafeMutablePointer<CChar>?
        #expect(yaok_node_status(identity, &json) == invalidArgument)
        #expect(json == nil)
        #expect(String(cString: yaok_last_error_message()) == "node is a yaok_identity, not a yaok_node")
        #expect(yaok_node_lock(identity) == invalidArgument)
        #expect(yaok_card_name(identity, &json) == invalidArgument)

        // And the identity is untouched by a _free of another type.
        yaok_node_free(identity)
        yaok_card_free(identity)
        var name: UnsafeMutablePointer<CChar>?
        #expect(yaok_identity_name(identity, &name) == ok)
        #expect(name.map { String(cString: $0) } == "Alice")
        yaok_string_free(name)
    }

    @Test func aNodeHandleIsNotAnIdentity() throws {
        let dir = NSTemporaryDirectory() + "yaok-ffi-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var node: OpaquePointer?
        #expect(yaok_node_open(dir, UInt32(YAOK_NODE_OPEN_DEFAULT), &node) == ok)
        defer { yaok_node_free(node) }
        var name: UnsafeMutablePointer<CChar>?
        #expect(yaok_identity_name(node, &name) == invalidArgument)
        yaok_identity_free(node)
        var json: UnsafeMutablePointer<CChar>?
        #expect(yaok_node_status(node, &json) == ok)
        yaok_string_free(json)
    }
}

/// Returned strings and bytes: the library keeps each one's length with the allocation,
/// wipes the whole buffer when it is freed, and ignores pointers it does not know.
/// Serialized: it counts the library's live allocations.
@Suite(.serialized) struct ReturnedMemoryTests {
    @Test func aFreedStringIsWipedWholeFirst() throws {
        let secretText = "a decrypted message that must not linger"
        var out: UnsafeMutablePointer<CChar>?
        try withUnsafeMutablePointer(to: &out) { try give(secretText, to: $0) }
        let p = try #require(out)
        #expect(String(cString: p) == secretText)
        var seen: [UInt8] = []
        let freed = Allocations.free(UnsafeMutableRawPointer(p)) { raw in
            seen = Array(UnsafeRawBufferPointer(start: raw, count: secretText.utf8.count + 1))
            free(raw)
        }
        #expect(freed)
        #expect(seen == [UInt8](repeating: 0, count: secretText.utf8.count + 1))
    }

    @Test func freedBytesAreWipedToTheRecordedLengthWhateverTheCallerSays() throws {
        var out: UnsafeMutablePointer<UInt8>?
        var length = 0
        try give([UInt8](repeating: 0x5a, count: 300), to: &out, length: &length)
        let p = try #require(out)
        #expect(length == 300)
        var seen: [UInt8] = []
        Allocations.free(UnsafeMutableRawPointer(p)) { raw in
            seen = Array(UnsafeRawBufferPointer(start: raw, count: 300))
            free(raw)
        }
        #expect(seen == [UInt8](repeating: 0, count: 300))
    }

    @Test func freeFunctionsIgnoreWhatTheyDidNotHandOut() throws {
        let before = Allocations.liveCount
        var identity: OpaquePointer?
        #expect(yaok_identity_new("Alice", &identity) == ok)
        defer { yaok_identity_free(identity) }
        var name: UnsafeMutablePointer<CChar>?
        #expect(yaok_identity_name(identity, &name) == ok)
        #expect(Allocations.liveCount == before + 1)
        yaok_string_free(name)
        #expect(Allocations.liveCount == before)
        yaok_string_free(name)  // a second free: no-op
        #expect(Allocations.liveCount == before)

        var foreign: [UInt8] = Array("not the library's".utf8)
        foreign.withUnsafeMutableBufferPointer { yaok_bytes_free($0.baseAddress, 1 << 20) }
        #expect(String(decoding: foreign, as: UTF8.self) == "not the library's")
    }

    /// The PIN crosses into guarded memory without becoming a String: invalid UTF-8 is
    /// still refused, as for every other string argument.
    @Test func aPINThatIsNotUTF8IsRefused() throws {
        let dir = NSTemporaryDirectory() + "yaok-ffi-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var node: OpaquePointer?
        #expect(yaok_node_open(dir, UInt32(YAOK_NODE_OPEN_DEFAULT), &node) == ok)
        defer { yaok_node_free(node) }
        let bad: [CChar] = [0x31, 0x32, 0x33, 0x34, 0x35, CChar(bitPattern: 0xff), 0]
        var warnings: UInt32 = 0
        #expect(yaok_node_setup(node, "Alice", bad, bad, &warnings) == Int32(YAOK_E_INVALID_UTF8))
        #expect(yaok_node_setup(node, "Alice", "135790", "135790", &warnings) == ok)
        #expect(yaok_node_lock(node) == ok)
        #expect(yaok_node_unlock(node, bad) == Int32(YAOK_E_INVALID_UTF8))
        #expect(yaok_node_unlock(node, "135791") == Int32(YAOK_E_WRONG_PIN))
        #expect(yaok_node_unlock(node, "135790") == ok)
    }
}
