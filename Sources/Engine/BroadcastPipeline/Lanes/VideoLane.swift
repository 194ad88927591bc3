import Synchronization
import BroadcastCore

/// The video lane: converts each frame into a pooled encoder-input picture on the caller's
/// thread, then encodes it on the lane's own thread.
///
/// At most `FramePool.capacity` (2) frames are pending; past that the newest is dropped and
/// counted as `encoder_busy`. That is the lane's back-pressure: a frame is never queued
/// unboundedly and the pool never grows.
///
/// The output frame rate is constant whatever the source does. A damage-driven screen (mutter's
/// ScreenCast: `framerate=0/1`) sends a picture only when something changes, so a still screen
/// would send one frame and nothing more: no keyframe for a viewer who joins later. When no
/// new picture has come two frame periods after the one its slot was due (`repeatGraceFrames`),
/// the lane thread encodes the last picture again, still in its pool slot (pinned, not
/// copied), on the timestamp smoother's next grid slot. x264 codes it as skipped blocks; the
/// keyframe interval counts it like any frame. Repeats are counted apart
/// (`videoFramesRepeated`); `videoFramesIn` counts captured pictures only.
///
/// A live source's pictures are put on the output grid by a `FrameRateGate` before conversion:
/// each is stamped with its output tick, and a picture whose tick an earlier one took (a 60 Hz
/// desktop under `--fps 30`, mutter's two pictures 17 ms apart) is skipped, neither converted nor
/// encoded, counted in `videoFramesSkipped` (not a drop), and reported `.accepted` to the caller
/// (it was handled; nothing the declared rate carries is lost). A tick the source left empty
/// while it kept sending (mutter 50-66 ms apart on a loaded machine: too soon for a repeat's
/// deadline) is filled with the last picture before the next one is encoded (`fillHole`; not a
/// hole a busy drop left: that drop is counted, and stays a hole). A
/// producer in block mode (`repeatsLastPicture` false) is never gated: every frame it gives is
/// encoded.
package final class VideoLane: @unchecked Sendable {
    private let pool: FramePool
    private let converter: FrameConverter
    private let encoder: VideoEncoder
    private let stats: BroadcastStats
    private let clock: StreamClock
    private let convertLock = ConditionLock()
    private let cond = ConditionLock()
    /// A converted frame waiting for the encoder: its pool slot, timeline time and arrival, and
    /// whether a picture was dropped as busy just before it (the hole it left is not filled).
    private struct Pending {
        var slot: Int
        var timestampMs: Int64
        var arrivalNs: Int64
        var afterDrop: Bool
    }
    private var pending: FixedRing<Pending>
    private var stopping = false
    /// A picture was dropped as busy since the last one queued (guarded by `convertLock`).
    private var droppedSinceQueued = false
    /// Set by `endOfInput()` (guarded by `cond`): the producer ended, so no more repeats.
    private var inputEnded = false
    private var lastPts: Int64 = Int64.min
    /// The last timeline time handed out (guarded by `convertLock`): each picture gets a later one.
    private var lastTimestampMs: Int64 = Int64.min
    /// Takes the capture jitter out of video PTS (guarded by `convertLock`).
    private var smoother: VideoTimestampSmoother
    /// Thins a source faster than the output rate (guarded by `convertLock`; live producers only).
    private var gate: FrameRateGate
    /// Nominal frame period.
    private let frameNs: Int64
    /// Arrival of the last captured picture and repeats made since (guarded by `cond`).
    private var lastArrivalNs: Int64 = Int64.min
    private var repeatsSinceCapture = 0
    private let repeatsLastPicture: Bool
    /// Timeline time of the last picture or repeat encoded (the lane thread only).
    private var lastEncodedMs: Int64 = Int64.min
    private let thread = WorkerThread(name: "bk-video")
    private let keyframeRequested = Atomic<Bool>(false)
    private let deliver: (EncodedPacket, Int64) -> Void

    /// Frame periods of grace after a picture's due time before its slot is filled with a
    /// repeat: capture threads deliver late by tens of ms on a loaded machine (5-9 spurious
    /// repeats in 10 s of a steady 30 fps screen with one period), and a picture that finds its
    /// tick taken by a repeat is stale, skipped by the gate. Two: a stall under 100 ms makes no
    /// repeat, and the pictures it held back keep their own ticks (stamped from their PTS); a
    /// tick the source really left empty is filled when its next picture comes (`fillHole`).
    static let repeatGraceFrames: Int64 = 2
    /// A lane thread that fell this far behind its repeats (a stalled machine) skips the
    /// missed slots instead of encoding them in a burst.
    static let maxRepeatCatchUpNs: Int64 = 500_000_000
    /// Most empty ticks filled before a picture (`fillHole`); a longer gap is a pause, left to
    /// the repeats (a paused source) or to the encoder's variable frame timing.
    static let maxHoleFill = 2

    /// `deliver` gets each packet with the CLOCK_MONOTONIC arrival time of its source frame.
    /// `clock` is the session timeline the repeated pictures are stamped on.
    /// `repeatsLastPicture` false: a producer faster than real time, never repeated (see
    /// `Backpressure.repeatsLastPicture`).
    package init(encoder: VideoEncoder, pendingFrames: Int, stats: BroadcastStats, clock: StreamClock = StreamClock(),
         repeatsLastPicture: Bool = true, deliver: @escaping (EncodedPacket, Int64) -> Void) {
        self.repeatsLastPicture = repeatsLastPicture
        let s = encoder.settings
        pool = FramePool(width: s.width, height: s.height, capacity: pendingFrames)
        converter = FrameConverter(outputWidth: s.width, outputHeight: s.height)
        self.encoder = encoder
        self.stats = stats
        self.clock = clock
        self.deliver = deliver
        pending = FixedRing(capacity: pendingFrames)
        smoother = VideoTimestampSmoother(fps: s.fps)
        gate = FrameRateGate(fps: s.fps)
        frameNs = 1_000_000_000 / Int64(max(1, s.fps))
    }

    var reservedBytes: Int { pool.byteCount }
    var scratchBytes: Int { convertLock.withLock { converter.scratchBytes } }

    package func start() throws(WorkerThread.StartFailure) {
        try thread.start { [self] in run() }
    }

    /// Asks for an IDR on the next frame (after congestion drops or a reconnect).
    package func requestKeyframe() { keyframeRequested.store(true, ordering: .relaxed) }

    /// The next frame will be an IDR: a request is pending.
    package var keyframeRequestPending: Bool { keyframeRequested.load(ordering: .relaxed) }

    /// Caller thread: validate, order-check, convert into a free slot and queue it.
    package func process(_ frame: VideoFrame, timelineMs: (Int64) -> Int64) -> ProcessResult {
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
        // Before the pool and the conversion: a picture whose output tick is taken costs nothing.
        var pts = frame.pts
        var gated = gate
        if repeatsLastPicture {
            guard case .admit(let t) = gated.decide(frame.pts) else {
                // finish() has begun: say so, as for any picture (never "accepted" after it).
                guard !cond.withLock({ stopping }) else {
                    convertLock.unlock()
                    return .notRunning
                }
                gate = gated
                lastPts = frame.pts
                convertLock.unlock()
                stats.countSkippedFrame()
                return .accepted
            }
            pts = t
        }
        guard let slot = pool.acquire() else {
            // Dropped as busy: the gate is left as it was, so the picture takes no tick.
            droppedSinceQueued = true
            convertLock.unlock()
            stats.countDrop(.encoderBusy)
            return .dropped(.encoderBusy)
        }
        gate = gated
        lastPts = frame.pts
        let dst = pool.frame(slot)
        let geo = LetterboxGeometry.fit(srcW: frame.width, srcH: frame.height, dstW: dst.width, dstH: dst.height)
        if pool.needsBorderRepaint(slot: slot, geometry: geo) { FrameConverter.fillBlack(dst) }
        converter.convert(frame, into: dst)
        let corrected = smoother.corrections
        let ts = nextTimestamp(timelineMs(smoother.smooth(pts)))
        let corrections = smoother.corrections
        // Queued under the convert lock too: a repeat is stamped under it, so a repeat never
        // gets a later time than a picture queued before it.
        let queued = cond.withLock { () -> Bool in
            // finish() has begun: the lane thread may already have taken its last frame, so a
            // frame queued now would be counted in but never encoded.
            guard !stopping else { return false }
            // Never full: a slot was free in the pool, and the ring holds as many entries as the pool.
            pending.append(Pending(slot: slot, timestampMs: ts, arrivalNs: arrival, afterDrop: droppedSinceQueued))
            lastArrivalNs = arrival
            repeatsSinceCapture = 0
            cond.broadcast()
            return true
        }
        if queued { droppedSinceQueued = false }
        convertLock.unlock()
        if corrections != corrected { stats.update { $0.videoPtsCorrections = corrections } }
        guard queued else {
            pool.release(slot)
            return .notRunning
        }
        stats.update { $0.videoFramesIn += 1 }
        return .accepted
    }

    /// A timeline time later than the last one (guarded by `convertLock`).
    private func nextTimestamp(_ ms: Int64) -> Int64 {
        let ts = lastTimestampMs == Int64.min ? ms : max(ms, lastTimestampMs + 1)
        lastTimestampMs = ts
        return ts
    }

    /// When the next repeat is due (guarded by `cond`), or nil when none can be made.
    private var repeatDeadlineNs: Int64? {
        guard repeatsLastPicture, !inputEnded, lastArrivalNs != Int64.min else { return nil }
        return lastArrivalNs + (Int64(repeatsSinceCapture) + 1 + Self.repeatGraceFrames) * frameNs
    }

    private func run() {
        while true {
            cond.lock()
            var repeatDue = false
            while pending.isEmpty && !stopping {
                guard let deadline = repeatDeadlineNs else { cond.wait(); continue }
                if MediaTime.now() >= deadline { repeatDue = true; break }
                cond.wait(untilNs: deadline)
            }
            if repeatDue {
                cond.unlock()
                encodeRepeat()
                continue
            }
            guard let next = pending.first else { cond.unlock(); break }
            cond.unlock()
            // A hole a busy drop left stays one: the drop is counted, and a copy of the picture
            // before it would stand for a picture that existed (and cost an encode when busy).
            if !next.afterDrop { fillHole(before: next.timestampMs) }

            let force = keyframeRequested.exchange(false, ordering: .relaxed)
            let ok = encoder.encode(pool.frame(next.slot), timestampMs: next.timestampMs, forceKeyframe: force) {
                deliver($0, next.arrivalNs)
            }
            if ok { stats.update { $0.videoFramesEncoded += 1 } } else { stats.countDrop(.encoderError) }
            lastEncodedMs = next.timestampMs

            cond.withLock {
                pending.removeFirst()
                // Kept as the last picture for repeats (freed when the next one is encoded, or
                // taken back by `acquire()`), under `cond`, so a waiter woken below finds it.
                pool.retainAsLast(next.slot)
                cond.broadcast()
            }
        }
        pool.releaseLast()
        encoder.flush { deliver($0, 0) }
    }

    /// A picture stamped two or three ticks after the last one encoded (the source left a tick
    /// empty and came back before the repeat's deadline, which counts from arrival) would leave
    /// a hole in the output grid: the last picture is encoded again on each empty tick first, as
    /// a repeat. Live sources only (block mode is its own clock).
    private func fillHole(before ts: Int64) {
        guard repeatsLastPicture, lastEncodedMs != Int64.min, ts > lastEncodedMs else { return }
        let periodMs = Double(frameNs) / 1e6
        let missing = Int((Double(ts - lastEncodedMs) / periodMs).rounded()) - 1
        guard missing >= 1, missing <= Self.maxHoleFill else { return }
        guard let slot = cond.withLock({ pool.borrowLast() }) else { return }
        let base = lastEncodedMs
        for i in 1...missing {
            let hole = base + Int64((Double(i) * periodMs).rounded())
            // Never closer than most of a period to the picture (stamps off the grid: a restart).
            guard hole > lastEncodedMs, Double(ts - hole) >= 0.85 * periodMs else { break }
            let force = keyframeRequested.exchange(false, ordering: .relaxed)
            let now = MediaTime.now()
            let ok = encoder.encode(pool.frame(slot), timestampMs: hole, forceKeyframe: force) { deliver($0, now) }
            if ok { stats.countRepeatedFrame() } else { stats.countDrop(.encoderError) }
            lastEncodedMs = hole
        }
        cond.withLock {
            pool.returnLast()
            cond.broadcast()
        }
    }

    /// Encodes the last picture again on the grid's next slot, unless a captured picture came
    /// in the meantime (it is stamped and queued under `convertLock`, taken here first).
    private func encodeRepeat() {
        convertLock.lock()
        cond.lock()
        let now = MediaTime.now()
        guard pending.isEmpty, !stopping, let deadline = repeatDeadlineNs, now >= deadline,
              let slot = pool.borrowLast() else {
            cond.unlock()
            convertLock.unlock()
            return
        }
        // Far behind (the thread was not scheduled): skip to the current slot rather than burst.
        var slots = 1
        if now - deadline > Self.maxRepeatCatchUpNs { slots += Int((now - deadline) / frameNs) }
        repeatsSinceCapture += slots
        cond.unlock()
        let pts = smoother.repeatSlot(slots: slots)
        if let pts { gate.noteRepeat(at: pts) }
        let ts = pts.map { nextTimestamp(clock.timelineMs($0)) }
        convertLock.unlock()
        if let ts {
            let force = keyframeRequested.exchange(false, ordering: .relaxed)
            let ok = encoder.encode(pool.frame(slot), timestampMs: ts, forceKeyframe: force) { deliver($0, now) }
            if ok { stats.countRepeatedFrame() } else { stats.countDrop(.encoderError) }
            lastEncodedMs = ts
        }
        cond.withLock {
            pool.returnLast()
            cond.broadcast()
        }
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

    /// The producer ended by itself: no repeat is made from now on (a picture still given is
    /// encoded as usual). Without it, the time between the last picture and the finish would be
    /// filled with repeats past the end of the input.
    package func endOfInput() {
        cond.withLock {
            inputEnded = true
            cond.broadcast()
        }
    }

    /// Encodes what is pending, flushes the encoder and ends the thread.
    package func finish() {
        cond.withLock {
            stopping = true
            cond.broadcast()
        }
        thread.join()
    }
}
