import Foundation
@testable import YaOKSupport
@testable import YaOKWire
@testable import YaOKStore
@testable import YaOKNode
@testable import YaOKTransports

/// Two real nodes, set up (cheap Argon2id) and each other's contacts, each with a LAN
/// transport on 127.0.0.1 registered and enabled. Bob connects to Alice as a static peer
/// unless `bobOptions` says otherwise.
final class LANPair {
    let dirA: String, dirB: String
    let alice: Node, bob: Node
    let aliceLAN: LANTransport, bobLAN: LANTransport
    /// Contact ids: Bob in Alice's node, Alice in Bob's.
    let bobID: Int64, aliceID: Int64

    init(alice aliceAdjust: (inout LANTransport.Options) -> Void = { _ in },
         bob bobAdjust: ((inout LANTransport.Options, UInt16) -> Void)? = nil) throws {
        let base = NSTemporaryDirectory() + "yaok-lan-" + UUID().uuidString
        dirA = base + "-a"
        dirB = base + "-b"
        var options = Node.Options()
        options.pinHashing = .insecureFastForTestsOnly
        options.allowTestOnlyKDFCosts = true
        alice = try Node(dataDirectory: dirA, options: options)
        bob = try Node(dataDirectory: dirB, options: options)
        _ = try alice.setup(name: "Alice", pin: "246810", confirmation: "246810")
        _ = try bob.setup(name: "Bob", pin: "246810", confirmation: "246810")
        bobID = try alice.addContact(card: bob.profile().text).id
        aliceID = try bob.addContact(card: alice.profile().text).id

        aliceLAN = try LANTransport(options: loopbackOptions(aliceAdjust))
        try alice.addTransport(aliceLAN)
        try alice.setTransport("lan", enabled: true)
        let port = aliceLAN.listeningPort ?? 0
        bobLAN = try LANTransport(options: loopbackOptions { o in
            if let bobAdjust { bobAdjust(&o, port) } else { o.staticPeers = ["127.0.0.1:\(port)"] }
        })
        try bob.addTransport(bobLAN)
        try bob.setTransport("lan", enabled: true)
    }

    func close() {
        alice.close()
        bob.close()
        try? FileManager.default.removeItem(atPath: dirA)
        try? FileManager.default.removeItem(atPath: dirB)
    }
}

/// One node set up (cheap Argon2id) in a fresh temporary directory, with no transport.
final class TempNode {
    let dir = NSTemporaryDirectory() + "yaok-node-" + UUID().uuidString
    let node: Node

    init(name: String = "Alice") throws {
        var options = Node.Options()
        options.pinHashing = .insecureFastForTestsOnly
        options.allowTestOnlyKDFCosts = true
        node = try Node(dataDirectory: dir, options: options)
        _ = try node.setup(name: name, pin: "246810", confirmation: "246810")
    }

    func remove() {
        node.close()
        try? FileManager.default.removeItem(atPath: dir)
    }
}

extension Node {
    func texts(_ conversation: Int64) throws -> [String] {
        try history(conversation, limit: 1000).messages.map(\.text)
    }

    func messageStatus(_ id: MessageID) throws -> MessageStatus {
        try outgoingMessage(id).status
    }
}
