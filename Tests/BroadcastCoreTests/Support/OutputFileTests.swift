#if canImport(Glibc)
import Glibc
#endif
import Testing
@testable import BroadcastCore
import BroadcastTestSupport

/// `OutputFile`: never through a link, never onto a non-regular file, never replacing a name.
@Suite(.timeLimit(.minutes(1))) struct OutputFileTests {
    /// A fresh directory under /tmp, removed by the caller.
    private func directory() -> String {
        var template = Array("/tmp/bk-outputfile-XXXXXX".utf8CString)
        let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        return String(cString: made!)
    }

    private func remove(_ dir: String) {
        _ = system("rm -rf '\(dir)'")
    }

    private func write(_ path: String, _ text: String) {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        _ = text.withCString { Glibc.write(fd, $0, strlen($0)) }
        close(fd)
    }

    private func read(_ path: String) -> String {
        let fd = open(path, O_RDONLY)
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: 256)
        let n = Glibc.read(fd, &buffer, buffer.count)
        return String(decoding: buffer[0..<max(0, n)], as: UTF8.self)
    }

    @Test func aNewNameIsCreatedAndAnOwnRegularFileIsTruncated() throws {
        let dir = directory(); defer { remove(dir) }
        let path = dir + "/out.bin"
        let fd = try OutputFile.open(path, existing: .replace)
        #expect(Glibc.write(fd, "abc", 3) == 3)
        close(fd)
        let again = try OutputFile.open(path, existing: .replace)
        close(again)
        #expect(read(path) == "")
    }

    @Test func aLinkIsNeverWrittenThrough() throws {
        let dir = directory(); defer { remove(dir) }
        write(dir + "/victim", "precious")
        symlink(dir + "/victim", dir + "/link")
        for existing in [OutputFile.Existing.replace, .refuse] {
            #expect(throws: OutputFileError(dir + "/link", "is a symbolic link (never written through)")) {
                _ = try OutputFile.open(dir + "/link", existing: existing)
            }
        }
        #expect(throws: OutputFileError.self) { try OutputFile.check(dir + "/link", existing: .replace) }
        #expect(read(dir + "/victim") == "precious")
    }

    @Test func aFIFOIsRefusedWithoutBlocking() throws {
        let dir = directory(); defer { remove(dir) }
        mkfifo(dir + "/fifo", 0o600)
        #expect(throws: OutputFileError(dir + "/fifo", "is a FIFO, not a regular file (only a regular file or a new name is written)")) {
            _ = try OutputFile.open(dir + "/fifo", existing: .replace)
        }
        #expect(throws: OutputFileError.self) { try OutputFile.check(dir + "/fifo", existing: .replace) }
    }

    @Test func aDeviceAndADirectoryAreRefused() {
        #expect(throws: OutputFileError("/dev/null", "is a character device, not a regular file (only a regular file or a new name is written)")) {
            _ = try OutputFile.open("/dev/null", existing: .replace)
        }
        #expect(throws: OutputFileError.self) { _ = try OutputFile.open("/tmp", existing: .replace) }
    }

    @Test func aFileWithAnotherHardLinkIsNotRewritten() throws {
        let dir = directory(); defer { remove(dir) }
        write(dir + "/victim", "precious")
        link(dir + "/victim", dir + "/hard")
        #expect(throws: OutputFileError(dir + "/hard", "has 2 hard links; it is not rewritten (remove it or choose another name)")) {
            _ = try OutputFile.open(dir + "/hard", existing: .replace)
        }
        #expect(read(dir + "/victim") == "precious")
    }

    @Test func anExistingNameIsRefusedWhenItMustBeNew() throws {
        let dir = directory(); defer { remove(dir) }
        write(dir + "/taken", "x")
        #expect(throws: OutputFileError(dir + "/taken", "already exists (never replaced): remove it or choose another name")) {
            _ = try OutputFile.open(dir + "/taken", existing: .refuse)
        }
    }

    @Test func publishNeverReplacesAndTheTemporaryIsExclusive() throws {
        let dir = directory(); defer { remove(dir) }
        let final = dir + "/clip.mp4"
        // A planted NAME.part link is not the temporary's name: the temporary has a random suffix.
        symlink(dir + "/victim", final + ".part")
        let (fd, temporary) = try OutputFile.createTemporary(beside: final)
        #expect(temporary != final + ".part")
        #expect(temporary.hasPrefix(final + ".") && temporary.hasSuffix(".part"))
        close(fd)
        try OutputFile.publish(temporary, as: final)
        #expect(OutputFile.exists(final) && !OutputFile.exists(temporary))
        // The name taken, by a file or a dangling link: refused, the temporary stays for the caller.
        let (fd2, second) = try OutputFile.createTemporary(beside: final)
        close(fd2)
        #expect(throws: OutputFileError(final, "already exists (never replaced): remove it or choose another name")) {
            try OutputFile.publish(second, as: final)
        }
        #expect(OutputFile.exists(second))
        var st = stat()
        #expect(lstat(dir + "/victim", &st) != 0, "nothing was written through the planted link")
    }

    @Test func checkLeavesNoTraceAndNamesAMissingDirectory() throws {
        let dir = directory(); defer { remove(dir) }
        try OutputFile.check(dir + "/new", existing: .replace)
        #expect(!OutputFile.exists(dir + "/new"))
        #expect(throws: OutputFileError.self) { try OutputFile.check(dir + "/missing/new", existing: .replace) }
    }
}
