#if canImport(Glibc)
import Glibc
#endif
@testable import BroadcastCLI

/// A key file's bytes through the CLI's key-file reader (the file is written to a private
/// directory first, then read by path as `--key-file` does). Oracles: an accepted key is not
/// empty, is one line without surrounding blanks, fits the 4096-byte read, and is text that the
/// file's first line holds; a refusal names the path but never the file's content.
enum KeyFileFuzz {
    /// KeyFile's other fixed refusals (the errno texts come from the C library, not the file).
    static let fixedReasons = ["not a regular file (a key file is a small text file)",
                               "larger than \(KeyFile.maxBytes) bytes; a key file holds one short line", "read failed: "]

    nonisolated(unsafe) static var path: String = {
        var template = Array("/dev/shm/bk-libfuzz-keyfile.XXXXXX".utf8CString)
        guard let dir = mkdtemp(&template) else { FuzzTarget.fail("key-file", "mkdtemp failed") }
        return String(cString: dir) + "/key"
    }()

    static func run(_ data: UnsafeRawBufferPointer) {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { FuzzTarget.fail("key-file", "cannot write \(path)") }
        var at = 0
        while at < data.count {
            let n = write(fd, data.baseAddress! + at, data.count - at)
            guard n > 0 else { close(fd); FuzzTarget.fail("key-file", "short write to \(path)") }
            at += n
        }
        close(fd)
        let firstLineEnd = data.firstIndex(where: { $0 == 0x0A || $0 == 0x0D }) ?? data.count
        let firstLine = String(decoding: UnsafeRawBufferPointer(rebasing: data[..<firstLineEnd]), as: UTF8.self)
        do {
            let key = try SecretScrubber.readKeyFile(path)
            guard !key.isEmpty, !key.contains(where: { $0 == "\n" || $0 == "\r" }),
                  key.first != " ", key.first != "\t", key.last != " ", key.last != "\t",
                  key.utf8.count <= 4096 else {
                FuzzTarget.fail("key-file", "accepted a key that is empty, multi-line, blank-edged or too long: \(key.debugDescription)")
            }
            if !firstLine.contains(key) {
                FuzzTarget.fail("key-file", "the key \(key.debugDescription) is not text of the first line \(firstLine.debugDescription)")
            }
        } catch {
            let message = "\(error)"
            if message.contains("\n") { FuzzTarget.fail("key-file", "refusal is not one line: \(message.debugDescription)") }
            let secret = firstLine.trimmingCharacters(in: " \t")
            // The message names the file and its option ("--key-file"): only the rest could show it.
            // and the fixed reasons are the reader's own words (a first line of "racte" is in
            // "characters": a false alarm the CI run found), so only what is left could show it.
            var shown = message.replacingOccurrences(path, "").replacingOccurrences("--key-file", "")
            for reason in [KeyFile.Refusal.empty, .notUTF8, .controlByte, .noKey].map(\.description) + KeyFileFuzz.fixedReasons {
                shown = shown.replacingOccurrences(reason, "")
            }
            if secret.count >= 4 && shown.contains(secret) {
                FuzzTarget.fail("key-file", "the refusal shows the file's content: \(message.debugDescription)")
            }
        }
    }
}

extension String {
    func replacingOccurrences(_ target: String, _ replacement: String) -> String {
        split(separator: target, omittingEmptySubsequences: false).joined(separator: replacement)
    }
}
