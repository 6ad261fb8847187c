import Glibc

/// `map` over independent, thread-safe work, split across the calling thread and helper
/// threads it starts and joins before returning (issue 20: a batch of sends is sealed in
/// full before its first packet can leave, so on two cores its seals took a third of a
/// batch's time to delivery while the other core waited). Results come in order; when
/// items fail, the first failing one's error is thrown, as `map` would throw it (the items
/// after it were transformed too: only for work without effects beyond its result).
/// Without a helper (one processor, too few items, a thread that cannot start) it is `map`.
public enum ConcurrentMap {
    /// Threads at most, the caller's included: the online processors, up to 4.
    static let maxThreads = max(1, min(Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))), 4))

    /// `items.map(transform)`, with at least `minimumPerThread` items on each thread used.
    public static func map<T, R>(_ items: [T], minimumPerThread: Int = 2,
                                 _ transform: (T) throws -> R) throws -> [R] {
        let threads = min(maxThreads, items.count / max(minimumPerThread, 1))
        guard threads > 1 else { return try items.map(transform) }
        let results = UnsafeMutableBufferPointer<Result<R, any Error>?>.allocate(capacity: items.count)
        results.initialize(repeating: nil)
        defer {
            _ = results.deinitialize()
            results.deallocate()
        }
        withoutActuallyEscaping(transform) { transform in
            // Contiguous chunks: chunk 0 on this thread, the others on helpers.
            let chunk = (items.count + threads - 1) / threads
            let slots = Slots(results)
            func run(_ part: Int) {
                for i in part * chunk..<min((part + 1) * chunk, items.count) {
                    slots.pointer[i] = Result { try transform(items[i]) }
                }
            }
            let helpers = (1..<threads).map { part in Helper.start { run(part) } }
            run(0)
            for (part, helper) in helpers.enumerated() {
                // One that did not start is done here (nil: ran nothing).
                if let thread = helper { pthread_join(thread, nil) } else { run(part + 1) }
            }
        }
        return try results.map { slot in
            guard let result = slot else { throw YaOKError(.internal, "A concurrent map left an item undone") }
            return try result.get()
        }
    }

    /// The results' storage, handed to the helpers: each writes its own chunk's slots only.
    private final class Slots<R>: @unchecked Sendable {
        let pointer: UnsafeMutableBufferPointer<R>
        init(_ pointer: UnsafeMutableBufferPointer<R>) { self.pointer = pointer }
    }

    /// A helper thread running one closure; joined by the caller before `map` returns, so
    /// the closure (not escaping `map`) never outlives what it uses.
    private final class Helper: @unchecked Sendable {
        let body: () -> Void
        init(_ body: @escaping () -> Void) { self.body = body }

        static func start(_ body: @escaping () -> Void) -> pthread_t? {
            var thread = pthread_t()
            let context = Unmanaged.passRetained(Helper(body)).toOpaque()
            let rc = pthread_create(&thread, nil, { raw in
                guard let raw else { return nil }
                Unmanaged<Helper>.fromOpaque(raw).takeRetainedValue().body()
                return nil
            }, context)
            guard rc == 0 else {
                Unmanaged<Helper>.fromOpaque(context).release()
                return nil
            }
            return thread
        }
    }
}
