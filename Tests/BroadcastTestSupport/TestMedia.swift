import Foundation
import BroadcastCore
import BroadcastPipeline
import BroadcastFLV

/// One tag read back from an FLV file (test-only parser; production verification uses ffprobe).
package struct ParsedTag {
    package var type: UInt8
    package var timestampMs: UInt32
    package var body: [UInt8]
    package var isKeyframe: Bool { type == 9 && (body.first ?? 0) >> 4 == 1 }

    package init(type: UInt8, timestampMs: UInt32, body: [UInt8]) {
        self.type = type
        self.timestampMs = timestampMs
        self.body = body
    }
}

package enum TestMedia {
    /// A fresh scratch directory under /tmp.
    package static func scratchDirectory(_ name: String) throws -> URL {
        let dir = URL(fileURLWithPath: "/tmp/flv-tests-\(getpid())-\(name)-\(UInt32.random(in: 0...UInt32.max))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        return dir
    }

    /// Runs a program and returns (exit status, stdout, stderr).
    @discardableResult
    package static func run(_ path: String, _ args: [String]) throws -> (status: Int32, out: String, err: String) {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: path)
        p.arguments = args
        let out = Pipe(), err = Pipe()
        p.standardOutput = out
        p.standardError = err
        try p.run()
        let o = out.fileHandleForReading.readDataToEndOfFile()
        let e = err.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        return (p.terminationStatus, String(decoding: o, as: UTF8.self), String(decoding: e, as: UTF8.self))
    }

    /// A 1 s H.264 (160x120, 10 fps) + AAC (44.1 kHz) FLV made by ffmpeg.
    package static func makeSourceFLV(in dir: URL) throws -> URL {
        let url = dir.appendingPathComponent("source.flv")
        let r = try run("/usr/bin/ffmpeg", ["-hide_banner", "-loglevel", "error", "-y",
                                            "-f", "lavfi", "-i", "testsrc=size=160x120:rate=10",
                                            "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=44100",
                                            "-t", "1", "-c:v", "libx264", "-g", "5", "-bf", "0",
                                            "-c:a", "aac", "-b:a", "64k", "-f", "flv", url.path])
        precondition(r.status == 0, "ffmpeg failed: \(r.err)")
        return url
    }

    /// Parses every tag after the FLV header.
    package static func parseFLV(_ data: [UInt8]) -> [ParsedTag] {
        guard data.count >= 13, data[0] == 0x46, data[1] == 0x4C, data[2] == 0x56 else { return [] }
        var tags: [ParsedTag] = []
        var at = 13
        while at + 11 <= data.count {
            let size = Int(data[at + 1]) << 16 | Int(data[at + 2]) << 8 | Int(data[at + 3])
            let ts = UInt32(data[at + 7]) << 24 | UInt32(data[at + 4]) << 16 | UInt32(data[at + 5]) << 8 | UInt32(data[at + 6])
            guard at + 11 + size + 4 <= data.count else { break }
            tags.append(ParsedTag(type: data[at], timestampMs: ts, body: Array(data[(at + 11)..<(at + 11 + size)])))
            at += 11 + size + 4
        }
        return tags
    }

    package static func readFile(_ url: URL) throws -> [UInt8] { [UInt8](try Data(contentsOf: url)) }

    /// ffprobe's view: codec name -> packet count, or nil when ffprobe cannot read the file.
    package static func probe(_ url: URL) throws -> [String: Int]? {
        let r = try run("/usr/bin/ffprobe", ["-v", "error", "-count_packets",
                                             "-show_entries", "stream=codec_name,nb_read_packets",
                                             "-of", "csv=p=0", url.path])
        guard r.status == 0 else { return nil }
        var result: [String: Int] = [:]
        for line in r.out.split(separator: "\n") {
            let parts = line.split(separator: ",")
            if parts.count == 2, let n = Int(parts[1]) { result[String(parts[0])] = n }
        }
        return result
    }

    /// Writes parsed tags through a sink, converting script tags to the RTMP "@setDataFrame" form.
    /// A built-in sink gets each tag as the packet it carries (`FLVTag.packet`).
    package static func send(_ tags: [ParsedTag], to sink: any DestinationSink) throws {
        for tag in tags {
            var body = tag.body
            if tag.type == 18 { body = [0x02, 0x00, 0x0D] + Array("@setDataFrame".utf8) + body }
            // An AVC end of sequence (ffmpeg ends its files with one) carries no packet: the engine
            // never sends one, and a packet sink has nothing to take.
            if sink is PacketSink && tag.type == 9 && body.count > 1 && body[1] == 2 { continue }
            // Mutable: a packet sink frames FLV in the packet's headroom, which is this copy's bytes.
            try body.withUnsafeMutableBytes { raw in
                let flv = FLVTag(type: FLVTagType(rawValue: tag.type)!, timestampMs: tag.timestampMs,
                                 body: UnsafeRawBufferPointer(raw), isKeyframe: tag.isKeyframe, isHeader: tag.type == 18)
                if let packets = sink as? PacketSink { try packets.write(flv.packet) } else { try (sink as! TagSink).write(flv) }
            }
        }
    }
}
