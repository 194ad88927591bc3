#if canImport(Glibc)
import Glibc
#endif
import BroadcastCore
import BroadcastPipeline

/// Heap allocation counts from tools/allocshim, which `scripts/test` preloads into `swift test`.
/// The per-thread count is the one to assert on: other suites run in parallel in the same
/// process and allocate, so process-wide heap figures move under any test that reads them.
/// Tests that need it are `.enabled(if: AllocationCounter.isLoaded, "needs tools/allocshim preloaded (scripts/test does it)")` (the comment is what the sanitizer allow-list matches): run bare, they show as
/// skipped, and scripts/test fails on a skip that is not on Tests/skip-allowlist.txt.
package enum AllocationCounter {
    private typealias Counter = @convention(c) () -> UInt64
    private static let threadCounter: Counter? = lookup("bk_alloc_count_thread")

    private static func lookup(_ name: String) -> Counter? {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), name) else { return nil }
        return unsafeBitCast(symbol, to: Counter.self)
    }

    /// True when the shim is preloaded.
    package static var isLoaded: Bool { threadCounter != nil }

    /// Allocation calls made so far by the calling thread.
    package static func thisThread() -> UInt64 { threadCounter?() ?? 0 }
}
