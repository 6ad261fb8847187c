import Glibc
import YaOK

/// Wire protocol figures (issue 4): header parses, duplicate lookups in memory and with
/// SQLite, fragment + reassemble throughput, and the per-message overhead.
enum WireBench {
    static func run() throws {
        Measure.report("per-message overhead (frame+header+envelope)", "\(WireOverhead.perMessageOnStream) bytes",
                       target: "≤ 100; packet envelope alone is \(PacketEnvelope.overhead)")
        try headerParses()
        try dedupInMemory()
        try dedupPersistent()
        try fragmentation()
    }

    static func samplePacket(payloadLength: Int) throws -> [UInt8] {
        var rng = SystemRandomNumberGenerator()
        let header = try RoutedHeader(type: .message, hopLimit: 7, messageID: .random(), createdMs: 1_700_000_000_000,
                                      lifetimeMinutes: 10_080, routingTag: RoutingTag(value: rng.next()))
        return try Packet.routed(header, payload: (0..<payloadLength).map { UInt8(truncatingIfNeeded: $0) }).encode()
    }

    static func headerParses() throws {
        // A message with a 256-byte padded body: the common size.
        let packet = try samplePacket(payloadLength: PacketEnvelope.overhead + 256)
        var sink: UInt64 = 0
        let n = 2_000_000
        let t = try Measure.perIteration(n, warmup: 1000) {
            let (header, range) = try RoutedHeader.parse(packet)
            sink &+= header.messageID.low &+ UInt64(range.count)
        }
        Measure.report("routed header parses/s", rate(1 / t), target: "≥ 1,000,000")
        let d = try Measure.perIteration(n / 4, warmup: 1000) {
            if case .routed(let h, let payload) = try Packet.decode(packet) { sink &+= UInt64(h.createdMs) &+ UInt64(payload.count) }
        }
        Measure.report("full packet decodes/s (payload copied)", rate(1 / d))
        keep(sink)
    }

    static func dedupInMemory() throws {
        let capacity = 65_536
        var front = try SeenIDFront(capacity: capacity)
        let ids = (0..<capacity / 2).map { _ in MessageID.random() }
        for id in ids { front.insert(id) }
        let misses = (0..<1024).map { _ in MessageID.random() }
        var hits = 0
        var i = 0
        let n = 10_000_000
        // Half hits, half misses: the relay hot path sees both.
        let t = Measure.perIteration(n, warmup: 1000) {
            let id = (i & 1 == 0) ? ids[i & (ids.count - 1)] : misses[i & 1023]
            if front.contains(id) { hits += 1 }
            i &+= 1
        }
        Measure.report("dedup lookups/s in memory (front)", rate(1 / t), target: "≥ 5,000,000")

        let filter = try DuplicateFilter(database: try Database(path: ":memory:"), frontCapacity: capacity)
        for id in ids { _ = try filter.check(id, expiresAtMs: .max / 2, nowMs: 1) }
        var j = 0
        let d = try Measure.perIteration(n / 2, warmup: 1000) {
            if try filter.check(ids[j & (ids.count - 1)], expiresAtMs: .max / 2, nowMs: 2) == .duplicate { hits += 1 }
            j &+= 1
        }
        Measure.report("DuplicateFilter.check/s, duplicate (front hit)", rate(1 / d))
        keep(UInt64(hits))
    }

    static func dedupPersistent() throws {
        var template = Array("/tmp/yaok-wire-bench-XXXXXX".utf8CString)
        let made = template.withUnsafeMutableBufferPointer { buffer in
            buffer.baseAddress.map { mkdtemp($0) != nil } ?? false
        }
        guard made else { throw YaOKError(.storage, "mkdtemp failed") }
        let path = String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self) + "/seen.sqlite"
        defer {
            for suffix in ["", "-wal", "-shm"] { unlink(path + suffix) }
            rmdir(String(path.dropLast("/seen.sqlite".count)))
        }
        let db = try Database(path: path)
        let filter = try DuplicateFilter(database: db, frontCapacity: 1024)
        var now: Int64 = 1_000

        // Each new ID is one committed INSERT (synchronous=FULL: an fsync each).
        let single = 300
        let tNew = try Measure.perIteration(single, warmup: 10) {
            now += 1
            _ = try filter.check(.random(), expiresAtMs: now + 3_600_000, nowMs: now)
        }
        Measure.report("new IDs/s persisted, one commit each", rate(1 / tNew))

        // As the delivery engine would batch them: many checks per transaction.
        var ids: [MessageID] = []
        let batch = 1000
        let tBatch = try Measure.perIteration(20, warmup: 1) {
            try db.transaction {
                for _ in 0..<batch {
                    let id = MessageID.random()
                    ids.append(id)
                    now += 1
                    _ = try filter.check(id, expiresAtMs: now + 3_600_000, nowMs: now)
                }
            }
        }
        Measure.report("new IDs/s persisted, 1000 per commit", rate(Double(batch) / tBatch))

        // Lookups that miss the front and go to SQLite (as after a restart).
        filter.dropFront()
        var k = 0
        var found = 0
        let tLookup = try Measure.perIteration(20_000, warmup: 100) {
            if try filter.contains(ids[k % ids.count]) { found += 1 }
            k += 1
            filter.dropFront()
        }
        Measure.report("dedup lookups/s from SQLite (front miss)", rate(1 / tLookup))
        keep(UInt64(found))
    }

    static func fragmentation() throws {
        let packet = try samplePacket(payloadLength: 10 * 1024)
        var fragmenter = try Fragmenter(mtu: 185)
        var reassembler = try Reassembler()
        var now: Int64 = 0
        var done = 0
        let units = try fragmenter.split(packet).count
        let t = try Measure.perIteration(2000, warmup: 20) {
            now += 1
            for unit in try fragmenter.split(packet) {
                guard case .fragment(let f) = try Packet.decode(unit) else { continue }
                if try reassembler.receive(f, nowMs: now) != nil { done += 1 }
            }
        }
        let mib = Double(packet.count) / t / (1024 * 1024)
        Measure.report("fragment+reassemble 10 KB @ MTU 185",
                       "\(rate(1 / t)) msgs/s, \(Measure.format(mib)) MiB/s (\(units) fragments)")
        keep(UInt64(done))
    }

    /// A per-second figure as a whole number with thousands separators.
    static func rate(_ value: Double) -> String {
        let digits = Array(String(Int(value.rounded())))
        var out = ""
        for (i, d) in digits.enumerated() {
            if i > 0 && (digits.count - i) % 3 == 0 { out += "," }
            out.append(d)
        }
        return out
    }

    /// Keeps results alive so the optimiser cannot drop the measured work.
    @inline(never) static func keep(_ value: UInt64) {
        if value == 0x5eed_5eed_5eed_5eed { print("") }
    }
}
