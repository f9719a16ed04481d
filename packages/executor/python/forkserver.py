"""agentrl fork server: a warm Python that forks one fresh, isolated child per call.

Runs inside a bubblewrap sandbox (read-only view of what Python needs, no network, its own pid, ipc
and uts namespaces). Each call gets, on top of that, its own pid namespace (the child is pid 1, so
when it exits or is killed every process it left behind dies with it: setsid cannot escape), its own
mount namespace with a fresh tmpfs on /tmp and /dev/shm (removed with the namespace), a fresh /proc, a
nested user namespace (so RLIMIT_NPROC counts this call's processes only), rlimits, no capabilities and
no_new_privs. Speaks newline-delimited JSON on stdin/stdout: one request line in, one result line out.
"""

import gc
import heapq
import json
import os
import selectors
import signal
import sys
import time

# -I leaves the script's folder off sys.path; add it for our two modules only, then remove it so that
# user code sees the interpreter's ordinary sys.path.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _agentrl_run import run_user_code  # noqa: E402
from _agentrl_setup import PR_SET_DUMPABLE, fork_into_new_pid_namespace, isolate, libc  # noqa: E402

del sys.path[0]

CHUNK = 65536


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
