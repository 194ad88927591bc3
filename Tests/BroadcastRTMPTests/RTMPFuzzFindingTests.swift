import Testing
#if canImport(Glibc)
import Glibc
#endif
@testable import BroadcastRTMP
import BroadcastCore
import BroadcastPipeline
import BroadcastNetwork
import BroadcastTestSupport

/// Findings of the coverage-guided fuzzer (scripts/fuzz --target rtmp-chunk / rtmp-url), each
/// from its saved input in Fuzz/reproducers/.
@Suite(.timeLimit(.minutes(1))) struct RTMPFuzzFindingTests {
    /// The process's mapped bytes (VmSize): a reservation shows here even when never touched.
    static func mappedBytes() -> Int {
        let fd = open("/proc/self/statm", O_RDONLY)
        guard fd >= 0 else { return 0 }
        defer { close(fd) }
        var buf = [UInt8](repeating: 0, count: 128)
        let n = read(fd, &buf, buf.count)
        guard n > 0 else { return 0 }
        let pages = buf[0..<n].prefix { $0 != 0x20 }.reduce(0) { $0 * 10 + Int($1 - 48) }
        return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
    }

    /// Fuzz/reproducers/rtmp-chunk/announced-length-reserved: the reader reserved each message's
    /// announced length when its first chunk arrived (526 KB held after 158 input bytes). With chunk
    /// size 1, 1000 chunk streams that each announce 1 MB and send 1 byte made it map 1 GB for 13 KB
    /// of input. Now it holds what arrived, or ends the stream with a protocol error.
    @Test func announcedLengthsAreNotReserved() {
        let reader = RTMPChunkReader()
        // Set Chunk Size 1 (chunk stream 2, message stream 0).
        reader.append([0x02, 0, 0, 0, 0, 0, 4, 1, 0, 0, 0, 0, 0, 0, 0, 1])
        var input: [UInt8] = []
        for csid in 0..<1000 {
            // Basic header fmt 0 with a 2-byte id (64 + csid), then ts, length 1 MB, type 20, stream 0, one byte.
            input += [0x01, UInt8(csid & 0xFF), UInt8(csid >> 8), 0, 0, 0, 0x10, 0x00, 0x00, 20, 0, 0, 0, 0, 0x41]
        }
        let before = Self.mappedBytes()
        reader.append(input)
        var error: RTMPProtocolError?
        do { while try reader.next() != nil {} } catch let e { error = e }
        let grown = Self.mappedBytes() - before
        #expect(grown < 256 << 20, "the reader mapped \(grown >> 20) MB for \(input.count) input bytes (error: \(String(describing: error)))")
    }

    /// Fuzz/reproducers/rtmp-url/unbracketed-ipv6-host: a host with ':' outside brackets was split at
    /// its last colon, so rtmp://::1/live meant host ":" on port 1.
    @Test func aHostWithAColonNeedsBrackets() throws {
        for url in ["rtmp://::1/live", "rtmp://a:b:1935/live/key", "rtmp://\u{FFFD}::1]:193/4live/k"] {
            #expect(throws: RTMPURLError.ipv6WithoutBrackets) { try RTMPURL(parsing: url) }
        }
        #expect(try RTMPURL(parsing: "rtmp://[::1]:1936/live/k").host == "::1")
        #expect(try RTMPURL(parsing: "rtmp://host:1936/live/k").port == 1936)
    }

    /// Found by the rtmp-url oracle "no '/' in host or app": the URL was split on Characters, and a
    /// "/" followed by a combining mark is one Character that is not "/". So in
    /// rtmp://host/\u{301}live/KEY the host was "host/\u{301}live" and the key became the app,
    /// sent in tcUrl and shown by `redacted`.
    @Test func aCombiningMarkAfterASlashDoesNotMoveTheKey() throws {
        let u = try RTMPURL(parsing: "rtmp://host/\u{301}live/KEY")
        #expect(u.host == "host")
        #expect(u.streamKey == "KEY")
        #expect(!u.redacted.contains("KEY") && !u.tcUrl.contains("KEY"))
        #expect(throws: RTMPURLError.ipv6WithoutBrackets) { try RTMPURL(parsing: "rtmp://a:\u{301}b:80/live") }
    }

    /// Fuzz/reproducers/rtmp-url/bracketed-non-ipv6-host: rtmp://[[*]:5/l( was accepted with host "[*",
    /// which prints back (no ':', so no brackets) as rtmp://[*:5/l( and no longer parses.
    @Test func onlyAnIPv6AddressGoesInBrackets() throws {
        for url in ["rtmp://[[*]:5/l(/", "rtmp://[host]/live", "rtmp://[[::1]/live"] {
            #expect(throws: RTMPURLError.invalidIPv6) { try RTMPURL(parsing: url) }
        }
        let u = try RTMPURL(parsing: "rtmp://[fe80::1%25eth0]:1935/live/k")
        #expect(try RTMPURL(parsing: u.fullURL) == u)
    }
}
