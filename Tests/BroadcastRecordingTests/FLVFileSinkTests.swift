import Foundation
import Testing
@testable import BroadcastRecording
import BroadcastCore
import BroadcastPipeline
import BroadcastFLV
import BroadcastTestSupport

@Suite(.timeLimit(.minutes(5)), .serialized) struct FLVFileSinkTests {
    @Test func writesFileThatFFprobeReads() throws {
        let dir = try TestMedia.scratchDirectory("sink")
        defer { try? FileManager.default.removeItem(at: dir) }
        let source = try TestMedia.makeSourceFLV(in: dir)
        let tags = TestMedia.parseFLV(try TestMedia.readFile(source))
        let expected = try #require(try TestMedia.probe(source))
        #expect(expected["h264"] == 10)
        // What reaches the file: every tag but ffmpeg's closing AVC end of sequence, which carries
        // no packet (TestMedia.send).
        let carried = tags.filter { !($0.type == 9 && $0.body[1] == 2) }
        #expect(carried.count == tags.count - 1)

        let out = dir.appendingPathComponent("out.flv")
        let sink = FLVFileSink(path: out.path)
        try sink.open()
        try TestMedia.send(tags, to: sink)
        sink.close()
        sink.close() // idempotent

        let bytes = try TestMedia.readFile(out)
        #expect(sink.bytesWritten == bytes.count)
        #expect(Array(bytes[0..<13]) == hex("46 4C 56 01 05 00 00 00 09 00 00 00 00"))
        // "@setDataFrame" was stripped: the file's script tag starts with "onMetaData".
        let written = TestMedia.parseFLV(bytes)
        #expect(written.count == carried.count)
        let script = try #require(written.first { $0.type == 18 })
        #expect(Array(script.body.prefix(13)) == hex("02 00 0A") + ascii("onMetaData"))
        #expect(written.map(\.body) == carried.map(\.body))
        #expect(written.map(\.timestampMs) == carried.map(\.timestampMs))
        #expect(try TestMedia.probe(out) == expected)
    }

    @Test func headerFlagsFollowConfiguration() throws {
        let dir = try TestMedia.scratchDirectory("flags")
        defer { try? FileManager.default.removeItem(at: dir) }
        let out = dir.appendingPathComponent("a.flv")
        let sink = FLVFileSink(path: out.path, hasAudio: true, hasVideo: false)
        try sink.open()
        let body = hex("AF 00 12 10")
        try body.withUnsafeBytes { try sink.write(FLVTag(type: .audio, timestampMs: 0x0123_4567, body: $0)) }
        sink.close()
        // Tag header: type 8, size 4, timestamp low 24 bits 23 45 67 + extended 01, stream 0; PreviousTagSize 15.
        #expect(try TestMedia.readFile(out) == hex("46 4C 56 01 04 00 00 00 09 00 00 00 00"
                                                   + "08 00 00 04 23 45 67 01 00 00 00 AF 00 12 10 00 00 00 0F"))
    }

    @Test func openFailureIsFileError() {
        let sink = FLVFileSink(path: "/nonexistent-dir/x.flv")
        #expect(throws: TransportError.self) { try sink.open() }
    }

    /// A device (here /dev/full) is never opened as a recording (`OutputFile`): one line naming
    /// it. A full disk is `fullDiskKeepsFileValid`.
    @Test func devicesAreRefused() {
        let sink = FLVFileSink(path: "/dev/full")
        do {
            try sink.open()
            Issue.record("open on /dev/full should fail")
        } catch {
            guard case .fileError(let message) = error else { Issue.record("wrong error \(error)"); return }
            #expect(message == "/dev/full: is a character device, not a regular file (only a regular file or a new name is written)")
        }
    }

    /// Fills a 64 KB tmpfs: the sink must throw once, cut the file back to whole tags,
    /// and ignore later writes; ffprobe must still read the file.
    @Test func fullDiskKeepsFileValid() throws {
        let mountPoint = try TestMedia.scratchDirectory("tmpfs")
        defer { try? FileManager.default.removeItem(at: mountPoint) }
        let mounted = try TestMedia.run("/bin/mount", ["-t", "tmpfs", "-o", "size=64k", "tmpfs", mountPoint.path])
        try #require(mounted.status == 0, "cannot mount tmpfs: \(mounted.err)")
        defer { _ = try? TestMedia.run("/bin/umount", [mountPoint.path]) }

        let work = try TestMedia.scratchDirectory("src")
        defer { try? FileManager.default.removeItem(at: work) }
        let tags = TestMedia.parseFLV(try TestMedia.readFile(try TestMedia.makeSourceFLV(in: work)))
        let out = mountPoint.appendingPathComponent("full.flv")
        let sink = FLVFileSink(path: out.path)
        try sink.open()
        var failures = 0
        var message = ""
        for round in 0..<200 {
            for tag in tags where tag.type != 18 {
                do {
                    try tag.body.withUnsafeBytes {
                        try sink.write(FLVTag(type: FLVTagType(rawValue: tag.type)!,
                                              timestampMs: tag.timestampMs + UInt32(round) * 1000, body: $0))
                    }
                } catch let TransportError.fileError(m) {
                    failures += 1
                    message = m
                }
            }
        }
        sink.close()
        #expect(failures == 1)
        #expect(message.contains("No space left on device"))
        #expect(sink.hasFailed)
        let bytes = try TestMedia.readFile(out)
        #expect(bytes.count == sink.bytesWritten)
        #expect(bytes.count > 32 << 10)
        // The file ends exactly at a tag boundary: every tag parses and nothing is left over.
        let parsed = TestMedia.parseFLV(bytes)
        let consumed = 13 + parsed.reduce(0) { $0 + 15 + $1.body.count }
        #expect(consumed == bytes.count)
        let counts = try #require(try TestMedia.probe(out))
        #expect((counts["h264"] ?? 0) > 0)
        #expect((counts["aac"] ?? 0) > 0)
    }
}

/// The sink must not let the file's pages pile up in the page cache (charged to the cgroup).
@Test(.timeLimit(.minutes(2))) func fileSinkDropsWrittenPagesFromCache() throws {
    let dir = try TestMedia.scratchDirectory("cache")
    defer { try? FileManager.default.removeItem(at: dir) }
    let out = dir.appendingPathComponent("big.flv")
    let sink = FLVFileSink(path: out.path, hasAudio: false, hasVideo: true, dropCacheInterval: 1 << 20)
    try sink.open()
    var body = [UInt8](repeating: 0x5A, count: 64 << 10)
    body[0] = 0x27; body[1] = 0x01
    for i in 0..<320 { // ~20 MB
        try body.withUnsafeBytes { try sink.write(FLVTag(type: .video, timestampMs: UInt32(i * 33), body: $0)) }
    }
    sink.close()
    let size = sink.bytesWritten
    #expect(size > 20_000_000)

    let fd = open(out.path, O_RDONLY)
    try #require(fd >= 0)
    defer { close(fd) }
    let map = try #require(mmap(nil, size, PROT_READ, MAP_SHARED, fd, 0))
    defer { munmap(map, size) }
    let pageSize = Int(sysconf(Int32(_SC_PAGESIZE)))
    let pages = (size + pageSize - 1) / pageSize
    var vec = [UInt8](repeating: 0, count: pages)
    #expect(mincore(map, size, &vec) == 0)
    let residentBytes = vec.reduce(0) { $0 + Int($1 & 1) } * pageSize
    // Everything was dropped at close; allow slack for pages the kernel kept busy.
    #expect(residentBytes < 2 << 20, "resident \(residentBytes) of \(size) bytes")
}
