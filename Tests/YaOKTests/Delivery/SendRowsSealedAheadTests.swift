import Testing
@testable import YaOKSupport
@testable import YaOKWire
@testable import YaOKStore
@testable import YaOKNode

/// A send's message and outbox rows are sealed on the caller's thread, outside the node's
/// lock (`SealedSend.rows`): the group's write only binds them (issue 20: the lock paces the
/// groups). What it stores is what sealing at the insert stored: the body opens under the
/// same associated data, and the MACs are those of the same fields.
@Suite struct SendRowsSealedAheadTests {
    @Test func theGroupsWriteStoresTheRowsSealedBeforeIt() throws {
        let pair = try Pair()
        defer { pair.close() }
        let node = pair.alice
        let text = "sealed before the lock"
        let (ticket, planned, keys) = try node.withUnlocked { store, keys, s in
            let (ticket, planned) = try s.delivery.planSend([(pair.bobID, text)], store, keys)
            return (ticket, planned, keys)
        }
        let send = SealedSend(keys: keys, messages: try planned.map { try DeliveryEngine.seal($0, by: keys.identity) })
        let rows = try #require(try send.rows.get().first)
        let sealed = try #require(send.messages.first)
        _ = try node.sendCommits.commit(ticket: ticket, .success(send)) { try node.writeSendGroup($0) }.get()

        let id = sealed.plan.messageID
        let (stored, outboxMAC) = try node.withDatabase { db in
            (try db.rows("SELECT body, mac FROM messages WHERE message_id = ?", [.blob(id.bytes)]) { ($0.blob(0), $0.blob(1)) }.first,
             try db.rows("SELECT mac FROM outbox WHERE packet_id = ?", [.blob(id.bytes)]) { $0.blob(0) }.first)
        }
        let (body, mac) = try #require(stored)
        // The very bytes sealed before the write: none sealed again under the lock (the
        // body's nonce is random, so a body sealed at the insert would differ).
        #expect(body == rows.message.body)
        #expect(mac == rows.message.mac)
        #expect(outboxMAC == rows.outbox.mac)
        // And what sealing at the insert made: the same MAC inputs, the same associated data.
        let t = sealed.plan.createdMs
        #expect(mac == keys.cipher.mac(.message(conversation: pair.bobID, messageID: id.bytes,
                                                direction: MessageDirection.outgoing.rawValue,
                                                status: MessageStatus.pending.rawValue, senderTimestamp: t, createdAt: t,
                                                sentAt: nil, receivedAt: nil, unread: false)))
        #expect(try keys.cipher.openPaddedString(body, ad: RowAD.messageBody(conversation: pair.bobID, messageID: id.bytes,
                                                                             direction: MessageDirection.outgoing.rawValue))
                == text)
        #expect(outboxMAC == keys.cipher.mac(.outbox(packetID: id.bytes, kind: OutboxRow.Kind.message.rawValue,
                                                     contactID: pair.bobID, expiresAt: sealed.header.expiresAtMs,
                                                     packet: sealed.packet)))
        // Read back through the store, as any row: its MAC checks, its text opens.
        #expect(try node.outgoingMessage(id).text == text)
        #expect(try node.outbox().contains { $0.messageID == id })
    }
}
