import Glibc
import Synchronization
import BroadcastCore
import BroadcastPipeline
import BroadcastFLV

/// A `PacketSink` that writes a standard FLV file with plain `open`/`writev` (no buffering
/// layer): one `writev` per tag, so a tag is either complete on disk or cut back off.
///
/// On a write error (ENOSPC, EIO, ...) the file is truncated back to the end of the last
/// complete tag, closed, and `TransportError.fileError` is thrown once; later writes are
/// ignored so the file stays a valid FLV. Every `dropCacheInterval` bytes the written range
/// is synced and dropped from the page cache, which is charged to the memory cgroup.
///
/// `open`/`write`/`close` come from one sender thread; `bytesWritten` may be read anywhere.
package final class FLVFileSink: PacketSink, ClosingSink, @unchecked Sendable {
    let path: String
    let hasAudio: Bool
    let hasVideo: Bool
    let dropCacheInterval: Int

    package var kind: TagSinkKind { .flv }

    package var displayName: String { path }
    /// Bytes of complete tags (and the file header) on disk.
    var bytesWritten: Int { committed.load(ordering: .relaxed) }
    /// True after a write error closed the file; later writes are ignored.
    var hasFailed: Bool { failed.load(ordering: .relaxed) }

    /// Why the last `close` did not complete the file (a failed sync or close); nil when it did.
    package private(set) var closeFailure: TransportError?
    private var fd: Int32 = -1
    private let committed = Atomic<Int>(0)
    private let failed = Atomic<Bool>(false)
    private var syncedUpTo = 0
    private var presence = RecordingPresence()
    /// 11-byte tag header + 4-byte PreviousTagSize, reused for every tag.
    private let scratch: UnsafeMutableRawBufferPointer

    static let tagHeaderSize = 11
    /// AMF0 "@setDataFrame": 02 00 0D + 13 bytes.
    static let setDataFramePrefix: [UInt8] = [0x02, 0x00, 0x0D] + Array("@setDataFrame".utf8)

    /// - Parameters:
    ///   - path: file to create or truncate.
    ///   - hasAudio/hasVideo: FLV header TypeFlags.
    ///   - dropCacheInterval: bytes between fdatasync + POSIX_FADV_DONTNEED (default 4 MB).
    package init(path: String, hasAudio: Bool = true, hasVideo: Bool = true,
                dropCacheInterval: Int = 4 << 20) {
        self.path = path
        self.hasAudio = hasAudio
        self.hasVideo = hasVideo
        self.dropCacheInterval = max(dropCacheInterval, 64 << 10)
        scratch = .allocate(byteCount: 16, alignment: 8)
    }

    deinit {
        close()
        scratch.deallocate()
    }

    package func open() throws(TransportError) {
        close()
        failed.store(false, ordering: .relaxed)
        committed.store(0, ordering: .relaxed)
        syncedUpTo = 0
        closeFailure = nil
        do {
            fd = try OutputFile.open(path, existing: .replace)
        } catch {
            throw TransportError.fileError("\(error)")
        }
        // FLV header: 'FLV', version 1, TypeFlags, DataOffset 9; then PreviousTagSize0 = 0.
        var header: [UInt8] = [0x46, 0x4C, 0x56, 0x01,
                               (hasAudio ? 0x04 : 0) | (hasVideo ? 0x01 : 0),
                               0, 0, 0, 9, 0, 0, 0, 0]
        let ok = header.withUnsafeMutableBytes { buf -> Bool in
            var iov = iovec(iov_base: buf.baseAddress, iov_len: buf.count)
            return FileWrites.writeFully(fd, &iov, count: 1, total: buf.count)
        }
        if !ok { throw fail() }
        committed.store(header.count, ordering: .relaxed)
    }

    /// Appends one packet as an FLV tag (its body framed in the packet's headroom).
    package func write(_ packet: EncodedPacket) throws(TransportError) {
        guard fd >= 0, !failed.load(ordering: .relaxed) else { return }
        if presence.vanished(fd: fd) { throw vanished() }
        try packet.withFLVTag { (tag) throws(TransportError) in try append(tag) }
    }

    private func append(_ tag: FLVTag) throws(TransportError) {
        var body = tag.body
        if tag.type == .scriptData { body = Self.strippingSetDataFrame(body) }
        let bodySize = body.count
        guard bodySize <= 0xFF_FFFF else {
            throw TransportError.fileError("\(path): tag body of \(bodySize) bytes exceeds FLV's 16 MB limit")
        }
        let ts = tag.timestampMs
        let h = scratch
        h[0] = tag.type.rawValue
        h[1] = UInt8(truncatingIfNeeded: bodySize >> 16)
        h[2] = UInt8(truncatingIfNeeded: bodySize >> 8)
        h[3] = UInt8(truncatingIfNeeded: bodySize)
        h[4] = UInt8(truncatingIfNeeded: ts >> 16)
        h[5] = UInt8(truncatingIfNeeded: ts >> 8)
        h[6] = UInt8(truncatingIfNeeded: ts)
        h[7] = UInt8(truncatingIfNeeded: ts >> 24) // TimestampExtended
        h[8] = 0; h[9] = 0; h[10] = 0              // StreamID
        let previousTagSize = UInt32(Self.tagHeaderSize + bodySize)
        h[11] = UInt8(truncatingIfNeeded: previousTagSize >> 24)
        h[12] = UInt8(truncatingIfNeeded: previousTagSize >> 16)
        h[13] = UInt8(truncatingIfNeeded: previousTagSize >> 8)
        h[14] = UInt8(truncatingIfNeeded: previousTagSize)

        let total = Self.tagHeaderSize + bodySize + 4
        let ok = withUnsafeTemporaryAllocation(of: iovec.self, capacity: 3) { iov -> Bool in
            iov[0] = iovec(iov_base: h.baseAddress, iov_len: Self.tagHeaderSize)
            iov[1] = iovec(iov_base: UnsafeMutableRawPointer(mutating: body.baseAddress), iov_len: bodySize)
            iov[2] = iovec(iov_base: h.baseAddress! + Self.tagHeaderSize, iov_len: 4)
            return FileWrites.writeFully(fd, iov.baseAddress!, count: 3, total: total)
        }
        if !ok { throw fail() }
        let end = committed.load(ordering: .relaxed) + total
        committed.store(end, ordering: .relaxed)
        if end - syncedUpTo >= dropCacheInterval {
            guard dropWrittenPages(upTo: end) else { throw fail(during: "syncing") }
        }
    }

    /// Syncs and closes. A failed sync or close is kept in `closeFailure` (never dropped): the
    /// file's end may not be on disk.
    package func close() {
        guard fd >= 0 else { return }
        guard dropWrittenPages(upTo: committed.load(ordering: .relaxed)) else {
            closeFailure = fail(during: "syncing")
            return
        }
        let result = Glibc.close(fd)
        fd = -1
        if result != 0 {
            closeFailure = .fileError("\(path): closing failed: \(SystemError.describe()); its end may be lost")
        }
    }

    // MARK: - Internals

    /// Body without a leading AMF0 "@setDataFrame" string: files carry onMetaData directly.
    static func strippingSetDataFrame(_ body: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer {
        let prefix = setDataFramePrefix
        guard body.count >= prefix.count else { return body }
        for i in 0..<prefix.count where body[i] != prefix[i] { return body }
        return UnsafeRawBufferPointer(rebasing: body[prefix.count...])
    }

    /// Cuts the file back to the last complete tag, closes it and builds the error.
    private func fail(during what: String = "write") -> TransportError {
        let reason = SystemError.describe()
        failed.store(true, ordering: .relaxed)
        let keep = committed.load(ordering: .relaxed)
        if fd >= 0 {
            _ = ftruncate(fd, off_t(keep))
            _ = Glibc.close(fd)
            fd = -1
        }
        return .fileError("\(path): \(what) failed after \(keep) bytes, file kept valid: \(reason)")
    }

    /// The file has no name left: nothing to keep valid; close it and say so once.
    private func vanished() -> TransportError {
        failed.store(true, ordering: .relaxed)
        _ = Glibc.close(fd)
        fd = -1
        return RecordingPresence.failure(path, bytes: committed.load(ordering: .relaxed))
    }

    /// False when the write-back failed (errno set): what was written may not be on disk.
    private func dropWrittenPages(upTo end: Int) -> Bool {
        guard FileWrites.dropWrittenPages(fd, from: syncedUpTo, to: end) else { return false }
        syncedUpTo = max(syncedUpTo, end)
        return true
    }

}
