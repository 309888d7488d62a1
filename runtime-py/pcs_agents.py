"""pi-code-supervisor: eval's orchestration helpers in Python (oh-my-pi's prelude): agent(), parallel(), pipeline(),
log(), phase() and budget.

Loaded by pcs_runner.py when it makes a run's globals (never imported by user code); install() makes them builtins.
agent() and the budget are nested calls of reserved tools (`__agent__`, `__budget__`) that only eval exposes, made
synchronously like completion(): the calling thread blocks, so parallel() runs thunks in a thread pool whose width
the host gives (`__concurrency__`, setting eval.poolWidth; 0 = every item at once). log() and phase() are status
events: `display` frames of kind `status`, details of the cell, never output. Standard library only.
"""

_run = None  # () -> the executing run's id (the runner's tool run), or None
_tools = None  # () -> the pi_tools module
_display = None  # () -> the pcs_display module
_ONLY_EVAL = "is not exposed to Python in this run"


def install(builtins, run, tools, display):
    global _run, _tools, _display
    _run, _tools, _display = run, tools, display
    for f in (agent, parallel, pipeline, log, phase):
        setattr(builtins, f.__name__, f)
    builtins.budget = budget


def _call(name, python, args):
    status, text, _ = _tools().call_sync(_run(), name, python, args)
    if status == "ok":
        return text
    if text.startswith(name + " ") and _ONLY_EVAL in text:
        raise RuntimeError("%s() works in eval cells only" % python)
    if status == "invalid":
        raise TypeError(text)
    raise RuntimeError(text)


def agent(prompt, agent=None, model=None, label=None, schema=None):
    """Run one subagent (a child Pi agent session with the session's model, or `model` as "provider/model", and the
    tools the session allows) and return its final text; with `schema` (a JSON Schema dict) the parsed object it
    answered. `agent`: "task" (default) or a definition in .pi/agents/<name>.md. Errors (unknown model or agent, the
    recursion cap, invalid structured output, a failed subagent) raise RuntimeError. Callable and awaitable."""
    if not isinstance(prompt, str) or not prompt.strip():
        raise TypeError("agent(): the prompt must be a non-empty str")
    args = {"prompt": prompt}
    for key, value in (("agent", agent), ("model", model), ("label", label)):
        if value is not None:
            if not isinstance(value, str):
                raise TypeError("agent(): %s must be a str" % key)
            args[key] = value
    if schema is not None:
        if not isinstance(schema, dict):
            raise TypeError("agent(): schema must be a JSON Schema dict")
        args["schema"] = schema
    text = _call("__agent__", "agent", args)
    pi_tools = _tools()
    if schema is None:
        return pi_tools._awaitable(text)
    import json

    return pi_tools._awaitable(json.loads(text))


def _width():
    import json

    limit = json.loads(_call("__concurrency__", "parallel", {})).get("limit")
    return limit if isinstance(limit, int) and limit > 0 else 0


def _settled(value):
    """A coroutine a thunk returned (an `async def` or a bridged tool) is run to its end in the worker's thread."""
    import inspect

    if inspect.iscoroutine(value):
        import asyncio

        return asyncio.run(value)
    return value


def _pool_map(fn, items):
    """fn over items in a bounded thread pool: results in item order; every item settles, then the first failure (by
    item order) is raised."""
    items = list(items)
    if not items:
        return []
    import concurrent.futures
    import contextvars

    limit = _width()
    workers = min(limit, len(items)) if limit else len(items)
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=workers, thread_name_prefix="pcs-pool")
    try:
        futures = [pool.submit(contextvars.copy_context().run, lambda x: _settled(fn(x)), item) for item in items]
        concurrent.futures.wait(futures)
    except BaseException:
        # The cell was interrupted: items not started are dropped; running ones end when their calls are cancelled.
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown(wait=False)
    for f in futures:
        error = f.exception()
        if error is not None:
            raise error
    return [f.result() for f in futures]


def parallel(thunks):
    """Call each zero-argument callable in a bounded pool (setting eval.poolWidth); their results in the same order.
    All finish first; then the first failure is raised."""
    thunks = list(thunks)
    for t in thunks:
        if not callable(t):
            raise TypeError(
                "parallel() takes callables with no arguments (e.g. lambda: agent('...')), not %s" % type(t).__name__
            )
    return _pool_map(lambda t: t(), thunks)


def pipeline(items, *stages):
    """Pass every item through each stage in turn (a bounded pool per stage; every item clears a stage before the next
    starts); the results in item order. A failing item fails the pipeline once its stage has settled."""
    for s in stages:
        if not callable(s):
            raise TypeError("pipeline() stages must be callables taking one item, not %s" % type(s).__name__)
    current = list(items)
    for stage in stages:
        current = _pool_map(stage, current)
    return current


def _status(op, **data):
    import json

    data["op"] = op
    _display()._emit(("status", None, json.dumps(data, ensure_ascii=False, default=str)))


def log(message):
    """A status event (`{op: "log", message}`): shown under the cell in Pi's terminal, not part of the output."""
    _status("log", message=str(message))


def phase(title):
    """A status event naming the phase the cell's work is in (`{op: "phase", title}`)."""
    _status("phase", title=str(title))


class _Budget:
    """The Pi session's tokens: `total` (the model's context window, None when unknown), `spent()` (the context in use),
    `remaining()` (math.inf without a total), `hard` (compaction is off: the window is a hard limit)."""

    def _snap(self):
        import json

        snap = json.loads(_call("__budget__", "budget", {}))
        return snap if isinstance(snap, dict) else {}

    @property
    def total(self):
        return self._snap().get("total")

    @property
    def hard(self):
        return bool(self._snap().get("hard"))

    def spent(self):
        return int(self._snap().get("spent") or 0)

    def remaining(self):
        snap = self._snap()
        if snap.get("total") is None:
            import math

            return math.inf
        return int(snap.get("remaining") or 0)

    def __repr__(self):
        try:
            s = self._snap()
        except Exception as e:
            return "<budget unavailable: %s>" % e
        keys = ("total", "spent", "remaining", "hard")
        return "<budget %s>" % " ".join("%s=%s" % (k, s.get(k)) for k in keys)


budget = _Budget()
