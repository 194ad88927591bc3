import Testing
@testable import BroadcastRTMP
import BroadcastCore
import BroadcastPipeline
import BroadcastFLV
import BroadcastNetwork
import BroadcastTestSupport

/// AMF0 decoding (AMF0 spec §2) of hand-made vectors and of what `AMF0Writer` writes.
@Suite(.timeLimit(.minutes(2)))
struct AMF0ReaderTests {
    @Test func scalars() throws {
        var r = AMF0Reader(hex("00 3FF0000000000000  01 01  02 0003 616263  05 06  0C 00000002 6869  0B 4000000000000000 0000"))
        #expect(try r.read() == .number(1))
        #expect(try r.read() == .boolean(true))
        #expect(try r.read() == .string("abc"))
        #expect(try r.read() == .null)
        #expect(try r.read() == .undefined)
        #expect(try r.read() == .string("hi")) // long string
        #expect(try r.read() == .date(2))
        #expect(r.isAtEnd)
    }

    /// nginx-rtmp's reply to connect: _result, 1, {fmsVer, capabilities, mode}, {level, code, description, objectEncoding}.
    @Test func connectResultAsNginxSendsIt() throws {
        var bytes = hex("02 0007") + ascii("_result") + hex("00 3FF0000000000000")
        bytes += hex("03 0006") + ascii("fmsVer") + hex("02 000D") + ascii("FMS/3,0,1,123")
        bytes += hex("000C") + ascii("capabilities") + hex("00 403F000000000000") + hex("000009")
        bytes += hex("03 0005") + ascii("level") + hex("02 0006") + ascii("status")
        bytes += hex("0004") + ascii("code") + hex("02 001D") + ascii("NetConnection.Connect.Success")
        bytes += hex("000E") + ascii("objectEncoding") + hex("00 0000000000000000") + hex("000009")
        let reply = try #require(RTMPCommand.Reply(payload: bytes))
        #expect(reply.name == "_result")
        #expect(reply.transaction == 1)
        #expect(reply.arguments.count == 2)
        #expect(reply.arguments[0]["fmsVer"] == .string("FMS/3,0,1,123"))
        #expect(reply.arguments[0]["capabilities"] == .number(31))
        #expect(reply.code == "NetConnection.Connect.Success")
        #expect(reply.level == "status")
    }

    @Test func containersRoundTripThroughTheWriter() throws {
        var buffer = [UInt8](repeating: 0, count: 256)
        let written = buffer.withUnsafeMutableBytes { raw -> Int in
            var w = AMF0Writer(buffer: raw)
            w.writeString("onStatus")
            w.writeNumber(0)
            w.writeNull()
            w.writeObjectStart()
            w.writePropertyKey("level"); w.writeString("error")
            w.writePropertyKey("code"); w.writeString("NetStream.Publish.BadName")
            w.writePropertyKey("nested"); w.writeECMAArrayStart(count: 1)
            w.writePropertyKey("ok"); w.writeBoolean(false)
            w.writeObjectEnd()
            w.writeObjectEnd()
            return w.offset
        }
        var r = AMF0Reader(Array(buffer.prefix(written)))
        let values = try r.readAll()
        #expect(values.count == 4)
        #expect(values[3] == .object([AMF0Property("level", .string("error")),
                                      AMF0Property("code", .string("NetStream.Publish.BadName")),
                                      AMF0Property("nested", .ecmaArray([AMF0Property("ok", .boolean(false))]))]))
        let reply = try #require(RTMPCommand.Reply(payload: Array(buffer.prefix(written))))
        #expect(reply.level == "error")
        #expect(reply.code == "NetStream.Publish.BadName")
    }

    @Test func strictArrayAndTypedObject() throws {
        var r = AMF0Reader(hex("0A 00000002 00 4000000000000000 02 0001 78") + hex("10 0001 43 0001 61 05 000009"))
        #expect(try r.read() == .strictArray([.number(2), .string("x")]))
        #expect(try r.read() == .object([AMF0Property("a", .null)]))
    }

    @Test func malformedInputThrows() {
        var truncated = AMF0Reader(hex("02 0010 6162"))
        #expect(throws: AMF0Error.truncated) { try truncated.read() }
        var noEnd = AMF0Reader(hex("03 0001 61 05"))
        #expect(throws: AMF0Error.truncated) { try noEnd.read() }
        var avmPlus = AMF0Reader(hex("11 00"))
        #expect(throws: AMF0Error.unsupportedMarker(0x11)) { try avmPlus.read() }
        var liar = AMF0Reader(hex("0A FFFFFFFF 05"))
        #expect(throws: AMF0Error.truncated) { try liar.read() }
        // 64 nested objects: refused, not a stack overflow.
        var deep = AMF0Reader(Array(repeating: hex("03 0001 61"), count: 64).flatMap { $0 } + [0x05])
        #expect(throws: AMF0Error.tooDeep) { try deep.read() }
        #expect(RTMPCommand.Reply(payload: hex("00 3FF0000000000000")) == nil) // no command name
    }
}
