"""The zygote: a pristine copy of the warm interpreter that forks every call, and never sees a request.

The server forks it once, after its imports and before it reads its first request; from then on the zygote
only receives descriptors (the call's request and stdin in memfds, the write ends of its pipes) over a
socket, and answers with the pid of the call it forked. A call therefore starts from memory that has never
held another call's code, stdin or output: the server, which parses requests and results, forks no call
(before this, a call scanning its own forked heap found a concurrent call's code and stdin and earlier calls'
stdout). Each call is cloned with CLONE_PARENT, so it is the server's child: the server waits for it,
reads its rusage and kills it, as before.
"""

import fcntl
import json
import os
import signal
import socket
import struct

import _agentrl_seccomp
from _agentrl_run import run_user_code
from _agentrl_setup import fork_into_new_pid_namespace, isolate

CLONE_PARENT = 0x00008000
# What the server sends per call: the request memfd, the stdin memfd, the write ends of stdout, stderr, control.
CALL_FDS = 5


def start_zygote(tmp_binds, own_network, pythonpath):
    """Forks the zygote; returns its pid and the server's end of their socket."""
    server_end, zygote_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    pid = os.fork()
    if pid == 0:
        try:
            server_end.close()
            serve_zygote(zygote_end, (tmp_binds, own_network, pythonpath))
        finally:
            os._exit(0)
    zygote_end.close()
    return pid, server_end


def serve_zygote(sock, setup):
    null = os.open("/dev/null", os.O_RDWR)
    os.dup2(null, 0)  # the server's request pipe: never readable from here (nor from a call)
    os.dup2(null, 1)
    os.close(null)
    while True:
        msg, fds, _flags, _addr = socket.recv_fds(sock, 16, CALL_FDS)
        if not msg:
            os._exit(0)  # the server is gone
        pid = -22  # EINVAL: not the descriptors of a call
        if len(fds) == CALL_FDS:
            try:
                pid = fork_into_new_pid_namespace(CLONE_PARENT)
            except OSError as e:
                pid = -e.errno
            if pid == 0:
                sock.close()
                call_child(fds, *setup)
        for fd in fds:
            os.close(fd)
        sock.send(struct.pack("q", pid))


def call_child(fds, tmp_binds, own_network, pythonpath):
    """In the fresh call: read its own request, wire fds, isolate, run. Never returns."""
    try:
        # Out of the way of 0-3 first, whatever numbers they arrived with.
        req_fd, stdin_fd, out_w, err_w, control = (fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 16) for fd in fds)
        os.dup2(control, 3)
        req = json.loads(read_all(req_fd))
        # Its own session and process group: kill(0, sig) and killpg() from user code reach this call only.
        os.setsid()
        os.dup2(stdin_fd, 0)
        os.dup2(out_w, 1)
        os.dup2(err_w, 2)
        os.closerange(4, 1 << 16)
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
        signal.signal(signal.SIGXCPU, signal.SIG_DFL)  # the CPU rlimit must end the process
        isolate(req, tmp_binds, own_network)
        _agentrl_seccomp.install()
    except BaseException as e:  # a setup failure is the sandbox's fault, not the code's
        try:
            os.write(3, json.dumps({"sandbox": f"{type(e).__name__}: {e}"}).encode())
        finally:
            os._exit(125)
    try:
        os.close(3)  # the control channel ends here: user code never holds it
        run_user_code(req, pythonpath)
    finally:
        os._exit(1)  # never fall back into the zygote's loop


def read_all(fd):
    os.lseek(fd, 0, os.SEEK_SET)
    parts = []
    while chunk := os.read(fd, 1 << 20):
        parts.append(chunk)
    return b"".join(parts)
