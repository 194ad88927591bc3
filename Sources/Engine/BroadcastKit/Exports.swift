// BroadcastKit is the public face: an embedder imports it alone and sees every layer's public API,
// as it did when the engine was one module (issue 41). The layers below are targets of their own
// so that the compiler keeps the order: a lower module cannot name a higher one.
@_exported import BroadcastCore
@_exported import BroadcastPipeline
@_exported import BroadcastNetwork
@_exported import BroadcastFLV
@_exported import BroadcastRTMP
@_exported import BroadcastSRT
@_exported import BroadcastWHIP
@_exported import BroadcastRecording
