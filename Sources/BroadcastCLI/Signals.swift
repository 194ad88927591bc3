#if canImport(Glibc)
import Glibc
#endif
import BroadcastKit
import Synchronization

/// Count of SIGINT/SIGTERM/SIGHUP received. Atomic loads/stores are lock-free, so async-signal-safe.
let stopSignals = Atomic<Int>(0)
/// Whether a stop message starts on a fresh line: only when a status line may be on screen
/// (stderr a terminal). Set before the handler is installed.
private let stopMessageNewline = Atomic<Bool>(false)

/// SIGINT, SIGTERM and SIGHUP (the terminal went away, or a supervisor's stop) request a clean
/// stop: recordings are finalised, exit 0 (4 when the stop found a destination down); a second
/// one exits at once with 130. The first also sets the library's process stop
/// (`StopFlag.process`), which wakes every wait that can be given up (a connect, a handshake,
/// an HTTP request, a reconnect's back-off) at once. SIGPIPE is ignored so a dropped connection
/// is an error return, never a kill.
enum Signals {
    static func install(statusLine: Bool = isatty(2) != 0) {
        signal(SIGPIPE, SIG_IGN)
        stopMessageNewline.store(statusLine, ordering: .relaxed)
        // Made now: the handler must not be the first to touch it.
        _ = StopFlag.process.wakeFD
        var sa = sigaction()
        sa.__sigaction_handler.sa_handler = { _ in
            let previous = stopSignals.add(1, ordering: .relaxed).oldValue
            if previous == 0 {
                StopFlag.process.set()
                // Feedback at once: a stop over a stalled link may take up to its 2 s deadline.
                let newline = stopMessageNewline.load(ordering: .relaxed)
                let msg: StaticString = "\nbroadcast: stopping (a second signal exits at once)\n"
                _ = write(2, msg.utf8Start + (newline ? 0 : 1), msg.utf8CodeUnitCount - (newline ? 0 : 1))
            } else {
                let newline = stopMessageNewline.load(ordering: .relaxed)
                let msg: StaticString = "\nbroadcast: second signal, exiting now\n"
                _ = write(2, msg.utf8Start + (newline ? 0 : 1), msg.utf8CodeUnitCount - (newline ? 0 : 1))
                _exit(130)
            }
        }
        sigemptyset(&sa.sa_mask)
        sa.sa_flags = 0
        sigaction(SIGINT, &sa, nil)
        sigaction(SIGTERM, &sa, nil)
        sigaction(SIGHUP, &sa, nil)
        ReplaySignal.install()
    }

    /// A stop from inside the process (the control socket's `stop`): as a first signal, silently.
    static func requestStop() {
        _ = stopSignals.add(1, ordering: .relaxed)
        StopFlag.process.set()
    }

    static var stopRequested: Bool { stopSignals.load(ordering: .relaxed) > 0 }
}
