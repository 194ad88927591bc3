extension OptionTable.Generated {
    /// What `broadcast --generate` prints for this choice; scripts/gen-docs writes it to
    /// docs/man/ and completions/, and the first-contact test compares the committed files.
    package var text: String {
        switch self {
        case .man: return ManPage.broadcast
        case .manBroadcastctl: return ManPage.broadcastctl
        case .bash: return Completions.bash
        case .zsh: return Completions.zsh
        case .fish: return Completions.fish
        case .options:
            // The visible option names, one a line: what the drift test holds the others to.
            return OptionTable.visible.flatMap { [$0.short].compactMap { $0 } + [$0.name] }.joined(separator: "\n") + "\n"
        }
    }
}
