#if canImport(Glibc)
import Glibc
#endif
import BroadcastKit

/// The config file: `$XDG_CONFIG_HOME/broadcast/config` (default `~/.config/broadcast/config`)
/// or `--config PATH`. One `name = value` per line, `name` a long option without its dashes
/// (`OptionTable` marks which); `#` starts a comment line; blank lines are ignored; a value may
/// be wrapped in double quotes; a flag takes `true` or `false`; a leading `~/` in a path is
/// `$HOME`; `url` may repeat (one destination each). The stream key never lives here: a `key`
/// line is refused, `key-file = PATH` names its file.
///
/// Each value goes through `CommandLineOptions.parse`, so the file and the command line map
/// values one way and the library's ranges apply to both. Every refusal is one line naming
/// `PATH:LINE`, and never repeats a value.
package enum ConfigFile {
    /// Largest file read, in bytes: a settings file is a few hundred bytes.
    package static let maxBytes = 64 * 1024
    /// Longest line, in bytes.
    package static let maxLineBytes = 4096

    /// One `name = value` line.
    package struct Entry: Equatable, Sendable {
        package var name: String
        package var value: String
        package var line: Int
    }

    /// The default path from the environment: `$XDG_CONFIG_HOME` when absolute (the XDG rule),
    /// else `$HOME/.config`; nil when neither is set.
    package static func defaultPath(environment: [String: String]) -> String? {
        if let x = environment["XDG_CONFIG_HOME"], x.hasPrefix("/") { return x + "/broadcast/config" }
        if let h = environment["HOME"], !h.isEmpty { return h + "/.config/broadcast/config" }
        return nil
    }

    /// Reads and parses `path`. A missing file is nil when `required` is false (the default
    /// path need not exist); any other problem throws.
    package static func read(_ path: String, required: Bool) throws(UsageError) -> [Entry]? {
        func refuse(_ why: String) -> UsageError { UsageError("config \(path): \(why)") }
        let bytes: ArraySlice<UInt8>
        do {
            bytes = try SmallFile.read(path, maxBytes: maxBytes)
        } catch {
            switch error {
            case .open(let code):
                if code == ENOENT && !required { return nil }
                throw refuse(SystemError.describe(code))
            case .stat(let code): throw refuse(SystemError.describe(code))
            case .notRegular: throw refuse("not a regular file")
            case .tooLarge: throw refuse("larger than \(maxBytes / 1024) KiB; a config file is a few lines")
            case .read(let code): throw refuse("read failed: \(SystemError.describe(code))")
            }
        }
        return try parse(bytes, path: path)
    }

    /// The entries in a file's bytes. Pure, for tests.
    package static func parse(_ content: ArraySlice<UInt8>, path: String) throws(UsageError) -> [Entry] {
        var bytes = content
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { bytes = bytes.dropFirst(3) }
        var entries: [Entry] = []
        var lineNumber = 0
        var seen: [String: Int] = [:]
        for raw in bytes.split(separator: 0x0A, omittingEmptySubsequences: false) {
            lineNumber += 1
            func refuse(_ why: String) -> UsageError { UsageError("config \(path):\(lineNumber): \(why)") }
            var lineBytes = raw
            if lineBytes.last == 0x0D { lineBytes = lineBytes.dropLast() }
            guard lineBytes.count <= maxLineBytes else { throw refuse("line longer than \(maxLineBytes) bytes") }
            guard !lineBytes.contains(where: { ($0 < 0x20 && $0 != 0x09) || $0 == 0x7F }) else {
                throw refuse("holds a control byte (a config file is text)")
            }
            guard let text = String(validating: lineBytes, as: UTF8.self) else { throw refuse("not UTF-8 text") }
            let line = text.trimmingCharacters(in: " \t")
            if line.isEmpty || line.hasPrefix("#") { continue }
            guard let eq = line.firstIndex(of: "=") else {
                throw refuse("expected 'name = value' (a long option without its dashes, e.g. res = 1080p)")
            }
            let name = String(line[..<eq]).trimmingCharacters(in: " \t")
            var value = String(line[line.index(after: eq)...]).trimmingCharacters(in: " \t")
            if value.count >= 2, value.hasPrefix("\""), value.hasSuffix("\"") { value = String(value.dropFirst().dropLast()) }
            if name == "key" || name == "stream-key" {
                throw refuse("the stream key never goes in the config file: put it in a file of its own "
                             + "(chmod 600) and set key-file = PATH, or use $STREAM_KEY")
            }
            guard OptionTable.configurable(name) != nil else {
                if OptionTable.named("--" + name) != nil {
                    throw refuse("'\(printable(name))' is a command-line option only, not a config setting")
                }
                let near = Suggestion.closest(to: name, in: OptionTable.all.filter(\.inConfig).map(\.key))
                throw refuse("unknown setting '\(printable(name))'" + (near.map { "; did you mean \($0)?" } ?? ""))
            }
            if name != "url", let first = seen[name] {
                throw refuse("\(name) is set again (first at line \(first)); set it once")
            }
            seen[name] = seen[name] ?? lineNumber
            guard !value.isEmpty else { throw refuse("\(name) has no value") }
            entries.append(Entry(name: name, value: value, line: lineNumber))
        }
        return entries
    }

    /// The options the entries set, each through the command line's parser with its origin
    /// `config PATH:LINE`. `home` expands a leading `~/` in path values.
    package static func options(_ entries: [Entry], path: String, home: String?) throws(UsageError) -> CommandLineOptions {
        var o = CommandLineOptions()
        for e in entries {
            guard let spec = OptionTable.configurable(e.name) else { continue }
            var args: [String]
            if spec.takesValue {
                var v = e.value
                if v.hasPrefix("~/"), let home, spec.completion == .file || spec.completion == .directory {
                    v = home + v.dropFirst()
                }
                args = [spec.name, v]
            } else {
                switch e.value {
                case "true": args = [spec.name]
                case "false": args = []
                default: throw UsageError("config \(path):\(e.line): \(e.name) takes true or false")
                }
            }
            do {
                o = try CommandLineOptions.parse(args, into: o, origin: .config(path: path, line: e.line))
            } catch {
                throw UsageError("config \(path):\(e.line): \(error)")
            }
        }
        return o
    }

    /// A name as it may be shown: only one shaped like an option name (lowercase letters, digits
    /// and dashes, at most 40), since a pasted key or URL on the left of `=` must not be echoed.
    static func printable(_ s: String) -> String {
        let shaped = (1...40).contains(s.count) && s.unicodeScalars.allSatisfy {
            ("a"..."z").contains($0) || ("0"..."9").contains($0) || $0 == "-"
        }
        return shaped ? s : "(not shown: not an option name)"
    }
}
