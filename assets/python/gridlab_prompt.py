"""Host Python at gridlab's prompt: `python3 gridlab_prompt.py`, one interpreter per session.

gridlab starts it the first time a learner types host Python its statement language cannot
run (a loop, a list comprehension, an f-string, `assert np.allclose(...)`, a plain function).
gridlab's buffers and scalars are the workspace: every input first receives them (an array
whose name, dtype and shape are unchanged is copied into the same numpy object, so names that
alias stay aliased), then runs, then sends back each array and number it created or changed.
Kernels gridlab knows are launchable here by name, and a `@cuda.jit` function defined here is
handed to gridlab at once, so it shows in `:kernels` and runs from either side.

Messages: gridlab sends `exec` (the input, the workspace) and `quit`; this side answers with
the stand-in's `out`, `define` and `launch` messages while the input runs, then `assert` or
`exception` if it failed, `sync` (what changed) and `done`.
"""

import builtins
import hashlib
import linecache
import math
import os
import sys
import traceback

import _gridlab


# Names a learner's input finds without importing, as gridlab's statement language does.
PRELUDE = {"np", "numpy", "math", "cuda", "numba"}


class PromptKernel:
    """A kernel defined in gridlab (CUDA C, or Python typed at the prompt), launched by name."""

    def __init__(self, name):
        self.__name__ = name
        self.device = False

    def _define(self):
        pass

    def __getitem__(self, config):
        from numba import cuda

        if not isinstance(config, tuple):
            config = (config,)
        if not 2 <= len(config) <= 4:
            raise ValueError("a launch is kernel[blocks, threads] or kernel[blocks, threads, stream, shared_bytes]")
        return cuda._Launch(self, config)

    def __call__(self, *args, **kwargs):
        raise ValueError(
            "Kernel launch configuration was not specified. Use the syntax:\n\n"
            "kernel_function[blockspergrid, threadsperblock](arg0, arg1, ..., argn)"
        )

    def __repr__(self):
        return f"<gridlab kernel {self.__name__}>"


def register_lines(fname, first, source):
    """Put the input's lines at their line numbers in linecache, so that tracebacks,
    `inspect.getsource` (a `@cuda.jit` defined here) and a launch's argument names find them."""
    entry = linecache.cache.get(fname)
    lines = list(entry[2]) if entry else []
    new = source.splitlines(True)
    if new and not new[-1].endswith("\n"):
        new[-1] += "\n"
    while len(lines) < first - 1 + len(new):
        lines.append("\n")
    lines[first - 1:first - 1 + len(new)] = new
    linecache.cache[fname] = (sum(map(len, lines)), None, lines, fname)


class Workspace:
    def __init__(self, np, cuda, numba):
        self.np = np
        self.cuda = cuda
        self.ns = {
            "__name__": "__main__",
            "__builtins__": builtins,
            "np": np,
            "numpy": np,
            "math": math,
            "cuda": cuda,
            "numba": numba,
        }
        # What gridlab holds for each name, as a digest: only what differs goes back.
        self.known = {}
        self.dtypes = cuda._DTYPES
        # Import lines already run: each input carries all of them.
        self.imported = set()

    def digest(self, value):
        np = self.np
        if isinstance(value, np.ndarray):
            data = np.ascontiguousarray(value)
            return ("a", data.dtype.name, data.shape, hashlib.blake2b(data.tobytes(), digest_size=16).digest())
        return ("s", type(value).__name__, repr(value))

    def receive(self, header, payload):
        np, ns = self.np, self.ns
        at = 0
        for a in header.get("arrays", []):
            dtype = np.dtype(a["dtype"])
            shape = tuple(a["shape"])
            n = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
            data = np.frombuffer(payload[at:at + n], dtype=dtype).reshape(shape)
            at += n
            name = a["name"]
            current = ns.get(name)
            host = current._host if isinstance(current, self.cuda.DeviceNDArray) else current
            if isinstance(host, np.ndarray) and host.dtype == dtype and host.shape == shape and host.flags.writeable:
                host[...] = data
            else:
                ns[name] = data.copy()
                host = ns[name]
            self.known[name] = self.digest(host)
        for name, s in header.get("scalars", {}).items():
            kind, value = s["kind"], s["value"]
            if kind == "float":
                value = float(value)
            elif kind == "tuple":
                value = tuple(value)
            ns[name] = value
            self.known[name] = self.digest(value)
        for name in header.get("kernels", []):
            current = ns.get(name)
            if not isinstance(current, (self.cuda.Dispatcher, PromptKernel)):
                ns[name] = PromptKernel(name)

    def imports(self, source):
        """The imports typed at the prompt, which gridlab read for its kernels: here too."""
        for line in source.splitlines():
            if line in self.imported:
                continue
            self.imported.add(line)
            try:
                exec(compile(line, "<imports>", "exec"), self.ns)
            except Exception:  # noqa: BLE001 - a failing import shows when the name is used
                pass

    def run(self, header):
        """Run one input; the status it ended with: ok, assert, error."""
        source = header["source"]
        fname = header["file"]
        first = int(header.get("line", 1))
        register_lines(fname, first, source)
        padded = "\n" * (first - 1) + source + "\n"
        try:
            try:
                code = compile(padded, fname, "single")
            except SyntaxError as e:
                if "multiple statements" not in str(e.msg):
                    raise
                code = compile(padded, fname, "exec")
            exec(code, self.ns)
            # Numba compiles at the first launch; at a prompt a mistake should show now.
            for value in list(self.ns.values()):
                if isinstance(value, self.cuda.Dispatcher) and not value._defined:
                    value._define()
            return "ok"
        except _gridlab.KernelError:
            return "error"  # gridlab has shown why, at its line
        except AssertionError as e:
            at = user_frame(e.__traceback__, fname)
            _gridlab.send({
                "op": "assert",
                "line": at.lineno if at else first,
                "source": (at.line or "") if at else "",
                "message": str(e),
            })
            return "assert"
        except SyntaxError as e:
            _gridlab.send({
                "op": "exception",
                "line": e.lineno or first,
                "column": e.offset or 0,
                "kind": type(e).__name__,
                "message": e.msg or "invalid syntax",
                "traceback": "",
            })
            return "error"
        except BaseException as e:  # noqa: BLE001 - every failure is reported at its line
            at = user_frame(e.__traceback__, fname)
            text = _gridlab.own_traceback(e.__traceback__)
            _gridlab.send({
                "op": "exception",
                "line": at.lineno if at else first,
                "column": 0,
                "kind": type(e).__name__,
                "message": str(e),
                "traceback": text,
            })
            return "error"

    def send_back(self, skip):
        """Every array and number bound at the top level that gridlab does not hold as it is."""
        np = self.np
        arrays, payload, scalars = [], [], {}
        for name, value in list(self.ns.items()):
            if name.startswith("_") or name in PRELUDE or name in skip:
                continue
            host = value._host if isinstance(value, self.cuda.DeviceNDArray) else value
            if isinstance(host, np.ndarray):
                if host.dtype.name not in self.dtypes or not 1 <= host.ndim <= 3 or host.size == 0:
                    continue
                d = self.digest(host)
                if self.known.get(name) == d:
                    continue
                self.known[name] = d
                data = np.ascontiguousarray(host)
                arrays.append({
                    "name": name, "dtype": data.dtype.name, "shape": list(data.shape),
                    "fresh": bool(getattr(value, "_fresh", False)),
                })
                payload.append(data.tobytes())
                continue
            if isinstance(value, (bool, np.bool_)):
                s = {"kind": "bool", "value": bool(value)}
            elif isinstance(value, (int, np.integer)):
                if not -(2 ** 63) <= int(value) < 2 ** 64:
                    continue
                s = {"kind": "int", "value": int(value)}
            elif isinstance(value, (float, np.floating)):
                f = float(value)
                s = {"kind": "float", "value": f if math.isfinite(f) else repr(f)}
            else:
                continue
            d = self.digest(value)
            if self.known.get(name) == d:
                continue
            self.known[name] = d
            scalars[name] = s
        _gridlab.send({"op": "sync", "arrays": arrays, "scalars": scalars}, b"".join(payload))


def user_frame(tb, fname):
    """The innermost traceback entry in the learner's input."""
    best = None
    for entry in traceback.extract_tb(tb):
        if entry.filename == fname:
            best = entry
    return best


def main():
    import gridlab_host

    if not gridlab_host.start():
        return
    import numpy as np
    import numba
    from numba import cuda

    workspace = Workspace(np, cuda, numba)
    _gridlab.send({"op": "ready", "python": sys.version.split()[0], "numpy": np.__version__})
    while True:
        header, payload = _gridlab.receive()
        op = header.get("op")
        if op == "quit":
            return
        if op != "exec":
            continue
        workspace.receive(header, payload)
        workspace.imports(header.get("imports", ""))
        status = workspace.run(header)
        workspace.send_back(set(header.get("skip", [])))
        _gridlab.send({"op": "done", "status": status})


if __name__ == "__main__":
    main()
