#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// Count of SIGINT/SIGTERM/SIGHUP received. Atomic loads/stores are lock-free, so async-signal-safe.
let stopSignals = Atomic<Int>(0)

/// SIGINT, SIGTERM and SIGHUP (the terminal went away, or a supervisor's stop) request a clean
/// stop: recordings are finalised, exit 0 (4 when the stop found a destination down); a second
/// one exits at once with 130. SIGPIPE is ignored so a
/// dropped connection is an error return, never a kill.
enum Signals {
    static func install() {
        signal(SIGPIPE, SIG_IGN)
        var sa = sigaction()
        sa.__sigaction_handler.sa_handler = { _ in
            let previous = stopSignals.add(1, ordering: .relaxed).oldValue
            if previous == 0 {
                // Feedback at once: a stop over a stalled link may take up to its 2 s deadline.
                let msg: StaticString = "\nbroadcast: stopping (a second signal exits at once)\n"
                _ = write(2, msg.utf8Start, msg.utf8CodeUnitCount)
            } else {
                let msg: StaticString = "\nbroadcast: second signal, exiting now\n"
                _ = write(2, msg.utf8Start, msg.utf8CodeUnitCount)
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

    static var stopRequested: Bool { stopSignals.load(ordering: .relaxed) > 0 }
}
