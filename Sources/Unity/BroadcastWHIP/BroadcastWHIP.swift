// Empty in a unity build (BK_UNITY=1, Package.swift): the sources of BroadcastWHIP are compiled into
// BroadcastKit there, and this module only keeps their `import BroadcastWHIP` lines valid.
