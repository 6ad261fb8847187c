/// How much of the symbol is Reed–Solomon redundancy: roughly 7 % (L), 15 % (M), 25 % (Q)
/// or 30 % (H) of the codewords can be damaged and still be recovered.
public enum ErrorCorrectionLevel: Int, CaseIterable, Sendable {
    case low = 0, medium, quartile, high

    /// The two bits ISO/IEC 18004 puts into the format information. They are not in the
    /// order of strength (L=01, M=00, Q=11, H=10), so they need a table of their own.
    var formatBits: UInt32 {
        switch self {
        case .low: return 0b01
        case .medium: return 0b00
        case .quartile: return 0b11
        case .high: return 0b10
        }
    }
}
