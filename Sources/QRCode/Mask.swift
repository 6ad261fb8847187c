/// The eight data mask patterns and the penalty score ISO/IEC 18004 (7.8.3) uses to pick
/// one: masking breaks up large blobs and finder-like shapes that confuse readers.
enum Mask {
    static let all = 0..<8

    /// Whether mask `mask` inverts the module at column x, row y.
    static func inverts(_ mask: Int, x: Int, y: Int) -> Bool {
        switch mask {
        case 0: return (x + y) % 2 == 0
        case 1: return y % 2 == 0
        case 2: return x % 3 == 0
        case 3: return (x + y) % 3 == 0
        case 4: return (x / 3 + y / 2) % 2 == 0
        case 5: return x * y % 2 + x * y % 3 == 0
        case 6: return (x * y % 2 + x * y % 3) % 2 == 0
        case 7: return ((x + y) % 2 + x * y % 3) % 2 == 0
        default: preconditionFailure("mask patterns are 0...7")
        }
    }

    /// The total penalty of a finished symbol (format bits included): lower is better.
    static func penalty(_ m: Matrix) -> Int {
        let n = m.size
        var score = 0
        // Rules 1 and 3 look along lines; run them over rows and columns alike.
        for i in 0..<n {
            let row = (0..<n).map { m[$0, i] }
            let column = (0..<n).map { m[i, $0] }
            score += runPenalty(row) + runPenalty(column)
            score += finderLikePenalty(row) + finderLikePenalty(column)
        }
        score += blockPenalty(m)
        score += balancePenalty(m)
        return score
    }

    /// Rule 1: each run of five or more same-coloured modules in a line scores 3, plus 1
    /// for each module beyond five.
    static func runPenalty(_ line: [Bool]) -> Int {
        var score = 0
        var runLength = 0
        var previous: Bool?
        for module in line {
            if module == previous {
                runLength += 1
            } else {
                if runLength >= 5 { score += runLength - 2 }
                previous = module
                runLength = 1
            }
        }
        if runLength >= 5 { score += runLength - 2 }
        return score
    }

    /// Rule 2: each 2×2 square of one colour scores 3 (squares may overlap).
    static func blockPenalty(_ m: Matrix) -> Int {
        var score = 0
        for y in 0..<(m.size - 1) {
            for x in 0..<(m.size - 1) {
                let c = m[x, y]
                if c == m[x + 1, y] && c == m[x, y + 1] && c == m[x + 1, y + 1] { score += 3 }
            }
        }
        return score
    }

    /// Rule 3: each dark-light-dark-dark-dark-light-dark (1:1:3:1:1) run with four light
    /// modules before or after it scores 40. Beyond the symbol counts as light, since
    /// that is the quiet zone a reader sees there.
    static func finderLikePenalty(_ line: [Bool]) -> Int {
        let core: [Bool] = [true, false, true, true, true, false, true]
        func lightSpan(_ range: Range<Int>) -> Bool {
            range.allSatisfy { $0 < 0 || $0 >= line.count || !line[$0] }
        }
        var score = 0
        var start = 0
        while start + core.count <= line.count {
            if line[start..<start + core.count].elementsEqual(core),
               lightSpan((start - 4)..<start) || lightSpan((start + 7)..<(start + 11)) {
                score += 40
            }
            start += 1
        }
        return score
    }

    /// Rule 4: 10 points for each full 5 % the dark share deviates from 50 %.
    static func balancePenalty(_ m: Matrix) -> Int {
        var darkCount = 0
        for y in 0..<m.size { for x in 0..<m.size where m[x, y] { darkCount += 1 } }
        let total = m.size * m.size
        return abs(darkCount * 20 - total * 10) / total * 10
    }
}
