// Capture sources: see the individual source files.
