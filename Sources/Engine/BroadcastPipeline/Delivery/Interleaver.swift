import BroadcastCore

/// Merges the video and audio tag streams into one stream in non-decreasing timestamp order.
///
/// Each track stages its tag bodies in its own fixed ring. The older head is released when both
/// tracks have one; a lone head is released after waiting at most `maxWaitNs` for the other
/// track (so a silent or stalled track never holds the stream back by more than that). A tag
/// that would still go backwards (it arrived after the wait expired) is clamped to the last
/// released timestamp and counted, so the wire never sees time go back.
///
/// When the producer is the clock (`Backpressure.block`, `stagingWaitNs` set) nothing is released
/// by the wall clock: a producer's pause is a pause, and a lone head waits for the other track's
/// next tag however long the producer takes. A track whose staging is full waits (the submitting
/// lane blocks, and so its producer) up to `stagingWaitNs` for the other track; only a track that
/// stays silent that long counts as stopped, and is not waited for again until it delivers.
///
/// AAC priming packets (`isPriming`: stamped before 0) are ordered by their negative time, go out
/// with timestamp 0 and the flag, and take no part in the clamp: they are not the stream's time.
package final class Interleaver: @unchecked Sendable {
    let maxWaitNs: Int64
    /// Block mode: the longest a full staging waits for the other track (nil: the live rules).
    let stagingWaitNs: Int64?

    private struct Entry: TagByteRingEntry {
        var offset: Int
        var length: Int
        var timestampMs: Int64
        var arrivalNs: Int64
        var isKeyframe: Bool
        var captureNs: Int64
        var isPriming: Bool
        var byteCount: Int { length }
    }

    private final class Track {
        var entries: TagByteRing<Entry>
        let type: FLVTagType
        let expected: Bool
        var lastReleasedMs: Int64 = -1
        /// Block mode: this track stayed silent past the staging wait; not waited for until it delivers.
        var stopped = false

        init(type: FLVTagType, bytes capacity: Int, entries n: Int, expected: Bool) {
            self.type = type
            self.expected = expected
            entries = TagByteRing(bytes: capacity, entries: n)   // resident from the start: see RingAllocator
        }
    }

    private let video: Track
    private let audio: Track
    private let lock = ConditionLock()
    private var lastReleasedMs: Int64 = 0
    private let output: (FLVTag) -> Void
    /// Receives each tag the moment it is staged, in its own track's order only (WHIP: each track
    /// is paced on its own, so no destination there waits for the other track).
    private let direct: ((FLVTag) -> Void)?
    private let stats: BroadcastStats

    /// `output` receives tags in order, with the interleaver lock held; it must not call back in.
    package init(hasVideo: Bool, hasAudio: Bool, videoBytes: Int, audioBytes: Int = 128 << 10,
                maxWaitNs: Int64 = 150_000_000, stagingWaitNs: Int64? = nil, stats: BroadcastStats,
                direct: ((FLVTag) -> Void)? = nil, output: @escaping (FLVTag) -> Void) {
        self.direct = direct
        self.stagingWaitNs = stagingWaitNs
        video = Track(type: .video, bytes: videoBytes, entries: 64, expected: hasVideo)
        audio = Track(type: .audio, bytes: audioBytes, entries: 256, expected: hasAudio)
        self.maxWaitNs = maxWaitNs
        self.stats = stats
        self.output = output
    }

    /// Bytes preallocated, for the memory plan.
    package var reservedBytes: Int { video.entries.byteCapacity + audio.entries.byteCapacity }

    /// Stages one tag body, written by `write` into the space given (exactly `bodySize` bytes).
    /// `isPriming`: an audio packet stamped before 0 (`timestampMs` negative), for the sinks that
    /// take priming.
    package func submit(type: FLVTagType, timestampMs: Int64, isKeyframe: Bool, bodySize: Int, nowNs: Int64,
                       captureNs: Int64 = 0, isPriming: Bool = false, write: (UnsafeMutableRawBufferPointer) -> Void) {
        lock.lock()
        defer { lock.unlock() }
        let track = type == .video ? video : audio
        var space = track.entries.append(size: bodySize) {
            Entry(offset: $0, length: bodySize, timestampMs: timestampMs, arrivalNs: nowNs, isKeyframe: isKeyframe,
                  captureNs: captureNs, isPriming: isPriming)
        }
        if space == nil, let wait = stagingWaitNs {
            // Block mode: the other track is behind in media time (its lane is slower, or its
            // producer sends it later). Wait for it: this lane, and so its producer, is held back.
            let other = type == .video ? audio : video
            let deadline = MediaTime.now() + wait
            while space == nil && other.expected && !other.stopped {
                if MediaTime.now() >= deadline {
                    other.stopped = true
                    break
                }
                lock.wait(untilNs: deadline)
                space = track.entries.append(size: bodySize) {
                    Entry(offset: $0, length: bodySize, timestampMs: timestampMs, arrivalNs: nowNs, isKeyframe: isKeyframe,
                          captureNs: captureNs, isPriming: isPriming)
                }
            }
        }
        if space == nil {
            // Staging full: the other track is late beyond reason; release without waiting.
            releaseLocked(nowNs: nowNs, force: true)
            space = track.entries.append(size: bodySize) {
                Entry(offset: $0, length: bodySize, timestampMs: timestampMs, arrivalNs: nowNs, isKeyframe: isKeyframe,
                      captureNs: captureNs, isPriming: isPriming)
            }
        }
        guard let body = space else {
            stats.countDrop(.queueFull)
            return
        }
        track.stopped = false
        write(body)
        if let direct, timestampMs >= 0, !isPriming {
            direct(FLVTag(type: type, timestampMs: UInt32(truncatingIfNeeded: timestampMs),
                          body: UnsafeRawBufferPointer(body), isKeyframe: isKeyframe, captureNs: captureNs))
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
                output(FLVTag(type: pick.type, timestampMs: 0, body: pick.entries.body(e), captureNs: e.captureNs,
                              isPriming: true))
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
            output(FLVTag(type: pick.type, timestampMs: UInt32(truncatingIfNeeded: ts),
                          body: pick.entries.body(e),
                          isKeyframe: e.isKeyframe, captureNs: e.captureNs))
            pick.entries.removeFirst()
            // A lane waiting for room in its staging (block mode) may go on.
            if stagingWaitNs != nil { lock.broadcast() }
        }
    }

    /// A lone head waits for `other`'s next tag: live, for at most `maxWaitNs` of wall time; in
    /// block mode for as long as `other` has not stopped (media time only, no wall clock).
    private func waits(for other: Track, head: Entry, nowNs: Int64) -> Bool {
        guard other.expected else { return false }
        if stagingWaitNs != nil { return !other.stopped }
        return nowNs - head.arrivalNs < maxWaitNs
    }
}
