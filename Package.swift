// swift-tools-version:6.0
import PackageDescription

/// The engine in layers, lowest first. Each layer names only those below it, so the compiler keeps
/// the order (docs/ARCHITECTURE.md draws the graph); `BroadcastKit` re-exports them all, so an
/// embedder imports it alone.
let engineLayers: [(name: String, uses: [String], c: [String])] = [
    // Media types, clocks, primitives, stats, events and errors.
    ("BroadcastCore", [], ["CLinuxProcess"]),
    // Lanes, conversion, codecs, muxing, the interleaver, send queues, bitrate control, the memory plan.
    ("BroadcastPipeline", ["BroadcastCore"],
     ["CX264", "CX264Shim", "COpus", "COpusShim", "CVoAACEnc", "CYUV", "CSoxrShim", "CLinuxProcess"]),
    // The socket layer the network destinations share: TCP, TLS, name lookup, HTTP responses.
    ("BroadcastNetwork", ["BroadcastCore", "BroadcastPipeline"], ["CGnuTLSShim", "CLinuxProcess"]),
    // FLV and AMF0, which two destinations (RTMP, the FLV file) and every embedder's TagSink take:
    // the tag, its body's framing of an encoded packet, onMetaData.
    ("BroadcastFLV", ["BroadcastCore", "BroadcastPipeline"], []),
    // One target per destination kind; none names another.
    ("BroadcastRTMP", ["BroadcastCore", "BroadcastPipeline", "BroadcastNetwork", "BroadcastFLV"], []),
    ("BroadcastSRT", ["BroadcastCore", "BroadcastPipeline", "BroadcastNetwork"], ["CSRTShim"]),
    ("BroadcastWHIP", ["BroadcastCore", "BroadcastPipeline", "BroadcastNetwork"], ["CDTLSShim", "CSRTPShim"]),
    ("BroadcastRecording", ["BroadcastCore", "BroadcastPipeline", "BroadcastFLV"], []),
    // The public face: the session, its assembly, the control socket.
    ("BroadcastKit", ["BroadcastCore", "BroadcastPipeline", "BroadcastNetwork", "BroadcastFLV", "BroadcastRTMP",
                      "BroadcastSRT", "BroadcastWHIP", "BroadcastRecording"], []),
]

/// BK_UNITY=1 (scripts/build sets it for the release build that ships, is benchmarked and is tested
/// by the integration suite): the same sources compiled as one module, `BroadcastKit`, optimised as
/// a whole. The layered binary kept about 0.5 MiB more code resident at 720p (BENCHMARKS.md,
/// "Renovation A/B"): the same functions run, spread over more pages. The layers' names stay
/// importable as empty modules (Sources/Unity), so no source file changes between the two builds.
/// Every other build (debug, the unit tests, the sanitizers, libFuzzer) builds the layers, and so
/// the compiler keeps their order; tools/layers.py checks the graph's shape.
let unity = Context.environment["BK_UNITY"] == "1"
let engineTargets: [Target] = unity
    ? engineLayers.dropLast().map { layer in
        .target(name: layer.name, path: "Sources/Unity/" + layer.name, swiftSettings: [.swiftLanguageMode(.v6)])
    } + [
        .target(name: "BroadcastKit",
                dependencies: engineLayers.dropLast().map { .target(name: $0.name) }
                    + Array(Set(engineLayers.flatMap(\.c))).sorted().map { .target(name: $0) },
                path: "Sources/Engine", swiftSettings: [.swiftLanguageMode(.v6)]),
    ]
    : engineLayers.map { layer in
        .target(name: layer.name, dependencies: (layer.uses + layer.c).map { .target(name: $0) },
                path: "Sources/Engine/" + layer.name, swiftSettings: [.swiftLanguageMode(.v6)])
    }

/// The engine's unit tests: one test target per layer, each reaching its own module with
/// `@testable import` and the layers below through their package API, plus the fixtures they
/// share (`BroadcastTestSupport`, package API only). A unity build declares none: its layers are
/// empty there.
let engineTestC: [String: [String]] = [
    "BroadcastCore": ["CDynamicLibrary", "CLinuxProcess"], "BroadcastPipeline": ["COpus", "CYUV"],
    "BroadcastKit": ["COpus", "CLinuxProcess"],
]
let engineTests: [Target] = unity ? [] : [
    .target(name: "BroadcastTestSupport", dependencies: ["BroadcastCore", "BroadcastPipeline", "BroadcastFLV"],
            path: "Tests/BroadcastTestSupport", swiftSettings: [.swiftLanguageMode(.v6)]),
] + engineLayers.map { layer in
    .testTarget(name: layer.name + "Tests",
                dependencies: ([layer.name] + layer.uses + ["BroadcastTestSupport"] + engineTestC[layer.name, default: []])
                    .map { .target(name: $0) })
}

let package = Package(
    name: "broadcast",
    products: [
        .library(name: "BroadcastKit", targets: ["BroadcastKit"]),
        .library(name: "BroadcastCapture", targets: ["BroadcastCapture"]),
        .executable(name: "broadcast", targets: ["broadcast"]),
        // The C ABI (include/broadcastkit.h) as libbroadcastkit.so, for C, Python (ctypes) and GStreamer.
        .library(name: "broadcastkit", type: .dynamic, targets: ["BroadcastKitC"]),
    ],
    targets: engineTargets + engineTests + [
        // No pkgConfig: x264.pc adds -DX264_API_IMPORTS (a Windows-only flag SwiftPM refuses); its header and
        // library sit on the default paths.
        .systemLibrary(name: "CX264", providers: [.apt(["libx264-dev"])]),
        .systemLibrary(name: "COpus", pkgConfig: "opus", providers: [.apt(["libopus-dev"])]),
        .systemLibrary(name: "CVoAACEnc", pkgConfig: "vo-aacenc", providers: [.apt(["libvo-aacenc-dev"])]),
        .systemLibrary(name: "CYUV", providers: [.apt(["libyuv-dev"])]),
        // C glue for PipeWire/SPA, whose POD builder API is macro-only. No pkgConfig module for PipeWire: its
        // -D_REENTRANT is a flag SwiftPM refuses. Only these C targets see PipeWire's headers, through the
        // system/ links in their folders; Swift code sees only the shims' own small headers.
        // Not linked to libpipewire: it is dlopen()ed on first use (pw_dl.h), so a run that captures
        // nothing never maps it.
        .target(name: "CPipeWireShim", dependencies: ["CDynamicLibrary"],
                cSettings: [.headerSearchPath("system/pipewire-0.3"), .headerSearchPath("system/spa-0.2")]),
        // The one dlopen() loader of the optional libraries below (sonames in order, a symbol table, one
        // error wording, thread-safe first load); each shim describes its library and calls it.
        .target(name: "CDynamicLibrary", linkerSettings: [.linkedLibrary("dl")]),
        // One small C shim per concern, for APIs Swift cannot call directly (macros, varargs).
        .target(name: "CX264Shim", dependencies: ["CX264"]),
        .target(name: "COpusShim", dependencies: ["COpus"]),
        .target(name: "CLinuxProcess"),
        // GnuTLS for rtmps:// only: dlopen()ed on first use, never linked (its headers, from
        // libgnutls28-dev, only declare), so rtmp:// processes do not map it.
        .target(name: "CGnuTLSShim", dependencies: ["CDynamicLibrary"]),
        // sd-bus for the ScreenCast portal, libsystemd dlopen()ed on first use (not linked).
        .target(name: "CSDBusShim", dependencies: ["CDynamicLibrary"]),
        // libsoxr for the 44.1 kHz resampler, dlopen()ed when the first one is needed (not linked).
        .target(name: "CSoxrShim", dependencies: ["CDynamicLibrary"]),
        // libsrt for srt:// destinations, dlopen()ed when the first one opens (not linked).
        .target(name: "CSRTShim", dependencies: ["CDynamicLibrary"]),
        // WHIP: GnuTLS for DTLS-SRTP (certificate, handshake, keys) and libsrtp2, each dlopen()ed when
        // the first WHIP destination opens (not linked).
        .target(name: "CDTLSShim", dependencies: ["CDynamicLibrary"]),
        .target(name: "CSRTPShim", dependencies: ["CDynamicLibrary"]),
        // The synthetic PipeWire screen for tests and benchmarks; the shipped binary does not link it.
        .target(name: "CPipeWireTestScreen",
                cSettings: [.headerSearchPath("system/pipewire-0.3"), .headerSearchPath("system/spa-0.2")],
                linkerSettings: [.linkedLibrary("pipewire-0.3")]),
        // The engine: `engineTargets` below (the layers, or one module for a release build).
        .target(
            name: "BroadcastCapture",
            dependencies: ["BroadcastKit", "CPipeWireShim", "CSDBusShim"],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        // The C ABI: broadcastkit.h (types and declarations, installed as is) and its Swift implementation
        // (@_cdecl functions over the public API). Only bk_* symbols are exported from the shared library.
        .target(name: "CBroadcastKitABI"),
        .target(
            name: "BroadcastKitC",
            dependencies: ["BroadcastKit", "CBroadcastKitABI"],
            exclude: ["exports.map", "broadcastkit.pc.in"],
            swiftSettings: [.swiftLanguageMode(.v6)],
            linkerSettings: [.unsafeFlags(["-static-stdlib", "-Xlinker", "-soname=libbroadcastkit.so.0", "-Xlinker", "--version-script=" + Context.packageDirectory + "/Sources/BroadcastKitC/exports.map"])]
        ),
        // The CLI's parsing, configuration building, sources and reporting; `broadcast` is its thin driver.
        .target(
            name: "BroadcastCLI",
            dependencies: ["BroadcastKit", "BroadcastCapture", "CLinuxProcess"],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        .executableTarget(
            name: "broadcast",
            dependencies: ["BroadcastCLI", "BroadcastKit"],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        // The client of `broadcast --control PATH` (one command per run, or `subscribe`).
        .executableTarget(name: "broadcastctl", swiftSettings: [.swiftLanguageMode(.v6)]),
        // Test-only PipeWire producer: a synthetic BGRx screen with a frame counter in the pixels.
        .executableTarget(name: "pw-test-screen", dependencies: ["CPipeWireTestScreen"]),
        // Benchmarks: x264 floor, full-speed pipeline, allocation probe, concurrent sessions.
        .executableTarget(name: "bk-bench", dependencies: ["BroadcastKit", "BroadcastCapture", "CYUV"], path: "Benchmarks/bk-bench",
                          swiftSettings: [.swiftLanguageMode(.v6)]),
        // Seeded randomized fuzzing of the Y4M parser and BroadcastSession.process (scripts/fuzz).
        .executableTarget(name: "bk-fuzz", dependencies: ["BroadcastKit", "BroadcastCapture"], path: "Fuzz/bk-fuzz",
                          swiftSettings: [.swiftLanguageMode(.v6)]),
        // The README's embedding example, compiled so it cannot drift from the API.
        .executableTarget(name: "embed-example", dependencies: ["BroadcastKit"], path: "Examples/embed-example",
                          swiftSettings: [.swiftLanguageMode(.v6)]),
        .testTarget(name: "BroadcastCaptureTests", dependencies: ["BroadcastCapture"]),
        .testTarget(name: "BroadcastCLITests", dependencies: ["BroadcastCLI", "BroadcastKit", "BroadcastCapture"]),
    ]
)

// Coverage-guided fuzz targets (libFuzzer, Fuzz/bk-libfuzz): declared only when scripts/fuzz builds them
// (BK_LIBFUZZ=1, scratch path .build/libfuzz, debug, -sanitize=fuzzer,address), so ordinary builds neither
// compile nor link a binary whose main is libFuzzer's.
if Context.environment["BK_LIBFUZZ"] == "1" {
    package.targets.append(.executableTarget(name: "bk-libfuzz", dependencies: ["BroadcastKit", "BroadcastCapture", "BroadcastCLI"],
                                             path: "Fuzz/bk-libfuzz", swiftSettings: [.swiftLanguageMode(.v6)]))
}
