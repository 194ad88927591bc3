/// Bytes handed out by AddressSanitizer's allocator and not yet freed: the whole process heap
/// (every target is built with -sanitize=fuzzer,address, so every malloc goes through it).
@_silgen_name("__sanitizer_get_current_allocated_bytes")
func sanitizerAllocatedBytes() -> Int

enum HeapBytes {
    static var inUse: Int { sanitizerAllocatedBytes() }
}
