#if canImport(Glibc)
import Glibc
#endif
import BroadcastKit

/// A stream key file (`--key-file PATH`, `--url URL,key-file=PATH`): its first line is the key.
///
/// Read with a bounded cost whatever is at PATH: opened non-blocking (a FIFO with no writer does
/// not hang the start), refused unless it is a regular file (a FIFO, `/dev/urandom`, a directory),
/// at most `maxBytes`, valid UTF-8 with no control bytes but tab, CR and LF. A leading UTF-8 BOM
/// (what some Windows editors write) is dropped, as are the line end and surrounding blanks.
/// Every refusal is one line naming the path, never the content, and exits 2.
enum KeyFile {
    /// Largest key file accepted, in bytes.
    static let maxBytes = 4096

    /// Reads the key from `path`; `option` names the flag in messages.
    static func read(_ path: String, option: String = "--key-file") throws(UsageError) -> String {
        func refuse(_ why: String) -> UsageError { UsageError("\(option) \(path): \(why)") }
        let bytes: ArraySlice<UInt8>
        do {
            bytes = try SmallFile.read(path, maxBytes: maxBytes)
        } catch {
            switch error {
            case .open(let code), .stat(let code): throw refuse(SystemError.describe(code))
            case .notRegular: throw refuse("not a regular file (a key file is a small text file)")
            case .tooLarge: throw refuse("larger than \(maxBytes) bytes; a key file holds one short line")
            case .read(let code): throw refuse("read failed: \(SystemError.describe(code))")
            }
        }
        switch parse(bytes) {
        case .success(let key): return key
        case .failure(let why): throw refuse(why.description)
        }
    }

    /// Why a key file's content is refused.
    enum Refusal: Error, Equatable, CustomStringConvertible {
        case empty, notUTF8, controlByte, noKey
        var description: String {
            switch self {
            case .empty: return "empty"
            case .notUTF8: return "not UTF-8 text"
            case .controlByte: return "holds a control byte (only text: no NUL, ESC or other control characters)"
            case .noKey: return "no key in the first line"
            }
        }
    }

    /// The key in a key file's bytes: the first line without a leading BOM, the line end and
    /// surrounding blanks. Pure, for tests and the fuzzer.
    static func parse(_ content: ArraySlice<UInt8>) -> Result<String, Refusal> {
        var bytes = content
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { bytes = bytes.dropFirst(3) }
        guard !bytes.isEmpty else { return .failure(.empty) }
        for b in bytes where (b < 0x20 && b != 0x09 && b != 0x0A && b != 0x0D) || b == 0x7F {
            return .failure(.controlByte)
        }
        guard let text = String(validating: bytes, as: UTF8.self) else { return .failure(.notUTF8) }
        // The line ends at the first CR or LF (a String split would see CR LF as one Character).
        let line = text.utf8.prefix { $0 != 0x0A && $0 != 0x0D }
        let key = String(decoding: line, as: UTF8.self).trimmingCharacters(in: " \t")
        guard !key.isEmpty else { return .failure(.noKey) }
        return .success(key)
    }
}
