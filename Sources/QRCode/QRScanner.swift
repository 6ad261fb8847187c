#if canImport(Glibc)
import Glibc
#endif
import CImageIO
import CZBar

/// Why an image could not be read or written.
public enum ImageError: Error, Equatable, Sendable, CustomStringConvertible {
    case cannotOpen(path: String, errno: Int32)
    case unknownFormat(path: String)
    case decodeFailed(path: String, message: String)
    case tooLarge(path: String)
    case writeFailed(path: String, message: String)

    public var description: String {
        switch self {
        case .cannotOpen(let path, let code): return "Cannot open \(path): \(String(cString: strerror(code)))"
        case .unknownFormat(let path): return "\(path) is not a PNG or JPEG image"
        case .decodeFailed(let path, let message): return "Cannot read the image \(path): \(message)"
        case .tooLarge(let path): return "\(path) is too large (more than 100 megapixels)"
        case .writeFailed(let path, let message): return "Cannot write \(path): \(message)"
        }
    }
}

/// An 8-bit greyscale image, one byte a pixel, rows top to bottom.
public struct GrayImage: Sendable {
    public let width: Int
    public let height: Int
    public let pixels: [UInt8]

    public init(width: Int, height: Int, pixels: [UInt8]) {
        precondition(pixels.count == width * height, "pixels must be width × height bytes")
        self.width = width
        self.height = height
        self.pixels = pixels
    }

    /// Reads a PNG (libpng) or JPEG (libjpeg) file, recognised by its first bytes, as grey;
    /// colour is converted and transparency laid over white.
    public init(contentsOf path: String) throws {
        var data: UnsafeMutablePointer<UInt8>?
        var width: UInt32 = 0, height: UInt32 = 0
        var message = [CChar](repeating: 0, count: 256)
        errno = 0
        let status = yaok_image_read_gray(path, &data, &width, &height, &message, message.count)
        switch Int(status) {
        case Int(YAOK_IMAGE_OK):
            guard let data else { throw ImageError.decodeFailed(path: path, message: "no pixels") }
            defer { free(data) }
            self.init(width: Int(width), height: Int(height),
                      pixels: Array(UnsafeBufferPointer(start: data, count: Int(width) * Int(height))))
        case Int(YAOK_IMAGE_CANNOT_OPEN): throw ImageError.cannotOpen(path: path, errno: errno)
        case Int(YAOK_IMAGE_UNKNOWN_FORMAT): throw ImageError.unknownFormat(path: path)
        case Int(YAOK_IMAGE_TOO_LARGE): throw ImageError.tooLarge(path: path)
        default: throw ImageError.decodeFailed(path: path, message: String(decoding: message.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
    }
}

/// Finds and decodes QR codes in images with ZBar (libzbar), an independent decoder: the
/// way a photo of someone's contact card becomes its text.
public enum QRScanner {
    /// The payload of every QR code ZBar finds in `image`, as raw bytes (no character set
    /// conversion), in the order ZBar reports them; empty when there is none.
    public static func scan(_ image: GrayImage) -> [[UInt8]] {
        guard image.width > 0, image.height > 0, let scanner = zbar_image_scanner_create() else { return [] }
        defer { zbar_image_scanner_destroy(scanner) }
        // QR codes only, and their bytes as they are.
        _ = zbar_image_scanner_set_config(scanner, ZBAR_NONE, ZBAR_CFG_ENABLE, 0)
        _ = zbar_image_scanner_set_config(scanner, ZBAR_QRCODE, ZBAR_CFG_ENABLE, 1)
        _ = zbar_image_scanner_set_config(scanner, ZBAR_QRCODE, ZBAR_CFG_BINARY, 1)
        guard let zimage = zbar_image_create() else { return [] }
        defer { zbar_image_destroy(zimage) }
        zbar_image_set_format(zimage, YAOK_ZBAR_Y800)
        zbar_image_set_size(zimage, UInt32(image.width), UInt32(image.height))
        return image.pixels.withUnsafeBufferPointer { buffer -> [[UInt8]] in
            // No cleanup handler: the buffer outlives the zbar image (destroyed by the defer
            // above, after this closure), and zbar does not write to it.
            zbar_image_set_data(zimage, buffer.baseAddress, UInt(buffer.count), nil)
            guard zbar_scan_image(scanner, zimage) > 0 else { return [] }
            var found: [[UInt8]] = []
            var symbol = zbar_image_first_symbol(zimage)
            while let current = symbol {
                if zbar_symbol_get_type(current) == ZBAR_QRCODE, let data = zbar_symbol_get_data(current) {
                    let count = Int(zbar_symbol_get_data_length(current))
                    found.append(data.withMemoryRebound(to: UInt8.self, capacity: count) {
                        Array(UnsafeBufferPointer(start: $0, count: count))
                    })
                }
                symbol = zbar_symbol_next(current)
            }
            return found
        }
    }

    /// Reads a PNG or JPEG file and scans it.
    public static func scan(imageAt path: String) throws -> [[UInt8]] {
        scan(try GrayImage(contentsOf: path))
    }
}
