#!/usr/bin/env python
# coding: utf-8
# A course notebook turned into a script by `jupyter nbconvert --to script`: its magics
# become get_ipython() calls, which gridlab's host Python answers (%timeit runs once).

# In[1]:


import numpy as np
from numba import cuda
from numba.cuda import jit as cuda_jit
get_ipython().run_line_magic('matplotlib', 'inline')


# In[2]:


@cuda_jit
def add_kernel(x, y, out):
    idx = cuda.grid(1)
    stride = cuda.gridsize(1)
    for i in range(idx, x.shape[0], stride):
        out[i] = x[i] + y[i]


@cuda.reduce
def sum_reduce(a, b):
    return a + b


# In[3]:


n = 4096
x = np.arange(n).astype(np.float32)
y = 2 * x
out = cuda.device_array_like(x)
get_ipython().run_line_magic('timeit', '-n 1 -r 1 add_kernel[30, 128](x, y, out); cuda.synchronize()')
print(out.copy_to_host()[:5])
print("sum:", sum_reduce(out))
assert np.isclose(sum_reduce(out), 3 * x.sum(), rtol=1e-5)
get_ipython().system('nvidia-smi')


# In[4]:


def main():
    TPB = 32

    @cuda.jit
    def block_max(a, res):
        s = cuda.shared.array(TPB, np.float32)
        t = cuda.threadIdx.x
        s[t] = a[cuda.grid(1)]
        cuda.syncthreads()
        if t == 0:
            m = s[0]
            for k in range(1, TPB):
                m = max(m, s[k])
            res[cuda.blockIdx.x] = m

    a = np.linspace(0, 1, 4 * TPB, dtype=np.float32)
    res = np.zeros(4, dtype=np.float32)
    block_max[4, TPB](a, res)
    np.testing.assert_array_equal(res, a.reshape(4, TPB).max(axis=1))
    print("block maxima:", res)


main()
