/// One carrier's state (Delivery/Carrier.swift).
struct CarrierState {
    let carrier: Carrier
    /// No posts before this wall-clock time (the service said it is rate limited).
    var pausedUntil: Int64 = 0
    /// Packets fetched and not yet processed (capped like a link's queue).
    var queued = 0
    var queuedBytes = 0
    /// The app was told that an answer of this session could not be recorded
    /// (`DeliveryEngine.carrierWorkFailed`): once a session, not at every retry.
    var storeFailureNoticed = false
}
