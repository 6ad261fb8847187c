/// Library version; keep in step with YAOK_VERSION_* and YAOK_ABI_VERSION in include/yaok.h
/// (a test compares them).
public enum Version {
    public static let major: UInt32 = 0
    public static let minor: UInt32 = 1
    public static let patch: UInt32 = 0
    /// Bumped only when the C ABI changes incompatibly; it is the SONAME suffix.
    public static let abi: UInt32 = 1
    public static var string: String { "\(major).\(minor).\(patch)" }
}
