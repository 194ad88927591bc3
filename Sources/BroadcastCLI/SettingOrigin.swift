/// Where a setting's value came from, for `--print-config` and for precedence: the command
/// line beats the environment, which beats the config file.
package enum SettingOrigin: Sendable, Equatable, CustomStringConvertible {
    case commandLine
    /// `$NAME`.
    case environment(String)
    /// The config file and the line that set it.
    case config(path: String, line: Int)
    /// The `--service` preset.
    case service(String)
    case `default`

    package var description: String {
        switch self {
        case .commandLine: return "command line"
        case .environment(let name): return "environment $\(name)"
        case .config(let path, let line): return "config \(path):\(line)"
        case .service(let name): return "service \(name)"
        case .default: return "default"
        }
    }

    package var isConfig: Bool { if case .config = self { return true } else { return false } }
}
