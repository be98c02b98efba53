//! Tests of the simulator: hand-built ASTs for the engine's core, real CUDA source for the rest.

use crate::backend::{Arg, Dim3, LaunchSpec, ScalarArg};
use crate::buffer::{Buffer, Num, Shape};
use crate::cuda::ast::*;
use crate::diag::Span;
use crate::dtype::DType;
use crate::finding::Finding;

use super::{Schedule, SimConfig, compile, engine};

fn sp(lo: usize) -> Span {
    Span::new(0, lo, lo + 1)
}

fn ex(kind: ExprKind, ty: Type) -> Expr {
    Expr { kind, ty, span: sp(0) }
}

fn int() -> Type {
    Type::Scalar(Scalar::I32)
}

fn float() -> Type {
    Type::Scalar(Scalar::F32)
}

fn fptr() -> Type {
    Type::Ptr { pointee: Box::new(float()), is_const: false }
}

fn local(id: u32, ty: Type) -> Expr {
    ex(ExprKind::Local(id), ty)
}

fn cast(e: Expr, ty: Type) -> Expr {
    ex(ExprKind::Cast(Box::new(e)), ty)
}

fn stmt(kind: StmtKind) -> Stmt {
    Stmt { kind, span: sp(0) }
}

fn var(name: &str, ty: Type) -> LocalVar {
    LocalVar { name: name.into(), ty, span: sp(0) }
}

/// `a[idx] += 0.5f` with the access at `span`.
fn add_half_at(idx: Expr, span: Span) -> Stmt {
    let lhs = Expr {
        kind: ExprKind::Index {
            base: Box::new(local(0, fptr())),
            index: Box::new(cast(idx, Type::Scalar(Scalar::I64))),
        },
        ty: float(),
        span,
    };
    stmt(StmtKind::Expr(ex(
        ExprKind::CompoundAssign {
            op: BinaryOp::Add,
            lhs: Box::new(lhs),
            rhs: Box::new(ex(ExprKind::FloatConst(0.5), float())),
            op_ty: Scalar::F32,
        },
        float(),
    )))
}

fn kernel(name: &str, params: Vec<(&str, Type)>, locals: Vec<LocalVar>, body: Vec<Stmt>) -> Function {
    let mut all: Vec<LocalVar> = params.iter().map(|(n, t)| var(n, t.clone())).collect();
    all.extend(locals);
    Function {
        name: name.into(),
        kind: FuncKind::Kernel,
        ret: Type::Void,
        params: params
            .into_iter()
            .map(|(n, t)| Param { name: n.into(), ty: t, restrict: false, by_ref: false, default: None, span: sp(0) })
            .collect(),
        locals: all,
        local_arrays: Vec::new(),
        shared: Vec::new(),
        body,
        span: sp(0),
        name_span: sp(0),
        calls: Vec::new(),
        row_major: Vec::new(),
    }
}

/// `for (int i = 0; i < n; i++) a[i] += 0.5f;`
fn add_half_everywhere_ast() -> Function {
    let i = || local(2, int());
    let body = vec![stmt(StmtKind::For {
        init: Some(Box::new(stmt(StmtKind::Decl { local: 2, init: Some(ex(ExprKind::IntConst(0), int())) }))),
        cond: Some(ex(
            ExprKind::Binary { op: BinaryOp::Lt, lhs: Box::new(i()), rhs: Box::new(local(1, int())) },
            Type::Scalar(Scalar::Bool),
        )),
        step: Some(ex(ExprKind::IncDec { lhs: Box::new(i()), increment: true, prefix: false }, int())),
        body: Box::new(add_half_at(i(), sp(40))),
    })];
    kernel("add_half_everywhere", vec![("a", fptr()), ("n", int())], vec![var("i", int())], body)
}

fn run_ast(
    f: Function,
    grid: u32,
    block: u32,
    buf: &mut Buffer,
    args: Vec<Arg>,
    config: &SimConfig,
) -> engine::Outcome {
    let program = Program { functions: vec![f], globals: Vec::new(), constants: Vec::new() };
    let k = compile::compile(&program, 0).expect("compiles");
    let spec = LaunchSpec {
        kernel: program.functions[0].name.clone(),
        grid: Dim3::linear(grid),
        block: Dim3::linear(block),
        shared_bytes: 0,
        args,
        symbols: Vec::new(),
    };
    engine::run(
        &k,
        &program,
        &spec,
        vec![buf.bytes_mut()],
        vec![4],
        Vec::new(),
        &["a".to_string()],
        config,
        &mut Vec::new(),
    )
}

fn floats(v: &[f64]) -> Buffer {
    Buffer::from_nums(DType::F32, Shape::D1(v.len()), v.iter().map(|x| Num::Float(*x)))
}

fn with(schedule: Schedule, seed: u64) -> SimConfig {
    SimConfig { schedule, seed, ..SimConfig::default() }
}

#[test]
fn racy_loop_on_one_thread_is_exact() {
    let mut a = floats(&[0.0, 1.0]);
    let out = run_ast(
        add_half_everywhere_ast(),
        1,
        1,
        &mut a,
        vec![Arg::Buffer(0), Arg::Scalar(ScalarArg::I32(2))],
        &SimConfig::default(),
    );
    assert_eq!(a.to_f64_vec(), vec![0.5, 1.5]);
    assert!(out.findings.is_empty(), "{:?}", out.findings);
}

#[test]
fn racy_loop_loses_updates_except_sequentially() {
    let args = || vec![Arg::Buffer(0), Arg::Scalar(ScalarArg::I32(2))];
    let run = |config: SimConfig| {
        let mut a = floats(&[0.0, 1.0]);
        let out = run_ast(add_half_everywhere_ast(), 64, 256, &mut a, args(), &config);
        (a.to_f64_vec(), out)
    };
    let (seq, out) = run(with(Schedule::Sequential, 0));
    assert_eq!(seq, vec![8192.0, 8193.0]);
    assert!(matches!(out.findings[0], Finding::Race { .. }), "{:?}", out.findings);
    let (r1, out) = run(with(Schedule::Random, 1));
    assert!(r1[0] < 8192.0 / 8.0, "{r1:?}");
    assert!(matches!(out.findings[0], Finding::Race { .. }));
    assert_eq!(run(with(Schedule::Random, 1)).0, r1);
    assert_ne!(run(with(Schedule::Random, 2)).0, r1);
    let (l, _) = run(with(Schedule::Lockstep, 0));
    assert_eq!(run(with(Schedule::Lockstep, 5)).0, l);
    assert!(l[0] < 8192.0, "{l:?}");
}

/// `int i = blockIdx.x * blockDim.x + threadIdx.x; a[i] += 0.5;`
fn add_half_ast() -> Function {
    let u = || Type::Scalar(Scalar::U32);
    let b = |v, a| ex(ExprKind::Builtin(v, a), u());
    let bin = |op, l, r, ty| ex(ExprKind::Binary { op, lhs: Box::new(l), rhs: Box::new(r) }, ty);
    let gid = bin(
        BinaryOp::Add,
        bin(BinaryOp::Mul, b(BuiltinVar::BlockIdx, Axis::X), b(BuiltinVar::BlockDim, Axis::X), u()),
        b(BuiltinVar::ThreadIdx, Axis::X),
        u(),
    );
    let lhs = Expr {
        kind: ExprKind::Index {
            base: Box::new(local(0, fptr())),
            index: Box::new(cast(local(1, int()), Type::Scalar(Scalar::I64))),
        },
        ty: float(),
        span: sp(30),
    };
    let body = vec![
        stmt(StmtKind::Decl { local: 1, init: Some(cast(gid, int())) }),
        stmt(StmtKind::Expr(ex(
            ExprKind::CompoundAssign {
                op: BinaryOp::Add,
                lhs: Box::new(lhs),
                rhs: Box::new(ex(ExprKind::FloatConst(0.5), Type::Scalar(Scalar::F64))),
                op_ty: Scalar::F64,
            },
            float(),
        ))),
    ];
    kernel("add_half", vec![("a", fptr())], vec![var("i", int())], body)
}

#[test]
fn out_of_bounds_writes_are_summarised_not_performed() {
    let mut a = floats(&[0.0; 1000]);
    let out = run_ast(add_half_ast(), 4, 256, &mut a, vec![Arg::Buffer(0)], &SimConfig::default());
    assert!(a.to_f64_vec().iter().all(|v| *v == 0.5));
    let [Finding::OutOfBounds { access, count, min_index, max_index, first, first_index, len, .. }, ..] =
        &out.findings[..]
    else {
        panic!("{:?}", out.findings)
    };
    assert_eq!((*access, *count, *min_index, *max_index, *len), (crate::finding::Access::Read, 24, 1000, 1023, 1000));
    assert_eq!(out.findings.len(), 2);
    let _ = (first, first_index);
}

// ---- Real CUDA source through the front end ----

use crate::backend::{Backend, BackendError, LaunchBuffers, LaunchReport};
use crate::cuda::Module;
use crate::diag::SourceMap;
use crate::finding::{Access, Memory};

use super::SimBackend;

const KERNELS: &str = r#"
__global__ void add_half_everywhere(float *a, int n) {
    for (int i = 0; i < n; i++) {
        a[i] += 0.5f;
    }
}
__global__ void add_half(float *a) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    a[i] += 0.5;
}
__global__ void atomic_everywhere(float *a, int n) {
    for (int i = 0; i < n; i++) atomicAdd(&a[i], 0.5f);
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
__global__ void block_sum_no_barrier(const float *in, float *out, int n) {
    __shared__ float s[256];
    unsigned tid = threadIdx.x;
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    s[tid] = i < n ? in[i] : 0.0f;
    for (unsigned stride = blockDim.x / 2; stride > 0; stride >>= 1) {
        if (tid < stride) s[tid] += s[tid + stride];
    }
    if (tid == 0) atomicAdd(out, s[0]);
}
__global__ void barrier_in_if(float *a) {
    __shared__ float s[64];
    s[threadIdx.x] = a[threadIdx.x];
    if (threadIdx.x < 16) __syncthreads();
    a[threadIdx.x] = s[63 - threadIdx.x];
}
__global__ void warp_sum(const float *in, float *out) {
    float v = in[blockIdx.x * blockDim.x + threadIdx.x];
    for (int o = 16; o > 0; o /= 2) v += __shfl_down_sync(0xffffffff, v, o);
    if ((threadIdx.x & 31) == 0) atomicAdd(out, v);
}
__global__ void spin(float *a) {
    while (true) {}
}
__global__ void divide(int *a, int d) {
    a[threadIdx.x] = 10 / d;
}
__global__ void hello(int *a) {
    printf("block %d thread %d: %5.2f %x\n", blockIdx.x, threadIdx.x, threadIdx.x * 0.5f, 255);
}
__device__ float square(float x) { return x * x; }
__global__ void matmul(const float *A, const float *B, float *C, int N) {
    int row = blockIdx.y * blockDim.y + threadIdx.y, col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < N && col < N) { float acc = 0; for (int k = 0; k < N; ++k) acc += A[row * N + k] * B[k * N + col]; C[row * N + col] = acc; }
}
#define TILE 16
__global__ void tiled(const float *A, const float *B, float *C, int N) {
    __shared__ float As[TILE][TILE], Bs[TILE][TILE];
    int tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.y * TILE + ty, col = blockIdx.x * TILE + tx;
    float acc = 0.0f;
    for (int t = 0; t < (N + TILE - 1) / TILE; ++t) {
        As[ty][tx] = (row < N && t * TILE + tx < N) ? A[row * N + t * TILE + tx] : 0.0f;
        Bs[ty][tx] = (col < N && t * TILE + ty < N) ? B[(t * TILE + ty) * N + col] : 0.0f;
        __syncthreads();
        for (int k = 0; k < TILE; ++k) acc += As[ty][k] * Bs[k][tx];
        __syncthreads();
    }
    if (row < N && col < N) C[row * N + col] = square(acc) / acc;
}
__global__ void dynamic(float *a, int n) {
    extern __shared__ float dyn[];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    dyn[threadIdx.x] = i < n ? a[i] : 0.0f;
    __syncthreads();
    if (i < n) a[i] = dyn[blockDim.x - 1 - threadIdx.x];
}
__global__ void locals(int *out) {
    int v[4] = {1, 2};
    v[3] = threadIdx.x;
    int s = 0;
    for (int k = 0; k < 4; k++) s += v[k];
    out[threadIdx.x] = s + (v[5] = 1);
}
"#;

struct Sim {
    sources: SourceMap,
    module: Module,
    backend: SimBackend,
}

impl Sim {
    fn new() -> Sim {
        Sim::of(KERNELS)
    }

    fn of(kernels: &str) -> Sim {
        let mut sources = SourceMap::new();
        let id = sources.add("<input 1>", kernels, 1);
        let mut module = Module::new();
        if let Err(errors) = module.add(id, kernels) {
            let rendered: Vec<String> = errors.iter().map(|e| e.to_plain(&sources)).collect();
            panic!("kernels do not check:\n{}", rendered.join("\n"));
        }
        Sim { sources, module, backend: SimBackend::default() }
    }

    fn config(mut self, config: SimConfig) -> Sim {
        self.backend.config = config;
        self
    }

    fn launch(
        &mut self,
        kernel: &str,
        grid: Dim3,
        block: Dim3,
        bufs: &mut [&mut Buffer],
        scalars: &[ScalarArg],
    ) -> LaunchReport {
        self.launch_shared(kernel, grid, block, 0, bufs, scalars)
    }

    fn launch_shared(
        &mut self,
        kernel: &str,
        grid: Dim3,
        block: Dim3,
        shared_bytes: u32,
        bufs: &mut [&mut Buffer],
        scalars: &[ScalarArg],
    ) -> LaunchReport {
        let mut args: Vec<Arg> = (0..bufs.len()).map(Arg::Buffer).collect();
        args.extend(scalars.iter().map(|s| Arg::Scalar(*s)));
        let spec = LaunchSpec { kernel: kernel.into(), grid, block, shared_bytes, args, symbols: Vec::new() };
        let names = ["a", "b", "c"].iter().take(bufs.len()).map(|s| s.to_string()).collect();
        let mut lb = LaunchBuffers { names, buffers: bufs.iter_mut().map(|b| &mut **b).collect() };
        self.backend.launch(&self.module, &spec, &mut lb).expect("launch runs")
    }

    fn line(&self, span: Span) -> u32 {
        self.sources.line_of(span)
    }
}

fn lin(x: u32) -> Dim3 {
    Dim3::linear(x)
}

fn racy_loop(config: SimConfig, grid: u32, block: u32) -> (Vec<f64>, LaunchReport, Sim) {
    let mut sim = Sim::new().config(config);
    let mut a = floats(&[0.0, 1.0]);
    let r = sim.launch("add_half_everywhere", lin(grid), lin(block), &mut [&mut a], &[ScalarArg::I32(2)]);
    (a.to_f64_vec(), r, sim)
}

#[test]
fn cuda_racy_loop_single_thread_and_schedules() {
    let (one, r, _) = racy_loop(SimConfig::default(), 1, 1);
    assert_eq!(one, vec![0.5, 1.5]);
    assert!(r.findings.is_empty() && !r.aborted);

    let (seq, r, sim) = racy_loop(with(Schedule::Sequential, 0), 128, 256);
    assert_eq!(seq, vec![16384.0, 16385.0]);
    let [Finding::Race { memory, first, second, elements, .. }] = &r.findings[..] else { panic!("{:?}", r.findings) };
    assert_eq!((memory, *elements), (&Memory::Global("a".into()), 2));
    assert_eq!((sim.line(first.span), sim.line(second.span)), (4, 4));

    let (r1, rep, _) = racy_loop(with(Schedule::Random, 1), 128, 256);
    assert!(r1[0] < 16384.0 / 8.0, "{r1:?}");
    assert!(rep.findings.iter().any(|f| matches!(f, Finding::Race { .. })));
    assert_eq!(racy_loop(with(Schedule::Random, 1), 128, 256).0, r1);
    assert_ne!(racy_loop(with(Schedule::Random, 2), 128, 256).0, r1);
    let (l, _, _) = racy_loop(with(Schedule::Lockstep, 0), 128, 256);
    assert!(l[0] < 16384.0, "{l:?}");
    assert_eq!(racy_loop(with(Schedule::Lockstep, 9), 128, 256).0, l);
}

/// The full-size version of the lesson's numbers (slow in a debug build).
#[test]
#[ignore]
fn cuda_racy_loop_full_size() {
    let (seq, r, _) = racy_loop(with(Schedule::Sequential, 0), 1024, 1024);
    assert_eq!(seq, vec![524288.0, 524289.0]);
    assert!(matches!(r.findings[0], Finding::Race { .. }));
    let (a, _, _) = racy_loop(with(Schedule::Random, 0), 1024, 1024);
    let (b, _, _) = racy_loop(with(Schedule::Random, 1), 1024, 1024);
    let (l, _, _) = racy_loop(with(Schedule::Lockstep, 0), 1024, 1024);
    println!("random seed 0: {a:?}, seed 1: {b:?}, lockstep: {l:?}");
    assert!(a[0] < 524288.0 / 4.0 && a != b);
}

#[test]
fn cuda_add_half_in_bounds_and_out() {
    let mut sim = Sim::new();
    let mut a = floats(&vec![0.0; 1 << 14]);
    let r = sim.launch("add_half", lin(64), lin(256), &mut [&mut a], &[]);
    assert!(a.to_f64_vec().iter().all(|v| *v == 0.5));
    assert!(r.findings.is_empty(), "{:?}", r.findings);

    let mut a = floats(&[0.0, 1.0]);
    sim.launch("add_half", lin(1), lin(1), &mut [&mut a], &[]);
    assert_eq!(a.to_f64_vec(), vec![0.5, 1.0]);

    let mut a = floats(&vec![0.0; 1000]);
    let r = sim.launch("add_half", lin(4), lin(256), &mut [&mut a], &[]);
    let write = r
        .findings
        .iter()
        .find(|f| matches!(f, Finding::OutOfBounds { access: Access::Write, .. }))
        .unwrap_or_else(|| panic!("{:?}", r.findings));
    let Finding::OutOfBounds { memory, len, count, min_index, max_index, first, first_index, .. } = write else {
        unreachable!()
    };
    assert_eq!((memory.name(), *len, *count, *min_index, *max_index), ("a", 1000, 24, 1000, 1023));
    assert_eq!((first.thread.describe(), *first_index), ("block 3 thread 232".to_string(), 1000));
    assert_eq!(sim.line(first.span), 9);
}

#[test]
fn cuda_atomics_give_the_sequential_answer() {
    let mut sim = Sim::new();
    let mut a = floats(&[0.0, 1.0]);
    let r = sim.launch("atomic_everywhere", lin(64), lin(256), &mut [&mut a], &[ScalarArg::I32(2)]);
    assert_eq!(a.to_f64_vec(), vec![8192.0, 8193.0]);
    assert!(r.findings.is_empty(), "{:?}", r.findings);
}

#[test]
fn cuda_block_reduction_with_and_without_barriers() {
    for schedule in Schedule::ALL {
        let mut sim = Sim::new().config(with(schedule, 3));
        let mut input = floats(&(0..4096).map(|i| (i % 7) as f64).collect::<Vec<_>>());
        let mut out = floats(&[0.0]);
        let expected: f64 = (0..4096).map(|i| (i % 7) as f64).sum();
        let r = sim.launch("block_sum", lin(16), lin(256), &mut [&mut input, &mut out], &[ScalarArg::I32(4096)]);
        assert_eq!(out.to_f64_vec(), vec![expected], "{schedule}");
        assert!(r.findings.is_empty(), "{schedule}: {:?}", r.findings);

        let mut out = floats(&[0.0]);
        let r =
            sim.launch("block_sum_no_barrier", lin(16), lin(256), &mut [&mut input, &mut out], &[ScalarArg::I32(4096)]);
        assert!(
            r.findings.iter().any(|f| matches!(f, Finding::Race { memory: Memory::Shared(n), .. } if n == "s")),
            "{schedule}: {:?}",
            r.findings
        );
    }
}

#[test]
fn cuda_barrier_in_if_is_divergence() {
    let mut sim = Sim::new();
    let mut a = floats(&vec![1.0; 64]);
    let r = sim.launch("barrier_in_if", lin(1), lin(64), &mut [&mut a], &[]);
    let Some(Finding::BarrierDivergence { waiting_threads, other_threads, other, .. }) =
        r.findings.iter().find(|f| matches!(f, Finding::BarrierDivergence { .. }))
    else {
        panic!("{:?}", r.findings)
    };
    assert_eq!((*waiting_threads, *other_threads, other.is_none()), (16, 48, true));
    assert!(!r.aborted);
}

#[test]
fn cuda_warp_shuffle_sum_in_every_schedule() {
    for schedule in Schedule::ALL {
        let mut sim = Sim::new().config(with(schedule, 0));
        let mut input = floats(&(0..256).map(|i| i as f64).collect::<Vec<_>>());
        let mut out = floats(&[0.0]);
        let r = sim.launch("warp_sum", lin(2), lin(128), &mut [&mut input, &mut out], &[]);
        assert_eq!(out.to_f64_vec(), vec![(0..256).sum::<i32>() as f64], "{schedule}");
        assert!(r.findings.is_empty(), "{schedule}: {:?}", r.findings);
    }
}

#[test]
fn cuda_endless_loop_hits_the_step_limit() {
    let mut sim = Sim::new().config(SimConfig { max_steps: 2_000_000, ..SimConfig::default() });
    let mut a = floats(&[0.0]);
    let r = sim.launch("spin", lin(1), lin(1), &mut [&mut a], &[]);
    assert!(r.aborted);
    let Some(Finding::StepLimit { site, budget, warp_limit, sequential, .. }) = r.findings.last() else {
        panic!("{:?}", r.findings)
    };
    let line = KERNELS.lines().position(|l| l.contains("while (true)")).unwrap() as u32 + 1;
    assert_eq!(sim.line(site.span), line);
    // One warp stopped at its quarter of the budget, and the finding says so.
    assert_eq!((*budget, *warp_limit, *sequential), (2_000_000, Some(500_000), false));
    assert_eq!(r.steps, Some(500_001));
}

#[test]
fn the_step_budget_is_per_lane_on_the_sequential_schedule_and_the_launch_can_run_out_first() {
    // Sequential runs one lane per step: both budgets are 32 times as many.
    let mut sim = Sim::new().config(SimConfig { max_steps: 100_000, ..with(Schedule::Sequential, 0) });
    let mut a = floats(&[0.0]);
    let r = sim.launch("spin", lin(1), lin(1), &mut [&mut a], &[]);
    let Some(Finding::StepLimit { budget, warp_limit, sequential, .. }) = r.findings.last() else {
        panic!("{:?}", r.findings)
    };
    assert_eq!((*budget, *warp_limit, *sequential), (100_000, Some(800_000), true));
    // Eight spinning warps share the launch's budget before any reaches its own quarter.
    let mut sim = Sim::new().config(SimConfig { max_steps: 100_000, ..SimConfig::default() });
    let r = sim.launch("spin", lin(8), lin(32), &mut [&mut a], &[]);
    let Some(Finding::StepLimit { warp_limit, steps, .. }) = r.findings.last() else { panic!("{:?}", r.findings) };
    assert_eq!(*warp_limit, None);
    assert_eq!(*steps, 100_001);
}

const ADVICE_KERNELS: &str = r#"
__global__ void square(const float *x, float *y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    y[i] = x[i] * x[i];
}
__global__ void block_stride(float *v, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x) {
        v[i] = v[i] * 2.0f;
    }
}
__global__ void twice(float *p, float *q) {
    q[threadIdx.x] = p[threadIdx.x + 1];
}
"#;

#[test]
fn out_of_bounds_counts_threads_not_accesses() {
    let mut sim = Sim::of(ADVICE_KERNELS);
    let mut x = floats(&[1.0; 8]);
    let mut y = floats(&[0.0; 8]);
    // 12 threads, 4 past the end: each reads x[i] twice there.
    let r = sim.launch("square", lin(1), lin(12), &mut [&mut x, &mut y], &[ScalarArg::I32(8)]);
    let counts: Vec<(Access, u64)> = r
        .findings
        .iter()
        .filter_map(|f| match f {
            Finding::OutOfBounds { access, count, threads, .. } => {
                assert_eq!(*threads, 12);
                Some((*access, *count))
            }
            _ => None,
        })
        .collect();
    assert_eq!(counts, vec![(Access::Read, 4), (Access::Write, 4)]);
}

#[test]
fn every_race_finding_counts_its_own_elements() {
    // Two blocks stepping by one block each: both go over v[4..8], with a read-write and a
    // write-write pair of places; each pair raced on all four elements.
    for seed in 0..4 {
        let mut sim = Sim::of(ADVICE_KERNELS).config(with(Schedule::Random, seed));
        let mut v = floats(&[1.0; 8]);
        let r = sim.launch("block_stride", lin(2), lin(4), &mut [&mut v], &[ScalarArg::I32(8)]);
        let races: Vec<u64> = r
            .findings
            .iter()
            .filter_map(|f| match f {
                Finding::Race { elements, .. } => Some(*elements),
                _ => None,
            })
            .collect();
        assert!(!races.is_empty() && races.iter().all(|e| *e == 4), "seed {seed}: {races:?} in {:?}", r.findings);
    }
}

#[test]
fn findings_carry_the_kernels_own_name_for_a_buffer() {
    let mut sim = Sim::of(ADVICE_KERNELS);
    let mut a = floats(&[1.0; 4]);
    let mut b = floats(&[0.0; 4]);
    // The session calls them `a` and `b`; the kernel `p` and `q`.
    let r = sim.launch("twice", lin(1), lin(4), &mut [&mut a, &mut b], &[]);
    let [Finding::OutOfBounds { memory, kernel_name, .. }] = &r.findings[..] else { panic!("{:?}", r.findings) };
    assert_eq!((memory, kernel_name.as_deref()), (&Memory::Global("a".into()), Some("p")));
    // One buffer passed to both parameters has no one name in the kernel.
    let mut sim = Sim::of(ADVICE_KERNELS);
    let spec = LaunchSpec {
        kernel: "twice".into(),
        grid: lin(1),
        block: lin(4),
        shared_bytes: 0,
        args: vec![Arg::Buffer(0), Arg::Buffer(0)],
        symbols: Vec::new(),
    };
    let mut lb = LaunchBuffers { names: vec!["a".into()], buffers: vec![&mut a] };
    let r = sim.backend.launch(&sim.module, &spec, &mut lb).unwrap();
    assert!(
        r.findings.iter().all(|f| matches!(
            f,
            Finding::OutOfBounds { kernel_name: None, .. } | Finding::Race { kernel_name: None, .. }
        )),
        "{:?}",
        r.findings
    );
}

#[test]
fn cuda_division_by_zero_traps() {
    let mut sim = Sim::new();
    let mut a = Buffer::zeros(DType::I32, Shape::D1(4));
    let r = sim.launch("divide", lin(1), lin(4), &mut [&mut a], &[ScalarArg::I32(0)]);
    assert!(r.aborted);
    assert!(matches!(&r.findings[..], [Finding::Trap { message, .. }] if message == "integer division by zero"));
    let r = sim.launch("divide", lin(1), lin(4), &mut [&mut a], &[ScalarArg::I32(3)]);
    assert!(!r.aborted);
    assert_eq!(a.to_f64_vec(), vec![3.0; 4]);
}

#[test]
fn cuda_printf_in_thread_order() {
    let mut sim = Sim::new().config(with(Schedule::Sequential, 0));
    let mut a = Buffer::zeros(DType::I32, Shape::D1(1));
    let r = sim.launch("hello", lin(2), lin(2), &mut [&mut a], &[]);
    let lines: Vec<&str> = r.output.iter().map(|l| l.text.as_str()).collect();
    assert_eq!(
        lines,
        [
            "block 0 thread 0:  0.00 ff",
            "block 0 thread 1:  0.50 ff",
            "block 1 thread 0:  0.00 ff",
            "block 1 thread 1:  0.50 ff"
        ]
    );
    assert_eq!(r.output[3].thread.unwrap().describe(), "block 1 thread 1");
}

#[test]
fn cuda_matmuls_agree() {
    let n = 20usize;
    let av: Vec<f64> = (0..n * n).map(|i| (i % 5) as f64).collect();
    let bv: Vec<f64> = (0..n * n).map(|i| (i % 3) as f64 + 1.0).collect();
    let mut expected = vec![0.0; n * n];
    for r in 0..n {
        for c in 0..n {
            expected[r * n + c] = (0..n).map(|k| av[r * n + k] * bv[k * n + c]).sum();
        }
    }
    for kernel in ["matmul", "tiled"] {
        let mut sim = Sim::new();
        let (mut a, mut b, mut c) = (floats(&av), floats(&bv), floats(&vec![0.0; n * n]));
        let r = sim.launch(
            kernel,
            Dim3::new(2, 2, 1),
            Dim3::new(16, 16, 1),
            &mut [&mut a, &mut b, &mut c],
            &[ScalarArg::I32(n as i32)],
        );
        assert_eq!(c.to_f64_vec(), expected, "{kernel}");
        assert!(r.findings.is_empty(), "{kernel}: {:?}", r.findings);
    }
}

#[test]
fn cuda_dynamic_shared_and_local_arrays() {
    let mut sim = Sim::new();
    let mut a = floats(&(0..64).map(|i| i as f64).collect::<Vec<_>>());
    let r = sim.launch_shared("dynamic", lin(2), lin(32), 128, &mut [&mut a], &[ScalarArg::I32(64)]);
    assert!(r.findings.is_empty(), "{:?}", r.findings);
    assert_eq!(a.to_f64_vec()[0], 31.0);
    assert_eq!(a.to_f64_vec()[63], 32.0);

    let mut out = Buffer::zeros(DType::I32, Shape::D1(4));
    let r = sim.launch("locals", lin(1), lin(4), &mut [&mut out], &[]);
    assert_eq!(out.to_f64_vec(), vec![4.0, 5.0, 6.0, 7.0]);
    assert!(
        matches!(&r.findings[..], [Finding::OutOfBounds { memory: Memory::Local(n), count: 4, .. }] if n == "v"),
        "{:?}",
        r.findings
    );
}

/// `s[0][t]` of a `float s[4][16]` with `t` up to 63 is inside `s` but past its first row: C
/// lands it on `s[t / 16][t % 16]`, and so does the simulator, which also says so, per dimension.
#[test]
fn an_index_past_a_row_lands_where_c_puts_it_and_is_found() {
    let mut sim = Sim::of(THREADED);
    let av: Vec<f64> = (0..128).map(|i| i as f64).collect();
    let (mut a, mut b) = (floats(&av), floats(&[0.0; 128]));
    let r = sim.launch("past_row", lin(2), lin(64), &mut [&mut a, &mut b], &[ScalarArg::I32(128)]);
    assert_eq!(b.to_f64_vec(), av, "each read landed on the element of a later row");
    let [
        Finding::PastRow {
            memory: Memory::Shared(name), shape, dim: 1, count: 96, min_index: 16, max_index: 63, ..
        },
    ] = &r.findings[..]
    else {
        panic!("{:?}", r.findings)
    };
    assert_eq!((name.as_str(), &shape[..]), ("s", &[4u64, 16][..]));

    // Before the start of a row, and an index into a row that stays inside it, in a local array.
    let mut sim = Sim::of(
        "__global__ void k(float *out) {\n    float v[2][4];\n    int t = threadIdx.x;\n    v[1][t % 4] = t;\n    v[0][t % 4] = -t;\n    out[t] = v[1][t - 4];\n}\n",
    );
    let mut out = floats(&[0.0; 8]);
    let r = sim.launch("k", lin(1), lin(8), &mut [&mut out], &[]);
    let [Finding::PastRow { memory: Memory::Local(name), dim: 1, count: 4, min_index: -4, max_index: -1, .. }] =
        &r.findings[..]
    else {
        panic!("{:?}", r.findings)
    };
    assert_eq!(name, "v");
    assert_eq!(out.to_f64_vec(), vec![0.0, -1.0, -2.0, -3.0, 4.0, 5.0, 6.0, 7.0]);
}

#[test]
fn zero_sized_launch_is_an_error() {
    let mut sim = Sim::new();
    let mut a = floats(&[0.0]);
    let spec = LaunchSpec {
        kernel: "add_half".into(),
        grid: lin(0),
        block: lin(1),
        shared_bytes: 0,
        args: vec![Arg::Buffer(0)],
        symbols: Vec::new(),
    };
    let mut lb = LaunchBuffers { names: vec!["a".into()], buffers: vec![&mut a] };
    assert!(sim.backend.launch(&sim.module, &spec, &mut lb).is_err());
}

/// Timings for the report: `cargo test --release --lib backend::sim -- --ignored --nocapture`.
#[test]
#[ignore]
fn speed() {
    fn time(name: &str, f: &mut dyn FnMut() -> LaunchReport) {
        let t = std::time::Instant::now();
        let r = f();
        let s = t.elapsed().as_secs_f64();
        let kinds: Vec<&str> = r.findings.iter().map(|f| f.kind().name()).collect();
        println!("{name:52} {s:7.3} s {:>11} steps  {kinds:?}", r.steps.unwrap_or(0));
    }
    for findings in [true, false] {
        let cfg = SimConfig { findings, ..SimConfig::default() };
        let mut sim = Sim::new().config(cfg);
        let mut a = floats(&vec![0.0; 1 << 20]);
        for run in ["first", "again"] {
            time(&format!("add_half 2^20 <<<4096, 256>>> findings={findings} ({run})"), &mut || {
                sim.launch("add_half", lin(4096), lin(256), &mut [&mut a], &[])
            });
        }
        let mut a = floats(&[0.0, 1.0]);
        time(&format!("add_half_everywhere <<<1024, 1024>>> findings={findings}"), &mut || {
            sim.launch("add_half_everywhere", lin(1024), lin(1024), &mut [&mut a], &[ScalarArg::I32(2)])
        });
        let mut input = floats(&vec![1.0; 1 << 20]);
        let mut out = floats(&[0.0]);
        time(&format!("block_sum 2^20 <<<4096, 256>>> findings={findings}"), &mut || {
            sim.launch("block_sum", lin(4096), lin(256), &mut [&mut input, &mut out], &[ScalarArg::I32(1 << 20)])
        });
        for kernel in ["matmul", "tiled"] {
            let n = 256;
            let (mut a, mut b, mut c) =
                (floats(&vec![1.0; n * n]), floats(&vec![2.0; n * n]), floats(&vec![0.0; n * n]));
            time(&format!("{kernel} 256x256 findings={findings}"), &mut || {
                sim.launch(
                    kernel,
                    Dim3::new(16, 16, 1),
                    Dim3::new(16, 16, 1),
                    &mut [&mut a, &mut b, &mut c],
                    &[ScalarArg::I32(n as i32)],
                )
            });
        }
    }
    for schedule in [Schedule::Lockstep, Schedule::Sequential] {
        let mut sim = Sim::new().config(with(schedule, 0));
        let mut a = floats(&[0.0, 1.0]);
        time(&format!("add_half_everywhere <<<1024, 1024>>> {schedule}"), &mut || {
            sim.launch("add_half_everywhere", lin(1024), lin(1024), &mut [&mut a], &[ScalarArg::I32(2)])
        });
    }
    let mut sim = Sim::new();
    let mut a = floats(&[0.0]);
    time("spin <<<1, 1>>> (step limit)", &mut || sim.launch("spin", lin(1), lin(1), &mut [&mut a], &[]));
}

#[test]
fn weird_kernels_get_findings_not_panics() {
    let src = r#"
__global__ void weird(int *a, int n) {
    int big = 2147483647;
    a[0] = (-big - 1) / -1;
    a[1] = 1 << 40;
    a[2] = -8 >> 35;
    a[-1] = 3;
    a[n + 100] = a[-5];
    float f = 1e30f;
    a[3] = (int)f;
    a[4] = __shfl_down_sync(0xffffffff, 7, 1000000);
}
__global__ void ext(float *a) {
    extern __shared__ float d[];
    d[threadIdx.x] = 1;
    a[threadIdx.x] = d[threadIdx.x];
}
__global__ void trapper(float *a) {
    assert(threadIdx.x < 3);
    a[threadIdx.x] = 1;
}
"#;
    let mut sources = SourceMap::new();
    let id = sources.add("<weird>", src, 1);
    let mut module = Module::new();
    if let Err(e) = module.add(id, src) {
        panic!("{}", e.iter().map(|d| d.to_plain(&sources)).collect::<Vec<_>>().join("\n"));
    }
    let mut backend = SimBackend::default();
    let mut a = Buffer::zeros(DType::I32, Shape::D1(8));
    let mut launch = |kernel: &str, block: u32, args: Vec<Arg>, a: &mut Buffer| {
        let shared_bytes = if kernel == "huge" { u32::MAX } else { 0 };
        let kernel = if kernel == "huge" { "ext" } else { kernel };
        let spec = LaunchSpec {
            kernel: kernel.into(),
            grid: lin(1),
            block: lin(block),
            shared_bytes,
            args,
            symbols: Vec::new(),
        };
        let mut lb = LaunchBuffers { names: vec!["a".into()], buffers: vec![a] };
        backend.launch(&module, &spec, &mut lb)
    };
    let r = launch("weird", 2, vec![Arg::Buffer(0), Arg::Scalar(ScalarArg::I32(8))], &mut a).expect("runs");
    assert!(!r.aborted);
    let v = a.to_f64_vec();
    assert_eq!(&v[..5], &[i32::MIN as f64, 0.0, -1.0, i32::MAX as f64, 7.0]);
    assert!(r.findings.iter().filter(|f| matches!(f, Finding::OutOfBounds { .. })).count() >= 2);
    assert!(matches!(launch("huge", 32, vec![Arg::Buffer(0)], &mut a), Err(crate::backend::BackendError::Launch(_))));
    let r = launch("ext", 4, vec![Arg::Buffer(0)], &mut a).expect("runs");
    assert!(
        matches!(&r.findings[..], [Finding::OutOfBounds { memory: Memory::Shared(_), .. }, ..]),
        "{:?}",
        r.findings
    );
    let r = launch("trapper", 8, vec![Arg::Buffer(0)], &mut a).expect("runs");
    assert!(r.aborted && matches!(&r.findings[..], [Finding::Trap { message, .. }] if message == "assertion failed"));
}

#[test]
fn printf_output_is_capped() {
    let mut sim = Sim::new();
    let mut a = Buffer::zeros(DType::I32, Shape::D1(1));
    let r = sim.launch("hello", lin(100), lin(128), &mut [&mut a], &[]);
    assert_eq!(r.output.len(), super::MAX_OUTPUT_LINES);
    assert!(r.output_truncated);
}

#[test]
fn cancel_stops_and_restores_buffers() {
    use std::sync::Arc;
    use std::sync::atomic::AtomicBool;
    let cancel = Arc::new(AtomicBool::new(true));
    let mut sim = Sim::new().config(SimConfig { cancel: Some(cancel), ..SimConfig::default() });
    let mut a = floats(&vec![1.0; 1 << 12]);
    let spec = LaunchSpec {
        kernel: "add_half".into(),
        grid: lin(16),
        block: lin(256),
        shared_bytes: 0,
        args: vec![Arg::Buffer(0)],
        symbols: Vec::new(),
    };
    let mut lb = LaunchBuffers { names: vec!["a".into()], buffers: vec![&mut a] };
    let r = sim.backend.launch(&sim.module, &spec, &mut lb);
    assert!(matches!(r, Err(crate::backend::BackendError::Aborted(_))));
    assert!(a.to_f64_vec().iter().all(|v| *v == 1.0));
}

#[test]
fn schedules_parse_their_names() {
    for s in Schedule::ALL {
        assert_eq!(Schedule::parse(s.name()), Some(s));
    }
    assert_eq!(Schedule::parse("chaos"), None);
    assert_eq!(SimConfig::default().schedule, Schedule::Random);
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(24))]

    /// Any launch shape over any buffer length: the in-bounds elements are done exactly once, and
    /// every thread past the end is counted in the out-of-bounds write summary.
    #[test]
    fn add_half_counts_exactly_the_threads_past_the_end(
        grid in 1u32..12,
        block in 1u32..200,
        len in 0usize..2000,
        schedule in 0usize..3,
        seed in 0u64..4,
    ) {
        let mut sim = Sim::new().config(with(Schedule::ALL[schedule], seed));
        let mut a = floats(&vec![1.0; len]);
        let r = sim.launch("add_half", lin(grid), lin(block), &mut [&mut a], &[]);
        let threads = (grid * block) as usize;
        let done = threads.min(len);
        let v = a.to_f64_vec();
        proptest::prop_assert!(v[..done].iter().all(|x| *x == 1.5) && v[done..].iter().all(|x| *x == 1.0));
        let past = threads.saturating_sub(len) as u64;
        let writes = r.findings.iter().find_map(|f| match f {
            Finding::OutOfBounds { access: Access::Write, count, min_index, .. } => Some((*count, *min_index)),
            _ => None,
        });
        proptest::prop_assert_eq!(writes, (past > 0).then_some((past, len as i64)));
        let races = r.findings.iter().filter(|f| matches!(f, Finding::Race { .. })).count();
        proptest::prop_assert_eq!(races, 0);
    }
}

#[test]
fn control_flow_pointers_and_conversions() {
    let src = r#"
__device__ int first_multiple(int from, int k) {
    for (int v = from; ; v++) {
        if (v % k == 0) return v;
    }
    return -1;
}
__global__ void mix(int *out, float *f) {
    int t = threadIdx.x;
    int s = 0;
    int i = 0;
    do {
        i++;
        if (i == 2) continue;
        if (i > 5) break;
        s += i;
    } while (i < 10);
    out[t * 8 + 0] = s;
    out[t * 8 + 1] = first_multiple(t + 1, 3);
    int *p = &out[t * 8 + 2];
    *p++ = t & 1 ? -t : t;
    *p = (int)(p - &out[t * 8]);
    unsigned u = 0;
    u -= 1;
    out[t * 8 + 4] = u > 5 ? 1 : 0;
    char c = 200;
    out[t * 8 + 5] = c;
    out[t * 8 + 6] = (int)(-7.9f) + 7 / 2 + (-7) % 3;
    out[t * 8 + 7] = min(t, 2) + max(-1, -t) + abs(-3);
    f[t] = sqrtf((float)(t * t)) + (float)t / 2;
}
"#;
    let mut sources = SourceMap::new();
    let id = sources.add("<mix>", src, 1);
    let mut module = Module::new();
    if let Err(e) = module.add(id, src) {
        panic!("{}", e.iter().map(|d| d.to_plain(&sources)).collect::<Vec<_>>().join("\n"));
    }
    for schedule in Schedule::ALL {
        let mut backend = SimBackend::new(with(schedule, 1));
        let mut out = Buffer::zeros(DType::I32, Shape::D1(32));
        let mut f = floats(&[0.0; 4]);
        let spec = LaunchSpec {
            kernel: "mix".into(),
            grid: lin(1),
            block: lin(4),
            shared_bytes: 0,
            args: vec![Arg::Buffer(0), Arg::Buffer(1)],
            symbols: Vec::new(),
        };
        let mut lb = LaunchBuffers { names: vec!["out".into(), "f".into()], buffers: vec![&mut out, &mut f] };
        let r = backend.launch(&module, &spec, &mut lb).expect("runs");
        assert!(r.findings.is_empty(), "{:?}", r.findings);
        let v: Vec<i64> = out.to_f64_vec().iter().map(|x| *x as i64).collect();
        for t in 0..4i64 {
            let row = &v[t as usize * 8..t as usize * 8 + 8];
            let first = (t + 1..).find(|x| x % 3 == 0).unwrap();
            let expect = [
                1 + 3 + 4 + 5,
                first,
                if t & 1 == 1 { -t } else { t },
                3,
                1,
                -56,
                -7 + 3 - 1,
                t.min(2) + (-t).max(-1) + 3,
            ];
            assert_eq!(row, expect, "thread {t} ({schedule})");
        }
        assert_eq!(f.to_f64_vec(), vec![0.0, 1.5, 3.0, 4.5]);
    }
}

#[test]
fn write_trace_records_last_writer_count_and_out_of_bounds_only_when_asked() {
    let args = || vec![Arg::Buffer(0), Arg::Scalar(ScalarArg::I32(2))];
    let mut a = floats(&[0.0, 1.0]);
    let out = run_ast(add_half_everywhere_ast(), 2, 4, &mut a, args(), &with(Schedule::Sequential, 0));
    assert!(out.writes.is_none() && out.watched.is_none());
    let config = SimConfig { trace_writes: true, ..with(Schedule::Sequential, 0) };
    let mut a = floats(&[0.0, 1.0]);
    let out = run_ast(add_half_everywhere_ast(), 2, 4, &mut a, args(), &config);
    let t = &out.writes.expect("traced")[0];
    // Sequentially, the last thread (block 1 thread 3 = 7) writes last; 8 writes each.
    assert_eq!(t.last_writer, vec![7, 7]);
    assert_eq!(t.writes, vec![8, 8]);
    assert!(t.out_of_bounds.is_empty());
    // n = 3 writes one element past the end, 8 times.
    let mut a = floats(&[0.0, 1.0]);
    let out =
        run_ast(add_half_everywhere_ast(), 2, 4, &mut a, vec![Arg::Buffer(0), Arg::Scalar(ScalarArg::I32(3))], &config);
    let t = &out.writes.expect("traced")[0];
    assert_eq!(t.out_of_bounds_total, 8);
    assert_eq!(t.out_of_bounds[0], (2, 0));
}

#[test]
fn watch_records_two_threads_reads_and_writes_in_order() {
    let watch = super::Watch { index: 0, threads: [0, 5] };
    let config = SimConfig { watch: Some(watch), ..with(Schedule::Random, 3) };
    let mut a = floats(&[0.0, 1.0]);
    let out =
        run_ast(add_half_everywhere_ast(), 2, 4, &mut a, vec![Arg::Buffer(0), Arg::Scalar(ScalarArg::I32(2))], &config);
    let w = out.watched.expect("watched");
    assert_eq!(w.len(), 4, "{w:?}");
    assert!(w.windows(2).all(|p| p[0].step <= p[1].step));
    assert!(w.iter().all(|e| e.index == 0 && matches!(e.memory, Memory::Global(ref n) if n == "a")));
    for e in &w {
        match e.access {
            Access::Read => assert!(e.read.is_some() && e.written.is_none()),
            _ => assert!(matches!(e.written, Some(Num::Float(v)) if v > 0.0)),
        }
    }
}

#[test]
fn a_long_flat_sum_runs_on_a_small_stack() {
    let text = format!("__global__ void k(int *a) {{ a[0] = a[1]{}; }}", " + a[1]".repeat(1000));
    std::thread::Builder::new()
        .stack_size(1 << 21)
        .spawn(move || {
            let mut sim = Sim::of(&text);
            let mut a = Buffer::from_nums(DType::I32, Shape::D1(2), vec![Num::Int(0), Num::Int(3)]);
            let r = sim.launch("k", lin(1), lin(1), &mut [&mut a], &[]);
            assert!(r.findings.is_empty(), "{:?}", r.findings);
            assert_eq!(a.to_f64_vec(), vec![3003.0, 3.0]);
        })
        .unwrap()
        .join()
        .unwrap();
}

#[test]
fn exponential_inlining_is_refused_naming_the_calls() {
    let mut text = String::from("__device__ int f0(int x) { return x + 1; }\n");
    for i in 1..40 {
        text += &format!("__device__ int f{i}(int x) {{ return f{}(x) + f{}(x); }}\n", i - 1, i - 1);
    }
    text += "__global__ void k(int *a) { a[0] = f39(a[0]); }";
    let mut sim = Sim::of(&text);
    let mut a = Buffer::from_nums(DType::I32, Shape::D1(1), vec![Num::Int(0)]);
    let spec = LaunchSpec {
        kernel: "k".into(),
        grid: lin(1),
        block: lin(1),
        shared_bytes: 0,
        args: vec![Arg::Buffer(0)],
        symbols: Vec::new(),
    };
    let mut lb = LaunchBuffers { names: vec!["a".into()], buffers: vec![&mut a] };
    let Err(BackendError::Unsupported(e)) = sim.backend.launch(&sim.module, &spec, &mut lb) else { panic!("too big") };
    let text = e.to_plain(&sim.sources);
    assert!(text.contains("too big for the simulator") && text.contains("k -> f39 -> f38"), "{text}");
}

/// The cost model's counters on kernels whose answers are known exactly (each also measured with
/// Nsight Compute on an H100 for the bench kernels: `bench/README.md`).
const COST_KERNELS: &str = r#"
__global__ void coalesced(float *a, float *b) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    b[i] = a[i];
}
__global__ void strided(float *a, float *b) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    b[i] = a[(i % 32) * 32 + i / 32];
}
__global__ void broadcast(float *a, float *b) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    b[i] = a[0];
}
__global__ void tile(float *a, float *b) {
    __shared__ float t[32][32];
    t[threadIdx.x][0] = a[threadIdx.x];
    __syncthreads();
    b[threadIdx.x] = t[threadIdx.x][0];
}
__global__ void padded(float *a, float *b) {
    __shared__ float t[32][33];
    t[threadIdx.x][0] = a[threadIdx.x];
    __syncthreads();
    b[threadIdx.x] = t[threadIdx.x][0];
}
__global__ void count(float *a, float *total) {
    atomicAdd(total, a[threadIdx.x]);
}
__global__ void diverge(float *a, float *b) {
    int i = threadIdx.x;
    float v = a[i];
    if (i % 2 == 0) { v = v * 2.0f + 1.0f; } else { v = v * 3.0f - 1.0f; }
    b[i] = v;
}
"#;

fn cost_of(kernel: &str, grid: u32, block: u32, len: usize) -> crate::cost::CostReport {
    let mut sim = Sim::of(COST_KERNELS);
    let mut a = floats(&vec![1.0; len]);
    let mut b = floats(&vec![0.0; len]);
    let r = sim.launch(kernel, lin(grid), lin(block), &mut [&mut a, &mut b], &[]);
    r.cost.expect("the cost model is on by default")
}

#[test]
fn the_cost_verdict_counts_the_launchs_own_blocks() {
    // 20 blocks of 48 threads are 40 warps: the verdict says 20 blocks, not 960 / 64 = 15.
    let c = cost_of("coalesced", 20, 48, 960);
    assert_eq!((c.blocks, c.block_threads, c.threads), (20, 48, 960));
    // Many small blocks: counted as launched (`render::cost`'s tests read the verdict's words).
    let c = cost_of("coalesced", 20 * 2048, 48, 20 * 2048 * 48);
    assert_eq!((c.blocks, c.block_threads), (20 * 2048, 48));
}

#[test]
fn cost_counts_sectors_per_request_as_nsight_compute_does() {
    let c = cost_of("coalesced", 4, 256, 1024);
    assert_eq!(c.totals.sectors_per_request(), 4.0);
    assert_eq!(c.totals.global_requests, 2 * 32);
    let c = cost_of("strided", 4, 256, 1024);
    assert_eq!((c.totals.load_sectors, c.totals.global_load_requests), (32 * 32, 32), "32 sectors per load");
    let c = cost_of("broadcast", 1, 32, 32);
    assert_eq!(c.totals.load_sectors, 1, "one address for the whole warp is one sector");
}

#[test]
fn cost_counts_bank_conflicts_and_atomics_and_divergence() {
    let c = cost_of("tile", 1, 32, 32);
    assert_eq!(c.totals.shared_requests, 2);
    assert_eq!(c.totals.wavefronts, 64, "a column of a 32-wide float tile: 32-way conflicts");
    assert_eq!(c.totals.bank_conflicts(), 62);
    let c = cost_of("padded", 1, 32, 32);
    assert_eq!(c.totals.bank_conflicts(), 0, "a padded column falls in 32 banks");
    let c = cost_of("count", 2, 64, 128);
    assert_eq!((c.totals.atomics, c.atomics.hottest_address), (128, 128));
    let c = cost_of("diverge", 1, 32, 32);
    let body = c.places.iter().filter(|p| p.counts.lanes > 0 && p.counts.lanes < p.counts.issued * 32);
    assert!(body.count() >= 2, "both branches run with half the lanes");
    assert!(c.totals.simt_efficiency() < 1.0 && c.totals.simt_efficiency() > 0.5);
}

#[test]
fn cost_is_off_on_the_sequential_schedule_and_when_disabled() {
    let mut sim = Sim::of(COST_KERNELS).config(with(Schedule::Sequential, 0));
    let mut a = floats(&[1.0; 32]);
    let mut b = floats(&[0.0; 32]);
    assert!(sim.launch("coalesced", lin(1), lin(32), &mut [&mut a, &mut b], &[]).cost.is_none());
    let mut sim = Sim::of(COST_KERNELS).config(SimConfig { cost: None, ..SimConfig::default() });
    assert!(sim.launch("coalesced", lin(1), lin(32), &mut [&mut a, &mut b], &[]).cost.is_none());
}

/// Shifts by the width or more: `<<` gives 0, `>>` fills with the sign (0, or -1 for a negative
/// signed value), as the GPU's `shl`/`shr` do, which clamp the count to the width.
#[test]
fn cuda_shifts_by_the_width_or_more_are_defined_as_on_a_gpu() {
    let mut sim = Sim::of(
        "__global__ void shifts(int *a, int s) {\n\
         unsigned int u = 0xffffffffu;\n\
         a[0] = -1 >> s; a[1] = 1 << s; a[2] = -8 >> (s + 8); a[3] = 8 >> s; a[4] = (int)(u >> s); a[5] = -8 >> 1;\n\
         }",
    );
    let mut a = Buffer::zeros(DType::I32, Shape::D1(6));
    let r = sim.launch("shifts", lin(1), lin(1), &mut [&mut a], &[ScalarArg::I32(32)]);
    assert!(r.findings.is_empty(), "{:?}", r.findings);
    assert_eq!(a.to_f64_vec(), vec![-1.0, 0.0, -1.0, 0.0, 0.0, -4.0]);
}

/// An index too large for the address it makes (`a[9223372036854775807]`, `a[1 << 46]` of
/// floats) is reported far past the end, never as a small index it wrapped around to, and never
/// reaches another buffer.
#[test]
fn cuda_an_index_beyond_any_address_is_reported_as_such() {
    let mut sim =
        Sim::of("__global__ void far(float *a, float *b, long long i) { a[0] = a[i]; a[i] = 5.0f; b[1] = 1.0f; }");
    for (i, far) in [(i64::MAX, i64::MAX), (1 << 46, i64::MAX), (i64::MIN, i64::MIN), (-(1 << 46), i64::MIN)] {
        let (mut a, mut b) = (floats(&[1.0, 2.0]), floats(&[0.0, 0.0]));
        let r = sim.launch("far", lin(1), lin(1), &mut [&mut a, &mut b], &[ScalarArg::I64(i)]);
        let indices: Vec<(i64, i64)> = r
            .findings
            .iter()
            .filter_map(|f| match f {
                Finding::OutOfBounds { min_index, first_index, .. } => Some((*min_index, *first_index)),
                _ => None,
            })
            .collect();
        assert_eq!(indices, vec![(far, far), (far, far)], "index {i}: {:?}", r.findings);
        assert_eq!((a.to_f64_vec(), b.to_f64_vec()), (vec![0.0, 2.0], vec![0.0, 1.0]), "index {i}");
    }
}

/// A launch bounded only by a huge step budget stops at the time limit, with a finding that
/// says so, and tells a progress sink how it is getting on, then that it ended.
#[test]
fn cuda_a_long_launch_stops_at_the_time_limit_and_reports_progress() {
    use std::sync::{Arc, Mutex};
    let seen: Arc<Mutex<Vec<super::Progress>>> = Arc::default();
    let sink = {
        let seen = seen.clone();
        super::ProgressSink(Arc::new(move |p| seen.lock().unwrap().push(p)))
    };
    let config = SimConfig {
        max_steps: u64::MAX / 64,
        time_limit: Some(std::time::Duration::from_secs(2)),
        progress: Some(sink),
        ..SimConfig::default()
    };
    let mut sim = Sim::of("__global__ void spin(int *a) { while (a[1] == 0) { a[0] += 1; } }").config(config);
    let mut a = Buffer::zeros(DType::I32, Shape::D1(2));
    let start = std::time::Instant::now();
    let r = sim.launch("spin", lin(4096), lin(256), &mut [&mut a], &[]);
    assert!(start.elapsed() < std::time::Duration::from_secs(30), "{:?}", start.elapsed());
    let Some(Finding::StepLimit { time_limit: Some(limit), .. }) = r.findings.last() else {
        panic!("{:?}", r.findings)
    };
    assert_eq!(limit.as_secs(), 2);
    assert!(r.aborted);
    let seen = seen.lock().unwrap();
    assert!(seen.len() >= 2, "{seen:?}");
    assert!(seen[..seen.len() - 1].iter().all(|p| !p.done && p.blocks == 4096 && p.blocks_started >= 1));
    assert!(seen.last().unwrap().done);
}

/// A launch on several threads that the time limit stops is reported from where its replay
/// got to, with its steps; it is not run again on one thread (which would find the time spent
/// and report next to no steps).
#[test]
fn cuda_a_launch_on_several_threads_stops_at_the_time_limit_where_it_got_to() {
    let config = SimConfig {
        max_steps: u64::MAX / 64,
        threads: 2,
        time_limit: Some(std::time::Duration::from_secs(1)),
        ..SimConfig::default()
    };
    let mut sim = Sim::of(
        "__global__ void count(int *a) { int i = blockIdx.x * blockDim.x + threadIdx.x; \
         for (int k = 0; k < 1000000000; k++) a[i] += 1; }",
    )
    .config(config);
    let mut a = Buffer::zeros(DType::I32, Shape::D1(256 * 256));
    let r = sim.launch("count", lin(256), lin(256), &mut [&mut a], &[]);
    let Some(&Finding::StepLimit { time_limit: Some(_), steps, .. }) = r.findings.last() else {
        panic!("{:?}", r.findings)
    };
    assert!(r.aborted);
    // Run again on one thread, the launch would stop within its first few polls of the clock:
    // a few thousand steps.
    assert!(steps > 200_000, "{steps} steps: the launch ran again on one thread");
}

/// Kernels that read memory before writing it, and correct ones that must not be flagged.
const UNINIT: &str = r#"__global__ void shared_unset(float *out) {
    __shared__ float s[64];
    if (threadIdx.x < 32) s[threadIdx.x] = 1.0f;
    __syncthreads();
    out[threadIdx.x] = s[threadIdx.x];
}
__global__ void shared_sum_unset(float *in, float *out) {
    __shared__ float acc;
    __syncthreads();
    atomicAdd(&acc, in[threadIdx.x]);
    __syncthreads();
    if (threadIdx.x == 0) out[blockIdx.x] = acc;
}
__global__ void shared_sum_zeroed(float *in, float *out) {
    __shared__ float acc;
    if (threadIdx.x == 0) acc = 0.0f;
    __syncthreads();
    atomicAdd(&acc, in[threadIdx.x]);
    __syncthreads();
    if (threadIdx.x == 0) out[blockIdx.x] = acc;
}
__global__ void shared_neighbour(float *out) {
    __shared__ float s[64];
    s[threadIdx.x] = threadIdx.x;
    __syncthreads();
    out[blockIdx.x * 64 + threadIdx.x] = s[63 - threadIdx.x];
}
__global__ void shared_block0_only(int *out) {
    __shared__ int s[32];
    if (blockIdx.x == 0) s[threadIdx.x] = 7;
    __syncthreads();
    out[blockIdx.x * 32 + threadIdx.x] = s[threadIdx.x];
}
__global__ void local_unset(float *in, float *out, int n) {
    float sum;
    for (int k = 0; k < n; k++) sum += in[k];
    out[threadIdx.x] = sum;
}
__global__ void local_some_paths(int *out) {
    int v;
    if (threadIdx.x % 2 == 0) v = 5;
    out[threadIdx.x] = v;
}
__global__ void local_all_paths(int *out, int n) {
    int v;
    float sum = 0.0f;
    if (threadIdx.x % 2 == 0) {
        v = 5;
    } else {
        v = 6;
    }
    int w;
    for (int k = 0; k < n; k++) {
        w = k;
        sum += w;
    }
    int y;
    y = v;
    y += 1;
    out[threadIdx.x] = y + (int)sum;
}
__device__ int pick(int a) {
    int r;
    if (a > 0) r = a;
    return r;
}
__global__ void local_in_device_function(int *out) {
    out[threadIdx.x] = pick(threadIdx.x);
}
__global__ void shared_previous_iteration(float *out) {
    __shared__ float s[32];
    for (int k = 0; k < 4; k++) {
        if (k > 0) out[threadIdx.x] += s[(threadIdx.x + 1) % 32];
        __syncthreads();
        s[threadIdx.x] = k;
        __syncthreads();
    }
}
"#;

fn uninit_findings(r: &LaunchReport) -> Vec<&Finding> {
    r.findings.iter().filter(|f| matches!(f, Finding::Uninit { .. })).collect()
}

#[test]
fn shared_memory_read_before_written_is_a_finding_and_reads_nan() {
    for schedule in Schedule::ALL {
        let mut sim = Sim::of(UNINIT).config(with(schedule, 1));
        let mut out = floats(&[0.0; 64]);
        let r = sim.launch("shared_unset", lin(2), lin(64), &mut [&mut out], &[]);
        let [Finding::Uninit { memory, index, count, elements, first, .. }] = &uninit_findings(&r)[..] else {
            panic!("{schedule}: {:?}", r.findings)
        };
        assert_eq!(memory, &Memory::Shared("s".into()));
        // Both blocks read the 32 unset elements: 64 reads of 32 distinct elements.
        assert_eq!((*count, *elements), (64, 32), "{schedule}");
        assert!((32..64).contains(&index.unwrap()));
        assert_eq!(sim.line(first.span), 5);
        let v = out.to_f64_vec();
        assert!(v[..32].iter().all(|x| *x == 1.0) && v[32..].iter().all(|x| x.is_nan()), "{v:?}");
    }
}

#[test]
fn an_atomic_on_an_unset_shared_accumulator_is_a_finding() {
    let mut sim = Sim::of(UNINIT);
    let mut input = floats(&[1.0; 64]);
    let mut out = floats(&[0.0; 2]);
    let r = sim.launch("shared_sum_unset", lin(2), lin(64), &mut [&mut input, &mut out], &[]);
    let [Finding::Uninit { memory, elements, .. }] = &uninit_findings(&r)[..] else { panic!("{:?}", r.findings) };
    assert_eq!((memory.name(), *elements), ("acc", 1));
    assert!(out.to_f64_vec().iter().all(|x| x.is_nan()));

    let mut out = floats(&[0.0; 2]);
    let r = sim.launch("shared_sum_zeroed", lin(2), lin(64), &mut [&mut input, &mut out], &[]);
    assert!(r.findings.is_empty(), "{:?}", r.findings);
    assert_eq!(out.to_f64_vec(), vec![64.0, 64.0]);
}

#[test]
fn shared_memory_written_by_other_threads_or_earlier_iterations_is_not_a_finding() {
    for schedule in Schedule::ALL {
        let mut sim = Sim::of(UNINIT).config(with(schedule, 2));
        let mut out = floats(&[0.0; 128]);
        let r = sim.launch("shared_neighbour", lin(2), lin(64), &mut [&mut out], &[]);
        assert!(r.findings.is_empty(), "{schedule}: {:?}", r.findings);
        assert_eq!(out.to_f64_vec()[..64], (0..64).rev().map(|i| i as f64).collect::<Vec<_>>()[..]);

        let mut out = floats(&[0.0; 32]);
        let r = sim.launch("shared_previous_iteration", lin(1), lin(32), &mut [&mut out], &[]);
        assert!(r.findings.is_empty(), "{schedule}: {:?}", r.findings);
        assert!(out.to_f64_vec().iter().all(|x| *x == 3.0));
    }
}

#[test]
fn every_block_starts_with_its_shared_memory_unset() {
    // One block at a time, each in turn gets the memory the one before used: what block 0 wrote
    // must not count as written for block 1.
    let mut sim = Sim::of(UNINIT).config(with(Schedule::Sequential, 0));
    let mut out = Buffer::zeros(DType::I32, Shape::D1(64));
    let r = sim.launch("shared_block0_only", lin(2), lin(32), &mut [&mut out], &[]);
    let [Finding::Uninit { first, count, .. }] = &uninit_findings(&r)[..] else { panic!("{:?}", r.findings) };
    assert_eq!((first.thread.block, *count), ([1, 0, 0], 32));
    let v = out.to_f64_vec();
    assert!(v[..32].iter().all(|x| *x == 7.0));
    assert!(v[32..].iter().all(|x| *x == -559038737.0), "{v:?}");
}

#[test]
fn a_local_variable_read_before_any_assignment_is_a_finding() {
    let mut sim = Sim::of(UNINIT);
    let mut input = floats(&[1.0; 4]);
    let mut out = floats(&[0.0; 32]);
    let r = sim.launch("local_unset", lin(1), lin(32), &mut [&mut input, &mut out], &[ScalarArg::I32(4)]);
    let [Finding::Uninit { memory, index, elements, count, first, .. }] = &uninit_findings(&r)[..] else {
        panic!("{:?}", r.findings)
    };
    // Reported once per thread, however often the loop reads it.
    assert_eq!((memory, *index, *elements, *count), (&Memory::Variable("sum".into()), None, 32, 32));
    let line = UNINIT.lines().position(|l| l.contains("sum += in[k]")).unwrap() as u32 + 1;
    assert_eq!(sim.line(first.span), line);
    assert!(out.to_f64_vec().iter().all(|x| x.is_nan()));

    let mut out = Buffer::zeros(DType::I32, Shape::D1(32));
    let r = sim.launch("local_some_paths", lin(1), lin(32), &mut [&mut out], &[]);
    let [Finding::Uninit { elements, first, .. }] = &uninit_findings(&r)[..] else { panic!("{:?}", r.findings) };
    assert_eq!((*elements, first.thread.thread[0] % 2), (16, 1));
    let v = out.to_f64_vec();
    assert!((0..32).all(|i| v[i] == if i % 2 == 0 { 5.0 } else { -559038737.0 }), "{v:?}");

    let mut out = Buffer::zeros(DType::I32, Shape::D1(32));
    let r = sim.launch("local_in_device_function", lin(1), lin(32), &mut [&mut out], &[]);
    let [Finding::Uninit { memory, elements, .. }] = &uninit_findings(&r)[..] else { panic!("{:?}", r.findings) };
    assert_eq!((memory.name(), *elements), ("r", 1));
}

#[test]
fn a_local_variable_assigned_on_every_path_is_not_a_finding() {
    for schedule in Schedule::ALL {
        let mut sim = Sim::of(UNINIT).config(with(schedule, 4));
        let mut out = Buffer::zeros(DType::I32, Shape::D1(64));
        let r = sim.launch("local_all_paths", lin(1), lin(64), &mut [&mut out], &[ScalarArg::I32(4)]);
        assert!(r.findings.is_empty(), "{schedule}: {:?}", r.findings);
        assert_eq!(out.to_f64_vec()[..2], [12.0, 13.0]);
    }
}

#[test]
fn reference_parameters_write_to_the_callers_register_and_memory() {
    let mut sim = Sim::of(
        r#"
__device__ void bump(int &x, int by = 1) { x += by; }
__device__ void set(int &x) { x = 7; }
__global__ void refs(int *a) {
    int i = threadIdx.x;
    int r = i;
    bump(r);
    bump(r, 10);
    bump(a[i], r);
    int late;
    set(late);
    a[i] += late;
}
"#,
    );
    let mut a = Buffer::from_nums(DType::I32, Shape::D1(4), (0..4).map(|i| Num::Int(100 * i)));
    let r = sim.launch("refs", lin(1), lin(4), &mut [&mut a], &[]);
    // a[i] = 100 i + (i + 11) + 7; `late`, written through the reference, is not uninitialised.
    assert_eq!(a.to_f64_vec(), vec![18.0, 119.0, 220.0, 321.0]);
    assert!(r.findings.is_empty(), "{:?}", r.findings);
}

#[test]
fn clock_counts_the_warps_steps() {
    let mut sim = Sim::of(
        r#"
__global__ void timed(long long *t, int n) {
    long long start = clock64();
    int s = 0;
    for (int k = 0; k < n * (int)threadIdx.x; k++) s += k;
    t[threadIdx.x] = clock() - start + (s & 0);
}
"#,
    );
    let mut t = Buffer::zeros(DType::I64, Shape::D1(2));
    sim.launch("timed", lin(1), lin(2), &mut [&mut t], &[ScalarArg::I32(5)]);
    let v = t.to_f64_vec();
    // Both lanes of the one warp read the same clock; the loop of lane 1 ran before it.
    assert_eq!(v[0], v[1]);
    let mut short = Buffer::zeros(DType::I64, Shape::D1(2));
    sim.launch("timed", lin(1), lin(2), &mut [&mut short], &[ScalarArg::I32(1)]);
    assert!(short.to_f64_vec()[0] < v[0] && short.to_f64_vec()[0] > 0.0, "{:?} vs {v:?}", short.to_f64_vec());
}

const LOCAL_ARRAYS: &str = r#"__global__ void unset(float *in, float *out) {
    float t[4];
    for (int k = 0; k < 3; k++) t[k] = in[k];
    out[blockIdx.x * 32 + threadIdx.x] = t[threadIdx.x % 4];
}
__global__ void initialised(float *in, float *out) {
    float t[4] = {0};
    for (int k = 0; k < 3; k++) t[k] = in[k];
    out[blockIdx.x * 32 + threadIdx.x] = t[threadIdx.x % 4];
}
__global__ void written_then_read(int *out) {
    int t[8];
    for (int k = 0; k < 8; k++) t[k] = k * threadIdx.x;
    int s = 0;
    for (int k = 0; k < 8; k++) s += t[k];
    out[blockIdx.x * 32 + threadIdx.x] = s;
}
__global__ void each_pass_starts_over(int *out) {
    int acc = 0;
    for (int k = 0; k < 2; k++) {
        int t[2];
        if (k == 0) t[0] = 1;
        acc += t[0];
    }
    out[threadIdx.x] = acc;
}
__device__ void fill(int *p, int n) {
    for (int k = 0; k < n; k++) p[k] = k;
}
__global__ void through_a_pointer(int *out, int n) {
    int t[4];
    fill(t, n);
    out[threadIdx.x] = t[3];
}
"#;

#[test]
fn a_local_array_element_read_before_the_thread_wrote_it_is_a_finding_and_reads_nan() {
    for schedule in Schedule::ALL {
        let mut sim = Sim::of(LOCAL_ARRAYS).config(with(schedule, 3));
        let mut input = floats(&[1.0, 2.0, 3.0]);
        let mut out = floats(&[0.0; 64]);
        let r = sim.launch("unset", lin(2), lin(32), &mut [&mut input, &mut out], &[]);
        let [Finding::Uninit { memory, index, count, elements, first, .. }] = &uninit_findings(&r)[..] else {
            panic!("{schedule}: {:?}", r.findings)
        };
        assert_eq!(memory, &Memory::Local("t".into()));
        // Every fourth thread of the 64 reads the one element nobody wrote: t[3].
        assert_eq!((*index, *count, *elements), (Some(3), 16, 1), "{schedule}");
        assert_eq!(first.thread.thread[0] % 4, 3);
        assert_eq!(sim.line(first.span), 4);
        let v = out.to_f64_vec();
        assert!((0..64).all(|i| if i % 4 == 3 { v[i].is_nan() } else { v[i] == (i % 4 + 1) as f64 }), "{v:?}");

        let mut out = floats(&[0.0; 64]);
        let r = sim.launch("initialised", lin(2), lin(32), &mut [&mut input, &mut out], &[]);
        assert!(r.findings.is_empty(), "{schedule}: {:?}", r.findings);
        assert_eq!(out.to_f64_vec()[..4], [1.0, 2.0, 3.0, 0.0]);
    }
}

#[test]
fn a_local_array_the_thread_fills_first_is_not_a_finding() {
    let mut sim = Sim::of(LOCAL_ARRAYS);
    let mut out = Buffer::zeros(DType::I32, Shape::D1(64));
    let r = sim.launch("written_then_read", lin(2), lin(32), &mut [&mut out], &[]);
    assert!(r.findings.is_empty(), "{:?}", r.findings);
    assert_eq!(out.to_f64_vec()[..3], [0.0, 28.0, 56.0]);

    let mut out = Buffer::zeros(DType::I32, Shape::D1(32));
    let r = sim.launch("through_a_pointer", lin(1), lin(32), &mut [&mut out], &[ScalarArg::I32(4)]);
    assert!(r.findings.is_empty(), "{:?}", r.findings);
    assert!(out.to_f64_vec().iter().all(|x| *x == 3.0));
}

#[test]
fn a_local_array_is_unwritten_again_on_each_pass_through_its_declaration() {
    let mut sim = Sim::of(LOCAL_ARRAYS);
    let mut out = Buffer::zeros(DType::I32, Shape::D1(32));
    let r = sim.launch("each_pass_starts_over", lin(1), lin(32), &mut [&mut out], &[]);
    let [Finding::Uninit { memory, index, first, .. }] = &uninit_findings(&r)[..] else { panic!("{:?}", r.findings) };
    assert_eq!((memory.name(), *index), ("t", Some(0)));
    assert_eq!(sim.line(first.span), 23);
    // 1 from the first pass, then the poison (0xDEADBEEF) from the second.
    assert!(out.to_f64_vec().iter().all(|x| *x == (1i32.wrapping_add(0xDEADBEEFu32 as i32)) as f64));

    // Written through a pointer by a device function: only the elements it reached are written.
    let mut out = Buffer::zeros(DType::I32, Shape::D1(32));
    let r = sim.launch("through_a_pointer", lin(1), lin(32), &mut [&mut out], &[ScalarArg::I32(3)]);
    let [Finding::Uninit { index, elements, .. }] = &uninit_findings(&r)[..] else { panic!("{:?}", r.findings) };
    assert_eq!((*index, *elements), (Some(3), 1));
}

#[test]
fn local_arrays_read_zeros_without_findings() {
    let mut sim = Sim::of(LOCAL_ARRAYS).config(SimConfig { findings: false, ..SimConfig::default() });
    let mut input = floats(&[1.0, 2.0, 3.0]);
    let mut out = floats(&[0.0; 32]);
    let r = sim.launch("unset", lin(1), lin(32), &mut [&mut input, &mut out], &[]);
    assert!(r.findings.is_empty(), "{:?}", r.findings);
    assert_eq!(out.to_f64_vec()[..4], [1.0, 2.0, 3.0, 0.0]);
}

const EMPTY: &str = r#"__global__ void fill_first(int *d, int n) {
    if (threadIdx.x < n) d[threadIdx.x] = threadIdx.x;
}
__global__ void copy_all(const int *d, int *out) {
    out[threadIdx.x] = d[threadIdx.x];
}
"#;

#[test]
fn a_buffer_made_with_empty_is_unwritten_until_a_launch_or_the_host_writes_it() {
    let mut sim = Sim::of(EMPTY);
    let mut d = Buffer::empty(DType::I32, Shape::D1(32));
    let r = sim.launch("fill_first", lin(1), lin(32), &mut [&mut d], &[ScalarArg::I32(20)]);
    assert!(r.findings.is_empty(), "{:?}", r.findings);
    // What the launch wrote is written from now on; the rest is not.
    assert_eq!(d.unset_count(), 12);
    assert!(!d.is_unset(19) && d.is_unset(20));
    let mut out = Buffer::zeros(DType::I32, Shape::D1(32));
    let r = sim.launch("copy_all", lin(1), lin(32), &mut [&mut d, &mut out], &[]);
    let [Finding::Uninit { memory, index, count, elements, first, .. }] = &uninit_findings(&r)[..] else {
        panic!("{:?}", r.findings)
    };
    assert_eq!((memory, *count, *elements), (&Memory::Global("a".into()), 12, 12));
    assert!((20..32).contains(&index.unwrap()) && first.thread.thread[0] >= 20);
    let v = out.to_f64_vec();
    assert!((0..32).all(|i| v[i] == if i < 20 { i as f64 } else { -559038737.0 }), "{v:?}");

    d.set(25, Num::Int(1));
    d.mark_written(|i| i > 25);
    let r = sim.launch("copy_all", lin(1), lin(32), &mut [&mut d, &mut out], &[]);
    let [Finding::Uninit { elements, .. }] = &uninit_findings(&r)[..] else { panic!("{:?}", r.findings) };
    assert_eq!(*elements, 5);
}

const CASTS: &str = r#"__global__ void skew(float *a, int by) {
    char *bytes = (char *) a;
    float *p = (float *) (bytes + by);
    a[0] = p[0];
}
__global__ void halves(short *h, int *out) {
    int *words = (int *) h;
    out[threadIdx.x] = words[threadIdx.x];
    __shared__ char raw[64];
    double *d = (double *) (raw + 8 * (threadIdx.x % 4));
    d[0] = 1.0;
}
"#;

#[test]
fn a_misaligned_access_traps_as_on_a_gpu_and_aligned_casts_run() {
    let mut sim = Sim::of(CASTS);
    let mut a = floats(&[1.0, 2.0, 3.0, 4.0]);
    let r = sim.launch("skew", lin(1), lin(1), &mut [&mut a], &[ScalarArg::I32(1)]);
    assert!(r.aborted, "{:?}", r.findings);
    assert!(
        matches!(&r.findings[..], [Finding::Trap { message, .. }] if message.starts_with("misaligned address: a 4-byte read")),
        "{:?}",
        r.findings
    );
    assert_eq!(a.to_f64_vec(), vec![1.0, 2.0, 3.0, 4.0], "the stopped launch changed nothing");
    // A cast to a multiple of the size is fine: bytes + 4 is a[1].
    let r = sim.launch("skew", lin(1), lin(1), &mut [&mut a], &[ScalarArg::I32(4)]);
    assert!(!r.aborted && r.findings.is_empty(), "{:?}", r.findings);
    assert_eq!(a.to_f64_vec()[0], 2.0);
    // Narrow buffers read as wider words, and a char array in shared memory holding doubles.
    let mut h = Buffer::zeros(DType::I16, Shape::D1(8));
    let mut out = Buffer::zeros(DType::I32, Shape::D1(4));
    let r = sim.launch("halves", lin(1), lin(4), &mut [&mut h, &mut out], &[]);
    assert!(!r.aborted, "{:?}", r.findings);
}

/// Values the session set (`LaunchSpec::symbols`) go over a variable's initialiser at the start
/// of a launch, only as far as they reach; every launch starts again from both, so a kernel's
/// write to a `__device__` variable does not last.
#[test]
fn symbol_writes_go_over_initialisers_at_every_launch() {
    let mut sim = Sim::of(
        "__constant__ float coef[3] = {1, 2, 3};\n__device__ int count;\n\
         __global__ void read(float *out) { out[threadIdx.x] = coef[threadIdx.x] + count; __syncthreads(); if (threadIdx.x == 0) count += 100; }",
    );
    let mut out = floats(&[0.0; 3]);
    let symbols = vec![
        crate::launch::SymbolWrite { name: "coef".into(), bytes: 0.5f32.to_le_bytes().to_vec() },
        crate::launch::SymbolWrite { name: "count".into(), bytes: 10i32.to_le_bytes().to_vec() },
    ];
    for _ in 0..2 {
        let spec = LaunchSpec {
            kernel: "read".into(),
            grid: lin(1),
            block: lin(3),
            shared_bytes: 0,
            args: vec![Arg::Buffer(0)],
            symbols: symbols.clone(),
        };
        let mut lb = LaunchBuffers { names: vec!["out".into()], buffers: vec![&mut out] };
        let r = sim.backend.launch(&sim.module, &spec, &mut lb).expect("runs");
        assert!(r.findings.is_empty(), "{:?}", r.findings);
        assert_eq!(out.to_f64_vec(), vec![10.5, 12.0, 13.0]);
    }
    // Without them, the initialisers (and zeros where there is none).
    sim.launch("read", lin(1), lin(3), &mut [&mut out], &[]);
    assert_eq!(out.to_f64_vec(), vec![1.0, 2.0, 3.0]);
}

#[test]
fn a_bounds_finding_through_a_struct_pointer_counts_in_structs() {
    let mut sim = Sim::of("__global__ void shift(float4 *v) { v[threadIdx.x].w = v[threadIdx.x + 1].x; }");
    let mut w = floats(&[0.0; 8]);
    let r = sim.launch("shift", lin(1), lin(2), &mut [&mut w], &[]);
    let [Finding::OutOfBounds { len, min_index, max_index, first_index, .. }] = &r.findings[..] else {
        panic!("{:?}", r.findings)
    };
    // Eight floats are two float4s; thread 1 read v[2].
    assert_eq!((*len, *min_index, *max_index, *first_index), (2, 2, 2, 2));
}

/// Kernels that synchronise in every way the memory model has, with their unsynchronised twins.
const SYNC_KERNELS: &str = r#"
#include <cooperative_groups.h>
namespace cg = cooperative_groups;

__global__ void warp_sum(const float *in, float *out) {
    __shared__ float s[32];
    unsigned t = threadIdx.x;
    s[t] = in[t];
    __syncwarp();
    for (int k = 16; k > 0; k >>= 1) {
        float v = 0.0f;
        if (t < k) v = s[t] + s[t + k];
        __syncwarp();
        if (t < k) s[t] = v;
        __syncwarp();
    }
    if (t == 0) out[0] = s[0];
}

__global__ void warp_sum_unsynced(const float *in, float *out) {
    __shared__ float s[32];
    unsigned t = threadIdx.x;
    s[t] = in[t];
    for (int k = 16; k > 0; k >>= 1) {
        float v = 0.0f;
        if (t < k) v = s[t] + s[t + k];
        if (t < k) s[t] = v;
    }
    if (t == 0) out[0] = s[0];
}

__global__ void tile_sum(const float *in, float *out, int across) {
    cg::thread_block cta = cg::this_thread_block();
    cg::thread_block_tile<8> tile = cg::tiled_partition<8>(cta);
    __shared__ float s[64];
    unsigned t = threadIdx.x;
    s[t] = in[t];
    tile.sync();
    // Each tile's first lane adds its own tile's 8 values, or (across) the next tile's too.
    if (tile.thread_rank() == 0) {
        float v = 0.0f;
        for (int j = 0; j < 8 * (1 + across); j++) v += s[(t + j) % 64];
        out[t / 8] = v;
    }
    cg::sync(tile);
}

__global__ void block_votes(const int *in, int *out) {
    __shared__ int s[64];
    s[threadIdx.x] = in[threadIdx.x];
    int n = __syncthreads_count(in[threadIdx.x] > 0);
    int all = __syncthreads_and(in[threadIdx.x] > 0);
    int any = __syncthreads_or(in[threadIdx.x] > 1);
    if (threadIdx.x == 0) {
        out[0] = n;
        out[1] = all;
        out[2] = any;
        out[3] = s[63];
    }
}

__device__ unsigned int retired = 0;

__global__ void last_block_sum(const float *in, float *partial, float *out, int fence) {
    __shared__ float s[64];
    __shared__ bool last;
    unsigned t = threadIdx.x;
    s[t] = in[blockIdx.x * 64 + t];
    __syncthreads();
    if (t == 0) {
        float v = 0.0f;
        for (int j = 0; j < 64; j++) v += s[j];
        partial[blockIdx.x] = v;
    }
    if (fence) __threadfence();
    if (t == 0) {
        unsigned ticket = atomicInc(&retired, gridDim.x);
        last = (ticket == gridDim.x - 1);
    }
    __syncthreads();
    if (last && t == 0) {
        float v = 0.0f;
        for (int b = 0; b < gridDim.x; b++) v += partial[b];
        out[0] = v;
        retired = 0;
    }
}

__global__ void read_then_atomic(int *a) {
    if (threadIdx.x == 0) a[1] = a[0];
    else atomicAdd(&a[0], 1);
}

__global__ void atomic_then_read(int *a) {
    if (threadIdx.x != 0) atomicAdd(&a[0], 1);
    else a[1] = a[0];
}
"#;

#[test]
fn a_one_warp_reduction_with_syncwarp_has_no_race_and_without_it_races_in_the_warp() {
    let input: Vec<f64> = (0..32).map(|i| i as f64).collect();
    for schedule in Schedule::ALL {
        let mut sim = Sim::of(SYNC_KERNELS).config(with(schedule, 4));
        let mut a = floats(&input);
        let mut out = floats(&[0.0]);
        let r = sim.launch("warp_sum", lin(1), lin(32), &mut [&mut a, &mut out], &[]);
        assert!(r.findings.is_empty(), "{schedule}: {:?}", r.findings);
        assert_eq!(out.to_f64_vec(), vec![496.0], "{schedule}");
        let r = sim.launch("warp_sum_unsynced", lin(1), lin(32), &mut [&mut a, &mut out], &[]);
        let race = r.findings.iter().find(|f| matches!(f, Finding::Race { .. }));
        assert!(
            matches!(race, Some(Finding::Race { memory: Memory::Shared(_), same_warp: true, .. })),
            "{schedule}: {:?}",
            r.findings
        );
    }
}

#[test]
fn a_tile_sync_orders_its_own_tile_only() {
    let input: Vec<f64> = (0..64).map(|i| i as f64).collect();
    for schedule in Schedule::ALL {
        let mut sim = Sim::of(SYNC_KERNELS).config(with(schedule, 2));
        let mut a = floats(&input);
        let mut out = floats(&[0.0; 8]);
        let r = sim.launch("tile_sum", lin(1), lin(64), &mut [&mut a, &mut out], &[ScalarArg::I32(0)]);
        assert!(r.findings.is_empty(), "{schedule}: {:?}", r.findings);
        assert_eq!(out.to_f64_vec()[0], 28.0, "{schedule}");
        // Reading the next tile's values: its lanes wrote them, and a tile's sync does not order
        // another tile's lanes.
        let r = sim.launch("tile_sum", lin(1), lin(64), &mut [&mut a, &mut out], &[ScalarArg::I32(1)]);
        assert!(r.findings.iter().any(|f| matches!(f, Finding::Race { .. })), "{schedule}: {:?}", r.findings);
    }
}

#[test]
fn syncthreads_count_and_or_are_barriers_that_combine_a_predicate() {
    for schedule in Schedule::ALL {
        let mut sim = Sim::of(SYNC_KERNELS).config(with(schedule, 1));
        let values: Vec<Num> = (0..64).map(|i| Num::Int(if i % 4 == 0 { 0 } else { 1 + (i == 9) as i128 })).collect();
        let mut a = Buffer::from_nums(DType::I32, Shape::D1(64), values);
        let mut out = Buffer::zeros(DType::I32, Shape::D1(4));
        let r = sim.launch("block_votes", lin(1), lin(64), &mut [&mut a, &mut out], &[]);
        assert!(r.findings.is_empty(), "{schedule}: {:?}", r.findings);
        assert_eq!(out.to_f64_vec(), vec![48.0, 0.0, 1.0, 1.0], "{schedule}");
    }
}

#[test]
fn a_fence_then_an_atomic_orders_the_last_block_after_the_others() {
    let input: Vec<f64> = (0..512).map(|i| (i % 5) as f64).collect();
    let total: f64 = input.iter().sum();
    for schedule in Schedule::ALL {
        let mut sim = Sim::of(SYNC_KERNELS).config(with(schedule, 7));
        let mut a = floats(&input);
        let mut partial = floats(&[0.0; 8]);
        let mut out = floats(&[0.0]);
        let r =
            sim.launch("last_block_sum", lin(8), lin(64), &mut [&mut a, &mut partial, &mut out], &[ScalarArg::I32(1)]);
        assert!(r.findings.is_empty(), "{schedule}: {:?}", r.findings);
        assert_eq!(out.to_f64_vec(), vec![total], "{schedule}");
        // Without the fence the atomic publishes nothing: the last block's reads race.
        let r =
            sim.launch("last_block_sum", lin(8), lin(64), &mut [&mut a, &mut partial, &mut out], &[ScalarArg::I32(0)]);
        assert!(
            r.findings.iter().any(|f| matches!(f, Finding::Race { kernel_name: Some(n), .. } if n == "partial")),
            "{schedule}: {:?}",
            r.findings
        );
    }
}

#[test]
fn a_plain_read_races_with_an_atomic_whichever_runs_first() {
    for schedule in Schedule::ALL {
        for seed in 0..4 {
            for kernel in ["read_then_atomic", "atomic_then_read"] {
                let mut sim = Sim::of(SYNC_KERNELS).config(with(schedule, seed));
                let mut a = Buffer::zeros(DType::I32, Shape::D1(2));
                let r = sim.launch(kernel, lin(1), lin(32), &mut [&mut a], &[]);
                let races: Vec<_> = r.findings.iter().filter(|f| matches!(f, Finding::Race { .. })).collect();
                let [Finding::Race { first, second, .. }] = &races[..] else {
                    panic!("{kernel} {schedule} {seed}: {:?}", r.findings)
                };
                let accesses = [first.access, second.access];
                assert!(
                    accesses.contains(&Access::Read) && accesses.contains(&Access::Atomic),
                    "{kernel} {schedule} {seed}: {accesses:?}"
                );
            }
        }
    }
}

/// Valid CUDA that real code writes: shared memory at file scope, the address of a local,
/// attributes, C linkage.
const REAL_CODE: &str = r#"
__shared__ float tile[64];
extern __shared__ int dyn[];

__device__ __attribute__((always_inline)) float neighbour(int t) { return tile[(t + 1) % 64]; }

__device__ void bump(int *p, int by) { *p += by; }

extern "C" {
__global__ void rotate(const float *in, float *out) {
    int i = blockIdx.x * 64 + threadIdx.x;
    tile[threadIdx.x] = in[i];
    __syncthreads();
    out[i] = neighbour(threadIdx.x);
}

__global__ void rotate_unsynced(const float *in, float *out) {
    tile[threadIdx.x] = in[threadIdx.x];
    out[threadIdx.x] = neighbour(threadIdx.x);
}
}

extern "C" __global__ void __attribute__((noinline)) addresses(int *a) {
    int x = a[threadIdx.x];
    int *p = &x;
    bump(p, 10);
    bump(&x, 100);
    int y;
    bump(&y, 1);
    dyn[threadIdx.x] = x;
    a[threadIdx.x] = dyn[threadIdx.x];
}
"#;

#[test]
fn file_scope_shared_memory_is_each_blocks_and_checked_for_races() {
    // Two blocks, each with its own `tile`.
    let input: Vec<f64> = (0..128).map(|i| i as f64).collect();
    let expected: Vec<f64> = (0..128).map(|i| (i / 64 * 64 + (i + 1) % 64) as f64).collect();
    for schedule in Schedule::ALL {
        let mut sim = Sim::of(REAL_CODE).config(with(schedule, 3));
        let mut a = floats(&input);
        let mut out = floats(&[0.0; 128]);
        let r = sim.launch("rotate", lin(2), lin(64), &mut [&mut a, &mut out], &[]);
        assert!(r.findings.is_empty(), "{schedule}: {:?}", r.findings);
        assert_eq!(out.to_f64_vec(), expected, "{schedule}");
        let r = sim.launch("rotate_unsynced", lin(1), lin(64), &mut [&mut a, &mut out], &[]);
        assert!(
            r.findings.iter().any(|f| matches!(f, Finding::Race { memory: Memory::Shared(n), .. } if n == "tile")),
            "{schedule}: {:?}",
            r.findings
        );
    }
}

#[test]
fn a_local_whose_address_is_taken_lives_in_memory() {
    let mut sim = Sim::of(REAL_CODE);
    let mut a = Buffer::from_nums(DType::I32, Shape::D1(4), (0..4).map(Num::Int));
    let r = sim.launch_shared("addresses", lin(1), lin(4), 16, &mut [&mut a], &[]);
    assert_eq!(a.to_f64_vec(), vec![110.0, 111.0, 112.0, 113.0]);
    // `int y;` read through `bump(&y, 1)` before anything wrote it.
    let [Finding::Uninit { memory: Memory::Local(n), .. }] = &r.findings[..] else { panic!("{:?}", r.findings) };
    assert_eq!(n, "y");
}

/// A warp's loads and stores take a whole-warp path when its lanes stay in one region
/// (`Machine::access_warp`), and the lane-by-lane path otherwise, or whenever `:map`'s trace is
/// on: both must give the same values, findings, output, steps and cost, on every schedule.
#[test]
fn whole_warp_accesses_change_nothing_a_lane_by_lane_run_shows() {
    const SRC: &str = r#"
__device__ int hits;
__global__ void mix(float *a, double *d, unsigned char *c, float *out, int n) {
    __shared__ float s[64];
    __shared__ float never[64];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int t = threadIdx.x;
    s[t] = a[i];
    if (t == 3) s[t + 1] = 7.0f;
    __syncthreads();
    float v = s[(t + 1) % 64] + s[t] + never[t];
    out[i] = v;
    out[0] += 1.0f;
    d[i] = d[i] * 2.0 + (double)a[(i + 5) % n];
    c[i] = (unsigned char)(c[i] + t);
    if (i < 40) a[i + 60] = a[i] + 1.0f;
    if (t == 0) hits = hits + 1;
    a[i + t / 48 * n] += 0.5f;
}
"#;
    let n = 256usize;
    for schedule in Schedule::ALL {
        let run = |trace_writes: bool| {
            let config = SimConfig { schedule, seed: 3, trace_writes, ..SimConfig::default() };
            let mut sim = Sim::of(SRC).config(config);
            let mut a = floats(&(0..n).map(|i| i as f64 * 0.5).collect::<Vec<_>>());
            let mut d = Buffer::from_nums(DType::F64, Shape::D1(n), (0..n).map(|i| Num::Float(i as f64)));
            let mut c = Buffer::from_nums(DType::U8, Shape::D1(n), (0..n).map(|i| Num::Int(i as i128 % 200)));
            let mut out = Buffer::zeros(DType::F32, Shape::D1(n));
            let r = sim.launch(
                "mix",
                lin(n as u32 / 64),
                lin(64),
                &mut [&mut a, &mut d, &mut c, &mut out],
                &[ScalarArg::I32(n as i32)],
            );
            let bytes = [&a, &d, &c, &out].map(|b| b.bytes().to_vec());
            format!("{:?}", (r.findings, r.output, r.aborted, r.steps, r.cost, bytes))
        };
        let (fast, lane_by_lane) = (run(false), run(true));
        assert!(fast.contains("Race") && fast.contains("OutOfBounds") && fast.contains("Uninit"), "{fast}");
        assert_eq!(fast, lane_by_lane, "{schedule}");
    }
}

/// Kernels for [`any_number_of_threads_gives_the_same_launch`]: blocks that do not communicate
/// (with a read past the end, a read of shared memory nothing wrote, `printf` from some
/// threads, barriers in a loop, one block that prints and reads past the end after many that
/// do neither, more blocks than the reference GPU has SMs with the first still running when
/// the 133rd, on its SM, comes), and blocks that do (a lost update, a block sum with atomics, an
/// endless loop in one block).
const THREADED: &str = r#"
__global__ void scale_and_say(const float *a, float *b, int n) {
    __shared__ float never[64];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) b[i] = a[i] * 2.0f + a[i + 1];
    if (threadIdx.x % 37 == 5) printf("block %d thread %d: %.1f\n", blockIdx.x, threadIdx.x, b[i]);
    if (blockIdx.x % 4 == 3) b[i] += never[threadIdx.x];
    if (threadIdx.x % 32 == 31) b[i] += a[n + blockIdx.x * 2 + threadIdx.x / 32];
    if (threadIdx.x == 7) printf("no newline from %d", i);
}
#define TILE 8
__global__ void tiled(const float *A, float *C, int N) {
    __shared__ float As[TILE][TILE], Bs[TILE][TILE];
    int tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.y * TILE + ty, col = blockIdx.x * TILE + tx;
    float acc = 0.0f;
    for (int t = 0; t < (N + TILE - 1) / TILE; ++t) {
        As[ty][tx] = (row < N && t * TILE + tx < N) ? A[row * N + t * TILE + tx] : 0.0f;
        Bs[ty][tx] = (col < N && t * TILE + ty < N) ? A[(t * TILE + ty) * N + col] : 0.0f;
        __syncthreads();
        for (int k = 0; k < TILE; ++k) acc += As[ty][k] * Bs[k][tx];
        __syncthreads();
    }
    if (row < N && col < N) C[row * N + col] = acc;
}
__global__ void past_row(const float *a, float *b, int n) {
    __shared__ float s[4][16];
    int t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
    s[t / 16][t % 16] = a[i];
    __syncthreads();
    b[i] = s[0][t];
}
__global__ void lost_update(const float *a, float *b, int n) {
    b[0] += a[blockIdx.x % n];
    b[1 + blockIdx.x] = 1.0f;
}
__global__ void block_sum(const float *a, float *b, int n) {
    __shared__ float s[64];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    s[threadIdx.x] = i < n ? a[i] : 0.0f;
    __syncthreads();
    for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {
        if (threadIdx.x < stride) s[threadIdx.x] += s[threadIdx.x + stride];
        __syncthreads();
    }
    if (threadIdx.x == 0) atomicAdd(&b[0], s[0]);
}
__global__ void late_word(const float *a, float *b, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) b[i] = a[i] + 1.0f;
    if (blockIdx.x == gridDim.x - 3 && threadIdx.x == 4) printf("block %d: %.1f\n", blockIdx.x, a[n + i]);
}
__global__ void one_block_lags(const float *a, float *b, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float acc = 0.0f;
    int rounds = blockIdx.x == 0 ? 300 : 2;
    for (int k = 0; k < rounds; k++) acc += a[(threadIdx.x + k * 8) % n];
    if (i < n) b[i] = acc;
}
__global__ void one_block_spins(const float *a, float *b, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) b[i] = a[i];
    if (blockIdx.x == 5) while (true) {}
}
"#;

/// The same launches with 1, 2 and 3 worker threads give the same buffers, findings, `printf`
/// lines, step counts, stops and cost counts, byte for byte, with findings and the cost model on
/// and off and under the random (two seeds) and lockstep schedules; and blocks that do not communicate do run on several
/// threads, while those that do run on one.
#[test]
fn any_number_of_threads_gives_the_same_launch() {
    let n = 1024usize;
    let av: Vec<f64> = (0..n).map(|i| (i % 13) as f64 * 0.5).collect();
    // (kernel, grid, block, whether its blocks communicate)
    let cases = [
        ("scale_and_say", Dim3::linear(16), Dim3::linear(64), false),
        // More blocks than a batch of speculation: the next batch runs while one replays.
        ("scale_and_say", Dim3::linear(112), Dim3::linear(32), false),
        ("tiled", Dim3::new(4, 4, 1), Dim3::new(8, 8, 1), false),
        // Quiet blocks (nothing printed or found, the cost model off) whose steps the replay
        // need not place: fewer than it holds back, more, and many before a loud one.
        ("tiled", Dim3::new(2, 2, 1), Dim3::new(8, 8, 1), false),
        ("late_word", Dim3::linear(200), Dim3::linear(32), false),
        // Loads whose L1 lookups two blocks of one SM make in turn and interleaved.
        ("one_block_lags", Dim3::linear(300), Dim3::linear(32), false),
        // Indices past a row of a shared array, found in every block.
        ("past_row", Dim3::linear(16), Dim3::linear(64), false),
        ("lost_update", Dim3::linear(64), Dim3::linear(32), true),
        ("block_sum", Dim3::linear(16), Dim3::linear(64), true),
        ("one_block_spins", Dim3::linear(16), Dim3::linear(64), true),
    ];
    for (kernel, grid, block, communicates) in cases {
        for (schedule, seed) in [(Schedule::Random, 0), (Schedule::Random, 3), (Schedule::Lockstep, 0)] {
            for (findings, cost) in [(true, true), (true, false), (false, false)] {
                let run = |threads: usize| {
                    let config = SimConfig {
                        schedule,
                        seed,
                        findings,
                        cost: if cost { SimConfig::default().cost } else { None },
                        threads,
                        max_steps: 200_000,
                        time_limit: None,
                        ..SimConfig::default()
                    };
                    let mut sim = Sim::of(THREADED).config(config);
                    let (mut a, mut b) = (floats(&av), floats(&vec![0.0; n]));
                    let n = if kernel == "tiled" { 32 } else { n as i32 };
                    let r = sim.launch(kernel, grid, block, &mut [&mut a, &mut b], &[ScalarArg::I32(n)]);
                    let seen = format!(
                        "{:?}\n{:?}\n{:?}\nsteps {:?} aborted {} truncated {}\n{:?}",
                        b.to_f64_vec(),
                        r.findings,
                        r.output,
                        r.steps,
                        r.aborted,
                        r.output_truncated,
                        r.cost,
                    );
                    (seen, r, sim.backend.last_threads())
                };
                let what = format!("{kernel} {schedule:?} seed {seed} findings {findings} cost model {cost}");
                let (one, r, threads) = run(1);
                assert_eq!(threads, 1, "{what}");
                for n in [2, 3] {
                    let (many, _, threads) = run(n);
                    assert_eq!(one, many, "{what}: {n} threads");
                    assert_eq!(threads, if communicates { 1 } else { n }, "{what}: threads used");
                }
                // What each case is there to show.
                match kernel {
                    "scale_and_say" => {
                        assert!(r.output.len() >= grid.x as usize, "{what}: {:?}", r.output);
                        if findings {
                            assert!(one.contains("OutOfBounds") && one.contains("Uninit"), "{what}: {one}");
                        }
                    }
                    "tiled" => {
                        assert!(r.findings.is_empty(), "{what}: {:?}", r.findings);
                        assert_eq!(r.cost.is_some(), cost, "{what}");
                    }
                    "lost_update" if schedule == Schedule::Random => {
                        assert!(findings != r.findings.is_empty(), "{what}: {:?}", r.findings);
                    }
                    "late_word" => {
                        assert_eq!(r.output.len(), 1, "{what}: {:?}", r.output);
                        assert_eq!(findings, one.contains("OutOfBounds"), "{what}: {one}");
                    }
                    "one_block_spins" => assert!(r.aborted, "{what}"),
                    "one_block_lags" => {
                        let hits = r.cost.as_ref().map_or(0, |c| c.totals.l1_hits);
                        assert_eq!(hits > 0, cost, "{what}: L1 hits {hits}");
                    }
                    _ => {}
                }
            }
        }
    }
}

/// A kernel writing through a cast to a buffer it takes as `const` (`CONST` is `const`, or as
/// many spaces, so that every span is the same without it).
const CAST_AWAY: &str = r#"
__global__ void through_cast(CONST float *a, float *b, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    b[i] = a[(i + 33) % n];
    if (i % 3 == 0) printf("thread %d read %.1f\n", i, b[i]);
    ((float *) a)[i] = b[i] + 1.0f;
}
"#;

/// A launch assumes a `const` buffer is only read, and keeps no race shadow for it; a write
/// through a cast runs the launch again without the assumption: the same races (between
/// blocks too), values, output and cost as the kernel taking the buffer plain, on any number
/// of threads and schedule.
#[test]
fn a_write_through_a_cast_to_a_const_buffer_is_found_as_without_const() {
    let n = 512usize;
    let av: Vec<f64> = (0..n).map(|i| (i % 5) as f64).collect();
    for (schedule, seed) in [(Schedule::Random, 1), (Schedule::Lockstep, 0), (Schedule::Sequential, 0)] {
        for threads in [1, 2] {
            let run = |qualifier: &str| {
                let config = SimConfig { schedule, seed, threads, time_limit: None, ..SimConfig::default() };
                let mut sim = Sim::of(&CAST_AWAY.replace("CONST", qualifier)).config(config);
                let (mut a, mut b) = (floats(&av), floats(&vec![0.0; n]));
                let r = sim.launch("through_cast", lin(8), lin(64), &mut [&mut a, &mut b], &[ScalarArg::I32(n as i32)]);
                let races = r.findings.iter().filter(|f| matches!(f, Finding::Race { .. })).count();
                let seen = format!(
                    "{:?}\n{:?}\n{:?}\n{:?}\n{:?}\n{:?}",
                    a.to_f64_vec(),
                    b.to_f64_vec(),
                    r.findings,
                    r.output,
                    r.steps,
                    r.cost.map(|c| c.totals)
                );
                (seen, races)
            };
            let (cast, races) = run("const");
            let what = format!("{schedule:?} seed {seed}, {threads} threads");
            assert_eq!(cast, run("     ").0, "{what}");
            assert!(races > 0, "{what}: {cast}");
        }
    }
}

const ATOMIC_AND_MATH_KERNELS: &str = r#"
__global__ void count_uniform(int *c, int *idx) {
    atomicAdd(c, 1);
}
__global__ void count_indexed(int *c, int *idx) {
    atomicAdd(&c[idx[threadIdx.x]], 1);
}
__global__ void spread(int *c, int *idx) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    atomicAdd(&c[idx[i]], 1);
}
__global__ void accurate(float *a, float *b) {
    b[threadIdx.x] = sinf(a[threadIdx.x]);
}
__global__ void fast(float *a, float *b) {
    b[threadIdx.x] = __sinf(a[threadIdx.x]);
}
__global__ void div_const(int *a, int *b) {
    b[threadIdx.x] = a[threadIdx.x] / 3;
}
__global__ void div_var(int *a, int *b) {
    b[threadIdx.x] = a[threadIdx.x] / b[threadIdx.x];
}
__global__ void div_wide(int *a, int *b) {
    long long big = (long long)a[threadIdx.x] << b[0];
    b[threadIdx.x] = (int)(big / (long long)(threadIdx.x + 3));
}
__global__ void div_wide_const(int *a, int *b) {
    long long big = (long long)a[threadIdx.x] << b[0];
    b[threadIdx.x] = (int)(big / 3);
}
"#;

fn ints(v: &[i64]) -> Buffer {
    Buffer::from_nums(DType::I32, Shape::D1(v.len()), v.iter().map(|x| Num::Int(*x as i128)))
}

fn costed(kernel: &str, grid: u32, block: u32, a: &mut Buffer, b: &mut Buffer) -> crate::cost::CostReport {
    let mut sim = Sim::of(ATOMIC_AND_MATH_KERNELS);
    sim.launch(kernel, lin(grid), lin(block), &mut [a, b], &[]).cost.expect("the cost model is on by default")
}

#[test]
fn integer_atomics_on_a_warp_uniform_address_count_once_per_warp() {
    // `atomicAdd(c, 1)`: the compiler combines the warp's lanes; the same address reached
    // through data (`c[idx[i]]` with every index 0) it cannot see, and the lanes queue.
    let c = costed("count_uniform", 2, 64, &mut ints(&[0; 4]), &mut ints(&[0; 128]));
    assert_eq!((c.totals.atomics, c.atomics.hottest_address), (128, 4), "4 warps, one atomic each");
    let c = costed("count_indexed", 2, 64, &mut ints(&[0; 4]), &mut ints(&[0; 128]));
    assert_eq!((c.totals.atomics, c.atomics.hottest_address), (128, 128));
    assert!(c.atomics.one_address());
}

#[test]
fn atomics_close_together_queue_at_one_l2_atomic_unit() {
    let p = crate::cost::profiles::default_profile();
    let n = 4096usize;
    // Indices within 1 KB (one unit) against the same number spread over 256 KB.
    let near: Vec<i64> = (0..n as i64).map(|i| (i * 37) % 256).collect();
    let far: Vec<i64> = (0..n as i64).map(|i| (i * 37) % 65536).collect();
    let near = costed("spread", 16, 256, &mut ints(&vec![0; 65536]), &mut ints(&near));
    let far = costed("spread", 16, 256, &mut ints(&vec![0; 65536]), &mut ints(&far));
    assert!(!near.atomics.one_address(), "no single address is hot: 16 lanes each");
    assert!(near.atomics.busiest_unit_ns > 10.0 * far.atomics.busiest_unit_ns);
    assert!(near.atomics.busiest_unit_ops >= 4096 / 8, "each sector of each warp's request is an operation");
    assert!(near.estimate.time_us > far.estimate.time_us);
    assert!(near.atomics.busiest_unit_ns >= near.atomics.busiest_unit_ops as f64 * p.atomic_sector_ns);
}

#[test]
fn full_precision_math_and_division_by_a_variable_cost_more_issue_slots() {
    let slots = |k: &str, a: &mut Buffer, b: &mut Buffer| costed(k, 1, 32, a, b).totals.slots;
    let (accurate, fast) = (
        slots("accurate", &mut floats(&[1.0; 32]), &mut floats(&[0.0; 32])),
        slots("fast", &mut floats(&[1.0; 32]), &mut floats(&[0.0; 32])),
    );
    assert!(accurate >= fast + 64, "sinf is a routine, __sinf one instruction: {accurate} vs {fast}");
    let (by_var, by_const) = (
        slots("div_var", &mut ints(&[7; 32]), &mut ints(&[3; 32])),
        slots("div_const", &mut ints(&[7; 32]), &mut ints(&[3; 32])),
    );
    assert!(by_var >= by_const + 40, "a run-time divisor needs a routine: {by_var} vs {by_const}");
    // A 64-bit division runs the 32-bit routine when both operands fit 32 bits (the compiler
    // tests for it), the long one when a lane's do not: decided per warp, from the run.
    let wide = |kernel: &str, shift: i64| {
        let mut a = ints(&[5; 32]);
        let mut b = ints(&[shift; 32]);
        slots(kernel, &mut a, &mut b)
    };
    let (fits, does_not) = (wide("div_wide", 1), wide("div_wide", 40));
    assert!(does_not >= fits + 150, "past 32 bits the long routine: {does_not} vs {fits}");
    assert!(fits <= by_var + 40, "within 32 bits about the 32-bit routine: {fits} vs {by_var}");
    // By a constant it is a multiply and shifts, however wide the dividend.
    assert_eq!(wide("div_wide_const", 1), wide("div_wide_const", 40), "a constant divisor has no routine");
}

const AHEAD: &str = r#"__global__ void relay(float *a, const float *c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int all = gridDim.x * blockDim.x;
    float acc = 0.0f;
    for (int k = 0; k < n; k++) {
        acc += a[(i + 37 * k) % all] * c[k % 8] + 1.0f;
        a[i] = acc;
    }
}
__global__ void cast_writer(const float *c, float *out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float acc = 0.0f;
    for (int k = 0; k < n; k++) {
        acc += c[(i + k) % 64];
        if (i == 5 && k == 3) ((float *) c)[9] = acc;
    }
    out[i] = acc;
}
"#;

/// Warps run ahead of their turn through register-only code and, where nothing can change
/// what they read, loads: with findings off they go further than with findings on, and the
/// values, steps and cost counts are what they are with findings on (which orders every
/// access), on every schedule.
#[test]
fn running_ahead_of_the_schedule_changes_no_value() {
    for schedule in [Schedule::Random, Schedule::Lockstep, Schedule::Sequential] {
        for seed in [0, 3] {
            for cost in [true, false] {
                let run = |findings: bool, kernel: &str| {
                    let config = SimConfig {
                        findings,
                        schedule,
                        seed,
                        cost: if cost { SimConfig::default().cost } else { None },
                        threads: 1,
                        ..SimConfig::default()
                    };
                    let mut sim = Sim::of(AHEAD).config(config);
                    let mut a = floats(&(0..256).map(|i| (i % 5) as f64).collect::<Vec<_>>());
                    let mut c = floats(&(0..64).map(|i| (i % 3) as f64 * 0.5).collect::<Vec<_>>());
                    let r = if kernel == "relay" {
                        sim.launch("relay", lin(4), lin(64), &mut [&mut a, &mut c], &[ScalarArg::I32(40)])
                    } else {
                        sim.launch("cast_writer", lin(4), lin(64), &mut [&mut c, &mut a], &[ScalarArg::I32(40)])
                    };
                    (a.to_f64_vec(), c.to_f64_vec(), r.steps, r.cost)
                };
                for kernel in ["relay", "cast_writer"] {
                    assert_eq!(
                        run(false, kernel),
                        run(true, kernel),
                        "{kernel}, {schedule:?}, seed {seed}, cost {cost}"
                    );
                }
            }
        }
    }
}

const GATHER: &str = r#"__global__ void gather(const float *c, float *out, int n, int stride) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float acc = 0.0f;
    for (int k = 0; k < n; k++) acc += c[(i * stride + k * 8 * stride) % (1 << 18)];
    out[i] = acc;
}
"#;

/// Loads run inside a register-only run reach the cost model's caches at their own step
/// (one run ahead of its turn makes its L1 lookups when its step counts): a `const` input
/// (whose loads run in the run) costs what the same input without `const` (whose loads each
/// go through the machine) costs, on every schedule, where the order of the warps' loads
/// decides what stays in L1. Enough loads (of a sector a lane) that the counter makes its
/// pending lookups during the launch, not only at its end.
#[test]
fn loads_in_runs_reach_the_caches_at_their_step() {
    let src = GATHER.replace("const float *c", "float *c");
    for schedule in [Schedule::Random, Schedule::Lockstep, Schedule::Sequential] {
        let run = |kernels: &str| {
            let config = SimConfig { schedule, seed: 2, threads: 1, ..SimConfig::default() };
            let mut sim = Sim::of(kernels).config(config);
            let mut c = floats(&(0..1 << 18).map(|i| (i % 3) as f64 * 0.5).collect::<Vec<_>>());
            let mut out = floats(&[0.0; 512]);
            let args = [ScalarArg::I32(600), ScalarArg::I32(256)];
            let r = sim.launch("gather", lin(2), lin(256), &mut [&mut c, &mut out], &args);
            // The places' spans differ by the `const`: their counts, in order, do not.
            let cost = r.cost.map(|c| {
                let places: Vec<_> = c.places.iter().map(|p| p.counts.clone()).collect();
                (c.totals, places, format!("{:?}", c.estimate))
            });
            (out.to_f64_vec(), r.steps, cost)
        };
        let (with, without) = (run(GATHER), run(&src));
        // The sequential schedule has no cost model (it runs one thread at a time).
        assert_eq!(with.2.is_some(), schedule != Schedule::Sequential, "{schedule:?}");
        assert_eq!(with, without, "{schedule:?}");
    }
}

/// A Python kernel's 2-D array is a flat buffer in its C (`a[x * a_cols + y]`). Told which
/// parameters hold its extents (`Module::set_row_major`), the simulator finds a column past its
/// row, which lands on the next row (here a guard that compares each index with the other
/// dimension), with the same steps, output and cost counts as without.
#[test]
fn a_column_past_a_row_of_a_row_major_buffer_is_found_with_the_same_counts() {
    let src = "__global__ void fill(float *a, long long a_rows, long long a_cols) {\n    long long x = blockIdx.y * blockDim.y + threadIdx.y;\n    long long y = blockIdx.x * blockDim.x + threadIdx.x;\n    if (x < a_cols && y < a_rows) {\n        a[x * a_cols + y] = x * 1000 + y;\n    }\n}\n";
    let run = |row_major: bool| {
        let mut sim = Sim::of(src);
        if row_major {
            sim.module.set_row_major("fill", vec![crate::cuda::ast::RowMajor { pointer: 0, extents: vec![1, 2] }]);
        }
        let mut a = Buffer::zeros(DType::F32, Shape::D2(40, 30));
        let r = sim.launch(
            "fill",
            Dim3 { x: 3, y: 2, z: 1 },
            Dim3 { x: 16, y: 16, z: 1 },
            &mut [&mut a],
            &[ScalarArg::I64(40), ScalarArg::I64(30)],
        );
        (a.to_f64_vec(), r)
    };
    let (plain, without) = run(false);
    let (checked, with) = run(true);
    assert_eq!(plain, checked, "the access lands where it did");
    assert_eq!(without.steps, with.steps);
    assert_eq!(format!("{:?}", without.cost), format!("{:?}", with.cost));
    assert!(!without.findings.iter().any(|f| matches!(f, Finding::PastRow { .. })), "{:?}", without.findings);
    let past: Vec<&Finding> = with.findings.iter().filter(|f| matches!(f, Finding::PastRow { .. })).collect();
    let [
        Finding::PastRow {
            memory: Memory::Global(name),
            dim: 1,
            len: 30,
            count: 300,
            min_index: 30,
            max_index: 39,
            ..
        },
    ] = &past[..]
    else {
        panic!("{:?}", with.findings)
    };
    assert_eq!(name, "a");
    // Rows 0 to 29 and columns 30 to 39 write the next row's first ten elements.
    assert_eq!(checked[30], 1000.0 + 0.0, "a[1, 0] is row 1's own write, or row 0's column 30");
}
