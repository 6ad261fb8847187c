/// A finished QR code symbol (ISO/IEC 18004, byte mode): a square of dark and light
/// modules. Build one with `QRCode.encode`; draw it with the renderers in Render.swift.
public struct QRCode: Equatable, Sendable {
    /// 1...40.
    public let version: Int
    public let errorCorrectionLevel: ErrorCorrectionLevel
    /// The data mask pattern (0...7) that was applied.
    public let mask: Int
    /// Modules on a side, without the quiet zone: 17 + 4 × version.
    public let size: Int
    /// Row-major: modules[y * size + x], true = dark.
    let modules: [Bool]

    public enum EncodingError: Error, Equatable, Sendable {
        /// The payload is longer than version 40 holds at the requested level.
        case dataTooLong(bytes: Int, capacity: Int)
        /// A forced mask outside 0...7.
        case invalidMask(Int)
    }

    init(version: Int, level: ErrorCorrectionLevel, mask: Int, matrix: Matrix) {
        self.version = version
        self.errorCorrectionLevel = level
        self.mask = mask
        self.size = matrix.size
        self.modules = (0..<matrix.size * matrix.size).map { matrix[$0 % matrix.size, $0 / matrix.size] }
    }

    /// Whether the module at column x, row y is dark. Coordinates outside the symbol read
    /// as light, because that is what the quiet zone around a symbol is; renderers can then
    /// draw margins without special cases.
    public subscript(x: Int, y: Int) -> Bool {
        guard (0..<size).contains(x), (0..<size).contains(y) else { return false }
        return modules[y * size + x]
    }

    /// The most bytes a symbol of the given level can carry (version 40 in byte mode).
    public static func maximumBytes(ecc: ErrorCorrectionLevel) -> Int {
        Version(40).map { $0.byteCapacity(ecc) } ?? 0
    }
}
