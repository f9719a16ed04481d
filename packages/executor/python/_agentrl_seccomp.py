"""A seccomp filter for each call, assembled by hand (the stdlib has no seccomp binding).

It refuses, with EPERM, the few system calls through which a call could hold memory that no limit of the
fallback memory cap counts, or reach outside its namespaces:

- memfd_create, shmget: memory held in a file or segment that no process maps is in no process's address
  space or resident set (one call held 1.15 GB in memfds under memoryMb 64);
- io_uring_setup: io_uring runs operations (socket, openat, ...) that this filter would not see;
- socket(AF_UNIX, ...) and socketpair(AF_UNIX, SOCK_DGRAM, ...): a unix socket reaches whatever listens on a
  path the call can see (a host listener's socket file under a read-only exposure: a read-only mount does
  not stop connect()) or on an abstract name in its network namespace (shared by the calls of a server with
  networkPerCall off, which then passed descriptors to each other). A connected socketpair of the stream or
  seqpacket kind stays allowed (asyncio, multiprocessing's Pipe): it cannot be connected anywhere else.

Everything else is allowed. The filter is installed last, after no_new_privs, and is inherited by every
process the call starts and kept across exec.
"""

import ctypes
import errno
import os
import struct

from _agentrl_setup import SandboxSetupError, libc

PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 22, 2
RET_ALLOW, RET_KILL_PROCESS, RET_ERRNO = 0x7FFF0000, 0x80000000, 0x00050000
LD_W_ABS, JEQ_K, JGE_K, RET_K = 0x20, 0x15, 0x35, 0x06
# seccomp_data: int nr; u32 arch; u64 instruction_pointer; u64 args[6]
OFF_NR, OFF_ARCH, OFF_ARG0, OFF_ARG1 = 0, 4, 16, 24
ALU_AND_K = 0x54

ARCHES = {
    # audit arch, then the numbers of the calls refused
    "x86_64": (0xC000003E, {"memfd_create": 319, "shmget": 29, "io_uring_setup": 425}, (41, 53)),
    "aarch64": (0xC00000B7, {"memfd_create": 279, "shmget": 194, "io_uring_setup": 425}, (198, 199)),
}
AF_UNIX, SOCK_DGRAM, SOCK_TYPE_MASK = 1, 2, 0xF
X32_BIT = 0x40000000  # x86_64's x32 ABI: another number for every call; refused as a whole


def program(machine):
    """The filter as (code, jt, jf, k) instructions."""
    arch, refused, (nr_socket, nr_socketpair) = ARCHES[machine]
    deny = RET_ERRNO | errno.EPERM
    prog = [(LD_W_ABS, 0, 0, OFF_ARCH), (JEQ_K, 1, 0, arch), (RET_K, 0, 0, RET_KILL_PROCESS), (LD_W_ABS, 0, 0, OFF_NR)]
    if machine == "x86_64":
        prog += [(JGE_K, 0, 1, X32_BIT), (RET_K, 0, 0, deny)]
    for nr in refused.values():
        prog += [(JEQ_K, 0, 1, nr), (RET_K, 0, 0, deny)]
    # socket(AF_UNIX, ...): refused. socketpair(AF_UNIX, SOCK_DGRAM, ...): refused (the low 32 bits of each
    # argument; SOCK_NONBLOCK and SOCK_CLOEXEC are masked off the type).
    prog += [
        (JEQ_K, 0, 3, nr_socket),
        (LD_W_ABS, 0, 0, OFF_ARG0),
        (JEQ_K, 0, 8, AF_UNIX),  # another family: on to the final ALLOW
        (RET_K, 0, 0, RET_ERRNO | errno.EACCES),
        (JEQ_K, 0, 6, nr_socketpair),
        (LD_W_ABS, 0, 0, OFF_ARG0),
        (JEQ_K, 0, 4, AF_UNIX),
        (LD_W_ABS, 0, 0, OFF_ARG1),
        (ALU_AND_K, 0, 0, SOCK_TYPE_MASK),
        (JEQ_K, 0, 1, SOCK_DGRAM),
        (RET_K, 0, 0, RET_ERRNO | errno.EACCES),
    ]
    prog.append((RET_K, 0, 0, RET_ALLOW))
    return prog


def install():
    machine = os.uname().machine
    if machine not in ARCHES:
        raise SandboxSetupError(f"seccomp: no filter for {machine}")
    prog = program(machine)
    raw = b"".join(struct.pack("HBBI", *ins) for ins in prog)
    buf = ctypes.create_string_buffer(raw, len(raw))

    class Fprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    fprog = Fprog(len(prog), ctypes.addressof(buf))
    if libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0) != 0:
        raise SandboxSetupError(f"seccomp: {os.strerror(ctypes.get_errno())}")
