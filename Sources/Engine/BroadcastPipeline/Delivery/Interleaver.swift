import BroadcastCore

/// Merges the video and audio packet streams into one stream in non-decreasing timestamp order.
///
/// Each track stages its packets' payloads in its own fixed ring. The older head is released when both
/// tracks have one; a lone head is released after waiting at most `maxWaitNs` for the other
/// track (so a silent or stalled track never holds the stream back by more than that). A packet
/// that would still go backwards (it arrived after the wait expired) is clamped to the last
/// released timestamp and counted, so the wire never sees time go back.
///
/// When the producer is the clock (`Backpressure.block`, `stagingWaitNs` set) nothing is released
/// by the wall clock: a producer's pause is a pause, and a lone head waits for the other track's
/// next packet however long the producer takes. A track whose staging is full waits (the submitting
/// lane blocks, and so its producer) up to `stagingWaitNs` for the other track; only a track that
/// stays silent that long counts as stopped, and is not waited for again until it delivers.
///
/// AAC priming packets (`isPriming`: stamped before 0) are ordered by their negative time, go out
/// with timestamp 0 and the flag, and take no part in the clamp: they are not the stream's time.
///
/// Every packet reaches `output` twice at most, once per `PacketStage`: `.encoded` the moment it
/// is staged (only when `deliversEncoded`: a destination takes it there), `.interleaved` when it
/// is released in order. Each destination takes one of the two (`DestinationCapabilities.stage`).
package final class Interleaver: @unchecked Sendable {
    let maxWaitNs: Int64
    /// Block mode: the longest a full staging waits for the other track (nil: the live rules).
    let stagingWaitNs: Int64?

    private struct Entry: TagByteRingEntry {
        var offset: Int
        var length: Int
        var timestampMs: Int64
        var arrivalNs: Int64
        var captureNs: Int64
        var compositionOffsetMs: Int32
        var codec: PacketCodec
        var isKeyframe: Bool
        var isPriming: Bool
        var byteCount: Int { length }
    }

    private final class Track {
        var entries: TagByteRing<Entry>
        let expected: Bool
        var lastReleasedMs: Int64 = -1
        /// Block mode: this track stayed silent past the staging wait; not waited for until it delivers.
        var stopped = false

        init(bytes capacity: Int, entries n: Int, expected: Bool) {
            self.expected = expected
            entries = TagByteRing(bytes: capacity, entries: n)   // resident from the start: see RingAllocator
        }
    }

    private let video: Track
    private let audio: Track
    private let lock = ConditionLock()
    private var lastReleasedMs: Int64 = 0
    private let output: (EncodedPacket, PacketStage) -> Void
    /// Some destination takes packets at `.encoded`, in its own track's order only (WHIP: each
    /// track is paced on its own, so nothing there waits for the other track).
    private let deliversEncoded: Bool
    private let stats: BroadcastStats

    /// `output` receives each packet at its stage, with the interleaver lock held; it must not
    /// call back in. `.encoded` deliveries happen only when `deliversEncoded` is set.
    package init(hasVideo: Bool, hasAudio: Bool, videoBytes: Int, audioBytes: Int = 128 << 10,
                maxWaitNs: Int64 = 150_000_000, stagingWaitNs: Int64? = nil, stats: BroadcastStats,
                deliversEncoded: Bool = false, output: @escaping (EncodedPacket, PacketStage) -> Void) {
        self.deliversEncoded = deliversEncoded
        self.stagingWaitNs = stagingWaitNs
        video = Track(bytes: videoBytes, entries: 64, expected: hasVideo)
        audio = Track(bytes: audioBytes, entries: 256, expected: hasAudio)
        self.maxWaitNs = maxWaitNs
        self.stats = stats
        self.output = output
    }

    /// Bytes preallocated, for the memory plan.
    package var reservedBytes: Int { video.entries.byteCapacity + audio.entries.byteCapacity }

    /// Stages one encoded packet (copying its payload): a video or audio packet, not a configuration.
    /// `isPriming`: an audio packet stamped before 0 (`timestampMs` negative), for the sinks that
    /// take priming.
    package func submit(_ packet: EncodedPacket, nowNs: Int64) {
        lock.lock()
        defer { lock.unlock() }
        let isVideo = packet.track == .video
        let track = isVideo ? video : audio
        let size = packet.data.count
        var space = track.entries.append(size: size) { Self.entry(packet, at: $0, nowNs: nowNs) }
        if space == nil, let wait = stagingWaitNs {
            // Block mode: the other track is behind in media time (its lane is slower, or its
            // producer sends it later). Wait for it: this lane, and so its producer, is held back.
            let other = isVideo ? audio : video
            let deadline = MediaTime.now() + wait
            while space == nil && other.expected && !other.stopped {
                if MediaTime.now() >= deadline {
                    other.stopped = true
                    break
                }
                lock.wait(untilNs: deadline)
                space = track.entries.append(size: size) { Self.entry(packet, at: $0, nowNs: nowNs) }
            }
        }
        if space == nil {
            // Staging full: the other track is late beyond reason; release without waiting.
            releaseLocked(nowNs: nowNs, force: true)
            space = track.entries.append(size: size) { Self.entry(packet, at: $0, nowNs: nowNs) }
        }
        guard let staged = space else {
            stats.countDrop(.queueFull)
            return
        }
        track.stopped = false
        if size > 0 { staged.baseAddress!.copyMemory(from: packet.data.baseAddress!, byteCount: size) }
        if deliversEncoded, packet.timestampMs >= 0, !packet.isPriming {
            var p = packet
            p.data = UnsafeRawBufferPointer(staged)
            p.headroom = 0
            output(p, .encoded)
        }
        releaseLocked(nowNs: nowNs, force: false)
    }

    /// Releases heads whose wait has expired; called periodically by the session.
    package func poll(nowNs: Int64) {
        // Block mode: nothing is released by the wall clock (and the housekeeper never waits here).
        guard stagingWaitNs == nil else { return }
        lock.withLock { releaseLocked(nowNs: nowNs, force: false) }
    }

    /// Releases everything (end of stream).
    package func drain(nowNs: Int64) {
        lock.withLock { releaseLocked(nowNs: nowNs, force: true) }
    }

    private func releaseLocked(nowNs: Int64, force: Bool) {
        while true {
            let v = video.entries.first, a = audio.entries.first
            let pick: Track
            if let v, let a {
                pick = a.timestampMs <= v.timestampMs ? audio : video
            } else if let v {
                guard force || !waits(for: audio, head: v, nowNs: nowNs) else { return }
                pick = video
            } else if let a {
                guard force || !waits(for: video, head: a, nowNs: nowNs) else { return }
                pick = audio
            } else {
                return
            }
            guard let e = pick.entries.first else { return }
            if e.isPriming {
                output(packet(e, in: pick, timestampMs: 0), .interleaved)
                pick.entries.removeFirst()
                if stagingWaitNs != nil { lock.broadcast() }
                continue
            }
            var ts = e.timestampMs
            // Late past the wait (a starved lane): move it up to the stream's time, and keep
            // its own track strictly increasing so no decoder sees a repeated timestamp.
            let floor = max(lastReleasedMs, pick.lastReleasedMs + 1)
            if ts < floor {
                ts = floor
                stats.update { $0.lateTagsClamped += 1 }
            }
            lastReleasedMs = ts
            pick.lastReleasedMs = ts
            output(packet(e, in: pick, timestampMs: ts), .interleaved)
            pick.entries.removeFirst()
            // A lane waiting for room in its staging (block mode) may go on.
            if stagingWaitNs != nil { lock.broadcast() }
        }
    }

    /// The staging entry for `packet`, its payload at `offset`.
    private static func entry(_ packet: EncodedPacket, at offset: Int, nowNs: Int64) -> Entry {
        Entry(offset: offset, length: packet.data.count, timestampMs: packet.timestampMs, arrivalNs: nowNs,
              captureNs: packet.captureNs, compositionOffsetMs: packet.compositionOffsetMs, codec: packet.codec,
              isKeyframe: packet.isKeyframe, isPriming: packet.isPriming)
    }

    /// A staged entry as the packet it holds, at `timestampMs` (the released time).
    private func packet(_ e: Entry, in track: Track, timestampMs: Int64) -> EncodedPacket {
        EncodedPacket(codec: e.codec, data: track.entries.body(e), timestampMs: timestampMs,
                      compositionOffsetMs: e.compositionOffsetMs, isKeyframe: e.isKeyframe, isPriming: e.isPriming,
                      captureNs: e.captureNs)
    }

    /// A lone head waits for `other`'s next packet: live, for at most `maxWaitNs` of wall time; in
    /// block mode for as long as `other` has not stopped (media time only, no wall clock).
    private func waits(for other: Track, head: Entry, nowNs: Int64) -> Bool {
        guard other.expected else { return false }
        if stagingWaitNs != nil { return !other.stopped }
        return nowNs - head.arrivalNs < maxWaitNs
    }
}
