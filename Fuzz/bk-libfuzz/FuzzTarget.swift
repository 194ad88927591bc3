#if canImport(Glibc)
import Glibc
#endif

/// One coverage-guided fuzz target: a name (`scripts/fuzz --target NAME`, `Fuzz/corpus/NAME/`)
/// and a function that takes one input, drives one parser the way the program does, and stops
/// the run (`FuzzTarget.fail`) when an oracle beyond "no crash" does not hold.
struct FuzzTarget: Sendable {
    let name: String
    let summary: String
    let run: @Sendable (UnsafeRawBufferPointer) -> Void

    /// Reports a broken oracle and aborts, so libFuzzer saves the input as a crash reproducer.
    static func fail(_ target: String, _ message: String) -> Never {
        FuzzReport.line("bk-libfuzz \(target): ORACLE FAILED: \(message)")
        abort()
    }
}
