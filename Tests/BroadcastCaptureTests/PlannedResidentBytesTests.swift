import BroadcastKit
import Testing
@testable import BroadcastCapture

/// Each source's `plannedResidentBytes` matches the buffer it will allocate, before it starts.
@Suite(.timeLimit(.minutes(2))) struct PlannedResidentBytesTests {
    @Test func testSourceCanvasByPixelFormat() throws {
        var s = TestSourceSettings()
        s.width = 640
        s.height = 360
        #expect(try TestSource(settings: s).plannedResidentBytes == 640 * 360 * 3 / 2)
        s.pixelFormat = .bgrx
        #expect(try TestSource(settings: s).plannedResidentBytes == 640 * 360 * 4)
        s.video = false
        #expect(try TestSource(settings: s).plannedResidentBytes == 0)
    }

    @Test func y4mIsOneFrameOfItsHeaderOnceKnown() throws {
        let path = try temporaryFile(Array("YUV4MPEG2 W322 H180 F30:1 C420\n".utf8), name: "planned.y4m")
        let y4m = Y4MSource(path: path)
        #expect(y4m.plannedResidentBytes == 0)
        try y4m.open()
        // Odd chroma width rounds up: 161 x 90 per chroma plane.
        #expect(y4m.plannedResidentBytes == 322 * 180 + 2 * 161 * 90)
    }

    @Test func pcmIsItsReadBuffer() throws {
        let format = try PCMFormat(parsing: "f32le:44100:2")
        let pcm = try PCMSource(path: "-", format: format, framesPerBuffer: 512)
        #expect(pcm.plannedResidentBytes == 512 * 8)
    }
}
