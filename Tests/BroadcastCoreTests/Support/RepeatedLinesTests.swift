import Testing
@testable import BroadcastCore
import BroadcastTestSupport

@Suite(.timeLimit(.minutes(1))) struct RepeatedLinesTests {
    @Test func saidOnceThenCounted() {
        let lines = RepeatedLines(windowNs: 10_000_000_000)
        #expect(lines.admit("warning: busy", nowNs: 0) == ["warning: busy"])
        for i in 1...200 { #expect(lines.admit("warning: busy", nowNs: Int64(i) * 1_000_000).isEmpty) }
        #expect(lines.admit("warning: other", nowNs: 300_000_000) == ["warning: other"])
        #expect(lines.flush() == ["warning: busy (repeated 200 more times)"])
        #expect(lines.flush().isEmpty)
    }

    @Test func aRepeatAfterTheWindowIsSaidWithItsCount() {
        let lines = RepeatedLines(windowNs: 1_000_000_000)
        _ = lines.admit("x", nowNs: 0)
        _ = lines.admit("x", nowNs: 500_000_000)
        #expect(lines.admit("x", nowNs: 2_000_000_000) == ["x (and 1 more time in the last 2.0 s)"])
        #expect(lines.admit("x", nowNs: 3_500_000_000) == ["x"])
    }

    @Test func trackingIsBounded() {
        let lines = RepeatedLines(windowNs: 10_000_000_000)
        _ = lines.admit("first", nowNs: 0)
        _ = lines.admit("first", nowNs: 1)
        for i in 1..<RepeatedLines.maxLines { _ = lines.admit("line \(i)", nowNs: Int64(i) + 1) }
        // One more distinct line: the counts so far are said, and tracking starts over.
        #expect(lines.admit("new", nowNs: 1000) == ["first (repeated 1 more time)", "new"])
        #expect(lines.admit("first", nowNs: 1001) == ["first"])
    }
}
