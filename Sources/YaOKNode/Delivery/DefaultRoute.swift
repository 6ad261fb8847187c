import Glibc

/// Whether the kernel has a default route (Linux: /proc/net/route and /proc/net/ipv6_route).
/// A default route is what "a usable route to the internet" starts from (AC-060-01); with
/// none, only loopback and directly attached networks are reachable.
public enum DefaultRoute {
    /// Reads the kernel's tables. A system without them (not Linux, /proc not mounted)
    /// counts as having one: the relay's answer then decides alone.
    public static func present() -> Bool {
        let v4 = read("/proc/net/route")
        let v6 = read("/proc/net/ipv6_route")
        if v4 == nil && v6 == nil { return true }
        return inIPv4Table(v4 ?? "") || inIPv6Table(v6 ?? "")
    }

    /// /proc/net/route: a line whose Destination and Mask are 00000000 and whose Flags
    /// include RTF_UP (0x1), on an interface other than lo.
    public static func inIPv4Table(_ text: String) -> Bool {
        for line in text.split(separator: "\n").dropFirst() {
            let f = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
            guard f.count >= 8, f[0] != "lo", f[1] == "00000000", f[7] == "00000000",
                  let flags = UInt32(f[3], radix: 16), flags & 0x1 != 0 else { continue }
            return true
        }
        return false
    }

    /// /proc/net/ipv6_route: destination ::/0 (32 zero digits, prefix length 00) with
    /// RTF_UP in the flags (field 9), on an interface other than lo (lo holds the
    /// unreachable ::/0 entry of a host without IPv6 routing).
    public static func inIPv6Table(_ text: String) -> Bool {
        let zero = String(repeating: "0", count: 32)
        for line in text.split(separator: "\n") {
            let f = line.split(separator: " ", omittingEmptySubsequences: true)
            guard f.count >= 10, f[0] == zero, f[1] == "00", f[9] != "lo",
                  let flags = UInt32(f[8], radix: 16), flags & 0x1 != 0 else { continue }
            return true
        }
        return false
    }

    private static func read(_ path: String) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        // Route tables are small; a bound keeps a strange /proc from costing memory.
        while bytes.count < 1 << 20 {
            let n = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { break }
            bytes += chunk[0..<n]
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
