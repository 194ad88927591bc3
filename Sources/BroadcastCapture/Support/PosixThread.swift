#if canImport(Glibc)
import Glibc
#endif

/// A joinable pthread running one closure: every lane of every source runs on one of these.
///
/// A plain pthread (not Foundation's Thread, not a Task) so that a lane is a real serial
/// executor with a name visible in `top -H` and nothing scheduled per frame.
final class PosixThread: @unchecked Sendable {
    // `handle` and `running` are written by start() and join(), which the owning LaneGroup
    // serialises under its lock; the thread body never touches them.
    private var handle = pthread_t()
    private var running = false
    private let name: String
    private let body: @Sendable () -> Void

    /// `name` is truncated to the 15 characters Linux keeps.
    init(name: String, body: @escaping @Sendable () -> Void) {
        self.name = String(name.utf8.prefix(15)) ?? "lane"
        self.body = body
    }

    private final class Context {
        let name: String
        let body: @Sendable () -> Void
        init(name: String, body: @escaping @Sendable () -> Void) {
            self.name = name
            self.body = body
        }
    }

    func start() throws(CaptureError) {
        let context = Unmanaged.passRetained(Context(name: name, body: body)).toOpaque()
        let rc = pthread_create(&handle, nil, { raw in
            let context = Unmanaged<Context>.fromOpaque(raw!).takeRetainedValue()
            PosixThread.nameCurrentThread(context.name)
            context.body()
            return nil
        }, context)
        guard rc == 0 else {
            Unmanaged<Context>.fromOpaque(context).release()
            throw CaptureError(.io, "capture: cannot start thread \(name) (errno \(rc))")
        }
        running = true
    }

    /// Names the calling thread through /proc (pthread_setname_np needs _GNU_SOURCE, which
    /// the Glibc module does not expose).
    private static func nameCurrentThread(_ name: String) {
        let fd = open("/proc/thread-self/comm", O_WRONLY)
        guard fd >= 0 else { return }
        _ = name.withCString { write(fd, $0, strlen($0)) }
        close(fd)
    }

    /// True when called from this thread itself (joining it would deadlock).
    var isCurrent: Bool { running && pthread_equal(handle, pthread_self()) != 0 }

    func join() {
        guard running, !isCurrent else { return }
        pthread_join(handle, nil)
        running = false
    }
}
