"""pi-code-supervisor runner bootstrap: `python runner.py --mode fresh|session` (docs/protocol.md).

A script given on the command line is compiled on every start (~4.5 ms for the runner); an imported module's
bytecode is cached. So this file only imports the runner (runtime-py/pcs_runner.py, run with the imports of
runtime-py/pcs_imports.py), writing the cache even under PYTHONDONTWRITEBYTECODE (the user's setting is restored
before any user code runs), and hands over.
"""

import sys


def _load():
    here = sys.path[0]
    dont_write = sys.dont_write_bytecode
    sys.dont_write_bytecode = False
    try:
        import pcs_imports

        runner = pcs_imports.load_runner(here)
    finally:
        sys.dont_write_bytecode = dont_write
    assert sys.path[0] == here
    return runner


_load()._main()
