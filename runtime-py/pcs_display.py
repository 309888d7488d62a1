"""pi-code-supervisor rich display: display() and rich trailing values, following IPython's MIME protocol.

Loaded by pcs_runner.py on the first display() call, rich trailing value or open matplotlib figure (never imported by
user code); see docs/protocol.md, "Rich display". Standard library only.

An object is shown by its richest representation: _repr_mimebundle_, else _repr_png_, _repr_jpeg_, _repr_svg_ (an
image), _repr_markdown_, _repr_html_ (converted to markdown by the host), _repr_json_; a matplotlib figure as PNG; a
dict or list as JSON; anything else as text. Each display is one `display` frame, sent after the run's output so far
has reached the host, so it lands at its place in the output.
"""

import os
import sys

MAX_IMAGE = 32 << 20  # bytes of one image sent to the host (a frame holds 64 MiB; base64 grows by a third)
MAX_TEXT = 4 << 20  # characters of one markdown, HTML, JSON or text display
_MIMES = (
    ("image/png", "image"),
    ("image/jpeg", "image"),
    ("image/svg+xml", "image"),
    ("text/markdown", "markdown"),
    ("text/html", "html"),
    ("application/json", "json"),
)
_METHODS = (
    ("_repr_png_", "image/png"),
    ("_repr_jpeg_", "image/jpeg"),
    ("_repr_svg_", "image/svg+xml"),
    ("_repr_markdown_", "text/markdown"),
    ("_repr_html_", "text/html"),
    ("_repr_json_", "application/json"),
)
RICH = ("_repr_mimebundle_",) + tuple(m for m, _ in _METHODS)

_send = None  # runner's frame sender: dict -> None
_run = None  # () -> the executing run's id, or None
_sync = None  # () -> None: flush Python's streams and wait until the host has read fd 1 and 2


def attach(send, run, sync):
    global _send, _run, _sync
    _send, _run, _sync = send, run, sync


def is_figure(value):
    t = type(value)
    return getattr(t, "__module__", "").startswith("matplotlib.") and hasattr(value, "savefig") and hasattr(value, "canvas")


def is_rich(value):
    t = type(value)
    return is_figure(value) or any(hasattr(t, name) for name in RICH)


def display(*objs, raw=False, **_ignored):
    """Show each object by its richest representation (IPython's display() protocol)."""
    for obj in objs:
        if raw and isinstance(obj, dict):
            item = _from_bundle(obj)
            if item is None:
                item = ("text", None, _text(obj))
        else:
            item = _item(obj, plain=True)
        _emit(item)


def show_value(value):
    """A trailing value with a rich representation is displayed; returns False when it has none (shown as text)."""
    if not is_rich(value):
        return False
    item = _item(value, plain=False)
    if item is None:
        return False
    _emit(item)
    return True


def show_figures():
    """matplotlib figures still open at the end of a run: each shown as PNG, then closed (as inline backends do)."""
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is None:
        return
    for num in list(plt.get_fignums()):
        fig = plt.figure(num)
        try:
            _emit(_figure(fig))
        finally:
            plt.close(fig)


def _item(obj, plain):
    """(kind, mime, data) for obj; None when plain is False and obj has no usable rich representation."""
    if is_figure(obj):
        return _figure(obj)
    t = type(obj)
    if hasattr(t, "_repr_mimebundle_"):
        try:
            bundle = obj._repr_mimebundle_(include=None, exclude=None)
        except Exception:
            bundle = None
        if isinstance(bundle, tuple):
            bundle = bundle[0] if bundle else None
        item = _from_bundle(bundle) if isinstance(bundle, dict) else None
        if item is not None:
            return item
    for method, mime in _METHODS:
        if not hasattr(t, method):
            continue
        try:
            data = getattr(obj, method)()
        except Exception:
            continue
        if isinstance(data, tuple):  # (data, metadata)
            data = data[0] if data else None
        if data is None:
            continue
        item = _convert(mime, data)
        if item is not None:
            return item
    if not plain:
        return None
    if type(obj) in (dict, list):
        item = _convert("application/json", obj)
        if item is not None:
            return item
    return ("text", None, _text(obj))


def _from_bundle(bundle):
    for mime, _ in _MIMES:
        if mime in bundle and bundle[mime] is not None:
            item = _convert(mime, bundle[mime])
            if item is not None:
                return item
    if "text/plain" in bundle:
        return ("text", None, str(bundle["text/plain"]))
    return None


def _convert(mime, data):
    if mime in ("image/png", "image/jpeg"):
        import base64

        if isinstance(data, str):  # already base64 (IPython accepts both)
            try:
                data = base64.b64decode(data, validate=False)
            except Exception:
                return None
        if not isinstance(data, (bytes, bytearray, memoryview)):
            return None
        data = bytes(data)
        if len(data) > MAX_IMAGE:
            return ("text", None, "[image not shown: %s of %d bytes is larger than %d MiB]" % (mime, len(data), MAX_IMAGE >> 20))
        return ("image", mime, base64.b64encode(data).decode("ascii"))
    if mime == "image/svg+xml":
        if isinstance(data, bytes):
            data = data.decode("utf-8", "replace")
        return ("image", mime, _cap(str(data))) if isinstance(data, str) else None
    if mime == "application/json":
        import json

        try:
            text = json.dumps(data, ensure_ascii=False, allow_nan=False, default=_not_json)
        except (TypeError, ValueError):
            return None
        return ("json", None, _cap(text))
    if isinstance(data, bytes):
        data = data.decode("utf-8", "replace")
    if not isinstance(data, str):
        return None
    return ("markdown" if mime == "text/markdown" else "html", None, _cap(data))


def _not_json(obj):
    raise TypeError("not JSON")


def _figure(fig):
    import io

    buf = io.BytesIO()
    fig.savefig(buf, format="png", bbox_inches="tight")
    return _convert("image/png", buf.getvalue())


def _text(obj):
    if isinstance(obj, str):
        return _cap(obj)
    try:
        return _cap(repr(obj))
    except Exception as e:
        return "<%s object (repr failed: %s)>" % (type(obj).__name__, e)


def _cap(text):
    if len(text) <= MAX_TEXT:
        return text
    return text[:MAX_TEXT] + "\n[... %d characters not displayed ...]" % (len(text) - MAX_TEXT)


def _emit(item):
    kind, mime, data = item
    run = _run()
    if run is None:  # between runs (a thread): there is no run to show it in
        return
    _sync()
    frame = {"type": "display", "id": run, "kind": kind}
    if kind == "image":
        frame["mime"] = mime
        frame["data"] = data
    else:
        frame["text"] = data
    _send(frame)
