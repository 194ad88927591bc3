import BroadcastKit
import Testing
@testable import BroadcastCLI

/// The reconnect settings' one rule (`BroadcastLimits.reconnectAttempts`/`reconnectDelaySeconds`,
/// `ReconnectPolicy.refusal`): the CLI accepts exactly what the library's `validate()` (the C ABI's
/// `bk_config_set_reconnect`, Python, GStreamer) accepts, and refuses the rest in the same words.
/// The CLI once took attempts 0...1000000 and delays from 0.1 s, the C ABI attempts from -1 and
/// delays from 0: each accepted a value the other refused.
@Suite(.timeLimit(.minutes(1))) struct ReconnectRangeTests {
    /// The library's verdict on a policy: nil when `validate()` accepts it, else its words.
    private func library(attempts: Int = 20, delay: Double = 2) -> String? {
        var cfg = BroadcastConfiguration.default
        cfg.reconnect = ReconnectPolicy(maxAttempts: attempts, initialDelaySeconds: delay)
        do { try cfg.validate(); return nil } catch { return error.description }
    }

    @Test func attemptsAtAndPastEachEdgeAgreeWithTheLibrary() throws {
        let r = BroadcastLimits.reconnectAttempts
        for n in [r.lowerBound - 1, r.lowerBound, 0, r.upperBound, r.upperBound + 1] {
            let cli = usageError(["--reconnect-attempts", String(n)])
            if let words = library(attempts: n) {
                #expect(cli == "--reconnect-attempts: \(words)", "attempts \(n)")
                #expect(words.contains("\(r.lowerBound)...\(r.upperBound)"))
            } else {
                #expect(cli == nil, "attempts \(n): the library accepts it, the CLI refused: \(cli ?? "")")
                #expect(try CommandLineOptions.parse(["--reconnect-attempts", String(n)]).reconnectAttempts == n)
            }
        }
        #expect(library(attempts: r.lowerBound) == nil && library(attempts: r.lowerBound - 1) != nil)
        #expect(library(attempts: r.upperBound) == nil && library(attempts: r.upperBound + 1) != nil)
    }

    @Test func delaysAtAndPastEachEdgeAgreeWithTheLibrary() throws {
        let r = BroadcastLimits.reconnectDelaySeconds
        for d in [0, r.lowerBound / 2, r.lowerBound, 2, r.upperBound, r.upperBound + 0.5, -1] {
            let text = d == d.rounded() ? String(Int(d)) : String(d)
            let cli = usageError(["--reconnect-delay", text])
            if let words = library(delay: d) {
                #expect(cli == "--reconnect-delay: \(words)", "delay \(text)")
            } else {
                #expect(cli == nil, "delay \(text): the library accepts it, the CLI refused: \(cli ?? "")")
                #expect(try CommandLineOptions.parse(["--reconnect-delay", text]).reconnectDelay == d)
            }
        }
        #expect(library(delay: r.lowerBound) == nil && library(delay: 0) != nil)
        #expect(library(delay: r.upperBound) == nil && library(delay: r.upperBound + 0.5) != nil)
        #expect(library(delay: .nan) != nil && library(delay: .infinity) != nil)
        #expect(usageError(["--reconnect-delay", "soon"]) == "--reconnect-delay expects a number of seconds, got 'soon'")
    }

    @Test func theCLIDefaultsAreTheLibrarys() throws {
        let o = try CommandLineOptions.parse([])
        #expect(o.reconnectAttempts == ReconnectPolicy.default.maxAttempts)
        #expect(o.reconnectDelay == ReconnectPolicy.default.initialDelaySeconds)
        #expect(library(attempts: o.reconnectAttempts, delay: o.reconnectDelay) == nil)
    }
}
