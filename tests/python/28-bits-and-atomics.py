# Numba's bit intrinsics, the integer atomics (exch, inc, dec, compare_and_swap on an
# element reached through a slice `a[k:]`), block votes and a local array, checked
# against what Python computes.
from numba import cuda, int32
import numpy as np


@cuda.jit
def bits(a, out, cnt):
    i = cuda.grid(1)
    x = a[i]
    out[i, 0] = cuda.popc(x)
    out[i, 1] = cuda.clz(x)
    out[i, 2] = cuda.ffs(x)
    out[i, 3] = cuda.brev(x)
    cuda.atomic.exch(cnt, 1, 7)
    cuda.atomic.inc(cnt, 2, 1000)
    cuda.atomic.dec(cnt, 3, 1000)
    cuda.atomic.compare_and_swap(cnt[4:], 0, i + 1)
    n = cuda.syncthreads_count(x > 5)
    anyone = cuda.syncthreads_or(x > 30)
    everyone = cuda.syncthreads_and(x >= 0)
    if i == 0:
        cnt[5] = n
        cnt[6] = anyone
        cnt[7] = everyone
    loc = cuda.local.array(4, dtype=int32)
    for k in range(4):
        loc[k] = x * k
    out[i, 4] = loc[3]


a = np.arange(32, dtype=np.uint32)
out = np.zeros((32, 5), dtype=np.uint32)
cnt = np.zeros(8, dtype=np.uint32)
bits[1, 32](a, out, cnt)
print(out[:4])
print(cnt)
for x in range(32):
    want = [bin(x).count("1"), 32 - x.bit_length(), (x & -x).bit_length(),
            int(format(x, "032b")[::-1], 2), 3 * x]
    assert out[x].tolist() == want, (x, out[x].tolist(), want)
# exch leaves 7; inc counts 32 up from 0; dec wraps 0 to 1000 then counts down 31;
# the first compare_and_swap on cnt[4] wins; 26 values above 5, one above 30, all >= 0.
assert cnt.tolist()[1:] == [7, 32, 969, cnt[4], 26, 1, 1], cnt
assert 1 <= cnt[4] <= 32
