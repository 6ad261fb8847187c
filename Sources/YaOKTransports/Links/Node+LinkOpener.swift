import YaOKWire
import YaOKLoop
import YaOKCrypto
import YaOKNode

/// The production path: a transport started on a node opens real links (`Node.openLink`).
extension Node: LinkOpener {
    package func openLink(transport: String, as role: LinkRole, mtu: Int, stream: Bool, send: LinkSender,
                          closed: @escaping @Sendable (String) -> Void) throws -> any TransportLink {
        try openLink(transport: transport, role: role, mtu: mtu, stream: stream, sender: send, closed: closed)
    }
}

extension Link: TransportLink {}
