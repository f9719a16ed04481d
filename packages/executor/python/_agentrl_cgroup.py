"""The per-call cgroup v2 memory limit, where the executor was given a delegated group (src/memory-cgroup.ts).

AGENTRL_MEMORY_CGROUP names a cgroup v2 directory with the memory controller enabled for its children,
bound read-write into the sandbox at the same path. For each call the server makes a child group with
memory.max = memoryMb (no swap, the whole group killed together on OOM) before the call is cloned; the
call moves itself into it as the first step of its setup, so every page it and its processes ever touch
(anonymous, memfd, tmpfs, shm, page tables, socket buffers) is charged there and the kernel never lets it
past the limit. After the call, memory.events says whether the kernel's OOM killer ended it, and the
group is removed. Unset, nothing here runs and the sampling cap (forkserver.check_memory) works alone;
it runs in both cases.

Not exercised on the host this was written on (its cgroup v2 has no memory controller): see README.
"""

import errno
import os

PARENT = os.environ.get("AGENTRL_MEMORY_CGROUP") or None


def create(call_id, memory_mb):
    """A fresh child group for one call, limited to `memory_mb`; its path."""
    # each fork server is pid 2 or so of its own pid namespace and counts ids from 1: a random part keeps
    # the groups of several servers under one parent apart
    path = os.path.join(PARENT, f"call-{os.urandom(6).hex()}-{call_id}")
    os.mkdir(path)
    try:
        write(path, "memory.max", str(int(memory_mb) << 20))
        write(path, "memory.oom.group", "1")
        try:
            write(path, "memory.swap.max", "0")
        except FileNotFoundError:
            pass  # no swap accounting on this kernel: nothing to cap
    except BaseException:
        os.rmdir(path)
        raise
    return path


def join(path):
    """Moves the calling process into the group (the call's own first step, before it allocates anything)."""
    write(path, "cgroup.procs", "0")


def oom_killed(path):
    """Whether the kernel's OOM killer ended a process of the group (memory.events oom_kill > 0)."""
    try:
        with open(os.path.join(path, "memory.events")) as f:
            events = dict(line.split() for line in f if line.strip())
    except OSError:
        return False
    return int(events.get("oom_kill", "0")) > 0


def peak_mb(path):
    try:
        with open(os.path.join(path, "memory.peak")) as f:
            return int(f.read()) >> 20
    except (OSError, ValueError):
        return None


def remove(path):
    """Removes an emptied group; False while its last processes are still being torn down (retry later)."""
    try:
        os.rmdir(path)
    except FileNotFoundError:
        pass
    except OSError as e:
        if e.errno == errno.EBUSY:
            return False
        raise
    return True


def write(path, name, value):
    fd = os.open(os.path.join(path, name), os.O_WRONLY)
    try:
        os.write(fd, value.encode())
    finally:
        os.close(fd)
