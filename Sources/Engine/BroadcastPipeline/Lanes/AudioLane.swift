import BroadcastCore

/// One audio lane (app or mic): copies each buffer into a fixed float ring on the caller's
/// thread, then on its own thread resamples to 48 kHz, places it on the timeline with its
/// `AudioClock` and writes it into the `AudioMixer`.
///
/// The ring holds about one second; when it is full the buffer is dropped and counted as
/// `audio_lane_full` (the lane's back-pressure) instead of growing.
package final class AudioLane: @unchecked Sendable {
    private struct Entry {
        var offset: Int     // in floats
        var frames: Int
        var rate: Int
        var timelineNs: Int64
    }

    /// `.appAudio` or `.micAudio`.
    package let lane: SampleBufferType
    /// The lane's input index in the mixer.
    private let mixerInput: Int
    private let mixer: AudioMixer
    private let stats: BroadcastStats
    private let storage: UnsafeMutablePointer<Float>
    private var ring: RingAllocator     // units: floats
    private var entries = FixedRing<Entry>(capacity: 128)
    private var stopping = false
    private var lastPts: Int64 = Int64.min
    private let cond = ConditionLock()
    private let thread: WorkerThread
    private var clock = AudioClock()
    private var resampler: Resampler?

    /// Frames of 44.1 kHz input buffered for resampling are held back by soxr; timestamps
    /// are shifted by its measured delay so alignment is unaffected.
    package init(lane: SampleBufferType, mixer: AudioMixer, stats: BroadcastStats, capacityFrames: Int = 2 * AudioBuffer.maxFrames) {
        precondition(lane != .video, "an audio lane carries app or mic audio")
        self.lane = lane
        mixerInput = lane == .appAudio ? 0 : 1
        self.mixer = mixer
        self.stats = stats
        storage = .allocate(capacity: capacityFrames * 2)
        storage.initialize(repeating: 0, count: capacityFrames * 2)   // resident from the start: see RingAllocator
        ring = RingAllocator(capacity: capacityFrames * 2)
        thread = WorkerThread(name: lane == .appAudio ? "bk-app-audio" : "bk-mic-audio")
    }

    deinit { storage.deallocate() }

    package var reservedBytes: Int { ring.capacity * 4 + (resampler == nil ? 0 : Resampler.reservedBytes) }

    /// Creates the 44.1 kHz resampler's storage up front; libsoxr itself is loaded on the lane's
    /// first 44.1 kHz buffer (see `Resampler`), so 48 kHz-only sessions never map it.
    package func prepareResampler() throws(BroadcastError) {
        if resampler == nil { resampler = try Resampler(inputRate: 44_100) }
    }

    package func start() throws(WorkerThread.StartFailure) {
        try thread.start { [self] in run() }
    }

    /// Caller thread: validate and copy as interleaved stereo Float32. A NaN or infinite float
    /// sample becomes 0 (silence) and is counted in `audioNonFiniteSamples`. Otherwise the mixer's
    /// clip turns NaN into a full-scale +1 sample (and infinities into ±1), and the 44.1 kHz
    /// resampler's filter spreads one NaN over its whole span: a burst of full-scale clicks.
    /// With `waitUntilNs` (block back-pressure) a full ring is waited for until that
    /// CLOCK_MONOTONIC deadline before the buffer is dropped.
    package func process(_ buf: AudioBuffer, waitUntilNs: Int64? = nil, timelineNs: (Int64) -> Int64) -> ProcessResult {
        if buf.validate() != nil {
            stats.countDrop(.malformed)
            return .dropped(.malformed)
        }
        cond.lock()
        // finish() has begun: the lane thread may already be gone, so nothing would take this buffer.
        if stopping {
            cond.unlock()
            return .notRunning
        }
        // Capture times jitter; only an exact repeat or a jump back past 50 ms is a real rewind.
        if buf.pts == lastPts || (lastPts > Int64.min + 50_000_000 && buf.pts < lastPts - 50_000_000) {
            cond.unlock()
            stats.countDrop(.backwardsTimestamp)
            return .dropped(.backwardsTimestamp)
        }
        if buf.sampleRate != 48_000 && resampler == nil {
            cond.unlock()
            stats.countDrop(.malformed)
            return .dropped(.malformed)
        }
        var room: Int? = entries.isFull ? nil : ring.allocate(buf.frameCount * 2)
        while room == nil, let deadline = waitUntilNs, !stopping, MediaTime.now() < deadline {
            cond.wait(untilNs: deadline)
            room = entries.isFull ? nil : ring.allocate(buf.frameCount * 2)
        }
        // finish() began while this call waited: the ring is never read again.
        if stopping {
            cond.unlock()
            return .notRunning
        }
        guard let offset = room else {
            cond.unlock()
            stats.countDrop(.audioLaneFull)
            return .dropped(.audioLaneFull)
        }
        lastPts = buf.pts
        let dst = storage + offset
        let n = buf.frameCount
        var nonFinite = 0
        switch (buf.format, buf.channels) {
        case (.f32, 2):
            let s = buf.data.baseAddress!.assumingMemoryBound(to: Float.self)
            for i in 0..<(n * 2) {
                let v = s[i]
                if v.isFinite { dst[i] = v } else { dst[i] = 0; nonFinite += 1 }
            }
        case (.f32, _):
            let s = buf.data.baseAddress!.assumingMemoryBound(to: Float.self)
            for i in 0..<n {
                var v = s[i]
                if !v.isFinite { v = 0; nonFinite += 1 }
                dst[2 * i] = v; dst[2 * i + 1] = v
            }
        case (.s16, 2):
            let s = buf.data.baseAddress!.assumingMemoryBound(to: Int16.self)
            for i in 0..<(n * 2) { dst[i] = Float(s[i]) * (1.0 / 32768.0) }
        case (.s16, _):
            let s = buf.data.baseAddress!.assumingMemoryBound(to: Int16.self)
            for i in 0..<n { let v = Float(s[i]) * (1.0 / 32768.0); dst[2 * i] = v; dst[2 * i + 1] = v }
        }
        entries.append(Entry(offset: offset, frames: n, rate: buf.sampleRate, timelineNs: timelineNs(buf.pts)))
        cond.broadcast()
        cond.unlock()
        if nonFinite > 0 { stats.update { $0.audioNonFiniteSamples += nonFinite } }
        return .accepted
    }

    private func run() {
        while true {
            cond.lock()
            while entries.isEmpty && !stopping { cond.wait() }
            guard let e = entries.first else { cond.unlock(); break }
            cond.unlock()

            var samples = UnsafeBufferPointer(start: UnsafePointer(storage + e.offset), count: e.frames * 2)
            var ts = e.timelineNs
            if e.rate != 48_000, let r = resampler {
                if let out = r.process(samples.baseAddress!, frames: e.frames) {
                    samples = out
                    // Output lags input by the resampler's delay.
                    ts -= Int64(r.delayFrames * 1e9 / 48_000)
                } else {
                    // libsoxr could not be loaded: the buffer is dropped, as before with no resampler.
                    samples = UnsafeBufferPointer(start: nil, count: 0)
                    stats.countDrop(.malformed)
                }
            }
            if samples.count > 0 {
                let position = cond.withLock { clock.place(timelineNs: ts, frames: samples.count / 2) }
                mixer.write(source: mixerInput, samples: samples, position: position, nowNs: MediaTime.now())
            }
            cond.withLock {
                ring.freeOldest(offset: e.offset, count: e.frames * 2)
                entries.removeFirst()
                cond.broadcast() // a producer blocked on a full ring (block back-pressure) may go on
            }
        }
    }

    package func finish() {
        cond.withLock {
            stopping = true
            cond.broadcast()
        }
        thread.join()
    }
}
