#if canImport(Glibc)
import Glibc
#endif

/// A pthread mutex + condition variable on CLOCK_MONOTONIC.
///
/// `Synchronization.Mutex` has no wait/signal, and lanes must block without spinning or
/// allocating, so the lanes and sender threads use this.
package final class ConditionLock: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private let cond: UnsafeMutablePointer<pthread_cond_t>

    package init() {
        mutex = .allocate(capacity: 1)
        cond = .allocate(capacity: 1)
        pthread_mutex_init(mutex, nil)
        var attr = pthread_condattr_t()
        pthread_condattr_init(&attr)
        pthread_condattr_setclock(&attr, CLOCK_MONOTONIC)
        pthread_cond_init(cond, &attr)
        pthread_condattr_destroy(&attr)
    }

    deinit {
        pthread_cond_destroy(cond)
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
        cond.deallocate()
    }

    @inline(__always) package func lock() { pthread_mutex_lock(mutex) }
    @inline(__always) package func unlock() { pthread_mutex_unlock(mutex) }

    @inline(__always)
    package func withLock<T>(_ body: () throws -> T) rethrows -> T {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body()
    }

    /// Wakes every waiter. Call with or without the lock held.
    @inline(__always) package func broadcast() { pthread_cond_broadcast(cond) }

    /// Waits (lock held) until signalled or `deadlineNs` (CLOCK_MONOTONIC) passes.
    package func wait(untilNs deadlineNs: Int64) {
        var ts = timespec(tv_sec: Int(deadlineNs / 1_000_000_000), tv_nsec: Int(deadlineNs % 1_000_000_000))
        pthread_cond_timedwait(cond, mutex, &ts)
    }

    /// Waits (lock held) until signalled.
    package func wait() { pthread_cond_wait(cond, mutex) }
}
