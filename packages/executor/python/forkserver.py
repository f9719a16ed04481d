"""agentrl fork server: a warm Python that forks one fresh, isolated child per call.

Runs inside a bubblewrap sandbox (read-only view of what Python needs, no network, its own pid, ipc
and uts namespaces). Each call gets, on top of that, its own pid namespace (the child is pid 1, so
when it exits or is killed every process it left behind dies with it: setsid cannot escape), its own
mount namespace with a fresh tmpfs on /tmp and /dev/shm (removed with the namespace), a fresh /proc, a
nested user namespace (so RLIMIT_NPROC counts this call's processes only), its own IPC and network
namespaces, its own session and process group (so kill(0, ...) reaches this call only), rlimits, no
capabilities and no_new_privs. Speaks newline-delimited JSON on stdin/stdout: one request line in, one
result line out.

How a call ended is decided here, from what the server itself observes (the wait status, the rusage, its
own timer, the output). The only message a child sends (on fd 3) is a failure of its setup, written before
user code runs; fd 3 is closed before user code starts, so user code can neither write nor fake it.
"""

import gc
import heapq
import json
import os
import selectors
import signal
import socket
import struct
import sys
import time

# -I leaves the script's folder off sys.path; add it for our own modules only, then remove it so that
# user code sees the interpreter's ordinary sys.path.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _agentrl_cgroup as cgroup  # noqa: E402
from _agentrl_setup import PR_SET_DUMPABLE, libc  # noqa: E402
from _agentrl_zygote import start_zygote  # noqa: E402

del sys.path[0]

CHUNK = 65536
# Longer request lines are dropped unread (the TS side never sends one: it caps code + stdin well below this).
MAX_REQUEST_BYTES = 512 << 20
CLASSIFY_TAIL = 4096
# How often the fallback memory cap measures what each running call holds (calls younger than this are
# never measured: their address space is still capped by RLIMIT_AS per process).
MEMORY_SAMPLE_S = 0.02
# Read-only paths under /tmp or /dev/shm that each call's fresh tmpfs would hide; re-bound per call.
TMP_BINDS = [str(p) for p in json.loads(os.environ.get("AGENTRL_TMP_BINDS") or "[]")]
# Each call in its own network namespace (default), or sharing the server's.
OWN_NETWORK = os.environ.get("AGENTRL_NETWORK_PER_CALL", "1") != "0"
# Import path entries for user code (PYTHONPATH semantics: before the standard library).
PYTHONPATH = [p for p in os.environ.get("AGENTRL_PYTHONPATH", "").split(os.pathsep) if p]


class Call:
    __slots__ = ("req", "pid", "pidfd", "fds", "head", "tail", "total", "control", "started", "deadline",
                 "killed", "status", "rusage", "open", "held", "base", "cgroup")

    def __init__(self, req):
        self.req = req
        self.fds = {}
        self.head = {1: bytearray(), 2: bytearray()}
        self.tail = {1: bytearray(), 2: bytearray()}
        self.total = {1: 0, 2: 0}
        self.control = bytearray()
        self.killed = False
        self.held = None  # bytes it held when the memory cap ended it
        self.cgroup = None  # its own cgroup (memory.max), where the executor was given one
        self.status = None
        self.rusage = None


class Server:
    def __init__(self, zygote_pid, zygote):
        self.zygote = zygote
        # The warm heap every call inherits from the zygote, in its RssAnon from birth (the memory cap's base).
        self.zygote_heap = rss_of(zygote_pid)[0]
        self.sel = selectors.DefaultSelector()
        self.calls = {}  # pid -> Call
        self.deadlines = []  # (deadline, pid)
        self.inbuf = bytearray()
        self.skip_line = False
        self.next_sample = 0.0
        self.stale_groups = []  # call cgroups whose last processes were still exiting when it ended
        self.out = sys.stdout.buffer
        os.set_blocking(0, False)
        self.sel.register(0, selectors.EVENT_READ, ("stdin", None))

    def send(self, obj):
        self.out.write(json.dumps(obj, ensure_ascii=False).encode() + b"\n")
        self.out.flush()

    def start(self, req):
        """Has the zygote fork one call. Every descriptor opened here has one owner that closes it on every path:
        `owned` until the call exists, then the Call (its read ends and pidfd, closed as each drains or is reaped).
        The call reads its request from a memfd of its own: no process it is forked from ever held it."""
        stdin = decode_request(req)  # everything that can fail on the request's content fails here, before any fd
        req.pop("cgroup", None)  # only this server names a call's group
        call = Call(req)
        owned = []
        try:
            if cgroup.PARENT:
                call.cgroup = req["cgroup"] = cgroup.create(req["id"], req["memoryMb"])
            payload = json.dumps({k: req[k] for k in CHILD_FIELDS if k in req}).encode()
            pipes = {}
            for target in (1, 2, 3):
                r, w = os.pipe()
                owned += (r, w)
                pipes[target] = (r, w)
            req_fd = os.memfd_create("request", os.MFD_CLOEXEC)
            owned.append(req_fd)
            write_all(req_fd, payload)
            stdin_fd = os.memfd_create("stdin", os.MFD_CLOEXEC)
            owned.append(stdin_fd)
            write_all(stdin_fd, stdin)
            os.lseek(stdin_fd, 0, os.SEEK_SET)
            call.started = time.monotonic()
            call.base = self.zygote_heap
            pid = self.fork_call([req_fd, stdin_fd, pipes[1][1], pipes[2][1], pipes[3][1]])
            call.pid = pid
            try:
                call.pidfd = os.pidfd_open(pid)
            except OSError:
                os.kill(pid, signal.SIGKILL)  # cannot watch it: it must not run unwatched
                os.waitpid(pid, 0)
                raise
        except BaseException:
            close_all(owned)
            if call.cgroup:
                cgroup.remove(call.cgroup)
            raise
        # From here nothing fails on the request; the call owns the read ends and the pidfd.
        close_all([w for _, w in pipes.values()] + [req_fd, stdin_fd])
        for target, (r, _) in pipes.items():
            os.set_blocking(r, False)
            call.fds[r] = target
            self.sel.register(r, selectors.EVENT_READ, ("pipe", call))
        self.sel.register(call.pidfd, selectors.EVENT_READ, ("exit", call))
        call.deadline = call.started + req["timeoutMs"] / 1000.0
        heapq.heappush(self.deadlines, (call.deadline, pid))
        self.calls[pid] = call

    def fork_call(self, fds):
        """Hands a call's descriptors to the zygote; the pid of the call it forked (this server's child)."""
        socket.send_fds(self.zygote, [b"F"], fds)
        answer = self.zygote.recv(8)
        if len(answer) != 8:
            log("the zygote is gone; exiting so that a fresh server is started")
            os._exit(70)
        pid = struct.unpack("q", answer)[0]
        if pid < 0:
            raise OSError(-pid, f"the zygote could not fork the call: {os.strerror(-pid)}")
        return pid

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
        half = keep_bytes(call.req)
        call.total[target] += len(chunk)
        head = call.head[target]
        if len(head) < half:
            take = half - len(head)
            head += chunk[:take]
            chunk = chunk[take:]
        if chunk:
            # head-only calls still keep a little tail: how stderr ends decides memory_exceeded
            keep = CLASSIFY_TAIL if head_only(call.req) else half
            tail = call.tail[target]
            tail += chunk
            if len(tail) > 4 * keep:  # amortised trim keeps reads O(1)
                del tail[: len(tail) - keep]

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
        try:
            result = self.result(call)
        except Exception as e:  # a bug here must fail this call only, never the server
            result = sandbox_error(call.req, f"fork server: could not build the result: {type(e).__name__}: {e}")
        self.send(result)
        if call.cgroup and not cgroup.remove(call.cgroup):
            self.stale_groups.append(call.cgroup)

    def result(self, call):
        req = call.req
        half = keep_bytes(req)
        texts, truncated, ends = {}, False, {1: None, 2: None}
        for target in (1, 2):
            head, tail, total = call.head[target], call.tail[target], call.total[target]
            if head_only(req):
                truncated = truncated or total > half
                data = bytes(head)
                ends[target] = bytes(tail[-CLASSIFY_TAIL:]).decode("utf-8", errors="replace") if total > half else None
            elif total > 2 * half:
                truncated = True
                keep_tail = bytes(tail[-half:])
                dropped = total - len(head) - len(keep_tail)
                marker = f"\n...[{dropped} bytes truncated]...\n".encode()
                data = bytes(head) + marker + keep_tail
            else:
                data = bytes(head) + bytes(tail)
            texts[target] = data.decode("utf-8", errors="replace")
        setup_failure = parse_setup_note(call.control)
        st = call.status
        exit_code = os.waitstatus_to_exitcode(st)
        signame = None
        if exit_code < 0:
            signame = signal_name(-exit_code)
            exit_code = None
        cpu_ms = (call.rusage.ru_utime + call.rusage.ru_stime) * 1000.0
        error_code = None
        if setup_failure is not None:
            status = "sandbox_error"
            texts[2] = f"sandbox: {setup_failure}"
        elif call.held is not None:
            status = "memory_exceeded"
            mb = int(req["memoryMb"])
            texts[2] += (f"\nMemoryError: the call held {call.held >> 20} MB, over its memoryMb {mb} "
                         "(all its processes, its /tmp and /dev/shm together)")
        elif call.cgroup and cgroup.oom_killed(call.cgroup):
            # the kernel's OOM killer, inside the call's own memory.max: every process of the call went
            status = "memory_exceeded"
            peak = cgroup.peak_mb(call.cgroup)
            texts[2] += (f"\nMemoryError: the call went over its memoryMb {int(req['memoryMb'])} (its cgroup's "
                         f"memory.max{'' if peak is None else f'; peak {peak} MB'})")
        elif call.killed or signame == "SIGXCPU" or (signame == "SIGKILL" and cpu_ms >= req["cpuMs"]):
            status = "timeout"
        elif signame == "SIGKILL":
            # The call is pid 1 of its pid namespace: nothing inside it can SIGKILL it, and the limits that
            # end it this way are handled above. This kill came from outside (the host's OOM killer, an
            # operator): not the program's doing, and no evidence that it ran out of memory.
            status = "sandbox_error"
            error_code = "KILLED"
            texts[2] += "\nexecutor: the call was killed by SIGKILL from outside its sandbox (not by a limit)"
        elif exit_code == 1 and ends_in_memory_error(ends[2] if ends[2] is not None else texts[2]):
            status = "memory_exceeded"
        elif exit_code != 0:
            status = "runtime_error"
        elif truncated:
            status = "output_truncated"
        else:
            status = "ok"
        out = {
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
        if error_code is not None:
            out["errorCode"] = error_code
        return out

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

    def check_memory(self):
        """The fallback memory cap: every MEMORY_SAMPLE_S, what each call holds (memory_held) against its
        memoryMb; a call over it is SIGKILLed (its whole pid namespace) and ends memory_exceeded."""
        now = time.monotonic()
        if now < self.next_sample:
            return
        self.next_sample = now + MEMORY_SAMPLE_S
        if self.stale_groups:
            self.stale_groups = [g for g in self.stale_groups if not cgroup.remove(g)]
        for call in list(self.calls.values()):
            if call.status is not None or call.killed or now - call.started < MEMORY_SAMPLE_S:
                continue
            if 3 in call.fds.values():
                continue  # still in its setup (its control pipe is open until user code starts): not its /tmp yet
            held = memory_held(call.pid, call.base)
            if held > int(call.req["memoryMb"]) << 20:
                call.killed = True
                call.held = held
                try:
                    os.kill(call.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass

    def read_requests(self):
        try:
            chunk = os.read(0, 1 << 20)
        except BlockingIOError:
            return True
        if not chunk:
            return False
        scanned = len(self.inbuf)  # bytes already searched for a newline: each byte is searched once
        self.inbuf += chunk
        del chunk
        while True:
            nl = self.inbuf.find(b"\n", scanned)
            if nl < 0:
                if len(self.inbuf) > MAX_REQUEST_BYTES:
                    self.skip_line = True  # drop the rest of this line: no request is that long
                    self.inbuf[:] = b""
                return True
            line = bytes(self.inbuf[:nl])
            del self.inbuf[: nl + 1]
            scanned = 0
            if self.skip_line:
                self.skip_line = False
                log("ignored a request line longer than the limit")
                continue
            if line.strip():
                self.handle_line(line)
            del line

    def handle_line(self, line):
        """One request line: a call started, or answered alone with sandbox_error; never raises."""
        try:
            req = json.loads(line)
        except Exception as e:  # ValueError, RecursionError (deep nesting), MemoryError: fail this line only
            log(f"ignored a request line that is not JSON: {type(e).__name__}")
            return
        if not isinstance(req, dict) or not isinstance(req.get("id"), int):
            log("ignored a request line that is not an object with an integer id")
            return
        try:
            self.start(req)
        except (ValueError, UnicodeError) as e:  # a malformed request fails alone
            self.send(sandbox_error(req, f"fork server: bad request: {type(e).__name__}: {e}"))
        except Exception as e:  # EMFILE, a failed fork: this call fails, the server goes on
            self.send(sandbox_error(req, f"fork server: could not start the call: {type(e).__name__}: {e}"))

    def serve(self):
        self.send({"ready": True, "pid": os.getpid(), "preloaded": sorted(PRELOADED)})
        alive = True
        while alive or self.calls:
            timeout = None
            if self.deadlines:
                timeout = max(0.0, self.deadlines[0][0] - time.monotonic())
            if self.calls:
                timeout = min(timeout if timeout is not None else MEMORY_SAMPLE_S, MEMORY_SAMPLE_S)
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
            self.check_memory()


# What a call's own process is told of its request (the rest stays with the server).
CHILD_FIELDS = ("code", "lastExpression", "cpuMs", "memoryMb", "maxProcs", "maxFileMb", "tmpMb", "cgroup")
NUMERIC_FIELDS = ("timeoutMs", "cpuMs", "memoryMb", "maxOutputBytes", "maxProcs", "maxFileMb", "tmpMb")


def decode_request(req):
    """Checks a request before anything is opened for it; returns its stdin as bytes. Raises ValueError (or
    UnicodeEncodeError) naming what is wrong: a lone surrogate in code or stdin, a missing or mistyped field."""
    missing = [k for k in NUMERIC_FIELDS if not isinstance(req.get(k), (int, float)) or isinstance(req.get(k), bool)]
    if missing or not isinstance(req.get("code"), str) or not isinstance(req.get("stdin") or "", str):
        raise ValueError(f"needs code, stdin (strings) and numbers {', '.join(NUMERIC_FIELDS)}; bad: {missing or 'code/stdin'}")
    if not all(0 < req[k] < 1 << 40 for k in NUMERIC_FIELDS):
        raise ValueError(f"{', '.join(NUMERIC_FIELDS)} must be positive and below 2**40")
    req["code"].encode()  # UnicodeEncodeError names the lone surrogate
    return (req.get("stdin") or "").encode()


def write_all(fd, data):
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def close_all(fds):
    for fd in fds:
        try:
            os.close(fd)
        except OSError:
            pass


def log(message):
    sys.stderr.write(f"forkserver: {message}\n")
    sys.stderr.flush()


def call_processes(pid):
    """`pid` and every process below it (its pid namespace's tree), from /proc's children lists."""
    out, stack = [], [pid]
    while stack:
        p = stack.pop()
        out.append(p)
        try:
            for tid in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{tid}/children") as f:
                    stack.extend(int(c) for c in f.read().split())
        except OSError:  # it exited while we looked
            pass
    return out


def rss_of(pid):
    """(RssAnon, RssShmem) of a process in bytes; zeros once it has exited."""
    anon = shmem = 0
    try:
        with open(f"/proc/{pid}/status", "rb") as f:
            for line in f:
                if line.startswith(b"RssAnon:"):
                    anon = int(line.split()[1]) << 10
                elif line.startswith(b"RssShmem:"):
                    shmem = int(line.split()[1]) << 10
    except OSError:
        pass
    return anon, shmem


def memory_held(pid, base):
    """What a call holds, in bytes: for each of its processes the anonymous memory it added over the warm heap
    it inherited (`base`) and the shared memory it maps, plus what its /tmp and /dev/shm hold. Pages shared
    between the call's own processes count once per process: this errs towards counting too much."""
    total = 0
    for p in call_processes(pid):
        anon, shmem = rss_of(p)
        total += max(0, anon - base) + shmem
    for mount in ("tmp", "dev/shm"):
        try:
            st = os.statvfs(f"/proc/{pid}/root/{mount}")
            total += (st.f_blocks - st.f_bfree) * st.f_frsize
        except OSError:
            pass
    return total


def keep_bytes(req):
    """Bytes of each stream kept from its head (and as much again from its tail, unless head-only)."""
    cap = int(req["maxOutputBytes"])
    return max(1, cap if head_only(req) else cap // 2)


def head_only(req):
    return req.get("truncate") == "head"


def parse_setup_note(control):
    """The child's setup-failure message, or None. Written only by our own code before user code runs; still
    parsed defensively, so that no bytes at all can take the server down."""
    if not control:
        return None
    try:
        note = json.loads(bytes(control).decode("utf-8", errors="replace"))
    except ValueError:
        return "unreadable setup report"
    if isinstance(note, dict) and "sandbox" in note:
        return str(note["sandbox"])[:2000]
    return "unreadable setup report"


def ends_in_memory_error(stderr):
    """True when the program's stderr ends with a MemoryError traceback line (Python's RLIMIT_AS failure)."""
    for line in reversed(stderr.splitlines()):
        if line.strip():
            return line.startswith("MemoryError")
    return False


def signal_name(num):
    try:
        return signal.Signals(num).name
    except ValueError:  # a real-time signal has no name in the enum
        return f"SIG{num}"


def sandbox_error(req, message):
    return {"id": req.get("id"), "status": "sandbox_error", "stdout": "", "stderr": message, "exitCode": None,
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
    zygote_pid, zygote = start_zygote(TMP_BINDS, OWN_NETWORK, PYTHONPATH)
    Server(zygote_pid, zygote).serve()
