import BroadcastKit

/// Warnings said once, then counted while they repeat (`RepeatedLines`): a local control client
/// asking for the same refused request in a loop cannot flood the log.
let repeatedWarnings = RepeatedLines()

/// Prints one line to stderr, prefixed so users (and tests) can tell it is ours. A warning that
/// repeats within 10 s is counted instead (`sayRepeatedCounts` says the counts at the end).
func say(_ message: String) {
    // Bytes, not `hasPrefix`: String comparison is Unicode-aware and its code would be paged in
    // by the first line said after start-up (a replay clip's, measured: +0.6 MB VmHWM).
    guard message.utf8.starts(with: "warning: ".utf8) else {
        Log.line("broadcast: \(message)")
        return
    }
    for line in repeatedWarnings.admit(message) { Log.line("broadcast: \(line)") }
}

/// The counts of warnings held back since they were last said, one line each.
func sayRepeatedCounts() {
    for line in repeatedWarnings.flush() { Log.line("broadcast: \(line)") }
}
