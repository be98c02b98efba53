//! The eval pipeline: text is split into inputs, and each input is a CUDA snippet (checked and
//! added to the module, then loaded on the backend), a `:` command (`command.rs`) or a
//! statement (`let`, an inspection, `expect`, a launch, `cost`). Errors are reported at the
//! learner's own line; what ran goes into the history for `:save` and, when recorded, into the
//! transcript for `:export`.

use std::io::{self, Write};

use crate::backend::{BackendError, BackendKind};
use crate::cuda::ItemKind;
use crate::diag::{Diagnostic, SourceId, Span};
use crate::finding::FindingKind;
use crate::render;
use crate::script::ast::{BinOp, Expect, ExprKind, StmtKind};
use crate::script::eval;
use crate::script::input::SplitError;
use crate::script::{self, Input, InputKind};
use crate::value::Value;

use super::{Session, Status, dispatch, worse};

/// A session binds at most this many buffers and scalars: every `let` looks its name up among
/// them, so a script of endless distinct names would slow down with the square of their number.
pub const MAX_NAMES: usize = 10_000;

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

impl Session {
    /// Run text typed at a prompt: it may hold several inputs (a pasted script).
    pub fn eval_typed(&mut self, text: &str, out: &mut dyn Write) -> io::Result<Status> {
        let name = self.record.next_typed();
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

    pub(super) fn eval_inputs(
        &mut self,
        name: &str,
        text: &str,
        echo: bool,
        record: bool,
        out: &mut dyn Write,
    ) -> io::Result<Status> {
        let (inputs, broken) = self.split(name, text);
        let mut worst = self.with_results_on_device(out, |s, out| {
            let mut worst = Status::Ok;
            for input in &inputs {
                if echo {
                    render::write_echo(out, &input.text, &s.options.style)?;
                }
                worst = worse(worst, s.eval_input(name, input, record, out)?);
                if s.wants_to_quit() {
                    // Pasted text after `exit` is not run.
                    break;
                }
            }
            Ok(worst)
        })?;
        if self.wants_to_quit() {
            return Ok(worst);
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
        // Where it was typed: an input that moves the lesson on still belongs where it ran.
        let chapter = self.extension.as_ref().and_then(|e| e.chapter());
        let step = self.extension.as_ref().and_then(|e| e.step());
        let status = self.eval(name, input, &mut tee)?;
        if record {
            let output = crate::render::text::strip_ansi(&tee.copy);
            let colored = String::from_utf8_lossy(&tee.copy).into_owned();
            self.record.transcribe(crate::render::handout::Ran {
                input: input.text.clone(),
                output,
                colored,
                chapter,
                step,
            });
        }
        Ok(status)
    }

    /// Split a script into inputs. When its last CUDA item never ends, the inputs before it are
    /// returned with the error, re-pointed at `name` so it shows the script's own line.
    pub fn split(&mut self, name: &str, text: &str) -> (Vec<Input>, Option<Diagnostic>) {
        self.split_at(name, text, 1)
    }

    /// [`Session::split`] for text that starts on line `first_line` of `name`.
    pub fn split_at(&mut self, name: &str, text: &str, first_line: u32) -> (Vec<Input>, Option<Diagnostic>) {
        let shift = |mut inputs: Vec<Input>| {
            for input in &mut inputs {
                input.line += first_line.max(1) - 1;
                input.end_line += first_line.max(1) - 1;
            }
            inputs
        };
        match script::split_inputs(text) {
            Ok(inputs) => (shift(inputs), None),
            Err(e) => {
                let e = SplitError { inputs: shift(e.inputs), ..*e };
                let id = self.work.sources_mut().add(name, text, first_line);
                let diag = Diagnostic { span: e.diag.span.map(|s| crate::diag::Span { source: id, ..s }), ..e.diag };
                (e.inputs, Some(diag))
            }
        }
    }

    /// The names `input` would define when every one of them is new to the session: the items
    /// of a CUDA snippet, the functions of a Python one, the name of a `let`. `None` when it
    /// defines nothing, or would replace something the learner already has. A lesson uses it to
    /// fill in what a step the learner moved past would have defined, without touching their work.
    pub fn new_names(&self, input: &Input) -> Option<Vec<String>> {
        let names: Vec<String> = match input.kind {
            InputKind::Cuda => {
                let names: Vec<String> = crate::cuda::sketch::sketch(&input.text).into_iter().map(|s| s.name).collect();
                let module = self.work.module();
                if names.iter().any(|n| module.items().iter().any(|i| &i.name == n)) {
                    return None;
                }
                names
            }
            InputKind::Python => {
                // Top-level `def`s; an input of imports only is safe to run again.
                let names: Vec<String> = input
                    .text
                    .lines()
                    .filter_map(|l| l.strip_prefix("def "))
                    .filter_map(|l| l.split('(').next())
                    .map(|n| n.trim().to_string())
                    .collect();
                if names.iter().any(|n| self.work.python().get(n).is_some()) {
                    return None;
                }
                names
            }
            InputKind::Statement => match script::parse_statement(0, &input.text).map(|s| s.kind) {
                Ok(StmtKind::Let { name, .. }) if !self.work.is_bound(&name) => vec![name],
                // `n = 128`, as Python writes a new name (see `statement`).
                Ok(StmtKind::SetSymbol { name, .. })
                    if !self.work.is_bound(&name)
                        && !self.work.module().program().globals.iter().any(|g| g.var.name == name) =>
                {
                    vec![name]
                }
                _ => return None,
            },
            InputKind::Command => return None,
        };
        (!names.is_empty() || input.kind == InputKind::Python).then_some(names)
    }

    /// Run one input. `name` is the file (or `<input N>`) it came from, for error locations.
    ///
    /// GPU results left on the device are read back before anything but another launch runs,
    /// and after the input, unless the caller runs a series of inputs and reads them at its end
    /// ([`Session::keep_results_on_device`]): so a run of launches over a large buffer crosses
    /// the bus once, and everything else sees the bytes as they are.
    pub fn eval(&mut self, name: &str, input: &Input, out: &mut dyn Write) -> io::Result<Status> {
        if self.depth == 0 {
            self.left_in_flight = false;
        }
        // Only another launch runs while launches are in flight; it may go behind them.
        if !self.in_flight.is_empty() && !self.is_launch(input) {
            self.land()?;
        }
        if self.has_deferred() && !self.is_launch(input) {
            self.settle(out)?;
        }
        self.depth += 1;
        let status = self.eval_now(name, input, out);
        self.depth -= 1;
        if !self.deferring || self.depth > 0 {
            self.settle(out)?;
        }
        status
    }

    /// Let GPU results stay on the device between the inputs the caller runs next, until it
    /// turns this off, which reads them back (see [`Session::eval`]).
    pub fn keep_results_on_device(&mut self, on: bool, out: &mut dyn Write) -> io::Result<()> {
        self.deferring = on;
        if !on {
            self.settle(out)?;
        }
        Ok(())
    }

    /// Run `f` with GPU results kept on the device between the inputs it runs, then read them
    /// back (unless the caller keeps them too), whether `f` succeeded or not.
    pub(super) fn with_results_on_device<R>(
        &mut self,
        out: &mut dyn Write,
        f: impl FnOnce(&mut Session, &mut dyn Write) -> io::Result<R>,
    ) -> io::Result<R> {
        let outer = self.deferring;
        self.keep_results_on_device(true, out)?;
        let result = f(self, out);
        self.keep_results_on_device(outer, out)?;
        result
    }

    /// Whether GPU results may stay on the device between inputs now.
    pub fn keeps_results_on_device(&self) -> bool {
        self.deferring
    }

    fn eval_now(&mut self, name: &str, input: &Input, out: &mut dyn Write) -> io::Result<Status> {
        if let Some(why) = script::input::too_large(&input.text) {
            writeln!(out, "{} {name}:{}: {why}", self.options.style.error("error:"), input.line)?;
            return Ok(Status::Error);
        }
        let id = self.work.sources_mut().add(name, input.text.as_str(), input.line);
        // Text with control characters (an escape sequence in a script or lesson) never runs:
        // it could only be a mistake or an attempt on the learner's terminal.
        if let Some((at, c)) = crate::diag::first_control(&input.text) {
            let hi = at + c.len_utf8();
            let d = Diagnostic::error(format!(
                "this input holds a control character ({})",
                crate::diag::printable(&c.to_string())
            ))
            .at(Span::new(id, at, hi))
            .label("not printable text")
            .help("gridlab takes printable text only: delete the character (it may have come with a paste)");
            return self.report(&d, out);
        }
        let status = match input.kind {
            InputKind::Cuda => self.define(id, out)?,
            InputKind::Command => dispatch::run(self, &input.text, out)?,
            InputKind::Statement => self.statement_or_host(id, out)?,
            InputKind::Python => self.define_python(id, out)?,
        };
        if status != Status::Error && input.kind != InputKind::Command {
            self.record.ran(input.text.clone());
        }
        Ok(status)
    }

    pub(super) fn report(&self, diag: &Diagnostic, out: &mut dyn Write) -> io::Result<Status> {
        diag.render(self.work.sources(), out, self.options.style.color, self.options.style.width)?;
        Ok(if diag.is_error() { Status::Error } else { Status::Ok })
    }

    pub(super) fn text(&self, id: SourceId) -> String {
        self.work.sources().get(id).map(|f| f.text.clone()).unwrap_or_default()
    }

    /// CUDA source: add it to the module, checked against everything defined so far.
    pub(super) fn define(&mut self, id: SourceId, out: &mut dyn Write) -> io::Result<Status> {
        let text = self.text(id);
        // Only the GPU's compiler can refuse a module the front end took: keep the module to go
        // back to only then (a copy costs as much as the module is large).
        let previous = (self.backends.active_kind() != BackendKind::Sim).then(|| self.work.module().clone());
        let added = match self.work.module_mut().add(id, &text) {
            // Outside the simulator's subset: on the GPU, NVRTC takes it (and judges it).
            Err(errors) if self.work.module().gpu_could_take(&errors, &text) && self.on_gpu() => {
                self.work.module_mut().add_for_gpu(id, &text)
            }
            added => added,
        };
        match added {
            Ok(outcome) => {
                for w in &outcome.warnings {
                    self.report(w, out)?;
                }
                // A CUDA C kernel takes its name from a Python kernel defined before it.
                let mut from_python = Vec::new();
                for d in &outcome.defined {
                    self.work.accept(&d.name);
                    if self.work.python_mut().forget(&d.name) {
                        from_python.push(d.name.clone());
                    }
                }
                self.ensure_resolved();
                let backend = self.backends.active();
                if let Err(e) = backend.load(self.work.module(), self.work.sources()) {
                    // The GPU's compiler said no: the session keeps the module it had.
                    if let Some(previous) = previous {
                        self.work.restore_module(previous);
                    }
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
                self.work.refresh_constants();
                // Typed input is named by the kernel it defined: `kernel add_one, line 3`.
                // (A struct's member functions come with it: the struct names the input.)
                let find = |kind: ItemKind| outcome.defined.iter().find(move |d| d.kind == kind);
                let named = find(ItemKind::Kernel)
                    .map(|d| ("kernel", d))
                    .or_else(|| {
                        let has_members = |t: &&crate::cuda::Defined| {
                            outcome.defined.iter().any(|f| f.name.starts_with(&format!("{}::", t.name)))
                        };
                        find(ItemKind::Typedef).filter(has_members).map(|d| ("type", d))
                    })
                    .or_else(|| find(ItemKind::DeviceFunction).map(|d| ("function", d)));
                if let Some((what, d)) = named {
                    // Overloads are named with their parameter types: `operator+(float2, float2)`.
                    let name = crate::cuda::ast::display_name(&d.name);
                    self.work.sources_mut().name_item(id, format!("{what} {name}"));
                }
                for d in &outcome.defined {
                    let what = match d.kind {
                        ItemKind::Kernel => "kernel",
                        ItemKind::DeviceFunction => "device function",
                        ItemKind::Global => "global",
                        ItemKind::Define => "macro",
                        ItemKind::Typedef => "type",
                    };
                    let verb = if d.replaced || from_python.contains(&d.name) { "redefined" } else { "defined" };
                    let sig = match d.kind {
                        ItemKind::Kernel | ItemKind::DeviceFunction => self
                            .work
                            .module()
                            .program()
                            .function(&d.name)
                            .map(|(_, f)| render::signature(f))
                            .or_else(|| self.work.module().gpu_only_signature(&d.name))
                            .unwrap_or_else(|| d.name.clone()),
                        _ => d.name.clone(),
                    };
                    writeln!(out, "{} {what} {}", self.options.style.dim(verb), self.options.style.bold(&sig))?;
                }
                self.forget_redeclared(&outcome.defined, out)?;
                if self.backends.active_kind() == BackendKind::Gpu
                    && let Some(g) = self.backends.gpu_info()
                    && let Some(stat) = &g.last_compile
                {
                    writeln!(out, "{}", self.options.style.dim(&format!("  ({})", stat.describe())))?;
                }
                Ok(Status::Ok)
            }
            Err(diags) => {
                let gpu_runs_it = !self.on_gpu() && self.work.module().gpu_could_take(&diags, &text);
                for d in &diags {
                    let mut d = d.clone();
                    // Only where the GPU's path would take it: a construct outside the subset.
                    let said = |t: &str| t.contains(":backend gpu") || t.contains("GPU backend");
                    if gpu_runs_it && d.is_error() && !said(d.help.as_deref().unwrap_or("")) && !said(&d.message) {
                        d = d.note("the GPU backend runs this: switch with `:backend gpu` (a script: `--backend gpu`)");
                    }
                    self.report(&d, out)?;
                }
                for piece in crate::cuda::sketch::sketch(&text) {
                    if matches!(piece.kind, ItemKind::Kernel | ItemKind::DeviceFunction) {
                        self.work.refuse(&piece.name, Span::new(id, piece.lo, piece.hi));
                    }
                }
                self.keep_defines(id, &text, out)?;
                Ok(Status::Error)
            }
        }
    }

    /// After a refused snippet, keep its `#define`s (when they check on their own), so one
    /// refused kernel does not make every later use of the snippet's macros "not defined".
    pub(super) fn keep_defines(&mut self, id: SourceId, text: &str, out: &mut dyn Write) -> io::Result<()> {
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
        let previous = self.work.module().clone();
        let Ok(outcome) = self.work.module_mut().add(id, &only) else { return Ok(()) };
        let backend = self.backends.active();
        if backend.load(self.work.module(), self.work.sources()).is_err() {
            self.work.restore_module(previous);
            return Ok(());
        }
        self.work.refresh_constants();
        let names: Vec<String> = outcome.defined.iter().map(|d| format!("`{}`", d.name)).collect();
        if !names.is_empty() {
            let msg = format!("kept the snippet's #defines: {}", names.join(", "));
            writeln!(out, "{}", self.options.style.dim(&msg))?;
        }
        Ok(())
    }

    pub(super) fn statement(&mut self, id: SourceId, out: &mut dyn Write) -> io::Result<Status> {
        let text = self.text(id);
        let mut stmt = match self.parse_line(id, &text) {
            Ok(stmt) => stmt,
            Err(diag) => return self.report(&diag, out),
        };
        // `a = np.zeros(10, np.float32)`, as Python writes it: a new name is a `let`. Only the
        // module's variables (and mistaken function names) are set as symbols.
        if let StmtKind::SetSymbol { name, name_span, value, .. } = &stmt.kind
            && !self.work.module().program().globals.iter().any(|g| g.var.name == *name)
            && self.work.module().program().function(name).is_none()
            && !self.work.module().kernel_names().contains(&name.as_str())
            && !self.is_python_kernel(name)
            && crate::diag::suggest::closest(
                name,
                self.work.module().program().globals.iter().map(|g| g.var.name.as_str()),
            )
            .is_none()
        {
            stmt.kind =
                StmtKind::Let { name: name.clone(), name_span: *name_span, value: value.clone(), declared: None };
        }
        match stmt.kind {
            StmtKind::Let { name, name_span, value, declared } => {
                let new_name = !self.work.is_bound(&name);
                if new_name && self.work.name_count() >= MAX_NAMES {
                    let d = Diagnostic::error(format!(
                        "a session holds at most {} buffers and scalars",
                        crate::diag::text::thousands(MAX_NAMES as u64)
                    ))
                    .at(name_span)
                    .label("one name too many")
                    .help("reuse a name with `let`, or start over with `:reset`");
                    return self.report(&d, out);
                }
                let v = eval::eval(&value, self, &text).and_then(|v| match declared {
                    Some(d) => script::habits::convert_declared(v, d, &name, &value, &text),
                    None => Ok(v),
                });
                let v = match v {
                    Ok(v) => v,
                    Err(diag) => return self.report(&diag, out),
                };
                self.unbind_record(&name);
                self.bind(name, v);
                Ok(Status::Ok)
            }
            StmtKind::Assign { target, value } => {
                let a = match eval::eval_assign(&target, &value, self, &text) {
                    Ok(a) => a,
                    Err(diag) => return self.report(&diag, out),
                };
                if let Some(buf) = self.work.buffer_mut(&a.name) {
                    match a.values[..] {
                        [v] => a.positions.iter().for_each(|&i| buf.set(i, v)),
                        _ => a.positions.iter().zip(&a.values).for_each(|(&i, &v)| buf.set(i, v)),
                    }
                }
                Ok(Status::Ok)
            }
            StmtKind::SetSymbol { name, name_span, eq_span, value } => {
                self.set_symbol(&name, name_span, eq_span, &value, &text, out)
            }
            StmtKind::Launch(launch) => self.launch(&launch, &text, out),
            StmtKind::Print(exprs) => {
                let mut worst = Status::Ok;
                // Labels print on the line of the value after them, as Python's print does.
                let mut labels = Vec::new();
                for e in exprs {
                    if let ExprKind::Str(s) = &e.kind {
                        labels.push(s.clone());
                        continue;
                    }
                    if !labels.is_empty() {
                        let label = labels.join(" ");
                        labels.clear();
                        match eval::eval(&e, self, &text) {
                            Ok(v) => render::array::write_labelled(out, &label, &v, &self.options.style.array(None))?,
                            Err(d) => worst = worse(worst, self.report(&d, out)?),
                        }
                        continue;
                    }
                    worst = worse(worst, self.inspect(e, &text, out)?);
                }
                if !labels.is_empty() {
                    writeln!(out, "{}", labels.join(" "))?;
                }
                Ok(worst)
            }
            StmtKind::Quit => self.quit(text.trim().trim_end_matches(';').trim(), out),
            StmtKind::Nothing { note } => {
                writeln!(out, "{}", self.options.style.dim(&note))?;
                Ok(Status::Ok)
            }
            StmtKind::Inspect(expr) => self.inspect(expr, &text, out),
            StmtKind::Expect(expect) => self.expect(&expect, &text, out),
            StmtKind::Cost { name, launch } => self.cost_statement(name, &launch, &text, out),
        }
    }

    /// Show a value: a buffer by name (with what the last launch changed), a record, or any
    /// expression labelled with its text.
    fn inspect(&mut self, expr: crate::script::ast::Expr, text: &str, out: &mut dyn Write) -> io::Result<Status> {
        let style = self.options.style.clone();
        if let ExprKind::Name(name) = &expr.kind
            && self.buffer(name).is_none()
            && self.show_record(name, out)?
        {
            return Ok(Status::Ok);
        }
        if matches!(&expr.kind, ExprKind::Name(_)) {
            // The elements the last launch changed are marked: its "before" is needed.
            self.last_settled(out)?;
        }
        if let ExprKind::Name(name) = &expr.kind
            && let Some(buf) = self.buffer(name)
        {
            let changed = self.changed_mask(name);
            // Three dimensions live in the shape a Python program gave the array.
            if let Some(&[p, r, c]) = self.work.python().host_shape(name)
                && p * r * c == buf.len()
            {
                render::array::write_array_3d(out, name, buf, [p, r, c], &style.array(changed))?;
                return Ok(Status::Ok);
            }
            render::array::write_array(out, name, buf, &style.array(changed))?;
            return Ok(Status::Ok);
        }
        match eval::eval(&expr, self, text) {
            Ok(v) => {
                let label = text
                    .get((expr.span.lo as usize).min(text.len())..(expr.span.hi as usize).min(text.len()))
                    .unwrap_or("?")
                    .trim()
                    .to_string();
                render::array::write_value(out, &label, &v, &style.array(None))?;
                Ok(Status::Ok)
            }
            Err(diag) => self.report(&diag, out),
        }
    }

    pub(super) fn bind(&mut self, name: String, v: Value) {
        self.work.bind(name, v);
    }

    pub(super) fn expect(&mut self, expect: &Expect, text: &str, out: &mut dyn Write) -> io::Result<Status> {
        let style = self.options.style.clone();
        let (passed, message) = match expect {
            Expect::Expr(expr) => match eval::eval_expect(expr, self, text) {
                Ok(o) => {
                    self.record.wrong = o.wrong;
                    (o.passed, o.message)
                }
                Err(diag) => return self.report(&diag, out),
            },
            Expect::Printed { .. } | Expect::PrintedLines { .. } => return self.expect_printed(expect, text, out),
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
                    Expect::Finding(kind, _)
                        if kind.simulator_only() && self.record.last().is_some_and(|l| l.report.steps.is_none()) =>
                    {
                        // Only the simulator watches every access: on the GPU a race cannot be
                        // seen, so the script's claim is neither true nor false there.
                        writeln!(
                            out,
                            "{}",
                            style.dim(&format!(
                                "ok (not checked: the GPU does not report {} findings; the simulator does)",
                                kind.name()
                            ))
                        )?;
                        return Ok(Status::Ok);
                    }
                    Expect::Finding(FindingKind::OutOfBounds, _)
                        if self.record.last().is_some_and(|l| l.report.steps.is_none())
                            && !findings.iter().any(|f| f.kind() == FindingKind::OutOfBounds) =>
                    {
                        // The GPU sees an access past the end only when it writes into a guard
                        // region or faults; a read past the end is the simulator's to find.
                        writeln!(
                            out,
                            "{}",
                            style.dim(
                                "ok (not checked: on the GPU only writes past the end are seen, not reads; the simulator sees both)"
                            )
                        )?;
                        return Ok(Status::Ok);
                    }
                    Expect::Finding(kind, _) => {
                        if findings.iter().any(|f| f.kind() == *kind) {
                            self.record.acknowledge(*kind);
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
                    Expect::Expr(_) | Expect::Printed { .. } | Expect::PrintedLines { .. } => {
                        unreachable!("handled above")
                    }
                }
            }
        };
        if passed {
            writeln!(out, "{}", style.ok("ok"))?;
            Ok(Status::Ok)
        } else {
            // Wrapped at spaces: a long list of differing elements must not be cut mid-word.
            let message = crate::diag::wrap(&message, style.width, "expect failed: ".len());
            writeln!(out, "{} {message}", style.error("expect failed:"))?;
            Ok(Status::ExpectFailed)
        }
    }

    /// `expect printed "TEXT"`: the text appears somewhere in what the last launch printed (its
    /// lines joined by newlines, so one line's text or a run of whole lines); `expect printed
    /// lines OP N`: how many lines it printed. A failure shows the first lines printed.
    fn expect_printed(&mut self, expect: &Expect, text: &str, out: &mut dyn Write) -> io::Result<Status> {
        /// Lines of output a failure shows, and the columns of each.
        const SHOWN: usize = 5;
        const COLUMNS: usize = 72;
        let style = self.options.style.clone();
        let Some(last) = self.record.last() else {
            writeln!(
                out,
                "{}",
                style.error("error: no launch yet: `expect printed` checks what the last launch printed with printf")
            )?;
            return Ok(Status::Error);
        };
        let lines: Vec<&str> = last.report.output.iter().map(|l| l.text.as_str()).collect();
        let truncated = last.report.output_truncated;
        let count = lines.len();
        let plural = |n: usize| if n == 1 { "line" } else { "lines" };
        let (passed, message) = match expect {
            Expect::Printed { text: wanted, .. } => {
                let passed = lines.join("\n").contains(wanted.as_str());
                let message = if count == 0 {
                    format!("the last launch printed nothing; expected {wanted:?}")
                } else {
                    let cut = if truncated { " (its output was cut short)" } else { "" };
                    format!("{wanted:?} is not in what the last launch printed ({count} {}{cut}):", plural(count))
                };
                (passed, message)
            }
            Expect::PrintedLines { op, count: want, .. } => {
                let n = match eval::eval(want, self, text) {
                    Ok(Value::Int(n)) => n,
                    Ok(v) => {
                        let d = Diagnostic::error(format!("a count of lines is an integer, not {}", v.type_name()))
                            .at(want.span)
                            .help("e.g. `expect printed lines == 8`");
                        return self.report(&d, out);
                    }
                    Err(d) => return self.report(&d, out),
                };
                let have = count as i128;
                let passed = match op {
                    BinOp::Eq => have == n,
                    BinOp::Ne => have != n,
                    BinOp::Lt => have < n,
                    BinOp::Le => have <= n,
                    BinOp::Gt => have > n,
                    _ => have >= n,
                };
                let shown = want.text(text);
                let also = if shown == n.to_string() { String::new() } else { format!(" ({shown} = {n})") };
                let message = format!(
                    "the last launch printed {count} {}, expected {} {shown}{also}{}",
                    plural(count),
                    op.symbol(),
                    if count > 0 { ":" } else { "" }
                );
                (passed, message)
            }
            _ => unreachable!("only printed checks come here"),
        };
        if passed {
            writeln!(out, "{}", style.ok("ok"))?;
            return Ok(Status::Ok);
        }
        let message = crate::diag::wrap(&message, style.width, "expect failed: ".len());
        writeln!(out, "{} {message}", style.error("expect failed:"))?;
        for line in lines.iter().take(SHOWN) {
            let shown: String = line.chars().take(COLUMNS).collect();
            let more = if line.chars().count() > COLUMNS { "..." } else { "" };
            writeln!(out, "  | {shown}{more}")?;
        }
        if count > SHOWN {
            writeln!(out, "{}", style.dim(&format!("  ... and {} more {}", count - SHOWN, plural(count - SHOWN))))?;
        }
        Ok(Status::ExpectFailed)
    }

    /// Which elements of `name` the last launch changed, when it was launched with that buffer.
    pub(super) fn changed_mask(&self, name: &str) -> Option<Vec<bool>> {
        let last = self.record.last()?;
        let (_, before) = last.before.iter().find(|(n, _)| n == name)?;
        let now = self.buffer(name)?;
        if before.len() != now.len() || before.dtype() != now.dtype() {
            return None;
        }
        let size = now.dtype().size();
        Some(before.bytes().chunks(size).zip(now.bytes().chunks(size)).map(|(a, b)| a != b).collect())
    }
}
