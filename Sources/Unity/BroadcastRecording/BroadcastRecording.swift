// Empty in a unity build (BK_UNITY=1, Package.swift): the sources of BroadcastRecording are compiled into
// BroadcastKit there, and this module only keeps their `import BroadcastRecording` lines valid.
