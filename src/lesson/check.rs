//! Running an exercise's check so that wrong answers cannot pass.
//!
//! A check runs in a scratch copy of the learner's session: their kernels, none of their buffers
//! (which are put back untouched afterwards). Each `config` line is a configuration; each runs
//! on the simulator with three seeds of the random schedule and once in lockstep, and once on
//! the GPU when the session runs on one. A statement that errors, an `expect` that fails, or a
//! launch with a finding the check does not `expect` stops the check and says which
//! configuration and run broke. The findings matter most: a racy or unguarded kernel fails on
//! the simulator even when a GPU happens to produce the right numbers.

use std::io::{self, Write};

use super::{Check, Config};
use crate::backend::sim::Schedule;
use crate::finding::FindingKind;
use crate::render::Style;
use crate::script::ast::{Expect, StmtKind};
use crate::script::{self, Input, InputKind};
use crate::session::{RunOn, Session, Status};

/// The simulator runs of every configuration: three random interleavings and lockstep.
const SIM_RUNS: [RunOn; 4] = [
    RunOn::Sim { seed: 1, schedule: Schedule::Random },
    RunOn::Sim { seed: 2, schedule: Schedule::Random },
    RunOn::Sim { seed: 3, schedule: Schedule::Random },
    RunOn::Sim { seed: 1, schedule: Schedule::Lockstep },
];

/// How a check went.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outcome {
    pub configs: usize,
    /// The runs of each configuration, e.g. `sim seed 1`, `gpu`.
    pub runs: Vec<String>,
    /// The first thing that broke; `None` when the check passed.
    pub failure: Option<Failure>,
}

impl Outcome {
    pub fn passed(&self) -> bool {
        self.failure.is_none()
    }
}

impl Failure {
    /// `with n = 1000, on sim seed 2`: the configuration and run that broke; empty for a check
    /// that could not start (no kernel yet, a check that cannot be read).
    pub fn place(&self) -> String {
        let with = self.config.as_ref().map(|c| format!("with {c}, ")).unwrap_or_default();
        if self.run.is_empty() { with.trim_end_matches(", ").to_string() } else { format!("{with}on {}", self.run) }
    }
}

/// What broke, and where.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failure {
    /// The configuration, as its `config` line reads (`None` without config lines).
    pub config: Option<String>,
    /// The run (`sim seed 2`, `sim lockstep`, `gpu`).
    pub run: String,
    /// `lessons/04-bounds.md:51`.
    pub at: String,
    /// The statement that broke, and what it printed (plain text).
    pub input: String,
    pub output: String,
    /// One sentence: why this counts as a failure.
    pub why: String,
    /// What kind of failure it is: `dev check` asks a starter to fail for the reason the lesson
    /// is about (wrong values, a finding, a cost), not because nothing could run.
    pub kind: FailureKind,
    /// What the failure says about the learner's mistake, when it says something: a finding's
    /// headline and its advice, or the elements a launch never reached. `:hint` gives it first.
    pub advice: Option<String>,
}

/// Why a check failed, in the terms a course author judges a starter by.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FailureKind {
    /// An `expect` on the results did not hold: wrong values.
    Values,
    /// An `expect` on a `cost` record did not hold: too slow, too many transactions.
    Cost,
    /// A launch had a finding the check does not expect (its name: `race`, `out-of-bounds`).
    Finding(String),
    /// A statement of the check failed (a launch refused, a kernel that faulted).
    Statement,
    /// The check launches a kernel that is not defined.
    NoKernel,
    /// The kernel the check launches was last typed with an error: it did not compile.
    NotCompiled,
    /// The check itself cannot be read or its configuration made.
    Check,
}

impl FailureKind {
    /// Whether a starter failing this way shows the mistake the exercise is about.
    pub fn is_the_lesson(&self) -> bool {
        matches!(self, FailureKind::Values | FailureKind::Cost | FailureKind::Finding(_))
    }

    /// `wrong values`, `a race finding`, `a cost`: how dev check names the reason.
    pub fn describe(&self) -> String {
        match self {
            FailureKind::Values => "wrong values".into(),
            FailureKind::Cost => "a cost".into(),
            FailureKind::Finding(name) => {
                let article = if name.starts_with(['a', 'e', 'i', 'o', 'u']) { "an" } else { "a" };
                format!("{article} {name} finding")
            }
            FailureKind::Statement => "a statement that failed".into(),
            FailureKind::NoKernel => "no kernel to run".into(),
            FailureKind::NotCompiled => "a kernel that did not compile".into(),
            FailureKind::Check => "a check that cannot run".into(),
        }
    }
}

fn label(run: RunOn) -> String {
    match run {
        RunOn::Sim { schedule: Schedule::Lockstep, .. } => "sim lockstep".into(),
        RunOn::Sim { schedule: Schedule::Sequential, .. } => "sim sequential".into(),
        RunOn::Sim { seed, .. } => format!("sim seed {seed}"),
        RunOn::Gpu => "gpu".into(),
    }
}

/// One input of the check, and for a launch the findings the check expects of it.
struct Planned {
    input: Input,
    launch: bool,
    /// The kernel it launches (for a launch).
    kernel: Option<String>,
    expected: Vec<FindingKind>,
    /// For an `expect`: it reads a `cost` record the check bound (`expect c.time_us < 50`).
    on_cost: bool,
    /// The cost record's fields it reads (`atomics` in `expect c.atomics <= blocks`).
    cost_fields: Vec<&'static str>,
}

/// Whether `text` uses one of `names` as a whole word.
fn mentions(text: &str, names: &[String]) -> bool {
    text.split(|c: char| !(c.is_alphanumeric() || c == '_')).any(|w| names.iter().any(|n| n == w))
}

fn plan(path: &str, check: &Check) -> Result<Vec<Planned>, Box<Failure>> {
    let inputs = script::split_inputs(&check.body.text).map_err(|e| {
        Box::new(Failure {
            config: None,
            run: String::new(),
            at: format!("{path}:{}", check.body.line),
            input: String::new(),
            output: String::new(),
            why: format!("the check cannot be read: {}", e.diag.message),
            kind: FailureKind::Check,
            advice: None,
        })
    })?;
    let mut planned: Vec<Planned> = Vec::new();
    let mut costs: Vec<String> = Vec::new();
    for mut input in inputs {
        input.line += check.body.line - 1;
        let stmt = (input.kind == InputKind::Statement).then(|| script::parse_statement(0, &input.text).ok()).flatten();
        let kernel = match stmt.as_ref().map(|s| &s.kind) {
            Some(StmtKind::Launch(l) | StmtKind::Cost { launch: l, .. }) => Some(l.kernel.clone()),
            _ => None,
        };
        let launch = kernel.is_some();
        if let Some(StmtKind::Cost { name: Some((name, _)), .. }) = stmt.as_ref().map(|s| &s.kind) {
            costs.push(name.clone());
        }
        let on_cost = matches!(stmt.as_ref().map(|s| &s.kind), Some(StmtKind::Expect(Expect::Expr(_))))
            && mentions(&input.text, &costs);
        let mut cost_fields = Vec::new();
        if on_cost && let Some(StmtKind::Expect(Expect::Expr(e))) = stmt.as_ref().map(|s| &s.kind) {
            fields_read(e, &costs, &mut cost_fields);
        }
        if let Some(StmtKind::Expect(Expect::Finding(kind, _))) = stmt.map(|s| s.kind)
            && let Some(last) = planned.iter_mut().rev().find(|p| p.launch)
        {
            last.expected.push(kind);
        }
        planned.push(Planned { input, launch, kernel, expected: Vec::new(), on_cost, cost_fields });
    }
    Ok(planned)
}

/// The fields of the cost records named `costs` that `e` reads: `c.atomics` is the name
/// `c.atomics` in a script's expression.
fn fields_read(e: &script::ast::Expr, costs: &[String], out: &mut Vec<&'static str>) {
    if let script::ast::ExprKind::Name(name) = &e.kind
        && let Some((record, field)) = name.split_once('.')
        && costs.iter().any(|c| c == record)
        && let Some((known, _)) = crate::session::COST_FIELDS.iter().find(|(f, _)| *f == field)
        && !out.contains(known)
    {
        out.push(known);
    }
    e.children().into_iter().for_each(|c| fields_read(c, costs, out));
}

/// What one launch of a check was given, seen on the first simulator run of each
/// configuration: what `dev check` judges a check's coverage by ([`super::coverage`]).
#[derive(Clone, Debug, PartialEq)]
pub struct Observed {
    pub kernel: String,
    pub grid: [u32; 3],
    pub block: [u32; 3],
    /// The buffers it was given, by name, with their values before the launch.
    pub buffers: Vec<(String, Vec<f64>)>,
    /// One of them holds what an earlier launch of the same kernel left in it: a second
    /// launch without resetting.
    pub again: bool,
}

/// Run `check` (from the lesson at `path`) against the session's kernels.
pub fn run(session: &mut Session, path: &str, check: &Check) -> io::Result<Outcome> {
    Ok(run_observed(session, path, check, false)?.0)
}

/// [`run`], and with `observe` what each launch of the first simulator run of each
/// configuration was given.
pub fn run_observed(
    session: &mut Session,
    path: &str,
    check: &Check,
    observe: bool,
) -> io::Result<(Outcome, Vec<Observed>)> {
    let mut seen = Vec::new();
    let mut runs: Vec<RunOn> = SIM_RUNS.to_vec();
    if session.on_gpu() {
        runs.push(RunOn::Gpu);
    }
    let configs: Vec<Option<&Config>> =
        if check.configs.is_empty() { vec![None] } else { check.configs.iter().map(Some).collect() };
    let mut outcome = Outcome { configs: configs.len(), runs: runs.iter().map(|r| label(*r)).collect(), failure: None };
    let planned = match plan(path, check) {
        Ok(p) => p,
        Err(f) => {
            outcome.failure = Some(*f);
            return Ok((outcome, seen));
        }
    };
    if let Some(f) = refused_kernel(session, path, &planned).or_else(|| missing_kernel(session, path, check, &planned))
    {
        outcome.failure = Some(f);
        return Ok((outcome, seen));
    }
    let width = session.style().width;
    let saved = session.save_state();
    // Plain, and narrower: a failure shows the output indented under its statement.
    session.set_plain_width(width.saturating_sub(2).max(40));
    let result = (|| -> io::Result<Option<Failure>> {
        for config in &configs {
            for (i, &run) in runs.iter().enumerate() {
                let watch = (observe && i == 0).then_some(&mut seen);
                if let Some(f) = one_run(session, path, *config, run, &planned, watch)? {
                    return Ok(Some(f));
                }
            }
        }
        Ok(None)
    })();
    session.restore_state(saved);
    outcome.failure = result?;
    Ok((outcome, seen))
}

/// Note what the launch just run was given; `left` holds what earlier launches of this run
/// left in their buffers (kernel, buffer, values).
fn observe(session: &Session, seen: &mut Vec<Observed>, left: &mut Vec<(String, String, Vec<f64>)>) {
    let Some(last) = session.last() else { return };
    let kernel = last.spec.kernel.clone();
    let buffers: Vec<(String, Vec<f64>)> = last.before.iter().map(|(n, b)| (n.clone(), b.to_f64_vec())).collect();
    let again = buffers.iter().any(|(n, v)| left.iter().any(|(k, m, after)| *k == kernel && m == n && after == v));
    for (n, _) in &buffers {
        if let Some(b) = session.buffer(n) {
            left.retain(|(k, m, _)| !(*k == kernel && m == n));
            left.push((kernel.clone(), n.clone(), b.to_f64_vec()));
        }
    }
    let (g, b) = (last.spec.grid, last.spec.block);
    seen.push(Observed { kernel, grid: [g.x, g.y, g.z], block: [b.x, b.y, b.z], buffers, again });
}

/// A kernel the check launches whose last definition did not compile: the check would quietly
/// run the one defined before (or none), so it says that instead of running.
fn refused_kernel(session: &Session, path: &str, planned: &[Planned]) -> Option<Failure> {
    let (name, at) = planned.iter().find_map(|p| {
        let name = p.kernel.as_deref()?;
        session.refused_at(name).map(|at| (name.to_string(), at))
    })?;
    let line = planned.iter().find(|p| p.kernel.as_deref() == Some(name.as_str())).map_or(0, |p| p.input.line);
    let before = if session.module().kernel(&name).is_some() || session.module().gpu_only_kernel(&name).is_some() {
        format!(" (the check would run the `{name}` you defined before it)")
    } else {
        String::new()
    };
    Some(Failure {
        config: None,
        run: String::new(),
        at: format!("{path}:{line}"),
        input: String::new(),
        output: String::new(),
        why: format!(
            "your `{name}` did not compile (at {}){before}: fix the error shown there, then `:check` again",
            session.sources().location(at)
        ),
        kind: FailureKind::NotCompiled,
        advice: None,
    })
}

/// A kernel the check launches that the learner has not defined: say so with the exercise's own
/// signature, before running anything (every run would fail the same way).
fn missing_kernel(session: &Session, path: &str, check: &Check, planned: &[Planned]) -> Option<Failure> {
    let module = session.module();
    let python = session.python_kernel_names();
    let defined = |name: &str| {
        module.kernel(name).is_some()
            || module.gpu_only_kernel(name).is_some()
            || module.template(name).is_some()
            || python.contains(&name)
    };
    let (p, name) = planned.iter().find_map(|p| Some((p, p.kernel.as_deref().filter(|k| !defined(k))?)))?;
    let wanted = match check.kernels.iter().find(|(k, _)| k == name) {
        Some((_, sig)) if sig.starts_with('@') => format!("the exercise asks for `{sig} ...`"),
        Some((_, sig)) => format!("the exercise asks for `{sig} {{ ... }}`"),
        None => format!("the exercise asks for a kernel `{name}`"),
    };
    let mut kernels = module.kernel_names();
    kernels.extend(python.iter().copied());
    let yours = match crate::diag::suggest::closest(name, kernels.iter().copied()) {
        Some(close) => format!(" (you defined `{close}`: the check launches `{name}`)"),
        None => String::new(),
    };
    Some(Failure {
        config: None,
        run: String::new(),
        at: format!("{path}:{}", p.input.line),
        input: String::new(),
        output: String::new(),
        why: format!("there is no kernel `{name}` yet{yours}: {wanted}; define it, then `:check` again"),
        kind: FailureKind::NoKernel,
        advice: None,
    })
}

fn one_run(
    session: &mut Session,
    path: &str,
    config: Option<&Config>,
    run: RunOn,
    planned: &[Planned],
    mut seen: Option<&mut Vec<Observed>>,
) -> io::Result<Option<Failure>> {
    let mut left = Vec::new();
    session.clear_data();
    session.run_on(run);
    let fail = |input: &Input, output: Vec<u8>, why: String, kind: FailureKind| Failure {
        config: config.map(Config::label),
        run: label(run),
        at: format!("{path}:{}", input.line),
        input: input.text.clone(),
        output: String::from_utf8_lossy(&output).into_owned(),
        why,
        kind,
        advice: None,
    };
    if let Some(config) = config {
        for (name, expr) in &config.bindings {
            let input = Input {
                kind: InputKind::Statement,
                text: format!("let {name} = {expr}"),
                line: config.line,
                end_line: config.line,
            };
            let mut out = Vec::new();
            if session.eval(path, &input, &mut out)? != Status::Ok {
                return Ok(Some(fail(
                    &input,
                    out,
                    "the configuration itself cannot be made".into(),
                    FailureKind::Check,
                )));
            }
        }
    }
    for p in planned {
        if p.launch {
            session.forget_last();
        }
        let mut out = Vec::new();
        let status = session.eval(path, &p.input, &mut out)?;
        // What the launch was given is compared below: its "before" may still be on the GPU.
        session.last_settled(&mut io::sink())?;
        match status {
            Status::Ok => {}
            Status::ExpectFailed => {
                let kind = if p.on_cost { FailureKind::Cost } else { FailureKind::Values };
                let gap = if p.on_cost {
                    // Where the cost the expect reads comes from, else where the most goes, as
                    // `:profile` would mark it.
                    let cost = session.last().and_then(|l| l.report.cost.as_ref());
                    cost.and_then(|c| crate::render::profile::field_gap(c, session.sources(), &p.cost_fields))
                        .or_else(|| cost.and_then(|c| crate::render::profile::costliest_line(c, session.sources())))
                } else {
                    unreached(session).or_else(|| own_constant(session))
                };
                let why = match &gap {
                    Some(gap) => format!("this expect did not hold: {gap}"),
                    None => "this expect did not hold".into(),
                };
                return Ok(Some(Failure { advice: gap, ..fail(&p.input, out, why, kind) }));
            }
            Status::Error => {
                return Ok(Some(fail(&p.input, out, "this statement failed".into(), FailureKind::Statement)));
            }
        }
        if p.launch
            && let Some(seen) = seen.as_deref_mut()
        {
            observe(session, seen, &mut left);
        }
        if p.launch
            && let Some(findings) = session.last_findings()
            && let Some(f) = findings.iter().find(|f| !p.expected.contains(&f.kind()))
        {
            let name = f.kind().name();
            let words = f.kind().words();
            let article = if words.starts_with(['a', 'e', 'i', 'o', 'u']) { "an" } else { "a" };
            let why = format!(
                "the launch has {article} {words} finding: a kernel with one is wrong even when its numbers come out right"
            );
            let d = crate::render::findings::to_diagnostic_among(f, findings, session.sources());
            let advice = Some(match d.help {
                Some(help) => format!("{}; {help}", d.message),
                None => d.message,
            });
            return Ok(Some(Failure { advice, ..fail(&p.input, out, why, FailureKind::Finding(name.to_string())) }));
        }
    }
    Ok(None)
}

/// When the last launch had fewer threads than a buffer it was given has elements, changed some
/// of the elements its threads could reach and none beyond: why its results are wrong, said
/// ("512 threads for 10,000 elements of `out` ...") rather than left to a list of numbers.
fn unreached(session: &Session) -> Option<String> {
    let last = session.last()?;
    let threads = last.spec.grid.count().saturating_mul(last.spec.block.count());
    last.before.iter().find_map(|(name, before)| {
        let now = session.buffer(name)?;
        if let crate::buffer::Shape::D2(rows, cols) = now.shape() {
            return unreached_edge(name, (rows, cols), &before.to_f64_vec(), &now.to_f64_vec(), &last.spec);
        }
        let len = now.len() as u64;
        if threads >= len {
            return None;
        }
        let (was, is) = (before.to_f64_vec(), now.to_f64_vec());
        let same = |i: usize| was.get(i).map(|v| v.to_bits()) == is.get(i).map(|v| v.to_bits());
        let reached = threads as usize;
        let wrote_some = (0..reached).any(|i| !same(i));
        let rest_untouched = (reached..len as usize).all(same);
        (wrote_some && rest_untouched).then(|| {
            use crate::diag::text::thousands;
            // One thread has no other threads to share with: it must loop over every element.
            let (threads_said, fix) = if threads == 1 {
                ("1 thread".to_string(), "that one thread must loop over all of them")
            } else {
                (format!("{} threads", thousands(threads)), "add a grid-stride loop, or launch more blocks")
            };
            let unwritten = if reached + 1 == len as usize {
                format!("element {} was", thousands(threads))
            } else {
                format!("elements {} to {} were", thousands(threads), thousands(len - 1))
            };
            format!(
                "the launch had {threads_said} for {} elements of `{name}`, and {unwritten} never written: {fix}",
                thousands(len),
            )
        })
    })
}

/// When the expect found wrong elements holding a value that none of the launch's inputs
/// holds and that is one of the kernel's own constants (`: 0` filling in for missing elements
/// of a max, `INFINITY` where `-INFINITY` was meant): where the value came from, with the line,
/// and what a stand-in must be. The value must be one the failed expect showed as wrong
/// (`out[3] = 0 (expected -2000768)`), so a constant written into elements that are right is
/// never blamed.
fn own_constant(session: &Session) -> Option<String> {
    let last = session.last()?;
    let kernel = session.module().kernel(&last.spec.kernel)?;
    let sources = session.sources();
    let file = sources.get(kernel.span.source)?;
    let text = file.text.get(kernel.span.lo as usize..kernel.span.hi as usize)?;
    let constants = constants_in(text);
    if constants.is_empty() {
        return None;
    }
    let key = |v: f64| if v == 0.0 { 0 } else { v.to_bits() };
    let inputs: std::collections::HashSet<u64> =
        last.before.iter().flat_map(|(_, b)| b.to_f64_vec()).map(key).collect();
    last.before.iter().find_map(|(name, before)| {
        let now = session.buffer(name)?;
        let (was, is) = (before.to_f64_vec(), now.to_f64_vec());
        // Only a value the failed expect showed as wrong: the advice is about what the learner saw.
        let shown = |v: f64| session.last_wrong_values().iter().any(|w| key(*w) == key(v));
        let (v, (off, len)) = was.iter().zip(&is).filter(|(w, i)| w.to_bits() != i.to_bits()).find_map(|(_, &v)| {
            if inputs.contains(&key(v)) || !shown(v) {
                return None;
            }
            constants.iter().find(|(c, _)| key(*c) == key(v)).map(|(_, at)| (v, *at))
        })?;
        let at = crate::diag::Span::new(kernel.span.source, kernel.span.lo as usize + off, kernel.span.lo as usize + off + len);
        let line = sources.line_text(at).map(str::trim).unwrap_or_default();
        let value = crate::value::format_num(crate::buffer::Num::Float(v), Some(now.dtype()));
        // Generated text is CUDA C lowered from a Python kernel: the advice is in Python.
        let python = file.origin.is_some();
        let (max, min) = if python { ("-math.inf", "math.inf") } else { ("-INFINITY", "INFINITY") };
        Some(format!(
            "`{name}` got {value}, a value none of the launch's inputs holds: it is the kernel's own constant, at {} (`{line}`). If it stands in for missing elements, it must be one that cannot change the answer: 0 for a sum, 1 for a product, {max} for a max, {min} for a min",
            sources.location(at)
        ))
    })
}

/// The numeric constants written in a kernel's text, with where each is (offset and length in
/// `text`): C's `0`, `0.0f`, `1e-3`, `INFINITY`, Python's `0.0`, `math.inf`; with a sign in
/// front when the `-` can only be a sign (`: -1`, `= -INFINITY`, not `n - 1`).
fn constants_in(text: &str) -> Vec<(f64, (usize, usize))> {
    let b = text.as_bytes();
    let ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_' || c == b'.';
    let mut found = Vec::new();
    let mut i = 0;
    while i < b.len() {
        // Skip comments and strings: a `0` in `printf("%d\n")` or `// 0 pads` is not a value.
        if b[i..].starts_with(b"//") || b[i] == b'#' {
            i = text[i..].find('\n').map_or(b.len(), |p| i + p);
            continue;
        }
        if b[i] == b'"' || b[i] == b'\'' {
            let q = b[i];
            i += 1;
            while i < b.len() && b[i] != q {
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            i += 1;
            continue;
        }
        let starts_word = i == 0 || !ident(b[i - 1]);
        let word_end = |from: usize| (from..b.len()).find(|&j| !ident(b[j])).unwrap_or(b.len());
        let (value, end) = if starts_word && b[i].is_ascii_digit() {
            let end = word_end(i);
            let mut lit = &text[i..end];
            // `1e-3`: the exponent's sign is part of the number.
            let end = if lit.ends_with(['e', 'E']) && matches!(b.get(end), Some(b'-' | b'+')) {
                let e = word_end(end + 1);
                lit = &text[i..e];
                e
            } else {
                end
            };
            let digits = lit.trim_end_matches(['f', 'F', 'u', 'U', 'l', 'L']);
            let v = if let Some(hex) = digits.strip_prefix("0x").or_else(|| digits.strip_prefix("0X")) {
                u64::from_str_radix(hex, 16).ok().map(|v| v as f64)
            } else {
                digits.parse::<f64>().ok()
            };
            (v, end)
        } else if starts_word && (b[i..].starts_with(b"INFINITY") || b[i..].starts_with(b"math.inf")) {
            let end = word_end(i);
            let v = matches!(&text[i..end], "INFINITY" | "math.inf").then_some(f64::INFINITY);
            (v, end)
        } else {
            i += 1;
            continue;
        };
        if let Some(v) = value {
            let before = text[..i].trim_end();
            let signed = before.ends_with('-') && {
                let ahead = before[..before.len() - 1].trim_end();
                let word = ahead.rsplit(|c: char| !c.is_alphanumeric() && c != '_').next().unwrap_or_default();
                ahead.is_empty()
                    || ahead.ends_with(['=', '(', ',', '?', ':', '[', '{', '<', '>', '*', '/'])
                    || matches!(word, "return" | "else" | "if" | "and" | "or" | "not" | "in")
            };
            if signed {
                let start = before.len() - 1;
                found.push((-v, (start, end - start)));
            } else {
                found.push((v, (i, end - i)));
            }
        }
        i = end.max(i + 1);
    }
    found
}

/// A matrix whose last columns (or rows) the launch never changed, while it changed some of
/// the others: which ones, and why, from how far the grid's x and y reach. x runs along a
/// matrix's columns and y along its rows; a column index that stops where y's threads end was
/// taken from y (the two swapped), one that stops where x's end needs a bigger grid.
fn unreached_edge(
    name: &str,
    (rows, cols): (usize, usize),
    was: &[f64],
    is: &[f64],
    spec: &crate::launch::LaunchSpec,
) -> Option<String> {
    use crate::diag::text::thousands;
    let same = |r: usize, c: usize| {
        let i = r * cols + c;
        was.get(i).map(|v| v.to_bits()) == is.get(i).map(|v| v.to_bits())
    };
    // The first of the last columns (rows) that are all as they were; `None` if the last one
    // changed, `Some(0)` if the launch changed none.
    let first_cold_column = (0..cols).rev().take_while(|&c| (0..rows).all(|r| same(r, c))).last();
    let first_cold_row = (0..rows).rev().take_while(|&r| (0..cols).all(|c| same(r, c))).last();
    let (what, index, count, reach) = match (first_cold_column, first_cold_row) {
        (Some(c), _) if c > 0 => ("columns", "column", cols, c as u64),
        (_, Some(r)) if r > 0 => ("rows", "row", rows, r as u64),
        _ => return None,
    };
    let x_reach = spec.grid.x as u64 * spec.block.x as u64;
    let y_reach = spec.grid.y as u64 * spec.block.y as u64;
    let (own, other, own_axis, other_axis) =
        if what == "columns" { (x_reach, y_reach, "x", "y") } else { (y_reach, x_reach, "y", "x") };
    let gap = format!("{what} {} to {} of `{name}` were never written", thousands(reach), thousands(count as u64 - 1));
    let cause = if reach == other && other != own {
        format!(
            "the {index} index stops at {}, where the grid's {other_axis} threads end: it was taken from {other_axis}, but {own_axis} runs along the {what}; take the column from x and the row from y",
            thousands(reach - 1)
        )
    } else if reach == own {
        format!(
            "the grid's {own_axis} threads reach only {} {what}: launch more blocks along {own_axis}, rounding up",
            thousands(own)
        )
    } else {
        "check how the kernel computes its row and column, and that its guard lets every element through".to_string()
    };
    Some(format!("{gap}: {cause}"))
}

const PASSED: &str = "✓ passed:";
const NOT_YET: &str = "✗ not yet:";

/// The column the text after a verdict's label starts at, where wrapped lines line up.
fn label_width(label: &str) -> usize {
    label.chars().count() + 1
}

/// Say how the check went: one line when it passed, the configuration, run, statement and
/// output when it did not.
pub fn write(out: &mut dyn Write, outcome: &Outcome, style: &Style) -> io::Result<()> {
    let configs = match outcome.configs {
        1 => "1 configuration".to_string(),
        n => format!("{n} configurations"),
    };
    match &outcome.failure {
        None => {
            let sims: Vec<&str> = outcome.runs.iter().filter_map(|r| r.strip_prefix("sim ")).collect();
            let mut runs = format!("on the simulator ({})", sims.join(", "));
            if outcome.runs.iter().any(|r| r == "gpu") {
                runs.push_str(" and on the GPU");
            }
            let text = format!("{configs}, each {runs}: right results, no findings");
            writeln!(out, "{} {}", style.ok(PASSED), crate::diag::wrap(&text, style.width, label_width(PASSED)))
        }
        Some(f) if f.run.is_empty() && f.input.is_empty() => {
            writeln!(out, "{} {}", style.error(NOT_YET), crate::diag::wrap(&f.why, style.width, label_width(NOT_YET)))
        }
        Some(f) => {
            writeln!(out, "{} {}:", style.error(NOT_YET), f.place())?;
            writeln!(out, "{}", style.dim(&format!("  at {}", f.at)))?;
            for (i, line) in f.input.lines().enumerate() {
                writeln!(out, "  {}{}", if i == 0 { ">>> " } else { "... " }, code_line(line, style.width))?;
            }
            for line in f.output.lines() {
                writeln!(out, "  {line}")?;
            }
            writeln!(out, "  {}", style.warn(&crate::diag::wrap(&f.why, style.width, 2)))
        }
    }
}

/// A line of the check's code after `  >>> `, broken at its spaces (never inside a token, as
/// the terminal would) where it is wider than the screen, each piece indented under it.
fn code_line(line: &str, width: usize) -> String {
    const PROMPT: usize = 6;
    if PROMPT + line.chars().count() <= width {
        return line.to_string();
    }
    let body = line.trim_start();
    let lead = line.len() - body.len();
    format!("{}{}", &line[..lead], crate::diag::wrap(body, width, PROMPT + lead + 4))
}

#[cfg(test)]
mod tests {
    use super::{code_line, constants_in};

    #[test]
    fn a_long_line_of_check_code_breaks_between_tokens() {
        let launch = "matmul_rect<<<((N + 15) / 16, (M + 15) / 16), (16, 16)>>>(A, B, C, M, K, N)";
        assert_eq!(code_line(launch, 100), launch);
        let broken = code_line(launch, 60);
        assert!(broken.lines().all(|l| 6 + l.chars().count() <= 60), "{broken}");
        assert_eq!(broken.split_whitespace().collect::<String>(), launch.split_whitespace().collect::<String>());
        assert!(broken.lines().skip(1).all(|l| l.starts_with("          ")), "{broken}");
    }

    fn values(text: &str) -> Vec<f64> {
        constants_in(text).into_iter().map(|(v, _)| v).collect()
    }

    #[test]
    fn constants_are_read_with_their_sign_where_the_minus_is_one() {
        assert_eq!(values("s[t] = i < n ? in[i] : 0.0f;"), [0.0]);
        assert_eq!(values("float m = -INFINITY; x = n - 1;"), [f64::NEG_INFINITY, 1.0]);
        assert_eq!(values("s[tid] = x[i] if i < n else -math.inf"), [f64::NEG_INFINITY]);
        assert_eq!(values("y = 1e-3f * x + 0x10; return -2;"), [1e-3, 16.0, -2.0]);
    }

    #[test]
    fn names_comments_and_strings_hold_no_constants() {
        assert_eq!(values("float2 v = a1; // pads with 0\nprintf(\"%d 7\\n\", v0);"), Vec::<f64>::new());
        assert_eq!(values("#define N 256\nx = y  # 0 here"), Vec::<f64>::new());
        // Text that is not ASCII (a name, a block comment) is read past, never cut inside a character.
        assert_eq!(values("/* ≤ é */ float café = 2.5f; s = \"∞\";"), [2.5]);
    }

    #[test]
    fn a_constant_says_where_it_is() {
        let text = "a = b ? c : -1;";
        let (v, (at, len)) = constants_in(text)[0];
        assert_eq!((v, &text[at..at + len]), (-1.0, "-1"));
    }
}
