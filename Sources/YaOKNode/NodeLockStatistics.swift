import YaOKLoop

/// The kinds of section that take the node's lock, for `NodeLockStatistics`.
package enum LockSection: Int, CaseIterable, Sendable {
    /// `Node.send`'s first section: contacts, sender times, key choices, a ticket.
    case sendPlan
    /// A group commit's write (`Node.writeSendGroup`): rows, ring records, the commit, the pump.
    case sendWrite
    /// The event thread's delivery timers (`runDeliveryTimers`, its own copies' batch aside).
    case timers
    /// The event thread's drain of queued inbound units.
    case drain
    /// The event thread's hand-over of queued units and carrier commands (`flushOutgoing`).
    case flush
    /// Any other section on the event thread (own copies' batches, links, transports).
    case eventThread
    /// Any other section on an application's thread.
    case other

    package var name: String {
        switch self {
        case .sendPlan: "send plan"
        case .sendWrite: "group write"
        case .timers: "timers"
        case .drain: "drains"
        case .flush: "flushes"
        case .eventThread: "event thread, other"
        case .other: "app threads, other"
        }
    }
}

/// Where the node's lock goes (yaok-bench): for each kind of section, how many took it,
/// how long they waited for it and how long they held it. Kept only when the node was
/// opened with `Options.lockStatistics` (two clock reads a section); recorded under the
/// lock itself, so it needs no lock of its own.
package struct NodeLockStatistics: Sendable {
    package struct Figures: Sendable {
        package var sections = 0
        package var waitNanos: UInt64 = 0, holdNanos: UInt64 = 0
        package var maxWaitNanos: UInt64 = 0
    }
    package private(set) var bySection = [Figures](repeating: Figures(), count: LockSection.allCases.count)
    /// Sends sealed again under the lock by a group's write (a key announced since their
    /// plan), and the time that took (part of `sendWrite`'s hold). Counted with or without
    /// the option: a clock read per re-seal only.
    package var reseals = 0, resealNanos: UInt64 = 0

    package subscript(_ section: LockSection) -> Figures { bySection[section.rawValue] }

    mutating func record(_ section: LockSection, wait: UInt64, hold: UInt64) {
        bySection[section.rawValue].sections += 1
        bySection[section.rawValue].waitNanos += wait
        bySection[section.rawValue].holdNanos += hold
        bySection[section.rawValue].maxWaitNanos = max(bySection[section.rawValue].maxWaitNanos, wait)
    }
}

extension Node {
    /// Runs `body` under the node's lock; with `Options.lockStatistics`, records the wait and
    /// the hold as `section` (nil: `eventThread` or `other`, by the thread).
    func withState<R>(section: LockSection?, _ body: (inout NodeState) throws -> R) rethrows -> R {
        guard options.lockStatistics else { return try state.withLock(body) }
        let asked = EventLoop.monotonicNanoseconds()
        return try state.withLock { s in
            let acquired = EventLoop.monotonicNanoseconds()
            defer {
                s.lockStatistics.record(section ?? (loop.isLoopThread ? .eventThread : .other), wait: acquired - asked,
                                        hold: EventLoop.monotonicNanoseconds() - acquired)
            }
            return try body(&s)
        }
    }

    /// What the node's lock did so far (all zero without `Options.lockStatistics`, but for
    /// the re-seals).
    package var lockStatistics: NodeLockStatistics {
        state.withLock { s in
            var figures = s.lockStatistics
            figures.reseals = s.delivery.reseals.count
            figures.resealNanos = s.delivery.reseals.nanos
            return figures
        }
    }
}
