/// The one place the release's version lives. `broadcast --version`, `bk_version()` and the C
/// ABI's default encoder name are built from it; the Python package, the GStreamer element and
/// the C header state the number again, and `test_tooling.py` fails when they drift from it.
public enum BuildVersion {
    /// The release number, "MAJOR.MINOR.PATCH".
    public static let number = "0.1.0"
    /// What this build contains, after the number.
    public static let components = "BroadcastKit; x264, vo-aacenc, libopus, libyuv; native RTMP"
    /// "0.1.0 (BroadcastKit; ...)": `bk_version()`'s text.
    public static let description = "\(number) (\(components))"
}
