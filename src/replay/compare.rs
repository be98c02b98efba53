//! `gridlab replay --compare sim,gpu`: run each script on the simulator and on the GPU at once and
//! report where they part.
//!
//! Two sessions, one pinned to `sim` and one to `gpu`, are fed the same inputs in lockstep; after
//! each input every buffer and scalar of the one is compared with the other's, so a difference is
//! reported at the input that made it ("file:line: after `INPUT`, a[3] is 0.5 on sim and 1.5 on
//! gpu"), once, and not again after every later input. Inputs that pin `:backend sim` run on the
//! simulator in both sessions; `:backend gpu` or `auto` leaves the sim session where it is.
//!
//! A racy launch has no single right answer, so the buffers it wrote are not compared while they
//! differ (and neither are what is computed from them: a `let` or a launch that reads them).

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::io::{self, Write};
use std::path::PathBuf;

use super::UsageError;
use crate::backend::BackendKind;
use crate::buffer::{Buffer, Num, Shape};
use crate::dtype::DType;
use crate::script::{Input, InputKind};
use crate::session::{LaunchOutline, Options, Session, Status};
use crate::value::Value;

/// The backends `--compare` takes: only `sim,gpu` (in either order) for now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SimAndGpu;

/// clap's parser for `--compare`.
pub fn parse_backends(s: &str) -> Result<SimAndGpu, String> {
    let mut names: Vec<&str> = s.split(',').map(str::trim).collect();
    names.sort_unstable();
    if names == ["gpu", "sim"] { Ok(SimAndGpu) } else { Err(format!("`{s}`: only `sim,gpu` can be compared")) }
}

/// Why `--compare` could not run at all: exit status 2.
#[derive(Debug, thiserror::Error)]
pub enum CompareError {
    #[error("cannot compare with the GPU: the GPU backend is not usable: {0}")]
    NoGpu(String),
    #[error(transparent)]
    Usage(#[from] UsageError),
}

/// Relative and absolute tolerance for one floating-point dtype: enough for the ulp or two that
/// a GPU's math functions (and fused multiply-adds) may differ by, far below a wrong index.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Tolerance {
    pub rel: f64,
    pub abs: f64,
}

/// The tolerance of `~=` in `expect`: what a script already accepts as the same f32.
pub const F32_TOLERANCE: Tolerance =
    Tolerance { rel: crate::script::eval::APPROX_REL, abs: crate::script::eval::APPROX_ABS };
pub const F64_TOLERANCE: Tolerance = Tolerance { rel: 1e-12, abs: 1e-14 };

/// Whether two elements of `dtype` count as the same: integers exactly, floats within the
/// dtype's tolerance, NaN equal to NaN and infinities to the same infinity.
pub fn same(dtype: DType, a: Num, b: Num) -> bool {
    match dtype {
        DType::F32 => close(a.as_f64(), b.as_f64(), F32_TOLERANCE),
        DType::F64 => close(a.as_f64(), b.as_f64(), F64_TOLERANCE),
        _ => a == b,
    }
}

fn close(a: f64, b: f64, tol: Tolerance) -> bool {
    if a.is_nan() || b.is_nan() {
        return a.is_nan() && b.is_nan();
    }
    if a == b {
        return true;
    }
    if a.is_infinite() || b.is_infinite() {
        return false;
    }
    let d = (a - b).abs();
    d <= tol.abs || d <= tol.rel * a.abs().max(b.abs())
}

/// Elements named in a message before the rest are counted.
pub const SHOWN: usize = 3;

/// One way the two sessions differ after an input.
#[derive(Clone, Debug, PartialEq)]
pub enum Difference {
    /// Elements of a buffer: the first [`SHOWN`] (index, sim, gpu), and how many more.
    Elements { name: String, dtype: DType, shape: Shape, first: Vec<(usize, Num, Num)>, more: usize },
    /// The same name holds different kinds of thing (dtype, shape, buffer or scalar).
    Kind { name: String, sim: String, gpu: String },
    /// A name only one session has.
    Only { name: String, on: &'static str },
    /// Boxed: a value may be a whole buffer, and the other variants are small.
    Scalar { name: String, sim: Box<Value>, gpu: Box<Value> },
}

impl Difference {
    pub fn name(&self) -> &str {
        match self {
            Difference::Elements { name, .. }
            | Difference::Kind { name, .. }
            | Difference::Only { name, .. }
            | Difference::Scalar { name, .. } => name,
        }
    }

    /// The message lines, without the `file:line: after `INPUT`, ` before each.
    pub fn lines(&self) -> Vec<String> {
        match self {
            Difference::Elements { name, dtype, shape, first, more } => {
                let mut lines: Vec<String> = first
                    .iter()
                    .map(|(i, s, g)| {
                        format!(
                            "{} is {} on sim and {} on gpu",
                            index(name, *shape, *i),
                            num(*s, *dtype),
                            num(*g, *dtype)
                        )
                    })
                    .collect();
                if *more > 0 {
                    let s = if *more == 1 { "" } else { "s" };
                    lines.push(format!("{more} more element{s} of {name} differ{}", if *more == 1 { "s" } else { "" }));
                }
                lines
            }
            Difference::Kind { name, sim, gpu } => vec![format!("{name} is {sim} on sim and {gpu} on gpu")],
            Difference::Only { name, on } => vec![format!("{name} exists only on {on}")],
            Difference::Scalar { name, sim, gpu } => {
                vec![format!("{name} is {} on sim and {} on gpu", value(sim), value(gpu))]
            }
        }
    }
}

/// `a[3]` or `m[1, 2]`.
fn index(name: &str, shape: Shape, i: usize) -> String {
    match shape {
        Shape::D2(_, cols) if cols > 0 => format!("{name}[{}, {}]", i / cols, i % cols),
        _ => format!("{name}[{i}]"),
    }
}

/// An element as its dtype holds it, with every digit that tells it apart (`0.10000001`).
fn num(n: Num, dtype: DType) -> String {
    match (n, dtype) {
        (Num::Float(f), DType::F32) => format!("{}", f as f32),
        (Num::Float(f), _) => format!("{f}"),
        (Num::Int(i), _) => i.to_string(),
    }
}

fn value(v: &Value) -> String {
    match v {
        Value::Int(i) => i.to_string(),
        Value::Float(f) => format!("{f}"),
        Value::Bool(b) => b.to_string(),
        Value::Array(a) => a.type_name(),
        Value::Dim3(d) => crate::value::format_dim3(*d),
    }
}

fn describe(b: &Buffer) -> String {
    format!("{}[{}]", b.dtype(), b.shape())
}

/// How `sim` and `gpu`, the same buffer on the two backends, differ, if they do.
pub fn diff_buffer(name: &str, sim: &Buffer, gpu: &Buffer) -> Option<Difference> {
    if sim.dtype() != gpu.dtype() || sim.shape() != gpu.shape() {
        return Some(Difference::Kind { name: name.into(), sim: describe(sim), gpu: describe(gpu) });
    }
    // Most buffers are byte for byte the same: no need to decode them.
    if sim.bytes() == gpu.bytes() {
        return None;
    }
    let dtype = sim.dtype();
    let mut first = Vec::new();
    let mut more = 0;
    for i in 0..sim.len() {
        let (s, g) = (sim.get(i), gpu.get(i));
        if !same(dtype, s, g) {
            if first.len() < SHOWN {
                first.push((i, s, g));
            } else {
                more += 1;
            }
        }
    }
    (!first.is_empty()).then(|| Difference::Elements { name: name.into(), dtype, shape: sim.shape(), first, more })
}

fn same_value(a: &Value, b: &Value) -> bool {
    match (a, b) {
        // A scalar does not say whether it came from an f32: allow f32's tolerance.
        (Value::Float(x), Value::Float(y)) => close(*x, *y, F32_TOLERANCE),
        _ => a == b,
    }
}

/// What one session holds, as compared.
#[derive(Clone, Copy)]
pub struct State<'a> {
    pub buffers: &'a [(String, Buffer)],
    pub scalars: &'a [(String, Value)],
}

impl<'a> State<'a> {
    pub fn of(s: &'a Session) -> State<'a> {
        State { buffers: s.buffers(), scalars: s.scalars() }
    }

    fn names(&self) -> BTreeSet<&'a str> {
        self.buffers.iter().map(|(n, _)| n.as_str()).chain(self.scalars.iter().map(|(n, _)| n.as_str())).collect()
    }

    fn buffer(&self, name: &str) -> Option<&'a Buffer> {
        self.buffers.iter().find(|(n, _)| n == name).map(|(_, b)| b)
    }

    fn scalar(&self, name: &str) -> Option<&'a Value> {
        self.scalars.iter().find(|(n, _)| n == name).map(|(_, v)| v)
    }
}

/// Every difference between the two sessions, by name.
pub fn diff_states(sim: State<'_>, gpu: State<'_>) -> Vec<Difference> {
    let mut names = sim.names();
    names.extend(gpu.names());
    let mut out = Vec::new();
    for name in names {
        let d = match (sim.buffer(name), gpu.buffer(name), sim.scalar(name), gpu.scalar(name)) {
            (Some(s), Some(g), _, _) => diff_buffer(name, s, g),
            // A cost record's time is the model's estimate on sim and a measurement on the GPU:
            // they are meant to differ (`docs/cost-model.md` compares them).
            (_, _, Some(_), Some(_)) if name.ends_with(".time_us") => None,
            (_, _, Some(s), Some(g)) => (!same_value(s, g)).then(|| Difference::Scalar {
                name: name.into(),
                sim: Box::new(s.clone()),
                gpu: Box::new(g.clone()),
            }),
            (Some(s), None, _, Some(g)) => {
                Some(Difference::Kind { name: name.into(), sim: describe(s), gpu: format!("the scalar {}", value(g)) })
            }
            (None, Some(g), Some(s), _) => {
                Some(Difference::Kind { name: name.into(), sim: format!("the scalar {}", value(s)), gpu: describe(g) })
            }
            (Some(_), None, _, None) | (None, None, Some(_), None) => {
                Some(Difference::Only { name: name.into(), on: "sim" })
            }
            _ => Some(Difference::Only { name: name.into(), on: "gpu" }),
        };
        out.extend(d);
    }
    out
}

/// What one input did, as far as the comparison cares.
#[derive(Clone, Debug, Default)]
pub struct Step {
    /// `a[1023]`, first line of the input, as typed.
    pub text: String,
    pub line: u32,
    /// The launches it ran: the simulator's, and the GPU session's (on whichever backend).
    pub sim_launch: Option<LaunchOutline>,
    pub gpu_launch: Option<LaunchOutline>,
    /// The GPU session ran its launch on the GPU (not pinned to the simulator).
    pub on_gpu: bool,
    pub sim_status: Option<Status>,
    pub gpu_status: Option<Status>,
}

/// What the comparison says after one input.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Said {
    pub differences: Vec<Difference>,
    /// The buffers a racy launch wrote, when this is the script's first racy launch.
    pub racy: Option<Vec<String>>,
    /// The input ran on one backend and failed (or its expect did not hold) on the other.
    pub status: Option<String>,
}

/// The state of one script's comparison from input to input.
#[derive(Debug, Default)]
pub struct Tracker {
    /// Names whose values come from a racy launch: not compared while they differ.
    tainted: BTreeSet<String>,
    /// Names whose difference was reported, so it is not reported again after every input.
    reported: BTreeSet<String>,
    said_racy: bool,
    pub differences: usize,
}

impl Tracker {
    /// Compare the sessions after `step`.
    pub fn step(&mut self, step: &Step, sim: State<'_>, gpu: State<'_>) -> Said {
        let mut said = Said::default();
        let launches = step.sim_launch.iter().chain(&step.gpu_launch);
        let wrote: BTreeSet<String> = launches.flat_map(|l| l.changed.iter().cloned()).collect();
        let racy = step.on_gpu && step.sim_launch.as_ref().is_some_and(|l| l.racy);
        let reads_tainted =
            step.sim_launch.iter().chain(&step.gpu_launch).any(|l| l.given.iter().any(|n| self.tainted.contains(n)));
        if racy || reads_tainted {
            if racy && !self.said_racy && !wrote.is_empty() {
                self.said_racy = true;
                said.racy = Some(wrote.iter().cloned().collect());
            }
            self.tainted.extend(wrote);
        }
        if let Some(name) = let_from_tainted(&step.text, &self.tainted) {
            self.tainted.insert(name);
        }
        let differences = diff_states(sim, gpu);
        let differing: BTreeSet<String> = differences.iter().map(|d| d.name().to_string()).collect();
        // Names the same again are compared again from here on.
        self.tainted.retain(|n| differing.contains(n));
        self.reported.retain(|n| differing.contains(n));
        for d in differences {
            if !self.tainted.contains(d.name()) && self.reported.insert(d.name().to_string()) {
                said.differences.push(d);
            }
        }
        if let (Some(s), Some(g)) = (step.sim_status, step.gpu_status)
            && s != g
            && mentions(&step.text, &self.tainted).is_none()
        {
            let word = |s: Status| match s {
                Status::Ok if step.text.trim_start().starts_with("expect") => "held",
                Status::Ok => "ran",
                Status::ExpectFailed | Status::Error => "failed",
            };
            said.status = Some(format!("{} on sim and {} on gpu", word(s), word(g)));
        }
        self.differences += said.differences.len() + said.status.is_some() as usize;
        said
    }
}

/// `let x = a[0] * 2` where `a` is tainted: `x`.
fn let_from_tainted(text: &str, tainted: &BTreeSet<String>) -> Option<String> {
    let rest = text.trim_start().strip_prefix("let ")?;
    let (name, expr) = rest.split_once('=')?;
    mentions(expr, tainted)?;
    Some(name.trim().to_string())
}

/// The first of `names` that `text` mentions as a word.
fn mentions<'a>(text: &str, names: &'a BTreeSet<String>) -> Option<&'a String> {
    let words: BTreeSet<&str> = text.split(|c: char| !(c.is_alphanumeric() || c == '_')).collect();
    names.iter().find(|n| words.contains(n.as_str()))
}

/// The first line of an input, cut to a readable length.
pub fn short_input(text: &str) -> String {
    const MAX: usize = 50;
    let first = text.trim().lines().next().unwrap_or("").trim();
    let more = text.trim().lines().nth(1).is_some();
    if first.chars().count() > MAX || more {
        let mut s: String = first.chars().take(MAX - 1).collect();
        s = s.trim_end().to_string();
        s.push('…');
        s
    } else {
        first.to_string()
    }
}

/// The lines to print for what was said after one input at `at` (`file:line`).
pub fn messages(at: &str, input: &str, said: &Said) -> Vec<String> {
    let mut out = Vec::new();
    let after = format!("{at}: after `{input}`");
    if let Some(names) = &said.racy {
        out.push(format!("{after}, skipped: racy launch ({} not compared while different)", names.join(", ")));
    }
    if let Some(status) = &said.status {
        out.push(format!("{at}: `{input}` {status}"));
    }
    for d in &said.differences {
        for line in d.lines() {
            out.push(format!("{after}, {line}"));
        }
    }
    out
}

/// The outcome of comparing every script.
#[derive(Debug, Default)]
pub struct Summary {
    pub scripts: usize,
    pub different: Vec<PathBuf>,
}

impl Summary {
    /// `compared 15 scripts: 15 the same on sim and gpu`.
    pub fn line(&self) -> String {
        let n = self.scripts;
        let same = n - self.different.len();
        let mut s = format!("compared {n} script{}: {same} the same on sim and gpu", if n == 1 { "" } else { "s" });
        if !self.different.is_empty() {
            let _ = write!(s, ", {} different", self.different.len());
        }
        s
    }
}

/// Whether an input moves a session off the simulator: the sim session does not take it.
fn leaves_sim(input: &Input) -> bool {
    input.kind == InputKind::Command && {
        let mut words = input.text.trim().trim_start_matches(':').split_whitespace();
        words.next() == Some("backend") && matches!(words.next(), Some("gpu" | "auto"))
    }
}

/// Compare every script, writing what differs to `out`; `quiet` leaves out the scripts that
/// are the same.
pub fn compare_scripts(
    scripts: &[PathBuf],
    options: &Options,
    quiet: bool,
    out: &mut dyn Write,
) -> Result<Summary, CompareError> {
    let mut summary = Summary::default();
    for (k, path) in scripts.iter().enumerate() {
        let text = crate::script::input::read_script(path)
            .map_err(|source| UsageError::Unreadable { path: path.to_path_buf(), source })?;
        let name = path.display().to_string();
        let mut sim = crate::lesson::session(Options { backend: BackendKind::Sim, ..options.clone() }, None);
        let mut gpu = crate::lesson::session(Options { backend: BackendKind::Gpu, ..options.clone() }, None);
        let label = gpu.resolve_backend();
        if let Some(why) = gpu.gpu_problem() {
            return Err(CompareError::NoGpu(why));
        }
        if k == 0 {
            writeln!(out, "comparing sim with {}", label.trim_start_matches("backend: "))
                .map_err(UsageError::Output)?;
        }
        let (lines, differences, n) = lockstep(&name, &text, &mut sim, &mut gpu).map_err(UsageError::Output)?;
        for line in &lines {
            writeln!(out, "{line}").map_err(UsageError::Output)?;
        }
        let plural = if n == 1 { "" } else { "s" };
        if differences > 0 {
            let d = differences;
            writeln!(out, "{name}: {d} difference{} ({n} input{plural})", if d == 1 { "" } else { "s" })
                .map_err(UsageError::Output)?;
            summary.different.push(path.clone());
        } else if !quiet {
            writeln!(out, "{name}: the same on sim and gpu ({n} input{plural})").map_err(UsageError::Output)?;
        }
        summary.scripts += 1;
    }
    writeln!(out, "{}", summary.line()).map_err(UsageError::Output)?;
    Ok(summary)
}

/// Feed one script's inputs to both sessions in turn; returns the messages, the number of
/// differences and the number of inputs.
fn lockstep(name: &str, text: &str, sim: &mut Session, gpu: &mut Session) -> io::Result<(Vec<String>, usize, usize)> {
    let (inputs, _) = sim.split(name, text);
    let mut tracker = Tracker::default();
    let mut lines = Vec::new();
    for input in &inputs {
        // Only the state is compared, not the transcripts (timings and device names differ).
        let sink = &mut io::sink();
        let before = (sim.launch_count(), gpu.launch_count());
        let sim_status = if leaves_sim(input) { None } else { Some(sim.eval(name, input, sink)?) };
        let gpu_status = gpu.eval(name, input, sink)?;
        let step = Step {
            text: input.text.clone(),
            line: input.line,
            sim_launch: (sim.launch_count() > before.0).then(|| sim.last_launch()).flatten(),
            gpu_launch: (gpu.launch_count() > before.1).then(|| gpu.last_launch()).flatten(),
            on_gpu: gpu.on_gpu(),
            sim_status,
            gpu_status: Some(gpu_status),
        };
        let said = tracker.step(&step, State::of(sim), State::of(gpu));
        lines.extend(messages(&format!("{name}:{}", input.line), &short_input(&input.text), &said));
    }
    Ok((lines, tracker.differences, inputs.len()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f32s(v: &[f64]) -> Buffer {
        Buffer::from_nums(DType::F32, Shape::D1(v.len()), v.iter().map(|x| Num::Float(*x)))
    }

    fn launch(given: &[&str], changed: &[&str], racy: bool) -> LaunchOutline {
        LaunchOutline {
            given: given.iter().map(|s| s.to_string()).collect(),
            changed: changed.iter().map(|s| s.to_string()).collect(),
            racy,
        }
    }

    #[test]
    fn integers_are_exact_and_floats_within_tolerance() {
        assert!(same(DType::I32, Num::Int(3), Num::Int(3)));
        assert!(!same(DType::I32, Num::Int(3), Num::Int(4)));
        assert!(!same(DType::U64, Num::Int(1 << 60), Num::Int((1 << 60) + 1)));
        // One ulp of a math function in f32 is the same; a wrong value is not.
        let x = 0.84147098f32 as f64;
        let next = f32::from_bits(0.84147098f32.to_bits() + 1) as f64;
        assert!(same(DType::F32, Num::Float(x), Num::Float(next)));
        assert!(!same(DType::F32, Num::Float(0.5), Num::Float(0.5001)));
        // Near zero the absolute tolerance applies.
        assert!(same(DType::F32, Num::Float(0.0), Num::Float(1e-8)));
        // f64 is held to far more digits.
        assert!(same(DType::F64, Num::Float(1.0), Num::Float(1.0 + 1e-14)));
        assert!(!same(DType::F64, Num::Float(1.0), Num::Float(1.0 + 1e-9)));
    }

    #[test]
    fn nan_equals_nan_and_infinities_only_themselves() {
        assert!(same(DType::F32, Num::Float(f64::NAN), Num::Float(f64::NAN)));
        assert!(!same(DType::F32, Num::Float(f64::NAN), Num::Float(1.0)));
        assert!(same(DType::F64, Num::Float(f64::INFINITY), Num::Float(f64::INFINITY)));
        assert!(!same(DType::F64, Num::Float(f64::INFINITY), Num::Float(f64::NEG_INFINITY)));
        assert!(!same(DType::F32, Num::Float(f64::INFINITY), Num::Float(3.4e38)));
        assert!(same(DType::F32, Num::Float(-0.0), Num::Float(0.0)));
    }

    #[test]
    fn a_buffer_difference_names_the_first_elements_and_counts_the_rest() {
        let sim = f32s(&[0.0, 1.0, 2.0, 3.0, 4.0, 5.0]);
        let gpu = f32s(&[0.0, 1.5, 2.5, 3.0, 4.5, 5.5]);
        let d = diff_buffer("a", &sim, &gpu).unwrap();
        assert_eq!(
            d.lines(),
            [
                "a[1] is 1 on sim and 1.5 on gpu",
                "a[2] is 2 on sim and 2.5 on gpu",
                "a[4] is 4 on sim and 4.5 on gpu",
                "1 more element of a differs",
            ]
        );
        assert_eq!(diff_buffer("a", &sim, &sim.clone()), None);
        let m = Buffer::from_nums(DType::I32, Shape::D2(2, 3), (0..6).map(Num::Int));
        let mut m2 = m.clone();
        m2.set(4, Num::Int(9));
        assert_eq!(diff_buffer("m", &m, &m2).unwrap().lines(), ["m[1, 1] is 4 on sim and 9 on gpu"]);
        let long = f32s(&[0.0; 2]);
        assert_eq!(diff_buffer("a", &sim, &long).unwrap().lines(), ["a is f32[6] on sim and f32[2] on gpu"]);
    }

    #[test]
    fn f32_values_show_the_digits_that_differ() {
        let sim = f32s(&[0.1]);
        let gpu = f32s(&[0.1001]);
        assert_eq!(diff_buffer("x", &sim, &gpu).unwrap().lines(), ["x[0] is 0.1 on sim and 0.1001 on gpu"]);
    }

    #[test]
    fn scalars_and_missing_names_are_differences() {
        let b = [("a".to_string(), f32s(&[1.0]))];
        let s1 = [("n".to_string(), Value::Int(3)), ("x".to_string(), Value::Float(0.5))];
        let s2 = [("n".to_string(), Value::Int(4)), ("x".to_string(), Value::Float(0.5 + 1e-9))];
        let d = diff_states(State { buffers: &b, scalars: &s1 }, State { buffers: &[], scalars: &s2 });
        let lines: Vec<String> = d.iter().flat_map(Difference::lines).collect();
        assert_eq!(lines, ["a exists only on sim", "n is 3 on sim and 4 on gpu"]);
    }

    #[test]
    fn a_difference_is_said_once_where_it_arises() {
        let mut t = Tracker::default();
        let same = [("a".to_string(), f32s(&[1.0, 2.0]))];
        let differ = [("a".to_string(), f32s(&[1.0, 3.0]))];
        let step = |text: &str, line| Step { text: text.into(), line, on_gpu: true, ..Step::default() };
        let st = |b| State { buffers: b, scalars: &[] };
        assert!(t.step(&step("let a = [1, 2]", 1), st(&same), st(&same)).differences.is_empty());
        let said = t.step(&step("k<<<1, 2>>>(a)", 2), st(&same), st(&differ));
        assert_eq!(
            messages("t.gridlab:2", "k<<<1, 2>>>(a)", &said),
            ["t.gridlab:2: after `k<<<1, 2>>>(a)`, a[1] is 2 on sim and 3 on gpu"]
        );
        // Still different after the next input: not said again.
        assert!(t.step(&step("a", 3), st(&same), st(&differ)).differences.is_empty());
        // The same again, then different again: said again.
        t.step(&step("let a = [1, 2]", 4), st(&same), st(&same));
        assert_eq!(t.step(&step("k<<<1, 2>>>(a)", 5), st(&same), st(&differ)).differences.len(), 1);
        assert_eq!(t.differences, 2);
    }

    #[test]
    fn racy_launches_are_skipped_and_what_is_computed_from_them() {
        let mut t = Tracker::default();
        let st = |b, s| State { buffers: b, scalars: s };
        let sim = [("a".to_string(), f32s(&[100.0])), ("b".to_string(), f32s(&[0.0]))];
        let gpu = [("a".to_string(), f32s(&[37.0])), ("b".to_string(), f32s(&[0.0]))];
        let racy = Step {
            text: "add_everywhere<<<4, 32>>>(a, 1)".into(),
            line: 7,
            sim_launch: Some(launch(&["a"], &["a"], true)),
            gpu_launch: Some(launch(&["a"], &["a"], false)),
            on_gpu: true,
            sim_status: Some(Status::Ok),
            gpu_status: Some(Status::Ok),
        };
        let said = t.step(&racy, st(&sim, &[]), st(&gpu, &[]));
        assert!(said.differences.is_empty());
        assert_eq!(
            messages("t.gridlab:7", "add_everywhere<<<4, 32>>>(a, 1)", &said),
            [
                "t.gridlab:7: after `add_everywhere<<<4, 32>>>(a, 1)`, skipped: racy launch (a not compared while different)"
            ]
        );
        // Computed from `a`: a scalar, and a launch that reads it.
        let let_x = Step { text: "let x = a[0] * 2".into(), line: 8, ..Step::default() };
        let (s1, s2) = ([("x".to_string(), Value::Float(200.0))], [("x".to_string(), Value::Float(74.0))]);
        assert!(t.step(&let_x, st(&sim, &s1), st(&gpu, &s2)).differences.is_empty());
        let gpu_b = [("a".to_string(), f32s(&[37.0])), ("b".to_string(), f32s(&[37.0]))];
        let sim_b = [("a".to_string(), f32s(&[100.0])), ("b".to_string(), f32s(&[100.0]))];
        let copy = Step {
            text: "copy<<<1, 1>>>(b, a)".into(),
            line: 9,
            sim_launch: Some(launch(&["b", "a"], &["b"], false)),
            gpu_launch: Some(launch(&["b", "a"], &["b"], false)),
            on_gpu: true,
            sim_status: Some(Status::Ok),
            gpu_status: Some(Status::Ok),
        };
        let said = t.step(&copy, st(&sim_b, &s1), st(&gpu_b, &s2));
        assert!(said.differences.is_empty() && said.racy.is_none(), "{said:?}");
        // An expect about a racy value may fail on one side only: not a difference either.
        let expect = Step {
            text: "expect a[0] == 100".into(),
            sim_status: Some(Status::Ok),
            gpu_status: Some(Status::ExpectFailed),
            ..Step::default()
        };
        assert_eq!(t.step(&expect, st(&sim_b, &s1), st(&gpu_b, &s2)), Said::default());
        assert_eq!(t.differences, 0);
    }

    #[test]
    fn a_racy_launch_pinned_to_the_simulator_is_compared() {
        let mut t = Tracker::default();
        let a = [("a".to_string(), f32s(&[1.0]))];
        let b = [("a".to_string(), f32s(&[2.0]))];
        let step = Step { sim_launch: Some(launch(&["a"], &["a"], true)), on_gpu: false, ..Step::default() };
        assert_eq!(
            t.step(&step, State { buffers: &a, scalars: &[] }, State { buffers: &b, scalars: &[] }).differences.len(),
            1
        );
    }

    #[test]
    fn status_differences_are_said() {
        let mut t = Tracker::default();
        let step = Step {
            text: "expect a == 1".into(),
            sim_status: Some(Status::Ok),
            gpu_status: Some(Status::ExpectFailed),
            ..Step::default()
        };
        let said = t.step(&step, State { buffers: &[], scalars: &[] }, State { buffers: &[], scalars: &[] });
        assert_eq!(messages("t:3", "expect a == 1", &said), ["t:3: `expect a == 1` held on sim and failed on gpu"]);
    }

    /// The lockstep runner end to end, with a simulator of another seed standing in for the GPU
    /// (there is none in CI): the racy launch differs, and is compared since it is not on a GPU.
    #[test]
    fn two_sessions_in_lockstep() {
        let script = "__global__ void add_everywhere(float *a, int n) {\n    for (int i = 0; i < n; i++) a[i] += 1.0f;\n}\nlet b = [1, 2]\nlet a = [0, 0]\nadd_everywhere<<<4, 64>>>(a, len(a))\nlet n = len(a)\nexpect a[0] < 256\n";
        let options =
            Options { sim: crate::backend::sim::SimConfig { seed: 1, ..Default::default() }, ..Options::default() };
        let mut sim = Session::new(Options::default());
        let mut other = Session::new(options);
        let (lines, differences, inputs) = lockstep("t.gridlab", script, &mut sim, &mut other).unwrap();
        assert_eq!(inputs, 6);
        assert_eq!(differences, 1, "{lines:#?}");
        assert!(matches!(lines.len(), 1 | 2), "{lines:#?}");
        assert!(lines[0].starts_with("t.gridlab:6: after `add_everywhere<<<4, 64>>>(a, len(a))`, a["), "{lines:#?}");
        assert!(lines[0].ends_with(" on gpu"), "{lines:#?}");
    }

    #[test]
    fn inputs_are_shortened_to_their_first_line() {
        assert_eq!(short_input("__global__ void k(float *a) {\n  a[0] = 1;\n}"), "__global__ void k(float *a) {…");
        assert_eq!(short_input("a"), "a");
        assert_eq!(short_input(&"x".repeat(60)).chars().count(), 50);
    }

    #[test]
    fn the_backends_and_the_summary() {
        assert_eq!(parse_backends("sim,gpu"), Ok(SimAndGpu));
        assert_eq!(parse_backends("gpu, sim"), Ok(SimAndGpu));
        assert!(parse_backends("sim,sim").is_err());
        let mut s = Summary { scripts: 15, different: vec![] };
        assert_eq!(s.line(), "compared 15 scripts: 15 the same on sim and gpu");
        s.different.push("x".into());
        assert_eq!(s.line(), "compared 15 scripts: 14 the same on sim and gpu, 1 different");
    }
}
