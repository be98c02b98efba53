"""gridlab's `numba.cuda.random`: Numba's xoroshiro128+ generator, the same numbers.

`create_xoroshiro128p_states(n, seed)` gives each of n threads its own stream, as Numba does:
the state seeded by SplitMix64, each thread's state 2^64 steps past the previous one. The
states are an (n, 2) array of uint64 (Numba's has fields `s0`, `s1`; a kernel only passes it
on). gridlab lowers `xoroshiro128p_uniform_float32(states, i)` and its siblings to CUDA C that
advances thread i's state as Numba's does.
"""

import numpy as np

from numba.cuda import DeviceNDArray, _fail_on_host

_MASK = (1 << 64) - 1
_JUMP = (0xBEAC0467EBA5FACB, 0xD86B048B86AA9922)


def _next(s):
    s0, s1 = s
    result = (s0 + s1) & _MASK
    s1 ^= s0
    s[0] = (((s0 << 55) | (s0 >> 9)) & _MASK) ^ s1 ^ ((s1 << 14) & _MASK)
    s[1] = ((s1 << 36) | (s1 >> 28)) & _MASK
    return result


def _jump(s):
    a = b = 0
    for word in _JUMP:
        for bit in range(64):
            if (word >> bit) & 1:
                a ^= s[0]
                b ^= s[1]
            _next(s)
    s[0], s[1] = a, b


def _seeded(seed):
    z = (int(seed) + 0x9E3779B97F4A7C15) & _MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
    z ^= z >> 31
    return [z, z]


def init_xoroshiro128p_states(states, seed, subsequence_start=0, stream=0):
    host = states._host if isinstance(states, DeviceNDArray) else states
    s = _seeded(int(seed) & _MASK)
    for _ in range(int(subsequence_start)):
        _jump(s)
    for i in range(host.shape[0]):
        if i > 0:
            _jump(s)
        host[i, 0] = s[0]
        host[i, 1] = s[1]
    if isinstance(states, DeviceNDArray):
        states._fresh = False


def create_xoroshiro128p_states(n, seed, subsequence_start=0, stream=0):
    states = DeviceNDArray(np.zeros((int(n), 2), dtype=np.uint64))
    init_xoroshiro128p_states(states, seed, subsequence_start, stream)
    return states


for _name in [
    "xoroshiro128p_uniform_float32", "xoroshiro128p_uniform_float64",
    "xoroshiro128p_normal_float32", "xoroshiro128p_normal_float64", "xoroshiro128p_next",
]:
    _f = _fail_on_host(_name)
    _f.__module__ = "numba.cuda.random"
    globals()[_name] = _f
