/// broadcastctl's commands, for its man page (broadcastctl prints the same list in `--help`; the
/// first-contact integration test compares the two).
package enum ControlClientUsage {
    /// `COMMAND [ARGS]` and what it does, in `broadcastctl --help` order.
    package static let commands: [(synopsis: String, text: String)] = [
        ("save-replay [SECONDS] [PATH]", "save a clip from the replay buffer"),
        ("stats", "the --stats-json object, now"),
        ("keyframe", "ask the encoder for a keyframe"),
        ("set-bitrate KBPS", "change the video bitrate"),
        ("stop", "stop the stream cleanly"),
        ("subscribe", "print events (started, warnings, reconnects, bitrate, drops, saved clips, stopped)"),
        ("version", "the protocol and build versions"),
    ]

    /// broadcastctl's exit codes.
    package static let exitCodes: [(code: Int, text: String)] = [
        (0, "the server answered ok"),
        (1, "the server answered with an error"),
        (2, "usage or connection error, or an answer longer than 1 MiB without a newline"),
    ]
}
