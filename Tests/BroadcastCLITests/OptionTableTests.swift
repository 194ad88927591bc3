import BroadcastKit
import Testing
@testable import BroadcastCLI

/// A valid value for each option that takes one, so every table entry can be parsed. An option
/// added to the table without a sample here fails `everyOptionParses`.
let sampleValues: [String: String] = [
    "--url": "rtmp://h/app", "--service": "twitch", "--key-file": "/k", "--key": "k",
    "--srt-passphrase-file": "/p", "--bitrate-follows": "slowest", "--ca-file": "/etc/passwd-not-a-ca",
    "--record": "x.flv", "--record-min-free": "1M", "--reconnect-attempts": "3", "--reconnect-delay": "1",
    "--res": "1080p", "--fps": "60", "--video-bitrate": "2500", "--preset": "fast", "--x264-threads": "2",
    "--audio-codec": "opus", "--audio-bitrate": "96", "--source": "test", "--screen-node": "n", "--app-audio": "a",
    "--mic": "m", "--cursor": "hidden", "--pcm": "-", "--pcm-format": "s16le:48000:2", "--replay-seconds": "5",
    "--replay-dir": ".", "--control": "/tmp/c", "--config": "none", "--duration": "1", "--stats-json": "-",
    "--heartbeat": "/tmp/h", "--check-heartbeat": "/tmp/h", "--max-age": "5", "--memory-budget": "50M",
    "--generate": "man", "--test-pattern": "static", "--test-rotate-every": "1", "--test-pixel-format": "bgrx",
    "--test-audio-skew-ppm": "1", "--test-jitter-ms": "1", "--test-mic-delay-ms": "1",
    "--test-app-buffer-frames": "1024", "--test-gap-at": "1", "--test-gap-ms": "100",
]

/// `--name VALUE` (or `--name` for a flag or an optional value), plus what the option needs.
func sampleArgs(_ o: OptionSpec) -> [String]? {
    var args: [String]
    switch o.value {
    case .none, .optional: args = [o.name]
    case .required:
        guard let v = sampleValues[o.name] else { return nil }
        args = [o.name, v]
    }
    // The gap options go together.
    if o.name == "--test-gap-at" { args += ["--test-gap-ms", "100"] }
    if o.name == "--test-gap-ms" { args += ["--test-gap-at", "1"] }
    return args
}

@Suite(.timeLimit(.minutes(1))) struct OptionTableTests {
    @Test func everyOptionParses() throws {
        for o in OptionTable.all {
            guard let args = sampleArgs(o) else {
                Issue.record("no sample value for \(o.name) in OptionTableTests.sampleValues")
                continue
            }
            // --ca-file reads its file; its own tests cover it, here only that the name is handled.
            if o.name == "--ca-file" {
                #expect(usageError(args)?.hasPrefix("--ca-file ") == true, "\(o.name)")
                continue
            }
            #expect(usageError(args) == nil, "\(args)")
            let parsed = try? CommandLineOptions.parse(args)
            #expect(parsed?.origins[o.key] == .commandLine, "\(o.name) records its origin")
        }
    }

    @Test func namesAreUniqueAndWellFormed() {
        let names = OptionTable.all.map(\.name) + OptionTable.all.compactMap(\.short)
        #expect(Set(names).count == names.count)
        for o in OptionTable.all {
            #expect(o.name.hasPrefix("--") && !o.name.contains(" ") && !o.name.contains("="), "\(o.name)")
            #expect(!o.help.isEmpty, "\(o.name) has help")
        }
    }

    @Test func shortHelpAlias() throws {
        #expect(try CommandLineOptions.parse(["-h"]).help)
        #expect(try CommandLineOptions.parse(["--help"]).help)
        #expect(usageError(["-x"]) == "unexpected argument '-x' (options start with --; see --help)")
    }

    @Test func helpListsEveryVisibleOptionAndScheme() {
        let help = Usage.text
        for o in OptionTable.visible { #expect(help.contains("  \(o.synopsis)") || help.contains(", \(o.synopsis)"), "\(o.name)") }
        for o in OptionTable.all where o.hidden { #expect(!help.contains(o.name), "\(o.name) is hidden") }
        for s in ["rtmp://", "rtmps://", "srt://", "http://", "https://"] { #expect(help.contains("  \(s)"), "\(s)") }
        #expect(help.contains("WHIP"))
        for line in help.split(separator: "\n") { #expect(line.count <= 100, "help line too long: \(line)") }
    }

    @Test func manPageAndCompletionsListEveryVisibleOption() {
        let man = ManPage.broadcast
        for o in OptionTable.visible {
            #expect(man.contains("\\fB\(ManPage.escape(o.name))\\fR"), "man: \(o.name)")
            #expect(Completions.bash.contains(" \(o.name)"), "bash: \(o.name)")
            #expect(Completions.zsh.contains("'\(o.name)"), "zsh: \(o.name)")
            #expect(Completions.fish.contains(" -l \(o.key) ") || Completions.fish.contains(" -l \(o.key)\n"), "fish: \(o.name)")
        }
        for o in OptionTable.all where o.hidden {
            #expect(!man.contains(ManPage.escape(o.name)) && !Completions.bash.contains(o.name), "\(o.name) is hidden")
        }
        #expect(man.hasPrefix(".\\\" Generated") && man.contains(".TH BROADCAST 1"))
        // Every config key is named in the man page's CONFIGURATION section.
        for o in OptionTable.all where o.inConfig { #expect(man.contains("\\fB\(ManPage.escape(o.key))\\fR"), "\(o.key)") }
    }

    @Test func broadcastctlManPageListsEveryCommand() {
        let man = ManPage.broadcastctl
        for c in ControlClientUsage.commands {
            let word = String(c.synopsis.split(separator: " ")[0])
            #expect(man.contains("\\fB\(ManPage.escape(word))"), "\(word)")
        }
    }

    @Test func roffEscapes() {
        #expect(ManPage.escape("--a\\b") == "\\-\\-a\\eb")
        #expect(ManPage.escape(".x") == "\\&.x")
        #expect(ManPage.escape("'x") == "\\&'x")
    }

    @Test func generateNamesEveryOutput() throws {
        for g in OptionTable.Generated.allCases {
            #expect(try CommandLineOptions.parse(["--generate", g.rawValue]).generate == g)
            #expect(!g.text.isEmpty)
        }
        #expect(usageError(["--generate", "pdf"])?.hasPrefix("--generate expects one of man, ") == true)
        #expect(OptionTable.Generated.options.text.split(separator: "\n").count
                == OptionTable.visible.count + OptionTable.visible.compactMap(\.short).count)
    }
}
