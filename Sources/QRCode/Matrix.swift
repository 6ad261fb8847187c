/// The module grid while a symbol is being built. It keeps, beside each module's colour,
/// whether the module belongs to a function pattern, because data placement and masking
/// must skip exactly those modules. x is the column, y the row, (0, 0) the top left.
struct Matrix {
    let size: Int
    private(set) var dark: [Bool]
    private(set) var isFunction: [Bool]

    init(version: Version) {
        size = version.size
        dark = [Bool](repeating: false, count: size * size)
        isFunction = [Bool](repeating: false, count: size * size)
        drawFunctionPatterns(version)
    }

    subscript(x: Int, y: Int) -> Bool { dark[y * size + x] }

    func isFunctionModule(x: Int, y: Int) -> Bool { isFunction[y * size + x] }

    private mutating func setFunction(_ x: Int, _ y: Int, _ value: Bool) {
        dark[y * size + x] = value
        isFunction[y * size + x] = true
    }

    // MARK: Function patterns

    private mutating func drawFunctionPatterns(_ version: Version) {
        // Timing patterns first: the finder and alignment patterns drawn after them
        // overwrite the ends, which is what the standard's picture shows.
        for i in 0..<size {
            setFunction(6, i, i % 2 == 0)
            setFunction(i, 6, i % 2 == 0)
        }
        drawFinder(centreX: 3, centreY: 3)
        drawFinder(centreX: size - 4, centreY: 3)
        drawFinder(centreX: 3, centreY: size - 4)

        // Alignment patterns at every pair of listed centres except the three that
        // would sit on the finder patterns.
        let positions = version.alignmentPositions
        let last = positions.count - 1
        for (i, x) in positions.enumerated() {
            for (j, y) in positions.enumerated() {
                let onFinder = (i == 0 && j == 0) || (i == 0 && j == last) || (i == last && j == 0)
                if !onFinder { drawAlignment(centreX: x, centreY: y) }
            }
        }

        // Reserve the format areas now (with placeholder bits) so that data placement
        // skips them; the real bits are written once the mask is chosen.
        drawFormat(level: .medium, mask: 0)
        drawVersion(version)
    }

    /// A 7×7 finder with its one-module light separator, clipped at the symbol's edge.
    private mutating func drawFinder(centreX: Int, centreY: Int) {
        for dy in -4...4 {
            for dx in -4...4 {
                let x = centreX + dx, y = centreY + dy
                guard (0..<size).contains(x), (0..<size).contains(y) else { continue }
                // Chebyshev distance from the centre: rings 0,1 dark; 2 light; 3 dark; 4 separator.
                let ring = max(abs(dx), abs(dy))
                setFunction(x, y, ring != 2 && ring != 4)
            }
        }
    }

    /// A 5×5 alignment pattern: dark ring, light ring, dark centre.
    private mutating func drawAlignment(centreX: Int, centreY: Int) {
        for dy in -2...2 {
            for dx in -2...2 {
                setFunction(centreX + dx, centreY + dy, max(abs(dx), abs(dy)) != 1)
            }
        }
    }

    /// Both copies of the 15 format bits (bit 14 is the most significant), plus the
    /// module that is always dark.
    mutating func drawFormat(level: ErrorCorrectionLevel, mask: Int) {
        let bits = FormatInfo.formatBits(level: level, mask: mask)
        func bit(_ i: Int) -> Bool { (bits >> UInt32(i)) & 1 == 1 }

        // First copy, around the top-left finder: bits 0–7 down column 8 (skipping the
        // timing row 6), bits 8–14 leftwards along row 8 (skipping timing column 6).
        for i in 0...5 { setFunction(8, i, bit(i)) }
        setFunction(8, 7, bit(6))
        setFunction(8, 8, bit(7))
        setFunction(7, 8, bit(8))
        for i in 9..<15 { setFunction(14 - i, 8, bit(i)) }

        // Second copy, split: bits 0–7 along row 8 under the top-right finder, bits 8–14
        // down column 8 beside the bottom-left finder.
        for i in 0..<8 { setFunction(size - 1 - i, 8, bit(i)) }
        for i in 8..<15 { setFunction(8, size - 15 + i, bit(i)) }
        setFunction(8, size - 8, true)
    }

    /// The two 6×3 version blocks (versions 7 and up), mirrored across the diagonal.
    private mutating func drawVersion(_ version: Version) {
        guard version.number >= 7 else { return }
        let bits = FormatInfo.versionBits(version.number)
        for i in 0..<18 {
            let value = (bits >> UInt32(i)) & 1 == 1
            let a = size - 11 + i % 3, b = i / 3
            setFunction(a, b, value)
            setFunction(b, a, value)
        }
    }

    // MARK: Data

    /// Places codeword bits in the standard zigzag: two-module-wide columns from the
    /// right edge leftwards, alternately upwards and downwards, skipping the vertical timing
    /// column and every function module. Modules left over are remainder bits (light).
    mutating func placeCodewords(_ codewords: [UInt8]) {
        let totalBits = codewords.count * 8
        var index = 0
        var right = size - 1
        while right >= 1 {
            if right == 6 { right = 5 }
            let upward = (right + 1) & 2 == 0
            for step in 0..<size {
                let y = upward ? size - 1 - step : step
                for x in [right, right - 1] where !isFunction[y * size + x] && index < totalBits {
                    dark[y * size + x] = (codewords[index >> 3] >> UInt8(7 - (index & 7))) & 1 == 1
                    index += 1
                }
            }
            right -= 2
        }
        precondition(index == totalBits, "codewords must fill the symbol's data area")
    }

    /// XORs a mask over the data modules (applying it twice undoes it).
    mutating func applyMask(_ mask: Int) {
        for y in 0..<size {
            for x in 0..<size where !isFunction[y * size + x] && Mask.inverts(mask, x: x, y: y) {
                dark[y * size + x].toggle()
            }
        }
    }
}
