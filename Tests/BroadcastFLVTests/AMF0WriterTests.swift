import Testing
@testable import BroadcastFLV
import BroadcastPipeline
import BroadcastCore
import BroadcastTestSupport

@Suite(.timeLimit(.minutes(2))) struct AMF0WriterTests {
    @Test func encodesScalarsPerAMF0Spec() {
        let bytes = captureBytes(capacity: 64) { buf in
            var w = AMF0Writer(buffer: buf)
            w.writeNumber(1.0)
            w.writeNumber(30.0)
            w.writeBoolean(true)
            w.writeBoolean(false)
            w.writeString("ab")
            w.writeNull()
            return w.overflowed ? nil : w.offset
        }
        #expect(bytes == hex("""
            00 3F F0 00 00 00 00 00 00
            00 40 3E 00 00 00 00 00 00
            01 01
            01 00
            02 00 02 61 62
            05
            """))
    }

    @Test func encodesECMAArrayWithKeysAndEnd() {
        let bytes = captureBytes(capacity: 64) { buf in
            var w = AMF0Writer(buffer: buf)
            w.writeECMAArrayStart(count: 2)
            w.writePropertyKey("w")
            w.writeNumber(2.0)
            w.writePropertyKey("s")
            w.writeString("")
            w.writeObjectEnd()
            return w.overflowed ? nil : w.offset
        }
        #expect(bytes == hex("08 00 00 00 02  00 01 77  00 40 00 00 00 00 00 00 00  00 01 73  02 00 00  00 00 09"))
    }

    @Test func refusesToWritePastTheEnd() {
        let buf = UnsafeMutableRawBufferPointer.allocate(byteCount: 12, alignment: 8)
        defer { buf.deallocate() }
        buf.initializeMemory(as: UInt8.self, repeating: 0xEE)
        // Only the first 8 bytes belong to the writer; the rest is a guard zone.
        let window = UnsafeMutableRawBufferPointer(rebasing: buf[0..<8])
        var w = AMF0Writer(buffer: window)
        let fitted = w.writeString("abc")    // 6 bytes
        let overflowed = w.writeNumber(1)    // needs 9, only 2 left
        #expect(fitted)
        #expect(!overflowed)
        #expect(w.overflowed)
        #expect(w.offset == 6)
        let afterOverflow = w.writeNull()    // sticky: nothing more after an overflow
        #expect(!afterOverflow)
        #expect(Array(buf[6..<12]) == [0xEE, 0xEE, 0xEE, 0xEE, 0xEE, 0xEE])
    }

    @Test func rejectsOverlongShortString() {
        let long = String(repeating: "x", count: 70_000)
        let buf = UnsafeMutableRawBufferPointer.allocate(byteCount: 80_000, alignment: 8)
        defer { buf.deallocate() }
        var w = AMF0Writer(buffer: buf)
        let ok = w.writeString(long)
        #expect(!ok)
        #expect(w.offset == 0)
    }
}
