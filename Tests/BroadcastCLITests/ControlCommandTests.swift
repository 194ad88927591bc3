import Testing
@testable import BroadcastCLI

/// The control socket's request lines: words or a flat JSON object; anything else an error.
@Suite(.timeLimit(.minutes(2))) struct ControlCommandTests {
    @Test func wordsAndJSONMeanTheSame() throws {
        #expect(try ControlCommand.parse("save-replay").get() == .saveReplay(seconds: nil, path: nil))
        #expect(try ControlCommand.parse("save-replay 20 /tmp/a.mp4").get() == .saveReplay(seconds: 20, path: "/tmp/a.mp4"))
        #expect(try ControlCommand.parse("save-replay /tmp/a.mp4").get() == .saveReplay(seconds: nil, path: "/tmp/a.mp4"))
        #expect(try ControlCommand.parse(#"{"cmd":"save-replay","seconds":20,"path":"/tmp/a \"b\".mp4"}"#).get()
                == .saveReplay(seconds: 20, path: "/tmp/a \"b\".mp4"))
        #expect(try ControlCommand.parse("set-bitrate 1500").get() == .setBitrate(kbps: 1500))
        #expect(try ControlCommand.parse(#" { "cmd" : "set-bitrate", "kbps" : 1500 } "#).get() == .setBitrate(kbps: 1500))
        #expect(try ControlCommand.parse("stats\r").get() == .stats)
        #expect(try ControlCommand.parse("keyframe").get() == .keyframe)
        #expect(try ControlCommand.parse("stop").get() == .stop)
        #expect(try ControlCommand.parse(#"{"cmd":"subscribe"}"#).get() == .subscribe)
    }

    @Test func garbageIsAnErrorNeverACrash() {
        let bad = ["", "   ", "frobnicate", "save-replay -3", "save-replay 0", "set-bitrate", "set-bitrate 5",
                   "set-bitrate 1e9", "{", "{}", #"{"cmd":[1]}"#, #"{"cmd":"stats""#, #"{"cmd":"stats"} trailing"#,
                   #"{"cmd":"st\q"}"#, "\u{0}\u{1}\u{FFFD}", String(repeating: "{", count: 5000)]
        for line in bad {
            if case .success(let c) = ControlCommand.parse(line) { Issue.record("'\(line.prefix(20))' parsed as \(c)") }
        }
    }

    @Test func quotingRoundTripsThroughTheReader() {
        let s = "a \"quoted\" \\ path\nwith\ttabs"
        #expect(FlatJSON.parse("{\"k\":\(FlatJSON.quote(s))}")?["k"] == s)
    }
}
