"""pi-code-supervisor runner: its own imports, kept apart from the session's (docs/protocol.md, "The runner's modules").

User code runs with its start directory first on sys.path, so a file there named like a standard module (token.py)
shadows that module for the user's imports, as under `python3 script.py`. The runner must never pick such a file up,
nor depend on what user code does to sys.modules, and its own imports must not change what the user's imports find:

- The runner's code and every module loaded for it run with builtins whose `__import__` is `own_import`, so their
  imports, lazy ones inside functions included, come here. A standard module comes from the standard library
  directories only. One the session loaded from there is shared, except that the runner's code and the `PRIVATE`
  modules (the runner calls them, and they import lazily) get the runner's own copies of `PRIVATE` modules. Other
  names (user modules) are the session's.
- Modules loaded for the runner stay out of sys.modules (`own`). When the session imports one and plain Python would
  load the very same files for it and for everything it imports, it is handed over, so both use one copy (asyncio,
  threading, dataclasses); otherwise the session loads its own, as plain Python would. Built-in modules cannot be
  shadowed and are shared.

Loading goes through importlib on the runner's thread, with a finder that knows only the standard library and with
sys.modules showing what the runner sees, since C accelerators (_asyncio) import by name while they load. Imports by
the session's threads during that brief window see the runner's view.

Past 400 lines, one concept: one import mechanism (own_import, the finders, the names kept out of sys.modules)
that only works whole.
"""

import builtins
import os
import sys
import _signal
import _thread
import _frozen_importlib as _bootstrap
import _frozen_importlib_external as _external

_real_import = builtins.__import__
_Module = type(sys)
_BuiltinImporter = _bootstrap.BuiltinImporter
_FrozenImporter = _bootstrap.FrozenImporter
_PathFinder = _external.PathFinder

PRIVATE = frozenset(("traceback", "linecache", "tokenize", "pprint", "json", "importlib"))
_RUNNER = frozenset(("pcs_runner", "_pcs_pi_tools", "_pcs_display", "_pcs_prelude"))

own = {}  # module name -> module loaded for the runner, out of sys.modules unless handed over
watch = {}  # module name -> function called with that module once the session loads it (its own or handed over)
_given = set()  # names handed over (once: importing again after `del sys.modules[name]` loads anew)
_deps = {}  # top-level name of a runner's module -> {top-level name: the module its imports of that name got}
_lock = _thread.RLock()
_loading = None  # the thread loading modules for the runner
_stack = []  # its load contexts, innermost last: (set aside, shown, sys.modules names before)
_names = None
_MAIN = _thread.get_ident()  # the bootstrap runs in the main thread, the one SIGINT interrupts


def _std_path():
    stdlib = os.path.normpath(getattr(sys, "_stdlib_dir", None) or os.path.dirname(os.__file__))
    zipped = os.path.join(os.path.dirname(stdlib), "python%d%d.zip" % sys.version_info[:2])
    wanted = [zipped, stdlib, os.path.join(stdlib, "lib-dynload")]
    # As spelled on sys.path, so that origins compare equal with the session's imports of the same files.
    path = [p for p in dict.fromkeys(sys.path) if type(p) is str and p and os.path.normpath(p) in wanted]
    return path if stdlib in map(os.path.normpath, path) else [p for p in wanted if os.path.isdir(p)]


_STD_PATH = _std_path()
_STD_PREFIXES = tuple(p.rstrip(os.sep) + os.sep for p in _STD_PATH)


def _std_names():
    """Top-level names of the standard library (sys.stdlib_module_names from 3.10 on)."""
    global _names
    if _names is None:
        names = getattr(sys, "stdlib_module_names", None)
        if names is None:
            names = set(sys.builtin_module_names)
            for d in _STD_PATH:
                try:
                    entries = os.listdir(d)
                except OSError:
                    continue
                for e in entries:
                    names.add(e.partition(".")[0])
            names -= {"site-packages", "dist-packages", "__pycache__", ""}
        _names = frozenset(names)
    return _names


def _spec(m):
    try:
        return m.__dict__.get("__spec__")
    except Exception:  # not a module
        return None


def _origin(m):
    try:
        spec = m.__dict__.get("__spec__")
        return spec.origin if spec is not None else m.__dict__.get("__file__")
    except Exception:
        return None


def _is_std(m):
    if not isinstance(m, _Module):
        return False
    origin = _origin(m)
    return type(origin) is str and (origin in ("built-in", "frozen") or origin.startswith(_STD_PREFIXES))


def _initializing(m):
    return getattr(_spec(m), "_initializing", False) is True


def _shared(m):
    """A module the session loaded that the runner may use as well."""
    return _is_std(m) and not _initializing(m)


def loaded(name):
    """The module that modules loaded for the runner get for `name`, if it is loaded: the session's standard one,
    else the runner's own."""
    m = sys.modules.get(name)
    return m if m is not None and _shared(m) else own.get(name)


def own_import(name, globals=None, locals=None, fromlist=(), level=0):
    """`__import__` of the runner's code and of the modules loaded for it."""
    if type(fromlist) is list and not fromlist:
        return _for_c(name, globals, locals, fromlist, level)
    try:
        absname = _bootstrap._resolve_name(name, _bootstrap._calc___package__(globals), level) if level else name
    except Exception:  # the real import reports it
        return _load(name, globals, locals, fromlist, level, False)
    top = absname.partition(".")[0]
    caller = globals.get("__name__") if type(globals) is dict else None
    caller = caller.partition(".")[0] if type(caller) is str else None
    private = top in PRIVATE and (caller in PRIVATE or caller in _RUNNER)
    find = own.get if private else loaded
    mod = find(absname)
    result = None
    if mod is not None:
        if fromlist:
            if not hasattr(mod, "__path__") or all(type(x) is str and x != "*" and hasattr(mod, x) for x in fromlist):
                result = mod
        elif level == 0:
            result = mod if top == absname else find(top)
    elif top not in _std_names():
        return _real_import(name, globals, locals, fromlist, level)  # a user module: the session's
    if result is None:
        result = _load(name, globals, locals, fromlist, level, private)
    if caller is not None and caller != top and caller not in _RUNNER:
        dep = find(top)
        if dep is not None:
            _deps.setdefault(caller, {})[top] = dep
    return result


def _for_c(name, globals, locals, fromlist, level):
    """PyImport_Import (C code, e.g. _json building JSONDecodeError) reads the module back from sys.modules."""
    if level == 0 and name not in sys.modules and name in own:
        sys.modules[name] = own[name]  # the C code needs it there; the runner's copy is the standard one
        _given.add(name)
        return own[name]
    return _real_import(name, globals, locals, fromlist, level)


def _load(name, globals, locals, fromlist, level, private):
    me = _thread.get_ident()
    with _lock:
        if _loading == me and (not private or any(context[3] for context in _stack)):
            return _real_import(name, globals, locals, fromlist, level)  # the view is in place
        interrupts = _defer_interrupts()
        try:
            _enter(me, private)
            try:
                return _real_import(name, globals, locals, fromlist, level)
            finally:
                _leave()
        finally:
            _resume_interrupts(interrupts)


def _defer_interrupts():
    """A KeyboardInterrupt in the middle of _enter or _leave would leave the session with the runner's view of
    sys.modules: hold it until the load is over (a load takes milliseconds)."""
    if _thread.get_ident() != _MAIN or _signal.getsignal(_signal.SIGINT) is not _signal.default_int_handler:
        return None
    received = []
    _signal.signal(_signal.SIGINT, lambda signum, frame: received.append(signum))
    return received


def _resume_interrupts(received):
    if received is not None:
        _signal.signal(_signal.SIGINT, _signal.default_int_handler)
        if received:
            raise KeyboardInterrupt


def _enter(me, private):
    """sys.modules as the runner sees it: without the session's copies of standard modules that were not loaded from
    the standard library (nor, for a private load, of PRIVATE ones); with the runner's own where the session has
    none."""
    global _loading
    names = _std_names()
    aside = {}
    for n, m in list(sys.modules.items()):
        top = n.partition(".")[0]
        if top in names and not (n in own and own[n] is m):
            if m is None or (private and top in PRIVATE) or not (_shared(m) or _initializing(m)):
                aside[n] = m
    for n in aside:
        sys.modules.pop(n, None)
    shown = [n for n in own if n not in sys.modules]
    for n in shown:
        sys.modules[n] = own[n]
    if not _stack:
        _loading = me
        sys.meta_path.insert(0, _StdFinder)
    _stack.append((aside, shown, set(sys.modules), private))


def _leave():
    """New standard modules become the runner's own (built-in ones stay shared); the session's view comes back."""
    global _loading
    aside, shown, before, _ = _stack.pop()
    names = _std_names()
    moved = []
    for n in [n for n in list(sys.modules) if n not in before]:
        m = sys.modules.get(n)
        # Also what standard modules put there themselves (typing.io on 3.9-3.11).
        if n.partition(".")[0] in names and _origin(m) != "built-in":
            own[n] = m
            sys.modules.pop(n, None)
            moved.append(n)
    for n in shown:
        if sys.modules.get(n) is own.get(n):
            sys.modules.pop(n, None)
    sys.modules.update(aside)
    if _stack:  # the outer load goes on: it sees what was just loaded
        for n in moved:
            if n not in sys.modules:
                sys.modules[n] = own[n]
                _stack[-1][1].append(n)
    else:
        try:
            sys.meta_path.remove(_StdFinder)
        except ValueError:
            pass
        _loading = None


class _StdFinder:
    """While the runner's thread loads modules: standard modules from the standard library only."""

    @staticmethod
    def find_spec(name, path=None, target=None):
        if _loading != _thread.get_ident() or name.partition(".")[0] not in _std_names():
            return None
        spec = (
            _BuiltinImporter.find_spec(name, path)
            or _FrozenImporter.find_spec(name, path)
            or _PathFinder.find_spec(name, _STD_PATH if path is None else path)
        )
        if spec is None:
            raise ModuleNotFoundError("No module named %r" % name, name=name)
        loader = spec.loader
        if loader is None or loader is _BuiltinImporter:
            pass
        elif isinstance(loader, type):  # a class as loader (frozen modules)
            spec.loader = _OwnLoader(loader)
        else:
            _before_exec(loader, _use_own_builtins)
        return spec


def _use_own_builtins(module):
    module.__dict__["__builtins__"] = BUILTINS


def _before_exec(loader, fn):
    real = loader.exec_module

    def exec_module(module):
        fn(module)
        real(module)

    loader.exec_module = exec_module


class _OwnLoader:
    def __init__(self, loader):
        self.loader = loader

    def __getattr__(self, name):
        return getattr(self.loader, name)

    def create_module(self, spec):
        create = getattr(self.loader, "create_module", None)
        return create(spec) if create is not None else None

    def exec_module(self, module):
        _use_own_builtins(module)
        self.loader.exec_module(module)


class _Handover:
    """The session's finder for names the runner holds (or watches): hands over the runner's module when plain
    Python would load the same files for it and for all it imports; else returns what the session's finders find."""

    @staticmethod
    def find_spec(name, path=None, target=None):
        mod = own.get(name)
        hook = watch.get(name)
        if (mod is None and hook is None) or _loading == _thread.get_ident():
            return None
        spec = _session_spec(name, path, target)
        if spec is None:
            return None
        parent = name.rpartition(".")[0]
        if (
            mod is not None
            and name not in _given
            and name not in sys.modules
            and (not parent or (parent in own and sys.modules.get(parent) is own[parent]))  # not into another copy
            and _same(spec, mod)
            and _all_same(name)
        ):
            _given.add(name)
            spec = _bootstrap.ModuleSpec(name, _Given(mod), origin=spec.origin)
        if hook is not None and not isinstance(spec.loader, (type, type(None))) and watch.pop(name, None):
            real = spec.loader.exec_module

            def exec_module(module):
                real(module)
                try:
                    hook(module)
                except Exception:
                    pass

            spec.loader.exec_module = exec_module
        return spec


class _Given:
    """Loader handing the session a module the runner loaded."""

    def __init__(self, module):
        self.module = module
        self.spec = module.__spec__

    def create_module(self, spec):
        return self.module

    def exec_module(self, module):
        module.__spec__ = self.spec  # module_from_spec set the hand-over spec
        # What the module put in sys.modules itself when it ran (typing.io, collections.abc), as `import` would have.
        prefix = self.spec.name + "."
        for n, m in list(own.items()):
            if n.startswith(prefix) and getattr(_spec(m), "name", None) != n and n not in sys.modules:
                sys.modules[n] = m
                _given.add(n)


def _session_spec(name, path, target):
    """What the session's own finders would load for `name`."""
    for finder in list(sys.meta_path):
        if finder is _Handover or finder is _StdFinder:
            continue
        find = getattr(finder, "find_spec", None)
        if find is None:
            return None
        spec = find(name, path, target)
        if spec is not None:
            return spec
    return None


def _same(spec, mod):
    mine = _spec(mod)
    return spec.origin is not None and mine is not None and spec.origin == mine.origin


def _all_same(name):
    """True when the session would load the same files as the runner's copy of `name` and all the runner's modules
    it imports, and has no other copies of those."""
    top = name.partition(".")[0]
    todo = [(top, own.get(top))]
    seen = set()
    while todo:
        top, mod = todo.pop()
        if mod is None or id(mod) in seen:
            continue
        seen.add(id(mod))
        there = sys.modules.get(top)
        if own.get(top) is not mod:
            if there is not mod:
                return False  # a module the session has since dropped or replaced
            continue  # the session's own: what it imports is the session's business
        if there is None:
            spec = _session_spec(top, None, None)
            if spec is None or not _same(spec, mod):
                return False
        elif there is not mod and not (top in PRIVATE and _shared(there)):
            return False  # the session has another copy: ours would mix with it (PRIVATE ones are stateless helpers)
        todo.extend(_deps.get(top, {}).items())
    return True


BUILTINS = dict(builtins.__dict__)
BUILTINS["__import__"] = own_import


def install():
    """Hand the session the runner's modules from now on (once user paths are on sys.path)."""
    if _Handover not in sys.meta_path:
        sys.meta_path.insert(0, _Handover)


def load_runner(directory):
    """pcs_runner from `directory`, running with the runner's builtins; it is sys.modules["pcs_runner"]."""
    spec = _PathFinder.find_spec("pcs_runner", [directory])
    module = _bootstrap.module_from_spec(spec)
    _use_own_builtins(module)
    sys.modules["pcs_runner"] = module
    spec.loader.exec_module(module)
    return module
