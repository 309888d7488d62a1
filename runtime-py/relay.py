"""pi-code-supervisor relay: runs the runner on a remote machine behind a transport that carries one byte stream
each way (ssh, kubectl exec -i, docker exec -i). Standard library only. docs/protocol.md, "Remote backends".

The relay starts the runner in its own session with fd 1, 2 and 3 on socket pairs of its own, and multiplexes them
onto its stdout as frames: 1 byte stream id, 4-byte big-endian length, payload. Stream 0 is the relay's own JSON
messages, 1 and 2 the runner's stdout and stderr, 3 its control channel. The host writes frames of streams 0
(signals) and 3 (control) on the relay's stdin. End of stdin (the connection dropped, the host went away) kills the
runner's process group: nothing outlives the connection.
"""

import os
import select
import signal
import socket
import sys
import threading

MAX_FRAME = 64 << 20
_out_lock = threading.Lock()


def put(stream, data):
    head = bytes([stream]) + len(data).to_bytes(4, "big")
    with _out_lock:
        data = head + data
        while data:
            data = data[os.write(1, data) :]


def message(obj):
    import json

    put(0, json.dumps(obj).encode("utf-8"))


def read_exact(n):
    buf = bytearray()
    while len(buf) < n:
        chunk = os.read(0, min(n - len(buf), 1 << 20))
        if not chunk:
            return None
        buf += chunk
    return bytes(buf)


def read_frame():
    head = read_exact(5)
    if head is None:
        return None, None
    n = int.from_bytes(head[1:], "big")
    if n > MAX_FRAME:
        return None, None
    body = read_exact(n)
    return (head[0], body) if body is not None else (None, None)


def kill_group(pid, sig):
    try:
        os.killpg(pid, sig)
    except OSError:
        pass


def start_runner(runner, mode, limits):
    """The runner in a new session (it leads its group), fd 0 /dev/null, fd 1-3 our socket pairs."""
    pairs = [socket.socketpair() for _ in range(3)]
    pid = os.fork()
    if pid == 0:
        try:
            os.setsid()
            null = os.open(os.devnull, os.O_RDONLY)
            os.dup2(null, 0)
            for fd, (_, child) in zip((1, 2, 3), pairs):
                os.dup2(child.fileno(), fd)
            os.closerange(4, 256)
            args = [sys.executable, runner, "--mode", mode] + (["--limits", limits] if limits else [])
            os.execv(sys.executable, args)
        finally:
            os._exit(127)
    for _, child in pairs:
        child.close()
    return pid, [p for p, _ in pairs]


def main(base, mode, limits):
    pid, (out, err, ctl) = start_runner(os.path.join(base, "runner.py"), mode, limits)
    v = sys.version_info
    message({"type": "hello", "pid": pid, "python": "%d.%d.%d" % v[:3], "executable": sys.executable})

    def from_host():
        # Control bytes to the runner; signals to its pid or group. End of stdin: the connection is gone.
        while True:
            stream, body = read_frame()
            if stream is None:
                kill_group(pid, signal.SIGKILL)
                os._exit(1)
            if stream == 3:
                try:
                    ctl.sendall(body)
                except OSError:
                    pass
            elif stream == 0:
                import json

                name = json.loads(body.decode("utf-8")).get("signal")
                sig = {"SIGINT": signal.SIGINT, "SIGTERM": signal.SIGTERM, "SIGKILL": signal.SIGKILL}.get(name)
                if sig == signal.SIGINT:
                    try:
                        os.kill(pid, sig)
                    except OSError:
                        pass
                elif sig is not None:
                    kill_group(pid, sig)

    threading.Thread(target=from_host, daemon=True).start()

    # SIGCHLD wakes the loop, so the runner's exit is seen at once even while forked children keep the sockets open.
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *a: None)
    streams = {out.fileno(): (1, out), err.fileno(): (2, err), ctl.fileno(): (3, ctl)}
    status = None
    deadline = None
    import time

    while streams:
        if status is None:
            got, st = os.waitpid(pid, os.WNOHANG)
            if got == pid:
                status = st
                # Like the local backend: the group goes with its leader, output in flight is read for a while.
                kill_group(pid, signal.SIGTERM)
                deadline = time.monotonic() + 0.5
        timeout = None if deadline is None else max(0.0, deadline - time.monotonic())
        if deadline is not None and timeout == 0.0:
            break
        ready, _, _ = select.select(sorted(streams) + [wake_r], [], [], timeout)
        if wake_r in ready:
            os.read(wake_r, 512)
        # Output before control within one wake-up: the runner sends `done` only after we consumed its output.
        for fd in sorted(r for r in ready if r in streams):
            stream, sock = streams[fd]
            try:
                data = sock.recv(1 << 16)
            except OSError:
                data = b""
            if data:
                put(stream, data)
            else:
                del streams[fd]
    if status is None:
        _, status = os.waitpid(pid, 0)
    kill_group(pid, signal.SIGKILL)
    code = os.waitstatus_to_exitcode(status) if hasattr(os, "waitstatus_to_exitcode") else None
    if code is None:
        code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else -os.WTERMSIG(status)
    message({"type": "exit", "code": code if code >= 0 else None, "signal": signal.Signals(-code).name if code < 0 else None})
    os._exit(0)
