"""Per-call isolation for the agentrl fork server: the clone into a fresh pid namespace, and everything
a child does between fork and user code (namespaces, mounts, uid, rlimits, capabilities)."""

import ctypes
import os
import resource
import signal

CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
MS_NOSUID, MS_NODEV, MS_REC, MS_PRIVATE = 2, 4, 16384, 1 << 18
PR_CAPBSET_DROP, PR_SET_NO_NEW_PRIVS, PR_SET_DUMPABLE = 24, 38, 4
# clone(2)'s syscall number; with every pointer argument 0 the argument order does not matter.
SYS_CLONE = {"x86_64": 56, "aarch64": 220, "riscv64": 220, "ppc64le": 120}.get(os.uname().machine, 56)
NOBODY = 65534

libc = ctypes.CDLL(None, use_errno=True)
pylibc = ctypes.PyDLL(None, use_errno=True)  # keeps the GIL held across clone()
pylibc.syscall.restype = ctypes.c_long


class SandboxSetupError(Exception):
    pass


def check(ret, what):
    if ret != 0:
        err = ctypes.get_errno()
        raise SandboxSetupError(f"{what}: {os.strerror(err)}")


def fork_into_new_pid_namespace():
    """os.fork() with CLONE_NEWPID: the child is pid 1 of a fresh pid namespace.

    unshare(CLONE_NEWPID) works only once per process, so we call clone() ourselves and run the
    interpreter's own before/after-fork hooks around it, exactly as os.fork() does. The server is
    single-threaded, so no libc lock can be held across the raw clone.
    """
    api = ctypes.pythonapi
    api.PyOS_BeforeFork()
    pid = pylibc.syscall(
        ctypes.c_long(SYS_CLONE),
        ctypes.c_ulong(CLONE_NEWPID | signal.SIGCHLD),
        ctypes.c_ulong(0),
        ctypes.c_ulong(0),
        ctypes.c_ulong(0),
        ctypes.c_ulong(0),
    )
    if pid == 0:
        api.PyOS_AfterFork_Child()
        return 0
    err = ctypes.get_errno()
    api.PyOS_AfterFork_Parent()
    if pid < 0:
        raise OSError(err, f"clone(CLONE_NEWPID): {os.strerror(err)}")
    return pid


def drop_capabilities():
    """No capabilities left in any set (those of the call's own user namespace included)."""
    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    class Data(ctypes.Structure):
        _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]

    header = Header(0x20080522, 0)
    data = (Data * 2)()
    check(libc.capset(ctypes.byref(header), ctypes.byref(data)), "capset")
    check(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")


def vm_size_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")


def uid_is_mapped(uid):
    with open("/proc/self/uid_map") as f:
        for line in f:
            inner, _outer, count = (int(x) for x in line.split())
            if inner <= uid < inner + count:
                return True
    return False


def isolate(req):
    """Everything between fork and user code. Runs as pid 1 of a fresh pid namespace."""
    check(libc.unshare(CLONE_NEWNS), "unshare(CLONE_NEWNS)")
    check(libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None), "make / private")
    tmp_opts = f"size={int(req['tmpMb'])}m,mode=1777,nr_inodes=4096".encode()
    check(libc.mount(b"tmpfs", b"/tmp", b"tmpfs", MS_NOSUID | MS_NODEV, tmp_opts), "mount /tmp")
    check(libc.mount(b"tmpfs", b"/dev/shm", b"tmpfs", MS_NOSUID | MS_NODEV, b"size=16m,mode=1777"), "mount /dev/shm")
    check(libc.mount(b"proc", b"/proc", b"proc", MS_NOSUID | MS_NODEV, None), "mount /proc")
    for cap in range(64):
        libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0)  # EINVAL past the last known cap: fine
    if os.getuid() == 0 and uid_is_mapped(NOBODY):
        # The kernel never applies RLIMIT_NPROC to uid 0, so user code runs as nobody (this also drops
        # every capability). Where the server itself is unprivileged it already is not uid 0.
        os.setgroups([])
        os.setresgid(NOBODY, NOBODY, NOBODY)
        os.setresuid(NOBODY, NOBODY, NOBODY)
    # A user namespace of its own makes RLIMIT_NPROC count this call's processes only (the kernel
    # counts per user per namespace); best effort where unprivileged user namespaces are disabled.
    libc.unshare(CLONE_NEWUSER)
    mem = int(req["memoryMb"]) * 1024 * 1024
    cpu = max(1, -(-int(req["cpuMs"]) // 1000))
    limits = [
        (resource.RLIMIT_AS, vm_size_bytes() + mem),
        (resource.RLIMIT_CPU, cpu),
        (resource.RLIMIT_NPROC, int(req["maxProcs"])),
        (resource.RLIMIT_FSIZE, int(req["maxFileMb"]) * 1024 * 1024),
        (resource.RLIMIT_NOFILE, 256),
        (resource.RLIMIT_CORE, 0),
    ]
    for which, value in limits:
        hard = value + 1 if which == resource.RLIMIT_CPU else value
        resource.setrlimit(which, (value, hard))
    drop_capabilities()
