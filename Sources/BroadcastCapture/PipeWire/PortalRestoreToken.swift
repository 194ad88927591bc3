import BroadcastKit
import Glibc

/// Where the ScreenCast portal's restore token lives between runs, so the user is asked to pick
/// a screen once rather than on every broadcast.
///
/// The token grants screen access without a dialog, so the file is private: mode 0600 in a
/// 0700 directory, written to a temporary file and renamed into place.
public struct PortalRestoreToken: Sendable, Equatable {
    /// The file holding the token.
    public var path: String

    public init(path: String) { self.path = path }

    /// `$XDG_STATE_HOME/broadcast/portal-restore-token`, else `~/.local/state/broadcast/...`;
    /// nil when neither XDG_STATE_HOME nor HOME is set.
    public static func defaultLocation() -> PortalRestoreToken? {
        if let state = env("XDG_STATE_HOME"), state.hasPrefix("/") {
            return PortalRestoreToken(path: state + "/broadcast/portal-restore-token")
        }
        if let home = env("HOME") {
            return PortalRestoreToken(path: home + "/.local/state/broadcast/portal-restore-token")
        }
        return nil
    }

    /// The stored token, or nil when there is none (or it cannot be read).
    public func load() -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        if fd < 0 { return nil }
        defer { close(fd) }
        var bytes = [UInt8](repeating: 0, count: 512)
        let n = bytes.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        guard n > 0 else { return nil }
        let token = String(decoding: bytes[0..<n], as: UTF8.self)
            .split(whereSeparator: { $0 == "\n" || $0 == "\r" || $0 == " " }).first.map(String.init)
        return token?.isEmpty == false ? token : nil
    }

    /// Stores `token` with mode 0600, creating the directories (0700) as needed.
    public func store(_ token: String) throws(CaptureError) {
        let dir = String(path[..<(path.lastIndex(of: "/") ?? path.startIndex)])
        try PortalRestoreToken.makeDirectories(dir)
        let tmp = path + ".tmp"
        let fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        if fd < 0 { throw CaptureError(.io, "cannot write the portal restore token \(tmp): \(SystemError.describe())") }
        // An existing file keeps its old mode through O_CREAT; force 0600.
        fchmod(fd, 0o600)
        let line = token + "\n"
        let written = line.withCString { write(fd, $0, strlen($0)) }
        close(fd)
        guard written == line.utf8.count, rename(tmp, path) == 0 else {
            let message = SystemError.describe()
            unlink(tmp)
            throw CaptureError(.io, "cannot write the portal restore token \(path): \(message)")
        }
    }

    /// Removes the stored token (e.g. after the portal rejected it).
    public func remove() { unlink(path) }

    private static func makeDirectories(_ dir: String) throws(CaptureError) {
        guard !dir.isEmpty else { return }
        var prefix = dir.hasPrefix("/") ? "" : "."
        for part in dir.split(separator: "/") {
            prefix += "/" + part
            if mkdir(prefix, 0o700) != 0 && errno != EEXIST {
                throw CaptureError(.io, "cannot create \(prefix) for the portal restore token: \(SystemError.describe())")
            }
        }
    }

    private static func env(_ name: String) -> String? {
        guard let v = getenv(name) else { return nil }
        let s = String(cString: v)
        return s.isEmpty ? nil : s
    }
}
