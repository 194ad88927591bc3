import Testing
@testable import BroadcastCore
import BroadcastTestSupport

@Test(.timeLimit(.minutes(1))) func rejectsShortPackedBuffer() {
    let bytes = UnsafeMutableRawBufferPointer.allocate(byteCount: 100, alignment: 16)
    defer { bytes.deallocate() }
    let f = VideoFrame(packed: .bgra, width: 10, height: 10, stride: 40, bytes: UnsafeRawBufferPointer(bytes), pts: 0)
    #expect(f.validate() != nil)
}

@Test(.timeLimit(.minutes(1))) func acceptsExactPackedBuffer() {
    let bytes = UnsafeMutableRawBufferPointer.allocate(byteCount: 400, alignment: 16)
    defer { bytes.deallocate() }
    let f = VideoFrame(packed: .bgrx, width: 10, height: 10, stride: 40, bytes: UnsafeRawBufferPointer(bytes), pts: 0)
    #expect(f.validate() == nil)
}

@Test(.timeLimit(.minutes(1))) func rejectsStrideBelowWidth() {
    let bytes = UnsafeMutableRawBufferPointer.allocate(byteCount: 4000, alignment: 16)
    defer { bytes.deallocate() }
    let f = VideoFrame(packed: .rgba, width: 10, height: 10, stride: 39, bytes: UnsafeRawBufferPointer(bytes), pts: 0)
    #expect(f.validate()?.contains("stride") == true)
}

@Test(.timeLimit(.minutes(1))) func audioValidation() {
    let bytes = UnsafeMutableRawBufferPointer.allocate(byteCount: 4096, alignment: 16)
    defer { bytes.deallocate() }
    let ok = AudioBuffer(format: .s16, channels: 2, sampleRate: 48_000, frameCount: 1024, data: UnsafeRawBufferPointer(bytes), pts: 0)
    #expect(ok.validate() == nil)
    var bad = ok
    bad.sampleRate = 22_050
    #expect(bad.validate() != nil)
    bad = ok
    bad.channels = 6
    #expect(bad.validate() != nil)
    bad = ok
    bad.frameCount = 2048
    #expect(bad.validate() != nil)
}
