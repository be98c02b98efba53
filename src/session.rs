//! A gridlab session: the state behind the prompt, and `Session::eval` that runs one input.
//!
//! The REPL, `replay` and lessons all feed inputs through the same `eval`, so a statement means
//! the same thing wherever it is typed. The session owns everything the learner made: the CUDA
//! module, the buffers (host copies, the single source of truth), scalars, and the findings of
//! the last launch. A backend only ever borrows buffers for the length of one launch.

pub mod command;
mod cost;
mod extension;
mod launch;
mod views;

pub use extension::Extension;

use std::io::{self, Write};

use std::thread::JoinHandle;
use std::time::Duration;

use crate::backend::gpu::GpuBackend;
use crate::backend::sim::{Schedule, SimBackend, SimConfig};
use crate::backend::{Backend, BackendError, BackendKind, LaunchReport, LaunchSpec};
use crate::buffer::Buffer;
use crate::cuda::{ItemKind, Module};
use crate::diag::{Diagnostic, SourceId, SourceMap, Span};
use crate::finding::Finding;
use crate::render::{self, Style};
use crate::script::ast::{Expect, ExprKind, StmtKind};
use crate::script::eval::{self, Env};
use crate::script::{self, Input, InputKind};
use crate::value::Value;

/// How one input went, for `replay`'s exit code and summary.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    Ok,
    /// An `expect` did not hold.
    ExpectFailed,
    /// The input could not run (parse error, unknown name, refused launch, ...).
    Error,
}

/// Settings fixed when the session starts (from the command line).
#[derive(Clone, Debug)]
pub struct Options {
    pub style: Style,
    /// Refuse buffers beyond this many bytes in total.
    pub max_alloc: u64,
    pub sim: SimConfig,
    /// What the learner asked for; `Auto` becomes `Gpu` when one works.
    pub backend: BackendKind,
    /// Which GPU, when there are several.
    pub device: usize,
    /// Per GPU launch; a kernel running longer is stopped.
    pub timeout: Duration,
    /// The course folder (`--course`); `None` for the built-in course.
    pub course: Option<std::path::PathBuf>,
    /// The GPU the simulator's cost model estimates times for (`--gpu-profile`, `:reference`).
    pub gpu_profile: &'static crate::cost::GpuProfile,
    /// The learner named the reference GPU (`--gpu-profile`, `:reference NAME`); otherwise a
    /// GPU the session runs on is its own reference when the model knows it.
    pub gpu_profile_chosen: bool,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            style: Style::plain(),
            max_alloc: default_max_alloc(),
            sim: SimConfig::default(),
            backend: BackendKind::Sim,
            device: 0,
            timeout: Duration::from_secs(10),
            course: None,
            gpu_profile: crate::cost::profiles::default_profile(),
            gpu_profile_chosen: false,
        }
    }
}

/// The GPU backend: being started in the background, started, or not usable (and why).
pub(crate) enum Gpu {
    Starting(JoinHandle<Result<GpuBackend, String>>),
    Ready(Box<GpuBackend>),
    Unusable(String),
}

impl Gpu {
    /// Start the GPU backend on a background thread: creating a CUDA context takes half a
    /// second, and the learner should not wait for it at the prompt.
    fn start(options: &Options) -> Gpu {
        let (device, timeout) = (options.device, options.timeout);
        let started = std::thread::Builder::new()
            .name("gridlab-gpu-start".into())
            .spawn(move || GpuBackend::start(device, timeout));
        match started {
            Ok(handle) => Gpu::Starting(handle),
            Err(e) => Gpu::Unusable(format!("could not start a thread to start the GPU: {e}")),
        }
    }
}

/// What `auto` says when it falls back to the simulator. Most machines without a GPU see this
/// at every start, so it is one line; `gridlab doctor` has the details.
fn auto_fallback(why: &str) -> String {
    let short = why.split(':').next().unwrap_or(why).trim();
    format!("backend: sim (auto: {short}; `gridlab doctor` says more)")
}

/// Half of physical memory, or 4 GiB where it cannot be read.
pub fn default_max_alloc() -> u64 {
    let total = std::fs::read_to_string("/proc/meminfo").ok().and_then(|s| {
        let line = s.lines().find(|l| l.starts_with("MemTotal:"))?;
        let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
        Some(kib * 1024)
    });
    total.map_or(4 << 30, |t| t / 2)
}

/// The last launch, kept for `expect clean`, `expect finding ...` and highlighting what changed.
pub(crate) struct LastLaunch {
    pub report: LaunchReport,
    /// The launched buffers as they were before the launch, by name (in `LaunchBuffers` order).
    pub before: Vec<(String, Buffer)>,
    /// What ran and how, so `:why` can run it again exactly.
    pub spec: LaunchSpec,
    pub config: SimConfig,
}

/// What [`Session::save_state`] took out.
pub(crate) struct Saved {
    buffers: Vec<(String, Buffer)>,
    scalars: Vec<(String, Value)>,
    last: Option<LastLaunch>,
    history: Vec<String>,
    seed: u64,
    schedule: Schedule,
    active: BackendKind,
    color: bool,
    width: usize,
}

/// Where a check's run goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunOn {
    Sim { seed: u64, schedule: Schedule },
    Gpu,
}

/// What [`Session::last_launch`] tells about the last launch.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LaunchOutline {
    /// The buffers it was given, by name.
    pub given: Vec<String>,
    /// Those whose contents it changed.
    pub changed: Vec<String>,
    /// It had a race finding.
    pub racy: bool,
}

pub struct Session {
    pub(crate) sources: SourceMap,
    pub(crate) module: Module,
    pub(crate) buffers: Vec<(String, Buffer)>,
    pub(crate) scalars: Vec<(String, Value)>,
    /// The module's `#define`s that are numbers, usable in statements like scalars (a `let` of
    /// the same name wins).
    constants: Vec<(String, Value)>,
    pub(crate) sim: SimBackend,
    pub(crate) gpu: Option<Gpu>,
    /// Where launches run now: `Sim` or `Gpu` (`Auto` until the GPU's start is settled).
    pub(crate) active: BackendKind,
    pub(crate) options: Options,
    pub(crate) last: Option<LastLaunch>,
    /// Inputs that ran, for `:save`.
    pub(crate) history: Vec<String>,
    /// What was typed and what it printed (without colour), for `:export`.
    pub(crate) transcript: Vec<(String, String)>,
    /// Commands and state a layer above added (the lesson guide), see [`Extension`].
    extension: Option<Box<dyn Extension>>,
    typed: u32,
    /// Launches that ran to a report: tells `replay --compare` which inputs launched.
    pub(crate) launches: u64,
    /// Kernels and functions whose definition was refused, with where: launching one points
    /// there instead of saying "define it first".
    pub(crate) refused: Vec<(String, Span)>,
}

impl Session {
    pub fn new(options: Options) -> Session {
        let mut config = options.sim.clone();
        if config.cost.is_some() {
            config.cost = Some(options.gpu_profile);
        }
        let sim = SimBackend::new(config);
        // Start the GPU now (see `Gpu::start`), so it is ready by the first launch.
        let gpu = match options.backend {
            BackendKind::Sim => None,
            BackendKind::Gpu | BackendKind::Auto => Some(Gpu::start(&options)),
        };
        let active = if options.backend == BackendKind::Sim { BackendKind::Sim } else { BackendKind::Auto };
        Session {
            sources: SourceMap::new(),
            module: Module::new(),
            buffers: Vec::new(),
            scalars: Vec::new(),
            constants: Vec::new(),
            sim,
            gpu,
            active,
            options,
            last: None,
            history: Vec::new(),
            transcript: Vec::new(),
            extension: None,
            typed: 0,
            launches: 0,
            refused: Vec::new(),
        }
    }

    pub fn style(&self) -> &Style {
        &self.options.style
    }

    pub fn sources(&self) -> &SourceMap {
        &self.sources
    }

    pub fn module(&self) -> &Module {
        &self.module
    }

    /// The findings of the last launch, if there was one.
    pub fn last_findings(&self) -> Option<&[Finding]> {
        self.last.as_ref().map(|l| l.report.findings.as_slice())
    }

    pub fn buffer(&self, name: &str) -> Option<&Buffer> {
        self.buffers.iter().find(|(n, _)| n == name).map(|(_, b)| b)
    }

    /// Every buffer, by name, in the order they were made.
    pub fn buffers(&self) -> &[(String, Buffer)] {
        &self.buffers
    }

    /// Every scalar, by name, in the order they were made.
    pub fn scalars(&self) -> &[(String, Value)] {
        &self.scalars
    }

    /// How many launches ran to a report in this session (not counting the views' runs).
    pub fn launch_count(&self) -> u64 {
        self.launches
    }

    /// The last launch: the names of the buffers it was given, those it changed, and whether it
    /// had a race finding.
    pub fn last_launch(&self) -> Option<LaunchOutline> {
        let last = self.last.as_ref()?;
        let given: Vec<String> = last.before.iter().map(|(n, _)| n.clone()).collect();
        let changed = last.before.iter().filter(|(n, b)| self.buffer(n) != Some(b)).map(|(n, _)| n.clone()).collect();
        let racy = last.report.findings.iter().any(|f| f.kind() == crate::finding::FindingKind::Race);
        Some(LaunchOutline { given, changed, racy })
    }

    /// Wait for the GPU started in the background, if it is still starting.
    fn gpu_ready(&mut self) -> Option<&mut GpuBackend> {
        if let Some(Gpu::Starting(_)) = &self.gpu {
            let Some(Gpu::Starting(handle)) = self.gpu.take() else { unreachable!("matched above") };
            let cancel = self.options.sim.cancel.clone();
            self.gpu = Some(match handle.join() {
                Ok(Ok(mut gpu)) => {
                    gpu.cancel = cancel;
                    Gpu::Ready(Box::new(gpu))
                }
                Ok(Err(why)) => Gpu::Unusable(why),
                Err(_) => Gpu::Unusable("the GPU backend failed to start".into()),
            });
        }
        match &mut self.gpu {
            Some(Gpu::Ready(g)) => Some(g),
            _ => None,
        }
    }

    /// Why launches do not run on the GPU, when they do not (after settling `auto`'s choice).
    pub fn gpu_problem(&mut self) -> Option<String> {
        if self.on_gpu() {
            return None;
        }
        Some(match self.options.backend {
            BackendKind::Sim => "the session runs on the simulator".into(),
            _ => self.gpu_unusable_reason(),
        })
    }

    fn gpu_unusable_reason(&self) -> String {
        match &self.gpu {
            Some(Gpu::Unusable(why)) => why.clone(),
            _ => "no GPU".into(),
        }
    }

    /// Settle which backend runs launches (`auto` waits for the GPU's start) and say why, once.
    pub fn resolve_backend(&mut self) -> String {
        let requested = self.options.backend;
        if requested == BackendKind::Sim {
            self.active = BackendKind::Sim;
            return "backend: sim".into();
        }
        match self.gpu_ready().map(|g| g.info().name.clone()) {
            Some(name) => {
                self.active = BackendKind::Gpu;
                format!("backend: gpu ({name})")
            }
            None => {
                self.active = BackendKind::Sim;
                let why = self.gpu_unusable_reason();
                match requested {
                    BackendKind::Gpu => format!("backend: sim, because the GPU backend is not usable: {why}"),
                    _ => auto_fallback(&why),
                }
            }
        }
    }

    /// Switch backends (`:backend`). Moving to the GPU gives it the module.
    pub(crate) fn switch_backend(&mut self, kind: BackendKind) -> Result<String, String> {
        if kind == BackendKind::Sim {
            self.active = BackendKind::Sim;
            return Ok("backend: sim".into());
        }
        if self.gpu.is_none() {
            self.gpu = Some(Gpu::start(&self.options));
        }
        let ready = self.gpu_ready().is_some();
        match &mut self.gpu {
            Some(Gpu::Ready(gpu)) if ready => {
                let name = gpu.info().name.clone();
                if !self.module.is_empty() {
                    gpu.load(&self.module, &self.sources)
                        .map_err(|e| format!("the GPU could not compile the session's kernels: {e}"))?;
                }
                self.active = BackendKind::Gpu;
                Ok(format!("backend: gpu ({name})"))
            }
            _ => {
                let why = self.gpu_unusable_reason();
                self.active = BackendKind::Sim;
                if kind == BackendKind::Auto {
                    Ok(auto_fallback(&why))
                } else {
                    Err(format!("the GPU backend is not usable: {why}; kernels keep running on the simulator"))
                }
            }
        }
    }

    fn ensure_resolved(&mut self) {
        if self.active == BackendKind::Auto {
            self.resolve_backend();
        }
    }

    /// The backend that runs launches now.
    pub(crate) fn backend(&mut self) -> &mut dyn Backend {
        self.ensure_resolved();
        active_backend(&mut self.sim, &mut self.gpu, self.active)
    }

    pub(crate) fn backend_label(&mut self) -> String {
        self.backend().label()
    }

    /// The GPU backend, when launches run on it now.
    pub(crate) fn active_gpu(&mut self) -> Option<&mut GpuBackend> {
        self.ensure_resolved();
        match &mut self.gpu {
            Some(Gpu::Ready(g)) if self.active == BackendKind::Gpu => Some(g.as_mut()),
            _ => None,
        }
    }

    /// Whether launches run on the GPU now.
    pub fn on_gpu(&mut self) -> bool {
        self.ensure_resolved();
        self.active == BackendKind::Gpu
    }

    /// Run text typed at a prompt: it may hold several inputs (a pasted script).
    pub fn eval_typed(&mut self, text: &str, out: &mut dyn Write) -> io::Result<Status> {
        self.typed += 1;
        let name = format!("<input {}>", self.typed);
        self.eval_recorded(&name, text, false, out)
    }

    /// Split `text` into inputs and run each; `echo` prints each input before its output, as
    /// `replay` and `:load` do. Returns the worst status.
    pub fn eval_text(&mut self, name: &str, text: &str, echo: bool, out: &mut dyn Write) -> io::Result<Status> {
        self.eval_inputs(name, text, echo, false, out)
    }

    /// [`Session::eval_text`], keeping each input and what it printed (without the echo and
    /// colour) for `:export`: what the learner typed or piped in.
    pub fn eval_recorded(&mut self, name: &str, text: &str, echo: bool, out: &mut dyn Write) -> io::Result<Status> {
        self.eval_inputs(name, text, echo, true, out)
    }

    fn eval_inputs(
        &mut self,
        name: &str,
        text: &str,
        echo: bool,
        record: bool,
        out: &mut dyn Write,
    ) -> io::Result<Status> {
        let (inputs, broken) = self.split(name, text);
        let mut worst = Status::Ok;
        for input in &inputs {
            if echo {
                render::write_echo(out, &input.text, &self.options.style)?;
            }
            let status = self.eval_input(name, input, record, out)?;
            worst = worse(worst, status);
        }
        if let Some(diag) = broken {
            self.report(&diag, out)?;
            worst = Status::Error;
        }
        Ok(worst)
    }

    /// Run one input; when `record`, keep it and what it printed (without colour) for `:export`.
    pub fn eval_input(&mut self, name: &str, input: &Input, record: bool, out: &mut dyn Write) -> io::Result<Status> {
        let mut tee = Tee { out, copy: Vec::new(), keep: record };
        let status = self.eval(name, input, &mut tee)?;
        if record {
            let printed = crate::render::text::strip_ansi(&tee.copy);
            self.transcript.push((input.text.clone(), printed));
        }
        Ok(status)
    }

    /// Split a script into inputs. When its last CUDA item never ends, the inputs before it are
    /// returned with the error, re-pointed at `name` so it shows the script's own line.
    pub fn split(&mut self, name: &str, text: &str) -> (Vec<Input>, Option<Diagnostic>) {
        match script::split_inputs(text) {
            Ok(inputs) => (inputs, None),
            Err(e) => {
                let id = self.sources.add(name, text, 1);
                let diag = Diagnostic { span: e.diag.span.map(|s| crate::diag::Span { source: id, ..s }), ..e.diag };
                (e.inputs, Some(diag))
            }
        }
    }

    /// Run one input. `name` is the file (or `<input N>`) it came from, for error locations.
    pub fn eval(&mut self, name: &str, input: &Input, out: &mut dyn Write) -> io::Result<Status> {
        let id = self.sources.add(name, input.text.as_str(), input.line);
        let status = match input.kind {
            InputKind::Cuda => self.define(id, out)?,
            InputKind::Command => command::run(self, &input.text, out)?,
            InputKind::Statement => self.statement(id, out)?,
        };
        if status != Status::Error && input.kind != InputKind::Command {
            self.history.push(input.text.clone());
        }
        Ok(status)
    }

    fn report(&self, diag: &Diagnostic, out: &mut dyn Write) -> io::Result<Status> {
        diag.render(&self.sources, out, self.options.style.color, self.options.style.width)?;
        Ok(if diag.is_error() { Status::Error } else { Status::Ok })
    }

    fn text(&self, id: SourceId) -> String {
        self.sources.get(id).map(|f| f.text.clone()).unwrap_or_default()
    }

    /// CUDA source: add it to the module, checked against everything defined so far.
    fn define(&mut self, id: SourceId, out: &mut dyn Write) -> io::Result<Status> {
        let text = self.text(id);
        let previous = self.module.clone();
        let added = match self.module.add(id, &text) {
            // Outside the simulator's subset: on the GPU, NVRTC takes it (and judges it).
            Err(errors) if self.module.gpu_could_take(&errors, &text) && self.on_gpu() => {
                self.module.add_for_gpu(id, &text)
            }
            added => added,
        };
        match added {
            Ok(outcome) => {
                for w in &outcome.warnings {
                    self.report(w, out)?;
                }
                self.refused.retain(|(n, _)| !outcome.defined.iter().any(|d| &d.name == n));
                self.ensure_resolved();
                let backend = active_backend(&mut self.sim, &mut self.gpu, self.active);
                if let Err(e) = backend.load(&self.module, &self.sources) {
                    // The GPU's compiler said no: the session keeps the module it had.
                    self.module = previous;
                    match e {
                        BackendError::Compile(diags) => {
                            for d in &diags {
                                self.report(d, out)?;
                            }
                        }
                        other => writeln!(out, "{} {other}", self.options.style.error("error:"))?,
                    }
                    return Ok(Status::Error);
                }
                if let Some(note) = outcome.gpu_note() {
                    writeln!(out, "{}", self.options.style.dim(&note))?;
                }
                self.constants = constants(&self.module);
                for d in &outcome.defined {
                    let what = match d.kind {
                        ItemKind::Kernel => "kernel",
                        ItemKind::DeviceFunction => "device function",
                        ItemKind::Global => "global",
                        ItemKind::Define => "macro",
                        ItemKind::Typedef => "type",
                    };
                    let verb = if d.replaced { "redefined" } else { "defined" };
                    let sig = match d.kind {
                        ItemKind::Kernel | ItemKind::DeviceFunction => self
                            .module
                            .program()
                            .function(&d.name)
                            .map(|(_, f)| render::signature(f))
                            .or_else(|| self.module.gpu_only_signature(&d.name))
                            .unwrap_or_else(|| d.name.clone()),
                        _ => d.name.clone(),
                    };
                    writeln!(out, "{} {what} {}", self.options.style.dim(verb), self.options.style.bold(&sig))?;
                }
                if self.active == BackendKind::Gpu
                    && let Some(Gpu::Ready(g)) = &self.gpu
                    && let Some(stat) = &g.last_compile
                {
                    writeln!(out, "{}", self.options.style.dim(&format!("  ({})", stat.describe())))?;
                }
                Ok(Status::Ok)
            }
            Err(diags) => {
                let gpu_runs_it = !self.on_gpu() && self.module.gpu_could_take(&diags, &text);
                for d in &diags {
                    let mut d = d.clone();
                    // Only where the GPU's path would take it: a construct outside the subset.
                    let said = |t: &str| t.contains(":backend gpu") || t.contains("GPU backend");
                    if gpu_runs_it && d.is_error() && !said(d.help.as_deref().unwrap_or("")) && !said(&d.message) {
                        d = d.note("the GPU backend runs this: switch with `:backend gpu`");
                    }
                    self.report(&d, out)?;
                }
                for piece in crate::cuda::sketch::sketch(&text) {
                    if matches!(piece.kind, ItemKind::Kernel | ItemKind::DeviceFunction) {
                        self.refused.retain(|(n, _)| n != &piece.name);
                        self.refused.push((piece.name.clone(), Span::new(id, piece.lo, piece.hi)));
                    }
                }
                self.keep_defines(id, &text, out)?;
                Ok(Status::Error)
            }
        }
    }

    /// After a refused snippet, keep its `#define`s (when they check on their own), so one
    /// refused kernel does not make every later use of the snippet's macros "not defined".
    fn keep_defines(&mut self, id: SourceId, text: &str, out: &mut dyn Write) -> io::Result<()> {
        let mut only = String::with_capacity(text.len());
        let mut any = false;
        let mut continued = false;
        for line in text.split_inclusive('\n') {
            let keep = continued || line.trim_start().starts_with("#define");
            continued = keep && line.trim_end_matches(['\n', '\r']).ends_with('\\');
            if keep {
                any = true;
                only.push_str(line);
            } else {
                only.extend(line.chars().map(|c| if c == '\n' { '\n' } else { ' ' }));
            }
        }
        if !any || only.len() != text.len() {
            return Ok(());
        }
        let previous = self.module.clone();
        let Ok(outcome) = self.module.add(id, &only) else { return Ok(()) };
        let backend = active_backend(&mut self.sim, &mut self.gpu, self.active);
        if backend.load(&self.module, &self.sources).is_err() {
            self.module = previous;
            return Ok(());
        }
        self.constants = constants(&self.module);
        let names: Vec<String> = outcome.defined.iter().map(|d| format!("`{}`", d.name)).collect();
        if !names.is_empty() {
            let msg = format!("kept the snippet's #defines: {}", names.join(", "));
            writeln!(out, "{}", self.options.style.dim(&msg))?;
        }
        Ok(())
    }

    fn statement(&mut self, id: SourceId, out: &mut dyn Write) -> io::Result<Status> {
        let text = self.text(id);
        let stmt = match script::parse_statement(id, &text) {
            Ok(stmt) => stmt,
            Err(diag) => return self.report(&diag, out),
        };
        match stmt.kind {
            StmtKind::Let { name, value, .. } => {
                self.unbind_record(&name);
                let v = match eval::eval(&value, self, &text) {
                    Ok(v) => v,
                    Err(diag) => return self.report(&diag, out),
                };
                self.bind(name, v);
                Ok(Status::Ok)
            }
            StmtKind::Launch(launch) => self.launch(&launch, &text, out),
            StmtKind::Inspect(expr) => {
                let style = self.options.style.clone();
                if let ExprKind::Name(name) = &expr.kind
                    && self.buffer(name).is_none()
                    && self.show_record(name, out)?
                {
                    return Ok(Status::Ok);
                }
                if let ExprKind::Name(name) = &expr.kind
                    && let Some(buf) = self.buffer(name)
                {
                    let changed = self.changed_mask(name);
                    render::array::write_array(out, name, buf, &style.array(changed))?;
                    return Ok(Status::Ok);
                }
                match eval::eval(&expr, self, &text) {
                    Ok(v) => {
                        let label = text
                            [(expr.span.lo as usize).min(text.len())..(expr.span.hi as usize).min(text.len())]
                            .trim()
                            .to_string();
                        render::array::write_value(out, &label, &v, &style.array(None))?;
                        Ok(Status::Ok)
                    }
                    Err(diag) => self.report(&diag, out),
                }
            }
            StmtKind::Expect(expect) => self.expect(&expect, &text, out),
            StmtKind::Cost { name, launch } => self.cost_statement(name, &launch, &text, out),
        }
    }

    fn bind(&mut self, name: String, v: Value) {
        self.buffers.retain(|(n, _)| *n != name);
        self.scalars.retain(|(n, _)| *n != name);
        match v {
            Value::Array(a) => self.buffers.push((name, a.to_buffer())),
            scalar => self.scalars.push((name, scalar)),
        }
    }

    fn expect(&mut self, expect: &Expect, text: &str, out: &mut dyn Write) -> io::Result<Status> {
        let style = self.options.style.clone();
        let (passed, message) = match expect {
            Expect::Expr(expr) => match eval::eval_expect(expr, self, text) {
                Ok(o) => (o.passed, o.message),
                Err(diag) => return self.report(&diag, out),
            },
            Expect::Clean | Expect::Finding(..) => {
                let Some(findings) = self.last_findings() else {
                    writeln!(out, "{}", style.error("error: no launch yet: `expect clean` and `expect finding` check the findings of the last launch"))?;
                    return Ok(Status::Error);
                };
                match expect {
                    Expect::Clean if findings.is_empty() => (true, String::new()),
                    Expect::Clean => {
                        let kinds: Vec<_> = findings.iter().map(|f| f.kind().name()).collect();
                        (false, format!("the last launch has {} finding(s): {}", findings.len(), kinds.join(", ")))
                    }
                    Expect::Finding(kind, _) => {
                        if findings.iter().any(|f| f.kind() == *kind) {
                            (true, String::new())
                        } else if findings.is_empty() {
                            (false, format!("the last launch has no findings; expected a {} finding", kind.name()))
                        } else {
                            let kinds: Vec<_> = findings.iter().map(|f| f.kind().name()).collect();
                            (
                                false,
                                format!(
                                    "the last launch has no {} finding (it has: {})",
                                    kind.name(),
                                    kinds.join(", ")
                                ),
                            )
                        }
                    }
                    Expect::Expr(_) => unreachable!("handled above"),
                }
            }
        };
        if passed {
            writeln!(out, "{}", style.ok("ok"))?;
            Ok(Status::Ok)
        } else {
            writeln!(out, "{} {message}", style.error("expect failed:"))?;
            Ok(Status::ExpectFailed)
        }
    }

    /// Which elements of `name` the last launch changed, when it was launched with that buffer.
    fn changed_mask(&self, name: &str) -> Option<Vec<bool>> {
        let last = self.last.as_ref()?;
        let (_, before) = last.before.iter().find(|(n, _)| n == name)?;
        let now = self.buffer(name)?;
        if before.len() != now.len() || before.dtype() != now.dtype() {
            return None;
        }
        let size = now.dtype().size();
        Some(before.bytes().chunks(size).zip(now.bytes().chunks(size)).map(|(a, b)| a != b).collect())
    }

    /// Forget kernels, buffers, scalars and findings; keep the settings.
    pub fn reset(&mut self) {
        self.module.clear();
        self.refused.clear();
        self.constants.clear();
        self.buffers.clear();
        self.scalars.clear();
        self.last = None;
        self.history.clear();
    }

    /// Take what the learner made (buffers, scalars, the last launch, history) and the run
    /// settings out of the session, for a lesson check to run in a scratch copy; the module stays.
    pub(crate) fn save_state(&mut self) -> Saved {
        Saved {
            buffers: std::mem::take(&mut self.buffers),
            scalars: std::mem::take(&mut self.scalars),
            last: self.last.take(),
            history: self.history.clone(),
            seed: self.options.sim.seed,
            schedule: self.options.sim.schedule,
            active: self.active,
            color: self.options.style.color,
            width: self.options.style.width,
        }
    }

    /// Put back what [`Session::save_state`] took, dropping whatever a check made meanwhile.
    pub(crate) fn restore_state(&mut self, saved: Saved) {
        self.buffers = saved.buffers;
        self.scalars = saved.scalars;
        self.last = saved.last;
        self.history = saved.history;
        self.set_seed(saved.seed);
        self.set_schedule(saved.schedule);
        self.active = saved.active;
        self.options.style.color = saved.color;
        self.options.style.width = saved.width;
    }

    /// Forget buffers, scalars and the last launch, keeping kernels and settings.
    pub(crate) fn clear_data(&mut self) {
        self.buffers.clear();
        self.scalars.clear();
        self.last = None;
    }

    /// Run the next launches on the simulator with this seed and schedule, or on the GPU (when
    /// it is ready; callers ask [`Session::on_gpu`] first).
    pub(crate) fn run_on(&mut self, target: RunOn) {
        match target {
            RunOn::Sim { seed, schedule } => {
                self.active = BackendKind::Sim;
                self.set_seed(seed);
                self.set_schedule(schedule);
            }
            RunOn::Gpu => {
                if matches!(self.gpu, Some(Gpu::Ready(_))) {
                    self.active = BackendKind::Gpu;
                }
            }
        }
    }

    pub(crate) fn set_schedule(&mut self, schedule: Schedule) {
        self.sim.config.schedule = schedule;
        self.options.sim.schedule = schedule;
    }

    pub(crate) fn set_seed(&mut self, seed: u64) {
        self.sim.config.seed = seed;
        self.options.sim.seed = seed;
    }

    pub(crate) fn total_buffer_bytes(&self) -> u64 {
        self.buffers.iter().map(|(_, b)| b.size_bytes() as u64).sum()
    }

    fn run_launch(
        &mut self,
        spec: &LaunchSpec,
        names: &[String],
    ) -> Result<LaunchReport, crate::backend::BackendError> {
        self.ensure_resolved();
        let mut picked: Vec<Option<&mut Buffer>> = Vec::new();
        picked.resize_with(names.len(), || None);
        for (n, b) in self.buffers.iter_mut() {
            if let Some(i) = names.iter().position(|x| x == n) {
                picked[i] = Some(b);
            }
        }
        let buffers = picked.into_iter().map(|b| b.expect("launch buffers are resolved from session names")).collect();
        let mut lb = crate::backend::LaunchBuffers { names: names.to_vec(), buffers };
        active_backend(&mut self.sim, &mut self.gpu, self.active).launch(&self.module, spec, &mut lb)
    }
}

/// The backend that runs launches, borrowed from the session's fields alone so that the module
/// and sources can be borrowed beside it (rather than copied for every launch).
fn active_backend<'a>(sim: &'a mut SimBackend, gpu: &'a mut Option<Gpu>, active: BackendKind) -> &'a mut dyn Backend {
    match gpu {
        Some(Gpu::Ready(g)) if active == BackendKind::Gpu => g.as_mut(),
        _ => sim,
    }
}

impl Env for Session {
    fn buffer(&self, name: &str) -> Option<&Buffer> {
        Session::buffer(self, name)
    }

    fn scalar<'a>(&'a self, name: &str) -> Option<&'a Value> {
        let named = |list: &'a [(String, Value)]| list.iter().rev().find(|(n, _)| n == name).map(|(_, v)| v);
        named(&self.scalars).or_else(|| named(&self.constants))
    }

    fn max_alloc_bytes(&self) -> u64 {
        self.options.max_alloc.saturating_sub(self.total_buffer_bytes())
    }

    fn names(&self) -> Vec<String> {
        let scalars = self.scalars.iter().chain(&self.constants);
        self.buffers.iter().map(|(n, _)| n.clone()).chain(scalars.map(|(n, _)| n.clone())).collect()
    }
}

/// The module's `#define`s whose bodies are numbers (`16`, `1.5f`, `(1 << 10)`), as values, so
/// that a launch can say `<<<n // TILE, TILE>>>` after `#define TILE 16`.
fn constants(module: &Module) -> Vec<(String, Value)> {
    /// The constants so far: a body may use the macros defined before it (`#define N (TILE * 4)`).
    struct Earlier(Vec<(String, Value)>);
    impl Env for Earlier {
        fn buffer(&self, _: &str) -> Option<&Buffer> {
            None
        }
        fn scalar(&self, name: &str) -> Option<&Value> {
            self.0.iter().rev().find(|(n, _)| n == name).map(|(_, v)| v)
        }
        fn max_alloc_bytes(&self) -> u64 {
            0
        }
    }
    let mut out = Earlier(Vec::new());
    for (name, body) in module.defines() {
        // C's literal suffixes (`16u`, `1.5f`) mean nothing to the session language.
        let body: String = body.split(|c: char| !(c.is_ascii_alphanumeric() || c == '.' || c == '_')).fold(
            body.to_string(),
            |text, word| {
                let bare = word.trim_end_matches(['f', 'F', 'u', 'U', 'l', 'L']);
                let numeric = bare.chars().next().is_some_and(|c| c.is_ascii_digit()) && !bare.contains(['x', 'X']);
                if numeric && bare != word { text.replacen(word, bare, 1) } else { text }
            },
        );
        let text = format!("let {name} = {body}");
        let Ok(stmt) = script::parse_statement(0, &text) else { continue };
        if let StmtKind::Let { value, .. } = stmt.kind
            && let Ok(v @ (Value::Int(_) | Value::Float(_))) = eval::eval(&value, &out, &text)
        {
            out.0.push((name.to_string(), v));
        }
    }
    out.0
}

/// Writes to the terminal and, when `keep`, keeps a copy for the transcript.
struct Tee<'a> {
    out: &'a mut dyn Write,
    copy: Vec<u8>,
    keep: bool,
}

impl Write for Tee<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.out.write(buf)?;
        if self.keep {
            self.copy.extend_from_slice(&buf[..n]);
        }
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

/// The more serious of two statuses.
pub fn worse(a: Status, b: Status) -> Status {
    match (a, b) {
        (Status::Error, _) | (_, Status::Error) => Status::Error,
        (Status::ExpectFailed, _) | (_, Status::ExpectFailed) => Status::ExpectFailed,
        _ => Status::Ok,
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// A session small enough that any mutated script runs in milliseconds.
    fn small_session() -> Session {
        let sim = SimConfig { max_steps: 200_000, ..SimConfig::default() };
        Session::new(Options { max_alloc: 1 << 20, sim, ..Options::default() })
    }

    fn scripts() -> Vec<String> {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/scripts");
        let mut v: Vec<String> =
            std::fs::read_dir(dir).unwrap().map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap()).collect();
        v.sort();
        v
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

        /// Mutated scripts (lines dropped, duplicated, swapped, characters changed) may fail,
        /// but never panic the session: whatever the learner types, the session survives.
        #[test]
        fn mutated_scripts_never_panic(
            which in any::<prop::sample::Index>(),
            edits in proptest::collection::vec((0u8..4, any::<prop::sample::Index>(), any::<prop::sample::Index>(), any::<char>()), 1..6),
        ) {
            let all = scripts();
            let mut lines: Vec<String> = which.get(&all).lines().map(str::to_string).collect();
            for (op, a, b, c) in edits {
                if lines.is_empty() {
                    break;
                }
                let i = a.index(lines.len());
                match op {
                    0 => { lines.remove(i); }
                    1 => { let l = lines[i].clone(); lines.insert(b.index(lines.len() + 1), l); }
                    2 => { let j = b.index(lines.len()); lines.swap(i, j); }
                    _ => {
                        let mut chars: Vec<char> = lines[i].chars().collect();
                        if !chars.is_empty() {
                            let k = b.index(chars.len());
                            chars[k] = c;
                        }
                        lines[i] = chars.into_iter().collect();
                    }
                }
            }
            let text = lines.join("\n");
            let mut out = Vec::new();
            small_session().eval_text("mutated.gridlab", &text, true, &mut out).unwrap();
        }
    }

    #[test]
    fn the_largest_legal_launch_is_refused_by_the_simulator_at_once() {
        let mut s = small_session();
        let mut out = Vec::new();
        let script = "__global__ void k(float *a) { a[0] = 1; }\nlet a = zeros(4)\n\
                      k<<<(2147483647, 65535, 65535), 1024>>>(a)\n";
        assert_eq!(s.eval_text("t.gridlab", script, false, &mut out).unwrap(), Status::Error);
        let out = String::from_utf8(out).unwrap();
        assert!(out.contains("is 9,444,444,733,164,249,676,800 threads in 295,138,897,911,382,802,400 warps"), "{out}");
        assert!(out.contains("launch fewer, or run this one on a GPU"), "{out}");
        assert!(s.buffer("a").unwrap().bytes().iter().all(|b| *b == 0));
    }

    #[test]
    fn numeric_defines_are_constants_in_statements() {
        let mut s = small_session();
        let mut out = Vec::new();
        let script = "#define TILE 16\n#define HALF 0.5f\n#define N (TILE * 4)\n#define NAME foo\n\
                      __global__ void k(float *a) { a[threadIdx.x + blockIdx.x * TILE] += HALF; }\n\
                      let a = zeros(N)\nk<<<N // TILE, TILE>>>(a)\nexpect a == HALF\nexpect len(a) == 64\n";
        let status = s.eval_text("t.gridlab", script, false, &mut out).unwrap();
        assert_eq!(status, Status::Ok, "{}", String::from_utf8_lossy(&out));
        // A `let` of the same name wins; a macro that is not a number is no constant.
        let mut out = Vec::new();
        s.eval_text("t.gridlab", "let TILE = 3\nexpect TILE == 3\nNAME\n", false, &mut out).unwrap();
        let out = String::from_utf8(out).unwrap();
        assert!(out.contains("`NAME` is not defined"), "{out}");
        s.reset();
        let mut out = Vec::new();
        assert_eq!(s.eval_text("t.gridlab", "HALF\n", false, &mut out).unwrap(), Status::Error);
    }

    #[test]
    fn a_stopped_launch_leaves_its_buffers_as_they_were() {
        let mut s = small_session();
        let mut out = Vec::new();
        let script = "__global__ void k(int *a) { a[0] = 7; while (a[1] == 0) {} }\nlet a = zeros(2, i32)\nk<<<1, 1>>>(a)\nexpect a[0] == 0\nexpect finding step_limit\n";
        let status = s.eval_text("t.gridlab", script, false, &mut out).unwrap();
        assert_eq!(status, Status::Ok, "{}", String::from_utf8_lossy(&out));
    }
}
