import YaOKSupport
import YaOKLoop
import YaOKStore

/// When the checkpoint that erases a deleted key's old pages runs (docs/PROTOCOL.md §13.3,
/// "Erasure"; Store+Erasure): once for every erasure of the `erasureDelaySeconds` that
/// follow the first, on the event thread, not after each. In a one-at-a-time exchange every
/// round trip erases a key, and a checkpoint each cost the receiver three disk syncs of
/// about five per message. Locking (auto-lock too), closing and the delivery sweep (which
/// erases expired keys and prekeys) run a waiting one at once.
extension Node {
    /// The bound: an erased key's bytes are gone from every file of the data directory
    /// within this long after the commit that erased it (plus the checkpoint's own time and
    /// any wait for the node's lock).
    public static let erasureDelaySeconds = 1.0

    /// Lets the store wait for `runPendingErasure` instead of checkpointing after each
    /// erasure. Not with `callerRunsTimers` (the simulator arms no real-clock timer): its
    /// erasures checkpoint at once, as a store without an owner does.
    func installErasureScheduler(_ store: Store) {
        guard !options.callerRunsTimers else { return }
        let delay = options.erasureDelaySeconds
        store.erasureScheduler = { [weak self, loop] in
            loop.schedule(after: delay) { [weak self] in self?.runPendingErasure() }
        }
    }

    /// The scheduled checkpoint. One that a reader kept from completing asks the
    /// scheduler again (Store.erasePendingPages): tried once more a full interval later.
    func runPendingErasure() {
        _ = try? withStore { store, _ in store.erasePendingPages() }
    }
}
