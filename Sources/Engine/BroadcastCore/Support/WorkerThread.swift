#if canImport(Glibc)
import Glibc
#endif
import CLinuxProcess

/// A named pthread running one body, joined on demand.
///
/// Lanes and senders are long-lived threads rather than a Task or a dispatch block per frame,
/// so the per-frame path neither allocates nor hops executors.
package final class WorkerThread: @unchecked Sendable {
    private var thread: pthread_t = 0
    private var started = false
    private let name: String

    private final class Box {
        let body: () -> Void
        let name: String
        init(_ name: String, _ body: @escaping () -> Void) { self.name = name; self.body = body }
    }

    /// pthread_create refused a thread (EAGAIN: out of threads or a pids limit; ENOMEM).
    /// A typed throw, so no caller can start a thread and carry on as if it ran.
    package struct StartFailure: Error, Sendable, CustomStringConvertible {
        let name: String
        let code: Int32
        package var description: String { "cannot start thread \(name): \(SystemError.describe(code))" }
    }

    package init(name: String) { self.name = name }

    /// Starts the thread; `body` runs once and the thread ends when it returns.
    /// Throws when pthread_create fails (the body then never runs).
    package func start(_ body: @escaping @Sendable () -> Void) throws(StartFailure) {
        precondition(!started, "WorkerThread started twice")
        let box = Unmanaged.passRetained(Box(name, body)).toOpaque()
        let rc = pthread_create(&thread, nil, { arg in
            let box = Unmanaged<Box>.fromOpaque(arg!).takeRetainedValue()
            bk_set_thread_name(box.name)
            box.body()
            return nil
        }, box)
        if rc != 0 {
            Unmanaged<Box>.fromOpaque(box).release()
            throw StartFailure(name: name, code: rc)
        }
        started = true
    }

    /// True when called from this thread.
    var isCurrent: Bool { started && pthread_equal(thread, pthread_self()) != 0 }

    /// Waits for the body to return. Safe to call more than once, and a no-op from the thread itself.
    package func join() {
        guard started, !isCurrent else { return }
        started = false
        pthread_join(thread, nil)
    }
}
