import BroadcastKit

/// The `--help` text and `--version` line, printed from `OptionTable` (as are the man page and
/// the completions), and the prose they share with the man page.
package enum Usage {
    /// Printed by `--version`.
    package static let version = "broadcast \(BuildVersion.description)"

    /// What the command does, for `--help` and the man page's DESCRIPTION.
    package static let summary = [
        "Streams the screen (or a Y4M input, or a test pattern when asked), app audio and mic audio",
        "as H.264 + AAC or Opus to RTMP(S), SRT and WHIP destinations and to a recording, inside a",
        "hard memory budget. Settings come from the command line, then the environment, then the",
        "config file. A RATE without a unit is kbps; each option that takes a value may be given",
        "once, except --url.",
    ]

    /// The environment variables read, for `--help` and the man page's ENVIRONMENT.
    package static let environment: [(name: String, text: String)] = [
        ("STREAM_KEY", "the stream key (wiped from the process environment once read)"),
        ("BROADCAST_URL", "the ingest URL when no --url is given (beats the config file's url)"),
        ("XDG_CONFIG_HOME", "the config file is $XDG_CONFIG_HOME/broadcast/config (default ~/.config)"),
    ]

    /// The exit codes, for `--help` and the man page's EXIT STATUS.
    package static let exitCodes: [(code: Int, text: String)] = [
        (0, "clean stop (duration reached, end of input, SIGINT, SIGTERM or SIGHUP)"),
        (1, "--check-heartbeat: the heartbeat file is missing or too old"),
        (2, "bad usage or configuration (flags, values, the config file, input format, memory plan, "
            + "an output path that is a link, FIFO or device, an unreadable input)"),
        (3, "could not connect or publish (unreachable, key or app rejected, TLS, portal denied), "
            + "or nothing to capture (--source auto with no portal and no PipeWire screen)"),
        (4, "failure while streaming (every RTMP destination lost, or any with --require-all; a run that "
            + "ends while reconnecting; an input error mid-stream; a recording that lost data)"),
    ]

    /// Column where descriptions start.
    static let column = 26

    /// Printed by `--help` and `-h`.
    package static var text: String {
        var lines = ["Usage: broadcast [options]", ""]
        lines += summary
        lines.append("")
        lines.append("URL schemes (--url):")
        for s in OptionTable.schemes { lines.append(row("\(s.scheme)://", [s.what])) }
        for section in OptionTable.sections {
            let shown = section.options.filter { !$0.hidden }
            guard !shown.isEmpty else { continue }
            lines.append("")
            lines.append(section.title)
            for o in shown {
                let left = ([o.short].compactMap { $0 } + [o.synopsis]).joined(separator: ", ")
                lines.append(row(left, o.help))
            }
        }
        lines.append("")
        lines.append("Environment")
        for e in environment { lines.append(row("$" + e.name, [e.text])) }
        lines.append("")
        lines.append("Config file: key = value lines (e.g. service = twitch, key-file = ~/.twitch-key);")
        lines.append("see broadcast(1) and docs/configuration.md. --print-config shows what applies.")
        lines.append("")
        lines.append("Exit codes")
        for e in exitCodes {
            let text = wrap(e.text, width: 92)
            lines.append("  \(e.code)  \(text[0])")
            lines += text.dropFirst().map { "     " + $0 }
        }
        return lines.joined(separator: "\n")
    }

    /// `  left   help[0]` then the other help lines under the first, at `column`.
    static func row(_ left: String, _ help: [String]) -> String {
        let head = "  " + left
        let pad = String(repeating: " ", count: column)
        var out: [String]
        if head.count <= column - 2 {
            out = [head + String(repeating: " ", count: column - head.count) + (help.first ?? "")]
        } else {
            out = [head, pad + (help.first ?? "")]
        }
        out += help.dropFirst().map { pad + $0 }
        return out.joined(separator: "\n")
    }

    /// `text` broken at spaces into lines of at most `width` characters.
    static func wrap(_ text: String, width: Int) -> [String] {
        var lines: [String] = []
        var line = ""
        for word in text.split(separator: " ") {
            if !line.isEmpty && line.count + 1 + word.count > width {
                lines.append(line)
                line = ""
            }
            line += (line.isEmpty ? "" : " ") + word
        }
        if !line.isEmpty { lines.append(line) }
        return lines
    }
}
