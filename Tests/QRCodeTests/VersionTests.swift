import Testing
@testable import QRCode

/// The version tables against figures printed in ISO/IEC 18004 (Tables 1, 7, 9 and E.1).
@Suite struct VersionTests {
    private func version(_ n: Int) throws -> Version { try #require(Version(n)) }

    @Test func outOfRangeVersionsDoNotExist() {
        #expect(Version(0) == nil)
        #expect(Version(41) == nil)
    }

    @Test func totalCodewords() throws {
        #expect(try version(1).totalCodewords == 26)
        #expect(try version(2).totalCodewords == 44)
        #expect(try version(7).totalCodewords == 196)
        #expect(try version(14).totalCodewords == 581)
        #expect(try version(40).totalCodewords == 3706)
    }

    @Test func dataCodewords() throws {
        let v1 = try version(1), v40 = try version(40)
        #expect(ErrorCorrectionLevel.allCases.map(v1.dataCodewords) == [19, 16, 13, 9])
        #expect(ErrorCorrectionLevel.allCases.map(v40.dataCodewords) == [2956, 2334, 1666, 1276])
    }

    @Test func byteCapacities() throws {
        let levels = ErrorCorrectionLevel.allCases
        #expect(levels.map(try version(1).byteCapacity) == [17, 14, 11, 7])
        #expect(levels.map(try version(10).byteCapacity) == [271, 213, 151, 119])
        #expect(levels.map(try version(40).byteCapacity) == [2953, 2331, 1663, 1273])
        #expect(QRCode.maximumBytes(ecc: .low) == 2953)
    }

    /// Every version and level: the raw module count gives whole codewords, and every
    /// block keeps some data codewords besides its ECC.
    @Test func blockTablesAreConsistent() throws {
        for n in Version.range {
            let v = try version(n)
            #expect(v.rawDataModules / 8 == v.totalCodewords)
            for level in ErrorCorrectionLevel.allCases {
                let blocks = v.blockCount(level)
                #expect(v.dataCodewords(level) >= blocks, "version \(n) \(level)")
                #expect(v.totalCodewords / blocks - v.eccCodewordsPerBlock(level) > 0)
            }
        }
    }

    @Test func alignmentPositions() throws {
        #expect(try version(1).alignmentPositions == [])
        #expect(try version(2).alignmentPositions == [6, 18])
        #expect(try version(7).alignmentPositions == [6, 22, 38])
        #expect(try version(15).alignmentPositions == [6, 26, 48, 70])
        #expect(try version(32).alignmentPositions == [6, 34, 60, 86, 112, 138])
        #expect(try version(36).alignmentPositions == [6, 24, 50, 76, 102, 128, 154])
        #expect(try version(40).alignmentPositions == [6, 30, 58, 86, 114, 142, 170])
    }
}
