"""Numba's scalar types, for dtypes (`cuda.shared.array(16, float32)`), host conversions
(`float32(2.5)` is numpy's `float32`) and signatures (`void(float32[:], int32)`, `float32[:, :]`).

Each type is a subclass of numpy's scalar type, so numpy takes it wherever it takes a dtype;
subscripting one gives an array type and calling one with types gives a signature, as in Numba.
gridlab types kernels from their launches' arguments, so a signature is kept but not needed.
"""

import numpy as _np


class ArrayType:
    """`float32[:]`, `float32[:, ::1]`: an array type in a signature."""

    def __init__(self, dtype, ndim, layout="A"):
        self.dtype = dtype
        self.ndim = ndim
        self.layout = layout

    def __repr__(self):
        return f"array({_np.dtype(self.dtype).name}, {self.ndim}d, {self.layout})"


class Signature:
    """`void(float32[:], int32)`: a kernel's or device function's signature."""

    def __init__(self, return_type, args):
        self.return_type = return_type
        self.args = tuple(args)

    def __repr__(self):
        return f"{self.return_type!r}{self.args!r}"


def _is_type(x):
    return isinstance(x, (ArrayType, _NumbaScalar)) or x is None


class _NumbaScalar(type):
    """The metaclass of Numba's scalar types: `float32[:]` and `float32(int32)` are types."""

    def __getitem__(cls, index):
        ndim = len(index) if isinstance(index, tuple) else 1
        return ArrayType(cls, ndim)

    def __call__(cls, *args, **kwargs):
        if args and all(_is_type(a) for a in args):
            return Signature(cls, args)
        return cls.__mro__[1](*args, **kwargs)

    def __repr__(cls):
        return cls.__name__


def _scalar(name, base):
    return _NumbaScalar(name, (base,), {"__module__": "numba.types"})


float32 = f4 = _scalar("float32", _np.float32)
float64 = f8 = double = _scalar("float64", _np.float64)
int8 = i1 = _scalar("int8", _np.int8)
int16 = i2 = _scalar("int16", _np.int16)
int32 = i4 = _scalar("int32", _np.int32)
int64 = i8 = intp = _scalar("int64", _np.int64)
uint8 = u1 = _scalar("uint8", _np.uint8)
uint16 = u2 = _scalar("uint16", _np.uint16)
uint32 = u4 = _scalar("uint32", _np.uint32)
uint64 = u8 = uintp = _scalar("uint64", _np.uint64)
boolean = b1 = _scalar("boolean", _np.bool_)


class _Void:
    """`void`: a kernel's return type; `void(float32[:])` is a signature."""

    def __call__(self, *args):
        return Signature(None, args)

    def __repr__(self):
        return "none"


void = none = _Void()
