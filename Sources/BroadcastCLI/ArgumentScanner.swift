import BroadcastKit

/// Walks argv one option at a time, accepting `--name value` and `--name=value`.
struct ArgumentScanner {
    private let args: [String]
    private var index = 0
    private var pendingValue: String?
    private(set) var currentName = ""
    /// Options that have taken a value: given twice, one would silently win.
    private var valued: Set<String> = []
    private var taken: [String] = []

    init(_ args: [String]) { self.args = args }

    /// The next option name (without its `=value`), or nil at the end.
    mutating func nextOption() throws -> String? {
        guard index < args.count else { return nil }
        let a = args[index]
        index += 1
        // A one-letter alias (`-h`) stands for its long name.
        if !a.hasPrefix("--"), let spec = OptionTable.named(a) {
            currentName = spec.name
            pendingValue = nil
            return currentName
        }
        guard a.hasPrefix("--"), a.count > 2 else {
            throw UsageError("unexpected argument '\(a)' (options start with --; see --help)")
        }
        if let eq = a.firstIndex(of: "=") {
            currentName = String(a[..<eq])
            pendingValue = String(a[a.index(after: eq)...])
        } else {
            currentName = a
            pendingValue = nil
        }
        return currentName
    }

    /// The value of the current option. A single-valued option given a second time is refused.
    mutating func value() throws -> String {
        // The values are not echoed: one of them may be a stream key.
        guard valued.insert(currentName).inserted else {
            throw UsageError("\(currentName) given twice; give it once")
        }
        return try repeatableValue()
    }

    /// The value of an option that may be given many times, each adding one item (`--url`).
    mutating func repeatableValue() throws -> String {
        let v: String
        if let p = pendingValue {
            pendingValue = nil
            v = p
        } else {
            guard index < args.count else { throw UsageError("\(currentName) needs a value") }
            v = args[index]
            index += 1
        }
        taken.append(v)
        return v
    }

    /// The values taken since the last call (for `--print-config`'s record of what was given).
    mutating func takeValues() -> [String] {
        defer { taken = [] }
        return taken
    }

    /// The current option's value as an integer within `range`.
    mutating func int(_ range: ClosedRange<Int>) throws -> Int {
        let v = try value()
        guard let n = Int(v), range.contains(n) else {
            throw UsageError("\(currentName) expects an integer in \(range.lowerBound)...\(range.upperBound), got '\(v)'")
        }
        return n
    }

    /// The current option's value as a number within `range`.
    mutating func double(_ range: ClosedRange<Double>) throws -> Double {
        let v = try value()
        guard let n = Double(v), n.isFinite, range.contains(n) else {
            throw UsageError("\(currentName) expects a number in \(range.lowerBound)...\(range.upperBound), got '\(v)'")
        }
        return n
    }

    /// `--reconnect-attempts`: an integer the library's rule accepts (`ReconnectPolicy.refusal`,
    /// its words after the option's name, as the C ABI, Python and GStreamer report them).
    mutating func reconnectAttempts() throws -> Int {
        let v = try value()
        guard let n = Int(v) else { throw UsageError("\(currentName) expects an integer, got '\(v)'") }
        if let why = ReconnectPolicy.refusal(attempts: n) { throw UsageError("\(currentName): \(why)") }
        return n
    }

    /// `--reconnect-delay`: seconds the library's rule accepts (`ReconnectPolicy.refusal`).
    mutating func reconnectDelay() throws -> Double {
        let v = try value()
        guard let n = Double(v) else { throw UsageError("\(currentName) expects a number of seconds, got '\(v)'") }
        if let why = ReconnectPolicy.refusal(firstDelaySeconds: n) { throw UsageError("\(currentName): \(why)") }
        return n
    }

    /// The current option's value as a bitrate in kbps (`2500`, `2500k`, `2.5M`) within `range`.
    mutating func kbps(_ range: ClosedRange<Int>) throws -> Int {
        let v = try value()
        guard let n = UnitValue.kbps(v), range.contains(n) else {
            throw UsageError("\(currentName) expects a bitrate in \(range.lowerBound)...\(range.upperBound) kbps "
                             + "(like 2500, 2500k or 2.5M), got '\(v)'")
        }
        return n
    }

    /// The current option's value as a size in bytes (`50M`, `512K`, `1G`, `52428800`).
    mutating func bytes() throws -> Int {
        let v = try value()
        guard let n = UnitValue.bytes(v) else {
            throw UsageError("\(currentName) expects a size like 50M, 512K, 1G or 52428800 (bytes), got '\(v)'")
        }
        return n
    }

    /// The `=value` of an option whose value is optional (`--print-memory-plan=json`); nil for the
    /// bare form, which never takes the next argument.
    mutating func inlineValue() -> String? {
        defer { pendingValue = nil }
        if let v = pendingValue { taken.append(v) }
        return pendingValue
    }

    /// Flags take no value; `--flag=x` is an error.
    mutating func flag() throws {
        if pendingValue != nil { throw UsageError("\(currentName) takes no value") }
    }
}
