#if canImport(Glibc)
import Glibc
#endif

/// The one way a failed system call becomes text: "No such file or directory (errno 2)".
package enum SystemError {
    /// Describes `code`, by default the calling thread's `errno` (read before anything else runs).
    package static func describe(_ code: Int32 = errno) -> String {
        String(cString: strerror(code)) + " (errno \(code))"
    }
}
