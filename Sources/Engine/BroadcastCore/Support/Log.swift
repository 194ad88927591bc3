#if canImport(Glibc)
import Glibc
#endif

/// Writes one line to stderr with a single write(2), so lines from threads never interleave.
///
/// Callers must never pass a stream key; messages name destinations by their redacted form.
package enum Log {
    package static func line(_ message: String) {
        var s = message
        s.append("\n")
        s.withUTF8 { buf in
            var off = 0
            while off < buf.count {
                let n = write(2, buf.baseAddress! + off, buf.count - off)
                if n <= 0 { break }
                off += n
            }
        }
    }
}
