import Testing
import Glibc
@testable import YaOKSupport
@testable import YaOKLoop
@testable import YaOKWire
@testable import YaOKCrypto
@testable import YaOKStore
@testable import YaOKNode

@Suite struct FrameTests {
    @Test func framesSurviveAnySplit() throws {
        var rng = SeededRandom(seed: 10)
        let packets = (0..<20).map { i in rng.bytes(1 + i * 37) }
        var stream: [UInt8] = Frame.keepalive
        for p in packets { stream += try Frame.encode(p) + (p.count % 2 == 0 ? Frame.keepalive : []) }
        for trial in 0..<30 {
            var decoder = try FrameDecoder()
            var out: [[UInt8]] = []
            var i = 0
            while i < stream.count {
                let n = trial == 0 ? 1 : Int.random(in: 1...200, using: &rng)
                out += try decoder.feed(stream[i..<min(i + n, stream.count)])
                i += n
            }
            #expect(out == packets)
            #expect(decoder.bufferedByteCount == 0)
        }
    }

    @Test func oversizedLengthIsRefusedBeforeBuffering() throws {
        var decoder = try FrameDecoder(maxLength: 1000)
        #expect(try decoder.feed([0x03]).isEmpty)
        #expect(errorCode { try decoder.feed([0xe9, 0, 0, 0]) } == .frameTooLarge)  // 1001
        #expect(decoder.bufferedByteCount == 0)
        // Failed for good: the stream cannot be resynchronised, the caller disconnects.
        #expect(errorCode { try decoder.feed(try Frame.encode([1])) } == .frameTooLarge)
    }

    @Test func announcedFrameCostsOnlyWhatArrives() throws {
        var decoder = try FrameDecoder()
        #expect(try decoder.feed([0x40, 0x00]).isEmpty)  // announces 16384 bytes
        #expect(decoder.bufferedByteCount == 0)
        #expect(try decoder.feed([1, 2, 3]).isEmpty)
        #expect(decoder.bufferedByteCount == 3)
    }

    /// The byte count alone cannot see memory reserved for an announced frame: look at the
    /// capacity of the decoder's buffer (a private property, read through reflection; the
    /// test fails loudly if it is renamed).
    @Test func announcedFrameReservesNoCapacity() throws {
        func capacity(_ decoder: FrameDecoder) throws -> Int {
            let partial = Mirror(reflecting: decoder).children.first { $0.label == "partial" }?.value
            return try #require(partial as? [UInt8], "FrameDecoder has no [UInt8] 'partial' buffer").capacity
        }
        var decoder = try FrameDecoder(maxLength: Frame.maxEncodableLength)
        #expect(try decoder.feed([0xff, 0xff, 1, 2, 3]).isEmpty)  // announces 65535 bytes, sends 3
        #expect(decoder.bufferedByteCount == 3)
        #expect(try capacity(decoder) < 1024)
        #expect(try decoder.feed([UInt8](repeating: 9, count: 2000)).isEmpty)
        #expect(try capacity(decoder) < 8 * 1024)  // grows with what arrives, not what was announced
    }

    @Test func frameAtTheLimitIsAccepted() throws {
        var decoder = try FrameDecoder(maxLength: 300)
        let packet = [UInt8](repeating: 7, count: 300)
        #expect(try decoder.feed(try Frame.encode(packet)) == [packet])
        #expect(errorCode { try Frame.encode(packet + [1], maxLength: 300) } == .frameTooLarge)
        #expect(errorCode { try Frame.encode([]) } == .invalidArgument)
        #expect(errorCode { try FrameDecoder(maxLength: 0) } == .invalidArgument)
        #expect(errorCode { try FrameDecoder(maxLength: 65536) } == .invalidArgument)
    }

    @Test func partialWritesOnANonBlockingPipe() throws {
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        defer { close(fds[0]); close(fds[1]) }
        _ = fcntl(fds[1], F_SETFL, fcntl(fds[1], F_GETFL) | O_NONBLOCK)
        _ = fcntl(fds[0], F_SETFL, fcntl(fds[0], F_GETFL) | O_NONBLOCK)

        var rng = SeededRandom(seed: 11)
        // More than a pipe buffer (64 KiB) in total, so the writer must stop and resume.
        let packets = (0..<12).map { _ in rng.bytes(Wire.maxPacketLength) }
        var writer = FrameWriter()
        for p in packets { try writer.enqueue(p) }
        var decoder = try FrameDecoder()
        var received: [[UInt8]] = []
        var blocked = 0
        var buffer = [UInt8](repeating: 0, count: 5000)
        while true {
            let result = writer.flush(fd: fds[1])
            #expect(result != .failed(errno: 0))
            let done = result == .drained
            if result == .wouldBlock { blocked += 1 }
            while true {
                let n = read(fds[0], &buffer, buffer.count)
                if n <= 0 { break }
                received += try decoder.feed(buffer[0..<n])
            }
            if done { break }
        }
        #expect(blocked > 0)
        #expect(writer.isDrained)
        #expect(received == packets)
    }

    /// Every queued frame goes to one gathering write (prefix and packet as separate
    /// buffers, the packet not copied), not one write per frame.
    @Test func queuedFramesLeaveInOneWrite() throws {
        var writer = FrameWriter()
        try writer.enqueue([1])
        writer.enqueueKeepalive()
        try writer.enqueue([2, 3])
        var calls: [[[UInt8]]] = []
        let result = writer.flush { buffers in
            calls.append(buffers.map { Array($0) })
            return .wrote(buffers.reduce(0) { $0 + $1.count })
        }
        #expect(result == .drained && writer.isDrained)
        #expect(calls == [[[0, 1], [1], [0, 0], [0, 2], [2, 3]]])
    }

    @Test func writeErrorsReportTheLinkAsFailed() throws {
        var writer = FrameWriter()
        try writer.enqueue([1, 2, 3])
        #expect(writer.flush(fd: -1) == .failed(errno: EBADF))
        #expect(writer.pendingByteCount == 5)
        // A write(2) that takes a few bytes at a time still delivers the frame intact.
        var sink: [UInt8] = []
        var fresh = FrameWriter()
        try fresh.enqueue([4, 5, 6, 7])
        let done = fresh.flush { buffers in
            let n = min(2, buffers[0].count)
            sink += buffers[0].prefix(n)
            return .wrote(n)
        }
        #expect(done == .drained && sink == [0, 4, 4, 5, 6, 7])
    }
}
