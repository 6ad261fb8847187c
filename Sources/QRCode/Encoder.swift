extension QRCode {
    /// Encodes `bytes` in byte mode at the smallest version (1...40) that holds them at
    /// level `ecc`. The mask is the one with the lowest penalty unless `mask` forces one
    /// (tests use that to exercise every pattern).
    public static func encode(
        _ bytes: [UInt8], ecc: ErrorCorrectionLevel = .medium, mask forcedMask: Int? = nil
    ) throws -> QRCode {
        if let forcedMask, !Mask.all.contains(forcedMask) { throw EncodingError.invalidMask(forcedMask) }
        guard let version = Version.range.lazy.compactMap(Version.init)
            .first(where: { bytes.count <= $0.byteCapacity(ecc) }) else {
            throw EncodingError.dataTooLong(bytes: bytes.count, capacity: maximumBytes(ecc: ecc))
        }

        let data = dataCodewords(bytes, version: version, level: ecc)
        let codewords = addErrorCorrection(data, version: version, level: ecc)

        var matrix = Matrix(version: version)
        matrix.placeCodewords(codewords)
        let mask = forcedMask ?? bestMask(matrix, level: ecc)
        matrix.applyMask(mask)
        matrix.drawFormat(level: ecc, mask: mask)
        return QRCode(version: version.number, level: ecc, mask: mask, matrix: matrix)
    }

    /// Encodes a string's UTF-8 bytes (a contact card is ASCII, so any reader shows it as is).
    public static func encode(
        _ text: String, ecc: ErrorCorrectionLevel = .medium, mask: Int? = nil
    ) throws -> QRCode {
        try encode(Array(text.utf8), ecc: ecc, mask: mask)
    }

    /// Mode indicator, character count, payload, terminator and padding, as codewords
    /// filling exactly the data capacity of `version` at `level`.
    static func dataCodewords(_ bytes: [UInt8], version: Version, level: ErrorCorrectionLevel) -> [UInt8] {
        let capacityBits = version.dataCodewords(level) * 8
        var buffer = BitBuffer()
        buffer.append(0b0100, width: 4)  // byte mode
        buffer.append(UInt32(bytes.count), width: version.byteModeCountBits)
        for byte in bytes { buffer.append(UInt32(byte), width: 8) }
        precondition(buffer.count <= capacityBits, "version chosen too small")

        // Terminator: up to four zero bits (fewer if the capacity ends sooner), then zeros
        // to the byte boundary.
        buffer.append(0, width: min(4, capacityBits - buffer.count))
        buffer.append(0, width: (8 - buffer.count % 8) % 8)

        // The standard's pad codewords, alternating, fill what is left.
        var result = buffer.bytes
        let pads: [UInt8] = [0xEC, 0x11]
        var next = 0
        while result.count < capacityBits / 8 {
            result.append(pads[next])
            next ^= 1
        }
        return result
    }

    /// Splits data into the version's blocks, appends each block's Reed–Solomon codewords,
    /// and interleaves: first data codeword of every block, then the second, …, then the
    /// ECC codewords the same way. Interleaving spreads a local smudge over many blocks.
    static func addErrorCorrection(_ data: [UInt8], version: Version, level: ErrorCorrectionLevel) -> [UInt8] {
        let blockCount = version.blockCount(level)
        let eccLength = version.eccCodewordsPerBlock(level)
        let total = version.totalCodewords
        // ISO's blocks come in at most two sizes: "short" ones, and then "long" ones with
        // one more data codeword, as many as it takes to use up the total.
        let longBlocks = total % blockCount
        let shortDataLength = total / blockCount - eccLength
        precondition(data.count == total - eccLength * blockCount, "data must fill the capacity")

        let generator = ReedSolomon.generator(degree: eccLength)
        var dataBlocks: [[UInt8]] = []
        var eccBlocks: [[UInt8]] = []
        var offset = 0
        for i in 0..<blockCount {
            let length = shortDataLength + (i >= blockCount - longBlocks ? 1 : 0)
            let block = Array(data[offset..<offset + length])
            offset += length
            dataBlocks.append(block)
            eccBlocks.append(ReedSolomon.remainder(block, generator: generator))
        }

        var result: [UInt8] = []
        result.reserveCapacity(total)
        for i in 0...shortDataLength {
            for block in dataBlocks where i < block.count { result.append(block[i]) }
        }
        for i in 0..<eccLength {
            for block in eccBlocks { result.append(block[i]) }
        }
        return result
    }

    /// Tries all eight masks (format bits included, as a reader sees them) and keeps the
    /// lowest penalty; ties go to the lower mask number.
    static func bestMask(_ matrix: Matrix, level: ErrorCorrectionLevel) -> Int {
        var best = (mask: 0, penalty: Int.max)
        for mask in Mask.all {
            var candidate = matrix
            candidate.applyMask(mask)
            candidate.drawFormat(level: level, mask: mask)
            let penalty = Mask.penalty(candidate)
            if penalty < best.penalty { best = (mask, penalty) }
        }
        return best.mask
    }
}
