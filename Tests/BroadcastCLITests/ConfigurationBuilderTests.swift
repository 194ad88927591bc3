#if canImport(Glibc)
import Glibc
#endif
import BroadcastCapture
import BroadcastKit
import Testing
@testable import BroadcastCLI

/// A source that only reports a planned size; never started by these tests.
private final class PlannedSource: CaptureSource {
    let plannedResidentBytes: Int
    init(_ bytes: Int) { plannedResidentBytes = bytes }
    var description: String { "planned \(plannedResidentBytes)" }
    func start(into sink: SampleBufferSink) throws(CaptureError) {}
    func stop() {}
    func waitUntilFinished(timeoutNanoseconds: Int64) -> Bool { true }
    var error: CaptureError? { nil }
}

/// A builder whose sources are fakes, so no test touches PipeWire or a portal.
private func builder(_ env: [String: String] = [:], sources: [CaptureSource] = [PlannedSource(1000)],
                     note: String? = nil, cgroupLimit: CgroupMemoryLimit? = nil) -> ConfigurationBuilder {
    var b = ConfigurationBuilder(environment: env) { _ in
        SourceFactory.Made(sources: sources, hasVideo: true, hasAudio: true, note: note)
    }
    b.cgroupLimit = cgroupLimit
    return b
}

private func options(_ args: [String]) throws -> CommandLineOptions { try CommandLineOptions.parse(args) }

private func rtmp(_ c: BroadcastConfiguration) -> (url: String, key: String)? {
    for d in c.destinations { if case .rtmp(let url, let key) = d { return (url, key) } }
    return nil
}

private func built(_ b: ConfigurationBuilder, _ args: [String]) throws -> BuiltConfiguration {
    try b.build(try options(args)).get()
}

private func failure(_ b: ConfigurationBuilder, _ args: [String]) throws -> ConfigurationError? {
    if case .failure(let e) = b.build(try options(args)) { return e }
    return nil
}

/// A fresh temporary directory (removed by the caller).
private func tempDir() -> String {
    var template = Array("/tmp/bcast-cli-test-XXXXXX".utf8CString)
    return template.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)) }
}

private func write(_ text: String, to path: String) {
    let f = fopen(path, "w")!
    fputs(text, f)
    fclose(f)
}

@Suite(.timeLimit(.minutes(2))) struct ConfigurationBuilderTests {
    @Test func defaultsStreamToTheLocalIngest() throws {
        let b = try built(builder(["STREAM_KEY": "envkey"]), [])
        #expect(rtmp(b.configuration)?.url == ConfigurationBuilder.defaultURL)
        #expect(rtmp(b.configuration)?.key == "envkey")
        #expect(b.configuration.video.width == 1280 && b.configuration.video.height == 720)
        #expect(b.configuration.video.bitrateKbps == 2500)
        #expect(b.configuration.video.maxBitrateKbps == 2500 && b.configuration.video.vbvBufferKbits == 2500)
        #expect(b.configuration.audio == AudioEncoderSettings(codec: .aac, bitrateKbps: 128))
        #expect(b.configuration.memoryBudgetBytes == 50 << 20)
        #expect(b.configuration.captureReserveBytes == 1000)
        // The send queue is sized by the library from the bitrates (the CLI only maps values).
        #expect(b.configuration.sendQueueBytes == CongestionPolicy.sendQueueBytes(videoKbps: 2500, audioKbps: 128))
    }

    @Test func keyPrecedenceArgvThenFileThenEnvironment() throws {
        let dir = tempDir()
        defer { _ = system("rm -rf '\(dir)'") }
        let file = dir + "/key.txt"
        write("  filekey \n second line\n", to: file)
        let env = ["STREAM_KEY": "envkey"]
        #expect(rtmp(try built(builder(env), ["--key", "argvkey", "--key-file", file]).configuration)?.key == "argvkey")
        #expect(rtmp(try built(builder(env), ["--key-file", file]).configuration)?.key == "filekey")
        #expect(rtmp(try built(builder(env), []).configuration)?.key == "envkey")
    }

    @Test func unreadableKeyFileIsUsage() throws {
        let e = try failure(builder(["STREAM_KEY": "envkey"]), ["--key-file", "/nonexistent/key"])
        #expect(e?.exitCode == .usage)
        #expect(e?.message.hasPrefix("--key-file /nonexistent/key:") == true)
    }

    @Test func missingKeyIsUsageAndEmptyEnvironmentCountsAsUnset() throws {
        for env in [[:], ["STREAM_KEY": ""]] {
            let e = try failure(builder(env), [])
            #expect(e?.exitCode == .usage)
            #expect(e?.message.hasPrefix("no stream key") == true)
        }
    }

    @Test func keyInTheURLIsEnough() throws {
        let b = try built(builder(), ["--url", "rtmp://h/app/inlinekey"])
        #expect(rtmp(b.configuration)?.url == "rtmp://h/app/inlinekey")
    }

    @Test func memoryPlanNeedsNoKey() throws {
        let b = try built(builder(), ["--print-memory-plan"])
        #expect(rtmp(b.configuration)?.key == "")
    }

    @Test func urlPrecedence() throws {
        let env = ["STREAM_KEY": "k", "BROADCAST_URL": "rtmp://env/app"]
        #expect(rtmp(try built(builder(env), ["--url", "rtmp://flag/app", "--service", "twitch"]).configuration)?.url
                == "rtmp://flag/app")
        #expect(rtmp(try built(builder(env), ["--service", "twitch"]).configuration)?.url == "rtmp://env/app")
        #expect(rtmp(try built(builder(["STREAM_KEY": "k", "BROADCAST_URL": ""]), ["--service", "twitch"]).configuration)?.url
                == "rtmp://live.twitch.tv/app")
    }

    /// Each `--url` is one destination in order (then the recording); a key file of its own
    /// wins over the shared key, and the same stream twice is refused.
    @Test func severalDestinationsWithTheirOwnKeys() throws {
        let dir = tempDir()
        defer { _ = unlink(dir + "/b.key"); _ = rmdir(dir) }
        write("keyB\n", to: dir + "/b.key")
        let b = try built(builder(["STREAM_KEY": "shared"]),
                          ["--url", "rtmp://a/live", "--url", "rtmp://b/live,key-file=\(dir)/b.key",
                           "--require-all", "--bitrate-follows", "slowest"])
        let c = b.configuration
        var got: [String] = []
        for d in c.destinations { if case .rtmp(let url, let key) = d { got.append("\(url) \(key)") } }
        #expect(got == ["rtmp://a/live shared", "rtmp://b/live keyB"])
        #expect(c.requireAllDestinations && c.bitrateFollows == .slowest)

        let same = try failure(builder(["STREAM_KEY": "k"]), ["--url", "rtmp://a/live", "--url", "rtmp://a/live"])
        #expect(same?.exitCode == .usage)
        #expect(same?.message == "--url: destination 2 (rtmp://a/live) repeats an earlier one with the same key")
        let noKey = try failure(builder(), ["--url", "rtmp://a/live/inline", "--url", "rtmp://b/live"])
        #expect(noKey?.message.hasPrefix("no stream key for destination 2 (rtmp://b/live)") == true)
    }

    /// One encode feeds every destination, so the strictest service's limits apply.
    @Test func strictestServiceLimitsTheSharedEncode() throws {
        let b = try built(builder(["STREAM_KEY": "k"]),
                          ["--video-bitrate", "7500", "--url", "rtmp://a/live,service=kick", "--url", "rtmp://b/live,service=twitch"])
        #expect(b.configuration.video.bitrateKbps == 6000)
        let e = try failure(builder(["STREAM_KEY": "k"]), ["--res", "1080p", "--fps", "120", "--url", "rtmp://a/live,service=facebook"])
        #expect(e?.message == "facebook accepts at most 60 fps")
    }

    @Test func badURLIsUsage() throws {
        // http(s):// is a WHIP endpoint now (issue 27); other schemes are still usage errors.
        let e = try failure(builder(["STREAM_KEY": "k"]), ["--url", "ftp://example.com/live"])
        #expect(e?.exitCode == .usage)
        let w = try failure(builder(["STREAM_KEY": "k"]), ["--url", "https://user:pw@example.com/whip"])
        #expect(w?.exitCode == .usage)
    }

    @Test func whipURLPicksOpusAndRefusesAAC() throws {
        let b = try built(builder(["STREAM_KEY": "k"]), ["--url", "https://example.com/whip/live"])
        #expect(b.configuration.audio.codec == .opus)
        guard case .whip(let url, let token) = b.configuration.destinations.first else {
            Issue.record("expected a WHIP destination")
            return
        }
        #expect(url == "https://example.com/whip/live" && token == "k")
        let e = try failure(builder(["STREAM_KEY": "k"]), ["--url", "https://example.com/whip", "--audio-codec", "aac"])
        #expect(e?.exitCode == .usage)
        #expect(e?.message.contains("Opus") == true)
    }

    @Test func servicePresetCapsBitratesAndSetsKeyframes() throws {
        let b = try built(builder(["STREAM_KEY": "k"]), ["--service", "twitch", "--video-bitrate", "8M", "--audio-bitrate", "320k"])
        #expect(b.configuration.video.bitrateKbps == 6000)
        #expect(b.configuration.audio.bitrateKbps == 320)   // Twitch takes AAC up to 320 kbps
        #expect(b.configuration.video.keyframeIntervalSeconds == 2)
        #expect(b.notices == ["note: twitch accepts at most 6000 kbps video; using that"])
        // Every cap is announced the same way, one line each (the audio cap was silent).
        let y = try built(builder(["STREAM_KEY": "k"]), ["--service", "youtube", "--video-bitrate", "12M", "--audio-bitrate", "320k"])
        #expect(y.configuration.video.bitrateKbps == 8000 && y.configuration.audio.bitrateKbps == 128)
        #expect(y.notices == ["note: youtube accepts at most 8000 kbps video; using that",
                              "note: youtube accepts at most 128 kbps audio; using that"])
    }

    @Test func servicePresetRefusesWhatItCannotCarry() throws {
        let fps = try failure(builder(["STREAM_KEY": "k"]), ["--service", "facebook", "--fps", "120"])
        #expect(fps == ConfigurationError(.usage, "facebook accepts at most 60 fps"))
        let res = try failure(builder(["STREAM_KEY": "k"]), ["--service", "twitch", "--res", "2560x1440"])
        #expect(res == ConfigurationError(.usage, "twitch accepts at most 1080p"))
    }

    @Test func sizesAndBitratesReachTheConfiguration() throws {
        let b = try built(builder(["STREAM_KEY": "k"]), ["--res", "1080p", "--fps", "60", "--video-bitrate", "4.5M",
                                                         "--audio-codec", "opus", "--memory-budget", "64M",
                                                         "--x264-threads", "3"])
        #expect(b.configuration.video.width == 1920 && b.configuration.video.height == 1080 && b.configuration.video.fps == 60)
        #expect(b.configuration.video.bitrateKbps == 4500)
        #expect(b.configuration.video.threads == 3)
        #expect(b.configuration.audio == AudioEncoderSettings(codec: .opus, bitrateKbps: 96))
        #expect(b.configuration.memoryBudgetBytes == 64 << 20)
        #expect(b.configuration.memoryBudgetSource == "--memory-budget")
    }

    /// In a container the pod's limit is the contract: without --memory-budget the budget shrinks
    /// to the cgroup limit less headroom, and says so; an explicit budget still wins.
    @Test func defaultBudgetFollowsTheCgroupLimit() throws {
        let pod = CgroupMemoryLimit(version: 1, limitBytes: 40 << 20, file: "/sys/fs/cgroup/memory/memory.limit_in_bytes")
        let b = try built(builder(["STREAM_KEY": "k"], cgroupLimit: pod), [])
        #expect(b.configuration.memoryBudgetBytes == 77 << 19)   // 40 MiB less 1.5 MiB of kernel memory
        #expect(b.configuration.memoryBudgetSource.hasPrefix("cgroup v1 limit 40.0 MB"))
        // A recording's dirty page cache is charged to the cgroup too: 4 MiB more kept out.
        let rec = try built(builder(["STREAM_KEY": "k"], cgroupLimit: pod), ["--record", "/tmp/bk-cfg-test.flv", "--record-min-free", "0", "--no-publish"])
        #expect(rec.configuration.memoryBudgetBytes == 69 << 19)
        let explicit = try built(builder(["STREAM_KEY": "k"], cgroupLimit: pod), ["--memory-budget", "64M"])
        #expect(explicit.configuration.memoryBudgetBytes == 64 << 20)
        let roomy = CgroupMemoryLimit(version: 2, limitBytes: 1 << 30, file: "/sys/fs/cgroup/memory.max")
        #expect(try built(builder(["STREAM_KEY": "k"], cgroupLimit: roomy), []).configuration.memoryBudgetBytes == 50 << 20)
    }

    @Test func defaultBitrateFollowsSizeAndRate() throws {
        #expect(try built(builder(["STREAM_KEY": "k"]), ["--res", "360p"]).configuration.video.bitrateKbps == 800)
        #expect(try built(builder(["STREAM_KEY": "k"]), ["--res", "1080p", "--fps", "60"]).configuration.video.bitrateKbps == 6750)
    }

    @Test func aacAbove320IsRefused() throws {
        let e = try failure(builder(["STREAM_KEY": "k"]), ["--audio-bitrate", "384k"])
        #expect(e == ConfigurationError(.usage, "--audio-bitrate for AAC is at most 320"))
        let opus = try built(builder(["STREAM_KEY": "k"]), ["--audio-codec", "opus", "--audio-bitrate", "384k"])
        #expect(opus.configuration.audio.bitrateKbps == 384)
    }

    @Test func noPublishNeedsARecording() throws {
        #expect(try failure(builder(), ["--no-publish"])?.message == "nothing to do: --no-publish needs --record PATH or --replay-seconds N")
        let dir = tempDir()
        defer { _ = system("rm -rf '\(dir)'") }
        let b = try built(builder(), ["--no-publish", "--record", dir + "/out.flv", "--record-min-free", "0"])
        #expect(rtmp(b.configuration) == nil)
        #expect(b.configuration.destinations.count == 1)
    }

    @Test func unwritableOutputPathsAreRefusedBeforeSources() throws {
        let dir = tempDir()
        defer { _ = system("rm -rf '\(dir)'") }
        let file = dir + "/plain"
        write("x", to: file)
        var made = false
        let b = ConfigurationBuilder(environment: ["STREAM_KEY": "k"]) { _ in
            made = true
            return SourceFactory.Made(sources: [], hasVideo: true, hasAudio: true, note: nil)
        }
        let cases: [([String], String)] = [
            (["--stats-json", "/nonexistent-dir/stats.jsonl"], "--stats-json /nonexistent-dir/stats.jsonl: directory /nonexistent-dir:"),
            (["--stats-json", file + "/stats.jsonl"], "--stats-json \(file)/stats.jsonl:"),
            (["--stats-json", dir], "--stats-json \(dir): is a directory"),
            (["--record", "/nonexistent-dir/out.flv", "--record-min-free", "0"], "--record /nonexistent-dir/out.flv:"),
        ]
        for (args, prefix) in cases {
            let e = try failure(b, args)
            #expect(e?.exitCode == .usage, "\(args)")
            #expect(e?.message.hasPrefix(prefix) == true, "\(args): \(e?.message ?? "no error")")
        }
        #expect(!made, "sources were made despite a bad output path")
        #expect(try built(builder(["STREAM_KEY": "k"]), ["--stats-json", dir + "/stats.jsonl"]).sources.count == 1)
    }

    @Test func captureErrorsMapToExitCodes() throws {
        func failing(_ error: Error) -> ConfigurationBuilder {
            ConfigurationBuilder(environment: ["STREAM_KEY": "k"]) { _ in throw error }
        }
        #expect(try failure(failing(CaptureError(.denied, "portal: denied")), [])
                == ConfigurationError(.connect, "portal: denied"))
        #expect(try failure(failing(CaptureError(.unavailable, "no PipeWire")), [])
                == ConfigurationError(.usage, "no PipeWire"))
        #expect(try failure(failing(UsageError("--source screen-node needs --screen-node")), [])
                == ConfigurationError(.usage, "--source screen-node needs --screen-node"))
    }

    @Test func captureReserveIsTheSumOverSources() throws {
        let b = try built(builder(["STREAM_KEY": "k"], sources: [PlannedSource(3000), PlannedSource(4096)]), [])
        #expect(b.configuration.captureReserveBytes == 7096)
    }

    @Test func sourceNoteIsShownUnlessQuiet() throws {
        let loud = try built(builder(["STREAM_KEY": "k"], note: "using the test source"), [])
        #expect(loud.notices == ["using the test source"])
        let quiet = try built(builder(["STREAM_KEY": "k"], note: "using the test source"), ["--quiet"])
        #expect(quiet.notices.isEmpty)
    }

    @Test func realFactoryTestSourcePlansItsCanvas() throws {
        let i420 = try built(ConfigurationBuilder(environment: ["STREAM_KEY": "k"]), ["--source", "test", "--res", "360p"])
        #expect(i420.configuration.captureReserveBytes == 640 * 360 * 3 / 2)
        let bgrx = try built(ConfigurationBuilder(environment: ["STREAM_KEY": "k"]),
                             ["--source", "test", "--res", "360p", "--test-pixel-format", "bgrx"])
        #expect(bgrx.configuration.captureReserveBytes == 640 * 360 * 4)
        // The test source is 48 kHz: its lanes plan no 44.1 kHz resampler (issue 23: the plan's
        // audio line reserved 1.8 MB that such a run never touches).
        #expect(!i420.configuration.audioMayNeedResampling)
    }

    @Test func realFactoryY4MAndPCMPlanTheirBuffers() throws {
        let dir = tempDir()
        defer { _ = system("rm -rf '\(dir)'") }
        write("YUV4MPEG2 W320 H240 F30:1 C420jpeg\n", to: dir + "/in.y4m")
        write("", to: dir + "/in.pcm")
        let b = try built(ConfigurationBuilder(environment: ["STREAM_KEY": "k"]),
                          ["--source", "y4m:\(dir)/in.y4m", "--pcm", dir + "/in.pcm", "--pcm-format", "s16le:48000:2"])
        // One 320x240 I420 frame plus 1024 stereo s16 frames.
        #expect(b.configuration.captureReserveBytes == 320 * 240 * 3 / 2 + 1024 * 4)
        #expect(b.configuration.hasVideo && b.configuration.hasAudio)
        #expect(!b.configuration.audioMayNeedResampling, "48 kHz PCM needs no resampler")
        let cd = try built(ConfigurationBuilder(environment: ["STREAM_KEY": "k"]),
                           ["--source", "y4m:\(dir)/in.y4m", "--pcm", dir + "/in.pcm", "--pcm-format", "s16le:44100:2"])
        #expect(cd.configuration.audioMayNeedResampling, "44.1 kHz PCM is resampled, and planned")
    }
}
