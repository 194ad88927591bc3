#if canImport(Glibc)
import Glibc
import BroadcastCore
import BroadcastPipeline
#endif

/// One coded frame for an MP4 fragment: where its payload is (FLV header already left out) and
/// when it plays, in FLV milliseconds.
package struct MP4Sample: BitwiseCopyable {
    var isVideo: Bool
    var isKeyframe: Bool
    var timestampMs: Int64
    var compositionOffsetMs: Int32
    var size: Int32
    var data: UnsafeRawPointer
    /// An AAC priming packet (`FLVTag.isPriming`): it sits one frame before the next audio sample,
    /// in media time under the edit list; its `timestampMs` is not used.
    var isPriming: Bool

    package init(isVideo: Bool, isKeyframe: Bool, timestampMs: Int64, compositionOffsetMs: Int32,
                 data: UnsafeRawPointer, size: Int, isPriming: Bool = false) {
        self.isPriming = isPriming
        self.isVideo = isVideo
        self.isKeyframe = isKeyframe
        self.timestampMs = timestampMs
        self.compositionOffsetMs = compositionOffsetMs
        self.size = Int32(size)
        self.data = data
    }
}

/// Writes a fragmented MP4 to a file descriptor: the init segment once, then one `moof`+`mdat`
/// per call. Each fragment's sample payloads go straight from where they already are (a ring or
/// a staging buffer) to `writev`; only the `moof` is built here, in a buffer sized at init for
/// `maxSamples`, so a fragment allocates nothing.
///
/// A file cut anywhere keeps every complete fragment before the cut playable.
package final class MP4FragmentWriter {
    let layout: MP4TrackLayout
    let maxSamples: Int
    private let moofStorage: UnsafeMutableRawBufferPointer
    private let iov: UnsafeMutablePointer<iovec>
    private static let iovCapacity = 256
    private var sequence: UInt32 = 0
    private var durationAt = MP4InitSegment.DurationOffsets(mehd: -1, editDuration: -1)
    /// Bytes written to the file so far.
    package private(set) var bytesWritten = 0
    /// End of the latest sample written, in ms after the origin.
    private(set) var endMs: Int64 = 0
    private var syncedUpTo = 0
    /// Bytes between fdatasync + POSIX_FADV_DONTNEED, so the page cache (charged to the memory
    /// cgroup) does not grow with the file; 0 disables it.
    var dropCacheInterval = 4 << 20
    /// Audio media time at presentation time 0 (the audio edit's media_time): the layout's
    /// priming for a whole recording; for a clip, the pre-roll it holds (`ReplaySaver`). Set
    /// before `writeInit`; `reset()` restores the layout's.
    var audioLeadSamples: Int

    package init(layout: MP4TrackLayout, maxSamples: Int) {
        self.layout = layout
        audioLeadSamples = layout.audio?.primingSamples ?? 0
        self.maxSamples = max(1, maxSamples)
        moofStorage = .allocate(byteCount: Self.moofBytes(maxSamples: self.maxSamples), alignment: 8)
        iov = .allocate(capacity: Self.iovCapacity)
    }

    deinit {
        moofStorage.deallocate()
        iov.deallocate()
    }

    /// Bytes this writer allocates for `maxSamples`, for the memory plan.
    package static func reservedBytes(maxSamples: Int) -> Int {
        moofBytes(maxSamples: maxSamples) + iovCapacity * MemoryLayout<iovec>.stride
    }

    private static func moofBytes(maxSamples: Int) -> Int { 256 + maxSamples * 16 }

    /// Starts a new file: fragment numbers, sizes and durations back to zero.
    func reset() {
        sequence = 0; durationAt = .init(mehd: -1, editDuration: -1); bytesWritten = 0; endMs = 0; syncedUpTo = 0
        audioLeadSamples = layout.audio?.primingSamples ?? 0
    }

    /// `ftyp` + `moov`; `durationMs` goes into `mehd` (0 when unknown: `finish` patches it).
    package func writeInit(fd: Int32, durationMs: Int64) -> Bool {
        let size = 4096 + (layout.video?.avcC.count ?? 0) + (layout.audio?.config.count ?? 0)
        let buf = UnsafeMutableRawBufferPointer.allocate(byteCount: size, alignment: 8)
        defer { buf.deallocate() }
        var w = MP4BoxWriter(buf)
        durationAt = MP4InitSegment.write(layout, durationMs: UInt64(max(0, durationMs)),
                                          audioEditMediaTime: audioLeadSamples, into: &w)
        guard !w.overflowed else { errno = EOVERFLOW; return false }
        iov[0] = iovec(iov_base: buf.baseAddress, iov_len: w.count)
        guard FileWrites.writeFully(fd, iov, count: 1, total: w.count) else { return false }
        bytesWritten += w.count
        return true
    }

    /// Writes `samples` (in decode order, at most `maxSamples`) as one fragment. Times are
    /// relative to `originMs`; `nextVideoMs` (the next fragment's first video time) sets the
    /// last video sample's duration, else one frame interval.
    package func writeFragment(fd: Int32, samples: UnsafeBufferPointer<MP4Sample>, originMs: Int64,
                               nextVideoMs: Int64?) -> Bool {
        guard !samples.isEmpty else { return true }
        guard samples.count <= maxSamples else { errno = EOVERFLOW; return false }
        sequence += 1
        var w = MP4BoxWriter(moofStorage)
        let moof = w.begin("moof")
        let mfhd = w.beginFull("mfhd", version: 0, flags: 0); w.u32(sequence); w.end(mfhd)
        var videoBytes = 0, audioBytes = 0
        var videoOffsetAt = -1, audioOffsetAt = -1
        if let v = layout.video {
            videoOffsetAt = traf(&w, samples: samples, video: true, originMs: originMs,
                                 nextVideoMs: nextVideoMs, fps: v.fps, bytes: &videoBytes)
        }
        if let a = layout.audio {
            audioOffsetAt = traf(&w, samples: samples, video: false, originMs: originMs, nextVideoMs: nil,
                                 fps: a.sampleRate, bytes: &audioBytes)
        }
        w.end(moof)
        let moofSize = w.count
        if videoOffsetAt >= 0 { w.patch32(at: videoOffsetAt, UInt32(moofSize + 8)) }
        if audioOffsetAt >= 0 { w.patch32(at: audioOffsetAt, UInt32(moofSize + 8 + videoBytes)) }
        w.u32(UInt32(8 + videoBytes + audioBytes)); w.fourCC("mdat")
        guard !w.overflowed else { errno = EOVERFLOW; return false }

        // moof + mdat header, then the video payloads, then the audio payloads.
        var n = 0
        var pending = 0
        iov[0] = iovec(iov_base: moofStorage.baseAddress, iov_len: w.count)
        n = 1; pending = w.count
        for pass in 0..<2 {
            for s in samples where s.isVideo == (pass == 0) {
                if n == Self.iovCapacity {
                    guard FileWrites.writeFully(fd, iov, count: n, total: pending) else { return false }
                    n = 0; pending = 0
                }
                iov[n] = iovec(iov_base: UnsafeMutableRawPointer(mutating: s.data), iov_len: Int(s.size))
                n += 1; pending += Int(s.size)
            }
        }
        guard FileWrites.writeFully(fd, iov, count: n, total: pending) else { return false }
        bytesWritten += w.count + videoBytes + audioBytes
        if dropCacheInterval > 0 && bytesWritten - syncedUpTo >= dropCacheInterval {
            // A failed write-back fails the fragment (it was ignored): its bytes may not be on disk.
            guard FileWrites.dropWrittenPages(fd, from: syncedUpTo, to: bytesWritten) else { return false }
            syncedUpTo = bytesWritten
        }
        return true
    }

    /// Writes the final duration into `mehd` and the audio edit (a file already complete without it).
    package func patchDuration(fd: Int32) {
        guard durationAt.mehd >= 0 else { return }
        var be = UInt64(max(0, endMs)).bigEndian
        _ = withUnsafeBytes(of: &be) { pwrite(fd, $0.baseAddress, 8, off_t(durationAt.mehd)) }
        guard durationAt.editDuration >= 0 else { return }
        var edit = UInt32(clamping: max(0, endMs)).bigEndian
        _ = withUnsafeBytes(of: &edit) { pwrite(fd, $0.baseAddress, 4, off_t(durationAt.editDuration)) }
    }

    /// One `traf`; returns where trun's data_offset must be patched (-1 with no samples).
    private func traf(_ w: inout MP4BoxWriter, samples: UnsafeBufferPointer<MP4Sample>, video: Bool, originMs: Int64,
                      nextVideoMs: Int64?, fps rateOrFps: Int, bytes: inout Int) -> Int {
        var count = 0
        var firstMs: Int64 = 0
        // Priming packets ahead of the first timed sample (audio, the first fragment only).
        var primingAhead = 0
        for s in samples where s.isVideo == video {
            if s.isPriming && count == primingAhead {
                primingAhead += 1
            } else if count == primingAhead {
                firstMs = s.timestampMs
            }
            count += 1
            bytes += Int(s.size)
        }
        guard count > 0 else { return -1 }
        let trackID = video ? layout.videoTrackID : layout.audioTrackID
        let traf = w.begin("traf")
        let tfhd = w.beginFull("tfhd", version: 0, flags: 0x02_0000)   // default-base-is-moof
        w.u32(trackID)
        w.end(tfhd)
        let tfdt = w.beginFull("tfdt", version: 1, flags: 0)
        let rel = max(0, firstMs - originMs)
        if video {
            w.u64(UInt64(rel) * UInt64(MP4TrackLayout.videoTimescale / 1000))
        } else {
            // Media time runs the lead (priming, or a clip's pre-roll, which sits before the
            // origin) ahead of presentation time; the edit list takes it off. Priming packets sit
            // a frame each before the first timed one, from media time 0 up.
            let frameSize = Int64(layout.audio?.frameSize ?? 1024)
            let timed = primingAhead < count ? (firstMs - originMs) * Int64(rateOrFps) / 1000 + Int64(audioLeadSamples)
                                             : Int64(audioLeadSamples)
            w.u64(UInt64(max(0, timed - Int64(primingAhead) * frameSize)))
        }
        w.end(tfdt)
        // data offset, duration, size; video adds flags and composition offsets.
        let flags: UInt32 = video ? 0x001 | 0x100 | 0x200 | 0x400 | 0x800 : 0x001 | 0x100 | 0x200
        let trun = w.beginFull("trun", version: 1, flags: flags)
        w.u32(UInt32(count))
        let offsetAt = w.count
        w.u32(0)
        if video {
            let frameMs = Int64(1000 / max(1, rateOrFps))
            var pendingTs: Int64 = -1
            var pendingSample: MP4Sample?
            func emit(_ s: MP4Sample, durationMs: Int64) {
                w.u32(UInt32(max(1, durationMs) * Int64(MP4TrackLayout.videoTimescale / 1000)))
                w.u32(UInt32(s.size))
                w.u32(s.isKeyframe ? 0x0200_0000 : 0x0101_0000)
                w.u32(UInt32(bitPattern: s.compositionOffsetMs &* Int32(MP4TrackLayout.videoTimescale / 1000)))
            }
            for s in samples where s.isVideo {
                if let p = pendingSample { emit(p, durationMs: s.timestampMs - pendingTs) }
                pendingSample = s
                pendingTs = s.timestampMs
            }
            if let p = pendingSample {
                let d = nextVideoMs.map { $0 - pendingTs } ?? frameMs
                emit(p, durationMs: d > 0 ? d : frameMs)
                endMs = max(endMs, pendingTs + (d > 0 ? d : frameMs) - originMs)
            }
        } else {
            // Packets are frameSize apart; a hole in the timestamps (an audio gap upstream)
            // stays a hole: that packet lasts until the next one, so later audio keeps its time.
            let frameSize = layout.audio?.frameSize ?? 1024
            let rate = Int64(max(1, rateOrFps))
            let frameMs = Int64(frameSize) * 1000 / rate
            var pending: MP4Sample?
            var last: Int64 = 0
            func emit(_ s: MP4Sample, nextMs: Int64?) {
                var d = Int64(frameSize)
                if let n = nextMs, n - s.timestampMs > frameMs + 2 { d = (n - s.timestampMs) * rate / 1000 }
                w.u32(UInt32(d))
                w.u32(UInt32(s.size))
            }
            for s in samples where !s.isVideo {
                if let p = pending { emit(p, nextMs: p.isPriming ? nil : s.timestampMs) }
                pending = s
                if !s.isPriming { last = s.timestampMs }
            }
            if let p = pending { emit(p, nextMs: nil) }
            endMs = max(endMs, last + frameMs - originMs)
        }
        w.end(trun)
        w.end(traf)
        return offsetAt
    }
}
