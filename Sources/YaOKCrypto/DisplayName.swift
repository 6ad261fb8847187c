import YaOKSupport
import YaOKWire

/// Display-name rules (US-001 AC-001-03): 2 to 50 characters as a person counts them,
/// so an emoji or an accented letter made of several code points counts as one.
public enum DisplayName {
    public static let minLength = 2
    public static let maxLength = 50

    /// The name with surrounding white space removed, or `invalidName`.
    /// Control characters are refused: they can hide text or break a terminal.
    public static func validate(_ raw: String) throws -> String {
        let name = raw.trimmingWhitespace()
        guard (minLength...maxLength).contains(name.count),
              !name.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            throw YaOKError(.invalidName)
        }
        return name
    }
}

extension String {
    package func trimmingWhitespace() -> String {
        let scalars = unicodeScalars
        guard let first = scalars.firstIndex(where: { !$0.properties.isWhitespace }),
              let last = scalars.lastIndex(where: { !$0.properties.isWhitespace }) else { return "" }
        return String(scalars[first...last])
    }
}
