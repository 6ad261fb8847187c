/// A Bluetooth LE device address and its type, as mgmt and L2CAP sockets take them. Pure
/// (the wire target, so that the fuzzer builds it with the mgmt codec that yields it).
package struct BLEAddress: Hashable, Sendable, CustomStringConvertible {
    /// The address types of `sockaddr_l2.l2_bdaddr_type` and `mgmt_addr_info.type`
    /// (the same numbers: BDADDR_LE_PUBLIC, BDADDR_LE_RANDOM).
    package enum Kind: UInt8, Sendable {
        case bredr = 0, lePublic = 1, leRandom = 2
        package var name: String {
            switch self {
            case .bredr: return "bredr"
            case .lePublic: return "public"
            case .leRandom: return "random"
            }
        }
    }

    /// Most significant byte first, as written ("00:AA:01:00:00:00" is [0x00, 0xAA, …]).
    package let bytes: [UInt8]
    package let kind: Kind

    package init(bytes: [UInt8], kind: Kind) {
        precondition(bytes.count == 6)
        self.bytes = bytes
        self.kind = kind
    }

    /// From the 6 bytes of a `bdaddr_t` on the wire (least significant first).
    package init(littleEndian raw: ArraySlice<UInt8>, kind: Kind) {
        self.init(bytes: Array(raw.reversed()), kind: kind)
    }

    package var littleEndian: [UInt8] { bytes.reversed() }

    package var isZero: Bool { bytes.allSatisfy { $0 == 0 } }

    /// "00:AA:01:00:00:00".
    package var text: String {
        bytes.map { b in
            let s = String(b, radix: 16, uppercase: true)
            return s.count == 1 ? "0" + s : s
        }.joined(separator: ":")
    }

    package var description: String { "\(text) (\(kind.name))" }

    /// "AA:BB:CC:DD:EE:FF" (either case) → the bytes; nil for anything else.
    package static func parse(_ text: String) -> [UInt8]? {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 6 else { return nil }
        var out: [UInt8] = []
        for p in parts {
            guard p.count == 2, let b = UInt8(p, radix: 16) else { return nil }
            out.append(b)
        }
        return out
    }
}
