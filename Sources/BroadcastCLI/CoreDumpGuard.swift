import CLinuxProcess

/// A core file holds the whole heap, and with it the stream key: the CLI turns core dumps off
/// before it reads the key. RLIMIT_CORE goes to 0 (soft and hard) and the process's
/// coredump_filter to 0, so even a core_pattern pipe (systemd-coredump, apport), which the kernel
/// feeds whatever the limit, gets no memory of any mapping. The process stays dumpable: with
/// PR_SET_DUMPABLE 0 its /proc/PID files would turn root's, and xdg-desktop-portal, which opens
/// /proc/PID/root as the desktop user to identify the caller, refuses it. The cost of staying
/// dumpable: a process of the same user may ptrace it or read its memory, as it may any of that
/// user's processes. Embedders decide this for their own process.
package enum CoreDumpGuard {
    /// Turns core dumps off for this process; false if the kernel refused either setting.
    @discardableResult
    package static func apply() -> Bool { bk_disable_core_dumps() == 0 }

    /// Marks the pages that hold `secret`'s bytes MADV_DONTDUMP, for a core written by a writer
    /// that ignores coredump_filter, or after a same-user process raised the filter again. Only a
    /// string with its own heap storage (more than 15 UTF-8 bytes) has pages to mark; false when
    /// there were none or the kernel refused.
    @discardableResult
    package static func excludeFromCore(_ secret: String) -> Bool {
        guard secret.utf8.count > 15 else { return false }
        return secret.utf8.withContiguousStorageIfAvailable { bytes in
            bk_exclude_from_core(bytes.baseAddress, bytes.count) == 0
        } ?? false
    }

    /// The process's coredump_filter bits (0 once `apply()` ran), or nil if unreadable.
    package static var coredumpFilter: Int? {
        let bits = bk_coredump_filter()
        return bits < 0 ? nil : Int(bits)
    }
}
