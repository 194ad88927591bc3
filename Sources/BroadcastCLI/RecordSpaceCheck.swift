#if canImport(Glibc)
import Glibc
#endif

/// Why `--record` was refused before the stream started; one line, meant for the user.
struct RecordSpaceError: Error, CustomStringConvertible {
    let description: String
}

/// Refuses a recording that would soon fill its filesystem: a disk that fills mid-stream is
/// survivable (the file is cut back to its last whole tag), but it is better caught at start.
enum RecordSpaceCheck {
    /// Minutes of recording the free space must hold when no explicit minimum is given.
    static let defaultMinutes = 10

    /// Checks the free space (for unprivileged users) of the filesystem that will hold `path`.
    ///
    /// - Parameters:
    ///   - totalKbps: video + audio bitrate of the recording.
    ///   - minFreeBytes: `--record-min-free`; nil means 10 minutes at `totalKbps`, 0 disables the check.
    static func check(path: String, bitrateKbps totalKbps: Int, minFreeBytes: Int?) throws(RecordSpaceError) {
        let need = minFreeBytes ?? requiredBytes(bitrateKbps: totalKbps, minutes: defaultMinutes)
        if need <= 0 { return }
        let dir = directory(of: path)
        var st = statvfs()
        guard statvfs(dir, &st) == 0 else {
            let reason = String(cString: strerror(errno))
            throw RecordSpaceError(description: "--record \(path): cannot check free space in \(dir): \(reason)")
        }
        let free = Int(clamping: UInt64(st.f_bavail).multipliedReportingOverflow(by: UInt64(st.f_frsize)).partialValue)
        guard free >= need else {
            let basis = minFreeBytes == nil
                ? "\(defaultMinutes) min at \(totalKbps) kbps" : "--record-min-free"
            throw RecordSpaceError(description: "--record \(path): only \(human(free)) free in \(dir), "
                                   + "need \(human(need)) (\(basis)); free space or set --record-min-free")
        }
    }

    /// Bytes of `minutes` of media at `kbps` (kilobits of 1000 bits).
    static func requiredBytes(bitrateKbps kbps: Int, minutes: Int) -> Int {
        max(0, kbps) * 1000 / 8 * 60 * minutes
    }

    /// The directory holding `path` ("." for a bare file name).
    static func directory(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        let dir = String(path[..<slash])
        return dir.isEmpty ? "/" : dir
    }

    /// 1536 -> "1.5 KB", in binary units with one decimal.
    static func human(_ bytes: Int) -> String {
        let units = ["B", "KB", "MB", "GB", "TB"]
        var value = Double(bytes)
        var u = 0
        while value >= 1024 && u < units.count - 1 { value /= 1024; u += 1 }
        if u == 0 { return "\(bytes) B" }
        let tenths = Int((value * 10).rounded())
        return "\(tenths / 10).\(tenths % 10) \(units[u])"
    }
}
