import Testing
#if canImport(Glibc)
import Glibc
#endif
@testable import BroadcastKit
import BroadcastCore
import BroadcastPipeline
import BroadcastNetwork
import BroadcastFLV
import BroadcastRTMP
import BroadcastSRT
import BroadcastWHIP
import BroadcastRecording
import BroadcastTestSupport

/// The video lane thins a live source faster than the output rate before conversion, and never
/// a block-mode producer.
@Suite(.serialized, .timeLimit(.minutes(1))) struct FrameRateGateLaneTests {
    func session(backpressure: Backpressure) throws -> (BroadcastSession, VideoTagLog) {
        let log = VideoTagLog()
        var cfg = BroadcastConfiguration.default
        cfg.video = VideoEncoderSettings(width: 320, height: 240, fps: 30, bitrateKbps: 500, preset: "ultrafast")
        cfg.hasAudio = false
        cfg.destinations = [.custom(log)]
        cfg.memoryBudgetBytes = 0
        cfg.adaptiveBitrate = false
        cfg.backpressure = backpressure
        let s = BroadcastSession(configuration: cfg)
        try s.start()
        return (s, log)
    }

    /// A live 60 Hz source, paced in real time, under 30 fps: about half its pictures are
    /// skipped (reported as handled, counted apart, not drops), and the stream is on the 33 ms grid.
    @Test func liveSixtyHertzSourceIsThinnedAndCountedAsSkipped() throws {
        let (s, log) = try session(backpressure: .drop)
        let frames = NoiseFrames()
        let t0 = MediaTime.now()
        let count = 120
        for i in 0..<count {
            let due = t0 + Int64(i) * 16_666_667
            while MediaTime.now() < due { usleep(500) }
            let r = s.process(.video(frames.frame(i, pts: due)), type: .video)
            #expect(r == .accepted || r == .dropped(.encoderBusy), "frame \(i): \(r)")
        }
        s.finish()
        let st = s.stats.snapshot()
        let busy = st.drops(.encoderBusy)
        #expect(st.videoFramesIn + st.videoFramesSkipped + busy == count, "\(st)")
        #expect(st.videoFramesSkipped >= 50, "skipped \(st.videoFramesSkipped) of \(count)")
        #expect(st.totalDrops == busy)
        #expect(busy <= 3, "a loaded machine may drop a few as busy: \(busy)")
        let times = log.snapshot.times
        let gaps = zip(times, times.dropFirst()).map { Int($1) - Int($0) }
        // The first few pass while the gate learns the rate; then every gap is a whole frame.
        #expect(gaps.filter { $0 < 25 }.count <= 6, "gaps \(gaps)")
        #expect(gaps.dropFirst(20).allSatisfy { $0 >= 33 }, "gaps \(gaps)")
    }

    /// Mutter at about 30 fps while the pointer moves: pictures on a 60 Hz vblank, 17, 33 or
    /// 50 ms apart, paced in real time. Every tag lands on the 33 ms grid (none under 28 ms), a
    /// second picture within a tick is skipped, and a tick the source left empty (a 50 ms gap,
    /// too short for a repeat's deadline) is filled with the last picture: 2 s give about 60 tags.
    @Test func mutterLikeSourceLandsOnTheGridWithItsHolesFilled() throws {
        let (s, log) = try session(backpressure: .drop)
        let frames = NoiseFrames()
        let vblank: Int64 = 16_666_667
        let cycle: [Int64] = [1, 1, 3, 2, 3, 2]  // 12 vblanks, 6 pictures: 30 a second on average
        let t0 = MediaTime.now()
        var due = t0
        var sent = 0
        for i in 0..<60 {
            while MediaTime.now() < due { usleep(500) }
            let r = s.process(.video(frames.frame(i, pts: due)), type: .video)
            #expect(r == .accepted || r == .dropped(.encoderBusy), "picture \(i): \(r)")
            sent += 1
            due += cycle[i % cycle.count] * vblank
        }
        s.finish()
        let st = s.stats.snapshot()
        let times = log.snapshot.times
        let gaps = zip(times, times.dropFirst()).map { Int($1) - Int($0) }
        // Whole periods, give or take the grid's largest move for one picture while it settles (5 ms).
        #expect(gaps.allSatisfy { $0 >= 28 }, "gaps \(gaps)")
        #expect(gaps.dropFirst(10).filter { $0 < 33 }.isEmpty, "gaps \(gaps)")
        // 60 pictures over 2 s: 60 ticks; on a loaded machine a busy drop or a late repeat may cost one or two.
        #expect(times.count >= 57 && times.count <= 61, "\(times.count) tags: \(st)")
        #expect(gaps.filter { $0 > 35 }.count <= 2, "gaps \(gaps)")
        #expect(st.videoFramesSkipped > 0, "\(st)")
        #expect(st.videoFramesRepeated > 0, "the empty ticks were not filled: \(st)")
        #expect(st.videoFramesIn + st.videoFramesSkipped + st.drops(.encoderBusy) == sent, "\(st)")
    }

    /// A block-mode producer (a transcoder) is the stream's clock: every frame it gives is
    /// encoded, however close its timestamps.
    @Test func blockModeProducerKeepsEveryFrame() throws {
        let (s, log) = try session(backpressure: .block)
        let frames = NoiseFrames()
        var pts: Int64 = 1_000_000_000
        for i in 0..<60 {
            pts += 16_666_667
            #expect(s.process(.video(frames.frame(i, pts: pts)), type: .video) == .accepted, "frame \(i)")
        }
        s.finish()
        let st = s.stats.snapshot()
        #expect(st.videoFramesSkipped == 0)
        #expect(st.videoFramesEncoded == 60)
        #expect(log.snapshot.times.count == 60)
    }
}
