/// The test source's one picture buffer, allocated once and shared by the painters of both
/// orientations: a rotated frame (HxW) needs exactly as many bytes as an upright one (WxH),
/// so rotating mid-stream allocates nothing.
final class FrameStorage {
    let bytes: UnsafeMutableRawBufferPointer

    init(byteCount: Int) {
        bytes = .allocate(byteCount: byteCount, alignment: 64)
        bytes.initializeMemory(as: UInt8.self, repeating: 0)
    }

    deinit { bytes.deallocate() }
}
