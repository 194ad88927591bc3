#if canImport(Glibc)
import Glibc
#endif
import BroadcastCLI
import BroadcastKit

// Crash output must not carry the stream key: Swift's backtracer dumps the memory that
// registers point at. Unless the user configured it, re-exec once with register and image
// dumps off (the symbolicated stack stays).
if getenv("SWIFT_BACKTRACE") == nil {
    setenv("SWIFT_BACKTRACE", "registers=none,images=none,sanitize=yes", 1)
    // The resolved path keeps the process name "broadcast" (exec of /proc/self/exe would be "exe").
    var path = [CChar](repeating: 0, count: 4096)
    let n = readlink("/proc/self/exe", &path, path.count - 1)
    if n > 0 { execv(path, CommandLine.unsafeArgv) }
    // If exec fails, carry on with the default backtracer settings.
}

// Two malloc arenas, transparent huge pages off: the same levers the benchmarks and embedders get.
ProcessTuning.apply()

// No core file (it would hold the key), set before the key is read; see CoreDumpGuard.
// The process stays dumpable: the desktop portal must be able to open its /proc/PID/root.
CoreDumpGuard.apply()
// $STREAM_KEY and $BROADCAST_URL (which may hold a key) are copied, then wiped from the
// environment block (/proc/PID/environ).
// BROADCAST_TEST_FAULT is the hidden test-only crash trigger (TestFault), not documented in --help.
let environment = SecretScrubber.takeEnvironment(["STREAM_KEY", "BROADCAST_URL", "BROADCAST_TEST_FAULT"],
                                                 secret: ["STREAM_KEY", "BROADCAST_URL"])
// The key's pages stay out of any core that honours MADV_DONTDUMP, whatever coredump_filter says.
if let key = environment["STREAM_KEY"] { CoreDumpGuard.excludeFromCore(key) }
let code = BroadcastCommand.run(arguments: Array(CommandLine.arguments.dropFirst()), environment: environment)
exit(code.rawValue)
