import Foundation
import Testing
@testable import YaOKSupport
@testable import YaOKLoop
@testable import YaOKWire
@testable import YaOKCrypto
@testable import YaOKStore
@testable import YaOKNode

/// The crypto vectors in docs/PROTOCOL.md, checked against the code.
@Suite struct ProtocolVectorTests {
    func identity(_ name: String) throws -> (Identity, ProtocolVector) {
        let v = try #require(try ProtocolVector.all().first { $0.name == name })
        return (try Identity(name: try v.string("display_name"), secrets: try SecureBytes(copying: try v.hex("secrets"))), v)
    }

    @Test(arguments: ["identity-alice", "identity-bob"])
    func identityVector(name: String) throws {
        let (id, v) = try identity(name)
        #expect(id.publicIdentity.encryptionKey == (try v.hex("x25519_public")))
        #expect(id.publicIdentity.signingKey == (try v.hex("ed25519_public")))
        #expect(id.publicIdentity.userID == (try v.string("user_id")))
        #expect(id.publicIdentity.fingerprint.hex == (try v.string("fingerprint")))
    }

    /// Every vector block keeps to the syntax PROTOCOL.md's conventions define, so that a
    /// second implementation's parser reads what ours does: `key: value` lines and
    /// continuation lines of two spaces, a unique name each.
    @Test func vectorBlocksKeepToTheDocumentedSyntax() throws {
        var root = URL(fileURLWithPath: #filePath)
        for _ in 0..<4 { root.deleteLastPathComponent() }
        let doc = try String(contentsOf: root.appendingPathComponent("docs/PROTOCOL.md"), encoding: .utf8)
        var inside = false
        var names: [String] = []
        for line in doc.split(separator: "\n", omittingEmptySubsequences: false) {
            if !inside { inside = line == "```vector"; continue }
            if line == "```" { inside = false; continue }
            let isField = line.firstIndex(of: ":").map { colon in
                !line[..<colon].isEmpty && line[..<colon].allSatisfy { $0.isLowercase || $0.isNumber || $0 == "_" }
            } ?? false
            let isContinuation = line.hasPrefix("  ") && !line.dropFirst(2).hasPrefix(" ") && line.count > 2
            #expect(isField || isContinuation, "not a vector line: \(line)")
            if line.hasPrefix("name: ") { names.append(String(line.dropFirst(6))) }
        }
        #expect(!inside)
        #expect(Set(names).count == names.count)
        #expect(names.count == (try ProtocolVector.all()).count)
    }

    /// BLAKE2b-N means the digest length N/8 in BLAKE2b's parameter block (libsodium's
    /// outlen), not a truncation: PROTOCOL.md's conventions say so for a second implementer.
    @Test func shortBlake2bIsNotATruncation() {
        let data = Array("Ya OK".utf8), key = Array("YaOK-hint-v1".utf8)
        #expect(Sodium.blake2b(data, key: key, outputLength: 8) != Array(Sodium.blake2b(data, key: key, outputLength: 64).prefix(8)))
    }

    @Test func documentHasVectors() throws {
        let names = Set(try ProtocolVector.all().map(\.name))
        for expected in ["identity-alice", "identity-bob", "card-alice", "card-bob", "envelope-alice-to-bob"] {
            #expect(names.contains(expected))
        }
    }

    @Test(arguments: ["card-alice", "card-bob"])
    func cardVector(name: String) throws {
        let v = try #require(try ProtocolVector.named(name).first)
        let (id, _) = try identity(try v.string("identity"))
        let text = try v.string("text")
        // Ed25519 signatures are deterministic, so the card text is too.
        #expect(id.card.text == text)
        let decoded = try ContactCard(text: text)
        #expect(decoded.name == id.name)
        #expect(decoded.publicIdentity == id.publicIdentity)
        #expect(XEdDSA.edwardsKey(x25519Public: id.publicIdentity.encryptionKey) == (try v.hex("edwards_key")))
        #expect(id.keyProof == (try v.hex("key_proof")))
        #expect(decoded.keyProof == (try v.hex("key_proof")))
    }

    @Test func cardRejectVectors() throws {
        let vectors = try ProtocolVector.named("card-reject-")
        #expect(vectors.count == 4)
        for v in vectors {
            #expect(try v.string("error") == "invalidCard")
            // A well-formed card, validly signed by its signer: only its X25519 key (or, in
            // version 2, its prekey) is wrong.
            let (signer, _) = try identity(try v.string("signer"))
            let payload = try #require(Base64URL.decode(String(try v.string("text").dropFirst(ContactCard.scheme.count))))
            let signed = Array(payload.dropLast(64))
            #expect(Sodium.verify(signature: Array(payload.suffix(64)), message: ContactCard.context(payload[0]) + signed,
                                  publicKey: signer.publicIdentity.signingKey))
            #expect(throws: YaOKError(.invalidCard)) { try ContactCard(text: try v.string("text")) }
        }
    }

    @Test func envelopeVector() throws {
        let v = try #require(try ProtocolVector.named("envelope-alice-to-bob").first)
        let (alice, _) = try identity(try v.string("sender"))
        let (bob, _) = try identity(try v.string("recipient"))
        let body = Array(try v.string("body_utf8").utf8)
        let id = try v.hex("message_id")
        let ts = try v.int64("timestamp_ms")
        let sealed = try Envelope.seal(body, from: alice, to: bob.publicIdentity.encryptionKey, messageID: id,
                                       timestamp: ts, ephemeralSecret: try v.hex("ephemeral_secret"))
        #expect(sealed == (try v.hex("sealed")))
        let opened = try Envelope.open(try v.hex("sealed"), by: bob, messageID: id, timestamp: ts)
        #expect(opened.body == body)
        #expect(opened.senderKey == alice.publicIdentity.encryptionKey)
    }
}
