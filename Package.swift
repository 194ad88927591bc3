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
            dependencies: ["BroadcastKit"],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        .executableTarget(
            name: "broadcast",
            dependencies: ["BroadcastKit", "BroadcastCapture"],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        .testTarget(name: "BroadcastKitTests", dependencies: ["BroadcastKit"]),
        .testTarget(name: "BroadcastCaptureTests", dependencies: ["BroadcastCapture"]),
    ]
)
