//! Simulator speed: wall time and threads per second on the lesson kernels, with findings on
//! and off. Run through `bash bench/run`, which puts Numba's CUDA simulator beside it.
//!
//! Prints one JSON object per case on stdout (for bench/run to tabulate) and a readable table
//! on stderr.

use std::time::{Duration, Instant};

use gridlab::backend::sim::{Schedule, SimBackend, SimConfig};
use gridlab::backend::{Arg, Backend, Dim3, LaunchBuffers, LaunchSpec, ScalarArg};
use gridlab::buffer::{Buffer, Num, Shape};
use gridlab::cuda::Module;
use gridlab::diag::SourceMap;
use gridlab::dtype::DType;

const KERNELS: &str = r#"
__global__ void add_half(float *a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) a[i] += 0.5f;
}
__global__ void add_half_everywhere(float *a, int n) {
    for (int i = 0; i < n; i++) {
        a[i] += 0.5f;
    }
}
__global__ void block_sum(const float *in, float *out, int n) {
    __shared__ float s[256];
    unsigned tid = threadIdx.x;
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    s[tid] = i < n ? in[i] : 0.0f;
    __syncthreads();
    for (unsigned stride = blockDim.x / 2; stride > 0; stride >>= 1) {
        if (tid < stride) s[tid] += s[tid + stride];
        __syncthreads();
    }
    if (tid == 0) atomicAdd(out, s[0]);
}
__global__ void matmul(const float *A, const float *B, float *C, int N) {
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < N && col < N) {
        float acc = 0.0f;
        for (int k = 0; k < N; ++k) acc += A[row * N + k] * B[k * N + col];
        C[row * N + col] = acc;
    }
}
// The Python kernels' meaning in C, written by hand: Numba's `0.5` is a double and its
// indices are 64-bit, so these, not the float kernels above, are their twins.
__global__ void add_half_numba(float *a, long long n) {
    long long i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) a[i] += 0.5;
}
__global__ void add_half_everywhere_numba(float *a, long long n) {
    for (long long i = 0; i < n; i++) {
        a[i] += 0.5;
    }
}
__global__ void window_sum(const float *in, float *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float w[8];
    for (int k = 0; k < 8; k++) w[k] = in[(i + k) % n];
    float s = 0.0f;
    for (int k = 0; k < 8; k++) s += w[k];
    out[i] = s;
}
"#;

/// The same kernels in Numba's Python: lowered to CUDA C by gridlab's Python front end, so they
/// should run at the speed of their C twins (the table says how close).
const PY_KERNELS: &str = r#"
from numba import cuda

@cuda.jit
def add_half_py(a):
    i = cuda.grid(1)
    if i < a.size:
        a[i] += 0.5

@cuda.jit
def add_half_everywhere_py(a):
    for i in range(a.size):
        a[i] += 0.5
"#;

struct Case {
    name: &'static str,
    /// A Python kernel (or its C twin): its one array's length is passed as a `long long`.
    python: bool,
    kernel: &'static str,
    grid: Dim3,
    block: Dim3,
    /// Buffers: (length, fill).
    buffers: Vec<(usize, f32)>,
    /// Scalar int argument appended after the buffers.
    n: i32,
    runs: usize,
}

fn cases() -> Vec<Case> {
    let n20 = 1 << 20;
    vec![
        Case {
            name: "add_half 2^20, <<<4096, 256>>>",
            kernel: "add_half",
            grid: Dim3::linear(4096),
            block: Dim3::linear(256),
            buffers: vec![(n20, 0.0)],
            n: n20 as i32,
            runs: 5,
            python: false,
        },
        Case {
            name: "add_half 16384, <<<64, 256>>> (as Numba's anchor)",
            kernel: "add_half",
            grid: Dim3::linear(64),
            block: Dim3::linear(256),
            buffers: vec![(16384, 0.0)],
            n: 16384,
            runs: 9,
            python: false,
        },
        Case {
            name: "racy loop on 2 elements, <<<1024, 1024>>>",
            kernel: "add_half_everywhere",
            grid: Dim3::linear(1024),
            block: Dim3::linear(1024),
            buffers: vec![(2, 0.0)],
            n: 2,
            runs: 3,
            python: false,
        },
        Case {
            name: "racy loop on 2 elements, <<<16, 256>>> (as Numba's anchor)",
            kernel: "add_half_everywhere",
            grid: Dim3::linear(16),
            block: Dim3::linear(256),
            buffers: vec![(2, 0.0)],
            n: 2,
            runs: 9,
            python: false,
        },
        Case {
            name: "shared-memory block sum of 2^20, <<<4096, 256>>>",
            kernel: "block_sum",
            grid: Dim3::linear(4096),
            block: Dim3::linear(256),
            buffers: vec![(n20, 1.0), (1, 0.0)],
            n: n20 as i32,
            runs: 3,
            python: false,
        },
        Case {
            name: "naive matmul 256x256, <<<(16, 16), (16, 16)>>>",
            kernel: "matmul",
            grid: Dim3::new(16, 16, 1),
            block: Dim3::new(16, 16, 1),
            buffers: vec![(65536, 1.0), (65536, 2.0), (65536, 0.0)],
            n: 256,
            runs: 1,
            python: false,
        },
        Case {
            name: "local-array window sum of 2^18, <<<1024, 256>>>",
            kernel: "window_sum",
            grid: Dim3::linear(1024),
            block: Dim3::linear(256),
            buffers: vec![(1 << 18, 1.0), (1 << 18, 0.0)],
            n: 1 << 18,
            runs: 3,
            python: false,
        },
        Case {
            name: "add_half 16384 in Python, [64, 256]",
            kernel: "add_half_py",
            grid: Dim3::linear(64),
            block: Dim3::linear(256),
            buffers: vec![(16384, 0.0)],
            n: 16384,
            runs: 9,
            python: true,
        },
        Case {
            name: "add_half 2^20 in Python, [4096, 256]",
            kernel: "add_half_py",
            grid: Dim3::linear(4096),
            block: Dim3::linear(256),
            buffers: vec![(n20, 0.0)],
            n: n20 as i32,
            runs: 5,
            python: true,
        },
        Case {
            name: "racy loop on 2 elements in Python, [1024, 1024]",
            kernel: "add_half_everywhere_py",
            grid: Dim3::linear(1024),
            block: Dim3::linear(1024),
            buffers: vec![(2, 0.0)],
            n: 2,
            runs: 3,
            python: true,
        },
        Case {
            name: "add_half 16384 in C as Numba means it, <<<64, 256>>>",
            kernel: "add_half_numba",
            grid: Dim3::linear(64),
            block: Dim3::linear(256),
            buffers: vec![(16384, 0.0)],
            n: 16384,
            runs: 9,
            python: true,
        },
        Case {
            name: "add_half 2^20 in C as Numba means it, <<<4096, 256>>>",
            kernel: "add_half_numba",
            grid: Dim3::linear(4096),
            block: Dim3::linear(256),
            buffers: vec![(n20, 0.0)],
            n: n20 as i32,
            runs: 5,
            python: true,
        },
        Case {
            name: "racy loop on 2 elements in C as Numba means it, <<<1024, 1024>>>",
            kernel: "add_half_everywhere_numba",
            grid: Dim3::linear(1024),
            block: Dim3::linear(1024),
            buffers: vec![(2, 0.0)],
            n: 2,
            runs: 3,
            python: true,
        },
    ]
}

/// The Python kernels as CUDA C, lowered for one float32 array each.
fn python_kernels() -> String {
    use gridlab::python::{ArgType, Env, lower, read_snippet};
    let snippet = read_snippet(0, PY_KERNELS).expect("the Python kernels parse");
    let functions = |_: &str| None;
    let globals = |_: &str| None;
    let env = Env { functions: &functions, globals: &globals, imports: &snippet.imports };
    let arg = [ArgType::Array { dtype: DType::F32, ndim: 1 }];
    snippet.functions.iter().map(|f| lower(&env, f, &arg).expect("the Python kernels lower").text).collect()
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    let mut sources = SourceMap::new();
    let id = sources.add("bench.cu", KERNELS, 1);
    let mut module = Module::new();
    module.add(id, KERNELS).expect("the benchmark kernels check");
    let py = python_kernels();
    let py_id = sources.add("bench.py (as C)", py.as_str(), 1);
    module.add(py_id, &py).expect("the lowered Python kernels check");
    eprintln!("{:<58} {:>9} {:>14} {:>9} {:>9}", "case", "findings", "threads/s", "no find.", "model");
    for case in cases() {
        let mut row = Vec::new();
        // Findings on as before the cost model, findings off, and findings with the cost model.
        for (findings, model) in [(true, false), (false, false), (true, true)] {
            let cost = if model { SimConfig::default().cost } else { None };
            let config = SimConfig { seed: 1, schedule: Schedule::Random, findings, cost, ..SimConfig::default() };
            let mut sim = SimBackend::new(config);
            let mut times = Vec::new();
            for _ in 0..case.runs {
                let mut bufs: Vec<Buffer> = case
                    .buffers
                    .iter()
                    .map(|&(len, fill)| {
                        Buffer::from_nums(DType::F32, Shape::D1(len), std::iter::repeat_n(Num::Float(fill as f64), len))
                    })
                    .collect();
                let mut args: Vec<Arg> = (0..bufs.len()).map(Arg::Buffer).collect();
                if case.python {
                    args.push(Arg::Scalar(ScalarArg::I64(case.buffers[0].0 as i64)));
                } else {
                    args.push(Arg::Scalar(ScalarArg::I32(case.n)));
                }
                let spec = LaunchSpec {
                    kernel: case.kernel.into(),
                    grid: case.grid,
                    block: case.block,
                    shared_bytes: 0,
                    args,
                    symbols: Vec::new(),
                };
                let names = (0..bufs.len()).map(|i| format!("b{i}")).collect();
                let mut lb = LaunchBuffers { names, buffers: bufs.iter_mut().collect() };
                let start = Instant::now();
                let report = sim.launch(&module, &spec, &mut lb).expect("the benchmark launch runs");
                times.push(start.elapsed());
                assert!(!report.aborted, "{} was stopped by the step budget", case.name);
            }
            row.push(median(times));
        }
        let threads = case.grid.count() * case.block.count();
        let tps = |d: Duration| threads as f64 / d.as_secs_f64();
        eprintln!(
            "{:<58} {:>8.3}s {:>14.0} {:>8.3}s {:>8.3}s",
            case.name,
            row[0].as_secs_f64(),
            tps(row[0]),
            row[1].as_secs_f64(),
            row[2].as_secs_f64()
        );
        println!(
            "{{\"case\": \"{}\", \"threads\": {threads}, \"seconds\": {:.6}, \"seconds_no_findings\": {:.6}, \"seconds_model\": {:.6}}}",
            case.name,
            row[0].as_secs_f64(),
            row[1].as_secs_f64(),
            row[2].as_secs_f64()
        );
    }
}
