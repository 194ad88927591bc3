import Testing
import BroadcastKit

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
        #expect(try ControlCommand.parse("version").get() == .version)
    }

    @Test func garbageIsAnErrorNeverACrash() {
        let bad = ["", "   ", "frobnicate", "save-replay -3", "save-replay 0", "set-bitrate", "set-bitrate 5",
                   "set-bitrate 1e9", "{", "{}", #"{"cmd":[1]}"#, #"{"cmd":"stats""#, #"{"cmd":"stats"} trailing"#,
                   #"{"cmd":"st\q"}"#, "\u{0}\u{1}\u{FFFD}", String(repeating: "{", count: 5000)]
        for line in bad {
            if case .success(let c) = ControlCommand.parse(line) { Issue.record("'\(line.prefix(20))' parsed as \(c)") }
        }
    }

    @Test func duplicateKeysAreRefused() {
        // The last one used to win: {"cmd":"stats","cmd":"stop"} stopped the stream.
        for line in [#"{"cmd":"stats","cmd":"stop"}"#, #"{"cmd":"stop","cmd":"stop"}"#,
                     #"{"cmd":"set-bitrate","kbps":1000,"kbps":9000}"#, #"{"id":1,"cmd":"stats","id":2}"#] {
            guard case .failure(let e) = ControlCommand.parseRequest(line) else {
                Issue.record("'\(line)' was accepted"); continue
            }
            #expect(e.message.hasPrefix("duplicate key"), "\(e.message)")
        }
        #expect(FlatJSON.parse(#"{"a":1,"a":1}"#) == nil)
    }

    @Test func theRequestIdIsKeptAsGiven() throws {
        #expect(try ControlCommand.parseRequest(#"{"cmd":"stats","id":7}"#).get() == ControlRequest(command: .stats, id: "7"))
        #expect(try ControlCommand.parseRequest(#"{"id":"a\"b","cmd":"version"}"#).get()
                == ControlRequest(command: .version, id: #""a\"b""#))
        #expect(try ControlCommand.parseRequest("stats").get() == ControlRequest(command: .stats, id: nil))
        // An unusable id is an error; a readable one is carried by the error answer.
        guard case .failure(let bad) = ControlCommand.parseRequest(#"{"cmd":"stats","id":1.5}"#) else { Issue.record("1.5"); return }
        #expect(bad.id == nil)
        guard case .failure(let e) = ControlCommand.parseRequest(#"{"cmd":"frob","id":"x"}"#) else { Issue.record("frob"); return }
        #expect(e.id == #""x""#)
        let long = String(repeating: "i", count: ControlRequest.maxIDBytes + 1)
        if case .success = ControlCommand.parseRequest("{\"cmd\":\"stats\",\"id\":\"\(long)\"}") { Issue.record("long id") }
    }

    @Test func quotingRoundTripsThroughTheReader() {
        let s = "a \"quoted\" \\ path\nwith\ttabs"
        #expect(FlatJSON.parse("{\"k\":\(FlatJSON.quote(s))}")?["k"] == s)
    }
}
