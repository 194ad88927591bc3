import Synchronization

/// The video lane: converts each frame into a pooled encoder-input picture on the caller's
/// thread, then encodes it on the lane's own thread.
///
/// At most `FramePool.capacity` (2) frames are pending; past that the newest is dropped and
/// counted as `encoder_busy`. That is the lane's back-pressure: a frame is never queued
/// unboundedly and the pool never grows.
package final class VideoLane: @unchecked Sendable {
    private let pool: FramePool
    private let converter: FrameConverter
    private let encoder: VideoEncoder
    private let stats: BroadcastStats
    private let convertLock = ConditionLock()
    private let cond = ConditionLock()
    /// A converted frame waiting for the encoder: its pool slot, timeline time and arrival.
    private struct Pending {
        var slot: Int
        var timestampMs: Int64
        var arrivalNs: Int64
    }
    private var pending: FixedRing<Pending>
    private var stopping = false
    private var lastPts: Int64 = Int64.min
    /// Takes the capture jitter out of video PTS (guarded by `convertLock`).
    private var smoother: VideoTimestampSmoother
    private let thread = WorkerThread(name: "bk-video")
    private let keyframeRequested = Atomic<Bool>(false)
    private let deliver: (EncodedPacket, Int64) -> Void

    /// `deliver` gets each packet with the CLOCK_MONOTONIC arrival time of its source frame.
    init(encoder: VideoEncoder, pendingFrames: Int, stats: BroadcastStats, deliver: @escaping (EncodedPacket, Int64) -> Void) {
        let s = encoder.settings
        pool = FramePool(width: s.width, height: s.height, capacity: pendingFrames)
        converter = FrameConverter(outputWidth: s.width, outputHeight: s.height)
        self.encoder = encoder
        self.stats = stats
        self.deliver = deliver
        pending = FixedRing(capacity: pendingFrames)
        smoother = VideoTimestampSmoother(fps: s.fps)
    }

    var reservedBytes: Int { pool.byteCount }
    var scratchBytes: Int { convertLock.withLock { converter.scratchBytes } }

    func start() throws(WorkerThread.StartFailure) {
        try thread.start { [self] in run() }
    }

    /// Asks for an IDR on the next frame (after congestion drops or a reconnect).
    func requestKeyframe() { keyframeRequested.store(true, ordering: .relaxed) }

    /// Caller thread: validate, order-check, convert into a free slot and queue it.
    func process(_ frame: VideoFrame, timelineMs: (Int64) -> Int64) -> ProcessResult {
        let arrival = MediaTime.now()
        if frame.validate() != nil {
            stats.countDrop(.malformed)
            return .dropped(.malformed)
        }
        convertLock.lock()
        if frame.pts <= lastPts {
            convertLock.unlock()
            stats.countDrop(.backwardsTimestamp)
            return .dropped(.backwardsTimestamp)
        }
        guard let slot = pool.acquire() else {
            convertLock.unlock()
            stats.countDrop(.encoderBusy)
            return .dropped(.encoderBusy)
        }
        lastPts = frame.pts
        let dst = pool.frame(slot)
        let geo = LetterboxGeometry.fit(srcW: frame.width, srcH: frame.height, dstW: dst.width, dstH: dst.height)
        if pool.needsBorderRepaint(slot: slot, geometry: geo) { FrameConverter.fillBlack(dst) }
        converter.convert(frame, into: dst)
        let corrected = smoother.corrections
        let ts = timelineMs(smoother.smooth(frame.pts))
        let corrections = smoother.corrections
        convertLock.unlock()
        if corrections != corrected { stats.update { $0.videoPtsCorrections = corrections } }
        let queued = cond.withLock { () -> Bool in
            // finish() has begun: the lane thread may already have taken its last frame, so a
            // frame queued now would be counted in but never encoded.
            guard !stopping else { return false }
            // Never full: a slot was free in the pool, and the ring holds as many entries as the pool.
            pending.append(Pending(slot: slot, timestampMs: ts, arrivalNs: arrival))
            cond.broadcast()
            return true
        }
        guard queued else {
            pool.release(slot)
            return .notRunning
        }
        stats.update { $0.videoFramesIn += 1 }
        return .accepted
    }

    private func run() {
        while true {
            cond.lock()
            while pending.isEmpty && !stopping { cond.wait() }
            guard let next = pending.first else { cond.unlock(); break }
            cond.unlock()

            let force = keyframeRequested.exchange(false, ordering: .relaxed)
            let ok = encoder.encode(pool.frame(next.slot), timestampMs: next.timestampMs, forceKeyframe: force) {
                deliver($0, next.arrivalNs)
            }
            if ok { stats.update { $0.videoFramesEncoded += 1 } } else { stats.countDrop(.encoderError) }

            cond.withLock {
                pending.removeFirst()
                // Released under `cond`, so a waiter woken below finds the slot free.
                pool.release(next.slot)
                cond.broadcast()
            }
        }
        encoder.flush { deliver($0, 0) }
    }

    /// Blocks until the encoder has taken a pending frame (a pool slot is free), the lane stops,
    /// or `deadlineNs` (CLOCK_MONOTONIC) passes; true when a slot is free. For feeders that may
    /// wait, such as benchmarks: polling for `encoder_busy` to clear costs CPU of its own.
    package func waitForFreeSlot(deadlineNs: Int64) -> Bool {
        cond.withLock {
            while pool.inUse >= pool.capacity && !stopping && MediaTime.now() < deadlineNs {
                cond.wait(untilNs: deadlineNs)
            }
            return pool.inUse < pool.capacity
        }
    }

    /// Encodes what is pending, flushes the encoder and ends the thread.
    func finish() {
        cond.withLock {
            stopping = true
            cond.broadcast()
        }
        thread.join()
    }
}
