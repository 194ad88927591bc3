"""The project's measurement toolkit: one package for the tests, the benchmarks and the soaks.

- `targets`: the one table of targets (sync, drift, memory) that tests assert and reports render;
- `procmeasure`: run a process and measure it (VmHWM, anon/file/shmem, CPU via wait4);
- `ingest`: a local nginx-rtmp started and stopped by pid;
- `plan`: the one memory-plan reader (`broadcast --print-memory-plan`), and the stats reader;
- `avsync`: the A/V sync checker (flash/beep pairs; tools/avsync.py is its command line).

Importable as `bktools` with `tools/` on PYTHONPATH: scripts/lib/common.sh exports it for every
script, so neither the tests nor the tools edit sys.path.
"""
