#if canImport(Glibc)
import Glibc
#endif
import CQREncode

/// A QR code symbol (ISO/IEC 18004, byte mode): a square of dark and light modules, encoded
/// by libqrencode. Build one with `QRCode.encode`; draw it with the renderers in
/// Render.swift; read one back from a photo with `QRScanner`.
public struct QRCode: Equatable, Sendable {
    /// 1...40.
    public let version: Int
    public let errorCorrectionLevel: ErrorCorrectionLevel
    /// Modules on a side, without the quiet zone: 17 + 4 × version.
    public let size: Int
    /// Row-major: modules[y * size + x], true = dark.
    let modules: [Bool]

    public enum EncodingError: Error, Equatable, Sendable, CustomStringConvertible {
        /// Nothing to encode (libqrencode refuses an empty payload).
        case empty
        /// The payload is longer than a version 40 symbol holds at the requested level.
        case dataTooLong(bytes: Int)
        /// libqrencode failed otherwise (errno: EINVAL, ENOMEM).
        case failed(errno: Int32)

        public var description: String {
            switch self {
            case .empty: return "nothing to encode"
            case .dataTooLong(let bytes): return "\(bytes) bytes do not fit in a QR code"
            case .failed(let code): return "QR encoding failed: \(String(cString: strerror(code)))"
            }
        }
    }

    init(version: Int, level: ErrorCorrectionLevel, size: Int, modules: [Bool]) {
        self.version = version
        self.errorCorrectionLevel = level
        self.size = size
        self.modules = modules
    }

    /// Encodes `bytes` in byte mode at the smallest version that holds them at level `ecc`
    /// (libqrencode chooses the version and the mask).
    public static func encode(_ bytes: [UInt8], ecc: ErrorCorrectionLevel = .medium) throws -> QRCode {
        guard !bytes.isEmpty else { throw EncodingError.empty }
        errno = 0
        let symbol = bytes.withUnsafeBufferPointer {
            QRcode_encodeData(Int32($0.count), $0.baseAddress, 0, ecc.qrecLevel)
        }
        guard let symbol else {
            let code = errno
            throw code == ERANGE ? EncodingError.dataTooLong(bytes: bytes.count) : EncodingError.failed(errno: code)
        }
        defer { QRcode_free(symbol) }
        let size = Int(symbol.pointee.width)
        // Bit 0 of each byte is the module's colour (1 = dark); the other bits say which
        // part of the symbol it belongs to.
        let data = UnsafeBufferPointer(start: symbol.pointee.data, count: size * size)
        return QRCode(version: Int(symbol.pointee.version), level: ecc, size: size,
                      modules: data.map { $0 & 1 == 1 })
    }

    /// Encodes a string's UTF-8 bytes (a contact card is ASCII, so any reader shows it as is).
    public static func encode(_ text: String, ecc: ErrorCorrectionLevel = .medium) throws -> QRCode {
        try encode(Array(text.utf8), ecc: ecc)
    }

    /// Whether the module at column x, row y is dark. Coordinates outside the symbol read
    /// as light, because that is what the quiet zone around a symbol is; renderers can then
    /// draw margins without special cases.
    public subscript(x: Int, y: Int) -> Bool {
        guard (0..<size).contains(x), (0..<size).contains(y) else { return false }
        return modules[y * size + x]
    }
}
