#if canImport(Glibc)
import Glibc
#endif
import Testing
@testable import BroadcastCLI

/// `SecretScrubber` against its package API. The environment is process-wide and other suites
/// read it while they run, so the tests that change it run in a child process (an exit test):
/// no setenv races with a parallel getenv, here or under the sanitizers.
@Suite(.timeLimit(.minutes(2))) struct SecretScrubberTests {
    @Test func takeEnvironmentCopiesOverwritesAndUnsetsTheSecret() async {
        await #expect(processExitsWith: .success) {
            setenv("BK_TEST_SECRET", "sk_live_0123456789abcdef", 1)
            setenv("BK_TEST_PLAIN", "rtmp://127.0.0.1/live", 1)
            let block = getenv("BK_TEST_SECRET")!           // the bytes /proc/PID/environ would show
            let values = SecretScrubber.takeEnvironment(["BK_TEST_SECRET", "BK_TEST_PLAIN", "BK_TEST_ABSENT"],
                                                        secret: ["BK_TEST_SECRET"])
            guard values["BK_TEST_SECRET"] == "sk_live_0123456789abcdef",
                  values["BK_TEST_PLAIN"] == "rtmp://127.0.0.1/live",
                  values["BK_TEST_ABSENT"] == nil,
                  getenv("BK_TEST_SECRET") == nil,
                  getenv("BK_TEST_PLAIN") != nil,
                  String(cString: block) == String(repeating: "*", count: 24) else { exit(1) }
            exit(0)
        }
    }

    @Test func keyFileIsItsFirstLineTrimmed() throws {
        var template = Array("/tmp/bk-keyfile-XXXXXX".utf8CString)
        let dir = template.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)!) }
        func write(_ name: String, _ text: String) -> String {
            let path = dir + "/" + name
            let fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0o600)
            _ = text.withCString { Glibc.write(fd, $0, strlen($0)) }
            _ = Glibc.close(fd)
            return path
        }
        #expect(try SecretScrubber.readKeyFile(write("crlf", "  sk_crlf \r\nsecond\n")) == "sk_crlf")
        #expect(try SecretScrubber.readKeyFile(write("lf", "sk_lf\n")) == "sk_lf")
        #expect(try SecretScrubber.readKeyFile(write("bare", "\tsk_bare")) == "sk_bare")
        #expect(throws: UsageError.self) { try SecretScrubber.readKeyFile(write("empty", "")) }
        #expect(throws: UsageError.self) { try SecretScrubber.readKeyFile(write("blank", "  \nsk_second_line\n")) }
        #expect(throws: UsageError.self) { try SecretScrubber.readKeyFile(dir + "/missing") }
        do {
            _ = try SecretScrubber.readKeyFile(write("blank2", " \n"))
        } catch {
            #expect(!"\(error)".contains("\n"), "one line")
        }
    }
}
