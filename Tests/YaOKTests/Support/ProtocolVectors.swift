import Foundation

/// Test vectors parsed from docs/PROTOCOL.md: every fenced block tagged `vector` holds
/// `key: value` lines. Reading them from the document keeps the spec and the code in step.
struct ProtocolVector {
    let fields: [String: String]

    var name: String { fields["name"] ?? "?" }

    func string(_ key: String) throws -> String {
        guard let v = fields[key] else { throw VectorError.missing(key, name) }
        return v
    }

    func hex(_ key: String) throws -> [UInt8] {
        let text = try string(key).replacingOccurrences(of: " ", with: "")
        guard text.count % 2 == 0 else { throw VectorError.badHex(key, name) }
        var out: [UInt8] = []
        var i = text.startIndex
        while i < text.endIndex {
            let j = text.index(i, offsetBy: 2)
            guard let b = UInt8(text[i..<j], radix: 16) else { throw VectorError.badHex(key, name) }
            out.append(b)
            i = j
        }
        return out
    }

    func int64(_ key: String) throws -> Int64 {
        guard let v = Int64(try string(key)) else { throw VectorError.missing(key, name) }
        return v
    }

    func uint64(_ key: String) throws -> UInt64 {
        guard let v = UInt64(try string(key)) else { throw VectorError.missing(key, name) }
        return v
    }

    static func all(filePath: String = #filePath) throws -> [ProtocolVector] {
        // Tests/YaOKTests/Support/ProtocolVectors.swift → repository root
        var root = URL(fileURLWithPath: filePath)
        for _ in 0..<4 { root.deleteLastPathComponent() }
        let doc = try String(contentsOf: root.appendingPathComponent("docs/PROTOCOL.md"), encoding: .utf8)
        var vectors: [ProtocolVector] = []
        var current: [String: String]?
        var lastKey: String?
        for line in doc.split(separator: "\n", omittingEmptySubsequences: false) {
            if current == nil {
                if line.trimmingCharacters(in: .whitespaces) == "```vector" { current = [:] }
                continue
            }
            if line.trimmingCharacters(in: .whitespaces) == "```" {
                vectors.append(ProtocolVector(fields: current ?? [:]))
                current = nil
                lastKey = nil
                continue
            }
            // A line starting with spaces continues the previous value (long hex strings).
            if line.hasPrefix("  "), let key = lastKey {
                current?[key, default: ""] += line.trimmingCharacters(in: .whitespaces)
                continue
            }
            guard let colon = line.firstIndex(of: ":") else { continue }
            let key = String(line[..<colon]).trimmingCharacters(in: .whitespaces)
            let value = String(line[line.index(after: colon)...]).trimmingCharacters(in: .whitespaces)
            current?[key] = value
            lastKey = key
        }
        return vectors
    }

    static func named(_ prefix: String) throws -> [ProtocolVector] {
        try all().filter { $0.name.hasPrefix(prefix) }
    }
}

enum VectorError: Error {
    case missing(String, String)
    case badHex(String, String)
}
