import CLinuxProcess

/// TEST-ONLY crash trigger, deliberately absent from `--help` and the README's flag table:
/// `BROADCAST_TEST_FAULT=segv|abort[:SECONDS]` makes a live stream fault for real once it has
/// sent video and SECONDS (default 2) have passed: a write through a null pointer (SIGSEGV) or
/// abort() (SIGABRT). Tests/Integration/test_crash.py uses it to check what a real crash
/// leaves behind (no key in stderr, no core file); raising a signal from outside would not run
/// the same fault path.
struct TestFault {
    enum Kind { case segv, abort }
    let kind: Kind
    let afterNanoseconds: Int64

    /// Nil when the variable is unset or not understood (an unknown value does nothing).
    init?(_ value: String?) {
        guard let value else { return nil }
        let parts = value.split(separator: ":", maxSplits: 1).map(String.init)
        switch parts.first {
        case "segv": kind = .segv
        case "abort": kind = .abort
        default: return nil
        }
        let seconds = parts.count > 1 ? Double(parts[1]) : 2
        guard let seconds, seconds >= 0, seconds < 3600 else { return nil }
        afterNanoseconds = Int64(seconds * 1e9)
    }

    /// Faults when the stream is live (video sent) and the delay since `startNs` has passed.
    func fireIfDue(nowNs: Int64, startNs: Int64, videoFramesSent: Int) {
        guard videoFramesSent > 0, nowNs - startNs >= afterNanoseconds else { return }
        bk_test_fault(kind == .segv ? 1 : 0)
    }
}
