/// One `--url` value: `URL[,key-file=PATH][,service=NAME]`. `--url` may be given many times;
/// each adds one destination fed by the same encode, the first being the primary.
///
/// `key-file` gives this destination its own key (else `--key`, `--key-file`, `$STREAM_KEY`, or
/// the key in the URL's path); `service` applies that service's limits to the shared encode (the
/// strictest of all destinations' services wins).
package struct DestinationSpec: Sendable {
    package var url: String
    package var keyFile: String?
    package var service: ServicePreset?

    package init(url: String, keyFile: String? = nil, service: ServicePreset? = nil) {
        self.url = url
        self.keyFile = keyFile
        self.service = service
    }

    /// Parses one `--url` value; throws `UsageError` (which never repeats a value: it may hold a key).
    package static func parse(_ value: String) throws -> DestinationSpec {
        var parts = value.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
        let url = parts.removeFirst()
        guard !url.isEmpty else { throw UsageError("--url needs a URL before its ,key-file= or ,service= settings") }
        var spec = DestinationSpec(url: url)
        for part in parts {
            guard let eq = part.firstIndex(of: "=") else {
                throw UsageError("--url: after the URL only key-file=PATH and service=NAME may follow a comma")
            }
            let name = String(part[..<eq]), v = String(part[part.index(after: eq)...])
            switch name {
            case "key-file" where !v.isEmpty && spec.keyFile == nil: spec.keyFile = v
            case "service" where spec.service == nil: spec.service = try ServicePreset.named(v)
            case "key-file", "service": throw UsageError("--url: \(name)= needs one value, given once")
            default: throw UsageError("--url: unknown setting '\(name)=' (expected key-file=PATH or service=NAME)")
            }
        }
        return spec
    }
}
