/// One `broadcast` option as `OptionTable` lists it: the single description from which `--help`,
/// the man page, the shell completions, the config file's keys and the "did you mean" suggestion
/// are all made, so none of them can list an option the parser does not know.
package struct OptionSpec: Sendable, Equatable {
    /// What follows the name.
    package enum Value: Sendable, Equatable {
        /// A flag: `--quiet`.
        case none
        /// `--name VALUE` or `--name=VALUE`; the text is the placeholder shown (`RATE`, `PATH`).
        case required(String)
        /// Only `--name` or `--name=VALUE` (never the next argument): `--print-memory-plan[=json]`.
        case optional(String)
    }

    /// What a shell may complete the value with.
    package enum Completion: Sendable, Equatable {
        case none, file, directory
        case choices([String])
    }

    /// `--name`, with the dashes.
    package let name: String
    /// A one-letter alias (`-h`), or nil.
    package let short: String?
    package let value: Value
    /// The description, one or more lines of at most 70 characters.
    package let help: [String]
    package let completion: Completion
    /// Whether the config file may set it (`name-without-dashes = value`).
    package let inConfig: Bool
    /// Not in `--help`, the man page or the completions (maintainer commands).
    package let hidden: Bool

    /// A flag (no value).
    package init(_ name: String, short: String? = nil, _ help: [String], config: Bool = false) {
        self.init(name, short: short, .none, help, config: config)
    }

    /// An option taking `value`.
    package init(_ name: String, short: String? = nil, _ value: Value, _ help: [String],
                 completion: Completion = .none, config: Bool = false, hidden: Bool = false) {
        self.name = name
        self.short = short
        self.value = value
        self.help = help
        self.completion = completion
        self.inConfig = config
        self.hidden = hidden
    }

    /// The name without its leading dashes: the config file's key.
    package var key: String { String(name.drop { $0 == "-" }) }

    /// `--name VALUE`, `--name[=VALUE]` or `--name`, as `--help` shows it.
    package var synopsis: String {
        switch value {
        case .none: return name
        case .required(let v): return "\(name) \(v)"
        case .optional(let v): return "\(name)[=\(v)]"
        }
    }

    /// Whether the option takes a value (required or optional).
    package var takesValue: Bool { value != .none }
}

/// A titled group of options, in `--help` order.
package struct OptionSection: Sendable {
    package let title: String
    package let options: [OptionSpec]
}
