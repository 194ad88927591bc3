import Testing
@testable import BroadcastCapture

@Test(.timeLimit(.minutes(1))) func captureErrorDescribesItself() {
    let e = CaptureError(.badInput, "y4m: missing header")
    #expect(e.description == "y4m: missing header")
    #expect(e.kind == .badInput)
}
