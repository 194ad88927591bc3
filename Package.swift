// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "broadcast",
    products: [
        .library(name: "BroadcastKit", targets: ["BroadcastKit"]),
        .library(name: "BroadcastCapture", targets: ["BroadcastCapture"]),
        .executable(name: "broadcast", targets: ["broadcast"]),
    ],
    targets: [
        .systemLibrary(name: "CX264", pkgConfig: "x264", providers: [.apt(["libx264-dev"])]),
        .systemLibrary(name: "COpus", pkgConfig: "opus", providers: [.apt(["libopus-dev"])]),
        .systemLibrary(name: "CVoAACEnc", pkgConfig: "vo-aacenc", providers: [.apt(["libvo-aacenc-dev"])]),
        .systemLibrary(name: "CRTMP", pkgConfig: "librtmp", providers: [.apt(["librtmp-dev"])]),
        .systemLibrary(name: "CYUV", providers: [.apt(["libyuv-dev"])]),
        .systemLibrary(name: "CSoxr", pkgConfig: "soxr", providers: [.apt(["libsoxr-dev"])]),
        .systemLibrary(name: "CPipeWire", pkgConfig: "libpipewire-0.3", providers: [.apt(["libpipewire-0.3-dev"])]),
        .systemLibrary(name: "CSystemd", pkgConfig: "libsystemd", providers: [.apt(["libsystemd-dev"])]),
        // C glue for PipeWire/SPA, whose POD builder API is macro-only.
        .target(name: "CPipeWireShim", dependencies: ["CPipeWire"]),
        // Small C shims for APIs that are macro-only or variadic (x264_encoder_open, opus_encoder_ctl),
        // and for process-level knobs (mallopt).
        .target(name: "CShims", dependencies: ["CX264", "COpus", "CRTMP"]),
        .target(
            name: "BroadcastKit",
            dependencies: ["CX264", "COpus", "CVoAACEnc", "CRTMP", "CYUV", "CSoxr", "CShims"],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        .target(
            name: "BroadcastCapture",
            dependencies: ["BroadcastKit", "CPipeWire", "CPipeWireShim", "CSystemd"],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        .executableTarget(
            name: "broadcast",
            dependencies: ["BroadcastKit", "BroadcastCapture"],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        // Test-only PipeWire producer: a synthetic BGRx screen with a frame counter in the pixels.
        .executableTarget(name: "pw-test-screen", dependencies: ["CPipeWire", "CPipeWireShim"]),
        // Benchmarks: x264 floor, full-speed pipeline, allocation probe, concurrent sessions.
        .executableTarget(name: "bk-bench", dependencies: ["BroadcastKit", "BroadcastCapture"], path: "Benchmarks/bk-bench",
                          swiftSettings: [.swiftLanguageMode(.v6)]),
        // Seeded randomized fuzzing of the Y4M parser and BroadcastSession.process (scripts/fuzz).
        .executableTarget(name: "bk-fuzz", dependencies: ["BroadcastKit", "BroadcastCapture"], path: "Fuzz/bk-fuzz",
                          swiftSettings: [.swiftLanguageMode(.v6)]),
        // The README's embedding example, compiled so it cannot drift from the API.
        .executableTarget(name: "embed-example", dependencies: ["BroadcastKit"], path: "Examples/embed-example",
                          swiftSettings: [.swiftLanguageMode(.v6)]),
        .testTarget(name: "BroadcastKitTests", dependencies: ["BroadcastKit"]),
        .testTarget(name: "BroadcastCaptureTests", dependencies: ["BroadcastCapture"]),
    ]
)
