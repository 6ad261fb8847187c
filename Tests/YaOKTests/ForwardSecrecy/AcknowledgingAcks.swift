import Testing
@testable import YaOKSupport
@testable import YaOKWire
@testable import YaOKCrypto
@testable import YaOKStore
@testable import YaOKNode

extension Node {
    /// The acks in the outbox that acknowledge messages, without the release-only acks
    /// (docs/PROTOCOL.md §13.3 rule 6, §13.5) that forward secrecy, on by default, adds
    /// beside the ack of each message from a contact not yet heard to announce keys. A
    /// release-only ack is the only one whose plaintext is 41 bytes (count 0 || announcement:
    /// 1 + 16n never is, 1 + 16n + 40 only for n = 0), so its payload is 24 + 41 + 16 = 81.
    var acknowledgingAcks: [OutboxRow] {
        get throws {
            try state.withLock { try $0.store!.outboxRows(kind: .ack) }.filter { row in
                guard case .routed(_, let payload) = try Packet.decode(row.packet) else { return true }
                return payload.count != Sodium.aeadNonceLength + 1 + Announcement.encodedLength + Sodium.aeadTagLength
            }
        }
    }
}
