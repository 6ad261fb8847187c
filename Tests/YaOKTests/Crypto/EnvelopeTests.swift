import Testing
@testable import YaOKSupport
@testable import YaOKLoop
@testable import YaOKWire
@testable import YaOKCrypto
@testable import YaOKStore
@testable import YaOKNode

@Suite struct EnvelopeTests {
    let alice = try! Identity(name: "Alice")
    let bob = try! Identity(name: "Bob")
    let eve = try! Identity(name: "Eve")
    let id: [UInt8] = Array(0..<16)
    let ts: Int64 = 1_700_000_000_000

    func seal(_ text: String = "Hello, Bob!") throws -> [UInt8] {
        try Envelope.seal(Array(text.utf8), from: alice, to: bob.publicIdentity.encryptionKey, messageID: id, timestamp: ts)
    }

    @Test func roundTrip() throws {
        let opened = try Envelope.open(try seal(), by: bob, messageID: id, timestamp: ts)
        #expect(opened.body == Array("Hello, Bob!".utf8))
        #expect(opened.senderKey == alice.publicIdentity.encryptionKey)
    }

    @Test func freshEphemeralKeyEveryTime() throws {
        let a = try seal(), b = try seal()
        #expect(a.prefix(32) != b.prefix(32))
        #expect(a != b)
    }

    @Test func senderKeyIsNotInClear() throws {
        let sealed = try seal()
        let key = alice.publicIdentity.encryptionKey
        for start in 0...(sealed.count - key.count) {
            #expect(Array(sealed[start..<start + key.count]) != key)
        }
    }

    @Test func notForMe() throws {
        #expect(throws: YaOKError(.notForMe)) { try Envelope.open(try seal(), by: eve, messageID: id, timestamp: ts) }
    }

    @Test func replayUnderAnotherIDOrTimeIsTampered() throws {
        let sealed = try seal()
        var otherID = id
        otherID[0] ^= 1
        #expect(throws: YaOKError(.tampered)) { try Envelope.open(sealed, by: bob, messageID: otherID, timestamp: ts) }
        #expect(throws: YaOKError(.tampered)) { try Envelope.open(sealed, by: bob, messageID: id, timestamp: ts + 1) }
    }

    @Test func everyFlippedByteIsRejected() throws {
        let sealed = try seal()
        for i in sealed.indices {
            var bad = sealed
            bad[i] ^= 0x40
            #expect(throws: YaOKError.self) { try Envelope.open(bad, by: bob, messageID: id, timestamp: ts) }
        }
        // Past the header, every change is an authentication failure.
        var bad = sealed
        bad[50] ^= 1
        #expect(throws: YaOKError(.tampered)) { try Envelope.open(bad, by: bob, messageID: id, timestamp: ts) }
    }

    @Test func truncatedIsMalformed() throws {
        let sealed = try seal()
        for n in [0, 31, 40, 100, Envelope.overhead + 63] {
            #expect(throws: YaOKError(.malformedEnvelope)) {
                try Envelope.open(Array(sealed.prefix(n)), by: bob, messageID: id, timestamp: ts)
            }
        }
        #expect(throws: YaOKError.self) { try Envelope.open(Array(sealed.dropLast()), by: bob, messageID: id, timestamp: ts) }
    }

    @Test func unknownSender() throws {
        let known = [eve.publicIdentity.encryptionKey]
        #expect(throws: YaOKError(.unknownSender)) {
            try Envelope.open(try seal(), by: bob, messageID: id, timestamp: ts, isKnownSender: { known.contains($0) })
        }
    }

    /// Mallory, who knows Alice's and Bob's public keys, claims to be Alice: the AEAD opens
    /// (anyone can encrypt to Bob) but the static-static authenticator cannot be forged.
    @Test func impersonationFailsSenderAuthentication() throws {
        let mallory = try Identity(name: "Mallory")
        let body = Array("I am Alice".utf8)
        let recipient = bob.publicIdentity.encryptionKey
        let eph = Sodium.randomBytes(32)
        // Build the envelope by hand with Alice's key inside but Mallory's static secret.
        let genuine = try Envelope.seal(body, from: mallory, to: recipient, messageID: id, timestamp: ts, ephemeralSecret: eph)
        let e = Array(genuine.prefix(32))
        let shared = try eph.withUnsafeBytes { try Sodium.x25519(secret: $0, publicKey: recipient) }
        let (key, nonce) = Envelope.messageKey(shared: shared, ephemeral: e, recipientKey: recipient)
        let ad = Envelope.associatedData(recipientKey: recipient, messageID: id, timestamp: ts, ephemeral: e)
        let auth = try mallory.encryptionSecret.withUnsafeBytes {
            try Envelope.authenticator(staticSecret: $0, peerKey: recipient, senderKey: alice.publicIdentity.encryptionKey,
                                       recipientKey: recipient, ad: ad, body: body[...])
        }
        let inner = alice.publicIdentity.encryptionKey + auth + (try Padding.pad(body))
        let forged = Array(genuine.prefix(40)) + (try TestAEAD.encrypt(inner, ad: ad, nonce: nonce, key: key))
        #expect(throws: YaOKError(.senderAuthFailed)) { try Envelope.open(forged, by: bob, messageID: id, timestamp: ts) }
    }

    /// An envelope that authenticates and carries a genuine sender MAC over its body, but
    /// whose padding is wrong, is refused as malformed: the padding is checked on open.
    @Test(arguments: [
        "no 0x80 marker",        // zeros only after the body
        "not a bucket size",     // correct ISO padding to 100 bytes
        "bytes after the marker",
    ])
    func badPaddingIsRefused(defect: String) throws {
        let body = Array("padded wrongly".utf8)
        let recipient = bob.publicIdentity.encryptionKey
        var padded: [UInt8]
        switch defect {
        case "no 0x80 marker": padded = body + [UInt8](repeating: 0, count: 64 - body.count)
        case "not a bucket size": padded = body + [0x80] + [UInt8](repeating: 0, count: 100 - body.count - 1)
        default: padded = body + [0x80] + [UInt8](repeating: 0, count: 64 - body.count - 1); padded[63] = 1
        }
        let eph = Sodium.randomBytes(32)
        let e = try eph.withUnsafeBytes { try Sodium.x25519PublicKey(secret: $0) }
        let shared = try eph.withUnsafeBytes { try Sodium.x25519(secret: $0, publicKey: recipient) }
        let (key, nonce) = Envelope.messageKey(shared: shared, ephemeral: e, recipientKey: recipient)
        let ad = Envelope.associatedData(recipientKey: recipient, messageID: id, timestamp: ts, ephemeral: e)
        let auth = try alice.encryptionSecret.withUnsafeBytes {
            try Envelope.authenticator(staticSecret: $0, peerKey: recipient, senderKey: alice.publicIdentity.encryptionKey,
                                       recipientKey: recipient, ad: ad, body: body[...])
        }
        let inner = alice.publicIdentity.encryptionKey + auth + padded
        let sealed = e + Envelope.hint(ephemeral: e, recipientKey: recipient) + (try TestAEAD.encrypt(inner, ad: ad, nonce: nonce, key: key))
        #expect(throws: YaOKError(.malformedEnvelope)) { try Envelope.open(sealed, by: bob, messageID: id, timestamp: ts) }

        // The same construction with correct padding opens: the test builds envelopes right.
        let good = alice.publicIdentity.encryptionKey + auth + (try Padding.pad(body))
        let fine = e + Envelope.hint(ephemeral: e, recipientKey: recipient) + (try TestAEAD.encrypt(good, ad: ad, nonce: nonce, key: key))
        #expect(try Envelope.open(fine, by: bob, messageID: id, timestamp: ts).body == body)
    }

    @Test func sizeLimits() throws {
        #expect(throws: YaOKError(.emptyMessage)) { try seal("") }
        let max = [UInt8](repeating: 0x61, count: Envelope.maxBodyLength)
        let sealed = try Envelope.seal(max, from: alice, to: bob.publicIdentity.encryptionKey, messageID: id, timestamp: ts)
        #expect(try Envelope.open(sealed, by: bob, messageID: id, timestamp: ts).body == max)
        #expect(throws: YaOKError(.messageTooLarge)) {
            try Envelope.seal(max + [0], from: alice, to: bob.publicIdentity.encryptionKey, messageID: id, timestamp: ts)
        }
        #expect(YaOKError(.messageTooLarge).message == "Message too large (max 10KB)")
    }

    @Test func lengthsArePaddedToBuckets() throws {
        var sizes = Set<Int>()
        for n in 1...63 { sizes.insert(try seal(String(repeating: "x", count: n)).count) }
        #expect(sizes == [Envelope.overhead + 64])
        #expect(try seal(String(repeating: "x", count: 64)).count == Envelope.overhead + 128)
        #expect(try seal(String(repeating: "x", count: 10240)).count == Envelope.overhead + 16384)
    }

    @Test func randomBodiesRoundTrip() throws {
        var rng = SystemRandomNumberGenerator()
        for _ in 0..<200 {
            let n = Int.random(in: 1...Envelope.maxBodyLength, using: &rng)
            let body = (0..<n).map { _ in UInt8.random(in: 0...255, using: &rng) }
            let msgID = (0..<16).map { _ in UInt8.random(in: 0...255, using: &rng) }
            let t = Int64.random(in: 0...RoutedHeader.maxCreatedMs, using: &rng)
            let sealed = try Envelope.seal(body, from: alice, to: bob.publicIdentity.encryptionKey, messageID: msgID, timestamp: t)
            #expect(try Envelope.open(sealed, by: bob, messageID: msgID, timestamp: t).body == body)
        }
    }

    /// A message's time is 0 to 2^48 − 1 ms (a packet's u48 `created`, docs/PROTOCOL.md §3),
    /// for the bare envelope and the packet envelope, sealing and opening alike.
    @Test func timesBeyondFortyEightBitsAreRefused() throws {
        let key = bob.publicIdentity.encryptionKey
        let max = RoutedHeader.maxCreatedMs
        let sealed = try Envelope.seal([1], from: alice, to: key, messageID: id, timestamp: max)
        #expect(try Envelope.open(sealed, by: bob, messageID: id, timestamp: max).body == [1])
        let packet = try PacketEnvelope.seal([1], from: alice, to: key, messageID: id, timestamp: max, associatedData: [])
        for bad in [-1, max + 1, Int64.max] {
            #expect(throws: YaOKError(.invalidArgument)) {
                try Envelope.seal([1], from: alice, to: key, messageID: id, timestamp: bad)
            }
            #expect(throws: YaOKError(.invalidArgument)) { try Envelope.open(sealed, by: bob, messageID: id, timestamp: bad) }
            #expect(throws: YaOKError(.invalidArgument)) {
                try PacketEnvelope.seal([1], from: alice, to: key, messageID: id, timestamp: bad, associatedData: [])
            }
            #expect(throws: YaOKError(.invalidArgument)) {
                try PacketEnvelope.open(packet, by: bob, senderKey: alice.publicIdentity.encryptionKey, messageID: id,
                                        timestamp: bad, associatedData: [])
            }
        }
    }

    /// An envelope from Alice to Bob with `padded` as its padded body, built by hand with a
    /// valid sender authenticator over `body`.
    func sealByHand(body: [UInt8], padded: [UInt8]) throws -> [UInt8] {
        let recipient = bob.publicIdentity.encryptionKey
        let eph = Sodium.randomBytes(32)
        let genuine = try Envelope.seal([1], from: alice, to: recipient, messageID: id, timestamp: ts, ephemeralSecret: eph)
        let e = Array(genuine.prefix(32))
        let shared = try eph.withUnsafeBytes { try Sodium.x25519(secret: $0, publicKey: recipient) }
        let (key, nonce) = Envelope.messageKey(shared: shared, ephemeral: e, recipientKey: recipient)
        let ad = Envelope.associatedData(recipientKey: recipient, messageID: id, timestamp: ts, ephemeral: e)
        let auth = try alice.encryptionSecret.withUnsafeBytes {
            try Envelope.authenticator(staticSecret: $0, peerKey: recipient, senderKey: alice.publicIdentity.encryptionKey,
                                       recipientKey: recipient, ad: ad, body: body[...])
        }
        let inner = alice.publicIdentity.encryptionKey + auth + padded
        return Array(genuine.prefix(40)) + (try TestAEAD.encrypt(inner, ad: ad, nonce: nonce, key: key))
    }

    static func iso7816(_ body: [UInt8], to size: Int) -> [UInt8] {
        body + [0x80] + [UInt8](repeating: 0, count: size - body.count - 1)
    }

    /// Open accepts exactly what seal makes (issue 8 §10): the smallest bucket, at most 10 KiB.
    @Test func paddingMustBeTheSmallestBucketAndTheBodyAtMost10KiB() throws {
        let hi = Array("hi".utf8)
        #expect(try Envelope.open(try sealByHand(body: hi, padded: Self.iso7816(hi, to: 64)), by: bob,
                                  messageID: id, timestamp: ts).body == hi)
        for size in [128, 16384] {
            let sealed = try sealByHand(body: hi, padded: Self.iso7816(hi, to: size))
            #expect(throws: YaOKError(.malformedEnvelope)) { try Envelope.open(sealed, by: bob, messageID: id, timestamp: ts) }
        }
        let big = [UInt8](repeating: 0x61, count: 12_000)
        let tooBig = try sealByHand(body: big, padded: Self.iso7816(big, to: 16384))
        #expect(throws: YaOKError(.malformedEnvelope)) { try Envelope.open(tooBig, by: bob, messageID: id, timestamp: ts) }
        let max = [UInt8](repeating: 0x61, count: Envelope.maxBodyLength)
        #expect(try Envelope.open(try sealByHand(body: max, padded: Self.iso7816(max, to: 16384)), by: bob,
                                  messageID: id, timestamp: ts).body == max)
        // 63 bytes fill the 64-byte bucket with the 0x80; 64 need the next one.
        let full = [UInt8](repeating: 0x62, count: 64)
        #expect(throws: YaOKError(.malformedEnvelope)) {
            try Envelope.open(try sealByHand(body: full, padded: full), by: bob, messageID: id, timestamp: ts)
        }
    }

    @Test func sealingToALowOrderKeyIsAnInvalidArgument() throws {
        for key in CardKeyBindingTests.lowOrderKeys {
            #expect(throws: YaOKError(.invalidArgument)) {
                try Envelope.seal([1], from: alice, to: key, messageID: id, timestamp: ts)
            }
        }
    }

    @Test func lowOrderEphemeralKeyIsMalformed() throws {
        var sealed = try seal()
        sealed.replaceSubrange(0..<32, with: [UInt8](repeating: 0, count: 32))
        // The hint no longer matches either; both outcomes are refusals, never a crash.
        #expect(throws: YaOKError.self) { try Envelope.open(sealed, by: bob, messageID: id, timestamp: ts) }
    }
}

/// The envelope's hashes take their inputs in parts (so that secrets are not joined into
/// unwiped buffers): the result must equal hashing the joined bytes.
@Suite struct PartwiseHashTests {
    @Test func partsHashLikeTheirConcatenation() {
        let a = Sodium.randomBytes(40), b = Sodium.randomBytes(7), c: [UInt8] = []
        let key = Array("YaOK-test-key".utf8)
        for length in [16, 32, 64] {
            #expect(Sodium.blake2b([a[...], b[...], c[...]], key: key, outputLength: length)
                    == Sodium.blake2b(a + b + c, key: key, outputLength: length))
            #expect(Sodium.blake2b([a[5...], b[...]], outputLength: length) == Sodium.blake2b(Array(a[5...]) + b, outputLength: length))
        }
    }
}
