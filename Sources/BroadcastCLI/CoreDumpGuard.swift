import CLinuxProcess

/// A core file holds the whole heap, and with it the stream key: the CLI turns core dumps off
/// before it reads the key. RLIMIT_CORE goes to 0 (soft and hard) and the process is made
/// non-dumpable (PR_SET_DUMPABLE 0), which also covers a core_pattern pipe (systemd-coredump,
/// apport) that ignores the limit. The cost: only root can attach a debugger or read the
/// process's /proc/PID/environ, mem and smaps. Embedders decide this for their own process.
public enum CoreDumpGuard {
    /// Turns core dumps off for this process; false if the kernel refused either setting.
    @discardableResult
    public static func apply() -> Bool { bk_disable_core_dumps() == 0 }

    /// Whether this process is still dumpable (PR_GET_DUMPABLE).
    public static var isDumpable: Bool { bk_is_dumpable() == 1 }
}
