import Glibc
import Synchronization
import Testing
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

/// What the producer thread saw from `process()`.
private struct ProducerTally: Sendable {
    var videoAccepted = 0
    var audioAccepted = 0
    var acceptedAfterNotRunning = 0
    var calls = 0
}

private final class TallyBox: Sendable {
    let tally = Mutex(ProducerTally())
}

/// `process()` from one thread while another calls `finish()`: no crash, no hang, and a clean
/// result: every video frame `process()` accepted was encoded (none counted in and then lost in
/// a lane whose thread had already ended), and once a call has said `.notRunning` no later one
/// is accepted.
@Suite(.serialized) struct ProcessFinishRaceTests {
    @Test(.timeLimit(.minutes(3))) func processRacingFinishEndsClean() throws {
        let frames = NoiseFrames()
        var rng = SplitMixRandom(seed: 15)
        for round in 0..<32 {
            var cfg = BroadcastConfiguration.default
            cfg.video = VideoEncoderSettings(width: 320, height: 240, fps: 30, bitrateKbps: 300, preset: "ultrafast",
                                             threads: 1, slicedThreads: false)
            cfg.destinations = [.discard]
            cfg.memoryBudgetBytes = 0
            cfg.adaptiveBitrate = false
            // Every other round video only: finish() then stops the video lane at once (with
            // audio it drains the audio lanes first), so the race with a frame in conversion is tight.
            cfg.hasAudio = round % 2 == 0
            let session = BroadcastSession(configuration: cfg)
            try session.start()
            let box = TallyBox()
            let producer = WorkerThread(name: "race-producer")
            try producer.start {
                let audio = UnsafeMutableBufferPointer<Float>.allocate(capacity: 480 * 2)
                audio.initialize(repeating: 0.1)
                defer { audio.deallocate() }
                let audioBytes = UnsafeRawBufferPointer(audio)
                var pts: Int64 = 1_000_000_000
                var sawNotRunning = false
                var local = ProducerTally()
                // Video and audio alternately, as fast as the lanes take them, until both lanes
                // have said .notRunning a few times.
                var notRunningSeen = 0
                var i = 0
                while notRunningSeen < 20 {
                    // On the 30 fps grid: a live source faster than that is thinned by the
                    // frame-rate gate (its extra pictures skipped, not in videoFramesIn).
                    pts += 33_333_333
                    let v = session.process(.video(frames.frame(i, pts: pts)), type: .video)
                    let a = session.process(.audio(AudioBuffer(format: .f32, channels: 2, sampleRate: 48_000, frameCount: 480,
                                                               data: audioBytes, pts: pts)), type: i % 2 == 0 ? .appAudio : .micAudio)
                    // Without audio lanes an audio buffer is a wrong-lane drop, until the session stops.
                    local.calls += 2
                    for r in [v, a] {
                        if r == .notRunning { sawNotRunning = true; notRunningSeen += 1 }
                        else if r == .accepted && sawNotRunning { local.acceptedAfterNotRunning += 1 }
                    }
                    if v == .accepted { local.videoAccepted += 1 }
                    if a == .accepted { local.audioAccepted += 1 }
                    i += 1
                }
                box.tally.withLock { $0 = local }
            }
            // Let it run a random while (0..120 ms: before, while and after the lanes fill up), then finish.
            usleep(UInt32(rng.nextUnit() * 120_000))
            let before = MediaTime.now()
            session.finish()
            let finishNs = MediaTime.now() - before
            producer.join()
            let t = box.tally.withLock { $0 }
            let s = session.stats.snapshot()
            // A hang is caught by the time limit; this bounds finish() itself (its own deadline is 1.5 s).
            #expect(finishNs < 10_000_000_000, "round \(round): finish took \(finishNs / 1_000_000) ms")
            #expect(t.acceptedAfterNotRunning == 0, "round \(round): accepted after .notRunning")
            #expect(s.videoFramesIn == t.videoAccepted, "round \(round): stats count \(s.videoFramesIn) frames in, process accepted \(t.videoAccepted)")
            #expect(s.videoFramesEncoded + s.drops(.encoderError) == t.videoAccepted,
                    "round \(round): \(t.videoAccepted) accepted, \(s.videoFramesEncoded) encoded: frames lost in the race")
            #expect(session.process(.video(frames.frame(0, pts: Int64.max - 1)), type: .video) == .notRunning)
            #expect(session.statusText == "finished")
        }
    }
}
