// Where a small launch's time goes, for docs/gpu.md's "Small launches": the CUDA calls a launch
// of gridlab's worker makes over 2^10 floats (the upload and download through pinned memory, the
// timing events, the guard check kernel, strided or unrolled, or a copy-out kernel instead of the
// download, and the sequence the worker used before), beside a bare launch and wait as CuPy makes
// it; two launches in flight, as the worker queues the next launch before it waits for the one
// ahead (each with its own events and flags, waited for by its done event); and a pipe round
// trip between two processes, both sleeping or both spinning. Each line is the mean of 2,000
// after 50 to warm up. Build and run on the GPU machine:
//
//     nvcc -O2 -arch=sm_90 -o /tmp/gpu_launch_probe bench/gpu_launch_probe.cu && /tmp/gpu_launch_probe
#include <cuda_runtime.h>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <unistd.h>
#include <sys/wait.h>

__global__ void bump(float *a, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) a[i] += 1.0f; }
struct Guards { const unsigned char *at[64]; };
__global__ void __launch_bounds__(512) check(Guards g, unsigned count, volatile unsigned *flags) {
    const unsigned long long *w = (const unsigned long long *)g.at[blockIdx.x];
    unsigned long long d = 0;
#pragma unroll
    for (int k = 0; k < 16; k++) d |= w[k * 512 + threadIdx.x] ^ 0xa5a5a5a5a5a5a5a5ull;
    int c = __syncthreads_or(d != 0);
    if (threadIdx.x == 0) flags[blockIdx.x] = c;
}
__global__ void check_loop(Guards g, unsigned count, volatile unsigned *flags) {
    const unsigned long long *w = (const unsigned long long *)g.at[blockIdx.x];
    unsigned long long d = 0;
    for (unsigned i = threadIdx.x; i < 8192; i += blockDim.x) d |= w[i] ^ 0xa5a5a5a5a5a5a5a5ull;
    int c = __syncthreads_or(d != 0);
    if (threadIdx.x == 0) flags[blockIdx.x] = c;
}
__global__ void copy_out(const float *src, float *dst, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) dst[i] = src[i]; }

using clk = std::chrono::steady_clock;
static double us(clk::time_point a) { return std::chrono::duration<double, std::micro>(clk::now() - a).count(); }

int main() {
    const int n = 1024, N = 2000;
    const size_t G = 65536;
    unsigned char *buf; cudaMalloc(&buf, 2 * G + n * 4);
    cudaMemset(buf, 0xa5, 2 * G + n * 4);
    float *a = (float *)(buf + G);
    float *host; cudaHostAlloc(&host, n * 4, cudaHostAllocMapped);
    unsigned *flags; cudaHostAlloc(&flags, 1024, cudaHostAllocMapped);
    float *hostdev; cudaHostGetDevicePointer(&hostdev, host, 0);
    unsigned *flagsdev; cudaHostGetDevicePointer(&flagsdev, flags, 0);
    float *pageable = new float[n]();
    cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
    Guards g = {}; g.at[0] = buf; g.at[1] = buf + G + n * 4;
    cudaStream_t s = 0;
    auto run = [&](const char *what, auto body) {
        for (int i = 0; i < 50; i++) body();
        auto t = clk::now();
        for (int i = 0; i < N; i++) body();
        printf("%-58s %6.1f us\n", what, us(t) / N);
    };
    run("launch + sync (CuPy waiting)", [&] { bump<<<4, 256, 0, s>>>(a, n); cudaStreamSynchronize(s); });
    run("htod pageable sync + launch + sync", [&] { cudaMemcpy(a, pageable, n * 4, cudaMemcpyHostToDevice); bump<<<4, 256, 0, s>>>(a, n); cudaStreamSynchronize(s); });
    run("htod pinned async + launch + dtoh async + sync", [&] { cudaMemcpyAsync(a, host, n * 4, cudaMemcpyHostToDevice, s); bump<<<4, 256, 0, s>>>(a, n); cudaMemcpyAsync(host, a, n * 4, cudaMemcpyDeviceToHost, s); cudaStreamSynchronize(s); });
    run(" + events", [&] { cudaMemcpyAsync(a, host, n * 4, cudaMemcpyHostToDevice, s); cudaEventRecord(e0, s); bump<<<4, 256, 0, s>>>(a, n); cudaEventRecord(e1, s); cudaMemcpyAsync(host, a, n * 4, cudaMemcpyDeviceToHost, s); cudaStreamSynchronize(s); float ms; cudaEventElapsedTime(&ms, e0, e1); });
    run(" + check kernel (unrolled, 512)", [&] { cudaMemcpyAsync(a, host, n * 4, cudaMemcpyHostToDevice, s); cudaEventRecord(e0, s); bump<<<4, 256, 0, s>>>(a, n); cudaEventRecord(e1, s); check<<<2, 512, 0, s>>>(g, 2, flagsdev); cudaMemcpyAsync(host, a, n * 4, cudaMemcpyDeviceToHost, s); cudaStreamSynchronize(s); float ms; cudaEventElapsedTime(&ms, e0, e1); });
    run(" + check kernel (strided loop, 256)", [&] { cudaMemcpyAsync(a, host, n * 4, cudaMemcpyHostToDevice, s); cudaEventRecord(e0, s); bump<<<4, 256, 0, s>>>(a, n); cudaEventRecord(e1, s); check_loop<<<2, 256, 0, s>>>(g, 2, flagsdev); cudaMemcpyAsync(host, a, n * 4, cudaMemcpyDeviceToHost, s); cudaStreamSynchronize(s); float ms; cudaEventElapsedTime(&ms, e0, e1); });
    // A buffer the worker kept on the device from the last launch: nothing goes up.
    run("kept on the device: events + launch + check + dtoh + sync", [&] { cudaEventRecord(e0, s); bump<<<4, 256, 0, s>>>(a, n); cudaEventRecord(e1, s); check<<<2, 512, 0, s>>>(g, 2, flagsdev); cudaMemcpyAsync(host, a, n * 4, cudaMemcpyDeviceToHost, s); cudaStreamSynchronize(s); float ms; cudaEventElapsedTime(&ms, e0, e1); });
    run("kept, no timing events: launch + check + dtoh + sync", [&] { bump<<<4, 256, 0, s>>>(a, n); check<<<2, 512, 0, s>>>(g, 2, flagsdev); cudaMemcpyAsync(host, a, n * 4, cudaMemcpyDeviceToHost, s); cudaStreamSynchronize(s); });
    run("kept, no events, no guard check: launch + dtoh + sync", [&] { bump<<<4, 256, 0, s>>>(a, n); cudaMemcpyAsync(host, a, n * 4, cudaMemcpyDeviceToHost, s); cudaStreamSynchronize(s); });
    run("htod async + events + launch + check + copy-out kernel (no dtoh)", [&] { cudaMemcpyAsync(a, host, n * 4, cudaMemcpyHostToDevice, s); cudaEventRecord(e0, s); bump<<<4, 256, 0, s>>>(a, n); cudaEventRecord(e1, s); check<<<2, 512, 0, s>>>(g, 2, flagsdev); copy_out<<<4, 256, 0, s>>>(a, hostdev, n); cudaStreamSynchronize(s); float ms; cudaEventElapsedTime(&ms, e0, e1); });
    run("old: htod sync, events, launch, event sync, ctx sync, 3 dtoh, sync", [&] { static unsigned char *stage = nullptr; if (!stage) cudaHostAlloc(&stage, 2 * G + n * 4, 0); cudaMemcpy(a, pageable, n * 4, cudaMemcpyHostToDevice); cudaEventRecord(e0, s); bump<<<4, 256, 0, s>>>(a, n); cudaEventRecord(e1, s); cudaEventSynchronize(e1); float ms; cudaEventElapsedTime(&ms, e0, e1); cudaDeviceSynchronize(); cudaMemcpyAsync(stage, buf, G, cudaMemcpyDeviceToHost, s); cudaMemcpyAsync(stage + G, buf + G + n * 4, G, cudaMemcpyDeviceToHost, s); cudaMemcpyAsync(stage + 2 * G, a, n * 4, cudaMemcpyDeviceToHost, s); cudaStreamSynchronize(s); });
    // Two launches in flight, as a worker that queues the next launch before it waits for the
    // one ahead: each launch with its own events, check flags and done event; per launch.
    {
        cudaEvent_t ev[2][3];
        for (auto &slot : ev) for (auto &e : slot) cudaEventCreate(&e);
        auto queue = [&](int k) { cudaEventRecord(ev[k][0], s); bump<<<4, 256, 0, s>>>(a, n); cudaEventRecord(ev[k][1], s); check<<<2, 512, 0, s>>>(g, 2, flagsdev + 64 * k); cudaEventRecord(ev[k][2], s); };
        auto wait = [&](int k, bool spin) { if (spin) while (cudaEventQuery(ev[k][2]) == cudaErrorNotReady) {} else cudaEventSynchronize(ev[k][2]); float ms; cudaEventElapsedTime(&ms, ev[k][0], ev[k][1]); };
        for (int spin = 0; spin < 2; spin++) {
            int k = 0;
            queue(0);
            run(spin ? "two in flight: events + launch + check, cuEventQuery spin" : "two in flight: events + launch + check, cuEventSynchronize", [&] { queue(1 - k); wait(k, spin); k = 1 - k; });
            wait(k, spin);
        }
        auto queue_bare = [&](int k) { bump<<<4, 256, 0, s>>>(a, n); check<<<2, 512, 0, s>>>(g, 2, flagsdev + 64 * k); cudaEventRecord(ev[k][2], s); };
        int k = 0;
        queue_bare(0);
        run("two in flight: launch + check + done event, no timing", [&] { queue_bare(1 - k); cudaEventSynchronize(ev[k][2]); k = 1 - k; });
        cudaEventSynchronize(ev[k][2]);
    }
    // Pipe round trips between two processes: 8 bytes each way.
    for (int spin = 0; spin < 2; spin++) {
        int req[2], ans[2];
        if (pipe(req) != 0 || pipe(ans) != 0) return 1;
        pid_t child = fork();
        char b[8] = {};
        if (spin) { fcntl(req[0], F_SETFL, O_NONBLOCK); fcntl(ans[0], F_SETFL, O_NONBLOCK); }
        auto get = [&](int fd) {
            if (!spin) { if (read(fd, b, 8) != 8) _exit(1); return; }
            while (read(fd, b, 8) != 8) {}
        };
        if (child == 0) { for (int i = 0; i < N + 50; i++) { get(req[0]); if (write(ans[1], b, 8) != 8) _exit(1); } _exit(0); }
        for (int i = 0; i < 50; i++) { if (write(req[1], b, 8) != 8) return 1; get(ans[0]); }
        auto t = clk::now();
        for (int i = 0; i < N; i++) { if (write(req[1], b, 8) != 8) return 1; get(ans[0]); }
        printf("%-58s %6.1f us\n", spin ? "pipe round trip, both sides spinning" : "pipe round trip, both sides blocking", us(t) / N);
        waitpid(child, nullptr, 0);
    }
    return 0;
}
