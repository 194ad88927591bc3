// Empty in a unity build (BK_UNITY=1, Package.swift): the sources of BroadcastCore are compiled into
// BroadcastKit there, and this module only keeps their `import BroadcastCore` lines valid.
