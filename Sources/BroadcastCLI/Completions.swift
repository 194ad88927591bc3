/// Shell completions for `broadcast`, printed from `OptionTable` by `broadcast --generate
/// bash|zsh|fish`: option names, and for values the choices, files or directories the table names.
package enum Completions {
    static let banner = "Generated from Sources/BroadcastCLI/OptionTable.swift by scripts/gen-docs; do not edit."

    /// For /usr/share/bash-completion/completions/broadcast.
    package static var bash: String {
        let shown = OptionTable.visible
        var r = ["# bash completion for broadcast(1). \(banner)", "_broadcast() {",
                 "    local cur=\"${COMP_WORDS[COMP_CWORD]}\" prev=\"${COMP_WORDS[COMP_CWORD-1]}\"",
                 "    case \"$prev\" in"]
        func names(_ f: (OptionSpec) -> Bool) -> String {
            shown.filter { if case .required = $0.value { return f($0) } else { return false } }.map(\.name).joined(separator: "|")
        }
        for o in shown {
            guard case .required = o.value, case .choices(let c) = o.completion else { continue }
            r.append("        \(o.name)) COMPREPLY=($(compgen -W \"\(c.joined(separator: " "))\" -- \"$cur\")); return ;;")
        }
        r.append("        \(names { $0.completion == .file })) COMPREPLY=($(compgen -f -- \"$cur\")); return ;;")
        r.append("        \(names { $0.completion == .directory })) COMPREPLY=($(compgen -d -- \"$cur\")); return ;;")
        r.append("        \(names { $0.completion == .none })) return ;;")
        r += ["    esac",
              "    COMPREPLY=($(compgen -W \"\(shown.flatMap { [$0.short].compactMap { $0 } + [$0.name] }.joined(separator: " "))\" -- \"$cur\"))",
              "}", "complete -F _broadcast broadcast"]
        return r.joined(separator: "\n") + "\n"
    }

    /// For /usr/share/zsh/vendor-completions/_broadcast.
    package static var zsh: String {
        var r = ["#compdef broadcast", "# zsh completion for broadcast(1). \(banner)", "_arguments -s \\"]
        for o in OptionTable.visible {
            let d = description(o).replacingAll("[", with: "(").replacingAll("]", with: ")").replacingAll(":", with: "\\:")
            let action: String
            switch o.completion {
            case .none: action = ""
            case .file: action = ":_files"
            case .directory: action = ":_files -/"
            case .choices(let c): action = ":(\(c.map { $0.replacingAll(":", with: "\\:") }.joined(separator: " ")))"
            }
            let names = [o.short].compactMap { $0 } + [o.name]
            for n in names {
                switch o.value {
                case .none: r.append("  \(quote("\(n)[\(d)]")) \\")
                case .required(let p): r.append("  \(quote("\(n)=[\(d)]:\(p)\(action)")) \\")
                case .optional(let p): r.append("  \(quote("\(n)=-[\(d)]::\(p)\(action)")) \\")
                }
            }
        }
        r.append("  && return 0")
        return r.joined(separator: "\n") + "\n"
    }

    /// For /usr/share/fish/vendor_completions.d/broadcast.fish.
    package static var fish: String {
        var r = ["# fish completion for broadcast(1). \(banner)", "complete -c broadcast -f"]
        for o in OptionTable.visible {
            var line = "complete -c broadcast"
            if let s = o.short { line += " -s \(s.dropFirst())" }
            line += " -l \(o.key)"
            if case .required = o.value {
                switch o.completion {
                case .none: line += " -x"
                case .file: line += " -r -F"
                case .directory: line += " -x -a '(__fish_complete_directories)'"
                case .choices(let c): line += " -x -a \(quote(c.joined(separator: " ")))"
                }
            }
            line += " -d \(quote(description(o)))"
            r.append(line)
        }
        return r.joined(separator: "\n") + "\n"
    }

    /// The help up to its first parenthesis or semicolon: what a completion menu shows.
    static func description(_ o: OptionSpec) -> String {
        let text = o.help.joined(separator: " ")
        var d = ""
        for c in text {
            if c == ";" || (c == "(" && d.count >= 10) { break }
            d.append(c)
        }
        while d.last == " " || d.last == "," || d.last == ":" { d.removeLast() }
        return d
    }

    /// `s` in single quotes for sh, zsh and fish.
    static func quote(_ s: String) -> String { "'" + s.replacingAll("'", with: "'\\''") + "'" }
}
