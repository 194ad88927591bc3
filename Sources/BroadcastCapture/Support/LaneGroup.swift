#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// The lane threads of one source, with the shared stop flag, the "all lanes ended"
/// signal behind `waitUntilFinished` and the first error any lane reported.
final class LaneGroup: @unchecked Sendable {
    // Everything below `lock` is guarded by it. A pthread mutex (not Synchronization.Mutex)
    // because waitUntilFinished needs a condition variable with a CLOCK_MONOTONIC timeout.
    private let lock: UnsafeMutablePointer<pthread_mutex_t>
    private let cond: UnsafeMutablePointer<pthread_cond_t>
    private var threads: [PosixThread] = []
    private var runningLanes = 0
    private var launched = false
    private var firstError: CaptureError?

    private let stopFlag = Atomic<Bool>(false)
    private let deliveredCount = Atomic<Int>(0)

    /// Units (frames, sample frames) the lanes handed to the sink; sources expose it.
    var delivered: Int { deliveredCount.load(ordering: .relaxed) }

    func countDelivered(_ n: Int) { deliveredCount.add(n, ordering: .relaxed) }

    init() {
        lock = .allocate(capacity: 1)
        cond = .allocate(capacity: 1)
        pthread_mutex_init(lock, nil)
        var attr = pthread_condattr_t()
        pthread_condattr_init(&attr)
        pthread_condattr_setclock(&attr, CLOCK_MONOTONIC)
        pthread_cond_init(cond, &attr)
        pthread_condattr_destroy(&attr)
    }

    deinit {
        pthread_cond_destroy(cond)
        pthread_mutex_destroy(lock)
        cond.deallocate()
        lock.deallocate()
    }

    /// True once stop() was called; lanes poll it between buffers and while sleeping.
    var isStopping: Bool { stopFlag.load(ordering: .relaxed) }

    /// True once start() succeeded at least once (a source starts only once).
    var hasLaunched: Bool {
        pthread_mutex_lock(lock); defer { pthread_mutex_unlock(lock) }
        return launched
    }

    /// Starts one lane thread. When `body` returns, the lane counts as ended.
    func spawn(name: String, body: @escaping @Sendable () -> Void) throws(CaptureError) {
        let thread = PosixThread(name: name) { [self] in
            body()
            laneEnded()
        }
        pthread_mutex_lock(lock)
        runningLanes += 1
        launched = true
        threads.append(thread)
        pthread_mutex_unlock(lock)
        do {
            try thread.start()
        } catch {
            laneEnded()
            throw error
        }
    }

    private func laneEnded() {
        pthread_mutex_lock(lock)
        runningLanes -= 1
        pthread_cond_broadcast(cond)
        pthread_mutex_unlock(lock)
    }

    /// Records `error` if it is the first one, and asks the other lanes to stop.
    func fail(_ error: CaptureError) {
        pthread_mutex_lock(lock)
        if firstError == nil { firstError = error }
        pthread_mutex_unlock(lock)
        stopFlag.store(true, ordering: .relaxed)
    }

    var error: CaptureError? {
        pthread_mutex_lock(lock); defer { pthread_mutex_unlock(lock) }
        return firstError
    }

    /// Asks every lane to stop and joins them. Idempotent.
    func stop() {
        stopFlag.store(true, ordering: .relaxed)
        pthread_mutex_lock(lock)
        let toJoin = threads
        threads.removeAll()
        pthread_mutex_unlock(lock)
        for thread in toJoin { thread.join() }
    }

    /// Waits until every lane has ended; `timeoutNanoseconds < 0` waits forever.
    /// Returns false on timeout or when nothing was ever started.
    func waitUntilFinished(timeoutNanoseconds: Int64) -> Bool {
        let deadline = MonotonicClock.now() + max(0, timeoutNanoseconds)
        var ts = MonotonicClock.timespec(deadline)
        pthread_mutex_lock(lock); defer { pthread_mutex_unlock(lock) }
        while launched && runningLanes > 0 {
            if timeoutNanoseconds < 0 {
                pthread_cond_wait(cond, lock)
            } else if pthread_cond_timedwait(cond, lock, &ts) == ETIMEDOUT {
                break
            }
        }
        return launched && runningLanes == 0
    }
}
