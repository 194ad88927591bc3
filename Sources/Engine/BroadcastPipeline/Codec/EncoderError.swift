import BroadcastCore

/// Why an encoder could not be opened or configured.
package enum EncoderError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The settings were rejected before the library was asked (size, rate, names).
    case invalidSettings(String)
    /// The codec library refused to open or configure; the text carries its own message when it gave one.
    case libraryFailure(String)

    package var description: String {
        switch self {
        case .invalidSettings(let why): return "invalid encoder settings: \(why)"
        case .libraryFailure(let why): return "encoder library failure: \(why)"
        }
    }
}
