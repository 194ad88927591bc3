import BroadcastCore
import BroadcastPipeline
import BroadcastNetwork

/// Writes big-endian integers and raw bytes at an advancing offset into memory the caller has
/// already sized (no bounds checks: callers reserve the exact worst case first).
struct ByteCursor {
    let base: UnsafeMutableRawPointer
    private(set) var offset = 0

    init(base: UnsafeMutableRawPointer, offset: Int = 0) {
        self.base = base
        self.offset = offset
    }

    mutating func put(_ byte: UInt8) {
        base.storeBytes(of: byte, toByteOffset: offset, as: UInt8.self)
        offset += 1
    }

    mutating func put16(_ v: UInt16) {
        put(UInt8(truncatingIfNeeded: v >> 8)); put(UInt8(truncatingIfNeeded: v))
    }

    mutating func put24(_ v: UInt32) {
        put(UInt8(truncatingIfNeeded: v >> 16)); put(UInt8(truncatingIfNeeded: v >> 8)); put(UInt8(truncatingIfNeeded: v))
    }

    mutating func put32(_ v: UInt32) {
        put(UInt8(truncatingIfNeeded: v >> 24)); put24(v)
    }

    mutating func put32LE(_ v: UInt32) {
        put(UInt8(truncatingIfNeeded: v)); put(UInt8(truncatingIfNeeded: v >> 8))
        put(UInt8(truncatingIfNeeded: v >> 16)); put(UInt8(truncatingIfNeeded: v >> 24))
    }

    mutating func copy(_ source: UnsafeRawPointer, count: Int) {
        (base + offset).copyMemory(from: source, byteCount: count)
        offset += count
    }
}
