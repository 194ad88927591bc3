import BroadcastKit
import Testing
@testable import BroadcastCLI

/// A builder that makes no sources (the presets' limits are all these tests look at).
private func encoder(_ args: [String]) throws -> (video: VideoEncoderSettings, audio: AudioEncoderSettings, notes: [String]) {
    let o = try CommandLineOptions.parse(args)
    let r = try ConfigurationBuilder(environment: ["STREAM_KEY": "k"], cgroupLimit: nil).encoderSettingsResult(o).get()
    return (r.0, r.1, r.2)
}

private func refusal(_ args: [String]) throws -> String? {
    let o = try CommandLineOptions.parse(args)
    if case .failure(let e) = ConfigurationBuilder(environment: [:], cgroupLimit: nil).encoderSettingsResult(o) { return e.message }
    return nil
}

@Suite(.timeLimit(.minutes(1))) struct ServicePresetTests {
    /// The published numbers (docs/services.md names each page).
    @Test func publishedLimits() throws {
        let fb = try ServicePreset.named("facebook")
        // Facebook Live API reference: 1080p60 at 4500-9000 kbps, 1080p30 at 3000-6000.
        #expect(fb.maxVideoKbps(height: 1080, fps: 60) == 9000)
        #expect(fb.maxVideoKbps(height: 1080, fps: 30) == 6000)
        #expect(fb.maxVideoKbps(height: 720, fps: 60) == 6000)
        #expect(fb.maxVideoKbps(height: 720, fps: 30) == 4000)
        #expect(fb.maxVideoKbps(height: 480, fps: 30) == 2000)
        #expect(fb.maxVideoKbps(height: 360, fps: 30) == 1000)
        #expect(fb.maxAudioKbps == 256 && fb.url.hasPrefix("rtmps://"))
        let yt = try ServicePreset.named("youtube")
        #expect(yt.maxVideoKbps(height: 1080, fps: 60) == 10_000)
        #expect(yt.maxVideoKbps(height: 2160, fps: 60) == 40_000)
        #expect(yt.maxAudioKbps == 128)
        let tw = try ServicePreset.named("twitch")
        #expect(tw.maxVideoKbps(height: 1080, fps: 60) == 6000 && tw.maxAudioKbps == 320)
        #expect(tw.maxVideoKbps(height: 1440, fps: 30) == nil)
        let kick = try ServicePreset.named("kick")
        #expect(kick.maxVideoKbps(height: 1080, fps: 60) == 8500 && kick.maxAudioKbps == 160)
    }

    @Test func tiersAreWellFormed() {
        for s in ServicePreset.all {
            #expect(!s.tiers.isEmpty, "\(s.name)")
            // The last tier holds the largest size and rate, so any stream within them has a tier.
            #expect(s.tiers.last?.maxHeight == s.maxHeight && s.tiers.last?.maxFPS == s.maxFPS, "\(s.name)")
            for t in s.tiers {
                #expect(BroadcastLimits.videoBitrateKbps.contains(t.maxVideoKbps), "\(s.name) \(t)")
                #expect(BroadcastLimits.height.contains(t.maxHeight) && BroadcastLimits.fps.contains(t.maxFPS), "\(s.name) \(t)")
            }
            #expect(BroadcastLimits.aacBitrateKbps.contains(s.maxAudioKbps), "\(s.name)")
            #expect(s.keyframeSeconds == 2, "\(s.name)")
            for h in [360, 480, 720, 1080, s.maxHeight] where h <= s.maxHeight {
                for f in [24, 30, 60, s.maxFPS] where f <= s.maxFPS {
                    #expect(s.maxVideoKbps(height: h, fps: f) != nil, "\(s.name) \(h)p\(f)")
                }
            }
        }
    }

    @Test func facebookTakes1080p60() throws {
        let e = try encoder(["--service", "facebook", "--res", "1080p", "--fps", "60", "--video-bitrate", "12M"])
        #expect(e.video.fps == 60 && e.video.bitrateKbps == 9000)
        #expect(e.notes == ["note: facebook accepts at most 9000 kbps video; using that"])
        // The same request at 720p30 meets that size's limit.
        let small = try encoder(["--service", "facebook", "--res", "720p", "--video-bitrate", "12M"])
        #expect(small.video.bitrateKbps == 4000)
    }

    @Test func everyCapIsOneLineOfTheSameForm() throws {
        for s in ServicePreset.all {
            let e = try encoder(["--service", s.name, "--res", "1080p", "--fps", "60", "--video-bitrate", "50M",
                                 "--audio-bitrate", "320"])
            let video = s.maxVideoKbps(height: 1080, fps: 60)!
            var want = ["note: \(s.name) accepts at most \(video) kbps video; using that"]
            if s.maxAudioKbps < 320 { want.append("note: \(s.name) accepts at most \(s.maxAudioKbps) kbps audio; using that") }
            #expect(e.notes == want, "\(s.name)")
            #expect(e.video.bitrateKbps == video && e.audio.bitrateKbps == min(320, s.maxAudioKbps))
            // The VBV follows the capped rate: the cap is the stream's peak, not only its average.
            #expect(e.video.maxBitrateKbps <= video)
        }
    }

    @Test func refusesWhatNoTierHolds() throws {
        #expect(try refusal(["--service", "facebook", "--fps", "120"]) == "facebook accepts at most 60 fps")
        #expect(try refusal(["--service", "twitch", "--res", "2560x1440"]) == "twitch accepts at most 1080p")
        #expect(try refusal(["--service", "youtube", "--res", "3840x2160", "--fps", "60"]) == nil)
    }
}

@Suite(.timeLimit(.minutes(1))) struct VBVStartTests {
    /// The VBV starts with one frame's worth at the max rate, so the first second holds at most
    /// the max rate (x264's default 90 % let it carry up to 1.9 times the rate).
    @Test func initialFillIsOneFrame() {
        let s = VideoEncoderSettings(fps: 30, bitrateKbps: 6000)
        #expect(abs(s.vbvInitialFill - 1.0 / 30) < 1e-9)
        let small = VideoEncoderSettings(fps: 60, bitrateKbps: 1000, vbvBufferKbits: 2000)
        #expect(abs(small.vbvInitialFill - 1000.0 / 60 / 2000) < 1e-9)
        // A buffer smaller than one frame at the rate starts at x264's default.
        #expect(VideoEncoderSettings(fps: 1, bitrateKbps: 1000, vbvBufferKbits: 500).vbvInitialFill == 0.9)
    }
}
