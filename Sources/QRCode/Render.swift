import CImageIO

/// Ways to draw a symbol. Every renderer surrounds it with a quiet zone of light modules:
/// the standard asks for 4, and readers fail to find codes that touch other ink.
extension QRCode {
    /// Text for a terminal, two module rows per line with Unicode half blocks
    /// (▀ top, ▄ bottom, █ both, space neither), so that modules come out roughly square.
    ///
    /// A glyph's ink is the terminal's foreground colour. By default ink draws dark modules,
    /// which is right on a light background. On a dark background that prints the code
    /// inverted, which many phone scanners do not read; `invert: true` swaps ink and
    /// background so that the code scans there (the quiet zone is then drawn in ink).
    public func terminalString(quietZone: Int = 4, invert: Bool = false) -> String {
        let margin = max(0, quietZone)
        let range = -margin..<(size + margin)
        // The last line's bottom half may lie below the margin: draw it as light (more
        // quiet zone), which in inverted mode means ink.
        func ink(_ x: Int, _ y: Int) -> Bool { self[x, y] != invert }
        var out = ""
        for y in stride(from: range.lowerBound, to: range.upperBound, by: 2) {
            for x in range {
                let top = ink(x, y)
                let bottom = y + 1 < range.upperBound ? ink(x, y + 1) : invert
                switch (top, bottom) {
                case (true, true): out += "█"
                case (true, false): out += "▀"
                case (false, true): out += "▄"
                case (false, false): out += " "
                }
            }
            out += "\n"
        }
        return out
    }

    /// 8-bit grey pixels, black modules on white, each module `scale` pixels square, rows
    /// top to bottom: the image's side and its `side * side` bytes.
    public func grayPixels(quietZone: Int = 4, scale: Int = 8) -> (side: Int, pixels: [UInt8]) {
        let margin = max(0, quietZone)
        let scale = max(1, scale)
        let side = (size + 2 * margin) * scale
        var pixels = [UInt8](repeating: 255, count: side * side)
        for py in 0..<side {
            for px in 0..<side where self[px / scale - margin, py / scale - margin] { pixels[py * side + px] = 0 }
        }
        return (side, pixels)
    }

    /// A binary 8-bit PGM (P5) image of `grayPixels`.
    public func pgm(quietZone: Int = 4, scale: Int = 4) -> [UInt8] {
        let (side, pixels) = grayPixels(quietZone: quietZone, scale: scale)
        return Array("P5\n\(side) \(side)\n255\n".utf8) + pixels
    }

    /// Writes the symbol as a greyscale PNG file (libpng), each module `scale` pixels square.
    public func writePNG(to path: String, quietZone: Int = 4, scale: Int = 8) throws {
        let (side, pixels) = grayPixels(quietZone: quietZone, scale: scale)
        var message = [CChar](repeating: 0, count: 128)
        let status = yaok_png_write_gray(path, pixels, UInt32(side), UInt32(side), &message, message.count)
        guard status == Int32(YAOK_IMAGE_OK) else {
            throw ImageError.writeFailed(path: path, message: String(decoding: message.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
    }
}
