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
    /// "y4m: PATH" or "pcm: stdin": what read errors name.
    private let label: String
    private let ownsDescriptor: Bool
    private let group: LaneGroup?
    private let buffer: UnsafeMutableRawBufferPointer
    private var head = 0
    private var tail = 0
    /// Total bytes consumed so far (for error messages).
    private(set) var offset: Int64 = 0

    /// Opens `path` read-only; "-" is stdin. `what` prefixes error messages ("y4m", "pcm").
    init(path: String, what: String, group: LaneGroup?) throws(CaptureError) {
        label = "\(what): \(path == "-" ? "stdin" : path)"
        if path == "-" {
            fd = 0
            ownsDescriptor = false
        } else {
            // An input that cannot be opened is unavailable, whatever the reason (missing, not
            // readable): a usage error at start (exit 2), never a "permission denied" capture.
            let opened = Glibc.open(path, O_RDONLY | O_CLOEXEC)
            guard opened >= 0 else {
                throw CaptureError(.unavailable, "\(what): cannot open \(path): \(SystemError.describe())")
            }
            var st = stat()
            if fstat(opened, &st) == 0 && st.st_mode & S_IFMT == S_IFDIR {
                Glibc.close(opened)
                throw CaptureError(.unavailable, "\(what): \(path) is a directory")
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
                    throw CaptureError(.io, "\(label): poll failed: \(SystemError.describe())")
                }
            }
            let n = Glibc.read(fd, dst, count)
            if n >= 0 { return n }
            if errno == EINTR || errno == EAGAIN { continue }
            throw CaptureError(.io, "\(label): read failed: \(SystemError.describe())")
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
