/// The release's version in Swift. `broadcast --version`, `bk_version()` and the C ABI's default
/// encoder name are built from it. The repository's VERSION file is the one source: pkg-config, the .deb,
/// the wheel, the CHANGELOG, the Python package, the C header and the GStreamer element state the same
/// number, and test_package_version.py fails when one drifts from it.
public enum BuildVersion {
    /// The release number, "MAJOR.MINOR.PATCH".
    public static let number = "0.2.0"
    /// What this build contains, after the number.
    public static let components = "BroadcastKit; x264, vo-aacenc, libopus, libyuv; native RTMP"
    /// "0.2.0 (BroadcastKit; ...)": `bk_version()`'s text.
    public static let description = "\(number) (\(components))"
}
