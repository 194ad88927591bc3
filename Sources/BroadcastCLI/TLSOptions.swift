import Glibc

/// Checks for `--ca-file PATH`: done at parse time so a typo is a usage error (exit 2), not a
/// TLS refusal after connecting.
enum TLSOptions {
    /// Returns `path` when it is a readable regular file that contains a PEM certificate.
    static func validateCAFile(_ path: String) throws -> String {
        var st = stat()
        guard stat(path, &st) == 0 else {
            throw UsageError("--ca-file \(path): \(String(cString: strerror(errno)))")
        }
        guard (st.st_mode & S_IFMT) == S_IFREG else { throw UsageError("--ca-file \(path): not a regular file") }
        guard let f = fopen(path, "r") else {
            throw UsageError("--ca-file \(path): \(String(cString: strerror(errno)))")
        }
        defer { fclose(f) }
        // A CA bundle is small; the first 1 MB is plenty to find a PEM marker.
        let capacity = 1 << 20
        let buffer = UnsafeMutablePointer<CChar>.allocate(capacity: capacity + 1)
        defer { buffer.deallocate() }
        let n = fread(buffer, 1, capacity, f)
        buffer[n] = 0
        guard strstr(buffer, "-----BEGIN CERTIFICATE-----") != nil else {
            throw UsageError("--ca-file \(path): no PEM certificate (-----BEGIN CERTIFICATE-----) found")
        }
        return path
    }
}
