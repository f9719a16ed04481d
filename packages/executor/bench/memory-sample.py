"""Times the per-call memory cap's sampler: forkserver.memory_held(), which the fork server runs for each
running call every MEMORY_SAMPLE_S (20 ms) where no per-call cgroup applies (and on top of it where one
does). Used by executor.bench.ts:

    python3 bench/memory-sample.py <packages/executor/python> [samples]

Measures it on a process tree like a call's (one process holding ~32 MB, and the same with three children; its /tmp is the host's here, a fresh
tmpfs in a call: statvfs costs about the same),
and prints one JSON object: CPU and wall time per sample, and the share of a core that sampling one running
call every MEMORY_SAMPLE_S costs.
"""

import json
import os
import signal
import sys
import time

sys.path.insert(0, sys.argv[1])
import forkserver  # noqa: E402

SAMPLES = int(sys.argv[2]) if len(sys.argv) > 2 else 5000


def call_like(children):
    """A process holding ~32 MB of its own memory with `children` children (each touching 4 MB), asleep."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        held = bytearray(32 << 20)  # noqa: F841 (kept alive, touched by the zero fill)
        for _ in range(children):
            if os.fork() == 0:
                mine = bytearray(4 << 20)  # noqa: F841
                signal.pause()
                os._exit(0)
        os.write(w, b"1")
        signal.pause()
        os._exit(0)
    os.close(w)
    os.read(r, 1)
    os.close(r)
    time.sleep(0.05)  # the children have touched their memory
    return pid


def timed(children):
    pid = call_like(children)
    try:
        base = forkserver.rss_of(os.getpid())[0]
        processes = len(forkserver.call_processes(pid))
        own = sum(max(0, a - base) + s for a, s in map(forkserver.rss_of, forkserver.call_processes(pid)))
        cpu0, wall0 = time.process_time(), time.perf_counter()
        for _ in range(SAMPLES):
            forkserver.memory_held(pid, base)
        cpu = (time.process_time() - cpu0) / SAMPLES
        wall = (time.perf_counter() - wall0) / SAMPLES
    finally:
        for p in forkserver.call_processes(pid)[::-1]:
            try:
                os.kill(p, signal.SIGKILL)
            except ProcessLookupError:
                pass
        os.waitpid(pid, 0)
    interval = forkserver.MEMORY_SAMPLE_S
    return {
        "processes": processes,
        "processMb": round(own / 2**20, 1),
        "cpuUsPerSample": round(cpu * 1e6, 1),
        "wallUsPerSample": round(wall * 1e6, 1),
        "intervalMs": round(interval * 1000, 3),
        "cpuPercentPerRunningCall": round(cpu / interval * 100, 3),
    }


one = timed(0)
four = timed(3)
print(json.dumps({**one, "samples": SAMPLES, "fourProcesses": four}))
