import CDynamicLibrary
import Glibc
import Synchronization
import Testing
@testable import BroadcastCore
import BroadcastTestSupport

/// A loader description made at run time, freed when the test is done with it (the dlopen()ed
/// library itself stays, as the loader never closes one).
private final class TestLibrary: @unchecked Sendable {
    let library: UnsafeMutablePointer<bk_dl_library>
    /// Where each symbol's address lands, in the order given.
    let slots: [UnsafeMutablePointer<UnsafeMutableRawPointer?>]
    private let names: UnsafeMutablePointer<UnsafePointer<CChar>?>
    private let table: UnsafeMutablePointer<bk_dl_symbol>
    private var strings: [UnsafeMutablePointer<CChar>] = []

    init(_ sonames: [String], package: String = "bk-test-package", symbols: [(name: String, required: Bool)] = [],
         start: bk_dl_start_fn? = nil) {
        var strings: [UnsafeMutablePointer<CChar>] = []
        func keep(_ s: String) -> UnsafeMutablePointer<CChar> {
            let copy = strdup(s)!
            strings.append(copy)
            return copy
        }
        names = UnsafeMutablePointer<UnsafePointer<CChar>?>.allocate(capacity: sonames.count + 1)
        for (i, s) in sonames.enumerated() { names[i] = UnsafePointer(keep(s)) }
        names[sonames.count] = nil
        table = UnsafeMutablePointer<bk_dl_symbol>.allocate(capacity: max(symbols.count, 1))
        var slots: [UnsafeMutablePointer<UnsafeMutableRawPointer?>] = []
        for (i, s) in symbols.enumerated() {
            let slot = UnsafeMutablePointer<UnsafeMutableRawPointer?>.allocate(capacity: 1)
            slot.initialize(to: nil)
            slots.append(slot)
            table[i] = bk_dl_symbol(name: keep(s.name), destination: UnsafeMutableRawPointer(slot),
                                    required: s.required ? 1 : 0)
        }
        library = UnsafeMutablePointer<bk_dl_library>.allocate(capacity: 1)
        bk_dl_library_init(library, keep("the test"), names, keep(package), table, symbols.count, start)
        self.slots = slots
        self.strings = strings
    }

    deinit {
        pthread_mutex_destroy(&library.pointee.lock)
        library.deallocate()
        for slot in slots { slot.deallocate() }
        table.deallocate()
        names.deallocate()
        for s in strings { free(s) }
    }

    func load() -> UnsafeMutableRawPointer? { bk_dl_load(library) }
    var error: String { String(cString: bk_dl_error(library)) }
    var isLoaded: Bool { bk_dl_is_loaded(library) == 1 }
}

/// What the racing threads share: each writes only its own slot of `seen`, read after the joins
/// (no Synchronization.Mutex, whose futex TSan cannot see on Linux).
private final class RaceState: @unchecked Sendable {
    let ready = Atomic<Int>(0)
    let seen: UnsafeMutableBufferPointer<UInt>
    init(threads: Int) { seen = .allocate(capacity: threads); seen.initialize(repeating: 0) }
    deinit { seen.deallocate() }
}

/// Counts of start-up calls, one per test that counts (the suite's tests run in parallel).
private let twiceStarts = Atomic<Int>(0)
private let raceStarts = Atomic<Int>(0)

/// The one dlopen() loader every optional-library shim uses (CDynamicLibrary), against libraries
/// that surely exist (libc.so.6, libm.so.6) and names that surely do not.
@Suite(.timeLimit(.minutes(1))) struct DynamicLibraryTests {
    @Test func aMissingLibraryIsOneLineNamingThePackage() {
        let lib = TestLibrary(["libbk-surely-absent.so.7", "libbk-surely-absent.so"], package: "bk-absent-package",
                              symbols: [("cos", true)])
        #expect(lib.load() == nil)
        #expect(lib.error == "the test needs libbk-surely-absent.so.7: not found (install bk-absent-package)")
        #expect(!lib.isLoaded)
        // Sticky: a second call gives the same answer without trying again.
        #expect(lib.load() == nil)
        #expect(lib.error == "the test needs libbk-surely-absent.so.7: not found (install bk-absent-package)")
    }

    /// The names are tried in the order given: an absent one is passed over, and of two that exist
    /// the first wins (libc.so.6 has no `cos`, so taking it first would fail the load).
    @Test func sonamesAreTriedInOrder() throws {
        let m = TestLibrary(["libbk-surely-absent.so.7", "libm.so.6", "libc.so.6"], symbols: [("cos", true)])
        let handle = try #require(m.load(), "\(m.error)")
        #expect(m.error == "")
        let libm = try #require(dlopen("libm.so.6", RTLD_NOW | RTLD_NOLOAD))
        #expect(handle == libm)
        #expect(m.slots[0].pointee == dlsym(libm, "cos"))

        let c = TestLibrary(["libc.so.6", "libm.so.6"], symbols: [("cos", true)])
        #expect(c.load() == nil)
        #expect(c.error == "the test needs libc.so.6: missing symbol cos")
    }

    @Test func aMissingRequiredSymbolIsNamed() {
        let lib = TestLibrary(["libm.so.6"], symbols: [("cos", true), ("bk_surely_absent_symbol", true)])
        #expect(lib.load() == nil)
        #expect(lib.error == "the test needs libm.so.6: missing symbol bk_surely_absent_symbol")
        #expect(!lib.isLoaded)
    }

    @Test func aMissingOptionalSymbolIsNilWithoutError() throws {
        let lib = TestLibrary(["libm.so.6"], symbols: [("bk_surely_absent_symbol", false), ("cos", true)])
        _ = try #require(lib.load(), "\(lib.error)")
        #expect(lib.error == "")
        #expect(lib.slots[0].pointee == nil)
        let cos = unsafeBitCast(try #require(lib.slots[1].pointee), to: (@convention(c) (Double) -> Double).self)
        #expect(cos(0) == 1)
    }

    @Test func loadingTwiceReturnsTheSameHandleAndStartsOnce() throws {
        let lib = TestLibrary(["libm.so.6"], symbols: [("cos", true)], start: { _, _ in
            twiceStarts.add(1, ordering: .relaxed)
            return 0
        })
        let first = try #require(lib.load(), "\(lib.error)")
        #expect(lib.load() == first)
        #expect(twiceStarts.load(ordering: .relaxed) == 1)
    }

    @Test func aFailedStartIsTheLoadsError() {
        let lib = TestLibrary(["libm.so.6"], symbols: [("cos", true)], start: { error, capacity in
            _ = "it refused".withCString { strncpy(error!, $0, capacity - 1) }
            return -1
        })
        #expect(lib.load() == nil)
        #expect(lib.error == "the test needs libm.so.6: it refused")
        #expect(!lib.isLoaded)
    }

    /// Eight threads released together on a fresh library: one load, one start, one handle, and
    /// every thread sees the table filled (TSan checks the publication under scripts/sanitize).
    @Test func concurrentFirstLoadsAreSafe() throws {
        let lib = TestLibrary(["libbk-surely-absent.so.7", "libm.so.6"], symbols: [("cos", true), ("sin", true)],
                              start: { _, _ in
                                  raceStarts.add(1, ordering: .relaxed)
                                  // Holds the first load open long enough for the others to arrive.
                                  usleep(20_000)
                                  return 0
                              })
        let threads = 8
        let state = RaceState(threads: threads)
        var workers: [WorkerThread] = []
        for i in 0..<threads {
            let w = WorkerThread(name: "bk-dl-test-\(i)")
            try w.start {
                state.ready.add(1, ordering: .acquiringAndReleasing)
                while state.ready.load(ordering: .acquiring) < threads { sched_yield() }
                let handle = lib.load().map { UInt(bitPattern: $0) } ?? 0
                // What a shim does next: call through the table.
                let cos = lib.slots[0].pointee.map { unsafeBitCast($0, to: (@convention(c) (Double) -> Double).self) }
                let ok = lib.slots[1].pointee != nil && cos?(0) == 1
                state.seen[i] = ok ? handle : 0
            }
            workers.append(w)
        }
        for w in workers { w.join() }
        let handles = Array(state.seen)
        #expect(!handles.contains(0), "a thread got no handle or an empty table")
        #expect(Set(handles).count == 1)
        #expect(raceStarts.load(ordering: .relaxed) == 1)
    }
}
