import Foundation
import Testing
@testable import YaOKSupport
@testable import YaOKWire
@testable import YaOKCrypto
@testable import YaOKStore
@testable import YaOKNode

/// What a carrier took survives SIGKILL, works without keys (a locked phone), and is gone
/// after carrying is turned off or the node reset.
@Suite struct CarryPersistenceTests {
    private var writerPath: String { StoreWriterExecutable.path }

    /// A child takes packets and prints each identity once its take committed; it is killed
    /// with SIGKILL mid-stream. Every printed packet is in the reopened store, whole.
    @Test func aKilledCarrierLosesNothingItTook() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let now: Int64 = 1_800_000_000_000
        let child = Process()
        child.executableURL = URL(fileURLWithPath: writerPath)
        child.arguments = ["carry", dir.path, String(now)]
        let out = Pipe()
        child.standardOutput = out
        try child.run()
        var buffer = Data()
        let handle = out.fileHandleForReading
        func printed() -> [String] {
            String(decoding: buffer, as: UTF8.self).split(separator: "\n").map(String.init).filter { $0.count == 32 }
        }
        while printed().count < 60 {
            let chunk = handle.availableData
            if chunk.isEmpty { break }  // the child died on its own: fail below
            buffer.append(chunk)
        }
        kill(child.processIdentifier, SIGKILL)
        child.waitUntilExit()
        #expect(child.terminationReason == .uncaughtSignal)
        buffer.append(handle.readDataToEndOfFile())
        let taken = printed()
        #expect(taken.count >= 60)

        let store = try Store(directory: dir.path)
        defer { store.close() }
        #expect(try store.db.rows("PRAGMA integrity_check") { $0.text(0) } == ["ok"])
        for hex in taken {
            let id = try #require(Hex.decode(hex))
            let packet = try #require(try store.carriedPacket(id), "packet \(hex) lost")
            #expect(packet.identity == id)
        }
        #expect(try store.carryUsage().packets >= taken.count)
    }

    /// A take inside a transaction that never commits (the process dies first) leaves
    /// nothing: neither the packet nor its quota charge; one that committed stays.
    @Test func anUncommittedTakeLeavesNothing() throws {
        let bench = try CarryBench()
        defer { bench.finish() }
        let committed = try bench.packet()
        try bench.mustTake(committed)
        try bench.store.db.execute("BEGIN IMMEDIATE")
        let uncommitted = try bench.packet()
        try bench.mustTake(uncommitted, from: CarryBench.bob)
        bench.store.close()  // sqlite3_close_v2 with the transaction open: as if killed
        bench.store = try Store(directory: bench.dir.path)
        #expect(try bench.heldIDs() == Set([committed.identity]))
        #expect(try bench.store.carryQuotaUsed(CarryBench.bob, nowMs: bench.now) == (0, 0))
        try bench.mustTake(uncommitted, from: CarryBench.bob)
    }

    /// A locked node (no keys) takes, lists and hands on packets, and stores them as they
    /// came: not sealed again under the vault key.
    @Test func aLockedNodeCarries() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let node = try makeNode(dir)
        defer { node.close() }
        try node.lock()
        #expect(try node.status().locked)
        let bench = try CarryBench()  // only for its packets
        defer { bench.finish() }
        let packet = try bench.packet(payloadLength: 500)
        let now = bench.now
        let (taken, listed, stored, raw) = try node.withStore { store, _ in
            #expect(throws: YaOKError(.locked)) { try store.requireAttached() }
            let taken = try store.takeCarried(packet.encode(), from: CarryBench.alice, nowMs: now)
            let listed = try store.carriedKeys(nowMs: now, limit: 10).map(\.id)
            let stored = try store.carriedPacket(packet.identity)
            let raw = try store.db.rows("SELECT packet FROM carried_packets") { $0.blob(0) }
            return (taken, listed, stored, raw)
        }
        guard case .taken = taken else { Issue.record("not taken while locked: \(taken.message)"); return }
        #expect(listed == [packet.identity])
        #expect(stored == packet)
        #expect(raw == [packet.encode()])
    }

    /// Turning carrying off deletes everything carried, and secure_delete with the WAL
    /// checkpoint leaves none of its bytes in the files.
    @Test func deleteAllLeavesNoTraceInTheFiles() throws {
        let bench = try CarryBench()
        defer { bench.finish() }
        let packet = try bench.packet(payloadLength: 3_000)
        try bench.mustTake(packet)
        try bench.mustTake(try bench.packet())
        try bench.store.purgeCarried(try PurgeRecord(claims: [PurgeClaim.random()]), nowMs: bench.now)
        let marker = Array(packet.payload[1_000..<1_032])
        #expect(try fileBytes(bench.dir).contains(marker))
        try bench.store.deleteAllCarried()
        #expect(try bench.store.carryUsage() == (0, 0))
        #expect(try bench.store.rememberedPurgeClaims(nowMs: bench.now, limit: 10).isEmpty)
        #expect(try bench.store.carryQuotaUsed(CarryBench.alice, nowMs: bench.now) == (0, 0))
        #expect(try !fileBytes(bench.dir).contains(marker))
    }

    /// A reset (forgotten PIN) leaves an empty carry store.
    @Test func aResetNodeCarriesNothing() throws {
        let dir = TempDir()
        defer { dir.remove() }
        let node = try makeNode(dir)
        defer { node.close() }
        let bench = try CarryBench()
        defer { bench.finish() }
        let packet = try bench.packet()
        let now = bench.now
        _ = try node.withStore { store, _ in try store.takeCarried(packet.encode(), from: CarryBench.alice, nowMs: now) }
        #expect(try node.withStore { store, _ in try store.carryUsage().packets } == 1)
        try node.reset(confirm: true)
        #expect(try node.withStore { store, _ in try store.carryUsage().packets } == 0)
    }

    private func fileBytes(_ dir: TempDir) throws -> FileWindow {
        var all: [UInt8] = []
        for suffix in Store.fileSuffixes {
            if let data = FileManager.default.contents(atPath: dir.path + "/" + Store.fileName + suffix) { all += data }
        }
        return FileWindow(bytes: all)
    }
}

/// The bytes of a store's files, searchable for a run of bytes.
struct FileWindow {
    let bytes: [UInt8]
    func contains(_ needle: [UInt8]) -> Bool {
        guard !needle.isEmpty, bytes.count >= needle.count else { return false }
        for start in 0...(bytes.count - needle.count) where bytes[start] == needle[0] {
            if bytes[start..<(start + needle.count)].elementsEqual(needle) { return true }
        }
        return false
    }
}
