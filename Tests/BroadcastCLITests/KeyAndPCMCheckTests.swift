#if canImport(Glibc)
import Glibc
#endif
import BroadcastCapture
import BroadcastKit
import Testing
@testable import BroadcastCLI

/// Stream-key shape and `--pcm` pairing: refused as usage errors that never echo the key.
@Suite(.timeLimit(.minutes(2))) struct KeyAndPCMCheckTests {
    private func failure(_ args: [String], env: [String: String] = [:]) throws -> ConfigurationError? {
        let b = ConfigurationBuilder(environment: env, makeSources: { _ in
            SourceFactory.Made(sources: [], hasVideo: true, hasAudio: true, note: nil)
        }, cgroupLimit: nil)
        if case .failure(let e) = b.build(try CommandLineOptions.parse(args)) { return e }
        return nil
    }

    @Test(arguments: [
        ("sk/evil", "'/'"), ("sk#frag", "'#'"), ("sk key", "whitespace"), ("sk\tkey", "whitespace"),
        ("sk\rkey", "a control character"), ("sk\nkey", "a control character"), ("sk\u{7F}", "a control character"),
    ])
    func badKeyCharactersAreUsageWithoutTheKey(key: String, what: String) throws {
        for (args, env, origin) in [(["--key", key], [String: String](), "--key"),
                                    ([], ["STREAM_KEY": key], "$STREAM_KEY")] {
            let e = try failure(args, env: env)
            #expect(e?.exitCode == .usage)
            #expect(e?.message == "\(origin): the stream key contains \(what); a key has no '/', '#', whitespace or control characters")
            #expect(e?.message.contains(key) == false)
        }
    }

    @Test func emptyKeyOnArgvIsUsage() throws {
        let e = try failure(["--key", ""])
        #expect(e?.exitCode == .usage)
        #expect(e?.message == "--key: the stream key is empty")
    }

    @Test func queryCharactersAreAllowed() throws {
        // Some services' keys carry parameters (name?a=1&b=2).
        #expect(try failure(["--key", "sk_1?s_bl=1&s_ps=1"]) == nil)
    }

    @Test func pcmNeedsY4MAndAValidFormat() throws {
        #expect(try failure(["--key", "k", "--pcm-format", "s16le:48000:2"])?.message == "--pcm-format needs --pcm PATH")
        #expect(try failure(["--key", "k", "--source", "test", "--pcm", "/dev/null"])?.message
                == "--pcm needs --source y4m:PATH (raw PCM is the audio of a Y4M video)")
        let bad = try failure(["--key", "k", "--source", "y4m:-", "--pcm", "-", "--pcm-format", "xx"])
        #expect(bad?.exitCode == .usage)
        #expect(bad?.message.contains("xx") == true)
        #expect(try failure(["--key", "k", "--source", "y4m:-", "--pcm", "-", "--pcm-format", "s16le:44100:1"]) == nil)
    }
}
