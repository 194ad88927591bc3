#if canImport(Glibc)
import Glibc
#endif
import CLinuxProcess

/// Resident memory of this process, read from /proc without allocating.
package enum ProcessMemory {
    /// Current resident set size in bytes (VmRSS).
    package static func residentBytes() -> Int { statusField("VmRSS:") }

    /// Peak resident set size in bytes (VmHWM).
    package static func peakResidentBytes() -> Int { statusField("VmHWM:") }

    /// Anonymous resident bytes (RssAnon: heap, pools, queues, encoder frames). Growth of a
    /// long run shows here; file-backed pages (RssFile: code and read-only data) are bounded by
    /// the mapped files and fault back in as code paths first run after the start-up release.
    package static func anonymousBytes() -> Int { statusField("RssAnon:") }

    /// File-backed resident bytes (RssFile).
    package static func fileBytes() -> Int { statusField("RssFile:") }

    /// Shared-memory resident bytes (RssShmem: capture buffers mapped from the producer).
    package static func sharedBytes() -> Int { statusField("RssShmem:") }

    /// Bytes glibc malloc has handed out and not had back, in every arena and in mmapped blocks
    /// (mallinfo2 uordblks + hblkhd). Unlike RSS it does not move with page reuse or trimming,
    /// so a small leak shows as exactly its size (the fuzzer's growth verdict).
    package static func heapInUseBytes() -> Int { Int(bk_heap_in_use()) + Int(bk_heap_mmapped()) }

    /// Reads a "Name:   1234 kB" line from /proc/self/status into bytes; 0 if unavailable.
    private static func statusField(_ name: StaticString) -> Int {
        let fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return 0 }
        defer { close(fd) }
        return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 4096) { buf in
            var len = 0
            while len < buf.count {
                let n = read(fd, buf.baseAddress! + len, buf.count - len)
                if n <= 0 { break }
                len += n
            }
            let key = UnsafeBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount)
            var i = 0
            while i + key.count < len {
                if (i == 0 || buf[i - 1] == 10) && memcmp(buf.baseAddress! + i, key.baseAddress!, key.count) == 0 {
                    var j = i + key.count
                    var value = 0
                    while j < len && (buf[j] == 32 || buf[j] == 9) { j += 1 }
                    while j < len && buf[j] >= 48 && buf[j] <= 57 { value = value * 10 + Int(buf[j] - 48); j += 1 }
                    return value * 1024
                }
                i += 1
            }
            return 0
        }
    }
}
