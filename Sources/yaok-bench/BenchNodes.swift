import YaOK

/// The nodes the suites measure: production stores (durable, forward secrecy as
/// `Measure.forwardSecrecy` says), but a fast KDF, which is not what is measured.
enum BenchNodes {
    static let pin = "246810"

    static var options: Node.Options {
        var options = Node.Options()
        options.pinHashing = .insecureFastForTestsOnly
        options.allowTestOnlyKDFCosts = true
        options.forwardSecrecy = Measure.forwardSecrecy
        return options
    }

    /// A node set up as `name` in `directory`, never locking by itself; `lockStatistics`:
    /// recording where its lock goes (`Node.lockStatistics`).
    static func node(_ directory: String, name: String, lockStatistics: Bool = false) throws -> Node {
        var options = options
        options.lockStatistics = lockStatistics
        return try setUp(try Node(dataDirectory: directory, options: options), name: name)
    }

    /// `node` set up as `name`, never locking by itself, carrying as `Measure.carryOff` says.
    @discardableResult
    static func setUp(_ node: Node, name: String) throws -> Node {
        _ = try node.setup(name: name, pin: pin, confirmation: pin)
        try node.setAutoLock(.never)
        if Measure.carryOff { try node.setCarry(mode: .off) }
        return node
    }

    /// Alice and Bob in `root`, each the other's contact; Bob's contact ID at Alice.
    static func pair(in root: String) throws -> (alice: Node, bob: Node, bobID: Int64) {
        let alice = try node(root + "/alice", name: "Alice")
        let bob = try node(root + "/bob", name: "Bob")
        let bobID = try alice.addContact(card: bob.profile().text).id
        _ = try bob.addContact(card: alice.profile().text)
        return (alice, bob, bobID)
    }
}
