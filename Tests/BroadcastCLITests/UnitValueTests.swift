import Testing
@testable import BroadcastCLI

private let goodBitrates: [(String, Int)] = [
        ("2500", 2500), ("2500k", 2500), ("2500K", 2500), ("2.5M", 2500), ("2.5m", 2500), ("6M", 6000),
        ("128k", 128), ("0.128M", 128), ("2500kbps", 2500), ("2.5Mbps", 2500), ("128kb", 128), ("1G", 1_000_000),
        ("96.4k", 96), ("96.6", 97),
]

private let goodSizes: [(String, Int)] = [
    ("52428800", 52_428_800), ("50M", 52_428_800), ("50m", 52_428_800), ("50MB", 52_428_800), ("50MiB", 52_428_800),
    ("512K", 524_288), ("512k", 524_288), ("512KB", 524_288), ("1G", 1_073_741_824), ("1.5G", 1_610_612_736),
    ("0", 0), ("512B", 512), ("1T", 1_099_511_627_776),
]

@Suite(.timeLimit(.minutes(2))) struct UnitValueTests {
    @Test(arguments: goodBitrates)
    func bitrates(text: String, kbps: Int) {
        #expect(UnitValue.kbps(text) == kbps)
    }

    @Test(arguments: ["", "k", "M", "abc", "-5", "+5", "2500x", "1e3", "inf", "nan", "2.5.1M", "2500 k", "0x10", "kbps", "2500kk", "2500bps", "2500b"])
    func badBitrates(text: String) {
        #expect(UnitValue.kbps(text) == nil)
    }

    @Test(arguments: goodSizes)
    func sizes(text: String, bytes: Int) {
        #expect(UnitValue.bytes(text) == bytes)
    }

    @Test(arguments: ["", "M", "MB", "B", "iB", "5iB", "abc", "-1M", "1.5", "50X", "1e6", "inf", "2T", "50 M", "5MM"])
    func badSizes(text: String) {
        #expect(UnitValue.bytes(text) == nil)
    }
}
