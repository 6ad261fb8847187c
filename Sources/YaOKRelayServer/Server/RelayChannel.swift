import YaOKSystem

/// The secure layer between a connection's socket and its frames: TLS 1.3 in service
/// (`TLSChannel`), plaintext in tests of the layers above it (`PlainChannel`). Non-blocking:
/// every call returns what it would wait for instead of waiting. One per connection, on
/// the loop thread; it does not own the descriptor.
protocol RelayChannel: AnyObject {
    func handshake() throws -> ChannelProgress
    func read(maxBytes: Int) throws -> ChannelRead
    func write(_ bytes: ArraySlice<UInt8>) throws -> ChannelWrite
    /// The value AUTH and SUBSCRIBE signatures cover (§8.1), once the handshake is done.
    func binding() throws -> [UInt8]
    /// Ends the secure layer politely (TLS close_notify), best effort.
    func shutdown()
}

enum ChannelProgress: Equatable { case done, wantRead, wantWrite }
enum ChannelRead: Equatable { case data([UInt8]), wantRead, wantWrite, closed }
enum ChannelWrite: Equatable { case wrote(Int), wantRead, wantWrite }

/// How a relay secures its connections.
public struct RelaySecurity: Sendable {
    let makeChannel: @Sendable (Int32) throws -> any RelayChannel
    /// What the operator is told (`pin: …` for a self-signed certificate).
    public let description: String
    /// TLS: the client's hello comes first, so the channel is made at the first readiness.
    /// Plaintext: the relay's CHALLENGE comes first, so it is made at accept.
    let clientSpeaksFirst: Bool

    init(description: String, clientSpeaksFirst: Bool, makeChannel: @escaping @Sendable (Int32) throws -> any RelayChannel) {
        self.description = description
        self.clientSpeaksFirst = clientSpeaksFirst
        self.makeChannel = makeChannel
    }

    /// No TLS at all, and a fixed binding: only for tests of the session and server logic.
    /// Never offered by the command line.
    package static let plaintextForTesting = RelaySecurity(description: "plaintext (testing only)", clientSpeaksFirst: false) { fd in
        PlainChannel(fd: fd)
    }
}

/// Plain TCP for tests, with `PlainChannel.testBinding` as the binding.
final class PlainChannel: RelayChannel {
    package static let testBinding = [UInt8](repeating: 0xB1, count: 32)
    let fd: Int32

    init(fd: Int32) { self.fd = fd }

    func handshake() throws -> ChannelProgress { .done }

    func read(maxBytes: Int) throws -> ChannelRead {
        var buffer = [UInt8](repeating: 0, count: maxBytes)
        switch Socket.receive(fd, into: &buffer) {
        case .bytes(let n): return .data(Array(buffer[0..<n]))
        case .wouldBlock: return .wantRead
        case .endOfStream: return .closed
        case .failed(let failure): throw Socket.error("receive failed", failure)
        }
    }

    func write(_ bytes: ArraySlice<UInt8>) throws -> ChannelWrite {
        switch bytes.withUnsafeBytes({ Socket.send(fd, $0) }) {
        case .bytes(let n): return .wrote(n)
        case .wouldBlock, .endOfStream: return .wantWrite
        case .failed(let failure): throw Socket.error("send failed", failure)
        }
    }

    func binding() throws -> [UInt8] { Self.testBinding }

    func shutdown() {}
}
