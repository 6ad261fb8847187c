import Foundation
@testable import YaOKSupport
@testable import YaOKCrypto
@testable import YaOKStore
@testable import YaOKNode

/// The set-up of the receiver-key store tests (`ReceiverKeyStoreTests`,
/// `ReceiverKeyRowsTests`): a data directory, a field cipher under a random database key,
/// stores opened on the directory, and contacts with fresh identities. `remove()` closes
/// every store it opened (closing one twice is harmless) and deletes the directory.
final class RingStoreFixture {
    static let day: Int64 = 86_400_000
    static let t0: Int64 = 1_700_000_000_000

    let dir = TempDir()
    let cipher: FieldCipher
    private var opened: [Store] = []

    init() throws {
        cipher = try FieldCipher(databaseKey: SecureBytes.random(count: 32))
    }

    /// A store on the directory, opened afresh.
    func open() throws -> Store {
        let store = try Store(directory: dir.path)
        opened.append(store)
        return store
    }

    /// A store on the directory with one contact: the store and the contact's row ID.
    func storeWithContact(name: String = "Bob") throws -> (Store, Int64) {
        let store = try open()
        return (store, try contact(store, name: name))
    }

    /// Opens a store, adds a contact, saves `ring` as the contact's, runs `body` on them and
    /// closes the store; returns the contact's row ID, for reading the ring back from a
    /// store opened afresh.
    @discardableResult
    func saving(_ ring: ReceiverKeyRing, _ body: (Store, Int64) throws -> Void = { _, _ in }) throws -> Int64 {
        let store = try open()
        defer { store.close() }
        let id = try contact(store)
        try store.saveReceiverKeyRing(ring, contactID: id, cipher: cipher)
        try body(store, id)
        return id
    }

    /// Adds `name` (a fresh identity) as a contact of `store`; its row ID.
    func contact(_ store: Store, name: String = "Bob") throws -> Int64 {
        let card = try ContactCard(text: try Identity(name: name).card.text)
        return try store.insertContact(card, lookup: cipher.lookup(card.publicIdentity.keyBytes), cipher: cipher, now: Self.t0)
    }

    func remove() {
        for store in opened { store.close() }
        dir.remove()
    }
}

/// Two unlocked nodes with forward secrecy on, each the other's contact, never locking by
/// themselves, and not linked (a test links them, e.g. with `MemoryPipe`):
/// `ErasureCheckpointTests`, `ReceiverKeyRowsTests`.
struct ForwardSecretNodes {
    let dirA = TempDir(), dirB = TempDir()
    let alice: Node, bob: Node
    let bobID: Int64, aliceID: Int64

    init(erasureDelaySeconds: Double = Node.erasureDelaySeconds) throws {
        (alice, bob) = try Self.nodes(dirA, dirB, erasureDelaySeconds: erasureDelaySeconds)
        bobID = try alice.addContact(card: bob.profile().text).id
        aliceID = try bob.addContact(card: alice.profile().text).id
    }

    /// Alice's node in `dirA` and Bob's in `dirB`, set up and unlocked, forward secrecy on,
    /// never locking by themselves, strangers to each other (`PrekeyNodeTests` too).
    static func nodes(_ dirA: TempDir, _ dirB: TempDir, clock: TestClock? = nil,
                      erasureDelaySeconds: Double = Node.erasureDelaySeconds) throws -> (alice: Node, bob: Node) {
        var options = fastOptions(clock: clock)
        options.forwardSecrecy = true
        options.erasureDelaySeconds = erasureDelaySeconds
        let alice = try Node(dataDirectory: dirA.path, options: options)
        _ = try alice.setup(name: "Alice", pin: testPIN, confirmation: testPIN)
        let bob = try Node(dataDirectory: dirB.path, options: options)
        _ = try bob.setup(name: "Bob", pin: testPIN, confirmation: testPIN)
        _ = try alice.setAutoLock(.never)
        _ = try bob.setAutoLock(.never)
        return (alice, bob)
    }

    func close() { alice.close(); bob.close(); dirA.remove(); dirB.remove() }
}

/// Whether `haystack` (a file's bytes) holds any 16-byte window of `needle` (a sealed value:
/// nonce, ciphertext, tag): the erasure tests look for a key's row in the data directory.
func holdsAPiece(of needle: [UInt8], in haystack: [UInt8]) -> Bool {
    guard haystack.count >= 16 else { return false }
    let windows = stride(from: 0, to: needle.count - 15, by: 16).map { Array(needle[$0..<($0 + 16)]) }
    var index = 0
    while index + 16 <= haystack.count {
        if windows.contains(where: { $0.elementsEqual(haystack[index..<(index + 16)]) }) { return true }
        index += 1
    }
    return false
}
