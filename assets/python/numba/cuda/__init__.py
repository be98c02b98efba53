"""gridlab's `numba.cuda`: kernels run by gridlab, device arrays kept in host memory.

`@cuda.jit` keeps the Python function; its first launch sends the source (and the module
globals it reads, which Numba freezes into the kernel) to gridlab, which lowers it to CUDA C.
Each launch sends the arrays' bytes and copies the results back into them, as Numba does for
host arrays. Device arrays are host arrays in a wrapper: `to_device`, `device_array`,
`copy_to_host` behave as in Numba, and an array made with `device_array` starts uninitialised
in gridlab, so reading an element before writing it is reported.
"""

import ast
import inspect
import linecache
import math
import sys
import textwrap
import types as _pytypes

import numpy as np

import _gridlab

_DTYPES = {
    "float32", "float64", "int8", "int16", "int32", "int64",
    "uint8", "uint16", "uint32", "uint64", "bool",
}


def _fail_on_host(name):
    def f(*args, **kwargs):
        raise RuntimeError(f"cuda.{name} runs inside a kernel only")
    f.__name__ = name
    f.__module__ = "numba.cuda"
    return f


for _name in [
    "grid", "gridsize", "syncthreads", "syncthreads_count", "syncthreads_and", "syncthreads_or",
    "syncwarp", "threadfence", "threadfence_block", "threadfence_system", "shfl_sync",
    "shfl_up_sync", "shfl_down_sync", "shfl_xor_sync", "all_sync", "any_sync", "ballot_sync",
    "activemask", "popc", "clz", "ffs", "brev", "selp", "fma", "cbrt",
]:
    globals()[_name] = _fail_on_host(_name)


class _Namespace:
    def __init__(self, name, members):
        self.__name__ = name
        for m in members:
            setattr(self, m, _fail_on_host(f"{name.split('.')[-1]}.{m}"))


shared = _Namespace("numba.cuda.shared", ["array"])
local = _Namespace("numba.cuda.local", ["array"])
const = _Namespace("numba.cuda.const", ["array_like"])
atomic = _Namespace("numba.cuda.atomic", [
    "add", "sub", "max", "min", "inc", "dec", "exch", "and_", "or_", "xor", "cas", "compare_and_swap",
])
threadIdx = blockIdx = blockDim = gridDim = None
warpsize = 32
laneid = None


# --- device arrays -----------------------------------------------------------------------

class DeviceNDArray:
    """An array "on the device": host memory here; gridlab holds the kernel's copy."""

    def __init__(self, host, fresh=False):
        self._host = host
        self._fresh = fresh

    shape = property(lambda self: self._host.shape)
    size = property(lambda self: self._host.size)
    ndim = property(lambda self: self._host.ndim)
    dtype = property(lambda self: self._host.dtype)
    strides = property(lambda self: self._host.strides)
    nbytes = property(lambda self: self._host.nbytes)

    def __len__(self):
        return len(self._host)

    def __getitem__(self, index):
        part = self._host[index]
        # One element is copied to the host, as Numba does: a number, not a device array.
        if not isinstance(part, np.ndarray):
            return part
        return DeviceNDArray(part, self._fresh)

    def copy_to_host_async(self, ary=None, stream=0):
        return self.copy_to_host(ary, stream)

    def get(self):
        return self._host.copy()

    T = property(lambda self: DeviceNDArray(self._host.T, self._fresh))

    def __setitem__(self, index, value):
        self._host[index] = value
        self._fresh = False

    def copy_to_host(self, ary=None, stream=0):
        if ary is None:
            return self._host.copy()
        ary[...] = self._host
        return ary

    def copy_to_device(self, ary, stream=0):
        self._host[...] = _host_of(ary)
        self._fresh = False

    def reshape(self, *shape, **kwargs):
        return DeviceNDArray(self._host.reshape(*shape, **kwargs), self._fresh)

    def ravel(self, order="C", stream=0):
        return DeviceNDArray(self._host.ravel(order), self._fresh)

    def split(self, section, stream=0):
        return [DeviceNDArray(p, self._fresh) for p in np.array_split(self._host, range(section, len(self._host), section))]

    def is_c_contiguous(self):
        return self._host.flags.c_contiguous

    def __array__(self, dtype=None, copy=None):
        return self._host if dtype is None else self._host.astype(dtype)

    def __repr__(self):
        return f"<gridlab DeviceNDArray shape={self.shape} dtype={self.dtype}>"


def _host_of(a):
    return a._host if isinstance(a, DeviceNDArray) else np.asarray(a)


def to_device(obj, stream=0, copy=True, to=None):
    if to is not None:
        to.copy_to_device(obj)
        return to
    return DeviceNDArray(np.array(obj, copy=True))


def device_array(shape, dtype=np.float64, strides=None, order="C", stream=0):
    return DeviceNDArray(np.zeros(shape, dtype=dtype, order=order), fresh=True)


def device_array_like(ary, stream=0):
    a = _host_of(ary)
    return DeviceNDArray(np.zeros(a.shape, dtype=a.dtype), fresh=True)


def pinned_array(shape, dtype=np.float64, strides=None, order="C"):
    return np.zeros(shape, dtype=dtype, order=order)


def pinned_array_like(ary):
    return np.zeros_like(ary)


mapped_array = pinned_array


def as_cuda_array(obj, sync=True):
    return obj if isinstance(obj, DeviceNDArray) else DeviceNDArray(np.asarray(obj))


def is_cuda_array(obj):
    return isinstance(obj, DeviceNDArray)


# --- the device, streams and events ---------------------------------------------------

def is_available():
    return True


def synchronize():
    """Launches run to completion in gridlab before they return."""


class _Device:
    name = b"gridlab"
    compute_capability = (9, 0)
    id = 0
    MAX_THREADS_PER_BLOCK = 1024
    MAX_BLOCK_DIM_X = 1024
    MAX_BLOCK_DIM_Y = 1024
    MAX_BLOCK_DIM_Z = 64
    MAX_GRID_DIM_X = 2147483647
    MAX_GRID_DIM_Y = 65535
    MAX_GRID_DIM_Z = 65535
    MAX_SHARED_MEMORY_PER_BLOCK = 49152
    WARP_SIZE = 32
    MULTIPROCESSOR_COUNT = 132

    def reset(self):
        pass


def get_current_device():
    return _Device()


def select_device(n):
    return _Device()


def detect():
    print("Found 1 CUDA device: gridlab (runs kernels on its simulator or the GPU)")
    return True


def close():
    pass


def list_devices():
    return [_Device()]


class _Gpus(list):
    """`cuda.gpus`: the devices, one here; `with cuda.gpus[0]:` selects it."""

    current = property(lambda self: self[0])


class _GpuDevice(_Device):
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


gpus = _Gpus([_GpuDevice()])


class _MemoryInfo(tuple):
    free = property(lambda self: self[0])
    total = property(lambda self: self[1])


class _CurrentContext:
    device = _Device()

    def get_memory_info(self):
        total = 80 * 1024 ** 3
        return _MemoryInfo((total, total))

    def synchronize(self):
        pass

    def reset(self):
        pass


def current_context(devnum=None):
    return _CurrentContext()


def profile_start():
    """The profiler's range: gridlab's `:profile` shows per-line costs instead."""


def profile_stop():
    pass


def defer_cleanup():
    return _Context()


class _Context:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


class Stream:
    def synchronize(self):
        pass

    def auto_synchronize(self):
        return _Context()


def stream():
    return Stream()


def default_stream():
    return Stream()


# gridlab's clock: the kernel time of every launch so far, in milliseconds, as the backend
# reports it (measured on the GPU, the cost model's estimate on the simulator).
_clock_ms = [0.0]


class Event:
    def __init__(self, timing=True):
        self._at = None

    def record(self, stream=0):
        self._at = _clock_ms[0]

    def synchronize(self):
        pass

    def wait(self, stream=0):
        pass

    def elapsed_time(self, end):
        if self._at is None or end._at is None:
            raise RuntimeError("record both events before asking for the time between them")
        return end._at - self._at


def event(timing=True):
    return Event(timing)


def event_elapsed_time(evtstart, evtend):
    """Milliseconds between two recorded events, as `evtstart.elapsed_time(evtend)`."""
    return evtstart.elapsed_time(evtend)


# --- kernels ---------------------------------------------------------------------------

def _decorated_source(fn, name, decorator):
    """A function's source lines with its decorators replaced by `decorator` on as many lines,
    so that gridlab sees what it reads (however the program imported `jit`) and every line
    keeps its number; with its first line and file."""
    try:
        lines, first = inspect.getsourcelines(fn)
    except (OSError, TypeError):
        raise _gridlab.KernelError(f"gridlab cannot read the source of {name}")
    lines = textwrap.dedent("".join(lines)).splitlines()
    at = next((k for k, l in enumerate(lines) if l.lstrip().startswith("def ")), 0)
    if at == 0:
        return [decorator] + lines, first - 1, inspect.getsourcefile(fn) or "<unknown>"
    return [decorator] + [""] * (at - 1) + lines[at:], first, inspect.getsourcefile(fn) or "<unknown>"


def _code_names(code):
    names = set(code.co_names)
    for c in code.co_consts:
        if isinstance(c, _pytypes.CodeType):
            names |= _code_names(c)
    return names


def _global_value(v):
    """How gridlab should see a module global a kernel reads, or None to leave it out."""
    if isinstance(v, Dispatcher):
        return {"kind": "function"}
    if isinstance(v, _pytypes.ModuleType):
        return {"kind": "module", "path": v.__name__}
    if isinstance(v, _Namespace):
        return {"kind": "module", "path": v.__name__}
    if isinstance(v, (bool, np.bool_)):
        return {"kind": "bool", "value": bool(v)}
    if isinstance(v, (int, np.integer)):
        return {"kind": "int", "value": int(v)}
    if isinstance(v, (float, np.floating)):
        return {"kind": "float", "value": float(v)}
    if isinstance(v, type) and issubclass(v, np.generic) or isinstance(v, np.dtype):
        name = np.dtype(v).name
        return {"kind": "dtype", "name": name} if name in _DTYPES else None
    if isinstance(v, np.ndarray):
        # Numba freezes a global array into the kernel as a constant; small ones travel.
        if v.dtype.name in _DTYPES and 0 < v.ndim <= 3 and v.nbytes <= 65536:
            return {"kind": "array", "dtype": v.dtype.name, "shape": list(v.shape),
                    "values": [float(x) for x in v.ravel()]}
        return None
    if isinstance(v, _pytypes.FunctionType) and v.__module__ == "__main__":
        # A plain function of the program: a kernel cannot call it, and gridlab says how.
        return {"kind": "host_function"}
    if isinstance(v, np.ufunc):
        return {"kind": "path", "path": "numpy." + v.__name__}
    module = getattr(v, "__module__", None)
    name = getattr(v, "__name__", None)
    if callable(v) and module and name:
        return {"kind": "path", "path": f"{module}.{name}"}
    return None


class Dispatcher:
    """A `@cuda.jit` function."""

    def __init__(self, fn, device, options):
        self.py_func = fn
        self.__name__ = fn.__name__
        self.__doc__ = fn.__doc__
        self.device = device
        self.options = options
        self._defined = False

    def _source(self):
        """The kernel's source, its file and its first line. Its decorators become one
        `@cuda.jit(...)` with the options gridlab reads, on as many lines, so that however the
        program imported `jit` (`from numba.cuda import jit as cuda_jit`), gridlab sees a
        kernel and every line keeps its number."""
        options = []
        if self.device:
            options.append("device=True")
        if self.options.get("fastmath"):
            options.append("fastmath=True")
        decorator = "@cuda.jit(" + ", ".join(options) + ")" if options else "@cuda.jit"
        lines, first, file = _decorated_source(self.py_func, self.__name__, decorator)
        return "\n".join(lines) + "\n", file, first

    def _define(self):
        if self._defined:
            return
        self._defined = True
        fn = self.py_func
        source, file, first = self._source()
        globs = {}
        for name in sorted(_code_names(fn.__code__)):
            if name in fn.__globals__:
                seen = _global_value(fn.__globals__[name])
                if seen is not None:
                    globs[name] = seen
                    if seen["kind"] == "function":
                        fn.__globals__[name]._define()
        # A kernel defined inside a function reads its enclosing function's names (`TPB` in
        # `main()`): Numba freezes those as it does globals.
        for name, cell in zip(fn.__code__.co_freevars, fn.__closure__ or ()):
            try:
                seen = _global_value(cell.cell_contents)
            except ValueError:
                continue
            if seen is not None:
                globs[name] = seen
                if seen["kind"] == "function":
                    cell.cell_contents._define()
        globs.update(getattr(self, "_extra_globals", {}))
        # The source's decorator reads `cuda` (see `_source`).
        globs.setdefault("cuda", {"kind": "module", "path": "numba.cuda"})
        reply, _ = _gridlab.request({
            "op": "define",
            "name": self.__name__,
            "source": source,
            "file": file,
            "line": first,
            "globals": globs,
        })
        if not reply.get("ok"):
            raise _gridlab.KernelError(reply.get("error", "gridlab refused the kernel"))

    def __getitem__(self, config):
        if self.device:
            raise TypeError(f"{self.__name__} is a device function: kernels call it, it is not launched")
        if not isinstance(config, tuple):
            config = (config,)
        if not 2 <= len(config) <= 4:
            raise ValueError("a launch is kernel[blocks, threads] or kernel[blocks, threads, stream, shared_bytes]")
        return _Launch(self, config)

    def __call__(self, *args, **kwargs):
        if self.device:
            return self.py_func(*args, **kwargs)
        raise ValueError(
            "Kernel launch configuration was not specified. Use the syntax:\n\n"
            "kernel_function[blockspergrid, threadsperblock](arg0, arg1, ..., argn)"
        )

    # What Numba's dispatcher answers about its compiled code: here, where to find the C.
    def specialize(self, *args):
        return self

    def inspect_types(self, file=None, **kwargs):
        print(f"gridlab types {self.__name__} at each launch; `:cuda {self.__name__}` at the prompt shows its CUDA C",
              file=file)

    def inspect_asm(self, signature=None):
        return {} if signature is None else ""

    inspect_llvm = inspect_sass = inspect_asm

    @property
    def definitions(self):
        return {}

    overloads = definitions

    def forall(self, ntasks, tpb=0, stream=0, sharedmem=0):
        threads = tpb or 128
        return _Launch(self, ((ntasks + threads - 1) // threads, threads, stream, sharedmem))


def jit(func_or_sig=None, device=False, **options):
    if callable(func_or_sig) and not isinstance(func_or_sig, (str, list, tuple)):
        return Dispatcher(func_or_sig, device, options)

    def decorate(fn):
        return Dispatcher(fn, device, options)

    return decorate


def _dims(v, what):
    if isinstance(v, (int, np.integer)):
        return [int(v)]
    if isinstance(v, (tuple, list)) and 1 <= len(v) <= 3 and all(isinstance(x, (int, np.integer)) for x in v):
        return [int(x) for x in v]
    raise TypeError(f"the {what} of a launch is an int or a tuple of 1 to 3 ints, not {v!r}")


def _arg_names(frame, nargs):
    """The names the call site gives the arguments: `kernel[b, t](x, y)` (or
    `kernel.forall(n)(x, y)`) gives x and y."""
    filename, line = frame.f_code.co_filename, frame.f_lineno
    text = linecache.getline(filename, line).strip()
    names = [None] * nargs
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return names
    for node in ast.walk(tree):
        forall = (isinstance(node, ast.Call) and isinstance(node.func, ast.Call)
                  and isinstance(node.func.func, ast.Attribute) and node.func.func.attr == "forall")
        launch = isinstance(node, ast.Call) and isinstance(node.func, ast.Subscript)
        if (launch or forall) and len(node.args) == nargs:
            for i, a in enumerate(node.args):
                if isinstance(a, ast.Name):
                    names[i] = a.id
            break
    return names


class _Launch:
    def __init__(self, kernel, config):
        self.kernel = kernel
        self.grid = _dims(config[0], "grid")
        self.block = _dims(config[1], "block")
        self.shared = int(config[3]) if len(config) > 3 else 0

    def __call__(self, *args):
        frame = sys._getframe(1)
        return self._run(args, frame, _arg_names(frame, len(args)))

    def _run(self, args, frame, names):
        """Launch with `args`, reported at `frame`'s line; `names` are the call site's names."""
        self.kernel._define()
        headers, payload, arrays = [], [], []
        for i, a in enumerate(args):
            name = names[i] or f"arg{i}"
            if isinstance(a, DeviceNDArray) or isinstance(a, np.ndarray):
                host = _host_of(a)
                data = np.ascontiguousarray(host)
                if data.dtype.name not in _DTYPES:
                    raise TypeError(f"gridlab's kernels take arrays of numbers, not {data.dtype} ({name})")
                headers.append({
                    "kind": "array", "name": name, "dtype": data.dtype.name,
                    "shape": list(data.shape), "fresh": bool(getattr(a, "_fresh", False)),
                })
                payload.append(data.tobytes())
                arrays.append((a, host, data))
            elif isinstance(a, (bool, np.bool_)):
                headers.append({"kind": "scalar", "name": name, "dtype": "bool", "value": bool(a)})
            elif isinstance(a, np.generic) and np.dtype(type(a)).name in _DTYPES:
                value = a.item()
                headers.append({"kind": "scalar", "name": name, "dtype": np.dtype(type(a)).name, "value": value})
            elif isinstance(a, int):
                headers.append({"kind": "scalar", "name": name, "dtype": "int64", "value": a})
            elif isinstance(a, float):
                headers.append({"kind": "scalar", "name": name, "dtype": "float64", "value": a})
            else:
                which = f"`{names[i]}`" if names[i] else f"argument {i + 1}"
                hint = ""
                if isinstance(a, (list, tuple)):
                    # Numba refuses a list too; the array is what a kernel indexes.
                    hint = f": make it an array first, `np.array({names[i] or '[...]'}, dtype=np.float32)`"
                raise TypeError(f"a kernel takes arrays and numbers, and {which} is a {type(a).__name__}{hint}")
        reply, data = _gridlab.request({
            "op": "launch",
            "kernel": self.kernel.__name__,
            "grid": self.grid,
            "block": self.block,
            "shared": self.shared,
            "file": frame.f_code.co_filename,
            "line": frame.f_lineno,
            "args": headers,
        }, b"".join(payload))
        if not reply.get("ok"):
            raise _gridlab.KernelError(reply.get("error", "the launch failed"))
        _clock_ms[0] += float(reply.get("time_ms", 0.0))
        at = 0
        for (orig, host, sent) in arrays:
            n = sent.nbytes
            result = np.frombuffer(data[at:at + n], dtype=sent.dtype).reshape(sent.shape)
            at += n
            host[...] = result
            if isinstance(orig, DeviceNDArray):
                orig._fresh = False


# --- @vectorize(..., target='cuda') ---------------------------------------------------------

class CudaUFunc:
    """A scalar function under `@vectorize(target='cuda')`: each call runs one kernel that
    applies it to every element, the function lowered as a device function (as Numba does)."""

    def __init__(self, fn, signatures):
        self.py_func = fn
        self.__name__ = fn.__name__
        self.__doc__ = fn.__doc__
        self._signatures = [s for s in (signatures or []) if isinstance(s, str)]
        self._kernels = {}

    def _out_dtype(self, dtypes):
        """The result type the signatures give these argument types (the first that takes them)."""
        names = [np.dtype(d).name for d in dtypes]
        fallback = None
        for sig in self._signatures:
            ret, _, params = sig.partition("(")
            params = [p.strip() for p in params.rstrip(")").split(",") if p.strip()]
            ret = ret.strip()
            if ret not in _DTYPES and ret != "bool":
                continue
            fallback = fallback or ret
            if params == names:
                return np.dtype(ret)
        if fallback is not None:
            return np.dtype(fallback)
        return np.result_type(*dtypes)

    def _kernel(self, kinds):
        """The kernel for arguments that are arrays (True) or numbers (False)."""
        if kinds in self._kernels:
            return self._kernels[kinds]
        fn = self.py_func
        # The function becomes a device function, each of its lines keeping its number.
        lines, first, file = _decorated_source(fn, self.__name__, "@cuda.jit(device=True)")
        params = [f"x{k}" for k in range(len(kinds))]
        reads = [f"x{k}[i]" if a else f"x{k}" for k, a in enumerate(kinds)]
        name = f"{self.__name__}_ufunc"
        lines += [
            "",
            "@cuda.jit",
            f"def {name}({', '.join(params + ['out'])}):",
            "    i = cuda.grid(1)",
            "    if i < out.size:",
            f"        out[i] = {self.__name__}({', '.join(reads)})",
        ]
        source = "\n".join(lines) + "\n"
        glob = dict(fn.__globals__)

        def placeholder(*args):
            pass

        placeholder.__name__ = name
        k = Dispatcher(placeholder, False, {})
        k.__name__ = name
        k._source = lambda: (source, file, first)
        k.py_func = _pytypes.FunctionType(fn.__code__, glob, name, None, fn.__closure__)
        # The generated kernel reads `cuda`, whatever the program imported it as.
        k._extra_globals = {"cuda": {"kind": "module", "path": "numba.cuda"}}
        self._kernels[kinds] = k
        return k

    def __call__(self, *args, out=None, stream=0):
        frame = sys._getframe(1)
        device = any(isinstance(a, DeviceNDArray) for a in args) or isinstance(out, DeviceNDArray)
        hosts = [_host_of(a) if isinstance(a, (DeviceNDArray, np.ndarray, list, tuple)) else a for a in args]
        arrays = [h for h in hosts if isinstance(h, np.ndarray)]
        shape = np.broadcast_shapes(*[a.shape for a in arrays]) if arrays else ()
        # Every argument travels as an array of the broadcast shape (a number too), so one
        # kernel serves every call of the ufunc.
        flat, kinds, dtypes = [], [], []
        for h in hosts:
            h = np.asarray(h)
            flat.append(np.array(np.broadcast_to(h, shape)).ravel())
            kinds.append(True)
            dtypes.append(h.dtype)
        result = np.empty(int(np.prod(shape)) if shape else 1, dtype=self._out_dtype(dtypes))
        kernel = self._kernel(tuple(kinds))
        names = [f"x{k}" for k in range(len(args))]
        threads = 128
        blocks = max(1, (result.size + threads - 1) // threads)
        _Launch(kernel, (blocks, threads))._run(flat + [result], frame, names + ["out"])
        result = result.reshape(shape) if shape else result[0]
        if out is not None:
            _host_of(out)[...] = result
            if isinstance(out, DeviceNDArray):
                out._fresh = False
            return out
        return DeviceNDArray(result) if device else result


# --- @cuda.reduce ----------------------------------------------------------------------------

class Reduce:
    """`@cuda.reduce`: a binary function folded over an array. gridlab runs the fold in the
    program's Python (the same result as Numba's tree on the GPU for associative functions)."""

    def __init__(self, functor):
        self._functor = functor
        self.__name__ = getattr(functor, "__name__", "reduce")

    def __call__(self, arr, size=None, res=None, init=0, stream=0):
        host = _host_of(arr).ravel()
        if size is not None:
            host = host[:size]
        f = self._functor
        f = f.py_func if isinstance(f, Dispatcher) else f
        if host.size == 0:
            result = init
        else:
            # Pairwise, as a GPU's tree reduction combines (and as accurate for float sums).
            vals = host.copy()
            while vals.size > 1:
                carry = vals[-1:] if vals.size % 2 else vals[:0]
                even, odd = vals[0:vals.size - carry.size:2], vals[1::2]
                try:
                    nxt = np.asarray(f(even, odd), dtype=vals.dtype)
                    if nxt.shape != even.shape:
                        raise ValueError("not elementwise")
                except Exception:  # noqa: BLE001 - a function of scalars only (`max(a, b)`)
                    nxt = np.array([f(x, y) for x, y in zip(even, odd)], dtype=vals.dtype)
                vals = np.concatenate([nxt, carry])
            # Numba folds `init` into the result too.
            result = f(vals[0], host.dtype.type(init))
        result = host.dtype.type(result) if host.size else result
        if res is not None:
            _host_of(res)[0] = result
            if isinstance(res, DeviceNDArray):
                res._fresh = False
            return None
        return result


def reduce(fn):
    return Reduce(fn)
