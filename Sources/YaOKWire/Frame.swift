import YaOKSupport

/// Stream framing for TCP and L2CAP connection-oriented channels (docs/PROTOCOL.md §4.6):
/// each frame is a u16 big-endian length then that many bytes (one packet). A zero length
/// is a keepalive and carries nothing. Pure Swift (fuzz build).
public enum Frame {
    public static let prefixLength = 2
    /// The most a u16 prefix can express; receivers may configure a lower limit.
    public static let maxEncodableLength = Int(UInt16.max)
    /// The receiver's default limit: one maximal packet.
    public static let defaultMaxLength = Wire.maxPacketLength
    /// A keepalive frame: length 0.
    public static let keepalive: [UInt8] = [0, 0]

    /// The frame for `packet`. Throws `frameTooLarge` above `maxLength`, and
    /// `invalidArgument` for an empty packet (that would read as a keepalive).
    /// What `encode` says of a packet of `length` bytes, before its bytes are read (a caller
    /// refuses an oversized buffer without copying it).
    public static func checkLength(_ length: Int, maxLength: Int = defaultMaxLength) throws {
        guard length > 0 else { throw YaOKError(.invalidArgument, "An empty frame is a keepalive, not a packet") }
        guard length <= min(maxLength, maxEncodableLength) else {
            throw YaOKError(.frameTooLarge, "Frame of \(length) bytes exceeds the maximum \(min(maxLength, maxEncodableLength))")
        }
    }

    public static func encode(_ packet: [UInt8], maxLength: Int = defaultMaxLength) throws -> [UInt8] {
        try checkLength(packet.count, maxLength: maxLength)
        var out: [UInt8] = []
        out.reserveCapacity(prefixLength + packet.count)
        out.appendBigEndian(UInt64(packet.count), count: prefixLength)
        out += packet
        return out
    }
}

/// Incremental deframer: feed it whatever each read returned (any split, one byte at a
/// time or many frames at once) and it returns the frames completed so far.
///
/// Memory: it never holds more than one partial frame, only the bytes received of it, and
/// it checks a length prefix
/// against `maxLength` as soon as the prefix's two bytes are in, before buffering any of
/// the frame, so a peer announcing an oversized frame costs nothing. After any error the
/// decoder stays failed (every later `feed` rethrows): the caller must drop the connection,
/// since the stream can no longer be resynchronised. Not thread-safe: one per connection.
public struct FrameDecoder {
    public let maxLength: Int
    /// Bytes of the current frame (prefix included while it is incomplete).
    private var partial: [UInt8] = []
    /// Length of the frame being collected, once its prefix is complete.
    private var expected: Int?
    private var failure: YaOKError?

    /// `maxLength` in 1...65535 (default: one maximal packet).
    public init(maxLength: Int = Frame.defaultMaxLength) throws {
        guard (1...Frame.maxEncodableLength).contains(maxLength) else {
            throw YaOKError(.invalidArgument, "Maximum frame length must be 1...\(Frame.maxEncodableLength)")
        }
        self.maxLength = maxLength
    }

    /// Bytes held for an incomplete frame (at most `maxLength` + 1).
    public var bufferedByteCount: Int { partial.count }

    public mutating func feed(_ chunk: [UInt8]) throws -> [[UInt8]] { try feed(chunk[...]) }

    public mutating func feed(_ chunk: ArraySlice<UInt8>) throws -> [[UInt8]] {
        if let failure { throw failure }
        var frames: [[UInt8]] = []
        var i = chunk.startIndex
        while i < chunk.endIndex {
            if let length = expected {
                // Take only what this frame still needs; the rest belongs to the next frame.
                let take = min(length - partial.count, chunk.endIndex - i)
                partial += chunk[i..<i + take]
                i += take
                if partial.count == length {
                    frames.append(partial)
                    partial = []
                    expected = nil
                }
            } else {
                partial.append(chunk[i])
                i += 1
                guard partial.count == Frame.prefixLength else { continue }
                let length = Int(partial[0]) << 8 | Int(partial[1])
                partial = []
                if length == 0 { continue }  // keepalive
                guard length <= maxLength else {
                    let error = YaOKError(.frameTooLarge, "Frame length \(length) exceeds the maximum \(maxLength): disconnect")
                    failure = error
                    throw error
                }
                // No reserveCapacity(length): memory follows the bytes that actually
                // arrive, so a peer that announces a frame and stalls costs nothing.
                expected = length
            }
        }
        return frames
    }
}
