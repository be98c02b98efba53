// What the bus costs on this machine, for docs/gpu.md's "The data path": 256 MiB copies between
// the device and a memfd region (as gridlab's shared buffers are), pageable and pinned, and what
// pinning costs. Build and run on the GPU machine:
//
//     nvcc -O2 -o /tmp/gpu_copies bench/gpu_copies.cu && /tmp/gpu_copies
#include <chrono>
#include <cstdio>
#include <cuda_runtime.h>
#include <sys/mman.h>
#include <unistd.h>

static double now() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

#define TIMED(label, stmt)                                                                         \
    do {                                                                                           \
        cudaDeviceSynchronize();                                                                   \
        double t = now();                                                                          \
        stmt;                                                                                      \
        cudaDeviceSynchronize();                                                                   \
        printf("%-44s %8.2f ms\n", label, (now() - t) * 1e3);                                     \
    } while (0)

static char *region(size_t n) {
    int fd = memfd_create("gpu_copies", 0);
    if (fd < 0 || ftruncate(fd, n) != 0) return nullptr;
    void *p = mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    return p == MAP_FAILED ? nullptr : (char *)p;
}

int main() {
    size_t n = 256u << 20;
    void *d;
    if (cudaMalloc(&d, n) != cudaSuccess) return 1;
    cudaMemset(d, 1, n);
    char *p = region(n), *q = region(n);
    if (!p || !q) return 1;
    TIMED("D2H pageable, fresh pages", cudaMemcpy(p, d, n, cudaMemcpyDeviceToHost));
    TIMED("D2H pageable", cudaMemcpy(p, d, n, cudaMemcpyDeviceToHost));
    TIMED("H2D pageable", cudaMemcpy(d, p, n, cudaMemcpyHostToDevice));
    TIMED("cudaHostRegister, pages there", cudaHostRegister(p, n, 0));
    TIMED("D2H pinned", cudaMemcpy(p, d, n, cudaMemcpyDeviceToHost));
    TIMED("H2D pinned", cudaMemcpy(d, p, n, cudaMemcpyHostToDevice));
    TIMED("cudaHostUnregister", cudaHostUnregister(p));
    TIMED("cudaHostRegister, fresh pages", cudaHostRegister(q, n, 0));
    TIMED("D2H pinned, just registered", cudaMemcpy(q, d, n, cudaMemcpyDeviceToHost));
    cudaHostUnregister(q);
    return 0;
}
