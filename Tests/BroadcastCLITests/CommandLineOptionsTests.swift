import BroadcastKit
import Testing
@testable import BroadcastCLI

/// The one-line message of the `UsageError` that parsing `args` throws, or nil if it parses.
func usageError(_ args: [String]) -> String? {
    do {
        _ = try CommandLineOptions.parse(args)
        return nil
    } catch let e as UsageError {
        return e.description
    } catch {
        return "unexpected \(error)"
    }
}

@Suite(.timeLimit(.minutes(2))) struct CommandLineOptionsTests {
    @Test func defaults() throws {
        let o = try CommandLineOptions.parse([])
        #expect(o.resolution == Resolution(width: 1280, height: 720))
        #expect(o.fps == 30)
        #expect(o.videoKbps == nil && o.audioKbps == nil)
        #expect(o.memoryBudget == nil)
        #expect(o.source == .auto)
        #expect(o.publish && !o.printMemoryPlan)
    }

    @Test func spacedAndEqualsForms() throws {
        let o = try CommandLineOptions.parse(["--res", "1080p", "--fps=60", "--source=y4m:-", "--url", "rtmp://h/app",
                                              "--audio-codec", "OPUS", "--no-publish", "--record", "x.flv"])
        #expect(o.resolution == Resolution(width: 1920, height: 1080))
        #expect(o.fps == 60)
        #expect(o.source == .y4m("-"))
        #expect(o.url == "rtmp://h/app")
        #expect(o.audioCodec == .opus)
        #expect(!o.publish && o.recordPath == "x.flv")
    }

    @Test func bitrateUnits() throws {
        #expect(try CommandLineOptions.parse(["--video-bitrate", "2500"]).videoKbps == 2500)
        #expect(try CommandLineOptions.parse(["--video-bitrate", "2500k"]).videoKbps == 2500)
        #expect(try CommandLineOptions.parse(["--video-bitrate=2.5M"]).videoKbps == 2500)
        #expect(try CommandLineOptions.parse(["--audio-bitrate", "160k"]).audioKbps == 160)
        #expect(try CommandLineOptions.parse(["--audio-bitrate", "96"]).audioKbps == 96)
    }

    @Test func badBitratesAreOneLine() {
        let m = usageError(["--video-bitrate", "fast"])
        #expect(m == "--video-bitrate expects a bitrate in 100...50000 kbps (like 2500, 2500k or 2.5M), got 'fast'")
        #expect(usageError(["--video-bitrate", "-5"]) != nil)
        #expect(usageError(["--video-bitrate", "60M"])?.hasPrefix("--video-bitrate expects a bitrate in 100...50000") == true)
        #expect(usageError(["--audio-bitrate", "1M"])?.hasPrefix("--audio-bitrate expects") == true)
        #expect(usageError(["--audio-bitrate", "8k"]) != nil)
    }

    @Test func sizeUnits() throws {
        #expect(try CommandLineOptions.parse(["--memory-budget", "64M"]).memoryBudget == 64 << 20)
        #expect(try CommandLineOptions.parse(["--memory-budget", "52428800"]).memoryBudget == 52_428_800)
        #expect(try CommandLineOptions.parse(["--memory-budget", "1G"]).memoryBudget == 1 << 30)
        #expect(try CommandLineOptions.parse(["--record-min-free", "512K"]).recordMinFree == 512 << 10)
        #expect(try CommandLineOptions.parse(["--record-min-free", "0"]).recordMinFree == 0)
    }

    @Test func badSizesAreOneLine() {
        #expect(usageError(["--memory-budget", "lots"])
                == "--memory-budget expects a size like 50M, 512K, 1G or 52428800 (bytes), got 'lots'")
        #expect(usageError(["--record-min-free", "-1M"])?.hasPrefix("--record-min-free expects a size") == true)
        #expect(usageError(["--memory-budget", "50X"]) != nil)
    }

    @Test(arguments: [
        ["--res", "720p", "--res=1080p"],
        ["--bitrate-follows", "primary", "--bitrate-follows", "slowest"],
        ["--video-bitrate", "2500", "--video-bitrate", "3000"],
        ["--memory-budget", "50M", "--memory-budget", "60M"],
        ["--stats-json", "a", "--stats-json", "a"],
        ["--source", "test", "--source", "test"],
    ])
    func repeatedValuedFlagIsRefused(args: [String]) {
        let name = String(args[0].prefix { $0 != "=" })
        #expect(usageError(args) == "\(name) given twice; give it once")
    }

    /// `--url` repeats: each is one destination, in order, with its own key file and service.
    @Test func urlRepeatsWithPerDestinationSettings() throws {
        let o = try CommandLineOptions.parse(["--url", "rtmp://a/live", "--url=rtmp://b/app,key-file=/k/b,service=twitch",
                                              "--require-all", "--bitrate-follows", "slowest"])
        #expect(o.urls.map(\.url) == ["rtmp://a/live", "rtmp://b/app"])
        #expect(o.urls[0].keyFile == nil && o.urls[0].service == nil)
        #expect(o.urls[1].keyFile == "/k/b" && o.urls[1].service?.name == "twitch")
        #expect(o.url == "rtmp://a/live" && o.requireAll && o.bitrateFollows == .slowest)
    }

    @Test func badDestinationSettingsAreOneLineWithoutTheirValue() {
        #expect(usageError(["--url", "rtmp://a/live,sk_live_secret"])
                == "--url: after the URL only key-file=PATH and service=NAME may follow a comma")
        #expect(usageError(["--url", "rtmp://a/live,key=sk_live_secret"])
                == "--url: unknown setting 'key=' (expected key-file=PATH or service=NAME)")
        #expect(usageError(["--url", "rtmp://a/live,key-file=a,key-file=b"]) == "--url: key-file= needs one value, given once")
        #expect(usageError(["--url", ",service=twitch"]) == "--url needs a URL before its ,key-file= or ,service= settings")
        #expect(usageError(["--url", "rtmp://a/live,service=nope"])?.hasPrefix("--service expects one of") == true)
        #expect(usageError(["--bitrate-follows", "fastest"]) == "--bitrate-follows expects primary or slowest, got 'fastest'")
    }

    @Test func repeatedKeyIsRefusedWithoutEchoingIt() {
        let m = usageError(["--key", "sk_live_secret1", "--key", "sk_live_secret2"])
        #expect(m == "--key given twice; give it once")
    }

    @Test func switchesMayRepeatAndKeyAndKeyFileCoexist() throws {
        let o = try CommandLineOptions.parse(["--quiet", "--quiet", "--key", "k", "--key-file", "f"])
        #expect(o.quiet && o.keyFromArgv == "k" && o.keyFile == "f")
    }

    @Test func otherBadUsage() {
        #expect(usageError(["--frobnicate"]) == "unknown option '--frobnicate' (see --help)")
        #expect(usageError(["stray"])?.hasPrefix("unexpected argument 'stray'") == true)
        #expect(usageError(["--url"]) == "--url needs a value")
        #expect(usageError(["--quiet=yes"]) == "--quiet takes no value")
        #expect(usageError(["--fps", "0"]) != nil)
        #expect(usageError(["--res", "99p"]) != nil)
        #expect(usageError(["--res", "641x360"]) != nil)
        #expect(usageError(["--service", "myspace"])?.hasPrefix("--service expects one of twitch") == true)
        #expect(usageError(["--test-gap-at", "2"]) == "--test-gap-at and --test-gap-ms go together")
    }

    @Test func servicePresetsByName() throws {
        #expect(try CommandLineOptions.parse(["--service", "Twitch"]).service?.name == "twitch")
        for s in ServicePreset.all {
            #expect(try CommandLineOptions.parse(["--service", s.name]).service?.url == s.url)
        }
    }
}
