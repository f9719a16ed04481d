"""Per-call isolation for the agentrl fork server: the clone into a fresh pid namespace, and everything
a child does between fork and user code (namespaces, mounts, uid, rlimits, capabilities)."""

import ctypes
import fcntl
import os
import resource
import signal
import socket
import struct

from _agentrl_cgroup import join as join_cgroup

CLONE_NEWNS = 0x00020000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 1, 2, 4, 8, 32, 4096, 16384, 1 << 18
MS_NOATIME, MS_NODIRATIME, MS_RELATIME = 1024, 2048, 1 << 21
SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 0x1
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


def fork_into_new_pid_namespace(extra_flags=0):
    """os.fork() with CLONE_NEWPID: the child is pid 1 of a fresh pid namespace (`extra_flags`: CLONE_PARENT).

    unshare(CLONE_NEWPID) works only once per process, so we call clone() ourselves and run the
    interpreter's own before/after-fork hooks around it, exactly as os.fork() does. The server is
    single-threaded, so no libc lock can be held across the raw clone.
    """
    api = ctypes.pythonapi
    api.PyOS_BeforeFork()
    pid = pylibc.syscall(
        ctypes.c_long(SYS_CLONE),
        ctypes.c_ulong(CLONE_NEWPID | extra_flags | signal.SIGCHLD),
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


def loopback_up():
    """A fresh network namespace has only `lo`, and it is down; bring it up so a call can still talk to itself."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        ifreq = struct.pack("16sh14x", b"lo", 0)
        flags = struct.unpack("16sh14x", fcntl.ioctl(s, SIOCGIFFLAGS, ifreq))[1]
        fcntl.ioctl(s, SIOCSIFFLAGS, struct.pack("16sh14x", b"lo", flags | IFF_UP))


def remount_read_only(path):
    """Makes the mount at `path` read-only in this call's mount namespace, keeping its other flags."""
    st = os.statvfs(path).f_flag  # ST_* flags: the same bits as MS_* except relatime
    keep = st & (MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_NOATIME | MS_NODIRATIME)
    flags = MS_BIND | MS_REMOUNT | MS_RDONLY | keep | (MS_RELATIME if st & os.ST_RELATIME else 0)
    check(libc.mount(b"none", path.encode(), None, flags, None), f"remount {path} read-only")


def bind_read_only(fd, target):
    """Bind-mounts what `fd` (an O_PATH descriptor opened before /tmp was replaced) names onto `target`, read-only."""
    if os.path.isdir(f"/proc/self/fd/{fd}"):
        os.makedirs(target, mode=0o755, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(target), mode=0o755, exist_ok=True)
        os.close(os.open(target, os.O_CREAT | os.O_WRONLY, 0o644))
    source = f"/proc/self/fd/{fd}".encode()
    check(libc.mount(source, target.encode(), None, MS_BIND | MS_REC, None), f"bind {target}")
    flags = MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV
    check(libc.mount(b"none", target.encode(), None, flags, None), f"remount {target} read-only")


def isolate(req, tmp_binds=(), own_network=True):
    """Everything between fork and user code. Runs as pid 1 of a fresh pid namespace.

    Each call gets its own mount, IPC and network namespaces: another call's files, SysV/POSIX IPC objects,
    sockets (loopback ports, abstract unix sockets) are not reachable from this one (`own_network` False
    shares the server's network namespace instead, which saves about a millisecond). `tmp_binds` are
    read-only paths under /tmp (or /dev/shm) that the call's fresh tmpfs would otherwise hide.
    """
    if req.get("cgroup"):
        # first of all, so that everything the call ever holds is charged to its own memory.max
        join_cgroup(req["cgroup"])
    check(libc.unshare(CLONE_NEWNS | CLONE_NEWIPC | (CLONE_NEWNET if own_network else 0)), "unshare(mount, ipc, net)")
    if own_network:
        loopback_up()
    check(libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None), "make / private")
    # bwrap's /dev is one tmpfs for the whole server; where user code keeps uid 0 (unprivileged mode) it could
    # leave files there for later calls. Device nodes stay usable on a read-only mount.
    remount_read_only("/dev")
    held = [(os.open(p, os.O_PATH | os.O_CLOEXEC), p) for p in tmp_binds]
    tmp_opts = f"size={int(req['tmpMb'])}m,mode=1777,nr_inodes=4096".encode()
    check(libc.mount(b"tmpfs", b"/tmp", b"tmpfs", MS_NOSUID | MS_NODEV, tmp_opts), "mount /tmp")
    check(libc.mount(b"tmpfs", b"/dev/shm", b"tmpfs", MS_NOSUID | MS_NODEV, b"size=16m,mode=1777"), "mount /dev/shm")
    for fd, path in held:
        bind_read_only(fd, path)
        os.close(fd)
    check(libc.mount(b"proc", b"/proc", b"proc", MS_NOSUID | MS_NODEV, None), "mount /proc")
    if req.get("cgroup"):
        # the delegated cgroup directory is bound into the sandbox for this setup only: hidden from user code
        hide = os.path.dirname(req["cgroup"]).encode()
        check(libc.mount(b"tmpfs", hide, b"tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV, b"size=4k"), "hide the cgroups")
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
