# A first Numba program: device arrays, cuda.grid(1), a guard, copy_to_host.
import numba
import numpy as np

@numba.cuda.jit
def add_arrays_cuda(x, y, out):
    idx = numba.cuda.grid(1)
    if idx < out.size:
        out[idx] = x[idx] + y[idx]

host_x = np.arange(100000, dtype=np.float32)
host_y = np.arange(100000, dtype=np.float32) * 2
device_x = numba.cuda.to_device(host_x)
device_y = numba.cuda.to_device(host_y)
device_out = numba.cuda.device_array_like(host_x)

threads_per_block = 128
blocks_per_grid = (host_x.size + (threads_per_block - 1)) // threads_per_block
add_arrays_cuda[blocks_per_grid, threads_per_block](device_x, device_y, device_out)
host_out = device_out.copy_to_host()
print(host_out[:10])
assert np.allclose(host_out, host_x + host_y)
