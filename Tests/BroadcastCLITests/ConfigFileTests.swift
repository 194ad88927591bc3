#if canImport(Glibc)
import Glibc
#endif
import BroadcastKit
import Testing
@testable import BroadcastCLI

/// Writes `text` to a fresh file under /tmp and returns its path.
private func tempFile(_ text: String) -> String {
    var template = Array("/tmp/bk-config-test-XXXXXX".utf8CString)
    let fd = mkstemp(&template)
    precondition(fd >= 0)
    let bytes = Array(text.utf8)
    _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    close(fd)
    return String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

private func entries(_ text: String) throws(UsageError) -> [ConfigFile.Entry] {
    try ConfigFile.parse(Array(text.utf8)[...], path: "/c")
}

private func parseError(_ text: String) -> String? {
    do { _ = try entries(text); return nil } catch { return error.description }
}

private func load(_ config: String?, args: [String], env: [String: String] = [:]) throws -> SettingsLoader.Loaded {
    var args = args
    var cleanup: String?
    if let config {
        let path = tempFile(config)
        cleanup = path
        args = ["--config", path] + args
    } else {
        args = ["--config", "none"] + args
    }
    defer { if let cleanup { unlink(cleanup) } }
    let cli = try CommandLineOptions.parse(args)
    return try SettingsLoader(environment: env).load(arguments: args, cli: cli)
}

@Suite(.timeLimit(.minutes(1))) struct ConfigFileTests {
    @Test func parsesNameValueLines() throws {
        let e = try entries("# a comment\n\nservice = twitch\r\n  res=1080p  \nrecord = \"/tmp/a b.flv\"\nurl = rtmp://a/x\nurl = rtmp://b/y\n")
        #expect(e == [ConfigFile.Entry(name: "service", value: "twitch", line: 3),
                      ConfigFile.Entry(name: "res", value: "1080p", line: 4),
                      ConfigFile.Entry(name: "record", value: "/tmp/a b.flv", line: 5),
                      ConfigFile.Entry(name: "url", value: "rtmp://a/x", line: 6),
                      ConfigFile.Entry(name: "url", value: "rtmp://b/y", line: 7)])
        #expect(try entries("\u{FEFF}fps = 60\n") == [ConfigFile.Entry(name: "fps", value: "60", line: 1)])
    }

    @Test func refusesWithFileAndLine() {
        #expect(parseError("fps = 30\nkey = live_123") == "config /c:2: the stream key never goes in the config file: put it in "
                + "a file of its own (chmod 600) and set key-file = PATH, or use $STREAM_KEY")
        #expect(parseError("key=abc")?.contains("abc") == false)
        #expect(parseError("vidoe-bitrate = 9") == "config /c:1: unknown setting 'vidoe-bitrate'; did you mean video-bitrate?")
        #expect(parseError("frobnicate = 9") == "config /c:1: unknown setting 'frobnicate'")
        // A pasted key or URL on the left of `=` is not echoed.
        #expect(parseError("rtmp://live.example/app/sk_live_123 = x") == "config /c:1: unknown setting '(not shown: not an option name)'")
        #expect(parseError("sk_live_SECRET = x")?.contains("SECRET") == false)
        #expect(parseError("duration = 9") == "config /c:1: 'duration' is a command-line option only, not a config setting")
        #expect(parseError("res 1080p") == "config /c:1: expected 'name = value' (a long option without its dashes, e.g. res = 1080p)")
        #expect(parseError("res = 720p\nfps = 1\nres = 1080p") == "config /c:3: res is set again (first at line 1); set it once")
        #expect(parseError("res =") == "config /c:1: res has no value")
        #expect(parseError("res = 7\u{1B}20p") == "config /c:1: holds a control byte (a config file is text)")
        #expect(parseError("res = " + String(repeating: "x", count: 5000)) == "config /c:1: line longer than 4096 bytes")
        var bad = Array("res = ".utf8); bad.append(0xFF)
        #expect(throws: UsageError.self) { try ConfigFile.parse(bad[...], path: "/c") }
    }

    @Test func valuesGoThroughTheCommandLineParser() throws {
        let o = try ConfigFile.options(try entries("res = 1080p\nfps = 60\nvideo-bitrate = 4.5M\nno-mic = true\nquiet = false\n"
                                                   + "key-file = ~/k\nservice = youtube\n"), path: "/c", home: "/home/u")
        #expect(o.resolution == Resolution(width: 1920, height: 1080) && o.fps == 60 && o.videoKbps == 4500)
        #expect(o.noMic && !o.quiet)
        #expect(o.keyFile == "/home/u/k")
        #expect(o.service?.name == "youtube")
        #expect(o.origins["fps"] == .config(path: "/c", line: 2))
        // The library's ranges apply to the file as to the command line.
        #expect(throws: UsageError("config /c:1: --fps expects an integer in \(BroadcastLimits.fps.lowerBound)...\(BroadcastLimits.fps.upperBound), got '1000'")) {
            try ConfigFile.options(try entries("fps = 1000"), path: "/c", home: nil)
        }
        #expect(throws: UsageError("config /c:1: quiet takes true or false")) {
            try ConfigFile.options(try entries("quiet = yes"), path: "/c", home: nil)
        }
    }

    @Test func commandLineBeatsEnvironmentBeatsFile() throws {
        let file = "url = rtmp://file.example/app\nkey-file = /file-key\nres = 480p\nfps = 25\n"
        // The file alone.
        var l = try load(file, args: [])
        #expect(l.options.url == "rtmp://file.example/app" && l.options.keyFile == "/file-key" && l.options.fps == 25)
        #expect(l.options.origins["url"]?.isConfig == true)
        // The environment beats the file: $BROADCAST_URL replaces its url, $STREAM_KEY its key file.
        l = try load(file, args: [], env: ["BROADCAST_URL": "rtmp://env.example/app", "STREAM_KEY": "k"])
        #expect(l.options.urls.isEmpty && l.options.keyFile == nil)
        #expect(ConfigurationBuilder(environment: ["BROADCAST_URL": "rtmp://env.example/app"]).ingestURL(l.options)
                == "rtmp://env.example/app")
        // The command line beats both; a --url replaces the file's destinations, not adds to them.
        l = try load(file, args: ["--url", "rtmp://cli.example/app", "--fps", "50", "--key-file", "/cli-key"],
                     env: ["BROADCAST_URL": "rtmp://env.example/app", "STREAM_KEY": "k"])
        #expect(l.options.urls.map(\.url) == ["rtmp://cli.example/app"])
        #expect(l.options.fps == 50 && l.options.origins["fps"] == .commandLine)
        #expect(l.options.keyFile == "/cli-key")
        #expect(l.options.resolution == Resolution(width: 854, height: 480) && l.options.origins["res"]?.isConfig == true)
    }

    @Test func fileUrlsAddUp() throws {
        let l = try load("url = rtmp://a.example/app\nurl = rtmp://b.example/app,service=twitch\n", args: [])
        #expect(l.options.urls.map(\.url) == ["rtmp://a.example/app", "rtmp://b.example/app"])
        #expect(l.options.urls[1].service?.name == "twitch")
    }

    @Test func missingFiles() throws {
        // The default file need not exist; a --config file must.
        #expect(try ConfigFile.read("/nonexistent/broadcast/config", required: false) == nil)
        #expect(throws: UsageError("config /nonexistent/x: No such file or directory (errno 2)")) {
            try ConfigFile.read("/nonexistent/x", required: true)
        }
        #expect(throws: UsageError("config /tmp: not a regular file")) { try ConfigFile.read("/tmp", required: true) }
        let big = tempFile(String(repeating: "# padding\n", count: 7000))
        defer { unlink(big) }
        #expect(throws: UsageError("config \(big): larger than 64 KiB; a config file is a few lines")) {
            try ConfigFile.read(big, required: true)
        }
    }

    @Test func defaultPathFollowsXDG() {
        #expect(ConfigFile.defaultPath(environment: ["XDG_CONFIG_HOME": "/x", "HOME": "/h"]) == "/x/broadcast/config")
        // A relative XDG_CONFIG_HOME is invalid per the spec: ignored.
        #expect(ConfigFile.defaultPath(environment: ["XDG_CONFIG_HOME": "rel", "HOME": "/h"]) == "/h/.config/broadcast/config")
        #expect(ConfigFile.defaultPath(environment: [:]) == nil)
    }

    @Test func printConfigRedactsAndNamesOrigins() throws {
        let l = try load("service = twitch\nvideo-bitrate = 9000\n", args: ["--fps", "60"],
                         env: ["BROADCAST_URL": "rtmp://env.example/live/supersecretkey", "STREAM_KEY": "anothersecret"])
        let text = PrintConfig.render(l, environment: ["BROADCAST_URL": "rtmp://env.example/live/supersecretkey",
                                                       "STREAM_KEY": "anothersecret"]).text
        #expect(!text.contains("supersecretkey") && !text.contains("anothersecret"))
        #expect(text.contains("# environment $BROADCAST_URL"))
        #expect(text.contains("key = (set, not shown)"))
        #expect(text.contains("video-bitrate = 6000 (capped by the service; 9000 asked)"))
        #expect(text.split(separator: "\n").contains { $0.hasPrefix("fps = 60 ") && $0.hasSuffix("# command line") })
        #expect(text.split(separator: "\n").contains { $0.hasPrefix("service = twitch ") && $0.contains("# config /tmp/") })
        // A setting the run would refuse is said, and makes the exit 2.
        let refused = PrintConfig.render(try load(nil, args: ["--service", "twitch", "--res", "1920x1200"]), environment: [:])
        #expect(refused.refused && refused.text.contains("# these settings are refused: twitch accepts at most 1080p"))
    }
}
