"""Runs a Python program for gridlab: `python3 gridlab_host.py PROGRAM.py`.

The folder holding this file is first on `sys.path`, so the program's `import numba` and
`from numba import cuda` find gridlab's stand-in (`numba/`), whose `@cuda.jit` hands each
kernel to gridlab and whose launches run there, on the simulator or the GPU.
"""

import importlib.util
import os
import runpy
import sys
import traceback

import _gridlab


def user_frame(tb, path):
    """The innermost traceback entry in the program's own file."""
    best = None
    for entry in traceback.extract_tb(tb):
        if os.path.abspath(entry.filename) == path:
            best = entry
    return best


def load_stand_in():
    """Put gridlab's `numba` in sys.modules before the program runs, so that an installed
    Numba (or numba-cuda, whose import hooks redirect `numba.cuda`) never answers for it."""
    here = os.path.dirname(os.path.abspath(__file__))

    def load(name, path, package=None):
        spec = importlib.util.spec_from_file_location(name, path, submodule_search_locations=package)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
        return module

    numba_dir = os.path.join(here, "numba")
    types = load("numba.types", os.path.join(numba_dir, "types.py"))
    cuda = load("numba.cuda", os.path.join(numba_dir, "cuda", "__init__.py"), [os.path.join(numba_dir, "cuda")])
    cuda.random = load("numba.cuda.random", os.path.join(numba_dir, "cuda", "random.py"))
    numba = load("numba", os.path.join(numba_dir, "__init__.py"), [numba_dir])
    numba.cuda = cuda
    numba.types = types


class IPython:
    """`get_ipython()` for a notebook turned into a script (`jupyter nbconvert --to script`
    writes `%timeit` as `get_ipython().run_line_magic('timeit', ...)`). `%time` and `%timeit`
    run their statement once at their line (gridlab reports each launch's time); magics that
    set up the notebook (`%matplotlib inline`, `%load_ext`) change nothing here; shell commands
    (`!nvidia-smi`) are not run."""

    def run_line_magic(self, name, line):
        if name in ("time", "timeit", "prun"):
            self._run(_strip_options(line), sys._getframe(1))
        return None

    def run_cell_magic(self, name, line, cell):
        if name in ("time", "timeit", "prun", "capture"):
            self._run(cell, sys._getframe(1))
        elif name == "writefile":
            with open(line.split()[-1], "w") as f:
                f.write(cell)
        return None

    def system(self, cmd):
        print(f"(gridlab runs no shell commands from a notebook: `!{cmd}` skipped)")

    def getoutput(self, cmd):
        self.system(cmd)
        return []

    def _run(self, code, frame):
        import ast as _ast
        tree = _ast.parse(code)
        _ast.increment_lineno(tree, frame.f_lineno - 1)
        exec(compile(tree, frame.f_code.co_filename, "exec"), frame.f_globals, frame.f_locals)


def _strip_options(line):
    """`-n 10 -r 3 stmt` → `stmt` (the options of %timeit)."""
    words = line.split(" ")
    while words and words[0].startswith("-"):
        flag = words.pop(0)
        if flag in ("-n", "-r", "-p") and words:
            words.pop(0)
    return " ".join(words)


_ipython = IPython()


def start():
    """Talk to gridlab on the standard streams, and load the stand-in `numba`. False when
    this Python has no numpy (gridlab has been told, and says what to install)."""
    _gridlab.connect(os.fdopen(os.dup(1), "wb"), os.fdopen(os.dup(0), "rb"))
    # The program's own reads of stdin get nothing: gridlab speaks on it.
    sys.stdin = open(os.devnull)
    sys.stdout = _gridlab.Output("stdout")
    sys.stderr = _gridlab.Output("stderr")
    try:
        import numpy  # noqa: F401
    except ImportError:
        _gridlab.send({"op": "missing", "what": "numpy"})
        return False
    load_stand_in()
    import builtins
    builtins.get_ipython = lambda: _ipython
    return True


def main():
    path = os.path.abspath(sys.argv[1])
    if not start():
        return
    sys.argv = sys.argv[1:]
    sys.path.insert(0, os.path.dirname(path))
    try:
        runpy.run_path(path, run_name="__main__")
    except _gridlab.KernelError:
        pass  # gridlab has already shown the error at its line
    except SystemExit as e:
        if e.code not in (None, 0):
            _gridlab.send({"op": "exit", "code": e.code if isinstance(e.code, int) else 1})
    except AssertionError as e:
        at = user_frame(e.__traceback__, path)
        _gridlab.send({
            "op": "assert",
            "line": at.lineno if at else 0,
            "source": (at.line or "") if at else "",
            "message": str(e),
        })
    except SyntaxError as e:
        _gridlab.send({
            "op": "exception",
            "line": e.lineno or 0,
            "kind": "SyntaxError",
            "message": e.msg or "invalid syntax",
            "traceback": "",
        })
    except BaseException as e:  # noqa: BLE001 - every failure is reported at its line
        at = user_frame(e.__traceback__, path)
        text = _gridlab.own_traceback(e.__traceback__)
        _gridlab.send({
            "op": "exception",
            "line": at.lineno if at else 0,
            "kind": type(e).__name__,
            "message": str(e),
            "traceback": text,
        })
    _gridlab.send({"op": "done"})


if __name__ == "__main__":
    main()
