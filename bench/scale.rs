//! The simulator at textbook sizes (issue 23): the naive matrix multiply at 256, 512 and 1024
//! and a copy of 2^24 floats, each with findings and the cost model on (a session's default),
//! findings only, and neither, beside the same loops in C compiled with `gcc -O1`. Run through
//! `bash bench/scale/run`, which compiles the C and passes its folder in `GRIDLAB_BENCH_C`.
//!
//! Prints a markdown table on stdout: per case and setting, median seconds of the launch alone
//! (the C programs time their loop alone too) on 1, 2 and all cores (`SimConfig::threads`), wall
//! and CPU (all threads together), the best wall time's ratio to C, and warp instructions
//! (steps) per second at that time.
//!
//! `cargo bench --bench scale -- 256 512` runs only the cases whose name holds one of the words;
//! `--threads=1` (or `=1,2`) picks the thread counts, `--settings=on-on,off-off` the settings
//! (findings-cost model), and `--runs=N` the launches per figure.

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use gridlab::backend::sim::{Schedule, SimBackend, SimConfig};
use gridlab::backend::{Arg, Backend, Dim3, LaunchBuffers, LaunchSpec, ScalarArg};
use gridlab::buffer::{Buffer, Num, Shape};
use gridlab::cuda::Module;
use gridlab::diag::SourceMap;
use gridlab::dtype::DType;

const KERNELS: &str = r#"
__global__ void matmul(const float *A, const float *B, float *C, int n) {
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < n && col < n) {
        float acc = 0.0f;
        for (int k = 0; k < n; k++) acc += A[row * n + k] * B[k * n + col];
        C[row * n + col] = acc;
    }
}
__global__ void copy(const float *a, float *b, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) b[i] = a[i];
}
"#;

struct Case {
    name: String,
    kernel: &'static str,
    grid: Dim3,
    block: Dim3,
    /// Buffers of this many floats each (the last one is the output).
    buffers: usize,
    len: usize,
    n: i32,
    runs: usize,
    /// The C twin: program name in `GRIDLAB_BENCH_C` and its argument.
    c: (&'static str, String),
}

fn cases() -> Vec<Case> {
    let mut v: Vec<Case> = [256usize, 512, 1024]
        .into_iter()
        .map(|n| Case {
            name: format!("naive matmul {n}x{n}, <<<({0}, {0}), (16, 16)>>>", n / 16),
            kernel: "matmul",
            grid: Dim3::new(n as u32 / 16, n as u32 / 16, 1),
            block: Dim3::new(16, 16, 1),
            buffers: 3,
            len: n * n,
            n: n as i32,
            runs: if n >= 1024 { 1 } else { 3 },
            c: ("matmul", n.to_string()),
        })
        .collect();
    let n = 1usize << 24;
    v.push(Case {
        name: "copy 2^24 floats, <<<65536, 256>>>".into(),
        kernel: "copy",
        grid: Dim3::linear(65536),
        block: Dim3::linear(256),
        buffers: 2,
        len: n,
        n: n as i32,
        runs: 3,
        c: ("copy", n.to_string()),
    });
    v
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// The C twin's own time for its loop (it prints seconds on its first line), median of `runs`.
fn c_time(dir: &Option<PathBuf>, (prog, arg): &(&str, String), runs: usize) -> Option<Duration> {
    let path = dir.as_ref()?.join(prog);
    let times: Option<Vec<Duration>> = (0..runs)
        .map(|_| {
            let out = Command::new(&path).arg(arg).output().ok()?;
            let text = String::from_utf8_lossy(&out.stdout);
            let secs: f64 = text.lines().next()?.trim().parse().ok()?;
            Some(Duration::from_secs_f64(secs))
        })
        .collect();
    times.map(median)
}

fn secs(d: Duration) -> String {
    if d.as_secs_f64() < 0.1 { format!("{:.2} ms", d.as_secs_f64() * 1e3) } else { format!("{:.3} s", d.as_secs_f64()) }
}

/// CPU time of this process so far, all its threads together.
fn cpu_time() -> Duration {
    // SAFETY: `getrusage` fills the struct it is given.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) };
    let t = |v: libc::timeval| Duration::from_secs(v.tv_sec as u64) + Duration::from_micros(v.tv_usec as u64);
    t(u.ru_utime) + t(u.ru_stime)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let filters: Vec<&String> = args.iter().filter(|a| !a.starts_with('-')).collect();
    let option = |name: &str| args.iter().find_map(|a| a.strip_prefix(&format!("--{name}=")).map(str::to_string));
    let runs: Option<usize> = option("runs").and_then(|r| r.parse().ok());
    let settings: Vec<(bool, bool)> = option("settings")
        .map_or(vec![(true, true), (true, false), (false, false)], |s| {
            s.split(',').filter_map(|w| w.split_once('-')).map(|(f, m)| (f == "on", m == "on")).collect()
        });
    let c_dir = std::env::var_os("GRIDLAB_BENCH_C").map(PathBuf::from);
    let mut sources = SourceMap::new();
    let id = sources.add("scale.cu", KERNELS, 1);
    let mut module = Module::new();
    module.add(id, KERNELS).expect("the benchmark kernels check");
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    // 1, 2 and all cores (the same as 2 on a 2-core machine).
    let mut counts = vec![1, 2, cores];
    counts.dedup();
    counts.retain(|&n| n <= cores.max(2));
    if let Some(t) = option("threads") {
        counts = t.split(',').filter_map(|n| n.parse().ok()).collect();
    }
    let head: Vec<String> =
        counts.iter().map(|n| format!("{n} thread{}: wall / CPU", if *n == 1 { "" } else { "s" })).collect();
    println!("| case | findings | cost model | C `gcc -O1` | {} | best / C | warp instr/s |", head.join(" | "));
    println!("| --- | --- | --- | ---: |{} ---: | ---: |", " ---: |".repeat(counts.len()));
    for case in cases() {
        if !filters.is_empty() && !filters.iter().any(|f| case.name.contains(f.as_str())) {
            continue;
        }
        let c = c_time(&c_dir, &case.c, case.runs.max(3));
        let case_runs = runs.unwrap_or(case.runs);
        for &(findings, model) in &settings {
            let mut cells = Vec::new();
            let mut best = Duration::MAX;
            let mut steps = 0;
            for &threads in &counts {
                let cost = if model { SimConfig::default().cost } else { None };
                // No wall-time or step budget: these launches are meant to run to the end.
                let config = SimConfig {
                    seed: 1,
                    schedule: Schedule::Random,
                    findings,
                    cost,
                    time_limit: None,
                    max_steps: u64::MAX / 64,
                    threads,
                    ..SimConfig::default()
                };
                let mut sim = SimBackend::new(config);
                let (mut walls, mut cpus) = (Vec::new(), Vec::new());
                for _ in 0..case_runs {
                    let mut bufs: Vec<Buffer> = (0..case.buffers)
                        .map(|b| {
                            let fill =
                                |i: usize| Num::Float(if b + 1 == case.buffers { 0.0 } else { (i % 7) as f64 * 0.25 });
                            Buffer::from_nums(DType::F32, Shape::D1(case.len), (0..case.len).map(fill))
                        })
                        .collect();
                    let mut args: Vec<Arg> = (0..bufs.len()).map(Arg::Buffer).collect();
                    args.push(Arg::Scalar(ScalarArg::I32(case.n)));
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
                    let (start, cpu) = (Instant::now(), cpu_time());
                    let report = sim.launch(&module, &spec, &mut lb).expect("the benchmark launch runs");
                    walls.push(start.elapsed());
                    cpus.push(cpu_time() - cpu);
                    assert!(!report.aborted && report.findings.is_empty(), "{}: {:?}", case.name, report.findings);
                    assert_eq!(sim.last_threads(), threads, "{}: ran on fewer threads than asked", case.name);
                    steps = report.steps.unwrap_or(0);
                }
                let (wall, cpu) = (median(walls), median(cpus));
                best = best.min(wall);
                cells.push(format!("{} / {}", secs(wall), secs(cpu)));
                eprintln!(
                    "{}: findings {findings}, cost model {model}, {threads} threads: {} wall, {} CPU",
                    case.name,
                    secs(wall),
                    secs(cpu)
                );
            }
            let ratio = c.map_or("-".into(), |c| format!("{:.1}x", best.as_secs_f64() / c.as_secs_f64()));
            println!(
                "| {} | {} | {} | {} | {} | {} | {:.1}M |",
                case.name,
                if findings { "on" } else { "off" },
                if model { "on" } else { "off" },
                c.map_or("-".into(), secs),
                cells.join(" | "),
                ratio,
                steps as f64 / best.as_secs_f64() / 1e6,
            );
        }
    }
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!(
        "\n`nproc` here: {cores}; load average when the run ended: {}.",
        load.split_whitespace().take(3).collect::<Vec<_>>().join(" ")
    );
}
