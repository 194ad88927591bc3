import Testing
@testable import BroadcastPipeline
import BroadcastCore
import BroadcastTestSupport

@Suite(.timeLimit(.minutes(2))) struct AudioMixerTests {
    func buffer(_ frames: Int, value: Float) -> [Float] { Array(repeating: value, count: frames * 2) }

    @Test func mixesAlignedSourcesAndFillsGapsWithSilence() {
        let c = MixCollector()
        let m = AudioMixer(frameSize: 1024) { p, pos in
            c.positions.append(pos)
            c.firstSample.append(p[0])
            var pk: Float = 0
            for i in 0..<2048 { pk = max(pk, abs(p[i])) }
            c.peak.append(pk)
        }
        let now: Int64 = 1_000_000_000
        // App from 0, in 480-frame buffers; mic starts late at 4096 with 128-frame buffers.
        var appPos: Int64 = 0
        var micPos: Int64 = 4096
        while appPos < 48_000 {
            let a = buffer(480, value: 0.25)
            a.withUnsafeBufferPointer { m.write(source: 0, samples: $0, position: appPos, nowNs: now) }
            appPos += 480
            while micPos < appPos {
                let b = buffer(128, value: 0.5)
                b.withUnsafeBufferPointer { m.write(source: 1, samples: $0, position: micPos, nowNs: now) }
                micPos += 128
            }
        }
        // Continuous output: positions step by exactly 1024 from 0.
        for (i, p) in c.positions.enumerated() { #expect(p == Int64(i) * 1024) }
        #expect(c.positions.count >= 40)
        // Before the mic starts: app only; after: the sum.
        #expect(abs(c.firstSample[0] - 0.25) < 1e-6)
        #expect(abs(c.firstSample[10] - 0.75) < 1e-6)
    }

    /// The end of a live stream sends every sample a source gave: the last partial frame and the
    /// encoder's delay are padded with silence (a 2 s PCM input once lost its last 64 ms).
    @Test func liveFlushSendsTheLastPartialFrameAndTheEncodersDelay() {
        let c = MixCollector()
        let m = AudioMixer(frameSize: 1024) { p, pos in
            c.positions.append(pos)
            c.firstSample.append(p[0])
        }
        m.flushPaddingFrames = 2_048
        let a = buffer(500, value: 0.25)
        var pos: Int64 = 0
        while pos < 10_000 {
            a.withUnsafeBufferPointer { m.write(source: 0, samples: $0, position: pos, nowNs: 1_000_000_000) }
            pos += 500
        }
        m.flush()
        let end = (c.positions.last ?? 0) + 1024
        // 10 000 frames given, 2048 of delay after them: whole frames up to 12 288.
        #expect(end == 12_288, "mixed out to \(end)")
        #expect(c.positions.firstIndex(of: 9_216).map { abs(c.firstSample[$0] - 0.25) < 1e-6 } == true)
        for (i, p) in c.positions.enumerated() { #expect(p == Int64(i) * 1024) }
    }

    @Test func stalledSourceDoesNotHoldOutputBeyondWait() {
        let c = MixCollector()
        let m = AudioMixer(frameSize: 960) { _, pos in c.positions.append(pos) }
        // Both sources active, then the mic stops delivering (still "recent").
        let z = buffer(960, value: 0)
        z.withUnsafeBufferPointer { m.write(source: 1, samples: $0, position: 0, nowNs: 0) }
        var pos: Int64 = 0
        for _ in 0..<50 {
            z.withUnsafeBufferPointer { m.write(source: 0, samples: $0, position: pos, nowNs: 1_000_000) }
            pos += 960
        }
        // Output reaches within the 150 ms (7200-frame) wait of the newest app sample.
        let emittedEnd = (c.positions.last ?? -960) + 960
        #expect(pos - emittedEnd <= 7_200 + 960)
    }

    @Test func lateSamplesAreDiscardedNotMixedBackwards() {
        let c = MixCollector()
        let m = AudioMixer(frameSize: 1024) { _, pos in c.positions.append(pos) }
        let a = buffer(4096, value: 0.1)
        a.withUnsafeBufferPointer { m.write(source: 0, samples: $0, position: 0, nowNs: 0) }
        a.withUnsafeBufferPointer { m.write(source: 0, samples: $0, position: 1000, nowNs: 0) }
        #expect(m.lateFramesDiscarded == 3096)
        for (i, p) in c.positions.enumerated() { #expect(p == Int64(i) * 1024) }
    }
}

@Suite(.timeLimit(.minutes(2))) struct AudioMixerPauseTests {
    @Test func pauseOfEverySourceFlushesPaddedFrame() {
        let c = MixCollector()
        let m = AudioMixer(frameSize: 1024) { _, pos in c.positions.append(pos) }
        let b = [Float](repeating: 0.2, count: 480 * 2)
        var pos: Int64 = 0
        var now: Int64 = 0
        for _ in 0..<20 {
            b.withUnsafeBufferPointer { m.write(source: 0, samples: $0, position: pos, nowNs: now) }
            b.withUnsafeBufferPointer { m.write(source: 1, samples: $0, position: pos, nowNs: now) }
            pos += 480
            now += 10_000_000
        }
        // 9600 written: 9 whole frames out, 384 samples waiting.
        #expect(c.positions.count == 9)
        m.poll(nowNs: now + 20_000_000)
        #expect(c.positions.count == 9, "not idle yet")
        m.poll(nowNs: now + 100_000_000)
        // The partial frame is padded and sent during the pause, then silence up to the wall
        // clock less two frames: (9600 + 4800 - 2048) / 1024 whole frames.
        #expect(c.positions.count == 12, "the partial frame is padded and sent during the pause")
        // After the pause, the timeline continues without overlap.
        b.withUnsafeBufferPointer { m.write(source: 0, samples: $0, position: 48_000 * 3, nowNs: now + 3_000_000_000) }
        for (i, p) in c.positions.enumerated() { #expect(p == Int64(i) * 1024) }
    }

    /// Both sources pause for `gapFrames`; the mic (480-frame buffers) resumes first, the app
    /// (1024-frame buffers, delivered when full) 20 ms later with samples starting before
    /// the mic's newest. Returns the mixer and what it emitted.
    /// Also returns the frames discarded as late from the resume on.
    func pauseThenResume(gapFrames: Int64, heldAtResume: inout Int64,
                         heldAtPauseEnd: inout Int64) -> (AudioMixer, MixCollector, Int64) {
        let c = MixCollector()
        let m = AudioMixer(frameSize: 1024) { p, pos in
            c.positions.append(pos)
            c.firstSample.append(p[0])
        }
        let mic = [Float](repeating: 0.125, count: 480 * 2)
        let app = [Float](repeating: 0.5, count: 1024 * 2)
        var now: Int64 = 0
        var micPos: Int64 = 0, appPos: Int64 = 0
        while appPos < 48_000 {   // one second of both
            app.withUnsafeBufferPointer { m.write(source: 0, samples: $0, position: appPos, nowNs: now) }
            appPos += 1024
            while micPos < appPos {
                mic.withUnsafeBufferPointer { m.write(source: 1, samples: $0, position: micPos, nowNs: now) }
                micPos += 480
            }
            now += 21_333_333
        }
        // The housekeeping thread polls every 20 ms through the pause.
        let pauseEnd = now + gapFrames * 1_000_000_000 / 48_000
        var t = now + 20_000_000
        while t < pauseEnd { m.poll(nowNs: t); t += 20_000_000 }
        now = pauseEnd
        heldAtPauseEnd = (c.positions.last ?? 0) + 1024
        let resume = appPos + gapFrames
        let lateBefore = m.lateFramesDiscarded
        micPos = resume + 100
        appPos = resume
        for _ in 0..<3 {   // 30 ms of mic before the app's first buffer is complete
            mic.withUnsafeBufferPointer { m.write(source: 1, samples: $0, position: micPos, nowNs: now) }
            micPos += 480
            now += 10_000_000
        }
        heldAtResume = (c.positions.last ?? 0) + 1024
        app.withUnsafeBufferPointer { m.write(source: 0, samples: $0, position: appPos, nowNs: now) }
        return (m, c, m.lateFramesDiscarded - lateBefore)
    }

    @Test func sourcesResumingTogetherLoseNothing() {
        var held: Int64 = 0, pauseEnd: Int64 = 0
        let (m, c, late) = pauseThenResume(gapFrames: 48_000 * 3, heldAtResume: &held, heldAtPauseEnd: &pauseEnd)
        #expect(late == 0, "the app's first buffer after the pause was discarded")
        #expect(m.resumes == 1)
        // Nothing of the resumed audio has been mixed out before the app's buffer arrived...
        let resume = Int64(48_128 + 48_000 * 3)  // the app wrote 47 buffers before the pause
        #expect(held <= resume, "mixed out to \(held) on the mic alone")
        // The pause was mixed out as silence while it lasted, up to the safety margin: at the
        // resume only that margin is left, not 3 s in one burst.
        // The margin: two of the longest buffers (1024), at least two frames.
        #expect(pauseEnd <= resume - 2_048 + 1_024)
        #expect(pauseEnd > resume - 2_048 - 2 * 1_024 - 2 * 1_024)
        // ...and once the app is in, the mix at its position holds both sources.
        m.flush()
        if let i = c.positions.firstIndex(where: { $0 >= resume + 100 }) {
            #expect(abs(c.firstSample[i] - 0.625) < 1e-6, "app + mic at \(c.positions[i]): \(c.firstSample[i])")
            // Each sample is where it was written: no slot of the ring was reused early.
            for (j, p) in c.positions.enumerated() where p + 1024 <= resume { #expect(c.firstSample[j] == 0 || p < 49_152) }
        } else {
            Issue.record("nothing mixed after the resume")
        }
        for (i, p) in c.positions.enumerated() where i > 0 { #expect(p == c.positions[i - 1] + 1024) }
    }

    @Test func resumeAfterLongPauseSkipsButLosesNothing() {
        // 30 s: longer than maxSilenceFrames, so the output skips forward instead of
        // encoding 30 s of silence; the app's earlier start must still not be late.
        var held: Int64 = 0, pauseEnd: Int64 = 0
        let (m, _, late) = pauseThenResume(gapFrames: 48_000 * 30, heldAtResume: &held, heldAtPauseEnd: &pauseEnd)
        #expect(late == 0)
        // Silence kept flowing in real time through the pause: nothing to skip at the resume.
        #expect(m.skippedFrames == 0)
        #expect(pauseEnd > 48_128 + 48_000 * 30 - 7_200 - 2 * 1_024 - 2 * 1_024)
    }
}

/// A session whose audio lanes never deliver (no audio device at all) still has a playing
/// audio track: the mixer mixes silence out in real time from the timeline's start.
@Suite(.timeLimit(.minutes(1))) struct AudioMixerNoSourceTests {
    @Test func noSourceAtAllGivesRealTimeSilence() {
        let c = MixCollector()
        let m = AudioMixer(frameSize: 1024) { p, pos in
            c.positions.append(pos)
            c.firstSample.append(p[0])
        }
        let clock = StreamClock()
        m.timeline = clock
        let origin: Int64 = 7_000_000_000
        _ = clock.timelineNs(origin, arrivalNs: origin)   // the first video frame starts the timeline
        var t = origin
        while t < origin + 90_000_000 { m.poll(nowNs: t); t += 20_000_000 }
        #expect(c.positions.isEmpty, "a device gets the grace period to deliver its first buffer")
        while t <= origin + 10_000_000_000 { m.poll(nowNs: t); t += 20_000_000 }
        // 10 s of timeline: silence up to two frames behind the wall clock, from position 0.
        #expect(c.positions.first == 0)
        for (i, p) in c.positions.enumerated() { #expect(p == Int64(i) * 1024) }
        let end = (c.positions.last ?? 0) + 1024
        #expect(end > 480_000 - 3 * 1024 && end <= 480_000 - 2 * 1024, "mixed out to \(end)")
        #expect(c.firstSample.allSatisfy { $0 == 0 })
        #expect(m.noSourceSilence)
        // A device that appears later is mixed from where it lands, nothing of it discarded.
        let b = [Float](repeating: 0.25, count: 1024 * 2)
        b.withUnsafeBufferPointer { m.write(source: 0, samples: $0, position: 480_000, nowNs: t) }
        b.withUnsafeBufferPointer { m.write(source: 0, samples: $0, position: 481_024, nowNs: t + 21_000_000) }
        #expect(m.lateFramesDiscarded == 0)
        m.flush()
        #expect(c.firstSample.contains(0.25))
    }

    /// An embedder's PTS need not be on CLOCK_MONOTONIC: the silence follows the wall time since
    /// the first buffer arrived, never the distance between the PTS origin and now (which once
    /// mixed out over an hour of silence in one poll for PTS that started near zero).
    @Test func silenceIsPacedFromTheFirstArrivalNotThePTS() {
        let c = MixCollector()
        let m = AudioMixer(frameSize: 1024) { _, pos in c.positions.append(pos) }
        let clock = StreamClock()
        m.timeline = clock
        let arrival: Int64 = 5_000_000_000_000
        _ = clock.timelineNs(1_000_000_000, arrivalNs: arrival)   // PTS 1 s on the producer's own clock
        m.poll(nowNs: arrival + 1_000_000_000)
        #expect((c.positions.last ?? 0) + 1024 <= 48_000, "at most one second of silence after one second")
        #expect(!c.positions.isEmpty)
    }

    @Test func noTimelineNoSilence() {
        let c = MixCollector()
        let m = AudioMixer(frameSize: 1024) { _, pos in c.positions.append(pos) }
        m.timeline = StreamClock()            // no buffer yet: the session has not begun
        m.poll(nowNs: 50_000_000_000)
        #expect(c.positions.isEmpty)
    }
}
