import YaOKWire

/// A connection's unsent bytes: framed relay frames (§4.6) waiting for the channel to
/// take them. Writes resume exactly where the last one stopped, and always offer the same
/// leading bytes again (TLS requires a retried write to repeat its data).
struct OutputQueue {
    /// At most this much is offered to one write (one TLS record's worth).
    static let chunk = 16 * 1024
    private var bytes: [UInt8] = []
    private var sent = 0
    /// Every DELIVER of a session goes out through here, so this is where what it was
    /// sent is noted (what its DELETEs may name).
    var delivered = DeliveredRefs()

    var count: Int { bytes.count - sent }
    var isEmpty: Bool { count == 0 }

    /// Appends `frame` with its u16 length prefix. Frames the relay builds are always
    /// within `RelayFrame.maxLength`.
    mutating func append(_ frame: RelayFrame) {
        if case .deliver(let mailbox, let packet) = frame { delivered.note(mailbox, packet: packet) }
        let payload = frame.encode()
        compactIfWorthIt()
        bytes.appendBigEndian(UInt64(payload.count), count: Frame.prefixLength)
        bytes += payload
    }

    /// The next bytes to write.
    var front: ArraySlice<UInt8> { bytes[sent..<min(bytes.count, sent + Self.chunk)] }

    mutating func consume(_ n: Int) {
        sent += min(n, count)
        if sent == bytes.count {
            bytes.removeAll(keepingCapacity: bytes.capacity <= 64 * 1024)
            sent = 0
        }
    }

    /// Drops the written prefix once it is large, so the queue does not keep everything
    /// ever sent, without moving bytes on every append.
    private mutating func compactIfWorthIt() {
        guard sent >= 64 * 1024 else { return }
        bytes.removeFirst(sent)
        sent = 0
    }
}
