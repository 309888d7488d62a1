# A spawn server for the host's local pipe-mode children (shells, probes, installers: actors/process/spawner.ts,
# docs/protocol.md "Spawn server"). A synchronous spawn from Pi's large process blocks its event loop for several
# milliseconds (the fork copies its page tables). This small process starts each child with posix_spawn (a vfork:
# no page tables copied, nothing copied on write), from inside the child's prepared cgroup (it steps in, spawns, and
# steps back out), so the child is born there: no joining shell to exec first, and nothing it ever runs is outside.
# Standard library only, started as
# `python3 -I -S pcs_spawner.py --slots N`: fds 0-2 /dev/null, fd 3 the control channel, then N slots of three
# socket pairs (slot i is fds 4+3i, 5+3i, 6+3i: the child's stdin, stdout and stderr). Single-threaded.
import errno
import json
import os
import select
import signal
import sys

MAX_FRAME = 64 << 20
CTL = 3


def send(frame):
    data = json.dumps(frame, separators=(",", ":")).encode("utf-8")
    data = len(data).to_bytes(4, "big") + data
    while data:
        try:
            data = data[os.write(CTL, data) :]
        except InterruptedError:
            continue


def fatal(message):
    try:
        send({"type": "fatal", "message": message})
    finally:
        os._exit(70)


def enter(cgroup):
    """Moves this process into `cgroup` (a directory; its children are born where it is)."""
    fd = os.open(cgroup + b"/cgroup.procs", os.O_WRONLY | os.O_CLOEXEC)
    try:
        os.write(fd, b"0")
    finally:
        os.close(fd)


def spawn(fds, file, argv, cwd, env, cgroup, home, ignored):
    """The child's start: its working directory, its cgroup (entered here first, so the child is born in it), its own
    session, signals as a fresh process has them, the slot as fds 0-2 (every other fd here is close-on-exec). Returns
    the pid, or (stage, errno) of what failed; nothing runs on a failure."""
    stage = "chdir"
    try:
        os.chdir(cwd)
        if cgroup is not None:
            stage = "cgroup"
            enter(cgroup)
        stage = "exec"
        try:
            return os.posix_spawn(
                file,
                argv,
                env,
                file_actions=[(os.POSIX_SPAWN_DUP2, fd, target) for target, fd in enumerate(fds)],
                setsid=True,
                setsigdef=ignored,
                setsigmask=[],
            )
        finally:
            if cgroup is not None:
                try:
                    enter(home)
                except OSError as e:
                    # Staying in a child's cgroup would make this server one of its members: it cannot go on.
                    fatal("cannot move back to %s (%s)" % (home.decode("utf-8", "replace"), os.strerror(e.errno)))
    except OSError as e:
        return stage, e.errno or 0
    except (ValueError, TypeError):  # an argument the kernel cannot take (a NUL byte): nothing was started
        return stage, errno.EINVAL
    finally:
        os.chdir("/")


def main():
    argv = sys.argv
    slots = int(argv[2]) if len(argv) == 3 and argv[1] == "--slots" and argv[2].isdigit() else 0
    if not 0 < slots <= 256:
        sys.stderr.write("usage: pcs_spawner.py --slots N (started by pi-code-supervisor)\n")
        os._exit(2)
    if sys.version_info < (3, 8) or not hasattr(os, "POSIX_SPAWN_DUP2"):
        sys.stderr.write("pcs_spawner.py: needs Python 3.8 or later with os.posix_spawn\n")
        os._exit(2)
    pool = list(range(4, 4 + 3 * slots))
    for fd in [CTL] + pool:
        try:
            os.fstat(fd)
        except OSError:
            sys.stderr.write("pcs_spawner.py: fd %d (the control channel or a slot) is not open\n" % fd)
            os._exit(2)
        # Close-on-exec: a child keeps only its own slot, as fds 0-2.
        os.set_inheritable(fd, False)
    os.set_blocking(CTL, True)
    # What a fresh process would not have ignored (Python ignores SIGPIPE and SIGXFSZ): restored in each child.
    ignored = [
        s
        for s in signal.valid_signals()
        if s not in (signal.SIGKILL, signal.SIGSTOP) and signal.getsignal(s) == signal.SIG_IGN
    ]
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    send({"type": "ready", "pid": os.getpid(), "slots": slots, "executable": sys.executable})
    free = set(range(slots))
    children = {}  # pid -> the cgroup directory it was born in (or None), until its exit is reported
    buf = b""

    while True:
        try:
            readable = select.select([CTL, wake_r], [], [])[0]
        except InterruptedError:
            readable = [wake_r]
        if wake_r in readable:
            try:
                while os.read(wake_r, 512):
                    pass
            except (BlockingIOError, InterruptedError):
                pass
        while True:  # every child that ended: its status goes to the host
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            children.pop(pid, None)
            code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else None
            sig = os.WTERMSIG(status) if os.WIFSIGNALED(status) else None
            send({"type": "exited", "pid": pid, "code": code, "signal": sig})
        if CTL not in readable:
            continue
        chunk = os.read(CTL, 1 << 16)
        if not chunk:
            # The host is gone without stopping what it started here (it stops them itself when it exits normally):
            # nothing of this server's outlives it.
            for pid, cgroup in children.items():
                if cgroup is not None:
                    try:
                        with open(cgroup + b"/cgroup.kill", "wb") as f:
                            f.write(b"1")
                    except OSError:
                        pass
                try:
                    os.killpg(pid, signal.SIGKILL)
                except OSError:
                    pass
            os._exit(0)
        buf += chunk
        while len(buf) >= 4:
            n = int.from_bytes(buf[:4], "big")
            if n > MAX_FRAME:
                fatal("control frame too large")
            if len(buf) < 4 + n:
                break
            try:
                msg = json.loads(buf[4 : 4 + n].decode("utf-8"))
            except ValueError as e:
                fatal("bad control frame: %s" % e)
            buf = buf[4 + n :]
            if not isinstance(msg, dict) or msg.get("type") != "spawn":
                fatal("unexpected frame for the spawn server: %r" % (msg.get("type") if isinstance(msg, dict) else msg,))
            slot = msg.get("slot")
            if type(slot) is not int or slot not in free:
                fatal("spawn: slot %r is not a free slot" % (slot,))
            try:
                file = msg["file"].encode("utf-8")
                args = [a.encode("utf-8") for a in msg["argv"]]
                cwd = msg["cwd"].encode("utf-8")
                env = {k.encode("utf-8"): v.encode("utf-8") for k, v in msg["env"].items()}
                cgroup = msg["cgroup"].encode("utf-8") if msg.get("cgroup") is not None else None
                home = msg["home"].encode("utf-8") if cgroup is not None else None
            except (KeyError, AttributeError, TypeError) as e:
                fatal("spawn: malformed request (%s)" % e)
            free.discard(slot)
            mine = pool[3 * slot : 3 * slot + 3]
            pid = spawn(mine, file, args, cwd, env, cgroup, home, ignored)
            for fd in mine:  # the child's alone now: its output's end is seen when it (and what it started) closes
                os.close(fd)
            if type(pid) is tuple:
                stage, err = pid
                name = errno.errorcode.get(err, "E%d" % err)
                send({"type": "failed", "slot": slot, "stage": stage, "code": name, "message": os.strerror(err)})
            else:
                children[pid] = cgroup
                send({"type": "started", "slot": slot, "pid": pid})


if __name__ == "__main__":
    main()
