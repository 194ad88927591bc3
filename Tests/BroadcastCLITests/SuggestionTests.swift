import Testing
@testable import BroadcastCLI

@Suite(.timeLimit(.minutes(1))) struct SuggestionTests {
    @Test func distanceCountsEachEditOnce() {
        #expect(Suggestion.distance("", "") == 0)
        #expect(Suggestion.distance("abc", "") == 3)
        #expect(Suggestion.distance("", "ab") == 2)
        #expect(Suggestion.distance("kitten", "sitting") == 3)
        // A swap of neighbours is one edit (Damerau), not two (Levenshtein).
        #expect(Suggestion.distance("--vidoe-bitrate", "--video-bitrate") == 1)
        #expect(Suggestion.distance("ab", "ba") == 1)
        #expect(Suggestion.distance("ca", "abc") == 3)   // optimal string alignment: no edit twice
        #expect(Suggestion.distance("fps", "fps") == 0)
    }

    @Test func suggestsTheClosestOption() {
        let m = CommandLineOptions.unknownOption
        #expect(m("--vidoe-bitrate") == "unknown option '--vidoe-bitrate'; did you mean --video-bitrate? (see --help)")
        #expect(m("--resolution") == "unknown option '--resolution' (see --help)")
        #expect(m("--frobnicate") == "unknown option '--frobnicate' (see --help)")
        #expect(m("--servce") == "unknown option '--servce'; did you mean --service? (see --help)")
        #expect(m("--no-mics") == "unknown option '--no-mics'; did you mean --no-mic? (see --help)")
        #expect(m("--audio-bitrat") == "unknown option '--audio-bitrat'; did you mean --audio-bitrate? (see --help)")
        // A unique prefix is a guess too.
        #expect(m("--print-conf") == "unknown option '--print-conf'; did you mean --print-config? (see --help)")
        // Hidden maintainer options are never suggested.
        #expect(!m("--generat").contains("--generate"))
    }

    @Test func parsingNamesTheSuggestion() {
        #expect(usageError(["--vidoe-bitrate", "100"]) == "unknown option '--vidoe-bitrate'; did you mean --video-bitrate? (see --help)")
        // The value after `=` is never echoed (it may be a key).
        #expect(usageError(["--kye=SECRET"])?.contains("SECRET") == false)
    }

    @Test func farNamesGetNoSuggestion() {
        #expect(Suggestion.closest(to: "--zzzzzzzz", in: ["--fps", "--res"]) == nil)
        #expect(Suggestion.closest(to: "", in: ["--fps"]) == nil)
        #expect(Suggestion.closest(to: "fsp", in: ["fps", "res"]) == "fps")
    }

    @Test func serviceNamesGetASuggestion() {
        #expect(usageError(["--service", "twich"]) == "--service expects one of twitch, youtube, facebook, kick, got 'twich'; did you mean twitch?")
        #expect(usageError(["--service", "myspace"]) == "--service expects one of twitch, youtube, facebook, kick, got 'myspace'")
    }
}
