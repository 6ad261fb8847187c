import YaOKSupport

extension DeliveryEngine {
    /// Whether `error` is the node's own (its store, its disk, its memory) rather than what
    /// a peer or a service sent: work that fails so is tried again later, nothing taken;
    /// what a peer or a service sent that fails otherwise is refused.
    static func isNodesOwnFailure(_ error: any Error) -> Bool {
        guard let error = error as? YaOKError else { return false }
        return error.code == .storage || error.code == .diskFull || error.code == .outOfMemory
    }
}
