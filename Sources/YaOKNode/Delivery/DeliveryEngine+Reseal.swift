import YaOKSupport
import YaOKWire
import YaOKCrypto
import YaOKStore

extension DeliveryEngine {
    /// Seals a queued message again after its acknowledgement window passed at a relay
    /// (docs/PROTOCOL.md §6.1, "Sealed again"): same message ID, creation time and lifetime,
    /// a fresh ephemeral key, so the next post is new bytes. Posting the same bytes again
    /// could never bring a lost acknowledgement back: a relay keeps one copy of identical
    /// bytes after the recipient's DELETE and answers a re-post ACCEPTED without storing it
    /// (§8.3), and a recipient answers a packet it has already taken with a receipt only
    /// (§4.8); a re-sealed packet is stored again and opened again, and the recipient, who
    /// keeps one copy of the message, acknowledges it again (§6.2).
    ///
    /// Needs the keys: while locked the packet is left as it is (the next window reseals).
    mutating func reseal(_ row: OutboxRow, _ store: Store, _ keys: UnlockedKeys?) throws {
        guard row.kind == .message, let keys,
              let peer = try directory(store, keys)?.byContact[row.contactID],
              let message = try store.outgoingMessage(messageID: row.packetID.bytes, cipher: keys.cipher) else { return }
        let (old, _) = try RoutedHeader.parse(row.packet)
        let (header, packet) = try sealMessage(Array(message.text.utf8), to: peer, createdMs: old.createdMs,
                                               messageID: row.packetID, lifetimeMinutes: old.lifetimeMinutes, store, keys)
        guard header.expiresAtMs == row.expiresAt else { return }  // never lengthens or shortens its life
        try store.replaceOutboxPacket(row.packetID, packet: packet)
    }
}
