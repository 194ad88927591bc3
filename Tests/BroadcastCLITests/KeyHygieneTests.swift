#if canImport(Glibc)
import Glibc
#endif
import BroadcastKit
import Testing
@testable import BroadcastCLI

/// Issue 22: a key inside a URL obeys `--key`'s rules and is scrubbed from argv; key files are
/// bounded text; query strings never reach a message.
@Suite(.timeLimit(.minutes(1))) struct KeyHygieneTests {
    private func failure(_ args: [String], env: [String: String] = [:]) throws -> ConfigurationError? {
        let b = ConfigurationBuilder(environment: env, makeSources: { _ in
            SourceFactory.Made(sources: [], hasVideo: true, hasAudio: true, note: nil)
        }, cgroupLimit: nil)
        if case .failure(let e) = b.build(try CommandLineOptions.parse(args)) { return e }
        return nil
    }

    @Test func aKeyInTheURLPathObeysTheKeyRules() throws {
        let e = try failure(["--url", "rtmp://h/live/sk/evil"])
        #expect(e?.exitCode == .usage)
        #expect(e?.message == "--url (the key in its path): the stream key contains '/'; "
                + "a key has no '/', '#', whitespace or control characters")
        let env = try failure([], env: ["BROADCAST_URL": "rtmp://h/live/sk#frag"])
        #expect(env?.message.hasPrefix("$BROADCAST_URL (the key in its path): the stream key contains '#'") == true)
        // With a key given elsewhere the URL's path is an application instance, not a key.
        #expect(try failure(["--url", "rtmp://h/live/inst/x", "--key", "good"]) == nil)
        #expect(try failure(["--key", String(repeating: "k", count: ConfigurationBuilder.maxKeyBytes + 1)])?.message
                == "--key: the stream key is longer than 1024 bytes")
    }

    @Test func keyFileContent() {
        func parse(_ bytes: [UInt8]) -> Result<String, KeyFile.Refusal> { KeyFile.parse(bytes[...]) }
        #expect(parse([0xEF, 0xBB, 0xBF] + Array("sk_abc\r\n".utf8)) == .success("sk_abc"))
        #expect(parse(Array("  sk_abc \nsecond line\n".utf8)) == .success("sk_abc"))
        #expect(parse([0x63, 0xE9, 0x0A]) == .failure(.notUTF8))
        #expect(parse(Array("sk\n".utf8) + [0x00]) == .failure(.controlByte))
        #expect(parse([0x1B] + Array("[2J".utf8)) == .failure(.controlByte))
        #expect(parse([]) == .failure(.empty))
        #expect(parse([0xEF, 0xBB, 0xBF]) == .failure(.empty))
        #expect(parse(Array(" \n".utf8)) == .failure(.noKey))
        #expect(parse(Array("clé\n".utf8)) == .success("clé"))
    }

    @Test func urlSecretsAreFoundForArgv() {
        let url = "rtmp://h:1935/live/sk_abc"
        #expect(SecretScrubber.urlSecretRange(url) == (url.utf8.count - 6)..<url.utf8.count)
        let query = "rtmp://h/live?token=t1"
        #expect(SecretScrubber.urlSecretRange(query) == 14..<query.utf8.count)
        #expect(SecretScrubber.urlSecretRange("rtmp://h/live") == nil)
    }

    @Test func argvScrubStarsOnlyTheSecrets() {
        let args = ["broadcast", "--url", "rtmp://h/live/sk_abc,service=twitch", "--url=rtmp://h/app?token=t1",
                    "--key", "k1", "--res", "k1"]
        let urls = ["rtmp://h/live/sk_abc", "rtmp://h/app?token=t1"]
        var storage = args.map { strdup($0) }
        storage.withUnsafeMutableBufferPointer { argv in
            SecretScrubber.scrubArgv(argv.baseAddress!, count: argv.count, key: "k1", urlKeys: urls)
        }
        let after = storage.map { String(cString: $0!) }
        storage.forEach { free($0) }
        #expect(after == ["broadcast", "--url", "rtmp://h/live/******,service=twitch", "--url=rtmp://h/app?********",
                          "--key", "**", "--res", "k1"])
    }

    @Test func aFIFOAsCAFileIsRefusedWithoutBlocking() throws {
        let path = "/tmp/bk-ca-fifo-\(getpid())"
        mkfifo(path, 0o600)
        defer { unlink(path) }
        #expect(throws: UsageError.self) { _ = try CommandLineOptions.parse(["--ca-file", path]) }
        do { _ = try CommandLineOptions.parse(["--ca-file", path]) } catch {
            #expect("\(error)" == "--ca-file \(path): not a regular file")
        }
    }

    @Test func queryStringsAreRedacted() throws {
        let u = try RTMPURL(parsing: "rtmp://h/live?token=secret/sk")
        #expect(!u.redacted.contains("secret"))
        #expect(RTMPURL.redactingQuery("rtmp://h/live?token=secret") == "rtmp://h/live?****")
        #expect(try RTMPURL(parsing: "rtmp://h/live?token=secret").redacted == "rtmp://h/live?****")
        #expect(throws: RTMPURLError.invalidPort("1935?****")) { try RTMPURL(parsing: "rtmp://h:1935?token=s/live") }
        let long = "rtmp://h/live/" + String(repeating: "k", count: RTMPURL.maxLength)
        #expect(throws: RTMPURLError.tooLong(long.utf8.count)) { try RTMPURL(parsing: long) }
    }
}
