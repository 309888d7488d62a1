"""pi-code-supervisor runner: executes the host's code runs in fresh or session mode.

Started through the bootstrap runtime-py/runner.py, which imports this module so that its bytecode is cached.

The contract with the host (file descriptors, frames, signals, ordering of output and `done`, modes, script
semantics) is docs/protocol.md; read it before changing this file. Standard library only, CPython 3.9-3.13.

This module and every module it loads run with the builtins of runtime-py/pcs_imports.py: its imports come from
the standard library only and stay out of sys.modules, so files in the user's directory named like standard modules
neither break the runner nor are hidden from the user's own imports (docs/protocol.md, "The runner's modules").

Start-up imports only modules that are built in or already loaded, so `ready` comes close to bare interpreter
start; linecache (5-15 ms on 3.9-3.12), traceback, tokenize, pprint and asyncio are imported when first needed.

Past 400 lines, one concept: the runner is one module on purpose. Its bytecode is cached and loaded in one import
at start-up, and every part shares the run's state and the fd, frame and signal contract of docs/protocol.md.
"""

import io
import os
import sys
import _signal
import _thread

pcs_imports = sys.modules["pcs_imports"]  # loaded by the bootstrap, before this module

PROTOCOL = 1
MAX_FRAME = 64 << 20
_SIGINT = _signal.SIGINT
_SIG_IGN = _signal.SIG_IGN
_int_handler = _signal.default_int_handler
_CO_COROUTINE = 0x80
_PyCF_ONLY_AST = 0x400
_PyCF_ALLOW_TOP_LEVEL_AWAIT = 0x2000
_DRAIN_LIMIT = 0.25
_DRAIN_STALL_LIMIT = 30.0
_DRAIN_SPIN = 0.002  # the host is often busy for a millisecond or so before it reads: watch closely that long
_OUT_FDS = []
# input() and every stdin read fail at once with this (pi-python and oh-my-pi say the same: no interactive stdin).
_STDIN_MSG = "interactive input is not supported (code has no stdin); pass data in the code, a file or a tool call"

_RUNNER_FILE = (lambda: None).__code__.co_filename
_RUNNER_MODULE = sys.modules[__name__]  # kept alive: __main__ is handed over to user code
# The bootstrap that imported this module (runtime-py/runner.py): its frames are the runner's own too.
_BOOT_FILE = getattr(sys.modules.get("__main__"), "__file__", None)
_CTL = -1  # control channel fd, set in _setup
_MODE = ""
_wlock = _thread.allocate_lock()
_sources = {}  # filename -> linecache entry, oldest first; tracebacks start in one of these files
# Source text kept for tracebacks, in characters: past it the oldest runs' go (a session's memory stays bounded; a
# traceback through a function defined that long ago shows its file and line without the line's text).
_SOURCES_MAX_CHARS = 32 * 1024 * 1024
_sources_chars = 0
_loop = None  # (asyncio, the event loop), created on the first run that awaits; a session keeps it
_PID = os.getpid()  # a forked child that returns from user code must not speak for us
_MAIN_TID = _thread.get_ident()  # the thread that runs user code: the one an interrupt must reach
_LIMITS = {}  # --limits: resource limits applied before user code (docs/protocol.md, "Resource limits")


# ---------------------------------------------------------------------------------------------------- frames
# The json package costs ~5 ms of imports (re, enum); its C accelerator alone is enough for our flat frames.
try:
    from _json import encode_basestring_ascii as _jstr, make_scanner as _make_scanner

    class _JsonContext:
        strict = True
        object_hook = None
        object_pairs_hook = None
        parse_float = float
        parse_int = int
        parse_constant = float

    _scan = _make_scanner(_JsonContext())

    def _dumps(obj):
        parts = []
        for k, v in obj.items():
            if v is None:
                s = "null"
            elif v is True:
                s = "true"
            elif v is False:
                s = "false"
            elif type(v) is int:
                s = str(v)
            elif type(v) is list:  # of strings, or of lists of strings
                s = "[" + ",".join(_jstr(x) if type(x) is str else "[" + ",".join(map(_jstr, x)) + "]" for x in v) + "]"
            else:
                s = _jstr(v)
            parts.append(_jstr(k) + ":" + s)
        return "{" + ",".join(parts) + "}"

    def _loads(text):
        text = text.strip(" \t\r\n")
        try:
            obj, end = _scan(text, 0)
        except Exception:  # the scanner only knows JSONDecodeError once json.decoder is imported
            raise ValueError("malformed JSON") from None
        if end != len(text):
            raise ValueError("extra data after the JSON value")
        return obj

except ImportError:  # not CPython's usual build

    def _jstr(text):
        import json

        return json.dumps(text)

    def _dumps(obj):
        import json

        return json.dumps(obj)

    def _loads(text):
        import json

        return json.loads(text)


_forked = False  # set in a child forked by os.fork (an at-fork hook, registered in _setup)


def _after_fork():
    global _forked
    _forked = True


def _send(frame, own=False):
    _write_frame(_dumps(frame).encode("ascii"), own)


def _write_frame(data, own=False):
    """Send one frame whose UTF-8 JSON body is `data` (also the writer of nested tool calls).

    A fork of user code must not speak for us. `own`: a frame of the runner's own (`started`, `done`), sent where
    user code can only have forked through os.fork, which the at-fork hook notes: the pid check, a system call, is
    spared. User code's frames (display, tool calls) are checked by pid, whatever made the fork."""
    if _forked if own else os.getpid() != _PID:
        return
    data = len(data).to_bytes(4, "big") + data
    with _wlock:
        try:
            while data:
                data = data[os.write(_CTL, data) :]
        except OSError:  # the host is gone
            _orphaned()


def _orphaned():
    """The host died or closed the channel: take the whole process group down so nothing outlives it."""
    try:
        pid = os.getpid()
        if os.getpgid(0) == pid:  # only when we lead our own group (detached), never the caller's group
            os.killpg(pid, _signal.SIGKILL)
    finally:
        os._exit(1)


def _fatal(message):
    try:
        _send({"type": "fatal", "message": message})
    finally:
        os._exit(70)


_rbuf = bytearray()  # read from the channel, not yet taken (the reader thread's alone)


def _read_exact(n):
    """n bytes of the channel. It is read in chunks of up to 64 KiB, so a frame's length and body (and the frames
    after it) usually come in one system call."""
    buf = _rbuf
    while len(buf) < n:
        try:
            chunk = os.read(_CTL, min(max(n - len(buf), 1 << 16), 1 << 20))
        except InterruptedError:
            continue
        except OSError:
            chunk = b""
        if not chunk:
            _orphaned()
        buf += chunk
    out = bytes(buf[:n])
    del buf[:n]
    return out


_nruns = 0


def _read_frame():
    """One host frame, checked; a run frame is returned, the others are handled here."""
    global _nruns
    n = int.from_bytes(_read_exact(4), "big")
    if n > MAX_FRAME:
        _fatal("frame of %d bytes exceeds the 64 MiB limit" % n)
    try:
        msg = _loads(_read_exact(n).decode("utf-8"))
    except ValueError as e:  # includes UnicodeDecodeError and JSONDecodeError
        _fatal("bad frame: %s" % e)
    kind = msg.get("type") if isinstance(msg, dict) else None
    if kind == "run":
        if not all(isinstance(msg.get(k), str) for k in ("id", "code", "filename")) or not msg["filename"]:
            _fatal("bad run frame: id, code and filename must be strings")
        _nruns += 1
        if _MODE == "fresh" and _nruns > 1:
            _fatal("a fresh runner takes exactly one run")
        if "batch" in msg and _bad_batch(msg["batch"]):
            _fatal("bad run frame: batch must be a list of {code, filename} strings")
        if "tools" in msg and _bad_tools(msg["tools"]):
            _fatal("bad run frame: tools must be a list of {name, python, signature} strings")
        if "tools_id" in msg:
            _tool_set(msg)
        return msg
    elif kind == "tool.result":
        if _pi_tools is not None:
            _pi_tools.deliver(msg)
    elif kind == "signal":
        _signal_frame(msg.get("signal"))
    elif kind == "cell.ack":
        _cell_ack(msg.get("id"))
    elif kind == "shutdown":
        os._exit(0)
    else:
        _fatal("unknown frame type %r" % (kind,))
    return None


def _bad_batch(batch):
    return type(batch) is not list or not all(
        type(c) is dict and type(c.get("code")) is str and type(c.get("filename")) is str and c["filename"]
        for c in batch
    )


# The reader thread owns the control channel for the runner's whole life: it reads every host frame, handling tool
# results, signals and shutdown itself (also while user code holds the main thread), and queues run frames in `_runs`
# for the main thread, which waits on `_have_run` while idle. A run thus costs one hand-over at its start and none at
# its end: the main thread neither takes the channel back nor wakes the reader (docs/performance.md, "The Python
# runner's own time per warm run").
_have_run = _thread.allocate_lock()  # released by the reader after queueing a run frame; held while `_runs` is empty
_runs = []


def _next_run():
    """Main thread, idle: the next run frame, in the order they came."""
    while not _runs:
        _have_run.acquire()
    return _runs.pop(0)


def _reader():
    """Reader thread: reads host frames for the runner's whole life."""
    try:
        while True:
            msg = _read_frame()
            if msg is not None:
                _runs.append(msg)
                try:
                    _have_run.release()
                except RuntimeError:  # already released: the main thread has not taken the previous one yet
                    pass
    except BaseException:
        _fatal("runner reader failed:\n" + _format_own_exc())


# A batch's next cell starts once the host has taken the `cell` frame before it (`cell.ack`): its first output could
# otherwise reach the host in the same read as that frame and be handled first, crediting it to the cell before.
_have_ack = _thread.allocate_lock()  # released by the reader on an ack; taken back by the main thread waiting for one
_have_ack.acquire()
_acked = (None, 0)  # the run whose `cell` frames the host acknowledged last, and how many (the reader's to write)


def _cell_ack(run_id):
    """Reader thread: the host took one of `run_id`'s `cell` frames."""
    global _acked
    last, n = _acked
    _acked = (run_id, n + 1 if last == run_id else 1)
    try:
        _have_ack.release()
    except RuntimeError:  # already released: the main thread has not looked yet
        pass


def _await_ack(run_id, n):
    """Main thread, in the next cell's interruptible phase: wait until the host took the run's n-th `cell` frame."""
    while _acked[0] != run_id or _acked[1] < n:
        _have_ack.acquire()


def _signal_frame(name):
    """A signal sent over the control channel, for backends where the host cannot signal us directly (a sandbox's
    PID namespace, another machine). SIGINT goes to the main thread itself: a process-directed signal could be
    taken by the reader thread and leave a `time.sleep` in the main thread uninterrupted."""
    global _batch_stop
    if name == "SIGINT":
        # Set before the signal lands: a cell that catches this interrupt still ends its batch (the host sends a
        # batched run's interrupts as frames, so the flag is never late).
        _batch_stop = True
        _signal.pthread_kill(_MAIN_TID, _SIGINT)
    elif name in ("SIGTERM", "SIGKILL"):
        sig = _signal.SIGTERM if name == "SIGTERM" else _signal.SIGKILL
        pid = os.getpid()
        try:
            if os.getpgid(0) == pid:  # our own group: what user code started goes too
                os.killpg(pid, sig)
            os.kill(pid, sig)
        except OSError:
            pass
    else:
        _fatal("bad signal frame: %r" % (name,))


def _format_own_exc():
    e = sys.exc_info()[1]
    try:
        import traceback

        return traceback.format_exc()
    except BaseException:
        return "%s: %s (traceback unavailable)" % (type(e).__name__, e)


# ---------------------------------------------------------------------------------------------------- set-up
class _NoStdin:
    """sys.stdin: every read fails at once. fileno() stays 0 (/dev/null) for subprocesses."""

    encoding = "utf-8"
    errors = "strict"
    newlines = None
    closed = False
    name = "<stdin>"
    mode = "r"

    def _eof(self, *args, **kwargs):
        raise EOFError(_STDIN_MSG)

    read = readline = readlines = read1 = readinto = __next__ = _eof

    def __iter__(self):
        return self

    @property
    def buffer(self):
        return self

    def fileno(self):
        return 0

    def isatty(self):
        return False

    def readable(self):
        return True

    def writable(self):
        return False

    def seekable(self):
        return False

    def flush(self):
        pass

    def close(self):
        pass


def _setup(argv):
    global _CTL, _MODE
    limits = _parse_limits(argv[4]) if len(argv) == 5 and argv[3] == "--limits" else None
    if len(argv) not in (3, 5) or argv[1] != "--mode" or argv[2] not in ("fresh", "session") or limits is False:
        sys.stderr.write(
            "usage: runner.py --mode fresh|session [--limits name=n,...] (started by pi-code-supervisor, fd 3 = control)\n"
        )
        os._exit(2)
    _MODE = argv[2]
    os.register_at_fork(after_in_child=_after_fork)
    # An inherited SIGINT disposition is never trusted; SIGTERM must stay able to stop us.
    _signal.signal(_SIGINT, _SIG_IGN)
    _signal.signal(_signal.SIGTERM, _signal.SIG_DFL)
    import fcntl

    try:
        _CTL = fcntl.fcntl(3, fcntl.F_DUPFD_CLOEXEC, 64)
    except OSError:
        sys.stderr.write("runner.py: fd 3 (the control channel) is not open\n")
        os._exit(2)
    os.close(3)
    os.set_blocking(_CTL, True)
    # Private duplicates of fd 1 and 2, so the output drain still works when user code closes or redirects them.
    global _OUT_FDS
    _OUT_FDS = []
    for fd in (1, 2):
        try:
            _OUT_FDS.append(fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 64))
        except OSError:
            pass
    # After the runner's own descriptors exist (an openFiles limit below 64 would refuse them) and before user
    # paths reach sys.path (`resource` must come from the standard library).
    if limits:
        _apply_limits(limits)

    # No userspace buffering beyond a line, so output written before os._exit or a crash reaches the pipe.
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.reconfigure(encoding="utf-8", errors="backslashreplace", line_buffering=True)
        except (AttributeError, ValueError, OSError):
            pass
    sys.stdin = _NoStdin()

    # sys.path[0] is the runner's directory; user code must import from the start directory instead.
    start = os.getcwd()
    if sys.path and sys.path[0] and os.path.realpath(sys.path[0]) == os.path.realpath(os.path.dirname(_RUNNER_FILE)):
        del sys.path[0]
    sys.path.insert(0, start)
    pcs_imports.install()
    if "linecache" not in sys.modules:
        pcs_imports.watch["linecache"] = _give_sources


_LIMIT_NAMES = ("memoryMiB", "cpuSeconds", "processes", "fileSizeMiB", "openFiles")


def _parse_limits(text):
    """`memoryMiB=512,cpuSeconds=10,...` -> dict of positive ints; False when malformed."""
    out = {}
    for part in text.split(","):
        if not part:
            continue
        name, _, value = part.partition("=")
        if name not in _LIMIT_NAMES or not value.isdigit() or int(value) <= 0:
            return False
        out[name] = int(value)
    return out


def _apply_limits(limits):
    """setrlimit before any user code runs; children inherit the limits. CPU time is per run (_cpu_budget)."""
    import resource

    _load_kit()  # see there

    mib = 1 << 20
    table = {
        "memoryMiB": (resource.RLIMIT_AS, lambda n: n * mib),
        "fileSizeMiB": (resource.RLIMIT_FSIZE, lambda n: n * mib),
        "openFiles": (resource.RLIMIT_NOFILE, lambda n: n),
        "processes": (resource.RLIMIT_NPROC, lambda n: n),
    }
    for name, n in limits.items():
        if name in table:
            which, conv = table[name]
            value = conv(n)
            _, hard = resource.getrlimit(which)
            if hard != resource.RLIM_INFINITY and hard < value:
                value = hard
            # A fresh runner's limits are final (hard too); a session keeps its hard limits so later runs can set them.
            resource.setrlimit(which, (value, value if _MODE == "fresh" else hard))
    _LIMITS.update(limits)
    _LIMITS["_resource"] = resource


def _cpu_budget():
    """Before each run: the CPU limit counts from now (a session's earlier runs do not use up this run's time).
    Reaching it sends SIGXCPU, which ends the process (the run's outcome says so)."""
    seconds = _LIMITS.get("cpuSeconds")
    if not seconds:
        return
    resource = _LIMITS["_resource"]
    used = resource.getrusage(resource.RUSAGE_SELF)
    soft = -int(-(used.ru_utime + used.ru_stime) // 1) + seconds  # whole seconds, rounded up
    hard = soft + 1 if _MODE == "fresh" else resource.RLIM_INFINITY
    try:
        resource.setrlimit(resource.RLIMIT_CPU, (soft, hard))
    except (OSError, ValueError):
        pass


def _start_reader():
    _have_run.acquire()
    _thread.start_new_thread(_reader, ())


def _new_main():
    import builtins

    builtins.display = display  # a builtin in every run, as in IPython
    builtins.completion = completion
    # eval's agent(), parallel(), pipeline(), log(), phase() and budget: stand-ins that load runtime-py/pcs_agents.py
    # on first use (loading it at start cost every runner 1.6-3.6 ms; then it puts its own in their place).
    for name in _AGENT_HELPERS:
        setattr(builtins, name, _agents_helper(name))
    builtins.budget = _LazyBudget()
    mod = type(sys)("__main__")
    mod.__dict__["__builtins__"] = builtins
    sys.modules["__main__"] = mod
    return mod.__dict__


# ---------------------------------------------------------------------------------------------------- runs
class _Run:
    __slots__ = ("id", "code", "filename", "g", "stage", "started", "cell", "displayed", "as_value", "value", "errors")

    def __init__(self, msg, g, code, filename, cell=0):
        self.id = msg["id"]
        self.code = code
        self.filename = filename
        self.g = g
        self.stage = None  # "compile" -> "user" (exceptions from there on are the user's)
        self.started = cell > 0  # a batch's later cells: the run has started already
        self.cell = cell  # its place in the batch (0: the run's code), so the `cell` frames acknowledged before it
        self.displayed = False
        # `result: "value"` (notebook cells): the trailing value's repr and the error's text go back in `done`
        # instead of being printed.
        self.as_value = msg.get("result") == "value"
        self.value = None
        self.errors = None


def _interruptible(fn, *args):
    """Run fn(*args) with SIGINT raising KeyboardInterrupt; return the exception that ended it, or None.

    Always returns with SIGINT ignored again. The one KeyboardInterrupt the host may send can land anywhere,
    including in this function, so the handler swap is retried until it sticks and a late interrupt after fn
    completed is dropped (the work is done). At most two exceptions matter: the user's and one interrupt.
    """
    state = [None, False, False]  # exception, called, finished
    while True:
        try:
            try:
                if not state[1]:
                    state[1] = True
                    _signal.signal(_SIGINT, _int_handler)
                    fn(*args)
                    state[2] = True
                _signal.signal(_SIGINT, _SIG_IGN)
                return state[0]
            except BaseException as e:
                if not state[2]:
                    state[0] = e
                    state[2] = True
        except BaseException as e:  # an interrupt inside the handler above
            if state[0] is None:
                state[0] = e
            state[2] = True


def _user_phase(r):
    if r.cell:
        _await_ack(r.id, r.cell)
    if not r.started:  # a batch's first cell only: the run's start and its set-up are the run's, once
        _write_frame(('{"type":"started","id":%s}' % _jstr(r.id)).encode("ascii"), True)  # _send's, without a dict
        r.started = True
        _prepare_run()
    r.stage = "compile"
    body, expr = _compile(r.code, r.filename)
    r.stage = "user"
    if (body.co_flags | (expr.co_flags if expr is not None else 0)) & _CO_COROUTINE:
        # Any top-level await: the whole script runs as one task on the loop, so the body can create tasks
        # (a running loop) that the final expression or a later run awaits.
        value = _run_async(_script(body, expr, r.g))
    else:
        # No await anywhere: no loop is running, so the script may call asyncio.run() itself.
        eval(body, r.g)
        value = eval(expr, r.g) if expr is not None else None
    if value is not None:
        if _rich_type(value) and _load_display().show_value(value):
            r.displayed = True
        elif r.as_value:
            r.value = _bounded(_repr(value))
            r.displayed = True
        else:
            r.displayed = _display(value)


async def _script(body, expr, g):
    result = eval(body, g)
    if body.co_flags & _CO_COROUTINE:
        await result
    if expr is None:
        return None
    value = eval(expr, g)
    if expr.co_flags & _CO_COROUTINE:
        value = await value
    return value


_compiled = {}  # source -> (body, expr): a repeated script (a rerun, a loop of calls) is not parsed again
_COMPILED_MAX = 32
_COMPILED_MAX_CHARS = 64 * 1024


def _refile(code, filename):
    """The same code under another file name (each session run has its own), nested code objects included."""
    consts = tuple(_refile(c, filename) if type(c) is type(code) else c for c in code.co_consts)
    return code.replace(co_filename=filename, co_consts=consts)


def _compile(src, filename):
    """Code for the script, plus code for its last top-level statement when that is a shown expression."""
    hit = _compiled.get(src)
    if hit is not None:
        body, expr = hit
        if body.co_filename != filename:
            body = _refile(body, filename)
            expr = _refile(expr, filename) if expr is not None else None
        return body, expr
    body, expr = _compile_new(src, filename)
    if len(src) <= _COMPILED_MAX_CHARS:
        if len(_compiled) >= _COMPILED_MAX:
            del _compiled[next(iter(_compiled))]
        _compiled[src] = (body, expr)
    return body, expr


def _compile_new(src, filename):
    import _ast

    tree = compile(src, filename, "exec", _PyCF_ONLY_AST | _PyCF_ALLOW_TOP_LEVEL_AWAIT, True)
    body = tree.body
    expr = None
    if body and isinstance(body[-1], _ast.Expr) and not _ends_with_semicolon(src, body):
        expr = compile(_ast.Expression(body.pop().value), filename, "eval", _PyCF_ALLOW_TOP_LEVEL_AWAIT, True)
    return compile(tree, filename, "exec", _PyCF_ALLOW_TOP_LEVEL_AWAIT, True), expr


def _source_lines(src):
    return io.StringIO(src, newline=None).readlines()  # split like the tokenizer: \n, \r\n and \r


def _ends_with_semicolon(src, body):
    """True when the last significant token is `;` (comments and strings don't count)."""
    # Tokenize only from the line where the chain of statements sharing the last one's line starts:
    # such a line begins outside any string or bracket.
    i = len(body) - 1
    while i > 0 and body[i - 1].end_lineno >= body[i].lineno:
        i -= 1
    tail = "".join(_source_lines(src)[body[i].lineno - 1 :])
    if ";" not in tail:
        return False
    import tokenize

    skip = (tokenize.NEWLINE, tokenize.NL, tokenize.COMMENT, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER)
    for text in (tail, src):
        try:
            last = None
            for tok in tokenize.generate_tokens(io.StringIO(text).readline):
                if tok.type not in skip:
                    last = tok
            return last is not None and last.type == tokenize.OP and last.string == ";"
        except Exception:  # tokenize may reject what the compiler accepted; then try the whole source
            continue
    return False


def _run_async(coro):
    global _loop
    try:
        if _loop is None:
            import asyncio

            _loop = (asyncio, asyncio.new_event_loop())
        asyncio, loop = _loop  # the asyncio that made the loop, even if the session has loaded another copy since
        asyncio.set_event_loop(loop)  # so sync code can reach it via get_event_loop()
        task = loop.create_task(coro)
    except BaseException:  # interrupted before the script became a task (loading asyncio): no "never awaited"
        coro.close()
        raise
    try:
        return loop.run_until_complete(task)
    except KeyboardInterrupt:
        if not task.done():
            # Interrupted in the loop or in another task: cancel the user's task so its cleanup runs.
            # A cleanup that hangs is the host's to escalate (SIGTERM, SIGKILL).
            task.cancel()
            try:
                loop.run_until_complete(task)
            except BaseException:
                pass
        raise


_PLAIN_REPR = (dict, list, tuple, set, frozenset, int, float, complex, bool, bytes)


def _display_text(value):
    if isinstance(value, str):
        return value
    # pformat gives exactly repr() for a builtin value whose repr fits the width and is not recursive
    # ("..." marks recursion); skip importing pprint (10+ ms: dataclasses, inspect) for those.
    if type(value) in _PLAIN_REPR and (not hasattr(value, "__len__") or len(value) <= 60):
        text = repr(value)
        if len(text) <= 120 and "..." not in text:
            return text
    import pprint

    return pprint.pformat(value, width=120, sort_dicts=False)


def _display(value):
    text = _display_text(value)
    if not text:
        return False
    sys.stdout.write(text if text.endswith("\n") else text + "\n")
    return True


_MAX_TEXT = 256 << 10  # characters of a cell's value or error text sent back in `done`


def _repr(value):
    try:
        return repr(value)
    except Exception as e:  # a broken __repr__ must not fail the cell that computed the value
        return "<%s object (repr failed: %s: %s)>" % (type(value).__name__, type(e).__name__, e)


def _bounded(text):
    if len(text) <= _MAX_TEXT:
        return text
    half = _MAX_TEXT // 2
    return "%s\n[... %d characters omitted ...]\n%s" % (text[:half], len(text) - 2 * half, text[-half:])


_last_lines = (None, None)  # (source, its lines) of the last run: a script sent again is not split again


def _remember_source(filename, src):
    global _last_lines, _sources_chars
    if _last_lines[0] == src:
        lines = _last_lines[1]  # shared by the entries: linecache only reads them
    else:
        lines = _source_lines(src)
        if lines and not lines[-1].endswith("\n"):
            lines[-1] += "\n"
        _last_lines = (src, lines)
    old = _sources.pop(filename, None)
    if old is not None:
        _sources_chars -= old[0]
    entry = _sources[filename] = (len(src), None, lines, filename)  # mtime None: checkcache never drops it
    _sources_chars += len(src)
    # The session's linecache (else _give_sources hands them over when it is imported) and the runner's own.
    caches = []
    for linecache in (sys.modules.get("linecache"), pcs_imports.own.get("linecache")):
        cache = _linecache_dict(linecache)
        if cache is not None:
            cache[filename] = entry
            caches.append(cache)
    while _sources_chars > _SOURCES_MAX_CHARS and len(_sources) > 1:
        name = next(iter(_sources))
        gone = _sources.pop(name)
        _sources_chars -= gone[0]
        for cache in caches:
            if cache.get(name) is gone:
                del cache[name]


def _linecache_dict(linecache):
    """The cache dict of a linecache module; None for anything else (a user's linecache.py, None)."""
    cache = getattr(linecache, "__dict__", {}).get("cache") if isinstance(linecache, type(sys)) else None
    return cache if type(cache) is dict else None


def _give_sources(linecache):
    """The session's linecache was just imported (by a traceback, warnings, inspect, ...): it gets the sources of the
    runs so far. Importing it eagerly would cost every run 5-15 ms."""
    cache = _linecache_dict(linecache)
    if cache is not None:
        cache.update(_sources)


def _user_tb(tb):
    """The user's part of a traceback: from the first frame of a run's code on, without runner frames."""
    entries = []
    while tb is not None:
        entries.append(tb)
        tb = tb.tb_next
    for i, t in enumerate(entries):
        if t.tb_frame.f_code.co_filename in _sources:
            break
    else:
        return None
    keep = [t for t in entries[i:] if t.tb_frame.f_code.co_filename not in _OWN_FILES]
    if len(keep) == len(entries) - i:
        return entries[i]
    new = None
    for t in reversed(keep):
        new = type(t)(new, t.tb_frame, t.tb_lasti, t.tb_lineno)
    return new


def _strip_runner_frames(exc):
    seen = set()
    todo = [exc]
    while todo:
        e = todo.pop()
        if e is None or id(e) in seen:
            continue
        seen.add(id(e))
        e.__traceback__ = _user_tb(e.__traceback__)
        todo.append(e.__cause__)
        todo.append(e.__context__)


_err_sink = None  # a list collecting a notebook cell's error text instead of stderr (see _Run.as_value)


class _Sink:
    """A file-like target for traceback.print_exception that appends to _err_sink."""

    def write(self, text):
        _err_sink.append(text)
        return len(text)

    def flush(self):
        pass


def _stderr():
    if _err_sink is not None:
        return _Sink()
    return sys.stderr or sys.__stderr__


def _print_exception(e):
    import linecache
    import traceback

    for filename, entry in _sources.items():  # user code may have cleared the cache
        linecache.cache.setdefault(filename, entry)
    _strip_runner_frames(e)
    sys.last_type, sys.last_value, sys.last_traceback = type(e), e, e.__traceback__  # for pdb.pm()
    if sys.version_info >= (3, 12):
        sys.last_exc = e
    try:
        if sys.excepthook is not sys.__excepthook__ and _err_sink is None:  # a session may install its own
            sys.excepthook(type(e), e, e.__traceback__)
        else:
            # One write, not one per line: the host wakes once for the whole traceback (an interrupt's result waits
            # for it). A traceback that cannot be formatted is printed as far as it goes, as print_exception does.
            try:
                text = "".join(traceback.format_exception(type(e), e, e.__traceback__))
            except Exception:
                text = None
            if text is None:
                traceback.print_exception(type(e), e, e.__traceback__, file=_stderr())
            else:
                _stderr().write(text)
    except Exception:
        _write_err("%s: <exception could not be printed>\n" % type(e).__name__)


def _write_err(text):
    try:
        _stderr().write(text)
    except Exception:
        pass


def _report(r, exc):
    """Print the outcome of a run; return (error, exitCode)."""
    if exc is None:
        return None, 0
    if isinstance(exc, KeyboardInterrupt):
        _print_exception(exc)
        return "interrupt", 130
    if isinstance(exc, SystemExit):
        code = exc.code
        if code is None:
            n = 0
        elif isinstance(code, int):
            n = int(code)
        else:
            _write_err("%s\n" % (code,))
            n = 1
        if not -(2**31) <= n < 2**31:
            n &= 0xFF
        return "exit", n
    if r.stage == "compile":
        import traceback

        try:
            _write_err("".join(traceback.format_exception_only(type(exc), exc)))
        except Exception:
            _write_err("%s: <exception could not be printed>\n" % type(exc).__name__)
        return "syntax", 1
    if r.stage == "user":
        _print_exception(exc)
        return "exception", 1
    raise RuntimeError("runner failed before user code ran") from exc


def _shutdown_interpreter():
    """What Py_Finalize does before tearing down: join non-daemon threads, then run atexit handlers."""
    threading = pcs_imports.loaded("threading")  # the session's, else the runner's own (asyncio's)
    if threading is not None:
        # 3.13 reports an interrupted join as unraisable and goes on; we want it to end the wait.
        swallowed = []
        hook = sys.unraisablehook

        def catch_interrupt(u):
            if isinstance(u.exc_value, KeyboardInterrupt):
                swallowed.append(u.exc_value)
            else:
                hook(u)

        sys.unraisablehook = catch_interrupt
        try:
            threading._shutdown()
        finally:
            sys.unraisablehook = hook
        if swallowed:
            raise swallowed[0]
    import atexit

    try:
        atexit._run_exitfuncs()
    except Exception:  # 3.9 re-raises the last handler error after printing it
        pass


def _flush_std():
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        try:
            if stream is not None:
                stream.flush()
        except Exception:
            pass


# What the drain and _restore_std_fds need, loaded once by _load_kit (a lazy import goes through the runner's
# __import__, some microseconds each, and an fstat is a system call: both used to be paid on every run).
_ioctl = None  # fcntl.ioctl
_monotonic = _sleep = None
_drain_req = {}  # fd -> the ioctl request that measures what the host has not read of it yet
_std_poll = None  # a poll object on fds 0-2 asking for no events: it reports only POLLNVAL (closed) and the like
_POLLNVAL = 0


def _load_kit():
    """Also called by _apply_limits, so that a run that used up its descriptors or memory does not make the drain
    fail (its output would then arrive after `done` and be lost)."""
    global _ioctl, _monotonic, _sleep, _std_poll, _POLLNVAL
    if _ioctl is not None:
        return
    import fcntl
    import select
    import stat
    import time

    try:
        import termios
    except ImportError:
        termios = None
    # The drained fds are the runner's own (private duplicates of fd 1/2, the control channel): their kinds are
    # fixed for its life, so each is looked up once.
    for fd in _OUT_FDS + [_CTL]:
        try:
            mode = os.fstat(fd).st_mode
        except OSError:
            continue
        req = getattr(termios, "TIOCOUTQ" if stat.S_ISSOCK(mode) else "FIONREAD" if stat.S_ISFIFO(mode) else "", None)
        if req is not None:
            _drain_req[fd] = req
    poll = select.poll()
    for fd in (0, 1, 2):
        poll.register(fd, 0)
    _std_poll, _POLLNVAL, _monotonic, _sleep = poll, select.POLLNVAL, time.monotonic, time.sleep
    _ioctl = fcntl.ioctl


def _drain(fds=None):
    """Wait (bounded) until the host has read every byte of fd 1 and fd 2 (or of `fds`)."""
    if _ioctl is None:
        _load_kit()
    checks = [(fd, _drain_req[fd]) for fd in (_OUT_FDS if fds is None else fds) if fd in _drain_req]
    start = None
    last = {}
    growth = 0  # how often a queue grew: a writer still at work (one growth can be the kernel's accounting)
    while checks:
        pending = []
        for fd, req in checks:
            try:
                n = int.from_bytes(_ioctl(fd, req, b"\0\0\0\0"), sys.byteorder)
            except OSError:
                continue
            if n:
                pending.append((fd, req))
                if n > last.get(fd, n):
                    growth += 1
                last[fd] = n
        checks = pending
        if not checks:
            return
        now = _monotonic()
        if start is None:
            # Two ways to wait too long: a writer that keeps adding to the queue (a subprocess still printing: give
            # up after _DRAIN_LIMIT) and a host that is merely slow to read (the queue only shrinks or stands still:
            # keep waiting, up to _DRAIN_STALL_LIMIT, since giving up then would hand this run's output to the next).
            start = now
            churn_deadline = start + _DRAIN_LIMIT
            stall_deadline = start + _DRAIN_STALL_LIMIT
        if now >= stall_deadline or (growth >= 3 and now >= churn_deadline):
            return
        pause = _drain_pause(now - start)
        if pause is None:
            os.sched_yield()
        else:
            _sleep(pause)


def _drain_pause(waited):
    """How the drain waits after `waited` seconds: None to yield the CPU and look again (the host reads within tens of
    microseconds once it gets to it, often after a millisecond of its own work), then sleeps of a tenth of the wait
    so far (0.2-2 ms): a host that reads late is noticed at most 10% (at most 2 ms) after it read."""
    if waited < _DRAIN_SPIN:
        return None
    return min(0.002, waited / 10)


def _restore_std_fds():
    """A previous run may have closed fd 0-2: reopen them so this run's output still reaches the host. One poll() tells
    which are closed (POLLNVAL), instead of an fstat per fd."""
    if _std_poll is None:
        _load_kit()
    closed = [fd for fd, ev in _std_poll.poll(0) if ev & _POLLNVAL]
    for fd in closed:
        if fd == 0:
            null = os.open(os.devnull, os.O_RDONLY)
            if null != 0:
                os.dup2(null, 0, inheritable=True)
                os.close(null)
        else:
            dup = _OUT_FDS[fd - 1] if len(_OUT_FDS) >= fd else None
            if dup is not None:
                os.dup2(dup, fd, inheritable=True)


_batch_stop = False  # an interrupt came during this run: a batch runs no further cell (set by _signal_frame)


def _execute(msg, g):
    """One run: its code, then each cell of its `batch` while the cells before succeeded (docs/protocol.md,
    "Notebook cells"). Every cell but the last one run ends with a `cell` frame, the last with `done`."""
    global _current, _active_run, _batch_stop
    _current = msg
    _active_run = msg["id"]
    _batch_stop = False
    cells = msg.get("batch") or ()
    _restore_std_fds()
    _cpu_budget()
    # A session drops its earlier tools when a run brings none.
    tooled = "tools" in msg or "tools_id" in msg or _tools_seen
    if tooled:
        _tools_begin(msg["id"], msg.get("tools") or [], g)
    r = _Run(msg, g, msg["code"], msg["filename"])
    for i in range(len(cells) + 1):
        if i:
            if tooled:  # each cell finds the tools and helpers as a run of its own would
                _tools_begin(msg["id"], msg.get("tools") or [], g)
            r = _Run(msg, g, cells[i - 1]["code"], cells[i - 1]["filename"], i)
        error, code, more = _execute_cell(r, g, i == len(cells))
        if i == len(cells) or error is not None or _batch_stop:
            break
        _flush_std()
        _drain()
        _write_frame(_outcome_frame("cell", r, code, error, more).encode("ascii"), True)
    _tools_end(r.id)
    _flush_std()
    _drain()
    _active_run = None
    more.update(_run_extras())
    # What _send(done) would write, with the fields every `done` has put in place at once.
    _write_frame(_outcome_frame("done", r, code, error, more).encode("ascii"), True)
    return code


def _outcome_frame(kind, r, code, error, more):
    return '{"type":"%s","id":%s,"exitCode":%d,"displayedValue":%s,"error":%s%s}' % (
        kind,
        _jstr(r.id),
        code,
        "true" if r.displayed else "false",
        "null" if error is None else _jstr(error),
        "," + _dumps(more)[1:-1] if more else "",
    )


def _execute_cell(r, g, last):
    """Run one cell's code; return (error, exitCode, its value and error text for the outcome frame)."""
    global _err_sink
    sys.argv = [r.filename]
    _remember_source(r.filename, r.code)
    exc = _interruptible(_user_phase, r)
    if os.getpid() != _PID:  # user code forked and the child ran off the end of the script: exit like Python
        code = _report(r, exc)[1]
        _flush_std()
        os._exit(code & 0xFF)
    if not r.started:  # interrupted before `started` went out (a host that signals early)
        _send({"type": "started", "id": r.id}, True)
    elif not isinstance(exc, KeyboardInterrupt) and _open_figures():
        # matplotlib figures left open are shown and closed, as notebooks' inline backends do.
        late = _interruptible(_show_figures)
        if late is not None:
            _write_err("[open matplotlib figures could not be shown: %s: %s]\n" % (type(late).__name__, late))
    if r.as_value and exc is not None:
        _err_sink = []
        try:
            error, code = _report(r, exc)
        finally:
            r.errors, _err_sink = _bounded("".join(_err_sink)), None
    else:
        error, code = _report(r, exc)
    if _MODE == "fresh" and (last or error is not None or _batch_stop):
        _flush_std()
        late = _interruptible(_shutdown_interpreter)
        if isinstance(late, KeyboardInterrupt):
            _print_exception(late)
            error, code = "interrupt", 130
        elif late is not None:  # like Py_Finalize: report and go on, the run's outcome stands
            import traceback

            _write_err("Exception ignored in interpreter shutdown:\n")
            _write_err("".join(traceback.format_exception(type(late), late, late.__traceback__)))
    more = {}
    if r.value is not None:
        more["value"] = r.value
    if r.errors:
        more["exception"] = r.errors
    return error, code, more


# ---------------------------------------------------------------------------------------------------- rich display
# display() is a builtin in every run (docs/protocol.md, "Rich display"); runtime-py/pcs_display.py does the work and
# is loaded on first use: a run that displays nothing never compiles it.
_active_run = None  # the id of the run executing now (display frames belong to it)
_display_mod = None
_RICH = ("_repr_mimebundle_", "_repr_png_", "_repr_jpeg_", "_repr_svg_", "_repr_markdown_", "_repr_html_", "_repr_json_")


def _load_sibling(filename, name):
    """One of the runner's own modules, loaded on first use outside sys.modules; its imports are the runner's too."""
    import _frozen_importlib as bootstrap
    import _frozen_importlib_external as external

    path = os.path.join(os.path.dirname(_RUNNER_FILE), filename)
    loader = external.SourceFileLoader(name, path)
    mod = bootstrap.module_from_spec(bootstrap.spec_from_loader(name, loader))
    mod.__dict__["__builtins__"] = pcs_imports.BUILTINS
    _OWN_FILES.add(mod.__file__)
    loader.exec_module(mod)
    return mod


def _load_display():
    global _display_mod
    if _display_mod is None:
        mod = _load_sibling("pcs_display.py", "_pcs_display")
        mod.attach(_send_landed, lambda: _active_run, _sync_output)
        _display_mod = mod
    return _display_mod


_AGENT_HELPERS = ("agent", "parallel", "pipeline", "log", "phase")
_agents_mod = None


def _load_agents():
    global _agents_mod
    if _agents_mod is None:
        import builtins

        mod = _load_sibling("pcs_agents.py", "_pcs_agents")
        mod.install(builtins, lambda: _tools_run, _load_pi_tools, _load_display)
        _agents_mod = mod
    return _agents_mod


def _agents_helper(name):
    def helper(*args, **kwargs):
        return getattr(_load_agents(), name)(*args, **kwargs)

    helper.__name__ = helper.__qualname__ = name
    helper.__doc__ = "eval's %s() (docs/eval.md), loaded on first use." % name
    return helper


class _LazyBudget:
    """eval's `budget` (docs/eval.md), loaded on first use."""

    __slots__ = ()

    def __getattr__(self, name):
        return getattr(_load_agents().budget, name)

    def __repr__(self):
        return repr(_load_agents().budget)


def _send_landed(frame):
    """A display frame, read by the host before this returns. The host reads stdout, stderr and this channel in no
    fixed order, so output written right after a frame could otherwise be read (and shown) before it."""
    _send(frame)
    _drain((_CTL,))


def _sync_output():
    """Everything the run wrote so far reaches the host before a display frame, which then lands in its place."""
    _flush_std()
    _drain()


def display(*objs, **kwargs):
    """Show objects by their richest representation: images (_repr_png_, _repr_jpeg_, _repr_svg_, matplotlib figures),
    markdown, HTML, JSON (_repr_json_, dicts, lists), else text. IPython's display() protocol."""
    _load_display().display(*objs, **kwargs)


def completion(prompt, *, model="default", system=None, schema=None):
    """One stateless model call through Pi's model registry: no history, no tools. `model`: "default" (the session's
    current model), "smol" or "slow" (settings `completionModels`), or "provider/model". With `schema` (a JSON Schema
    dict) the model must answer through a `respond` tool and the parsed object is returned; else the text. Callable
    and awaitable. Errors (no model, no API key, aborted, empty answer) raise RuntimeError."""
    return _load_pi_tools().completion(_tools_run, prompt, model=model, system=system, schema=schema)


def _rich_type(value):
    t = type(value)
    return any(hasattr(t, name) for name in _RICH) or str(getattr(t, "__module__", "")).startswith("matplotlib.")


def _open_figures():
    plt = sys.modules.get("matplotlib.pyplot")
    try:
        return plt is not None and bool(plt.get_fignums())
    except Exception:
        return False


def _show_figures():
    _load_display().show_figures()


# ---------------------------------------------------------------------------------------------------- packages, reloads
# Optional run-frame fields (docs/protocol.md, "Packages and local modules"): `sysPath` (package directories to put
# on sys.path), `checkLoaded` (installed top-level modules: report those already imported), `reload` (local modules
# whose files changed). `done` then carries `reloaded`, `alreadyLoaded` and, in session mode, `modules`.
_current = {}  # the run frame being executed
_extras = {}  # what _prepare_run found, for the run's `done`
_seen_modules = {"pcs_runner", "pcs_imports"}  # module names already considered for `modules` (not the runner's own)


def _prepare_run():
    """After `started`, before the user's code compiles: output and interrupts belong to the run."""
    global _extras
    _extras = {}
    msg = _current
    try:
        where = msg.get("chdir")
        if type(where) is str and where:
            # A remote backend names a directory under the remote login directory as `~/...`.
            where = os.path.expanduser(where)
            # Notebook calls run in a directory of their own: there, and first on sys.path (where it stays).
            try:
                os.chdir(where)
                if where not in sys.path:
                    sys.path.insert(0, where)
            except OSError as e:
                _write_err("[cannot change to %s: %s; the cell runs in %s]\n" % (where, e.strerror, os.getcwd()))
        paths = msg.get("sysPath")
        if paths:
            added = [p for p in paths if type(p) is str and p not in sys.path]
            if added:
                sys.path[1:1] = added  # after the start directory: local modules still win
                # Stale finders for these directories (had they been on sys.path before) go. Not
                # importlib.invalidate_caches(): 3.13's imports importlib.metadata by name, in the session's world.
                for p in added:
                    sys.path_importer_cache.pop(p, None)
        check = msg.get("checkLoaded")
        if check:
            loaded = [m for m in check if type(m) is str and m in sys.modules]
            if loaded:
                _extras["alreadyLoaded"] = loaded
        names = msg.get("reload")
        if names:
            _extras["reloaded"] = _reload([n for n in names if type(n) is str])
    except Exception:
        _write_err("[pi-code-supervisor: preparing the run failed]\n" + _format_own_exc())


def _drop_bytecode(path):
    """Removes a module's cached bytecode. A .pyc is validated by the source's mtime in whole seconds and its size,
    so an edit within the same second that keeps the size would otherwise reload the stale code."""
    if type(path) is not str or not path.endswith(".py"):
        return
    try:
        import importlib.util

        os.unlink(importlib.util.cache_from_source(path))
    except (OSError, ValueError, NotImplementedError):
        pass


def _reload(names):
    import importlib

    done = []
    for name in names:
        mod = sys.modules.get(name)
        if mod is None:
            continue
        try:
            _drop_bytecode(getattr(mod, "__file__", None))
            importlib.reload(mod)
            done.append(name)
        except Exception as e:  # a KeyboardInterrupt or SystemExit ends the run like the user's own code
            _write_err("[module %s changed on disk but could not be reloaded (%s: %s); the old version stays]\n" % (name, type(e).__name__, e))
    return done


_modules_mark = None  # (len(sys.modules), its last name) when _new_module_names last looked


def _new_module_names():
    """Names in sys.modules not seen by an earlier run. A dict keeps insertion order, so a name added since the last
    look comes after the name that was last then: while the count and the last name stand, nothing was added (short
    of that very name being removed and added back after a new one, with as many others removed as added). That
    saves a walk over every module (1000+ in a scientific session) on each run that imported nothing."""
    global _modules_mark
    modules = sys.modules
    mark = (len(modules), next(reversed(modules), None))
    if mark == _modules_mark:
        return ()
    new = set(list(modules)) - _seen_modules
    _seen_modules.update(new)
    _modules_mark = mark
    return new


def _run_extras():
    """Fields for `done`: what _prepare_run found, and the modules imported from files since the last run."""
    out = {k: v for k, v in _extras.items() if v}
    if _MODE == "session":
        try:
            new = _new_module_names()
            skip = os.path.dirname(os.__file__) + os.sep if new else ""  # the standard library
            found = []
            for name in new:
                f = getattr(sys.modules.get(name), "__file__", None)
                if type(f) is str and f.endswith(".py") and not f.startswith(skip) and "-packages" not in f:
                    try:  # the host compares it once its watch is set up, so an edit made meanwhile is not missed
                        found.append([name, f, str(os.stat(f).st_mtime_ns)])
                    except OSError:
                        pass
            if found:
                out["modules"] = found
        except Exception:
            pass
    return out


# ---------------------------------------------------------------------------------------------------- nested tool calls
# A run frame's `tools` become async functions in the user's globals (docs/protocol.md, "Nested tool calls"). Installing
# them is cheap and stays here; calls and results live in runtime-py/pi_tools.py, loaded by the first call (so a run
# that never calls a tool never compiles it). Frames of both files are runner frames in user tracebacks.
_pi_tools = None
_OWN_FILES = {_RUNNER_FILE, pcs_imports.__file__} | ({_BOOT_FILE} if _BOOT_FILE else set())
_TOOLS_HELPER = "available_tools"
_tools_run = None  # the run whose code may call tools now (None between runs)
_tool_signatures = []
_tools_installed = set()  # names _tools_begin bound in the user's globals
_tools_seen = False  # some run had tools: later runs refresh them


def _load_pi_tools():
    global _pi_tools
    if _pi_tools is None:
        mod = _load_sibling("pi_tools.py", "_pcs_pi_tools")
        mod.attach(_write_frame, _PID)
        _pi_tools = mod
    return _pi_tools


class _ToolList(list):
    """available_tools(): one signature per tool, shown one per line."""

    def __repr__(self):
        return "\n".join(self) if self else "no agent tools are exposed"

    __str__ = __repr__


def available_tools():
    """The agent tools this run's code can await, one signature each (required parameters first)."""
    return _ToolList(_tool_signatures)


available_tools.__pcs_tool__ = ""


def _is_tool(value):
    return type(value) is type(available_tools) and getattr(value, "__pcs_tool__", None) is not None


def _tool_function(spec):
    name, python, signature = spec["name"], spec["python"], spec["signature"]

    async def tool(*args, **kwargs):
        if args:
            given = "%d positional given" % len(args)
            raise TypeError("%s() takes keyword arguments only (%s); call it as %s" % (python, given, signature))
        return await _load_pi_tools().call(_tools_run, name, python, kwargs)

    tool.__name__ = tool.__qualname__ = python
    tool.__module__ = "__main__"
    doc = spec.get("description")
    tool.__doc__ = signature + ("\n\n" + doc if isinstance(doc, str) and doc else "")
    tool.__pcs_tool__ = name
    return tool


def _tools_begin(run_id, tools, g):
    """Install this run's tools; remove earlier ones no longer exposed. A name the user bound is left alone."""
    global _tools_run, _tool_signatures, _tools_installed, _tools_seen
    _tools_seen = True
    # Reserved names (`__completion__`) are the helpers' own calls: callable as nested calls, never a global.
    wanted = {t["python"]: t for t in tools if not t["name"].startswith("__")}
    prelude = _prelude_for(tools, wanted, g)
    for key in _tools_installed:
        if key not in wanted and _is_tool(g.get(key)):
            del g[key]  # other references to it stay usable (the host refuses tools no longer exposed)
    installed = set()
    signatures = []
    for python, spec in wanted.items():
        if python in g and not _is_tool(g[python]):
            signatures.append(spec["signature"] + "  # shadowed: %s is bound to another value here" % python)
            continue
        g[python] = _tool_function(spec)
        installed.add(python)
        signatures.append(spec["signature"])
    if _TOOLS_HELPER not in g or _is_tool(g[_TOOLS_HELPER]):
        g[_TOOLS_HELPER] = available_tools
    signatures += _prelude_begin(prelude, tools, g)
    _tool_signatures = signatures
    _tools_installed = installed
    _tools_run = run_id


_tool_sets = {}  # tools_id -> tools: a run frame repeats a set's id, not its specs (docs/protocol.md)


def _tool_set(msg):
    """A run frame's tool set: its specs arrive with its id once; later frames name the id alone."""
    key = msg["tools_id"]
    if not isinstance(key, str):
        _fatal("bad run frame: tools_id must be a string")
    if "tools" in msg:
        _tool_sets.clear()  # one set is current; the host sends the specs again when it changes back
        _tool_sets[key] = msg["tools"]
    elif key in _tool_sets:
        msg["tools"] = _tool_sets[key]
    else:
        _fatal("bad run frame: tools_id %r names no tool set this runner received" % key)


# eval's prelude (runtime-py/pcs_prelude.py): a run whose tools carry the reserved `__eval__` entry gets read, write,
# env, output and `tool.<name>(...)`; bridged tools of those names are reachable through `tool.` only in that run.
_PRELUDE = "__eval__"
_prelude_mod = None


def _prelude_for(tools, wanted, g):
    """The prelude's entry, if this run has one (its names are then not bridged tools); else the helpers leave."""
    spec = next((t for t in tools if t["name"] == _PRELUDE), None)
    if spec is not None:
        for name in _load_prelude().NAMES:
            wanted.pop(name, None)
    elif _prelude_mod is not None:
        _prelude_mod.uninstall(g)
    return spec


def _load_prelude():
    global _prelude_mod
    if _prelude_mod is None:
        _prelude_mod = _load_sibling("pcs_prelude.py", "_pcs_prelude")
    return _prelude_mod


def _prelude_call(name, python, kwargs):
    return _load_pi_tools().call_result_sync(_tools_run, name, python, kwargs)


def _prelude_begin(spec, tools, g):
    """Signature lines for available_tools(): the helpers that took a bridged tool's name say how to reach it."""
    if spec is None:
        return []
    names = [t["name"] for t in tools if not t["name"].startswith("__")]
    taken = _load_prelude().install(g, spec, _prelude_call, names)
    notes = ["tool.%s(...)  # `%s` is eval's helper in this cell" % (n, n) for n in names if n in _prelude_mod.NAMES]
    return notes + ["%s  # shadowed: bound to another value here" % n for n in taken]


def _tools_end(run_id):
    """The run is over: no more calls for it; those still waiting fail."""
    global _tools_run
    _tools_run = None
    if _pi_tools is not None:
        _pi_tools.end(run_id)


def _bad_tools(tools):
    if not isinstance(tools, list):
        return True
    for t in tools:
        if not isinstance(t, dict) or not all(isinstance(t.get(k), str) for k in ("name", "python", "signature")):
            return True
        if not t["python"].isidentifier():
            return True
    return False


# ---------------------------------------------------------------------------------------------------- fork server
def _zygote():
    """`--mode zygote --slots N`: a fork server for fresh runs (docs/protocol.md, "Fork server"). Started like a fresh
    runner, with N slots of three descriptors each after the control channel (fds 4, 5, 6 the first), it loads what
    a fresh runner's start-up needs once, then forks a fresh runner per `fork` frame and reports each child's exit.
    Returns only in a forked child, whose fds 1, 2 and 3 are then its slot's, as a spawned runner's are."""
    global _CTL, _PID
    import fcntl
    import select
    import termios  # the child's drain, setup and first run need these; loaded here once for every child
    import stat
    import time
    import _ast

    del termios, stat, time, _ast
    argv = sys.argv
    slots = int(argv[4]) if len(argv) >= 5 and argv[3] == "--slots" and argv[4].isdigit() else 0
    rest = argv[5:]
    if not 0 < slots <= 256 or (rest and (len(rest) != 2 or rest[0] != "--limits" or _parse_limits(rest[1]) is False)):
        sys.stderr.write(
            "usage: runner.py --mode zygote --slots N [--limits name=n,...] (started by pi-code-supervisor)\n"
        )
        os._exit(2)
    pool = list(range(4, 4 + 3 * slots))
    for fd in [3] + pool:
        try:
            os.fstat(fd)
        except OSError:
            sys.stderr.write("runner.py: fd %d (a fork server's channel or slot) is not open\n" % fd)
            os._exit(2)
    _signal.signal(_SIGINT, _SIG_IGN)
    _signal.signal(_signal.SIGTERM, _signal.SIG_DFL)
    _CTL = fcntl.fcntl(3, fcntl.F_DUPFD_CLOEXEC, 64)
    os.close(3)
    os.set_blocking(_CTL, True)
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    _signal.signal(_signal.SIGCHLD, lambda *_: None)
    _signal.set_wakeup_fd(wake_w)
    v = sys.version_info
    _send({"type": "ready", "protocol": PROTOCOL, "pid": os.getpid(), "python": "%d.%d.%d" % v[:3], "mode": "zygote"})
    free = set(range(slots))
    start_dir = os.getcwd()
    buf = b""
    while True:
        try:
            readable = select.select([_CTL, wake_r], [], [])[0]
        except InterruptedError:
            readable = [wake_r]
        if wake_r in readable:
            try:
                while os.read(wake_r, 512):
                    pass
            except (BlockingIOError, InterruptedError):
                pass
        while True:  # every child that ended: its status goes to the host, which owns its run
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else None
            sig = os.WTERMSIG(status) if os.WIFSIGNALED(status) else None
            _send({"type": "exited", "pid": pid, "code": code, "signal": sig})
        if _CTL not in readable:
            continue
        chunk = os.read(_CTL, 1 << 16)
        if not chunk:  # the host is gone: its runners see their own channels close
            os._exit(0)
        buf += chunk
        while len(buf) >= 4:
            n = int.from_bytes(buf[:4], "big")
            if n > MAX_FRAME:
                _fatal("control frame too large")
            if len(buf) < 4 + n:
                break
            try:
                msg = _loads(buf[4 : 4 + n].decode("utf-8"))
            except ValueError as e:
                _fatal("bad control frame: %s" % e)
            buf = buf[4 + n :]
            slot = msg.get("slot")
            if msg.get("type") != "fork":
                _fatal("unexpected frame for the fork server: %r" % (msg.get("type"),))
            if type(slot) is not int or slot not in free:
                _fatal("fork: slot %r is not a free slot" % (slot,))
            free.discard(slot)
            mine = pool[3 * slot : 3 * slot + 3]
            pid = os.fork()
            if pid == 0:
                _fork_child(mine, [fd for fd in pool if fd not in mine] + [_CTL, wake_r, wake_w], start_dir)
                _PID = os.getpid()
                sys.argv = argv[:2] + ["fresh"] + rest
                return
            for fd in mine:  # the child's alone now: its end is seen when it exits
                try:
                    os.close(fd)
                except OSError:
                    pass
            pool = [fd if fd not in mine else -1 for fd in pool]
            _send({"type": "forked", "slot": slot, "pid": pid})


def _fork_child(mine, others, start_dir):
    """In a forked child: its own session (as a spawned runner leads one), the fork server's signal set-up undone,
    every other slot and channel closed, and its slot's descriptors as fds 1, 2 and 3. The working directory is
    entered again by its path, as a spawned runner would be (the directory may have been replaced meanwhile)."""
    try:
        os.setsid()
        os.chdir(start_dir)
        _signal.set_wakeup_fd(-1)
        _signal.signal(_signal.SIGCHLD, _signal.SIG_DFL)
        for fd in others:
            if fd >= 0:
                os.close(fd)
        for fd, target in zip(mine, (1, 2, 3)):
            os.dup2(fd, target, inheritable=True)
        for fd in mine:
            os.close(fd)
    except BaseException:
        os._exit(71)


def _main():
    if sys.argv[1:3] == ["--mode", "zygote"]:
        _zygote()
    _setup(sys.argv)
    g = _new_main()
    v = sys.version_info
    _send(
        {
            "type": "ready",
            "protocol": PROTOCOL,
            "pid": os.getpid(),
            "python": "%d.%d.%d" % (v[0], v[1], v[2]),
            "executable": sys.executable,
            "mode": _MODE,
        }
    )
    # Work that can wait until the host reacts to `ready` (frames sent meanwhile wait in the socket).
    _start_reader()
    _load_kit()  # the drain's and _restore_std_fds' modules and lookups
    import _ast  # first use initialises the AST types (~1 ms); every run needs them

    try:
        if _MODE == "fresh":
            code = _execute(_next_run(), g)
            os._exit(code & 0xFF)
        while True:
            _execute(_next_run(), g)
    except BaseException:
        _fatal("runner internal error:\n" + _format_own_exc())


if __name__ == "__main__":
    _main()
