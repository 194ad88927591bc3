#if canImport(Glibc)
import Glibc
#endif
import CLinuxProcess
import BroadcastCore

/// Resident memory of this process, read from /proc without allocating.
package enum ProcessMemory {
    /// The figures of one read of /proc/self/status, in bytes.
    package struct Sample: Sendable, Equatable {
        /// VmRSS.
        package var residentBytes = 0
        /// VmHWM: the peak resident set.
        package var peakResidentBytes = 0
        /// RssAnon.
        package var anonymousBytes = 0
        /// RssFile.
        package var fileBytes = 0
        /// RssShmem.
        package var sharedBytes = 0

        package init(residentBytes: Int = 0, peakResidentBytes: Int = 0, anonymousBytes: Int = 0, fileBytes: Int = 0,
                     sharedBytes: Int = 0) {
            self.residentBytes = residentBytes
            self.peakResidentBytes = peakResidentBytes
            self.anonymousBytes = anonymousBytes
            self.fileBytes = fileBytes
            self.sharedBytes = sharedBytes
        }
    }

    /// Every figure from one read of /proc/self/status (into a buffer allocated once): what a
    /// stats report takes once a second.
    package static func sample() -> Sample {
        statusBuffer.withLock { buffer in
            var s = Sample()
            let len = readStatus(into: buffer)
            s.residentBytes = field("VmRSS:", buffer, len)
            s.peakResidentBytes = field("VmHWM:", buffer, len)
            s.anonymousBytes = field("RssAnon:", buffer, len)
            s.fileBytes = field("RssFile:", buffer, len)
            s.sharedBytes = field("RssShmem:", buffer, len)
            return s
        }
    }

    /// Current resident set size in bytes (VmRSS).
    package static func residentBytes() -> Int { statusField("VmRSS:") }

    /// Peak resident set size in bytes (VmHWM).
    package static func peakResidentBytes() -> Int { statusField("VmHWM:") }

    /// Anonymous resident bytes (RssAnon: heap, pools, queues, encoder frames). Growth of a
    /// long run shows here; file-backed pages (RssFile: code and read-only data) are bounded by
    /// the mapped files and fault back in as code paths first run after the start-up release.
    static func anonymousBytes() -> Int { statusField("RssAnon:") }

    /// File-backed resident bytes (RssFile).
    package static func fileBytes() -> Int { statusField("RssFile:") }

    /// Shared-memory resident bytes (RssShmem: capture buffers mapped from the producer).
    static func sharedBytes() -> Int { statusField("RssShmem:") }

    /// Bytes glibc malloc has handed out and not had back, in every arena and in mmapped blocks
    /// (mallinfo2 uordblks + hblkhd). Unlike RSS it does not move with page reuse or trimming,
    /// so a small leak shows as exactly its size (the fuzzer's growth verdict).
    package static func heapInUseBytes() -> Int { Int(bk_heap_in_use()) + Int(bk_heap_mmapped()) }

    /// /proc/self/status is about 1.5 KB; read into this one buffer (a temporary allocation of
    /// 4 KB went to the heap each call: five per stats report).
    private static let statusCapacity = 4096
    private static let statusBuffer = Locked(StatusBuffer(UnsafeMutablePointer<UInt8>.allocate(capacity: statusCapacity)))

    /// The buffer's pointer, made Sendable: only used under `statusBuffer`'s lock.
    private struct StatusBuffer: @unchecked Sendable {
        let bytes: UnsafeMutablePointer<UInt8>
        init(_ bytes: UnsafeMutablePointer<UInt8>) { self.bytes = bytes }
    }

    private static func statusField(_ name: StaticString) -> Int {
        statusBuffer.withLock { buffer in field(name, buffer, readStatus(into: buffer)) }
    }

    /// Reads /proc/self/status into `buffer`; returns its length (0 if unavailable).
    private static func readStatus(into buffer: StatusBuffer) -> Int {
        // A StaticString path: converting a String to a C string may allocate.
        let path: StaticString = "/proc/self/status"
        let fd = open(UnsafeRawPointer(path.utf8Start).assumingMemoryBound(to: CChar.self), O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return 0 }
        defer { close(fd) }
        var len = 0
        while len < statusCapacity {
            let n = read(fd, buffer.bytes + len, statusCapacity - len)
            if n <= 0 { break }
            len += n
        }
        return len
    }

    /// The value of a "Name:   1234 kB" line in bytes; 0 if absent.
    private static func field(_ name: StaticString, _ buffer: StatusBuffer, _ len: Int) -> Int {
        let buf = buffer.bytes
        let key = UnsafeBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount)
        var i = 0
        while i + key.count < len {
            if (i == 0 || buf[i - 1] == 10) && memcmp(buf + i, key.baseAddress!, key.count) == 0 {
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
