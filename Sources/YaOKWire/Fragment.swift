import YaOKSupport

/// One fragment of a packet on a small-MTU link (docs/PROTOCOL.md §4.7):
///
///     offset size field
///      0      1   version (1)
///      1      1   type (0x04)
///      2      2   group: which packet this is a piece of (per link, sender's counter)
///      4      2   index, 0-based, < count
///      6      2   count, ≥ 2
///      8      …   data, ≥ 1 byte, to the end of the link unit
///
/// The link unit (one BLE write or notification) delimits the fragment, so it carries no
/// length field: on links that small every byte counts. Pure Swift (fuzz build).
public struct Fragment: Equatable, Sendable {
    public static let headerLength = 8

    // Read-only outside: the initialiser's checks (count ≥ 2, index < count, data not empty)
    // are what Reassembler relies on; `count = 0` set afterwards would trap in `count - 1`.
    public private(set) var group: UInt16
    public private(set) var index: UInt16
    public private(set) var count: UInt16
    public private(set) var data: [UInt8]

    public init(group: UInt16, index: UInt16, count: UInt16, data: [UInt8]) throws {
        guard count >= 2 else { throw YaOKError(.invalidArgument, "A fragmented packet has at least 2 fragments") }
        guard index < count else { throw YaOKError(.invalidArgument, "Fragment index \(index) is not below count \(count)") }
        guard !data.isEmpty else { throw YaOKError(.invalidArgument, "A fragment carries at least 1 byte") }
        self.group = group
        self.index = index
        self.count = count
        self.data = data
    }

    func write(to out: inout [UInt8]) {
        out.reserveCapacity(out.count + Self.headerLength + data.count)
        out.append(Wire.version)
        out.append(PacketType.fragment.rawValue)
        out.appendBigEndian(UInt64(group), count: 2)
        out.appendBigEndian(UInt64(index), count: 2)
        out.appendBigEndian(UInt64(count), count: 2)
        out += data
    }

    /// Reads the fields after version and type.
    static func parseBody(_ r: inout ByteReader) throws -> Fragment {
        let group = try r.u16("fragment group")
        let index = try r.u16("fragment index")
        let count = try r.u16("fragment count")
        guard count >= 2 else { throw YaOKError(.malformedPacket, "Malformed packet: fragment count \(count) is below 2") }
        guard index < count else {
            throw YaOKError(.malformedPacket, "Malformed packet: fragment index \(index) is not below count \(count)")
        }
        let data = r.rest()
        guard !data.isEmpty else { throw YaOKError(.malformedPacket, "Malformed packet: fragment without data") }
        guard data.count <= Wire.maxPacketLength else {
            throw YaOKError(.malformedPacket, "Malformed packet: fragment of \(data.count) bytes exceeds the packet limit")
        }
        return try Fragment(group: group, index: index, count: count, data: Array(data))
    }
}
