//! The views behind `:race`, `:compare`, `:map`, `:why` and `:time`: each runs a launch (or the
//! last one again) on copies of its buffers, gathers what the renderers in `render/` draw, and
//! leaves the session's buffers and last launch as they were.
//!
//! Runs are gathered as data first ([`Outcomes`], [`MapView`], [`WhyView`], [`Timing`]) so that
//! the GPU backend can add its own runs and kernel times next to the simulator's.

use std::io::{self, Write};

use super::{Session, Status};
use crate::backend::sim::{Schedule, SimConfig, Watch};
use crate::backend::{Backend, BackendError, LaunchBuffers, LaunchReport, LaunchSpec, linear_thread};
use crate::buffer::Buffer;
use crate::finding::{Finding, FindingKind};
use crate::render;
use crate::render::map::{MapBuffer, MapView};
use crate::render::race::{Outcomes, Run};
use crate::render::timing::Timing;
use crate::render::why::WhyView;
use crate::script;
use crate::script::ast::StmtKind;

/// Runs for `:race` and `:time` when no `xN` is given.
pub const DEFAULT_RUNS: u32 = 10;
/// `:time` without `xN` stops repeating a launch on the simulator once its runs have taken
/// this long: a launch that takes seconds is not run ten times unasked.
pub const TIME_BUDGET: std::time::Duration = std::time::Duration::from_secs(3);
/// At most this many runs: each is a whole launch on the simulator.
pub const MAX_RUNS: u32 = 100;
/// `:time` repeats a launch many more times: launch overhead is measured over thousands.
pub const MAX_TIME_RUNS: u32 = 10_000;
/// The simulator's random schedules shown beside GPU runs in `:race`: a few, for comparison
/// (each is a whole launch on the CPU, slow for big launches).
pub const SIM_RUNS_BESIDE_GPU: u32 = 3;

/// A launch statement that passed every check.
pub(crate) struct Prepared {
    /// The launch as typed, to title the views.
    pub text: String,
    pub spec: LaunchSpec,
    pub names: Vec<String>,
}

impl Prepared {
    fn title(&self) -> String {
        self.text.clone()
    }
}

/// Split a trailing ` xN` off command arguments: `k<<<1, 32>>>(a) x20` gives 20.
pub(crate) fn split_runs(args: &str, max: u32) -> Result<(&str, u32), String> {
    let args = args.trim();
    if let Some((head, last)) = args.rsplit_once(char::is_whitespace)
        && let Some(n) = last.strip_prefix('x').or_else(|| last.strip_prefix('X'))
        && !n.is_empty()
        && n.bytes().all(|b| b.is_ascii_digit())
    {
        return match n.parse::<u32>() {
            Ok(k) if (1..=max).contains(&k) => Ok((head.trim_end(), k)),
            _ => Err(format!("the number of runs must be from 1 to {max}, not {n}")),
        };
    }
    Ok((args, DEFAULT_RUNS))
}

impl Session {
    /// Parse and check a launch typed as a command argument; reports problems itself.
    pub(crate) fn prepare_text(&mut self, cmd: &str, text: &str, out: &mut dyn Write) -> io::Result<Option<Prepared>> {
        let id = self.work.sources_mut().add(format!("<:{cmd}>"), text, 1);
        let stmt = match script::parse_statement(id, text) {
            Ok(s) => s,
            Err(diag) => {
                self.report(&diag, out)?;
                return Ok(None);
            }
        };
        let StmtKind::Launch(launch) = stmt.kind else {
            writeln!(
                out,
                "{} `:{cmd}` takes a launch, like `:{cmd} add_half<<<4, 256>>>(a, len(a))`",
                self.options.style.error("error:")
            )?;
            return Ok(None);
        };
        let launch = if self.is_python_kernel(&launch.kernel) {
            match self.python_launch(&launch, text) {
                Ok(l) => l,
                Err(diags) => {
                    for d in &diags {
                        self.report(d, out)?;
                    }
                    return Ok(None);
                }
            }
        } else {
            launch
        };
        match self.prepare(&launch, text) {
            Ok((spec, names)) => Ok(Some(Prepared { text: text.trim().to_string(), spec, names })),
            Err(diag) => {
                self.report(&diag, out)?;
                Ok(None)
            }
        }
    }

    /// Run `spec` on copies of `inputs` with `config`: the session's buffers are never touched.
    pub(super) fn run_copy(
        &mut self,
        spec: &LaunchSpec,
        inputs: &[(String, Buffer)],
        config: SimConfig,
    ) -> Result<(LaunchReport, Vec<Buffer>), BackendError> {
        let mut copies: Vec<Buffer> = inputs.iter().map(|(_, b)| b.clone()).collect();
        let result = {
            let mut lb = LaunchBuffers {
                names: inputs.iter().map(|(n, _)| n.clone()).collect(),
                buffers: copies.iter_mut().collect(),
            };
            self.backends.run_sim_with(config, self.work.module(), spec, &mut lb)
        };
        result.map(|r| (r, copies))
    }

    /// `runs` launches of `p` on the GPU, each on fresh copies of the session's buffers.
    fn gpu_runs(&mut self, p: &Prepared, runs: u32) -> Result<Vec<Run>, BackendError> {
        let inputs = self.inputs(&p.names);
        let Some(gpu) = self.backends.gpu() else {
            return Err(BackendError::Unavailable("the GPU backend is not ready".into()));
        };
        repeat_on(gpu, self.work.module(), &p.spec, &inputs, runs)
    }

    pub(super) fn inputs(&self, names: &[String]) -> Vec<(String, Buffer)> {
        names.iter().map(|n| (n.clone(), self.buffer(n).cloned().expect("launch buffers exist"))).collect()
    }

    fn config(&self, schedule: Schedule, seed: u64) -> SimConfig {
        let cost = self.backends.sim_config().cost.map(|_| self.reference());
        SimConfig { schedule, seed, trace_writes: false, watch: None, cost, ..self.backends.sim_config().clone() }
    }

    /// The sequential reference and `runs` random-schedule runs from the session's seed.
    pub(crate) fn outcomes(&mut self, p: &Prepared, runs: u32) -> Result<Outcomes, BackendError> {
        let inputs = self.inputs(&p.names);
        let base = self.backends.sim_config().seed;
        let (report, buffers) = self.run_copy(&p.spec, &inputs, self.config(Schedule::Sequential, 0))?;
        let mut race_found = has_race(&report);
        let reference_wrong = sequential_is_wrong(&report);
        let reference = Run { label: "sequential".into(), backend: "sim".into(), buffers, aborted: report.aborted };
        let mut all = Vec::new();
        for k in 0..runs as u64 {
            let seed = base.wrapping_add(k);
            let (report, buffers) = self.run_copy(&p.spec, &inputs, self.config(Schedule::Random, seed))?;
            race_found |= has_race(&report);
            all.push(Run { label: format!("seed {seed}"), backend: "sim".into(), buffers, aborted: report.aborted });
        }
        Ok(Outcomes {
            launch: p.title(),
            names: p.names.clone(),
            before: inputs.into_iter().map(|(_, b)| b).collect(),
            reference,
            runs: all,
            beside: Vec::new(),
            race_found,
            reference_wrong,
        })
    }

    /// What `:race` and `:compare` show of one launch: on the GPU, `runs` launches on the device
    /// beside a few of the simulator's random schedules; otherwise `runs` on the simulator.
    fn race_outcomes(&mut self, p: &Prepared, runs: u32) -> Result<Outcomes, BackendError> {
        if self.on_gpu() {
            let o = self.outcomes(p, runs.min(SIM_RUNS_BESIDE_GPU))?;
            Ok(o.with_gpu_runs(self.gpu_runs(p, runs)?))
        } else {
            self.outcomes(p, runs)
        }
    }

    pub(crate) fn race_view(&mut self, args: &str, out: &mut dyn Write) -> io::Result<Status> {
        let (text, runs) = match split_runs(args, MAX_RUNS) {
            Ok(ok) => ok,
            Err(msg) => return self.view_error(out, &msg),
        };
        if text.is_empty() {
            return self.view_error(out, "which launch? e.g. `:race add_half<<<4, 256>>>(a, len(a))`");
        }
        let Some(p) = self.prepare_text("race", text, out)? else { return Ok(Status::Error) };
        match self.race_outcomes(&p, runs) {
            Ok(o) => {
                render::race::write_race(out, &o, &self.options.style)?;
                Ok(Status::Ok)
            }
            Err(e) => self.backend_error(out, &e),
        }
    }

    pub(crate) fn compare_view(&mut self, args: &str, out: &mut dyn Write) -> io::Result<Status> {
        let (text, runs) = match split_runs(args, MAX_RUNS) {
            Ok(ok) => ok,
            Err(msg) => return self.view_error(out, &msg),
        };
        let Some((a, b)) = text.split_once(" vs ").or_else(|| two_launches(text)) else {
            return self
                .view_error(out, "compare two launches: `:compare racy<<<4, 256>>>(a) vs fixed<<<4, 256>>>(a)`");
        };
        let Some(pa) = self.prepare_text("compare", a.trim(), out)? else { return Ok(Status::Error) };
        let Some(pb) = self.prepare_text("compare", b.trim(), out)? else { return Ok(Status::Error) };
        let oa = self.race_outcomes(&pa, runs);
        let ob = self.race_outcomes(&pb, runs);
        match (oa, ob) {
            (Ok(oa), Ok(ob)) => {
                render::race::write_compare(out, &oa, &ob, &self.options.style)?;
                self.write_estimates_side_by_side(out, &pa, &pb)?;
                Ok(Status::Ok)
            }
            (Err(e), _) | (_, Err(e)) => self.backend_error(out, &e),
        }
    }

    pub(crate) fn map_view(&mut self, args: &str, out: &mut dyn Write) -> io::Result<Status> {
        if args.trim().is_empty() {
            return self.view_error(out, "which launch? e.g. `:map add_half<<<4, 256>>>(a, len(a))`");
        }
        let Some(p) = self.prepare_text("map", args.trim(), out)? else { return Ok(Status::Error) };
        let inputs = self.inputs(&p.names);
        let config = SimConfig {
            trace_writes: true,
            ..self.config(self.backends.sim_config().schedule, self.backends.sim_config().seed)
        };
        match self.run_copy(&p.spec, &inputs, config) {
            Ok((report, _)) => {
                let traces = report.writes.unwrap_or_default();
                let buffers = inputs
                    .iter()
                    .zip(traces)
                    .map(|((name, b), trace)| MapBuffer { name: name.clone(), shape: b.shape(), trace })
                    .collect();
                let view = MapView { launch: p.title(), grid: p.spec.grid, block: p.spec.block, buffers };
                render::map::write_map(out, &view, &self.options.style)?;
                Ok(Status::Ok)
            }
            Err(e) => self.backend_error(out, &e),
        }
    }

    pub(crate) fn time_view(&mut self, args: &str, out: &mut dyn Write) -> io::Result<Status> {
        let (text, runs) = match split_runs(args, MAX_TIME_RUNS) {
            Ok(ok) => ok,
            Err(msg) => return self.view_error(out, &msg),
        };
        if text.is_empty() {
            return self.view_error(out, "which launch? e.g. `:time add_half<<<4, 256>>>(a, len(a))`");
        }
        let Some(p) = self.prepare_text("time", text, out)? else { return Ok(Status::Error) };
        let inputs = self.inputs(&p.names);
        if self.on_gpu() {
            return self.time_on_gpu(&p.spec, &p.title(), inputs, runs as usize, out);
        }
        let base = self.backends.sim_config().seed;
        let schedule = self.backends.sim_config().schedule;
        let explicit = text.len() != args.trim().len();
        let started = std::time::Instant::now();
        let mut steps = Vec::new();
        let mut estimates = Vec::new();
        let mut last_cost = None;
        let mut made = 0u32;
        let mut note = None;
        for k in 0..runs as u64 {
            match self.run_copy(&p.spec, &inputs, self.config(schedule, base.wrapping_add(k))) {
                Ok((report, _)) => {
                    made += 1;
                    steps.extend(report.steps);
                    // A run stopped at a limit did not do the kernel's work: its steps are where
                    // it was stopped, its counts no estimate, and the next run would stop too.
                    let stop = report.findings.iter().find_map(|f| match f {
                        Finding::StepLimit { time_limit, .. } => Some(*time_limit),
                        _ => None,
                    });
                    if let Some(limit) = stop {
                        let (why, longer) = match limit {
                            Some(l) => (
                                format!("the simulator's time limit of {} s", l.as_secs_f64()),
                                "give it longer (--timeout SECS)",
                            ),
                            None => (
                                "its step budget".to_string(),
                                "check that every loop ends, or raise the budget (`:max-steps N`)",
                            ),
                        };
                        note = Some(format!(
                            "run {made} was stopped at {why}, so its warp steps are where it stopped, not the kernel's work, and there is no estimate; no more runs were made. Launch fewer threads, or {longer}; a GPU (`:backend gpu`) times it as it is"
                        ));
                        estimates.clear();
                        last_cost = None;
                        break;
                    }
                    if let Some(c) = report.cost {
                        estimates.push(c.estimate.time_us);
                        last_cost = Some(c);
                    }
                    let spent = started.elapsed();
                    if !explicit && made < runs && spent > TIME_BUDGET {
                        note = Some(format!(
                            "{made} of {runs} runs: they took {:.1} s, so the rest were not made (`:time ... x{runs}` makes them all)",
                            spent.as_secs_f64()
                        ));
                        break;
                    }
                }
                Err(e) => return self.backend_error(out, &e),
            }
        }
        let runs = made.max(1);
        let timing = Timing {
            note,
            launch: p.title(),
            backend: self.backends.sim().label(),
            schedule: schedule.name().to_string(),
            seeds: if runs == 1 { base.to_string() } else { format!("{base}..{}", base.wrapping_add(runs as u64 - 1)) },
            threads: p.spec.total_threads(),
            steps,
            estimates,
            reference: last_cost.as_ref().map(|c| c.profile.title.to_string()).unwrap_or_default(),
            limiter: last_cost.as_ref().map(crate::render::cost::explain).unwrap_or_default(),
            trust: last_cost.as_ref().map(|c| c.profile.trust()).unwrap_or_default(),
            ..Timing::default()
        };
        render::timing::write_timing(out, &timing, &self.options.style)?;
        Ok(Status::Ok)
    }

    /// `:time` on the GPU: kernel times from CUDA events, the host's launch overhead, and an
    /// effective bandwidth estimated from the bytes of the buffer arguments.
    fn time_on_gpu(
        &mut self,
        spec: &crate::backend::LaunchSpec,
        title: &str,
        mut inputs: Vec<(String, crate::buffer::Buffer)>,
        runs: usize,
        out: &mut dyn Write,
    ) -> io::Result<Status> {
        let bytes: u64 = inputs.iter().map(|(_, b)| b.size_bytes() as u64).sum();
        let names = inputs.iter().map(|(n, _)| n.clone()).collect();
        let lb = crate::backend::LaunchBuffers { names, buffers: inputs.iter_mut().map(|(_, b)| b).collect() };
        let Some(gpu) = self.backends.gpu() else {
            return self.view_error(out, "the GPU backend is not ready");
        };
        let peak = gpu.info().peak_bandwidth_gbs;
        let label = gpu.label();
        match gpu.time(spec, &lb, runs as u32) {
            Ok((kernel_ms, launch_us)) => {
                let timing = Timing {
                    launch: title.to_string(),
                    backend: label,
                    threads: spec.total_threads(),
                    kernel_times: kernel_ms
                        .iter()
                        .map(|ms| std::time::Duration::from_secs_f64(*ms as f64 / 1e3))
                        .collect(),
                    launch_overhead: launch_us.iter().map(|us| std::time::Duration::from_secs_f64(us / 1e6)).collect(),
                    bytes,
                    peak_gbs: Some(peak),
                    ..Timing::default()
                };
                render::timing::write_timing(out, &timing, &self.options.style)?;
                Ok(Status::Ok)
            }
            Err(e) => self.backend_error(out, &e),
        }
    }

    pub(crate) fn why_view(&mut self, _args: &str, out: &mut dyn Write) -> io::Result<Status> {
        self.last_settled(out)?;
        let Some(last) = self.record.last() else {
            writeln!(out, "no launch yet: `:why` explains the race of the last launch")?;
            return Ok(Status::Ok);
        };
        let Some(Finding::Race { memory, shape, index, first, second, .. }) =
            last.report.findings.iter().find(|f| f.kind() == FindingKind::Race).cloned()
        else {
            writeln!(out, "the last launch had no race finding: nothing to explain")?;
            return Ok(Status::Ok);
        };
        let spec = last.spec.clone();
        let inputs = last.before.clone();
        let threads = [
            linear_thread(&first.thread, spec.grid, spec.block) as u32,
            linear_thread(&second.thread, spec.grid, spec.block) as u32,
        ];
        let config = SimConfig { watch: Some(Watch { index, threads }), trace_writes: false, ..last.config.clone() };
        let schedule = config.schedule.name().to_string();
        let seed = config.seed;
        match self.run_copy(&spec, &inputs, config) {
            Ok((report, _)) => {
                let events =
                    report.watched.unwrap_or_default().into_iter().filter(|e| e.memory == memory).collect::<Vec<_>>();
                let view = WhyView {
                    launch: format!(
                        "{}{}",
                        spec.kernel,
                        render::launch::config_written(&spec, self.syntax_of(&spec.kernel))
                    ),
                    schedule,
                    seed,
                    element: {
                        let name = crate::finding::element_name(memory.name(), index, &shape);
                        match self.syntax_of(&spec.kernel) {
                            render::launch::Syntax::Numba => name.replace("][", ", "),
                            render::launch::Syntax::Cuda => name,
                        }
                    },
                    memory,
                    first,
                    second,
                    events,
                };
                render::why::write_why(out, &view, self.work.sources(), &self.options.style)?;
                Ok(Status::Ok)
            }
            Err(e) => self.backend_error(out, &e),
        }
    }

    pub(super) fn view_error(&self, out: &mut dyn Write, msg: &str) -> io::Result<Status> {
        writeln!(out, "{} {msg}", self.options.style.error("error:"))?;
        Ok(Status::Error)
    }

    /// A backend's error; the simulator's refusal of a GPU-only kernel is drawn at its line.
    pub(super) fn backend_error(&self, out: &mut dyn Write, e: &BackendError) -> io::Result<Status> {
        match e {
            BackendError::Unsupported(d) => self.report(d, out),
            e => self.view_error(out, &e.to_string()),
        }
    }
}

/// Launch `spec` `runs` times on `backend`, each time on fresh copies of `inputs` (which are
/// never touched): the rows `gpu 1`, `gpu 2`, ... of `:race`.
pub(crate) fn repeat_on(
    backend: &mut dyn Backend,
    module: &crate::cuda::Module,
    spec: &LaunchSpec,
    inputs: &[(String, Buffer)],
    runs: u32,
) -> Result<Vec<Run>, BackendError> {
    let label = backend.label();
    let kind = backend.kind();
    (1..=runs)
        .map(|k| {
            let mut copies: Vec<Buffer> = inputs.iter().map(|(_, b)| b.clone()).collect();
            let mut lb = LaunchBuffers {
                names: inputs.iter().map(|(n, _)| n.clone()).collect(),
                buffers: copies.iter_mut().collect(),
            };
            let report = backend.launch(module, spec, &mut lb)?;
            Ok(Run { label: format!("{kind} {k}"), backend: label.clone(), buffers: copies, aborted: report.aborted })
        })
        .collect()
}

fn has_race(r: &LaunchReport) -> bool {
    r.findings.iter().any(|f| f.kind() == FindingKind::Race)
}

/// Why the sequential schedule's run of a launch is no reference answer, if it is not. It runs
/// one thread at a time, each until it ends or reaches a barrier: a CPU loop's answer, right for
/// kernels whose threads should each see the others' earlier updates. But a thread that reads
/// shared memory which another thread of its block writes later, with no barrier between (a
/// missing `__syncthreads()`), read it too early even there; and threads that wait at different
/// barriers were released anyway.
fn sequential_is_wrong(r: &LaunchReport) -> Option<String> {
    r.findings.iter().find_map(|f| match f {
        Finding::Race { memory: memory @ crate::finding::Memory::Shared(_), shape, index, first, second, .. }
            if first.access == crate::finding::Access::Read && second.access != crate::finding::Access::Read =>
        {
            let el = crate::finding::element_name(memory.name(), *index, shape);
            Some(format!(
                "in it too, {} read {el} before {} wrote it, with no __syncthreads() between them",
                first.thread.describe(),
                second.thread.describe()
            ))
        }
        Finding::BarrierDivergence { .. } => {
            Some("in it too, threads of a block waited at different __syncthreads() (a barrier finding)".to_string())
        }
        _ => None,
    })
}

/// `k1<<<1, 32>>>(a) k2<<<2, 16>>>(a)`, two launches side by side without the `vs`: split where
/// the first one's argument list closes and a name follows.
fn two_launches(text: &str) -> Option<(&str, &str)> {
    let mut depth = 0i32;
    for (i, c) in text.char_indices() {
        match c {
            '(' | '[' => depth += 1,
            ')' | ']' => {
                depth -= 1;
                let rest = &text[i + 1..];
                let next = rest.trim_start();
                if depth == 0
                    && c == ')'
                    && rest.starts_with(char::is_whitespace)
                    && next.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
                {
                    return Some((&text[..=i], next));
                }
            }
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::Style;
    use crate::session::Options;

    #[test]
    fn two_launches_side_by_side_need_no_vs() {
        assert_eq!(
            two_launches("racy<<<4, 256>>>(a, len(a)) good<<<(2, 2), 256>>>(a, len(a))"),
            Some(("racy<<<4, 256>>>(a, len(a))", "good<<<(2, 2), 256>>>(a, len(a))"))
        );
        assert_eq!(
            two_launches("racy[(2, 2), 256](a) good[4, 256](a)"),
            Some(("racy[(2, 2), 256](a)", "good[4, 256](a)"))
        );
        assert_eq!(two_launches("k<<<(4, 4), 256>>>(a)"), None);
    }

    const KERNELS: &str = r#"
__global__ void add_half_everywhere(float *a, int n) {
    for (int i = 0; i < n; i++) {
        a[i] += 0.5f;
    }
}
__global__ void add_half_atomic(float *a, int n) {
    for (int i = 0; i < n; i++) {
        atomicAdd(&a[i], 0.5f);
    }
}
__global__ void add_half(float *a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i <= n) a[i] += 0.5f;
}
__global__ void fill2d(int *m, int rows, int cols) {
    int r = blockIdx.y * blockDim.y + threadIdx.y;
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < rows && c <= cols) m[r * cols + c] = blockIdx.x + 2 * blockIdx.y;
}
let a = [0, 1]
let b = zeros(3000)
let m = zeros((12, 20), i32)
"#;

    /// Run `script` after the kernels above in a fresh session; returns what the last input printed.
    fn view(script: &str, color: bool, width: usize) -> String {
        let mut s =
            Session::new(Options { style: Style { color, width, big: false, ..Style::plain() }, ..Options::default() });
        let mut out = Vec::new();
        assert_eq!(s.eval_text("setup", KERNELS, false, &mut out).unwrap(), Status::Ok);
        let (setup, last) = script.rsplit_once('\n').unwrap_or(("", script));
        if !setup.is_empty() {
            let status = s.eval_text("setup", setup, false, &mut out).unwrap();
            assert_eq!(status, Status::Ok, "{}", String::from_utf8_lossy(&out));
        }
        let mut out = Vec::new();
        let status = s.eval_text("view", last, false, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(status, Status::Ok, "{text}");
        text
    }

    /// Snapshots of `script`'s last output, plain and coloured, at 80 and 120 columns.
    fn snapshots(name: &str, script: &str) {
        for color in [false, true] {
            for width in [80, 120] {
                let text = view(script, color, width);
                let mode = if color { "color" } else { "plain" };
                if !color {
                    assert!(!text.contains('\u{1b}'), "{text}");
                    let widest = text.lines().map(|l| l.chars().count()).max().unwrap_or(0);
                    assert!(widest <= width, "{name} is {widest} columns wide at {width}:\n{text}");
                }
                insta::assert_snapshot!(format!("{name}_{mode}_{width}"), text);
            }
        }
    }

    #[test]
    fn race_view() {
        snapshots("race", ":race add_half_everywhere<<<8, 64>>>(a, len(a))");
    }

    #[test]
    fn race_view_stable_results() {
        snapshots("race_atomic", ":race add_half_atomic<<<8, 64>>>(a, len(a)) x3");
    }

    #[test]
    fn compare_view() {
        snapshots(
            "compare",
            ":compare add_half_everywhere<<<8, 64>>>(a, len(a)) vs add_half_atomic<<<8, 64>>>(a, len(a)) x5",
        );
    }

    #[test]
    fn map_view_1d_with_out_of_bounds() {
        snapshots("map_1d", ":map add_half<<<12, 256>>>(b, len(b))");
    }

    #[test]
    fn map_view_2d_with_out_of_bounds() {
        snapshots("map_2d", ":map fill2d<<<(3, 2), (8, 8)>>>(m, 12, 20)");
    }

    #[test]
    fn why_view() {
        snapshots("why", "add_half_everywhere<<<8, 64>>>(a, len(a))\n:why");
    }

    #[test]
    fn a_launch_stopped_at_a_limit_is_timed_once_and_said_so() {
        let text = view(
            "__global__ void spin(float *a, int n) { while (a[0] == 0.0f) { } }\n:max-steps 100000\n:time spin<<<1, 32>>>(a, 2)",
            false,
            100,
        );
        assert!(text.contains("1 run on sim"), "{text}");
        assert!(text.contains("run 1 was stopped at its step budget"), "{text}");
        assert!(!text.contains("estimated time"), "{text}");
    }

    #[test]
    fn time_view() {
        snapshots("time", ":time add_half_everywhere<<<8, 64>>>(a, len(a)) x4");
    }

    /// A stand-in for a GPU (there is none in CI): each launch loses a different number of the
    /// racy kernel's updates, as a real one does.
    struct FakeGpu {
        launches: u32,
        /// Always the right answer of `add_half_atomic<<<8, 64>>>` (the fixed kernel).
        stable: bool,
    }

    impl Backend for FakeGpu {
        fn kind(&self) -> crate::backend::BackendKind {
            crate::backend::BackendKind::Gpu
        }

        fn label(&self) -> String {
            "H100".into()
        }

        fn load(&mut self, _: &crate::cuda::Module, _: &crate::diag::SourceMap) -> Result<(), BackendError> {
            Ok(())
        }

        fn launch(
            &mut self,
            _: &crate::cuda::Module,
            _: &LaunchSpec,
            buffers: &mut LaunchBuffers<'_>,
        ) -> Result<LaunchReport, BackendError> {
            let got = if self.stable { 256.0 } else { [2.5, 3.0, 2.5, 4.5][self.launches as usize % 4] };
            self.launches += 1;
            let a = &mut buffers.buffers[0];
            a.set(0, crate::buffer::Num::Float(got));
            a.set(1, crate::buffer::Num::Float(got + 1.0));
            Ok(LaunchReport::default())
        }
    }

    /// `:race` on a GPU: the simulator's outcomes with the (fake) GPU's runs in their place.
    fn race_with_gpu(width: usize, color: bool) -> (String, Session) {
        let mut s =
            Session::new(Options { style: Style { color, width, big: false, ..Style::plain() }, ..Options::default() });
        let mut out = Vec::new();
        assert_eq!(s.eval_text("setup", KERNELS, false, &mut out).unwrap(), Status::Ok);
        let p = s.prepare_text("race", "add_half_everywhere<<<8, 64>>>(a, len(a))", &mut out).unwrap().unwrap();
        let inputs = s.inputs(&p.names);
        let module = s.work.module().clone();
        let gpu = repeat_on(&mut FakeGpu { launches: 0, stable: false }, &module, &p.spec, &inputs, 5).unwrap();
        let o = s.outcomes(&p, SIM_RUNS_BESIDE_GPU).unwrap().with_gpu_runs(gpu);
        let mut out = Vec::new();
        render::race::write_race(&mut out, &o, &s.options.style).unwrap();
        (String::from_utf8(out).unwrap(), s)
    }

    #[test]
    fn race_view_with_gpu_runs() {
        for width in [80, 120] {
            let (text, _) = race_with_gpu(width, false);
            let widest = text.lines().map(|l| l.chars().count()).max().unwrap_or(0);
            assert!(widest <= width, "{widest} columns wide at {width}:\n{text}");
            for row in ["sequential", "gpu 1", "gpu 5", "sim seed 0", "sim seed 2"] {
                assert!(text.contains(&format!("│ {row} ")), "no row {row}:\n{text}");
            }
            // The verdict and the histogram count the GPU's 5 runs, not the simulator's 3.
            assert!(text.contains("3 different results in 5 runs on H100: the result depends on timing"), "{text}");
            let bars: usize = text
                .lines()
                .filter(|l| l.contains('█'))
                .filter_map(|l| l.split(" run").next()?.split_whitespace().last()?.parse::<usize>().ok())
                .sum();
            assert_eq!(bars, 5, "{text}");
            insta::assert_snapshot!(format!("race_gpu_plain_{width}"), text);
        }
        let (text, s) = race_with_gpu(80, true);
        insta::assert_snapshot!("race_gpu_color_80", text);
        // Every run was on copies: the session's `a` is as it was.
        assert_eq!(s.buffer("a").unwrap().to_f64_vec(), vec![0.0, 1.0]);
    }

    /// `:compare` on a GPU: each launch's outcomes with the (fake) GPU's runs, as `:race` has them.
    fn compare_with_gpu(width: usize, color: bool) -> String {
        let mut s =
            Session::new(Options { style: Style { color, width, big: false, ..Style::plain() }, ..Options::default() });
        let mut out = Vec::new();
        assert_eq!(s.eval_text("setup", KERNELS, false, &mut out).unwrap(), Status::Ok);
        let module = s.work.module().clone();
        let mut outcomes = Vec::new();
        for (launch, stable) in
            [("add_half_everywhere<<<8, 64>>>(a, len(a))", false), ("add_half_atomic<<<8, 64>>>(a, len(a))", true)]
        {
            let p = s.prepare_text("compare", launch, &mut out).unwrap().unwrap();
            let inputs = s.inputs(&p.names);
            let gpu = repeat_on(&mut FakeGpu { launches: 0, stable }, &module, &p.spec, &inputs, 4).unwrap();
            outcomes.push(s.outcomes(&p, SIM_RUNS_BESIDE_GPU).unwrap().with_gpu_runs(gpu));
        }
        let mut out = Vec::new();
        render::race::write_compare(&mut out, &outcomes[0], &outcomes[1], &s.options.style).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn compare_view_with_gpu_runs() {
        for width in [80, 120] {
            let text = compare_with_gpu(width, false);
            let widest = text.lines().map(|l| l.chars().count()).max().unwrap_or(0);
            assert!(widest <= width, "{widest} columns wide at {width}:\n{text}");
            for row in ["sequential", "gpu 1", "gpu 4", "sim seed 0", "sim seed 2"] {
                assert_eq!(text.matches(&format!("│ {row} ")).count(), 2, "no row {row} in both tables:\n{text}");
            }
            assert!(text.contains("4 runs on H100, 3 runs on sim (random schedule, seeds 0..2)"), "{text}");
            assert!(text.contains("3 different results in 4 runs on H100: the result depends on timing"), "{text}");
            assert!(text.contains("all 4 runs on H100 match the sequential answer"), "{text}");
            insta::assert_snapshot!(format!("compare_gpu_plain_{width}"), text);
        }
        insta::assert_snapshot!("compare_gpu_color_80", compare_with_gpu(80, true));
    }

    #[test]
    fn views_leave_the_session_as_it_was() {
        let out = view(
            ":race add_half_everywhere<<<8, 64>>>(a, len(a)) x2\n:map add_half<<<12, 256>>>(b, len(b))\n:time add_half<<<12, 256>>>(b, len(b)) x2\nexpect a == [0, 1]\nexpect b == 0",
            false,
            80,
        );
        assert_eq!(out, "ok\n");
    }

    #[test]
    fn why_without_a_race_or_a_launch_says_so() {
        assert!(view(":why", false, 80).contains("no launch yet"));
        let out = view("add_half_atomic<<<8, 64>>>(a, len(a))\n:why", false, 80);
        assert!(out.contains("no race finding"), "{out}");
    }

    #[test]
    fn changed_elements_are_coloured_after_a_launch() {
        let out = view("add_half<<<1, 1>>>(a, 1)\na", true, 80);
        // a[0] changed (0 -> 0.5), a[1] did not.
        assert!(out.contains("\u{1b}[33m\u{1b}[1m0.5\u{1b}[0m") || out.contains("\u{1b}[1m\u{1b}[33m0.5"), "{out:?}");
        assert!(!out.contains("\u{1b}[1m1.\u{1b}"), "{out:?}");
    }

    #[test]
    fn race_on_a_wide_buffer_says_how_many_columns_it_leaves_out() {
        let text = view(":race add_half_everywhere<<<4, 64>>>(b, 40) x3", false, 80);
        let shown = text.lines().find(|l| l.contains("outcome")).unwrap().matches("b[").count();
        assert!(shown > 3 && shown < 40, "{text}");
        let note = format!("showing {shown} of the 40 elements where the runs differ");
        assert!(text.replace('\n', " ").contains(&note), "{note}:\n{text}");
        assert!(text.replace('\n', " ").contains(&format!("the other {} do not fit", 40 - shown)), "{text}");
        // Two elements fit: nothing is left out, nothing said.
        let text = view(":race add_half_everywhere<<<8, 64>>>(a, len(a)) x3", false, 80);
        assert!(!text.contains("showing"), "{text}");
    }

    #[test]
    fn race_does_not_hold_runs_against_a_sequential_run_that_raced_too() {
        // No __syncthreads() between writing the tile and reading a neighbour's element: one
        // thread at a time, each reads its right neighbour's element before it is written.
        let script = r#"__global__ void pair_sum(const float *in, float *out) {
    __shared__ float tile[64];
    int t = threadIdx.x;
    tile[t] = in[blockIdx.x * blockDim.x + t];
    float right = t + 1 < blockDim.x ? tile[t + 1] : 0.0f;
    out[blockIdx.x * blockDim.x + t] = tile[t] + right;
}
let x = arange(256)
let y = zeros(256)
:race pair_sum<<<4, 64>>>(x, y) x4"#;
        let text = view(script, false, 80);
        assert!(text.contains("│ sequential (wrong too) ┆"), "{text}");
        assert!(text.contains("and the sequential run\n"), "{text}");
        assert!(!text.contains("(the sequential answer)"), "{text}");
        let flat = text.replace('\n', " ");
        assert!(flat.contains("the sequential run is no reference here: in it too, block 0 thread 0 read tile[1] before block 0 thread 1 wrote it, with no __syncthreads() between them"), "{text}");
        assert!(text.lines().all(|l| l.chars().count() <= 80), "{text}");
        // Coloured, its cells are neither bold like an answer nor the others red against it.
        let coloured = view(script, true, 80);
        let row = coloured.lines().find(|l| l.contains("sequential (wrong too)")).unwrap();
        assert!(!row.contains("\u{1b}[1m"), "{row:?}");
        assert!(!coloured.contains("\u{1b}[31m") && !coloured.contains("\u{1b}[38;5;9m"), "{coloured:?}");
    }

    #[test]
    fn runs_suffix() {
        assert_eq!(split_runs("k<<<1, 2>>>(a) x20", MAX_RUNS), Ok(("k<<<1, 2>>>(a)", 20)));
        assert_eq!(split_runs("k<<<1, 2>>>(a)", MAX_RUNS), Ok(("k<<<1, 2>>>(a)", DEFAULT_RUNS)));
        assert_eq!(split_runs("k<<<1, 2>>>(x, xs)", MAX_RUNS), Ok(("k<<<1, 2>>>(x, xs)", DEFAULT_RUNS)));
        assert!(split_runs("k<<<1, 2>>>(a) x0", MAX_RUNS).is_err());
    }
}
