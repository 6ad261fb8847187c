import CQREncode

/// How much of the symbol is Reed–Solomon redundancy: roughly 7 % (L), 15 % (M), 25 % (Q)
/// or 30 % (H) of the codewords can be damaged and still be recovered.
public enum ErrorCorrectionLevel: Int, CaseIterable, Sendable {
    case low = 0, medium, quartile, high

    /// libqrencode's name for the level.
    var qrecLevel: QRecLevel {
        switch self {
        case .low: return QR_ECLEVEL_L
        case .medium: return QR_ECLEVEL_M
        case .quartile: return QR_ECLEVEL_Q
        case .high: return QR_ECLEVEL_H
        }
    }
}
