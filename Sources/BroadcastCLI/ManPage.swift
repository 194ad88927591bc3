/// broadcast(1) and broadcastctl(1) in roff (man(7) macros), printed from `OptionTable`,
/// `Usage` and `ControlClientUsage` by `broadcast --generate man|man-broadcastctl`.
package enum ManPage {
    /// broadcast(1).
    package static var broadcast: String {
        var r = header("BROADCAST", "broadcast \\- stream the desktop to RTMP(S), SRT and WHIP inside a memory budget")
        r += [".SH SYNOPSIS", ".B broadcast", "[\\fIoptions\\fR]", ".SH DESCRIPTION"]
        r.append(escape(Usage.summary.joined(separator: " ")))
        r += [".PP", "With \\fB\\-\\-source auto\\fR (the default) it captures the screen through the desktop portal,",
              "else the first PipeWire screen node; with neither it exits 3 and says so. The test pattern",
              "streams only with \\fB\\-\\-source test\\fR."]
        r.append(".SS URL schemes")
        for s in OptionTable.schemes { r += [".TP", "\\fB\(s.scheme)://\\fR", escape(s.what)] }
        r.append(".SH OPTIONS")
        for section in OptionTable.sections {
            let shown = section.options.filter { !$0.hidden }
            guard !shown.isEmpty else { continue }
            r.append(".SS \(escape(section.title))")
            for o in shown {
                r.append(".TP")
                r.append(([o.short].compactMap { $0 } + [o.name]).map { "\\fB\(escape($0))\\fR" }.joined(separator: ", ")
                         + placeholder(o.value))
                r.append(escape(o.help.joined(separator: " ")))
            }
        }
        r += [".SH CONFIGURATION",
              "Settings may also come from \\fI$XDG_CONFIG_HOME/broadcast/config\\fR (default",
              "\\fI~/.config/broadcast/config\\fR), or the file named by \\fB\\-\\-config\\fR: one",
              "\\fIname\\fR = \\fIvalue\\fR per line, where \\fIname\\fR is a long option without its dashes;",
              "\\fB#\\fR starts a comment line; a flag takes \\fBtrue\\fR or \\fBfalse\\fR; a leading",
              "\\fB~/\\fR in a path is the home directory; \\fBurl\\fR may repeat. The stream key never lives",
              "in this file (a \\fBkey\\fR line is refused): give \\fBkey\\-file\\fR = \\fIPATH\\fR. The command",
              "line beats the environment, which beats the file; \\fB\\-\\-print\\-config\\fR shows the",
              "merged settings and where each came from. The file may set:",
              ".PP",
              OptionTable.all.filter(\.inConfig).map { "\\fB\(escape($0.key))\\fR" }.joined(separator: ", ") + "."]
        r.append(".SH ENVIRONMENT")
        for e in Usage.environment { r += [".TP", "\\fB\(e.name)\\fR", escape(e.text)] }
        r += [".SH FILES", ".TP", "\\fI~/.config/broadcast/config\\fR", "the config file (see CONFIGURATION)"]
        r.append(".SH EXIT STATUS")
        for e in Usage.exitCodes { r += [".TP", "\\fB\(e.code)\\fR", escape(e.text)] }
        r += [".SH EXAMPLES",
              ".nf",
              "STREAM_KEY=\\&... broadcast \\-\\-service twitch \\-\\-res 1080p \\-\\-fps 60",
              "broadcast \\-\\-source test \\-\\-no\\-publish \\-\\-record test.mp4 \\-\\-duration 10",
              "broadcast \\-\\-print\\-config",
              ".fi",
              ".SH SEE ALSO", "\\fBbroadcastctl\\fR(1)"]
        return r.joined(separator: "\n") + "\n"
    }

    /// broadcastctl(1).
    package static var broadcastctl: String {
        var r = header("BROADCASTCTL", "broadcastctl \\- control a running broadcast through its control socket")
        r += [".SH SYNOPSIS", ".B broadcastctl", "\\fISOCKET\\fR \\fICOMMAND\\fR [\\fIARGS\\fR...]",
              ".SH DESCRIPTION",
              "Sends one command to the Unix socket a \\fBbroadcast \\-\\-control\\fR \\fISOCKET\\fR run serves and",
              "prints the answer, one JSON line; \\fBsubscribe\\fR prints events until the stream ends.",
              ".SH COMMANDS"]
        for c in ControlClientUsage.commands { r += [".TP", "\\fB\(escape(c.synopsis))\\fR", escape(c.text)] }
        r += [".SH OPTIONS", ".TP", "\\fB\\-h\\fR, \\fB\\-\\-help\\fR", "print the usage and exit"]
        r.append(".SH EXIT STATUS")
        for e in ControlClientUsage.exitCodes { r += [".TP", "\\fB\(e.code)\\fR", escape(e.text)] }
        r += [".SH SEE ALSO", "\\fBbroadcast\\fR(1)"]
        return r.joined(separator: "\n") + "\n"
    }

    /// `.TH` and NAME. No date: the page is regenerated and compared byte for byte.
    static func header(_ title: String, _ name: String) -> [String] {
        [".\\\" Generated from Sources/BroadcastCLI/OptionTable.swift by scripts/gen-docs; do not edit.",
         ".TH \(title) 1 \"\" \"broadcast\" \"User Commands\"",
         // No hyphenation: option names and config keys must read as typed.
         ".nh", ".SH NAME", name]
    }

    static func placeholder(_ v: OptionSpec.Value) -> String {
        switch v {
        case .none: return ""
        case .required(let p): return " \\fI\(escape(p))\\fR"
        case .optional(let p): return "[=\\fI\(escape(p))\\fR]"
        }
    }

    /// Text safe in roff: backslashes doubled, hyphens as `\-` (so `--name` copies as typed),
    /// a leading `.` or `'` kept from being read as a request.
    package static func escape(_ s: String) -> String {
        var out = s.replacingAll("\\", with: "\\e").replacingAll("-", with: "\\-")
        if out.hasPrefix(".") || out.hasPrefix("'") { out = "\\&" + out }
        return out
    }
}

extension String {
    /// Every `target` replaced by `replacement` (no Foundation in this module's imports).
    func replacingAll(_ target: Character, with replacement: String) -> String {
        var out = ""
        for c in self { if c == target { out += replacement } else { out.append(c) } }
        return out
    }
}
