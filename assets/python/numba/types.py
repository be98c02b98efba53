"""Numba's scalar types, for dtypes (`cuda.shared.array(16, float32)`) and host conversions."""

import numpy as _np

float32 = f4 = _np.float32
float64 = f8 = double = _np.float64
int8 = i1 = _np.int8
int16 = i2 = _np.int16
int32 = i4 = _np.int32
int64 = i8 = intp = _np.int64
uint8 = u1 = _np.uint8
uint16 = u2 = _np.uint16
uint32 = u4 = _np.uint32
uint64 = u8 = uintp = _np.uint64
boolean = b1 = _np.bool_
void = None
