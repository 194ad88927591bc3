#if canImport(Glibc)
import Glibc
#endif
import Synchronization
import BroadcastCore
import BroadcastPipeline

/// A `PacketSink` that records fragmented MP4 (`--record NAME.mp4`): `ftyp`+`moov` once the codec
/// headers arrived, then one `moof`+`mdat` per GOP. A process killed mid-run leaves every
/// complete fragment playable; `close` writes the last GOP and the duration.
///
/// A GOP is staged in a buffer allocated at init (sized from the VBV maximum rate over one GOP
/// plus a second, plus one VBV buffer, plus audio); a GOP that outgrows it is cut into more than
/// one fragment, which players accept. On a write error the file is cut back to its last
/// complete fragment and `TransportError.fileError` is thrown once, as `FLVFileSink` does.
package final class MP4FileSink: PacketSink, ClosingSink, @unchecked Sendable {
    let path: String
    package var kind: TagSinkKind { .mp4 }
    package var displayName: String { path }
    /// AAC priming packets open the audio track, under the edit list (`MP4TrackLayout`): the
    /// recording's first samples decode whole.
    package var capabilities: DestinationCapabilities {
        DestinationCapabilities(takesPriming: (layout.audio?.primingSamples ?? 0) > 0)
    }
    /// The fragment being built (a GOP's staging buffer and its sample table), allocated at init.
    package var memoryPlanLines: [MemoryPlan.Line] {
        [MemoryPlan.Line(key: "mp4_fragment", label: "MP4 recorder (fragment staging)", bytes: plannedBytes)]
    }
    private let plannedBytes: Int
    private var layout: MP4TrackLayout
    private let expectsVideo: Bool
    private let expectsAudio: Bool
    private let staging: UnsafeMutableRawBufferPointer
    private var stagedBytes = 0
    private let samples: UnsafeMutablePointer<MP4Sample>
    private let sampleCapacity: Int
    private var sampleCount = 0
    private var writer: MP4FragmentWriter?
    private var fd: Int32 = -1
    private var failed = false
    private var presence = RecordingPresence()
    package private(set) var closeFailure: TransportError?
    private var lastAudioFlushMs: Int64 = 0
    private let committed = Atomic<Int>(0)

    /// Bytes of complete fragments (and the init segment) on disk.
    var bytesWritten: Int { committed.load(ordering: .relaxed) }

    /// True for a path that `--record` writes as MP4 (by its extension).
    package static func isMP4(_ path: String) -> Bool { path.lowercased().hasSuffix(".mp4") }

    /// What the sink allocates for `video`/`audio`, for the memory plan.
    package static func plannedBytes(video: VideoEncoderSettings?, audio: AudioEncoderSettings?) -> Int {
        let s = sizes(video: video, audio: audio)
        return s.bytes + s.samples * MemoryLayout<MP4Sample>.stride + MP4FragmentWriter.reservedBytes(maxSamples: s.samples)
    }

    private static func sizes(video: VideoEncoderSettings?, audio: AudioEncoderSettings?) -> (bytes: Int, samples: Int) {
        let seconds = (video.map { max(1, $0.keyframeIntervalSeconds) } ?? 1) + 1
        var bytes = 64 << 10, perSecond = 0
        if let v = video { bytes += v.maxBitrateKbps * 125 * seconds + v.vbvBufferKbits * 125; perSecond += v.fps }
        if let a = audio { bytes += a.bitrateKbps * 125 * seconds * 5 / 4; perSecond += a.sampleRate / 960 + 1 }
        return (bytes, perSecond * seconds + 16)
    }

    /// `audioDelaySamples` is the audio encoder's delay (`AudioEncoder.delaySamples`, 48 kHz
    /// samples): AAC priming goes into the file's edit list.
    package init(path: String, video: VideoEncoderSettings?, audio: AudioEncoderSettings?, audioDelaySamples: Int) {
        self.path = path
        expectsVideo = video != nil
        expectsAudio = audio != nil
        layout = MP4TrackLayout(
            video: video.map { .init(width: $0.width, height: $0.height, fps: $0.fps, avcC: []) },
            audio: audio.map { .init(codec: $0.codec, sampleRate: $0.sampleRate, channels: $0.channels,
                                     bitrateKbps: $0.bitrateKbps, frameSize: $0.codec == .opus ? 960 : 1024, config: [],
                                     primingSamples: MP4TrackLayout.Audio.priming(
                                         codec: $0.codec, encoderDelaySamples: audioDelaySamples, sampleRate: $0.sampleRate)) })
        let s = Self.sizes(video: video, audio: audio)
        plannedBytes = Self.plannedBytes(video: video, audio: audio)
        staging = .allocate(byteCount: s.bytes, alignment: 16)
        sampleCapacity = s.samples
        samples = .allocate(capacity: s.samples)
    }

    deinit {
        close()
        staging.deallocate()
        samples.deallocate()
    }

    package func open() throws(TransportError) {
        close()
        failed = false
        stagedBytes = 0
        sampleCount = 0
        primingStaged = 0
        writer = nil
        isFirstFragmentPending = true
        committed.store(0, ordering: .relaxed)
        closeFailure = nil
        do {
            fd = try OutputFile.open(path, existing: .replace)
        } catch {
            throw TransportError.fileError("\(error)")
        }
    }

    /// Takes one packet: a codec configuration into the track layout, a frame into the fragment.
    package func write(_ packet: EncodedPacket) throws(TransportError) {
        guard fd >= 0, !failed else { return }
        if presence.vanished(fd: fd) {
            // The file has no name left: nothing to keep valid; close it and say so once.
            failed = true
            _ = Glibc.close(fd)
            fd = -1
            throw RecordingPresence.failure(path, bytes: committed.load(ordering: .relaxed))
        }
        let body = packet.data
        guard !body.isEmpty else { return }
        switch packet.codec {
        case .metadata: return
        case .h264:
            if packet.isConfig { layout.video?.avcC = Array(body); return }
        case .aac, .opus:
            guard let audio = layout.audio, PacketCodec(audio.codec) == packet.codec else { return }
            if packet.isConfig { layout.audio?.config = Array(body); return }
        }
        if writer == nil {
            // The init segment needs every codec configuration; frames before them cannot play.
            guard !expectsVideo || layout.video?.avcC.isEmpty == false,
                  !expectsAudio || layout.audio?.config.isEmpty == false else { return }
            let w = MP4FragmentWriter(layout: layout, maxSamples: sampleCapacity)
            guard w.writeInit(fd: fd, durationMs: 0) else { throw fail() }
            writer = w
            committed.store(w.bytesWritten, ordering: .relaxed)
        }
        let isVideo = packet.track == .video
        let ts = packet.timestampMs
        // Priming comes before anything else, and only then: it opens the first fragment.
        let isPriming = packet.isPriming && !isVideo
        if isPriming && (!isFirstFragmentPending || !capabilities.takesPriming || sampleCount != primingStaged) { return }
        // The file starts on a keyframe, with the audio from that instant (and the priming before it).
        if !isPriming {
            if isFirstFragmentPending && expectsVideo && !(isVideo && packet.isKeyframe) { return }
            isFirstFragmentPending = false
        }
        let size = body.count
        // A new GOP (or a second of audio alone) closes the fragment; so does a full stage. The
        // first keyframe does not close the priming ahead of it.
        let newGOP = (expectsVideo ? isVideo && packet.isKeyframe : ts - lastAudioFlushMs >= 1000) && sampleCount > primingStaged
        if sampleCount > 0 && (newGOP || sampleCount == sampleCapacity || stagedBytes + size > staging.count) {
            try flush(nextVideoMs: isVideo ? ts : nil)
            if !expectsVideo { lastAudioFlushMs = ts }
        }
        guard size <= staging.count else { return }
        (staging.baseAddress! + stagedBytes).copyMemory(from: body.baseAddress!, byteCount: size)
        samples[sampleCount] = MP4Sample(isVideo: isVideo, isKeyframe: isVideo && packet.isKeyframe, timestampMs: ts,
                                         compositionOffsetMs: isVideo ? packet.compositionOffsetMs : 0,
                                         data: UnsafeRawPointer(staging.baseAddress! + stagedBytes), size: size,
                                         isPriming: isPriming)
        sampleCount += 1
        stagedBytes += size
        if isPriming { primingStaged += 1 }
    }

    private var isFirstFragmentPending = true
    /// Priming packets staged ahead of the first fragment's timed samples.
    private var primingStaged = 0

    private func flush(nextVideoMs: Int64?) throws(TransportError) {
        guard let w = writer, sampleCount > 0 else { return }
        let ok = w.writeFragment(fd: fd, samples: UnsafeBufferPointer(start: samples, count: sampleCount),
                                 originMs: 0, nextVideoMs: nextVideoMs)
        sampleCount = 0
        primingStaged = 0
        stagedBytes = 0
        guard ok else { throw fail() }
        committed.store(w.bytesWritten, ordering: .relaxed)
    }

    /// Writes the last GOP and the duration, syncs and closes. A failure on the way cuts the
    /// file back to its last complete fragment and is kept in `closeFailure` (never dropped).
    package func close() {
        guard fd >= 0 else { return }
        do {
            try flush(nextVideoMs: nil)
            writer?.patchDuration(fd: fd)
            // A delayed-allocation filesystem reports a full disk only here.
            guard fdatasync(fd) == 0 else { throw fail(during: "syncing") }
            let result = Glibc.close(fd)
            fd = -1
            if result != 0 {
                closeFailure = .fileError("\(path): closing failed: \(SystemError.describe()); its end may be lost")
            }
        } catch {
            closeFailure = (error as? TransportError) ?? .fileError("\(path): \(error)")
        }
    }

    /// Cuts the file back to its last complete fragment, closes it and builds the error.
    private func fail(during what: String = "write") -> TransportError {
        let reason = SystemError.describe()
        failed = true
        let keep = committed.load(ordering: .relaxed)
        if fd >= 0 {
            _ = ftruncate(fd, off_t(keep))
            _ = Glibc.close(fd)
            fd = -1
        }
        return .fileError("\(path): \(what) failed after \(keep) bytes, file kept valid: \(reason)")
    }
}
