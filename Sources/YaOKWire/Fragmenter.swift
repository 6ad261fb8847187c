import YaOKSupport

/// Splits packets into link units for a small-MTU link (docs/PROTOCOL.md §4.7).
/// One per link and direction: its group counter must not repeat while a receiver may
/// still hold an incomplete group, and 65,536 packets inside one reassembly timeout
/// cannot happen on a link this slow. Pure Swift (fuzz build).
public struct Fragmenter {
    /// The smallest link unit supported: BLE's minimum ATT MTU of 23 leaves 20 bytes for a
    /// write or notification (3 bytes go to the ATT opcode and handle).
    public static let minimumMTU = 20

    /// The most bytes one link unit can carry (for BLE GATT: ATT MTU − 3).
    public let mtu: Int
    private var nextGroup: UInt16

    /// Throws `invalidArgument` for an MTU below `minimumMTU`. The first group number is
    /// random so that a reconnecting sender does not reuse the numbers of its last session.
    public init(mtu: Int, firstGroup: UInt16 = UInt16.random(in: 0...UInt16.max)) throws {
        guard mtu >= Self.minimumMTU else {
            throw YaOKError(.invalidArgument, "MTU must be at least \(Self.minimumMTU) bytes, got \(mtu)")
        }
        self.mtu = mtu
        self.nextGroup = firstGroup
    }

    /// Data bytes per fragment.
    public var chunkLength: Int { mtu - Fragment.headerLength }

    /// What `split` says of a packet of `length` bytes, before its bytes are read.
    public static func checkLength(_ length: Int) throws {
        guard length > 0, length <= Wire.maxPacketLength else {
            throw YaOKError(.invalidArgument, "Packet length \(length) is outside 1...\(Wire.maxPacketLength)")
        }
    }

    /// The link units for one encoded packet: the packet itself when it fits in one unit,
    /// otherwise fragments 0..<count, each of `mtu` bytes except possibly the last.
    public mutating func split(_ packet: [UInt8]) throws -> [[UInt8]] {
        try Fragmenter.checkLength(packet.count)
        if packet.count <= mtu { return [packet] }
        let chunk = chunkLength
        let count = (packet.count + chunk - 1) / chunk
        // maxPacketLength / (20 − 8) < 65,536, so the count always fits its u16 field.
        guard count <= Int(UInt16.max) else { throw YaOKError(.internal, "Too many fragments") }
        let group = nextGroup
        nextGroup &+= 1
        var units: [[UInt8]] = []
        units.reserveCapacity(count)
        for i in 0..<count {
            let start = i * chunk
            let fragment = try Fragment(group: group, index: UInt16(i), count: UInt16(count),
                                        data: Array(packet[start..<min(start + chunk, packet.count)]))
            var unit: [UInt8] = []
            fragment.write(to: &unit)
            units.append(unit)
        }
        return units
    }
}
