import Testing
@testable import BroadcastPipeline
import BroadcastCore
import BroadcastTestSupport

#if canImport(Glibc)
import Glibc
#endif

@Suite(.timeLimit(.minutes(5))) struct ResamplerTests {
    /// soxr is set up on the first `process`, not at init; one second of 44.1 kHz input comes out
    /// as about one second at 48 kHz, with the tone's level kept.
    @Test func activatesOnFirstProcessAndConvertsTheRate() throws {
        let r = try Resampler(inputRate: 44_100)
        #expect(!r.isActive)
        #expect(r.delayFrames == 0)
        let frames = 441
        var input = [Float](repeating: 0, count: frames * 2)
        var produced = 0
        var peak: Float = 0
        for block in 0..<100 {
            for i in 0..<frames {
                let v = Float(0.5 * sin(2 * Double.pi * 1000 * Double(block * frames + i) / 44_100))
                input[2 * i] = v
                input[2 * i + 1] = v
            }
            let out = try #require(input.withUnsafeBufferPointer { r.process($0.baseAddress!, frames: frames) })
            produced += out.count / 2
            if block > 10 { for s in out { peak = max(peak, abs(s)) } }
        }
        #expect(r.isActive)
        #expect(r.failure == nil)
        // What soxr still holds back is its delay; together they make the full second.
        #expect(abs(Double(produced) + r.delayFrames - 48_000) < 48)
        #expect(peak > 0.45 && peak < 0.55)
    }
}
