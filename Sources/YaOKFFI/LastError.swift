import Glibc

/// The per-thread "last error" message behind yaok_last_error_message(): a malloc'd
/// C string in a pthread key, freed when replaced or when the thread exits.
enum LastError {
    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key) { free($0) }
        return key
    }()

    static func set(_ message: String) {
        free(pthread_getspecific(key))
        pthread_setspecific(key, strdup(message))
    }

    static var current: UnsafePointer<CChar>? {
        pthread_getspecific(key).map { UnsafePointer($0.assumingMemoryBound(to: CChar.self)) }
    }
}
