import Foundation
import Testing
@testable import YaOKSupport
@testable import YaOKLoop
@testable import YaOKWire
@testable import YaOKCrypto
@testable import YaOKStore
@testable import YaOKNode

@Suite struct EventLoopTests {
    final class Log: Sendable {
        let items = Locked<[String]>([])
        func add(_ s: String) { items.withLock { $0.append(s) } }
        var all: [String] { items.withLock { $0 } }
    }

    @Test func postRunsInOrderOnTheLoopThread() throws {
        let loop = try EventLoop()
        defer { loop.stop() }
        let log = Log()
        for i in 0..<100 { loop.post { log.add("\(i)\(loop.isLoopThread ? "" : "!")") } }
        #expect(eventually { log.all.count == 100 })
        #expect(log.all == (0..<100).map { "\($0)" })
        #expect(!loop.isLoopThread)
    }

    @Test func timersFireInDeadlineOrderAndCancel() throws {
        let loop = try EventLoop()
        defer { loop.stop() }
        let log = Log()
        loop.schedule(after: 0.06) { log.add("late") }
        let cancelled = loop.schedule(after: 0.03) { log.add("cancelled") }
        loop.schedule(after: 0.01) { log.add("early") }
        #expect(loop.cancel(cancelled))
        #expect(eventually { log.all.count == 2 })
        #expect(log.all == ["early", "late"])
        #expect(!loop.cancel(cancelled))
    }

    /// `modify` changes what a descriptor is watched for and keeps its handler: a pipe's
    /// write end, always writable, calls it once writability is asked for and no more
    /// once it is not; an unregistered descriptor cannot be modified.
    @Test func modifyChangesTheInterestAndKeepsTheHandler() throws {
        let loop = try EventLoop()
        defer { loop.stop() }
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        defer { close(fds[0]); close(fds[1]) }
        let calls = Locked(0)
        try loop.register(fd: fds[1], for: []) { events in
            if events.contains(.writable) { calls.withLock { $0 += 1 } }
        }
        try loop.modify(fd: fds[1], for: .writable)
        #expect(eventually { calls.withLock { $0 } > 0 })
        try loop.modify(fd: fds[1], for: [])
        // A work item posted after the change runs after any event already being handled.
        let settled = Locked<Int?>(nil)
        loop.post { settled.withLock { $0 = calls.withLock { $0 } } }
        #expect(eventually { settled.withLock { $0 } != nil })
        let after = settled.withLock { $0 } ?? 0
        let flushed = Locked(false)
        loop.post { loop.post { flushed.withLock { $0 = true } } }
        #expect(eventually { flushed.withLock { $0 } })
        #expect(calls.withLock { $0 } == after)
        #expect(throws: YaOKError(.invalidArgument)) { try loop.modify(fd: fds[0], for: .readable) }
    }

    @Test func fileDescriptorRegistrationWithAPipe() throws {
        let loop = try EventLoop()
        defer { loop.stop() }
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        defer { close(fds[0]); close(fds[1]) }
        let log = Log()
        let readEnd = fds[0]
        try loop.register(fd: readEnd, for: .readable) { events in
            var buffer = [UInt8](repeating: 0, count: 64)
            let n = read(readEnd, &buffer, buffer.count)
            if n > 0 { log.add(String(decoding: buffer[0..<n], as: UTF8.self) + (loop.isLoopThread ? "" : "!")) }
            if events.contains(.hangup) { log.add("hangup") }
        }
        #expect(throws: YaOKError(.invalidArgument)) { try loop.register(fd: readEnd, for: .readable) { _ in } }
        _ = write(fds[1], "ping", 4)
        #expect(eventually { log.all == ["ping"] })
        // After unregistering, data waiting on the pipe no longer calls the handler.
        loop.unregister(fd: readEnd)
        _ = write(fds[1], "pong", 4)
        let marker = Log()
        loop.post { marker.add("ran") }  // a full loop turn after the write
        #expect(eventually { marker.all == ["ran"] })
        #expect(log.all == ["ping"])
        // Registering again sees the waiting data.
        try loop.register(fd: readEnd, for: .readable) { _ in
            var buffer = [UInt8](repeating: 0, count: 64)
            let n = read(readEnd, &buffer, buffer.count)
            if n > 0 { log.add(String(decoding: buffer[0..<n], as: UTF8.self)) }
        }
        #expect(eventually { log.all == ["ping", "pong"] })
        loop.unregister(fd: readEnd)
    }

    @Test func stopFromTheLoopThreadAndTwice() throws {
        let loop = try EventLoop()
        let log = Log()
        loop.post { loop.stop(); log.add("stopped inside") }
        #expect(eventually { log.all == ["stopped inside"] })
        loop.stop()
        loop.post { log.add("after stop") }  // ignored
        #expect(throws: YaOKError.self) { try loop.register(fd: 0, for: .readable) { _ in } }
        #expect(log.all == ["stopped inside"])
    }

    @Test func aStoppedLoopNeverWritesToADescriptorItNoLongerOwns() throws {
        // After the thread ends, stop() (again: Node.close then Node.deinit) and schedule
        // still wake the loop. If its eventfd had been closed, the number could belong to
        // any file opened since, e.g. another node's database: 8 bytes written at offset 0.
        let dir = TempDir()
        try FileManager.default.createDirectory(atPath: dir.path, withIntermediateDirectories: true)
        defer { dir.remove() }
        let loop = try EventLoop()
        loop.stop()
        let fds = (0..<8).map { open(dir.path + "/file\($0)", O_CREAT | O_RDWR, 0o600) }
        defer { fds.forEach { _ = close($0) } }
        #expect(fds.allSatisfy { $0 >= 0 })
        loop.stop()
        loop.schedule(after: 0) {}
        for fd in fds {
            var st = stat()
            #expect(fstat(fd, &st) == 0 && st.st_size == 0)
        }
    }
}
