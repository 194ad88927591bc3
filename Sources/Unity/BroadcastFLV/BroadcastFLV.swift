// Empty in a unity build (BK_UNITY=1, Package.swift): the sources of BroadcastFLV are compiled into
// BroadcastKit there, and this module only keeps their `import BroadcastFLV` lines valid.
