"""pi-code-supervisor nested tool calls: calls from Python to Pi tools over the runner's control channel, and results.

Loaded by runner.py (never imported by user code) on the first tool call; runner.py installs the tool functions.
See docs/protocol.md, "Nested tool calls". Standard library only.

A call is bound to the run executing when it is made: the coroutine may run on any asyncio loop in any thread of the
run's process (the reader thread hands the answer to that loop). When the run ends, calls still waiting fail.
"""

import os
import _thread

MAX_ARGS = 8 << 20  # bytes of JSON arguments per call
MAX_PENDING = 1024  # calls waiting for an answer, over all runs and threads
_PREVIEW = 200  # characters of a non-JSON result shown in json()'s error
_MARK = "structuredContent:"
_ENDED = "the run that made this tool call ended before it was answered"

_write = None  # runner's frame writer: bytes -> None (set by attach)
_pid = None
_lock = _thread.allocate_lock()
_pending = {}  # call id -> (loop, future, run id); loop None: a synchronous call's _Waiter
_seq = 0


def attach(write_frame, pid):
    global _write, _pid
    _write = write_frame
    _pid = pid


# ---------------------------------------------------------------------------------------------------- results
class ToolResult(str):
    """A tool's result text, exactly as the model would see it. `json()` parses it: the whole text, else a trailing
    `structuredContent:` block the text itself carries (MCP adapters write one), else the result's own
    `structuredContent`, which the host sends beside the text (never inside it)."""

    tool = "tool"
    _structured = None

    def json(self):
        """Parse the text as JSON (a new object each call). ValueError names the tool and shows the text's start."""
        import json

        # SystemError: 3.11's C scanner, failing inside a string, looks JSONDecodeError up in sys.modules only, where
        # the runner's own json is not (runtime-py/pcs_imports.py).
        try:
            return json.loads(self)
        except (ValueError, SystemError):
            pass
        for block in (_structured_block(self), self._structured):
            if block is None:
                continue
            try:
                return json.loads(block)
            except (ValueError, SystemError):
                pass
        start = str(self[:_PREVIEW])
        more = "..." if len(self) > _PREVIEW else ""
        raise ValueError("%s returned text that is not JSON: %r%s" % (self.tool, start, more)) from None

    def __reduce__(self):  # pickles (multiprocessing, copy) as a plain str: this class is not importable
        return (str, (str(self),))


def _structured_block(text):
    """The JSON after a last `structuredContent:` line (MCP style), or None."""
    i = text.rfind("\n" + _MARK)
    if i >= 0:
        body = text[i + 1 + len(_MARK) :]
    elif text.startswith(_MARK):
        body = text[len(_MARK) :]
    else:
        return None
    body = body.strip()
    if body.startswith("```"):  # a fenced block: ```json ... ```
        body = body.split("\n", 1)[1] if "\n" in body else ""
        if body.rstrip().endswith("```"):
            body = body.rstrip()[:-3]
    return body


# ---------------------------------------------------------------------------------------------------- calls
def _encode(frame, python):
    import json

    try:
        text = json.dumps(frame, allow_nan=False, ensure_ascii=False, separators=(",", ":"))
    except ValueError as e:
        if "Out of range float" in str(e):
            raise ValueError(
                "%s(): NaN and Infinity are not valid JSON, so they cannot be passed to a tool" % python
            ) from None
        raise ValueError("%s(): the arguments cannot be encoded as JSON (%s)" % (python, e)) from None
    except TypeError as e:
        raise TypeError(
            "%s(): arguments must be JSON values (str, int, float, bool, None, list, dict): %s" % (python, e)
        ) from None
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates: let JSON escape them
        data = json.dumps(frame, allow_nan=False, separators=(",", ":")).encode("ascii")
    if len(data) > MAX_ARGS:
        raise ValueError(
            "%s(): the arguments are %d bytes of JSON; the limit is %d MiB. Pass a path to a file instead."
            % (python, len(data), MAX_ARGS >> 20)
        )
    return data


def _withdraw(cid, run):
    """A call its caller stopped waiting for: if it is still pending, the host is told to abort its dispatch."""
    with _lock:
        waiting = _pending.pop(cid, None) is not None
    if waiting:
        _write(('{"type":"tool.cancel","id":"%s","run":%s}' % (cid, _quote(run))).encode("utf-8"))


async def call(run, name, python, kwargs):
    """One call of tool `name` for run `run` (the run executing when the call began, or None)."""
    global _seq
    if os.getpid() != _pid:
        raise RuntimeError("%s(): tool calls work only in the run's own process, not in a forked child" % python)
    if run is None:
        raise RuntimeError("%s(): no code_execution run is active; tool calls work only while a run executes" % python)
    import asyncio

    loop = asyncio.get_running_loop()
    with _lock:
        if len(_pending) >= MAX_PENDING:
            raise RuntimeError(
                "%s(): %d tool calls are already waiting; limit the concurrency (e.g. asyncio.Semaphore)"
                % (python, MAX_PENDING)
            )
        _seq += 1
        cid = "c%d" % _seq
    data = _encode({"type": "tool.call", "id": cid, "run": run, "name": name, "args": kwargs}, python)
    fut = loop.create_future()
    with _lock:
        _pending[cid] = (loop, fut, run)
    try:
        _write(data)
        status, text, structured = await fut
    except BaseException:
        # Cancelled (asyncio, or the run's KeyboardInterrupt cancelling its task): the host aborts the dispatch.
        _withdraw(cid, run)
        raise
    if status == "ok":
        result = ToolResult(text)
        result.tool = python
        if structured is not None:
            result._structured = structured
        return result
    if status == "invalid":
        raise TypeError(text)
    raise RuntimeError(text)


class _Waiter:
    """A synchronous call's answer: the calling thread blocks on the lock (interruptible by the run's SIGINT)."""

    __slots__ = ("lock", "result")

    def __init__(self):
        self.lock = _thread.allocate_lock()
        self.lock.acquire()
        self.result = None

    def set_result(self, result):
        if self.result is None:
            self.result = result
            self.lock.release()

    def done(self):
        return self.result is not None


def call_sync(run, name, python, kwargs):
    """One call that blocks the calling thread (any thread, with or without an event loop) until it is answered."""
    global _seq
    if os.getpid() != _pid:
        raise RuntimeError("%s(): calls work only in the run's own process, not in a forked child" % python)
    if run is None:
        raise RuntimeError("%s(): no run is active; it works only while a run executes" % python)
    with _lock:
        if len(_pending) >= MAX_PENDING:
            raise RuntimeError("%s(): %d calls are already waiting" % (python, MAX_PENDING))
        _seq += 1
        cid = "c%d" % _seq
    data = _encode({"type": "tool.call", "id": cid, "run": run, "name": name, "args": kwargs}, python)
    waiter = _Waiter()
    with _lock:
        _pending[cid] = (None, waiter, run)
    try:
        _write(data)
        waiter.lock.acquire()
    except BaseException:
        _withdraw(cid, run)
        raise
    return waiter.result


def call_result_sync(run, name, python, kwargs):
    """A synchronous call's ToolResult (eval's `tool.<name>(...)`): callable and awaitable, errors raised."""
    status, text, structured = call_sync(run, name, python, kwargs)
    if status == "invalid":
        raise TypeError(text)
    if status != "ok":
        raise RuntimeError(text)
    result = _AwaitableToolResult(text)
    result.tool = python
    if structured is not None:
        result._structured = structured
    return result


class _AwaitableToolResult(ToolResult):
    """A ToolResult that `await` gives back as itself (the call already happened)."""

    def __await__(self):
        return self
        yield


# ---------------------------------------------------------------------------------------------------- completion()
COMPLETION_TOOL = "__completion__"


def completion(run, prompt, model="default", system=None, schema=None):
    """One stateless model call through Pi (see the runner's completion() builtin)."""
    if not isinstance(prompt, str):
        raise TypeError("completion(): prompt must be a str, not %s" % type(prompt).__name__)
    if not isinstance(model, str) or not model:
        raise TypeError("completion(): model must be a tier (\"default\", \"smol\", \"slow\") or \"provider/model\"")
    args = {"prompt": prompt, "model": model}
    if system is not None:
        if not isinstance(system, str):
            raise TypeError("completion(): system must be a str")
        args["system"] = system
    if schema is not None:
        if not isinstance(schema, dict):
            raise TypeError("completion(): schema must be a JSON Schema dict")
        args["schema"] = schema
    status, text, _ = call_sync(run, COMPLETION_TOOL, "completion", args)
    if status == "invalid":
        raise TypeError(text)
    if status != "ok":
        raise RuntimeError(text)
    if schema is None:
        return _awaitable(text)
    import json

    try:
        return _awaitable(json.loads(text))
    except ValueError:
        raise RuntimeError("completion(): the model's structured answer is not JSON: %r" % text[:200]) from None


def _awaitable(value):
    """The value, also usable with `await` (completion() is callable and awaitable): str, dict, list, int and float
    results become subclasses whose __await__ gives the plain value; True, False and None stay as they are."""
    cls = _AWAITABLE.get(type(value))
    return cls(value) if cls is not None else value


def _make_awaitable(base):
    def __await__(self):
        return base(self)
        yield  # a generator: `await x` runs it and gets the plain value

    def __reduce__(self):
        return (base, (base(self),))

    return type("Awaitable" + base.__name__.capitalize(), (base,), {"__await__": __await__, "__reduce__": __reduce__})


_AWAITABLE = {t: _make_awaitable(t) for t in (str, dict, list, int, float)}


def _quote(s):
    import json

    return json.dumps(s)


def _settle(fut, status, text, structured=None):
    if not fut.done():
        fut.set_result((status, text, structured))


def deliver(msg):
    """Reader thread: a `tool.result` frame. Late answers (the call was cancelled) are dropped, and so are answers
    naming another run: the host's refusal of a forged call for another run must not reach a real call's id."""
    with _lock:
        entry = _pending.get(msg.get("id"))
        if entry is None or entry[2] != msg.get("run"):
            return
        del _pending[msg["id"]]
    loop, fut, _ = entry
    status = msg.get("status")
    text = msg.get("text")
    if not isinstance(status, str):
        status = "error"
    if not isinstance(text, str):
        text = ""
    structured = msg.get("structured")
    if not isinstance(structured, str):
        structured = None
    if loop is None:
        fut.set_result((status, text, structured))
        return
    try:
        loop.call_soon_threadsafe(_settle, fut, status, text, structured)
    except RuntimeError:  # that loop was closed
        pass


def end(run_id):
    """The run is over: its calls still waiting fail (in their own loops, whenever those run next)."""
    with _lock:
        gone = [(cid, e) for cid, e in _pending.items() if e[2] == run_id]
        for cid, _ in gone:
            del _pending[cid]
    for _, (loop, fut, _run_id) in gone:
        if loop is None:
            fut.set_result(("cancelled", _ENDED, None))
            continue
        try:
            loop.call_soon_threadsafe(_settle, fut, "cancelled", _ENDED)
        except RuntimeError:
            pass
