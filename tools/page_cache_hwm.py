#!/usr/bin/env python3
"""VmHWM of one build in three page-cache states of its file (docs/memory-budget.md).

usage: tools/page_cache_hwm.py BINARY ROUNDS

Each round copies BINARY to a temporary file and runs it (a 720p test-source push to a private
nginx-rtmp, /proc/PID/status read at 9 s) with the copy freshly written, evicted from the page
cache and read back, and evicted; prints each run and the ranges. Anonymous memory does not move
between the states; the binary's resident code does.
"""
import os, shutil, subprocess, sys, tempfile, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bktools.ingest import start_ingest
src = sys.argv[1]; rounds = int(sys.argv[2])
def evict(p):
    fd = os.open(p, os.O_RDONLY); os.fdatasync(fd); os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED); os.close(fd)
def readback(p):
    evict(p)
    with open(p, 'rb') as f:
        while f.read(1 << 20): pass
res = {}
work = tempfile.mkdtemp(prefix='page-cache-hwm-')
ing = start_ingest(directory=os.path.join(work, 'ingest'))
try:
    for r in range(rounds):
        for state in ('fresh copy', 'evicted, read back', 'evicted'):
            b = os.path.join(work, f'broadcast-{r}-{state[0]}')
            shutil.copyfile(src, b); os.chmod(b, 0o755)
            if state == 'evicted, read back': readback(b)
            elif state == 'evicted': evict(b)
            p = subprocess.Popen([b, '--source', 'test', '--res', '720p', '--duration', '12', '--quiet', '--url', ing.url],
                                 stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env={**os.environ, 'STREAM_KEY': 'f'})
            time.sleep(9)
            st = {l.split(':')[0]: int(l.split(':')[1].split()[0]) for l in open(f'/proc/{p.pid}/status') if l.startswith(('VmHWM', 'RssAnon', 'RssFile'))}
            p.wait(); os.unlink(b)
            res.setdefault(state, []).append(st)
            print(state, {k: round(v / 1024, 2) for k, v in st.items()}, flush=True)
finally:
    ing.stop()
    shutil.rmtree(work, ignore_errors=True)
for state, rs in res.items():
    print(f"{state}: VmHWM {min(x['VmHWM'] for x in rs)/1024:.2f}-{max(x['VmHWM'] for x in rs)/1024:.2f} MiB, RssFile {min(x['RssFile'] for x in rs)/1024:.2f}-{max(x['RssFile'] for x in rs)/1024:.2f}, RssAnon {min(x['RssAnon'] for x in rs)/1024:.2f}-{max(x['RssAnon'] for x in rs)/1024:.2f}")
