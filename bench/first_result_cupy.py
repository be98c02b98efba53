"""CuPy's equivalent of bench/first-result.gridlab: import, compile a RawKernel, launch, check."""
import cupy as cp
src = r'''extern "C" __global__ void k1(float* a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) a[i] += 0.5f;
}'''
k = cp.RawKernel(src, "k1")
a = cp.zeros(1 << 20, cp.float32)
k((4096,), (256,), (a, cp.int32(1 << 20)))
assert bool((a == 0.5).all())
