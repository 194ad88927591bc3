#if canImport(Glibc)
import Glibc
#endif

/// The two steps every recording writer takes on its file descriptor (FLV and MP4 files, replay
/// clips): one copy of each, so a partial write or a failed write-back is handled the same way.
package enum FileWrites {
    /// `writev` until `total` bytes are out, resuming after partial writes and EINTR. False with
    /// errno set when the write failed (a 0-byte write is EIO). Advances `iov` as it goes.
    package static func writeFully(_ fd: Int32, _ iov: UnsafeMutablePointer<iovec>, count: Int, total: Int) -> Bool {
        var remaining = total
        var first = 0
        while remaining > 0 {
            let n = writev(fd, iov + first, Int32(count - first))
            if n < 0 {
                if errno == EINTR { continue }
                return false
            }
            if n == 0 { errno = EIO; return false }
            remaining -= n
            var advance = n
            while first < count && advance >= iov[first].iov_len {
                advance -= iov[first].iov_len
                first += 1
            }
            if first < count && advance > 0 {
                iov[first].iov_base = iov[first].iov_base.map { $0 + advance }
                iov[first].iov_len -= advance
            }
        }
        return true
    }

    /// Writes bytes `from..<end` back to disk and drops them from the page cache, which the
    /// memory cgroup charges to us. Dirty pages cannot be dropped, hence the sync first. False
    /// (errno set) when the write-back failed: what was written may not be on disk.
    package static func dropWrittenPages(_ fd: Int32, from start: Int, to end: Int) -> Bool {
        guard end > start else { return true }
        guard fdatasync(fd) == 0 else { return false }
        _ = posix_fadvise(fd, off_t(start), off_t(end - start), POSIX_FADV_DONTNEED)
        return true
    }
}
