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
    }

    /// Limits glibc to two malloc arenas (each thread that mallocs otherwise gets its own, up to
    /// 8 × cores, and RSS fragments across lanes) and turns transparent huge pages off (x264
    /// madvises its frames for huge pages; each would then cost a full 2 MB resident).
    ///
    /// `BROADCAST_MALLOC_ARENA_MAX=N` overrides the arena count (0 leaves glibc's default) and
    /// `BROADCAST_ALLOW_THP=1` keeps huge pages: `scripts/bench` uses both to measure the levers.
    @discardableResult
    public static func apply() -> Applied {
        var arenas: Int? = 2
        if let e = getenv("BROADCAST_MALLOC_ARENA_MAX") { arenas = Int(atoi(e)) }
        if let n = arenas, n > 0 { _ = bk_set_malloc_arena_max(Int32(n)) } else { arenas = nil }
        var thpOff = false
        if getenv("BROADCAST_ALLOW_THP") == nil { thpOff = bk_disable_transparent_huge_pages() == 0 }
        return Applied(mallocArenas: arenas, transparentHugePagesOff: thpOff)
    }
}
