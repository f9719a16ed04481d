"""One SandboxFusion /run_code request, run inside the call's own sandbox (src/compat/sandbox-fusion-run.ts).

The executor runs this file as the call's code, so it and everything it starts (g++, bash, the program) have
the call's isolation: bwrap, its namespaces, uid nobody, the seccomp filter, rlimits and the memory cap. It
follows bytedance/SandboxFusion sandbox/runners/major.py (run_python, run_cpp, run_bash) and
sandbox/runners/base.py (restore_files, run_command_bare, the fetch loop of run_commands):

- stdin: one JSON object {language, code, stdin, files, fetch, compileTimeout, runTimeout, capture,
  fetchFileBytes, fetchTotalBytes}; `files` maps relative paths to base64 (checked by the TS side first).
- the files are restored into a fresh working directory, the source is written beside them under a random
  name, cpp is compiled with `g++ -std=c++17 <src> -o test` within compileTimeout, and the program runs
  there within runTimeout, its stdin fed through a pipe and the first `capture` bytes of each stream kept.
- then every process the program left is killed (this file is pid 1 of the call's pid namespace, so
  kill(-1) reaches all of them and nothing can change the directory any more), and fetched files are read
  without following a symlink out of the working directory.
- stdout: one JSON object {compile, run} (outputs base64); stderr: one JSON object {files, error}.

Nothing the program does can write to this process's stdout or stderr: it gets pipes of its own, and this
process is not dumpable, so /proc/1/fd is closed to it.
"""

import base64
import ctypes
import json
import os
import selectors
import signal
import stat
import subprocess
import sys
import tempfile
import time

PR_SET_DUMPABLE = 4
WORKDIR = "/tmp/sandbox"


class Refused(Exception):
    """A request this run cannot honour; the message says what to change."""


def main():
    req = json.loads(sys.stdin.buffer.read())
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    out = {"compile": None, "run": None}
    side = {"files": {}, "error": None}
    try:
        os.mkdir(WORKDIR, 0o755)
        os.chdir(WORKDIR)
        restore_files(req["files"])
        run_language(req, out)
    except (Refused, OSError) as e:
        side["error"] = str(e)
    finally:
        kill_everything()
    if side["error"] is None:
        try:
            side["files"] = fetch_files(req["fetch"], req["fetchFileBytes"], req["fetchTotalBytes"])
        except Refused as e:
            side["error"] = str(e)
    sys.stdout.write(json.dumps(out))
    sys.stderr.write(json.dumps(side))


def restore_files(files):
    """base.py restore_files: each path under the working directory, parents created, never through a link."""
    for name, content in files.items():
        parts = name.split("/")
        parent = WORKDIR
        for part in parts[:-1]:
            parent = os.path.join(parent, part)
            try:
                os.mkdir(parent, 0o755)
            except FileExistsError:
                if not stat.S_ISDIR(os.lstat(parent).st_mode):
                    raise Refused(f"files: '{name}' needs '{part}' to be a directory, but it is a file")
        path = os.path.join(parent, parts[-1])
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW
        try:
            fd = os.open(path, flags, 0o644)
        except IsADirectoryError:
            raise Refused(f"files: '{name}' is also used as a directory; send each path once") from None
        try:
            os.write(fd, base64.b64decode(content)) if content else None
        except OSError as e:
            raise Refused(f"files: writing '{name}' failed ({e.strerror}); the call's /tmp holds tmpMb") from None
        finally:
            os.close(fd)


def run_language(req, out):
    lang = req["language"]
    suffix = {"python": ".py", "cpp": ".cpp", "bash": ".sh"}[lang]
    fd, source = tempfile.mkstemp(suffix=suffix, dir=WORKDIR)
    with os.fdopen(fd, "w") as f:
        f.write(req["code"])
    os.chmod(source, 0o644)
    capture = req["capture"]
    if lang == "cpp":
        out["compile"] = run_command(
            ["g++", "-std=c++17", source, "-o", "test"], None, req["compileTimeout"], capture
        )
        ok = out["compile"]["status"] == "Finished" and out["compile"]["return_code"] == 0
        if not ok:
            return
        argv = ["./test"]
    elif lang == "bash":
        argv = ["/bin/bash", source]
    else:
        argv = [sys.executable, source]
    out["run"] = run_command(argv, req["stdin"], req["runTimeout"], capture)


def run_command(argv, stdin, timeout, capture):
    """base.py run_command_bare: stdin through a pipe, the first `capture` bytes of each stream kept."""
    start = time.monotonic()
    try:
        p = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
    except OSError as e:
        message = f"executor: cannot start {argv[0]} ({e.strerror}); install it on the executor's host"
        return command_result("Error", start, None, b"", message.encode())
    kept = {p.stdout.fileno(): bytearray(), p.stderr.fileno(): bytearray()}
    pending = memoryview((stdin or "").encode())
    sel = selectors.DefaultSelector()
    sel.register(p.stdout, selectors.EVENT_READ)
    sel.register(p.stderr, selectors.EVENT_READ)
    if pending:
        os.set_blocking(p.stdin.fileno(), False)
        sel.register(p.stdin, selectors.EVENT_WRITE)
    else:
        p.stdin.close()
    deadline = start + timeout
    timed_out = False
    while len(sel.get_map()) > 0:
        left = deadline - time.monotonic()
        if left <= 0:
            timed_out = True
            break
        for key, _ in sel.select(left):
            if key.fileobj is p.stdin:
                try:
                    pending = pending[os.write(key.fd, pending[: 1 << 16]) :]
                except (BrokenPipeError, BlockingIOError) as e:
                    if isinstance(e, BlockingIOError):
                        continue
                    pending = pending[:0]
                if not pending:
                    sel.unregister(p.stdin)
                    p.stdin.close()
                continue
            chunk = os.read(key.fd, 1 << 16)
            if not chunk:
                sel.unregister(key.fileobj)
                continue
            buf = kept[key.fd]
            buf += chunk[: max(0, capture - len(buf))]
    if not timed_out:
        try:
            p.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            timed_out = True
    if timed_out:
        kill_everything(p.pid)  # its session: start_new_session made its pid the group's id
        p.wait()
    sel.close()
    elapsed = time.monotonic() - start
    outs = (bytes(kept[p.stdout.fileno()]), bytes(kept[p.stderr.fileno()]))
    if timed_out:
        return command_result("TimeLimitExceeded", start, None, *outs, elapsed)
    return command_result("Finished", start, p.returncode, *outs, elapsed)


def command_result(status, start, code, stdout, stderr, elapsed=None):
    """sandbox/runners/types.py CommandRunResult; a signal's death as bash reports it, 128 + n."""
    if code is not None and code < 0:
        code = 128 - code
    return {
        "status": status,
        "execution_time": elapsed if elapsed is not None else time.monotonic() - start,
        "return_code": code,
        "stdout": base64.b64encode(stdout).decode(),
        "stderr": base64.b64encode(stderr).decode(),
    }


def kill_everything(group=None):
    """As pid 1 of the call's pid namespace, kill(-1) reaches every other process of the call; reap them all.

    Anywhere else kill(-1) would reach every process of this uid on the host, so there only the program's
    own session (`group`) is killed: nothing then stops a process that left it from touching the files.
    """
    if os.getpid() != 1:
        if group is not None:
            try:
                os.killpg(group, signal.SIGKILL)
            except ProcessLookupError:
                pass
        return
    while True:
        try:
            os.kill(-1, signal.SIGKILL)
        except ProcessLookupError:
            pass
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            return


def fetch_files(names, per_file, total):
    """run_commands' fetch loop: regular files only, missing ones skipped; never followed out of the directory."""
    files = {}
    used = 0
    root = os.path.realpath(WORKDIR)
    for name in names:
        path = os.path.realpath(os.path.join(WORKDIR, name))
        if os.path.commonpath([root, path]) != root:
            continue  # a link out of the working directory: not a file of this run
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError:
            continue
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                continue
            data = b""
            while len(data) <= per_file:
                chunk = os.read(fd, per_file + 1 - len(data))
                if not chunk:
                    break
                data += chunk
            if len(data) > per_file:
                raise Refused(f"fetch_files: '{name}' is over the limit of {per_file} bytes a file")
            used += len(data)
            if used > total:
                raise Refused(f"fetch_files: the files fetched are over the limit of {total} bytes together")
            files[name] = base64.b64encode(data).decode()
        finally:
            os.close(fd)
    return files


main()
