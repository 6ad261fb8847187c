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

    /// A binary PBM (P4) image, 1 = black, each module `scale` pixels square.
    public func pbm(quietZone: Int = 4, scale: Int = 1) -> [UInt8] {
        let (side, pixel) = raster(quietZone: quietZone, scale: scale)
        var out = Array("P4\n\(side) \(side)\n".utf8)
        let rowBytes = (side + 7) / 8
        for py in 0..<side {
            var row = [UInt8](repeating: 0, count: rowBytes)
            for px in 0..<side where pixel(px, py) { row[px >> 3] |= 0x80 >> UInt8(px & 7) }
            out += row
        }
        return out
    }

    /// A binary 8-bit PGM (P5) image, black modules on white, each `scale` pixels square.
    public func pgm(quietZone: Int = 4, scale: Int = 4) -> [UInt8] {
        let (side, pixel) = raster(quietZone: quietZone, scale: scale)
        var out = Array("P5\n\(side) \(side)\n255\n".utf8)
        out.reserveCapacity(out.count + side * side)
        for py in 0..<side {
            for px in 0..<side { out.append(pixel(px, py) ? 0 : 255) }
        }
        return out
    }

    /// Image side in pixels and a dark-pixel test, shared by the image formats.
    private func raster(quietZone: Int, scale: Int) -> (side: Int, dark: (Int, Int) -> Bool) {
        let margin = max(0, quietZone)
        let scale = max(1, scale)
        let side = (size + 2 * margin) * scale
        return (side, { px, py in self[px / scale - margin, py / scale - margin] })
    }
}
