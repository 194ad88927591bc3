#if canImport(Glibc)
import Glibc
#endif

/// Lines to stderr at once (libFuzzer writes its own status there too).
enum FuzzReport {
    static func line(_ text: String) {
        let s = text + "\n"
        _ = s.withCString { write(2, $0, strlen($0)) }
    }
}
