import YaOKSupport

extension RelayFrame {
    /// The frame's payload (to be sent in a stream frame, §4.6).
    public func encode() -> [UInt8] {
        var out: [UInt8] = []
        switch self {
        case .auth(let pseudonym, let signature):
            out = [Tag.auth.rawValue, RelayFrame.version] + pseudonym + signature
        case .subscribe(let proofs):
            out = [Tag.subscribe.rawValue]
            out.appendBigEndian(UInt64(proofs.count), count: 2)
            for p in proofs { out += p.mailbox.bytes + p.signature }
            out += [UInt8](repeating: 0, count: max(0, Self.maxSubscribePerFrame - proofs.count) * Self.subscribeEntryLength)
        case .post(let request, let mailbox, let signature, let packet):
            out = [Tag.post.rawValue]
            out.appendBigEndian(UInt64(request), count: 4)
            out += mailbox.bytes + signature + packet
        case .delete(let refs):
            out = [Tag.delete.rawValue]
            out.appendBigEndian(UInt64(refs.count), count: 2)
            for r in refs { out += r.mailbox.bytes + r.messageID.bytes }
            let room = Self.deleteBuckets.first { $0 >= refs.count } ?? refs.count
            out += [UInt8](repeating: 0, count: (room - refs.count) * Self.deleteEntryLength)
        case .ping(let request):
            out = [Tag.ping.rawValue]
            out.appendBigEndian(UInt64(request), count: 4)
        case .challenge(let nonce, let relay):
            out = [Tag.challenge.rawValue, RelayFrame.version] + nonce + relay
        case .ready(let lifetime, let rate, let remaining):
            out = [Tag.ready.rawValue]
            for v in [lifetime, rate, remaining] { out.appendBigEndian(UInt64(v), count: 4) }
        case .subscribed(let count):
            out = [Tag.subscribed.rawValue]
            out.appendBigEndian(UInt64(count), count: 2)
        case .accepted(let request):
            out = [Tag.accepted.rawValue]
            out.appendBigEndian(UInt64(request), count: 4)
        case .deliver(let mailbox, let packet):
            out = [Tag.deliver.rawValue] + mailbox.bytes + packet
        case .pong(let request):
            out = [Tag.pong.rawValue]
            out.appendBigEndian(UInt64(request), count: 4)
        case .carry(let message):
            out = [Tag.carry.rawValue, message.kind.rawValue] + ((try? message.encodeBody()) ?? [])
        case .carryFromRelay(let message):
            out = [Tag.carryFromRelay.rawValue, message.kind.rawValue] + ((try? message.encodeBody()) ?? [])
        case .error(let e):
            out = [Tag.error.rawValue]
            out.appendBigEndian(UInt64(e.request), count: 4)
            out.append(e.code.rawValue)
            out.appendBigEndian(UInt64(e.retryAfterSeconds), count: 4)
            out += Array(e.message.utf8)
        }
        return out
    }

    /// Decodes one frame's payload. Throws `malformedPacket` for an unknown type, a wrong
    /// version, a count out of range, a truncated field or trailing bytes, `frameTooLarge`
    /// above `maxLength`. Packets inside POST and DELIVER are not parsed here (the relay
    /// parses their routed header itself, the client hands them to its node).
    public static func decode(_ bytes: [UInt8]) throws -> RelayFrame {
        guard bytes.count <= maxLength else {
            throw YaOKError(.frameTooLarge, "Relay frame of \(bytes.count) bytes exceeds \(maxLength)")
        }
        var r = ByteReader(bytes[...])
        guard let tag = Tag(rawValue: try r.u8("frame type")) else {
            throw YaOKError(.malformedPacket, "Unknown relay frame type 0x\(Hex.encode([bytes[0]]))")
        }
        let frame: RelayFrame
        switch tag {
        case .auth:
            try expectVersion(&r)
            frame = .auth(pseudonym: Array(try r.bytes(keyLength, "pseudonym")),
                          signature: Array(try r.bytes(signatureLength, "signature")))
        case .subscribe:
            let count = Int(try r.u16("count"))
            guard (1...maxSubscribePerFrame).contains(count) else {
                throw YaOKError(.malformedPacket, "SUBSCRIBE count \(count) is outside 1...\(maxSubscribePerFrame)")
            }
            var proofs: [MailboxProof] = []
            proofs.reserveCapacity(count)
            for _ in 0..<count {
                proofs.append(try MailboxProof(mailbox: MailboxID(bytes: try r.bytes(keyLength, "mailbox")),
                                               signature: Array(try r.bytes(signatureLength, "signature"))))
            }
            try expectPadding(&r, slots: maxSubscribePerFrame - count, entryLength: subscribeEntryLength, "SUBSCRIBE")
            frame = .subscribe(proofs)
        case .post:
            let request = UInt32(try r.uint(4, "request"))
            guard request != 0 else { throw YaOKError(.malformedPacket, "POST request 0 is reserved for the session") }
            let mailbox = try MailboxID(bytes: try r.bytes(keyLength, "mailbox"))
            let signature = Array(try r.bytes(signatureLength, "signature"))
            let packet = Array(r.rest())
            guard !packet.isEmpty else { throw YaOKError(.malformedPacket, "POST without a packet") }
            frame = .post(request: request, mailbox: mailbox, signature: signature, packet: packet)
        case .delete:
            let count = Int(try r.u16("count"))
            guard (1...maxDeletePerFrame).contains(count) else {
                throw YaOKError(.malformedPacket, "DELETE count \(count) is outside 1...\(maxDeletePerFrame)")
            }
            var refs: [StoredPacketRef] = []
            refs.reserveCapacity(count)
            for _ in 0..<count {
                let mailbox = try MailboxID(bytes: try r.bytes(keyLength, "mailbox"))
                refs.append(StoredPacketRef(mailbox: mailbox, messageID: try MessageID(bytes: try r.bytes(MessageID.length, "message ID"))))
            }
            let room = deleteBuckets.first { $0 >= count } ?? count
            try expectPadding(&r, slots: room - count, entryLength: deleteEntryLength, "DELETE")
            frame = .delete(refs)
        case .ping:
            frame = .ping(request: UInt32(try r.uint(4, "request")))
        case .challenge:
            try expectVersion(&r)
            frame = .challenge(nonce: Array(try r.bytes(nonceLength, "nonce")),
                               relay: Array(try r.bytes(relayIdentifierLength, "relay identifier")))
        case .ready:
            frame = .ready(sessionLifetimeSeconds: UInt32(try r.uint(4, "lifetime")),
                           ratePerHour: UInt32(try r.uint(4, "rate")), remaining: UInt32(try r.uint(4, "remaining")))
        case .subscribed:
            frame = .subscribed(count: try r.u16("count"))
        case .accepted:
            frame = .accepted(request: UInt32(try r.uint(4, "request")))
        case .deliver:
            let mailbox = try MailboxID(bytes: try r.bytes(keyLength, "mailbox"))
            let packet = Array(r.rest())
            guard !packet.isEmpty else { throw YaOKError(.malformedPacket, "DELIVER without a packet") }
            frame = .deliver(mailbox: mailbox, packet: packet)
        case .pong:
            frame = .pong(request: UInt32(try r.uint(4, "request")))
        case .carry, .carryFromRelay:
            // One §12.2 payload, decoded as strictly as on a link (its own checks of every
            // length); nothing may follow it.
            guard let kind = CarryLinkMessage.Kind(rawValue: try r.u8("carry kind")) else {
                throw YaOKError(.malformedPacket, "Unknown carry kind in a CARRY frame")
            }
            let message = try CarryLinkMessage.decode(kind: kind, body: r.rest())
            frame = tag == .carry ? .carry(message) : .carryFromRelay(message)
        case .error:
            let request = UInt32(try r.uint(4, "request"))
            guard let code = RelayErrorFrame.Code(rawValue: try r.u8("code")) else {
                throw YaOKError(.malformedPacket, "Unknown relay error code")
            }
            let retry = UInt32(try r.uint(4, "retry after"))
            let text = r.rest()
            guard text.count <= maxErrorMessageBytes, let message = String(validating: text, as: UTF8.self) else {
                throw YaOKError(.malformedPacket, "Relay error message is not UTF-8 of at most \(maxErrorMessageBytes) bytes")
            }
            frame = .error(RelayErrorFrame(request: request, code: code, retryAfterSeconds: retry, message: message))
        }
        guard r.remaining == 0 else {
            throw YaOKError(.malformedPacket, "Relay frame has \(r.remaining) trailing bytes")
        }
        return frame
    }

    static let subscribeEntryLength = keyLength + signatureLength
    static let deleteEntryLength = keyLength + MessageID.length

    /// The zero bytes that pad a SUBSCRIBE or DELETE to its fixed size (§8.4): exactly
    /// `slots` unused entries, all zero, so a frame has one encoding.
    private static func expectPadding(_ r: inout ByteReader, slots: Int, entryLength: Int, _ name: String) throws {
        let padding = try r.bytes(slots * entryLength, "\(name) padding")
        guard padding.allSatisfy({ $0 == 0 }) else {
            throw YaOKError(.malformedPacket, "\(name) padding is not zero")
        }
    }

    private static func expectVersion(_ r: inout ByteReader) throws {
        let v = try r.u8("version")
        guard v == version else { throw YaOKError(.unsupportedVersion, "Relay protocol version \(v) is not supported") }
    }
}

/// The byte strings the relay's signatures cover (§8.3).
public enum RelaySignedData {
    public static func auth(nonce: [UInt8], binding: [UInt8]) -> [UInt8] {
        Array("YaOK-relay-auth-v1".utf8) + nonce + binding
    }

    public static func subscribe(nonce: [UInt8], binding: [UInt8], pseudonym: [UInt8]) -> [UInt8] {
        Array("YaOK-relay-mailbox-v1".utf8) + nonce + binding + pseudonym
    }

    /// What a POST's signature covers: the whole routed packet. The key is the mailbox's, so
    /// the signature is valid at one relay, for one mailbox, for this packet only.
    public static func post(packet: [UInt8]) -> [UInt8] {
        Array("YaOK-relay-post-v1".utf8) + packet
    }

    /// The TLS exporter label of `binding`.
    public static let exporterLabel = "EXPORTER-YaOK-relay-v1"
}
