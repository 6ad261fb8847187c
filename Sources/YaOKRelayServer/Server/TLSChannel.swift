import YaOKSupport
import YaOKWire
import YaOKTLS

/// TLS 1.3 (YaOKTLS) as a connection's channel: a thin mapping of its calls.
final class TLSChannel: RelayChannel {
    private let connection: TLSConnection

    init(context: TLSContext, fd: Int32) throws {
        connection = try TLSConnection(server: context, fd: fd)
    }

    func handshake() throws -> ChannelProgress {
        switch try connection.handshake() {
        case .done: return .done
        case .wantRead: return .wantRead
        case .wantWrite: return .wantWrite
        }
    }

    func read(maxBytes: Int) throws -> ChannelRead {
        switch try connection.read(maxBytes: maxBytes) {
        case .data(let bytes): return .data(bytes)
        case .wantRead: return .wantRead
        case .wantWrite: return .wantWrite
        case .closed: return .closed
        }
    }

    func write(_ bytes: ArraySlice<UInt8>) throws -> ChannelWrite {
        switch try connection.write(bytes) {
        case .wrote(let n): return .wrote(n)
        case .wantRead: return .wantRead
        case .wantWrite: return .wantWrite
        }
    }

    func binding() throws -> [UInt8] {
        try connection.exportKeyingMaterial(label: RelaySignedData.exporterLabel, length: 32)
    }

    func shutdown() { connection.close() }
}

extension RelaySecurity {
    /// TLS 1.3 with `context` (a server context: certificate files or self-signed).
    public static func tls(_ context: TLSContext) -> RelaySecurity {
        let pin = context.certificatePin.map { "pin: " + Hex.encode($0) } ?? "TLS"
        return RelaySecurity(description: pin, clientSpeaksFirst: true) { fd in
            try TLSChannel(context: context, fd: fd)
        }
    }
}
