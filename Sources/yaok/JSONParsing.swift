import YaOK

/// Reads JSON text into the core's `JSON` value, keeping the order of object keys, so that
/// what comes back over the control socket renders and re-prints exactly like the value the
/// direct command built. Strict: UTF-8 only, no trailing text, integers only (the CLI's
/// JSON has no fractions), nesting at most `maxDepth` deep.
struct JSONParser {
    static let maxDepth = 64

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    static func parse(_ bytes: [UInt8]) throws -> JSON {
        var parser = JSONParser(bytes: bytes)
        parser.skipSpace()
        let value = try parser.value(depth: 0)
        parser.skipSpace()
        guard parser.index == bytes.count else { throw parser.failure("trailing characters") }
        return value
    }

    static func parse(_ text: String) throws -> JSON { try parse(Array(text.utf8)) }

    private let bytes: [UInt8]
    private var index = 0

    private init(bytes: [UInt8]) { self.bytes = bytes }

    private func failure(_ what: String) -> Failure { Failure(description: "Invalid JSON at byte \(index): \(what)") }

    private var peek: UInt8? { index < bytes.count ? bytes[index] : nil }

    private mutating func skipSpace() {
        while let b = peek, b == 0x20 || b == 0x0A || b == 0x0D || b == 0x09 { index += 1 }
    }

    private mutating func expect(_ literal: String) throws {
        for b in literal.utf8 {
            guard peek == b else { throw failure("expected \(literal)") }
            index += 1
        }
    }

    private mutating func value(depth: Int) throws -> JSON {
        guard depth < JSONParser.maxDepth else { throw failure("nested too deeply") }
        switch peek {
        case UInt8(ascii: "{"): return try object(depth: depth)
        case UInt8(ascii: "["): return try array(depth: depth)
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "t"): try expect("true"); return .bool(true)
        case UInt8(ascii: "f"): try expect("false"); return .bool(false)
        case UInt8(ascii: "n"): try expect("null"); return .null
        case .some(let b) where b == UInt8(ascii: "-") || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(b):
            return .int(try integer())
        default: throw failure("expected a value")
        }
    }

    private mutating func object(depth: Int) throws -> JSON {
        index += 1
        var fields: [(String, JSON)] = []
        skipSpace()
        if peek == UInt8(ascii: "}") { index += 1; return .object(fields) }
        while true {
            skipSpace()
            guard peek == UInt8(ascii: "\"") else { throw failure("expected a key") }
            let key = try string()
            skipSpace()
            try expect(":")
            skipSpace()
            fields.append((key, try value(depth: depth + 1)))
            skipSpace()
            if peek == UInt8(ascii: ",") { index += 1; continue }
            try expect("}")
            return .object(fields)
        }
    }

    private mutating func array(depth: Int) throws -> JSON {
        index += 1
        var items: [JSON] = []
        skipSpace()
        if peek == UInt8(ascii: "]") { index += 1; return .array(items) }
        while true {
            skipSpace()
            items.append(try value(depth: depth + 1))
            skipSpace()
            if peek == UInt8(ascii: ",") { index += 1; continue }
            try expect("]")
            return .array(items)
        }
    }

    private mutating func integer() throws -> Int64 {
        let start = index
        if peek == UInt8(ascii: "-") { index += 1 }
        while let b = peek, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(b) { index += 1 }
        if let b = peek, b == UInt8(ascii: ".") || b == UInt8(ascii: "e") || b == UInt8(ascii: "E") {
            throw failure("only integers are accepted")
        }
        let digits = String(decoding: bytes[start..<index], as: UTF8.self)
        guard let value = Int64(digits), digits != "-" else { throw failure("bad integer") }
        return value
    }

    private mutating func string() throws -> String {
        index += 1  // the opening quote
        var out: [UInt8] = []
        while true {
            guard let b = peek else { throw failure("unterminated string") }
            index += 1
            switch b {
            case UInt8(ascii: "\""):
                guard let s = String(validating: out, as: UTF8.self) else { throw failure("string is not UTF-8") }
                return s
            case UInt8(ascii: "\\"):
                guard let e = peek else { throw failure("unterminated escape") }
                index += 1
                switch e {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(e)
                case UInt8(ascii: "b"): out.append(0x08)
                case UInt8(ascii: "f"): out.append(0x0C)
                case UInt8(ascii: "n"): out.append(0x0A)
                case UInt8(ascii: "r"): out.append(0x0D)
                case UInt8(ascii: "t"): out.append(0x09)
                case UInt8(ascii: "u"):
                    var scalar = try hex4()
                    if (0xD800..<0xDC00).contains(scalar) {
                        try expect("\\u")
                        let low = try hex4()
                        guard (0xDC00..<0xE000).contains(low) else { throw failure("unpaired surrogate") }
                        scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                    }
                    guard let u = Unicode.Scalar(scalar) else { throw failure("unpaired surrogate") }
                    out.append(contentsOf: Array(String(Character(u)).utf8))
                default: throw failure("bad escape")
                }
            case 0..<0x20: throw failure("control character in string")
            default: out.append(b)
            }
        }
    }

    private mutating func hex4() throws -> UInt32 {
        var v: UInt32 = 0
        for _ in 0..<4 {
            guard let b = peek, let d = Character(Unicode.Scalar(b)).hexDigitValue else { throw failure("bad \\u escape") }
            v = v << 4 | UInt32(d)
            index += 1
        }
        return v
    }
}

/// Reading values back out, for rendering and for requests.
extension JSON {
    subscript(key: String) -> JSON? {
        guard case .object(let fields) = self else { return nil }
        return fields.first { $0.0 == key }?.1
    }

    var string: String? { if case .string(let s) = self { return s } else { return nil } }
    var int: Int64? { if case .int(let i) = self { return i } else { return nil } }
    var bool: Bool? { if case .bool(let b) = self { return b } else { return nil } }
    var array: [JSON]? { if case .array(let a) = self { return a } else { return nil } }
    var isNull: Bool { if case .null = self { return true } else { return false } }

    /// The same object with `extra` fields added at the end (non-objects are returned as is).
    func appending(_ extra: [(String, JSON)]) -> JSON {
        guard case .object(let fields) = self else { return self }
        return .object(fields + extra)
    }
}
