import YaOKSupport

/// Packets that arrived while locked (held as they came), opened after an unlock.
extension Node {
    /// Opens what arrived while locked, one batch per turn of the event loop, after an
    /// unlock. A batch that fails (storage) stays held; diagnostics say why.
    func processHeld() {
        var more = false
        do {
            more = try withEngine { engine, store, keys in try engine.openHeld(store, keys) }
        } catch {
            state.withLock { $0.delivery.heldError = "\(error)" }
        }
        if more { loop.post { [weak self] in self?.processHeld() } }
    }
}
