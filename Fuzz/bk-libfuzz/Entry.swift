#if canImport(Glibc)
import Glibc
#endif

// The libFuzzer entry points. The target is named by $BK_FUZZ_TARGET (scripts/fuzz sets it), so one
// build serves every target; libFuzzer provides main. Built only by scripts/fuzz (Package.swift
// declares this target when BK_LIBFUZZ=1), debug, with -sanitize=fuzzer,address.

nonisolated(unsafe) var selected: FuzzTarget?
nonisolated(unsafe) var retainedCheck = RetainedHeapCheck()

@_cdecl("LLVMFuzzerInitialize")
public func fuzzInitialize(_ argc: UnsafeMutablePointer<Int32>?, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>?) -> Int32 {
    let name = getenv("BK_FUZZ_TARGET").map { String(cString: $0) } ?? ""
    if name == "list" {
        for t in fuzzTargets { print("\(t.name)\t\(t.summary)") }
        exit(0)
    }
    guard let target = fuzzTargets.first(where: { $0.name == name }) else {
        FuzzReport.line("bk-libfuzz: set BK_FUZZ_TARGET to one of: \(fuzzTargets.map(\.name).joined(separator: ", "))")
        exit(2)
    }
    selected = target
    return 0
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    guard let target = selected else { return 0 }
    let input = UnsafeRawBufferPointer(start: data, count: size)
    let retained = retainedCheck.measure { target.run(input) }
    if retained > RetainedHeapCheck.limit {
        FuzzTarget.fail(target.name, "the parser retained \(retained) heap bytes over \(retainedCheck.inputs - RetainedHeapCheck.warmUpInputs) inputs after warm-up (limit \(RetainedHeapCheck.limit)): a leak")
    }
    return 0
}
