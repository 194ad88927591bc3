import Testing
@testable import BroadcastPipeline
import BroadcastCore
import BroadcastTestSupport

@Suite(.timeLimit(.minutes(2))) struct EncoderLadderTests {
    static let requested = VideoEncoderSettings(width: 1920, height: 1080, bitrateKbps: 4500, preset: "veryfast")

    func planned(_ step: EncoderLadder.Step) -> Int {
        MemoryPlan.x264WorkingBytes(step.settings)
            + FramePool.byteCount(width: step.settings.width, height: step.settings.height, capacity: step.pendingFrames)
    }

    @Test func stepsForVeryfastAreOrderedByMemory() {
        let steps = EncoderLadder.steps(requested: Self.requested, pendingFrames: 2, allowDowngrade: true)
        let lean = "veryfast" + EncoderLadder.leanSuffix
        #expect(steps.map(\.label) == ["veryfast", lean, lean + ", 1 pending frame", "ultrafast, 1 pending frame"])
        let bytes = steps.map(planned)
        #expect(zip(bytes, bytes.dropFirst()).allSatisfy { $0 > $1 }, "planned bytes \(bytes)")
        // The first step is exactly what was asked for.
        #expect(steps[0].settings == Self.requested && steps[0].pendingFrames == 2)
    }

    @Test func leanStepKeepsTheFreeToolsAndDropsSubpel() {
        let lean = EncoderLadder.steps(requested: Self.requested, pendingFrames: 2, allowDowngrade: true)[1]
        #expect(lean.settings.preset == "veryfast")
        #expect(lean.pendingFrames == 2)
        let t = lean.settings.tuning
        #expect(t.subpelRefinement == 0 && lean.settings.subpelRefinement == 0)
        #expect(t.weightedPrediction == 0)
        #expect(t.cabac == true && t.deblock == true && t.transform8x8 == true && t.intraPartitions == true)
        #expect(t.adaptiveQuantization == 1)
        // Everything but the tuning is the requested settings.
        var back = lean.settings
        back.tuning = .none
        #expect(back == Self.requested)
        // Dropping sub-pel is the big step: at 1080p it saves more than 12 MB in the plan.
        #expect(MemoryPlan.x264WorkingBytes(Self.requested) - MemoryPlan.x264WorkingBytes(lean.settings) > 12 << 20)
    }

    @Test func onePendingFrameThenUltrafast() {
        let steps = EncoderLadder.steps(requested: Self.requested, pendingFrames: 2, allowDowngrade: true)
        #expect(steps[2].settings == steps[1].settings && steps[2].pendingFrames == 1)
        #expect(steps[3].settings.preset == "ultrafast" && steps[3].settings.tuning.isEmpty && steps[3].pendingFrames == 1)
        // Presets that refine to sub-pel are never tried after the lean step (they need the half-pel planes).
        #expect(!steps.contains { $0.settings.preset == "superfast" })
        // Ultrafast with 2 pending frames would need more than lean with 1: dominated, so not a step.
        var ultrafast2 = steps[3]
        ultrafast2.pendingFrames = 2
        #expect(planned(ultrafast2) > planned(steps[2]))
    }

    @Test func onePendingFrameConfiguredGoesStraightToUltrafast() {
        let steps = EncoderLadder.steps(requested: Self.requested, pendingFrames: 1, allowDowngrade: true)
        #expect(steps.map(\.label) == ["veryfast", "veryfast" + EncoderLadder.leanSuffix, "ultrafast"])
        #expect(steps.allSatisfy { $0.pendingFrames == 1 })
    }

    @Test func mediumGetsTheSameShape() {
        var medium = Self.requested
        medium.preset = "medium"
        let steps = EncoderLadder.steps(requested: medium, pendingFrames: 2, allowDowngrade: true)
        let lean = "medium" + EncoderLadder.leanSuffix
        #expect(steps.map(\.label) == ["medium", lean, lean + ", 1 pending frame", "ultrafast, 1 pending frame"])
    }

    @Test func ultrafastRequestedOnlyLosesAPendingFrame() {
        var ultrafast = Self.requested
        ultrafast.preset = "ultrafast"
        let steps = EncoderLadder.steps(requested: ultrafast, pendingFrames: 2, allowDowngrade: true)
        #expect(steps.map(\.label) == ["ultrafast", "ultrafast, 1 pending frame"])
        #expect(EncoderLadder.steps(requested: ultrafast, pendingFrames: 1, allowDowngrade: true).count == 1)
    }

    @Test func noDowngradeMeansOnlyTheRequestedStep() {
        let steps = EncoderLadder.steps(requested: Self.requested, pendingFrames: 2, allowDowngrade: false)
        #expect(steps.count == 1 && steps[0].settings == Self.requested)
    }

    @Test func chooserTakesTheFirstFitAndStopsThere() {
        let steps = EncoderLadder.steps(requested: Self.requested, pendingFrames: 2, allowDowngrade: true)
        var tried: [String] = []
        let limit = planned(steps[1])
        let index = EncoderLadder.choose(steps) { tried.append($0.label); return planned($0) <= limit }
        #expect(index == 1)
        #expect(tried == Array(steps.prefix(2).map(\.label)))
        #expect(EncoderLadder.choose(steps) { _ in true } == 0)
        #expect(EncoderLadder.choose(steps) { $0.pendingFrames == 1 } == 2)
        #expect(EncoderLadder.choose(steps) { $0.settings.preset == "ultrafast" } == 3)
    }

    @Test func chooserRefusesWhenNothingFits() {
        let steps = EncoderLadder.steps(requested: Self.requested, pendingFrames: 2, allowDowngrade: true)
        var tried = 0
        #expect(EncoderLadder.choose(steps) { _ in tried += 1; return false } == nil)
        #expect(tried == steps.count)
        #expect(EncoderLadder.choose([]) { _ in true } == nil)
    }

    @Test func planShowsTheChosenConfiguration() {
        var plan = MemoryPlan(budgetBytes: 50 << 20, baselineBytes: 1, videoEncoderBytes: 1, audioEncoderBytes: 1,
                              framePoolBytes: 1, audioBytes: 1, stagingBytes: 1, queueBytes: 1)
        #expect(!plan.description.contains("x264 configuration"))
        plan.encoderChoice = "veryfast" + EncoderLadder.leanSuffix
        let first = plan.description.split(separator: "\n").first.map(String.init) ?? ""
        #expect(first.contains("x264 configuration") && first.hasSuffix(plan.encoderChoice))
    }

    /// Weighted prediction is off by default, so it adds nothing; a tuning that turns it on gets
    /// its planes planned in full (they become resident only at the first weighted frame): one
    /// padded luma plane (1344 x 784 at 720p) per thread and weighted reference.
    @Test func weightedPlanesArePlannedOnlyWhenATuningTurnsThemOn() {
        let plain = VideoEncoderSettings(width: 1280, height: 720, preset: "veryfast")
        #expect(X264MemoryModel.weightedPlaneBytes(plain) == 0)
        var simple = plain
        simple.tuning = X264Tuning(weightedPrediction: 1)
        #expect(X264MemoryModel.weightedPlaneBytes(simple) == 1344 * 784 * 2)
        #expect(X264MemoryModel.workingBytes(simple) - X264MemoryModel.workingBytes(plain) == 1344 * 784 * 2)
        var smart = plain
        smart.tuning = X264Tuning(weightedPrediction: 2)
        #expect(X264MemoryModel.weightedPlaneBytes(smart) == 1344 * 784 * 2 * 2)
    }
}
