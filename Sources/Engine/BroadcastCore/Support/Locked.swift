#if canImport(Glibc)
import Glibc
#endif

/// A value behind a pthread mutex, for state that threads the library starts itself share.
///
/// `Synchronization.Mutex` would do the same job, but its lock is a futex call inside the
/// uninstrumented standard library, so ThreadSanitizer sees no order between two of its bodies
/// and reports them as a race (Tests/tsan-suppressions.txt). A pthread mutex is intercepted by
/// TSan, so code under this lock is checked for real instead of suppressed.
package final class Locked<Value>: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private var value: Value

    package init(_ value: Value) {
        self.value = value
        mutex = .allocate(capacity: 1)
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Runs `body` with the value, the lock held.
    @inline(__always)
    package func withLock<R, E: Error>(_ body: (inout Value) throws(E) -> R) throws(E) -> R {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}
