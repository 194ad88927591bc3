#if canImport(Glibc)
import Glibc
#endif
import BroadcastKit
import Synchronization

/// The lane threads of one source, with the shared stop flag, the "all lanes ended"
/// signal behind `waitUntilFinished` and the first error any lane reported.
final class LaneGroup: @unchecked Sendable {
    // Everything below `lock` is guarded by it (a condition variable on CLOCK_MONOTONIC,
    // because waitUntilFinished needs a timeout).
    private let lock = ConditionLock()
    private var threads: [WorkerThread] = []
    private var runningLanes = 0
    private var launched = false
    private var firstError: CaptureError?

    private let stopFlag = Atomic<Bool>(false)
    private let deliveredCount = Atomic<Int>(0)

    /// Units (frames, sample frames) the lanes handed to the sink; sources expose it.
    var delivered: Int { deliveredCount.load(ordering: .relaxed) }

    func countDelivered(_ n: Int) { deliveredCount.add(n, ordering: .relaxed) }

    init() {}

    /// True once stop() was called; lanes poll it between buffers and while sleeping.
    var isStopping: Bool { stopFlag.load(ordering: .relaxed) }

    /// True once start() succeeded at least once (a source starts only once).
    var hasLaunched: Bool { lock.withLock { launched } }

    /// Starts one lane thread. When `body` returns, the lane counts as ended.
    func spawn(name: String, body: @escaping @Sendable () -> Void) throws(CaptureError) {
        let thread = WorkerThread(name: name)
        lock.withLock {
            runningLanes += 1
            launched = true
            threads.append(thread)
        }
        do {
            try thread.start { [self] in
                body()
                laneEnded()
            }
        } catch {
            laneEnded()
            throw CaptureError(.io, "capture: \(error)")
        }
    }

    private func laneEnded() {
        lock.withLock {
            runningLanes -= 1
            lock.broadcast()
        }
    }

    /// Records `error` if it is the first one, and asks the other lanes to stop.
    func fail(_ error: CaptureError) {
        lock.withLock { if firstError == nil { firstError = error } }
        stopFlag.store(true, ordering: .relaxed)
    }

    var error: CaptureError? { lock.withLock { firstError } }

    /// Asks every lane to stop and joins them. Idempotent.
    func stop() {
        stopFlag.store(true, ordering: .relaxed)
        let toJoin = lock.withLock {
            let t = threads
            threads.removeAll()
            return t
        }
        for thread in toJoin { thread.join() }
    }

    /// Waits until every lane has ended; `timeoutNanoseconds < 0` waits forever.
    /// Returns false on timeout or when nothing was ever started.
    func waitUntilFinished(timeoutNanoseconds: Int64) -> Bool {
        let deadline = MediaTime.now() + max(0, timeoutNanoseconds)
        return lock.withLock {
            while launched && runningLanes > 0 {
                if timeoutNanoseconds < 0 {
                    lock.wait()
                } else {
                    if MediaTime.now() >= deadline { break }
                    lock.wait(untilNs: deadline)
                }
            }
            return launched && runningLanes == 0
        }
    }
}
