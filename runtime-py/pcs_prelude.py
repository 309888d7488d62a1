"""pi-code-supervisor: eval's Python prelude (oh-my-pi's helpers): read, write, env, output and the `tool` namespace.

Loaded by pcs_runner.py when a run's tool set carries the reserved `__eval__` entry (an eval cell; its description is
the JSON of the session's `localRoot` and `artifactsDir`), never imported by user code. The helpers are synchronous,
as in oh-my-pi; they take the names `read` and `write` from Pi's bridged tools of those names, which stay reachable as
`tool.read(...)` and `tool.write(...)`. Runs of other surfaces in the same kernel get those tools back (uninstall).
Standard library only.
"""

import os

NAMES = ("read", "write", "env", "output", "tool")
_SCHEME = None  # compiled lazily: `scheme://rest`
_ANSI = None


class _Config:
    __slots__ = ("local_root", "artifacts_dir", "call", "names")

    def __init__(self):
        self.local_root = None
        self.artifacts_dir = None
        self.call = None  # (name, python, kwargs) -> ToolResult (synchronous nested call)
        self.names = ()  # the registered names of the tools this run may call

    def has_tool(self, name):
        return name in self.names


_config = _Config()


def _is_ours(value):
    return getattr(value, "__pcs_prelude__", False) is True


def install(g, spec, call, names):
    """Bind the helpers in the user's globals `g` for this run; a name the user bound to something else stays."""
    import json

    try:
        dirs = json.loads(spec.get("description") or "{}")
    except ValueError:
        dirs = {}
    _config.local_root = dirs.get("localRoot") if isinstance(dirs, dict) else None
    _config.artifacts_dir = dirs.get("artifactsDir") if isinstance(dirs, dict) else None
    _config.call = call
    _config.names = frozenset(names)
    taken = []
    for name, value in (("read", read), ("write", write), ("env", env), ("output", output), ("tool", tool)):
        if name in g and not _is_ours(g[name]) and not _is_bridged(g[name]):
            taken.append(name)
            continue
        g[name] = value
    return taken


def uninstall(g):
    """A run of another surface: the helpers leave the globals (Pi's tools of those names come back)."""
    for name in NAMES:
        if _is_ours(g.get(name)):
            del g[name]


def _is_bridged(value):
    return getattr(value, "__pcs_tool__", None) is not None


def _mark(fn):
    fn.__pcs_prelude__ = True
    return fn


# ---------------------------------------------------------------------------------------------------- paths
def _split_scheme(path):
    global _SCHEME
    if _SCHEME is None:
        import re

        _SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://(.*)$", re.S)
    m = _SCHEME.match(path)
    return (m.group(1).lower(), m.group(2)) if m else (None, None)


def _local(name, path, rest):
    """`local://rest` under the session's local root; absolute paths and `..` are refused."""
    from urllib.parse import unquote

    root = _config.local_root
    if not root:
        raise ValueError("%s(): local:// paths are not available in this run (no local root was given)" % name)
    rel = unquote(rest.replace("\\", "/"))
    root = os.path.abspath(root)
    if rel in ("", "/"):
        return root
    parts = rel.split("/")
    if rel.startswith("/") or ".." in parts:
        raise ValueError("%s(): %s escapes local:// (an absolute path or '..')" % (name, path))
    return os.path.join(root, *[p for p in parts if p not in ("", ".")])


def _path(name, path):
    """A filesystem path for `path`, or None with the scheme when it is another `scheme://` URL."""
    if isinstance(path, os.PathLike):
        path = os.fspath(path)
    if isinstance(path, bytes):
        path = os.fsdecode(path)
    if not isinstance(path, str) or not path:
        raise TypeError("%s(): path must be a non-empty str or path-like, not %s" % (name, type(path).__name__))
    scheme, rest = _split_scheme(path)
    if scheme is None:
        return os.path.abspath(os.path.expanduser(path)), None
    if scheme == "local":
        return _local(name, path, rest), None
    if scheme == "file":
        from urllib.parse import unquote, urlparse

        return os.path.abspath(unquote(urlparse(path).path)), None
    return None, scheme


# ---------------------------------------------------------------------------------------------------- helpers
class _Text(str):
    """read()'s text: a str that `await` gives back as a plain str, so cells written for the bridged read tool
    (`await read(path=...)`) keep working."""

    __slots__ = ()

    def __await__(self):
        return str(self)
        yield  # a generator: `await` runs it and gets the plain str

    def __reduce__(self):  # pickles as a plain str: this class is not importable
        return (str, (str(self),))


@_mark
def read(path, offset=1, limit=None):
    """The text of a file (UTF-8). `offset` is the first line (1-based), `limit` the number of lines. `local://x` is
    the session's scratch directory; other `scheme://` paths go to Pi's read tool. A directory is refused."""
    for key, value, low in (("offset", offset, 1), ("limit", limit, 0)):
        if value is None and key == "limit":
            continue
        if type(value) is not int or value < low:
            raise ValueError("read(): %s must be an int >= %d, not %r" % (key, low, value))
    target, scheme = _path("read", path)
    if target is None:
        if not _config.has_tool("read"):
            raise ValueError("read(): %s is a %s:// URL and Pi's read tool is not available here" % (path, scheme))
        args = {"path": path}
        if offset != 1:
            args["offset"] = offset
        if limit is not None:
            args["limit"] = limit
        return _Text(_config.call("read", "tool.read", args))
    if os.path.isdir(target):
        raise IsADirectoryError("read(): %s is a directory, not a file (list it with os.listdir)" % target)
    with open(target, "r", encoding="utf-8") as f:
        text = f.read()
    if offset == 1 and limit is None:
        return _Text(text)
    lines = text.splitlines(keepends=True)
    start = offset - 1
    return _Text("".join(lines[start : None if limit is None else start + limit]))


@_mark
def write(path, content):
    """Write `content` (str, as UTF-8, or bytes) to a file, making its parent directories; returns its Path.
    `local://x` is the session's scratch directory; other `scheme://` paths are refused."""
    target, scheme = _path("write", path)
    if target is None:
        raise ValueError("write(): %s:// paths are not supported (only local:// and file paths): %s" % (scheme, path))
    if isinstance(content, str):
        data = content.encode("utf-8")
    elif isinstance(content, (bytes, bytearray, memoryview)):
        data = bytes(content)
    else:
        raise TypeError("write(): content must be str or bytes, not %s (json.dumps it first)" % type(content).__name__)
    if os.path.isdir(target):
        raise IsADirectoryError("write(): %s is a directory" % target)
    parent = os.path.dirname(target)
    if parent:
        os.makedirs(parent, exist_ok=True)
    with open(target, "wb") as f:
        f.write(data)
    from pathlib import Path

    return Path(target)


@_mark
def env(key=None, value=None):
    """All environment variables (a dict, sorted), one (`env("HOME")`, None when unset), or set one
    (`env("KEY", "value")`, returning the value)."""
    if key is None:
        if value is not None:
            raise TypeError("env(): a value needs a key")
        return dict(sorted(os.environ.items()))
    if not isinstance(key, str) or not key:
        raise TypeError("env(): key must be a non-empty str")
    if value is not None:
        if not isinstance(value, str):
            raise TypeError("env(): value must be a str, not %s" % type(value).__name__)
        os.environ[key] = value
        return value
    return os.environ.get(key)


@_mark
def output(*ids, format="raw", query=None, offset=None, limit=None):
    """Saved outputs of this Pi session by id (a truncated eval output names its id). One id: its text (format
    "raw" or "stripped", without ANSI colours) or a dict (format "json": id, path, line_count, char_count, content);
    several ids: a list of dicts. `query` picks from JSON output (".key[0].name"); `offset`/`limit` select lines."""
    if format not in ("raw", "json", "stripped"):
        raise ValueError("output(): format must be 'raw', 'json' or 'stripped', not %r" % (format,))
    if not ids:
        raise ValueError("output(): at least one output id is required")
    if query is not None and (offset is not None or limit is not None):
        raise ValueError("output(): query cannot be combined with offset/limit")
    for key, value, low in (("offset", offset, 1), ("limit", limit, 0)):
        if value is not None and (type(value) is not int or value < low):
            raise ValueError("output(): %s must be an int >= %d, not %r" % (key, low, value))
    where = _config.artifacts_dir
    if not where:
        raise RuntimeError("output(): this run has no session artifacts directory")
    results = []
    missing = []
    for oid in ids:
        if not isinstance(oid, str) or not oid or "/" in oid or oid.startswith("."):
            raise ValueError("output(): %r is not an output id" % (oid,))
        if oid.startswith("artifact://"):
            oid = oid[len("artifact://") :]
        file = os.path.join(where, oid + ".md")
        if not os.path.isfile(file):
            missing.append(oid)
            continue
        with open(file, "r", encoding="utf-8") as f:
            raw = f.read()
        results.append(_select(oid, file, raw, format, query, offset, limit))
    if missing:
        try:
            known = sorted(n[:-3] for n in os.listdir(where) if n.endswith(".md"))
        except OSError:
            known = []
        msg = "output(): no saved output %s" % ", ".join(missing)
        if not known:
            msg += "; this session has saved none yet"
        else:
            msg += "; saved: %s" % ", ".join(known[:20])
            if len(known) > 20:
                msg += " (and %d more)" % (len(known) - 20)
        raise FileNotFoundError(msg)
    if len(ids) == 1:
        return results[0] if format == "json" else results[0]["content"]
    if format == "json":
        return results
    return [{"id": r["id"], "content": r["content"]} for r in results]


def _select(oid, file, raw, format, query, offset, limit):
    lines = raw.splitlines()
    content = raw
    extra = {}
    if query is not None:
        import json

        try:
            value = json.loads(raw)
        except ValueError as e:
            raise ValueError("output(): %s is not JSON, so it cannot be queried: %s" % (oid, e)) from None
        picked = _query(value, query)
        content = "null" if picked is None else json.dumps(picked, indent=2)
        extra["query"] = query
    elif offset is not None or limit is not None:
        start = offset or 1
        if start > len(lines):
            raise ValueError("output(): offset %d is past the end of %s (%d lines)" % (start, oid, len(lines)))
        end = len(lines) if limit is None else min(len(lines), start + limit - 1)
        content = "\n".join(lines[start - 1 : end])
        extra["range"] = {"start_line": start, "end_line": end, "total_lines": len(lines)}
    if format == "stripped":
        global _ANSI
        if _ANSI is None:
            import re

            _ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
        content = _ANSI.sub("", content)
    out = {"id": oid, "content": content}
    if format == "json":
        out.update(
            path=file,
            line_count=len(content.splitlines()) if query is not None else len(lines),
            char_count=len(content) if query is not None else len(raw),
        )
        out.update(extra)
    return out


def _query(value, query):
    """`.a.b[0]["c d"]`: keys and indexes; a step that does not exist gives None."""
    q = query.strip()
    i = 0
    steps = []
    while i < len(q):
        c = q[i]
        if c == ".":
            i += 1
            continue
        if c == "[":
            j = q.find("]", i)
            if j < 0:
                raise ValueError("output(): unclosed [ in query %r" % query)
            inner = q[i + 1 : j].strip()
            if len(inner) >= 2 and inner[0] == inner[-1] and inner[0] in "\"'":
                steps.append(inner[1:-1])
            else:
                try:
                    steps.append(int(inner))
                except ValueError:
                    why = "output(): [%s] in query %r is neither an index nor a quoted key" % (inner, query)
                    raise ValueError(why) from None
            i = j + 1
            continue
        j = i
        while j < len(q) and q[j] not in ".[":
            j += 1
        steps.append(q[i:j])
        i = j
    for step in steps:
        if isinstance(step, int):
            if not isinstance(value, list) or not -len(value) <= step < len(value):
                return None
        elif not isinstance(value, dict) or step not in value:
            return None
        value = value[step]
    return value


# ---------------------------------------------------------------------------------------------------- tool.<name>
class _ToolCall:
    __slots__ = ("_name",)

    def __init__(self, name):
        self._name = name

    def __repr__(self):
        return "<tool.%s>" % self._name

    def __call__(self, args=None, /, **kwargs):
        """Call the Pi tool with a dict of arguments and/or keyword arguments; returns its text (`.json()` parses it).
        Synchronous; `await` works too."""
        if args is None:
            merged = {}
        elif isinstance(args, dict):
            merged = dict(args)
        else:
            raise TypeError(
                "tool.%s(...) takes a dict of arguments or keyword arguments, not %s" % (self._name, type(args).__name__)
            )
        merged.update(kwargs)
        if not _config.has_tool(self._name):
            raise AttributeError("tool.%s: no such tool in this cell (see dir(tool))" % self._name)
        return _config.call(self._name, "tool." + self._name, merged)


class _ToolNamespace:
    """`tool.<name>(args)`: every Pi tool this cell may call, by its registered name (also `tool["name"]`)."""

    __slots__ = ()
    __pcs_prelude__ = True

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        if not _config.has_tool(name):
            available = ", ".join(self.__dir__()) or "none"
            raise AttributeError("tool.%s: no such tool in this cell (available: %s)" % (name, available))
        return _ToolCall(name)

    def __getitem__(self, name):
        if not isinstance(name, str) or not _config.has_tool(name):
            raise KeyError(name)
        return _ToolCall(name)

    def __dir__(self):
        return sorted(_config.names)

    def __repr__(self):
        names = self.__dir__()
        return "<tool: %s>" % (", ".join(names) if names else "no tools")


tool = _ToolNamespace()
