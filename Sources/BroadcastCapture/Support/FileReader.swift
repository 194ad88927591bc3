#if canImport(Glibc)
import BroadcastKit
import Glibc
#endif

/// Buffered reads from a file descriptor (a path, or stdin for "-"), for the Y4M and PCM
/// sources. Small reads (headers, FRAME lines) go through a 64 KB buffer; bulk payloads go
/// straight into the caller's preallocated memory.
///
/// When given a `LaneGroup`, reads wait in poll() with a short timeout so that stop() is
/// honoured even while a pipe is idle; a stopped read reports end of input.
final class FileReader {
    let fd: Int32
    private let ownsDescriptor: Bool
    private let group: LaneGroup?
    private let buffer: UnsafeMutableRawBufferPointer
    private var head = 0
    private var tail = 0
    /// Total bytes consumed so far (for error messages).
    private(set) var offset: Int64 = 0

    /// Opens `path` read-only; "-" is stdin. `what` prefixes error messages ("y4m", "pcm").
    init(path: String, what: String, group: LaneGroup?) throws(CaptureError) {
        if path == "-" {
            fd = 0
            ownsDescriptor = false
        } else {
            let opened = Glibc.open(path, O_RDONLY | O_CLOEXEC)
            guard opened >= 0 else {
                let code = errno
                let kind: CaptureError.Kind = code == EACCES || code == EPERM ? .denied
                    : (code == ENOENT ? .unavailable : .io)
                throw CaptureError(kind, "\(what): cannot open \(path): \(SystemError.describe(code))")
            }
            fd = opened
            ownsDescriptor = true
        }
        self.group = group
        buffer = .allocate(byteCount: 64 * 1024, alignment: 16)
    }

    deinit {
        if ownsDescriptor { close(fd) }
        buffer.deallocate()
    }

    /// One read(2) into `dst`, waiting for data in poll() slices. 0 = end of input (or stop).
    private func readSome(_ dst: UnsafeMutableRawPointer, _ count: Int) throws(CaptureError) -> Int {
        while true {
            if let group {
                if group.isStopping { return 0 }
                var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                let ready = poll(&pfd, 1, 100)
                if ready == 0 { continue }
                if ready < 0 {
                    if errno == EINTR { continue }
                    throw CaptureError(.io, "read: poll failed: \(SystemError.describe())")
                }
            }
            let n = Glibc.read(fd, dst, count)
            if n >= 0 { return n }
            if errno == EINTR || errno == EAGAIN { continue }
            throw CaptureError(.io, "read failed: \(SystemError.describe())")
        }
    }

    /// The next byte, or nil at end of input.
    func readByte() throws(CaptureError) -> UInt8? {
        if head == tail {
            head = 0
            tail = try readSome(buffer.baseAddress!, buffer.count)
            if tail == 0 { return nil }
        }
        let byte = buffer[head]
        head += 1
        offset += 1
        return byte
    }

    /// Reads up to `count` bytes into `dst`; fewer only at end of input.
    func read(into dst: UnsafeMutableRawPointer, count: Int) throws(CaptureError) -> Int {
        var done = 0
        let buffered = min(tail - head, count)
        if buffered > 0 {
            dst.copyMemory(from: buffer.baseAddress! + head, byteCount: buffered)
            head += buffered
            done = buffered
        }
        while done < count {
            let n = try readSome(dst + done, count - done)
            if n == 0 { break }
            done += n
        }
        offset += Int64(done)
        return done
    }
}
