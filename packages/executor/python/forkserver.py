"""agentrl fork server: a warm Python that forks one fresh, isolated child per call.

Runs inside a bubblewrap sandbox (read-only view of what Python needs, no network, its own user, pid,
ipc and uts namespaces). Each call gets, on top of that, its own pid namespace (the child is pid 1, so
when it exits or is killed every process it left behind dies with it: setsid cannot escape), its own
mount namespace with a fresh tmpfs on /tmp and /dev/shm (removed with the namespace), a fresh /proc, a
nested user namespace (so RLIMIT_NPROC counts this call's processes only), rlimits, no capabilities and
no_new_privs. Speaks newline-delimited JSON on stdin/stdout: one request line in, one result line out.
"""

import ast
import builtins
import ctypes
import gc
import heapq
import json
import os
import resource
import selectors
import signal
import sys
import time
import traceback

CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
MS_NOSUID, MS_NODEV, MS_REC, MS_PRIVATE = 2, 4, 16384, 1 << 18
PR_CAPBSET_DROP, PR_SET_NO_NEW_PRIVS, PR_SET_DUMPABLE = 24, 38, 4
# clone(2)'s syscall number; with every pointer argument 0 the argument order does not matter.
SYS_CLONE = {"x86_64": 56, "aarch64": 220, "riscv64": 220, "ppc64le": 120}.get(os.uname().machine, 56)
CHUNK = 65536
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


def run_user_code(req, control_fd):
    """Executes the request in a clean __main__, the way `python -c` would, then exits.

    sys.stdin/stdout/stderr are the server's own (empty) wrappers: fds 0-2 now point at this call's
    stdin memfd and output pipes, and reusing the wrappers saves work on every call.
    """
    sys.argv = ["-c"]
    os.environ.clear()
    os.environ.update({"HOME": "/tmp", "TMPDIR": "/tmp", "PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8"})
    os.chdir("/tmp")
    main = type(sys)("__main__")
    main.__dict__["__builtins__"] = builtins
    sys.modules["__main__"] = main
    code = 0
    note = {}
    try:
        last = None
        if req.get("lastExpression"):
            tree = ast.parse(req["code"], "<string>", "exec")
            if tree.body and isinstance(tree.body[-1], ast.Expr):
                last = ast.Expression(tree.body.pop().value)
            compiled = compile(tree, "<string>", "exec")
        else:
            compiled = compile(req["code"], "<string>", "exec")
        exec(compiled, main.__dict__)
        if last is not None:
            value = eval(compile(last, "<string>", "eval"), main.__dict__)
            if value is not None:
                print(repr(value))
    except SystemExit as e:
        if e.code is None:
            code = 0
        elif isinstance(e.code, int):
            code = e.code & 0xFF
        else:
            print(e.code, file=sys.stderr)
            code = 1
    except MemoryError:
        note["memory"] = True
        code = 1
        try:
            print_user_traceback()
        except MemoryError:
            pass
    except BaseException:
        print_user_traceback()
        code = 1
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:
            pass
    if note:
        os.write(control_fd, json.dumps(note).encode())
    os._exit(code)


def print_user_traceback():
    """The traceback as `python -c` prints it: without this file's frame."""
    kind, value, tb = sys.exc_info()
    traceback.print_exception(kind, value, tb.tb_next if tb is not None else None)


class Call:
    __slots__ = ("req", "pid", "pidfd", "fds", "head", "tail", "total", "control", "started", "deadline",
                 "killed", "status", "rusage", "open")

    def __init__(self, req):
        self.req = req
        self.fds = {}
        self.head = {1: bytearray(), 2: bytearray()}
        self.tail = {1: bytearray(), 2: bytearray()}
        self.total = {1: 0, 2: 0}
        self.control = bytearray()
        self.killed = False
        self.status = None
        self.rusage = None


class Server:
    def __init__(self):
        self.sel = selectors.DefaultSelector()
        self.calls = {}  # pid -> Call
        self.deadlines = []  # (deadline, pid)
        self.inbuf = bytearray()
        self.out = sys.stdout.buffer
        os.set_blocking(0, False)
        self.sel.register(0, selectors.EVENT_READ, ("stdin", None))

    def send(self, obj):
        self.out.write(json.dumps(obj, ensure_ascii=False).encode() + b"\n")
        self.out.flush()

    def start(self, req):
        call = Call(req)
        pipes = {1: os.pipe(), 2: os.pipe(), 3: os.pipe()}
        stdin_fd = os.memfd_create("stdin", 0)
        data = (req.get("stdin") or "").encode()
        if data:
            os.write(stdin_fd, data)
            os.lseek(stdin_fd, 0, os.SEEK_SET)
        call.started = time.monotonic()
        self.out.flush()
        try:
            pid = fork_into_new_pid_namespace()
        except OSError as e:
            for r, w in pipes.values():
                os.close(r)
                os.close(w)
            os.close(stdin_fd)
            self.send(sandbox_error(req, f"fork failed: {e}"))
            return
        if pid == 0:
            self.child(req, pipes, stdin_fd)
        os.close(stdin_fd)
        call.pid = pid
        call.pidfd = os.pidfd_open(pid)
        for target, (r, w) in pipes.items():
            os.close(w)
            os.set_blocking(r, False)
            call.fds[r] = target
            self.sel.register(r, selectors.EVENT_READ, ("pipe", call))
        self.sel.register(call.pidfd, selectors.EVENT_READ, ("exit", call))
        call.deadline = call.started + req["timeoutMs"] / 1000.0
        heapq.heappush(self.deadlines, (call.deadline, pid))
        self.calls[pid] = call

    def child(self, req, pipes, stdin_fd):
        """In the fresh child: scrub other calls' data, wire fds, isolate, run. Never returns."""
        try:
            for other in self.calls.values():
                for buf in (*other.head.values(), *other.tail.values(), other.control):
                    buf[:] = bytes(len(buf))
                other.req = None
            self.calls.clear()
            self.inbuf[:] = bytes(len(self.inbuf))
            control = pipes[3][1]
            os.dup2(stdin_fd, 0)
            os.dup2(pipes[1][1], 1)
            os.dup2(pipes[2][1], 2)
            os.dup2(control, 3)
            os.closerange(4, 1 << 16)
            signal.signal(signal.SIGPIPE, signal.SIG_DFL)
            signal.signal(signal.SIGXCPU, signal.SIG_DFL)  # the CPU rlimit must end the process
            isolate(req)
        except BaseException as e:  # a setup failure is the sandbox's fault, not the code's
            try:
                os.write(3, json.dumps({"sandbox": f"{type(e).__name__}: {e}"}).encode())
            finally:
                os._exit(125)
        try:
            run_user_code(req, 3)
        finally:
            os._exit(1)  # never fall back into the server's loop

    def read_pipe(self, fd, call):
        target = call.fds[fd]
        try:
            chunk = os.read(fd, CHUNK)
        except BlockingIOError:
            return
        if not chunk:
            self.sel.unregister(fd)
            os.close(fd)
            del call.fds[fd]
            self.maybe_finish(call)
            return
        if target == 3:
            if len(call.control) < 4096:
                call.control += chunk
            return
        half = max(1, call.req["maxOutputBytes"] // 2)
        call.total[target] += len(chunk)
        head = call.head[target]
        if len(head) < half:
            take = half - len(head)
            head += chunk[:take]
            chunk = chunk[take:]
        if chunk:
            tail = call.tail[target]
            tail += chunk
            if len(tail) > 4 * half:  # amortised trim keeps reads O(1)
                del tail[: len(tail) - half]

    def reap(self, call):
        try:
            pid, status, rusage = os.wait4(call.pid, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        self.sel.unregister(call.pidfd)
        os.close(call.pidfd)
        call.pidfd = None
        call.status = status
        call.rusage = rusage
        self.maybe_finish(call)

    def maybe_finish(self, call):
        if call.status is None or call.fds:
            return
        del self.calls[call.pid]
        self.send(self.result(call))

    def result(self, call):
        req = call.req
        half = max(1, req["maxOutputBytes"] // 2)
        texts, truncated = {}, False
        for target in (1, 2):
            head, tail, total = call.head[target], call.tail[target], call.total[target]
            if total > 2 * half:
                truncated = True
                keep_tail = bytes(tail[-half:])
                dropped = total - len(head) - len(keep_tail)
                marker = f"\n...[{dropped} bytes truncated]...\n".encode()
                data = bytes(head) + marker + keep_tail
            else:
                data = bytes(head) + bytes(tail)
            texts[target] = data.decode("utf-8", errors="replace")
        note = {}
        if call.control:
            try:
                note = json.loads(call.control.decode())
            except ValueError:
                note = {}
        st = call.status
        exit_code = os.waitstatus_to_exitcode(st)
        signame = None
        if exit_code < 0:
            signame = signal.Signals(-exit_code).name
            exit_code = None
        cpu_ms = (call.rusage.ru_utime + call.rusage.ru_stime) * 1000.0
        if "sandbox" in note:
            status = "sandbox_error"
            texts[2] = f"sandbox: {note['sandbox']}"
        elif call.killed or signame == "SIGXCPU" or (signame == "SIGKILL" and cpu_ms >= req["cpuMs"]):
            status = "timeout"
        elif note.get("memory") or signame == "SIGKILL":
            status = "memory_exceeded"
        elif exit_code != 0:
            status = "runtime_error"
        elif truncated:
            status = "output_truncated"
        else:
            status = "ok"
        return {
            "id": req["id"],
            "status": status,
            "stdout": texts[1],
            "stderr": texts[2],
            "exitCode": exit_code,
            "signal": signame,
            "wallMs": (time.monotonic() - call.started) * 1000.0,
            "cpuMs": cpu_ms,
            "stdoutBytes": call.total[1],
            "stderrBytes": call.total[2],
        }

    def expire(self):
        now = time.monotonic()
        while self.deadlines and self.deadlines[0][0] <= now:
            _, pid = heapq.heappop(self.deadlines)
            call = self.calls.get(pid)
            if call is not None and call.status is None and not call.killed:
                call.killed = True
                try:
                    os.kill(pid, signal.SIGKILL)  # pid 1 of its namespace: the whole tree goes with it
                except ProcessLookupError:
                    pass

    def read_requests(self):
        try:
            chunk = os.read(0, 1 << 20)
        except BlockingIOError:
            return True
        if not chunk:
            return False
        self.inbuf += chunk
        del chunk  # a child forked below must not find other requests in this frame
        while True:
            nl = self.inbuf.find(b"\n")
            if nl < 0:
                return True
            line = bytes(self.inbuf[:nl])
            del self.inbuf[: nl + 1]
            if line.strip():
                req = json.loads(line)
                self.start(req)
                del req, line

    def serve(self):
        self.send({"ready": True, "pid": os.getpid(), "preloaded": sorted(PRELOADED)})
        alive = True
        while alive or self.calls:
            timeout = None
            if self.deadlines:
                timeout = max(0.0, self.deadlines[0][0] - time.monotonic())
            for key, _ in self.sel.select(timeout):
                kind, call = key.data
                if kind == "stdin":
                    if not self.read_requests():
                        alive = False
                        self.sel.unregister(0)
                elif kind == "pipe":
                    self.read_pipe(key.fd, call)
                else:
                    self.reap(call)
            self.expire()


def sandbox_error(req, message):
    return {"id": req["id"], "status": "sandbox_error", "stdout": "", "stderr": message, "exitCode": None,
            "signal": None, "wallMs": 0.0, "cpuMs": None, "stdoutBytes": 0, "stderrBytes": 0}


PRELOADED = []

# First calls into some libraries fill caches (sympy's cacheit, its printer and solver tables). Doing a
# little of that once here means every forked call starts with those caches filled; every call still
# starts from the same state.
WARMUP = {
    "sympy": (
        "import sympy as s\nx = s.Symbol('x')\n"
        "str(s.factor(x**4 - 1)); str(s.solve(x**2 - 2, x)); str(s.simplify(s.sin(x)**2 + s.cos(x)**2))\n"
        "str(s.diff(s.sin(x) * x, x)); str(s.expand((x + 1)**3)); str(s.integrate(x**2, x)); str(s.Rational(1, 3) + 1)"
    ),
    "numpy": "import numpy as n\nstr(n.arange(10).reshape(2, 5).sum(axis=0)); repr(n.linspace(0, 1, 3))",
}

if __name__ == "__main__":
    for name in [m for m in os.environ.get("AGENTRL_PRELOAD", "").split(",") if m]:
        try:
            __import__(name)
            PRELOADED.append(name)
            if name in WARMUP:
                exec(WARMUP[name], {})
        except Exception:  # a missing optional module only costs speed
            pass
    libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    gc.collect()
    gc.freeze()  # children then never write to the inherited objects' GC headers
    Server().serve()
