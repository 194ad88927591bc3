import BroadcastCore
import BroadcastPipeline

/// Big-endian writer of ISO BMFF boxes into memory it does not own (allocated once by its user).
///
/// `begin` reserves a box header and `end` patches its size, so nested boxes are written in one
/// pass. Writing past the end sets `overflowed` instead of trapping; the caller checks it once.
struct MP4BoxWriter {
    private let base: UnsafeMutableRawBufferPointer
    private(set) var count = 0
    private(set) var overflowed = false

    init(_ storage: UnsafeMutableRawBufferPointer) { base = storage }

    var bytes: UnsafeRawBufferPointer { UnsafeRawBufferPointer(rebasing: base[0..<count]) }

    mutating func reset() { count = 0; overflowed = false }

    private mutating func room(_ n: Int) -> Bool {
        if count + n > base.count { overflowed = true; return false }
        return true
    }

    mutating func u8(_ v: UInt8) {
        guard room(1) else { return }
        base[count] = v; count += 1
    }

    mutating func u16(_ v: UInt16) { u8(UInt8(v >> 8)); u8(UInt8(v & 0xFF)) }
    mutating func u24(_ v: UInt32) { u8(UInt8((v >> 16) & 0xFF)); u16(UInt16(v & 0xFFFF)) }
    mutating func u32(_ v: UInt32) { u16(UInt16(v >> 16)); u16(UInt16(v & 0xFFFF)) }
    mutating func u64(_ v: UInt64) { u32(UInt32(v >> 32)); u32(UInt32(v & 0xFFFF_FFFF)) }
    mutating func zeros(_ n: Int) { for _ in 0..<n { u8(0) } }

    /// A four-character code, e.g. "moov".
    mutating func fourCC(_ s: StaticString) {
        let p = s.utf8Start
        for i in 0..<4 { u8(p[i]) }
    }

    mutating func bytes(_ b: UnsafeRawBufferPointer) {
        guard room(b.count), let src = b.baseAddress, b.count > 0 else { return }
        (base.baseAddress! + count).copyMemory(from: src, byteCount: b.count)
        count += b.count
    }

    /// Starts a box; returns the offset `end` needs.
    mutating func begin(_ type: StaticString) -> Int {
        let at = count
        u32(0)
        fourCC(type)
        return at
    }

    /// Starts a full box (version and 24-bit flags after the type).
    mutating func beginFull(_ type: StaticString, version: UInt8, flags: UInt32) -> Int {
        let at = begin(type)
        u8(version)
        u24(flags)
        return at
    }

    /// Patches the size of the box started at `at`.
    mutating func end(_ at: Int) { patch32(at: at, UInt32(count - at)) }

    /// Overwrites four bytes at `at` (sizes and offsets known only later).
    mutating func patch32(at: Int, _ v: UInt32) {
        guard at + 4 <= count else { overflowed = true; return }
        base[at] = UInt8(v >> 24); base[at + 1] = UInt8((v >> 16) & 0xFF)
        base[at + 2] = UInt8((v >> 8) & 0xFF); base[at + 3] = UInt8(v & 0xFF)
    }
}
