import Testing
@testable import BroadcastRTMP
import BroadcastCore
import BroadcastPipeline
import BroadcastNetwork
import BroadcastTestSupport

/// The commands a publisher sends (RTMP 1.0 spec §7.2) and the plain handshake packets (§5.2).
@Suite(.timeLimit(.minutes(2)))
struct RTMPCommandTests {
    static func encode(_ body: (UnsafeMutableRawBufferPointer) -> Int?) -> [UInt8] {
        var buffer = [UInt8](repeating: 0, count: 1024)
        let n = buffer.withUnsafeMutableBytes { body($0) }
        return Array(buffer.prefix(n ?? 0))
    }

    @Test func connectCarriesAppAndTcUrlButNoKey() throws {
        let url = try RTMPURL(url: "rtmp://ingest.example:1936/live", streamKey: "SECRET-key")
        #expect(url.tcUrl == "rtmp://ingest.example:1936/live")
        let bytes = Self.encode { RTMPCommand.connect(app: url.app, tcUrl: url.tcUrl, into: $0) }
        var reader = AMF0Reader(bytes)
        let values = try reader.readAll()
        #expect(values[0] == .string("connect"))
        #expect(values[1] == .number(1))
        #expect(values[2] == .object([AMF0Property("app", .string("live")), AMF0Property("type", .string("nonprivate")),
                                      AMF0Property("flashVer", .string(RTMPCommand.flashVersion)),
                                      AMF0Property("tcUrl", .string("rtmp://ingest.example:1936/live"))]))
        #expect(!String(decoding: bytes, as: UTF8.self).contains("SECRET"))
    }

    /// E-RTMP v2: `capsEx` (reconnect) is the last property when asked for, absent otherwise.
    @Test func connectAnnouncesCapsExOnlyWhenAsked() throws {
        let with = Self.encode { RTMPCommand.connect(app: "live", tcUrl: "rtmp://h/live", capsEx: RTMPCommand.capsExReconnect, into: $0) }
        var r = AMF0Reader(with)
        guard case .object(let props) = try r.readAll()[2] else { Issue.record("no command object"); return }
        #expect(props.last == AMF0Property("capsEx", .number(1)))
        #expect(props.count == 5)
        let without = Self.encode { RTMPCommand.connect(app: "live", tcUrl: "rtmp://h/live", into: $0) }
        #expect(!String(decoding: without, as: UTF8.self).contains("capsEx"))
    }

    @Test func publishSequence() throws {
        func values(_ b: [UInt8]) throws -> [AMF0Value] { var r = AMF0Reader(b); return try r.readAll() }
        #expect(try values(Self.encode { RTMPCommand.streamNameCommand("FCPublish", transaction: 3, key: "k1", into: $0) })
                == [.string("FCPublish"), .number(3), .null, .string("k1")])
        #expect(try values(Self.encode { RTMPCommand.createStream(into: $0) }) == [.string("createStream"), .number(4), .null])
        #expect(try values(Self.encode { RTMPCommand.publish(key: "k1", into: $0) })
                == [.string("publish"), .number(5), .null, .string("k1"), .string("live")])
        #expect(try values(Self.encode { RTMPCommand.deleteStream(1, into: $0) })
                == [.string("deleteStream"), .number(0), .null, .number(1)])
        // A buffer too small is nil, never a partial command.
        var tiny = [UInt8](repeating: 0, count: 8)
        #expect(tiny.withUnsafeMutableBytes { RTMPCommand.publish(key: "k1", into: $0) } == nil)
    }

    @Test func handshakePackets() {
        var c0c1 = [UInt8](repeating: 0, count: 1 + 1536)
        c0c1.withUnsafeMutableBytes { RTMPHandshake.writeC0C1(into: $0.baseAddress!, time: 0x0102_0304, seed: 42) }
        #expect(Array(c0c1.prefix(9)) == hex("03 01020304 00000000"))
        #expect(Set(c0c1[9...]).count > 200, "C1's filler should look random")
        var s1 = [UInt8](repeating: 0, count: 1536)
        for i in s1.indices { s1[i] = UInt8(truncatingIfNeeded: i &* 13) }
        var c2 = [UInt8](repeating: 0, count: 1536)
        c2.withUnsafeMutableBytes { out in
            s1.withUnsafeBytes { RTMPHandshake.writeC2(into: out.baseAddress!, echoing: $0.baseAddress!, readTime: 0x0A0B_0C0D) }
        }
        #expect(Array(c2.prefix(4)) == Array(s1.prefix(4)))
        #expect(Array(c2[4..<8]) == hex("0A0B0C0D"))
        #expect(Array(c2[8...]) == Array(s1[8...]))
    }
}
