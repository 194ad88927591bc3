import BroadcastCore

/// Mixes app and mic audio, each already at 48 kHz stereo and placed on the timeline by its
/// `AudioClock`, into one continuous stream cut into encoder-sized frames.
///
/// Each source has a fixed ring indexed by absolute timeline position, so a source that starts
/// late, pauses or has gaps simply leaves zeros (silence) there. Output advances when every
/// source that is currently delivering has written past it, or when the newest data is more
/// than `maxWait` ahead (a stalled source is then mixed as silence): audio is never held back
/// unboundedly and never skips.
///
/// The track plays even when no source ever delivers (no audio device at all, a lane whose
/// device is missing): once the session timeline (`timeline`) has run `noSourceGraceNs` with
/// no audio from any source, silence is mixed out in step with the wall clock from the
/// timeline's start (a late start of every source is so filled too), the same way it continues through a pause of every source.
package final class AudioMixer: @unchecked Sendable {
    static let sourceCount = 2
    let frameSize: Int
    /// 150 ms of wait for a lagging source before it is treated as silent.
    let maxWaitFrames: Int64 = 7_200
    /// A source that has not delivered for this long (or 1.5 of its buffer duration, if longer)
    /// no longer holds output back.
    let idleAfterNs: Int64 = 60_000_000

    private let capacity: Int   // frames per source ring
    private let rings: UnsafeMutablePointer<Float>
    private let mix: UnsafeMutablePointer<Float>
    private var written = [Int64](repeating: Int64.min, count: AudioMixer.sourceCount)
    private var lastWriteNs = [Int64](repeating: 0, count: AudioMixer.sourceCount)
    /// Duration of each source's last buffer: a source with 0.5 s buffers is not "idle" between them.
    private var lastBufferNs = [Int64](repeating: 0, count: AudioMixer.sourceCount)
    private var outPosition: Int64 = Int64.min
    private let lock = ConditionLock()
    private let emit: (UnsafePointer<Float>, Int64) -> Void
    package private(set) var lateFramesDiscarded: Int64 = 0
    package private(set) var silenceFrames: Int64 = 0
    /// Output skipped forward over discontinuities longer than `maxSilenceFrames`.
    private(set) var skippedFrames: Int64 = 0
    /// Writes that ended a pause of every source.
    private(set) var resumes: Int64 = 0
    /// Extra silence mixed out when every source pauses, and at the end: the audio encoder's delay.
    package var flushPaddingFrames: Int64 = 0
    /// 10 s: longer gaps are skipped rather than filled.
    let maxSilenceFrames: Int64 = 480_000
    /// The session timeline, for silence when no source has delivered at all (nil: none then).
    package var timeline: StreamClock?
    /// How long the timeline runs with no audio before silence is mixed out from its start.
    /// Short: the silence from the start must reach the interleaver before the first video
    /// tags have waited out its 150 ms window, or it would be clamped. A device that starts
    /// later is mixed from where its first buffer lands (the silence stays two frames behind
    /// the wall clock, so a buffer of up to that length is not late).
    let noSourceGraceNs: Int64 = 100_000_000
    /// Live producers only (see `Backpressure.repeatsLastPicture`): silence paced by the wall clock
    /// would trail a producer faster than real time by seconds, and the interleaver would then
    /// release its video in bursts the send queue counts as congestion.
    package var silenceWithoutSource = true
    /// The producer is the clock (`Backpressure.producerIsClock`): nothing here follows the wall
    /// clock. No silence is mixed through a pause (`poll` does nothing), a source that has not
    /// delivered for a while still holds the output back, and a source a whole ring ahead of the
    /// slowest one waits for it (its lane thread, and so its producer, is held back) instead of
    /// pushing the output past the other's samples: the audio is the producer's, sample for
    /// sample, however its calls are spaced in time. Only a source that stays behind for
    /// `blockWaitNs` counts as stopped (it holds nothing back until it writes again).
    package var producerIsClock = false
    /// Block mode: how long a source a ring ahead waits for the slowest (`Backpressure.stageWaitNs`).
    package var blockWaitNs: Int64 = 2_500_000_000
    /// Block mode: a source that stayed behind past `blockWaitNs`, until it writes again.
    private var stopped = [Bool](repeating: false, count: AudioMixer.sourceCount)
    /// True once silence was mixed out because no source had delivered.
    private(set) var noSourceSilence = false

    /// `emit` receives each mixed frame (interleaved stereo, `frameSize` frames) and its
    /// timeline position in samples. It is called with the mixer lock held, from a lane thread.
    /// 32768 frames (0.68 s) per source: the largest accepted buffer (22,050 frames at 44.1 kHz,
    /// 24,000 after resampling) plus the 150 ms wait.
    package init(frameSize: Int, capacityFrames: Int = 32_768, emit: @escaping (UnsafePointer<Float>, Int64) -> Void) {
        self.frameSize = frameSize
        capacity = capacityFrames
        rings = .allocate(capacity: capacityFrames * 2 * AudioMixer.sourceCount)
        rings.initialize(repeating: 0, count: capacityFrames * 2 * AudioMixer.sourceCount)
        mix = .allocate(capacity: frameSize * 2)
        self.emit = emit
    }

    deinit {
        rings.deallocate()
        mix.deallocate()
    }

    /// Bytes preallocated, for the memory plan.
    package var reservedBytes: Int { (capacity * AudioMixer.sourceCount + frameSize) * 2 * 4 }

    /// Writes `samples` (interleaved stereo) of `source` at timeline `position`, then emits what is ready.
    package func write(source: Int, samples: UnsafeBufferPointer<Float>, position: Int64, nowNs: Int64) {
        lock.lock()
        defer { lock.unlock() }
        var frames = samples.count / 2
        var pos = position
        var src = samples.baseAddress!
        if outPosition == Int64.min { outPosition = pos }
        resumeIfAllPaused(first: source, nowNs: nowNs)
        if pos < outPosition {
            let skip = Int(min(Int64(frames), outPosition - pos))
            lateFramesDiscarded += Int64(skip)
            frames -= skip
            pos += Int64(skip)
            src += skip * 2
        }
        guard frames > 0 else { return }
        // A jump past `maxSilenceFrames` (a source hours ahead, a clock reset) moves the output
        // forward instead of encoding all that silence on a lane thread; shorter gaps (a paused
        // capture) are filled with silence so the audio track stays continuous.
        if pos - outPosition > maxSilenceFrames {
            // Land the wait window before this write: another source resuming with it may
            // start a little earlier, and its first samples must not count as late.
            let resumeAt = pos - maxWaitFrames
            for s in 0..<AudioMixer.sourceCount {
                let ring = rings + s * capacity * 2
                ring.update(repeating: 0, count: capacity * 2)
                if written[s] != Int64.min && written[s] < resumeAt { written[s] = resumeAt }
            }
            skippedFrames += resumeAt - outPosition
            outPosition = resumeAt
        }
        stopped[source] = false
        // Never let a source run a whole ring ahead: mix out (with silence) what it would overwrite.
        let end = pos + Int64(frames)
        if producerIsClock && end - outPosition > Int64(capacity) {
            // Block mode: wait for the slower source to write (and so move the output on).
            let deadline = MediaTime.now() + blockWaitNs
            while end - outPosition > Int64(capacity) {
                if MediaTime.now() >= deadline {
                    for s in 0..<AudioMixer.sourceCount where s != source && written[s] != Int64.min
                        && written[s] < end - Int64(capacity) { stopped[s] = true }
                    break
                }
                lock.wait(untilNs: deadline)
            }
        }
        if end - outPosition > Int64(capacity) {
            // Whole frames only, so round up: every slot this write reuses must be mixed out
            // first, or its old position would later be emitted with the new samples in it
            // (and then cleared). A pause longer than the ring always takes this path.
            let fs = Int64(frameSize)
            emitLocked(upTo: outPosition + (end - Int64(capacity) - outPosition + fs - 1) / fs * fs)
            if pos < outPosition {
                let skip = Int(outPosition - pos)
                frames -= skip; pos += Int64(skip); src += skip * 2
            }
        }
        let ring = rings + source * capacity * 2
        var i = 0
        while i < frames {
            let slot = self.slot(pos + Int64(i))
            let n = min(frames - i, capacity - slot)
            (ring + slot * 2).update(from: src + i * 2, count: n * 2)
            i += n
        }
        if written[source] == Int64.min || end > written[source] { written[source] = end }
        lastWriteNs[source] = nowNs
        lastBufferNs[source] = Int64(frames) * 1_000_000_000 / AudioClock.rate
        emitLocked(upTo: readyPosition(nowNs: nowNs))
    }

    /// The first write after a pause of every source: the other sources are resuming too, but
    /// their first buffers (often longer ones) arrive a little later. Treat them as active
    /// from now, so output waits for them as usual (at most their idle timeout) instead of
    /// running ahead on this source alone and discarding their first audio as late: that
    /// lost the start of the audio captured with the first video frame after the pause.
    private func resumeIfAllPaused(first source: Int, nowNs: Int64) {
        var any = false
        for s in 0..<AudioMixer.sourceCount where written[s] != Int64.min {
            if !isIdle(s, nowNs: nowNs) { return }
            any = true
        }
        guard any else { return }
        for s in 0..<AudioMixer.sourceCount where s != source && written[s] != Int64.min {
            lastWriteNs[s] = nowNs
        }
        resumes += 1
    }

    /// A source is idle when it has missed its next delivery by a clear margin.
    @inline(__always) private func isIdle(_ s: Int, nowNs: Int64) -> Bool {
        !producerIsClock && nowNs - lastWriteNs[s] > max(idleAfterNs, lastBufferNs[s] * 3 / 2 + 30_000_000)
    }

    /// Called periodically: when every source has gone quiet (a paused capture), mixes out what
    /// they wrote, padding the last frame with silence, so the audio up to the pause reaches the
    /// interleaver within its wait instead of after the pause (where it would arrive late).
    ///
    /// While the pause lasts, silence keeps being mixed out in step with the wall clock, a safe
    /// margin (two of the longest buffers, at least two encoder frames) behind where the sources
    /// would be now: a resumed source's first buffer (one buffer after its first sample) is
    /// not late, and the silence stays within the interleaver's wait of the video, which the
    /// video lane keeps sending through the pause (repeated pictures), so no audio tag arrives
    /// after the video it should precede. The audio track so continues in real time: at the resume only that margin is
    /// left to fill, instead of the whole pause in one burst (which made the send queue look
    /// seconds long and dropped the first video frames after the pause as congestion).
    package func poll(nowNs: Int64) {
        guard !producerIsClock else { return }
        lock.withLock {
            var newest = Int64.min
            var wallPosition = Int64.max
            var margin = 2 * Int64(frameSize)
            for s in 0..<AudioMixer.sourceCount where written[s] != Int64.min {
                if !isIdle(s, nowNs: nowNs) { return }
                newest = max(newest, written[s])
                // Where this source's capture would be now, had it kept delivering.
                let elapsed = max(0, nowNs - lastWriteNs[s])
                wallPosition = min(wallPosition, written[s] + elapsed / 1_000 * AudioClock.rate / 1_000_000)
                margin = max(margin, 2 * lastBufferNs[s] / 1_000 * AudioClock.rate / 1_000_000)
            }
            if newest == Int64.min {
                if silenceWithoutSource { noSourceLocked(nowNs: nowNs) }
                return
            }
            guard outPosition != Int64.min else { return }
            emitLocked(upTo: max(paddedEnd(newest: newest), wallPosition - margin))
        }
    }

    /// Where mixing out stops so that every sample up to `newest` is sent: the last frame padded
    /// with silence, and the encoder's delay after it (`flushPaddingFrames`): tags are stamped
    /// `delay` earlier, so without it the audio covering the last video frames would only come
    /// after a pause, or never at the end.
    private func paddedEnd(newest: Int64) -> Int64 {
        let fs = Int64(frameSize)
        let end = newest + flushPaddingFrames
        return end > outPosition ? outPosition + (end - outPosition + fs - 1) / fs * fs : outPosition
    }

    /// No source has delivered yet: after `noSourceGraceNs` of timeline, mix silence out from
    /// its start, two frames behind the wall clock (close enough that the interleaver never
    /// waits past its window for this audio, far enough that each poll emits whole frames).
    private func noSourceLocked(nowNs: Int64) {
        // Wall time since the first buffer arrived: the sources' PTS may be on any clock.
        guard let origin = timeline?.originArrivalNs else { return }
        let elapsed = nowNs - origin
        guard elapsed > noSourceGraceNs else { return }
        if outPosition == Int64.min { outPosition = 0 }
        noSourceSilence = true
        emitLocked(upTo: elapsed / 1_000 * AudioClock.rate / 1_000_000 - 2 * Int64(frameSize))
    }

    /// Emits everything up to the newest written sample (end of stream), in both modes, padded as
    /// `paddedEnd` says (a live run once lost the last 64 ms of a 2 s input).
    package func flush() {
        lock.withLock {
            var newest = Int64.min
            for w in written where w > newest { newest = w }
            guard newest != Int64.min, outPosition != Int64.min else { return }
            emitLocked(upTo: paddedEnd(newest: newest))
        }
    }

    /// Ring index of a timeline position (positions before the origin are negative).
    @inline(__always) private func slot(_ position: Int64) -> Int {
        let m = Int(position % Int64(capacity))
        return m < 0 ? m + capacity : m
    }

    /// Output may advance to the slowest active source, or to the newest data minus the wait window.
    private func readyPosition(nowNs: Int64) -> Int64 {
        if producerIsClock {
            // Block mode: the slowest source that has not stopped (no wall clock); while a source
            // has not written yet, `maxWaitFrames` behind the newest, so one starting that close
            // to the others is mixed in whole.
            var slowest = Int64.max, newest = Int64.min, unseen = false
            for s in 0..<AudioMixer.sourceCount {
                guard written[s] != Int64.min else { unseen = true; continue }
                newest = max(newest, written[s])
                if !stopped[s] { slowest = min(slowest, written[s]) }
            }
            guard newest != Int64.min else { return Int64.min }
            let ready = slowest == Int64.max ? newest : slowest
            return unseen ? min(ready, newest - maxWaitFrames) : ready
        }
        var slowestActive = Int64.max
        var newest = Int64.min
        for s in 0..<AudioMixer.sourceCount where written[s] != Int64.min {
            newest = max(newest, written[s])
            if !isIdle(s, nowNs: nowNs) { slowestActive = min(slowestActive, written[s]) }
        }
        guard newest != Int64.min else { return Int64.min }
        let horizon = newest - maxWaitFrames
        return slowestActive == Int64.max ? horizon : max(slowestActive, horizon)
    }

    private func emitLocked(upTo limit: Int64) {
        guard outPosition != Int64.min else { return }
        while outPosition + Int64(frameSize) <= limit {
            var any = false
            mix.update(repeating: 0, count: frameSize * 2)
            for s in 0..<AudioMixer.sourceCount where written[s] != Int64.min {
                if written[s] > outPosition { any = true }
                let ring = rings + s * capacity * 2
                var i = 0
                while i < frameSize {
                    let slot = self.slot(outPosition + Int64(i))
                    let n = min(frameSize - i, capacity - slot)
                    let p = ring + slot * 2
                    for k in 0..<(n * 2) { mix[i * 2 + k] += p[k] }
                    p.update(repeating: 0, count: n * 2)
                    i += n
                }
            }
            if !any { silenceFrames += Int64(frameSize) }
            for k in 0..<(frameSize * 2) { mix[k] = max(-1, min(1, mix[k])) }
            emit(mix, outPosition)
            outPosition += Int64(frameSize)
            // Block mode: a source waiting for room in its ring may go on.
            if producerIsClock { lock.broadcast() }
        }
    }
}
