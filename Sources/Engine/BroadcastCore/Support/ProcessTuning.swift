#if canImport(Glibc)
import Glibc
#endif
import CLinuxProcess

/// Process-wide memory levers every broadcasting process should pull once, before the first
/// session starts: the CLI, the benchmarks and embedders call the same function, so they
/// measure and run the same process.
public enum ProcessTuning {
    /// What `apply()` did, for logs and benchmarks.
    public struct Applied: Sendable, Equatable {
        /// glibc malloc arenas, or nil when glibc's default was left alone.
        public var mallocArenas: Int?
        /// Whether transparent huge pages were turned off for this process.
        public var transparentHugePagesOff: Bool
        /// glibc's fixed mmap threshold in bytes, or nil when its dynamic default was left alone.
        public var mmapThresholdBytes: Int?
    }

    /// Allocations at or above this size get their own mapping, returned to the kernel on free.
    public static let mmapThresholdBytes = 128 << 10

    /// Limits glibc to two malloc arenas (each thread that mallocs otherwise gets its own, up to
    /// 8 × cores, and RSS fragments across lanes) and turns transparent huge pages off (x264
    /// madvises its frames for huge pages; each would then cost a full 2 MB resident).
    ///
    /// It also fixes glibc's mmap threshold at 128 KB. glibc otherwise raises the threshold to the
    /// size of any large block freed (PipeWire's client frees such blocks), after which x264's
    /// frame-sized allocations come from an arena and freed pages stay resident: measured at 1080p
    /// with PipeWire capture, VmHWM 53.8 MiB with the dynamic threshold, 45.8 MiB with it fixed.
    ///
    /// `BROADCAST_MALLOC_ARENA_MAX=N` overrides the arena count (0 leaves glibc's default),
    /// `BROADCAST_MMAP_THRESHOLD=N` the threshold (0 leaves glibc's dynamic one) and
    /// `BROADCAST_ALLOW_THP=1` keeps huge pages: `scripts/bench` uses them to measure the levers.
    @discardableResult
    public static func apply() -> Applied {
        var arenas: Int? = 2
        if let e = getenv("BROADCAST_MALLOC_ARENA_MAX") { arenas = Int(atoi(e)) }
        if let n = arenas, n > 0 { _ = bk_set_malloc_arena_max(Int32(n)) } else { arenas = nil }
        var threshold: Int? = mmapThresholdBytes
        if let e = getenv("BROADCAST_MMAP_THRESHOLD") { threshold = Int(atoi(e)) }
        if let t = threshold, t > 0 { _ = bk_set_mmap_threshold(Int32(t)) } else { threshold = nil }
        var thpOff = false
        if getenv("BROADCAST_ALLOW_THP") == nil { thpOff = bk_disable_transparent_huge_pages() == 0 }
        return Applied(mallocArenas: arenas, transparentHugePagesOff: thpOff, mmapThresholdBytes: threshold)
    }

    /// Drops the clean pages of the binary's and libraries' code and read-only data from the
    /// resident set, once start-up is over (the session is live and its sources started).
    /// Start-up touches megabytes of code that never runs again (argument parsing, the Swift
    /// runtime's first conformance scans, the loader's symbol tables, the kernel's 64 KB
    /// fault-around); steady-state code faults back in from the page cache. Pages written since
    /// mapping (relocated data) are never dropped. It changes RSS and VmHWM, not a cgroup's
    /// page-cache charge.
    ///
    /// Only a process that owns its address space should call this: the `broadcast` CLI does,
    /// the library never does it on an embedder's behalf. `BROADCAST_KEEP_STARTUP_PAGES=1` turns
    /// it off (`scripts/bench` measures the lever with it). Returns the bytes released, or nil.
    @discardableResult
    public static func releaseStartupPages() -> Int? {
        releaseStartupPages(unlessSet: "BROADCAST_KEEP_STARTUP_PAGES")
    }

    /// `releaseStartupPages()` with the switch's name as a parameter (tests pass one that is
    /// always set: setenv is not safe while other threads read the environment).
    @discardableResult
    package static func releaseStartupPages(unlessSet variable: String) -> Int? {
        if getenv(variable) != nil { return nil }
        let released = bk_release_clean_file_pages()
        return released < 0 ? nil : released
    }
}
