import BroadcastKit

/// Prints one line to stderr, prefixed so users (and tests) can tell it is ours.
func say(_ message: String) { Log.line("broadcast: \(message)") }
