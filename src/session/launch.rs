//! Launch statements: from `kernel<<<grid, block>>>(args)` as typed to a [`LaunchSpec`] that a
//! backend can run without further checks, then the launch itself and its report.
//!
//! Everything that can be wrong with a launch is caught here, before any thread runs, with a
//! message that names the limit or the parameter: CUDA's launch limits, argument count, buffer
//! versus scalar, element types, and scalar ranges.
//!
//! A GPU launch leaves a large buffer's results on the device ([`crate::buffer::Buffer::on_device`]);
//! [`Session::settle`] reads them back, which [`Session::eval`] does before anything but another
//! launch, so nothing else ever sees a buffer without its bytes.

use std::io::{self, Write};

use super::{LastLaunch, Session, Status};
use crate::backend::{Arg, Dim3, LaunchSpec, ScalarArg};
use crate::buffer::Shape;
use crate::cuda::ast::{FuncKind, Function, Scalar, Type};
use crate::diag::{Diagnostic, SourceId, Span};
use crate::dtype::DType;
use crate::render;
use crate::script::ast::{BinOp, Dim, Expr, ExprKind, Index, Launch};
use crate::script::eval;
use crate::value::Value;

/// CUDA's limits for every device of compute capability 3.0 and later.
pub const MAX_THREADS_PER_BLOCK: u64 = 1024;
pub const MAX_BLOCK: [u32; 3] = [1024, 1024, 64];
pub const MAX_GRID: [u32; 3] = [(1u32 << 31) - 1, 65535, 65535];
pub const MAX_SHARED_BYTES: u64 = 48 * 1024;

/// A statement's text and its tree, parsed with the default source id (`None`: it does not
/// parse), kept by [`Session::is_launch`].
#[derive(Default)]
pub(super) struct ParsedLine {
    text: String,
    stmt: Option<crate::script::ast::Stmt>,
}

/// A launch sent to the GPU whose answer the session has not taken yet (see
/// [`Session::pipeline_launches`]): what it needs to report it once it is taken.
pub(super) struct InFlight {
    spec: LaunchSpec,
    names: Vec<String>,
    syntax: render::launch::Syntax,
}

/// A launch that was in flight, taken: how it went and what it printed, for the runner to put
/// under its own input ([`Session::finish_launch`]).
#[derive(Debug)]
pub struct FinishedLaunch {
    pub status: Status,
    pub output: Vec<u8>,
    /// [`Session::unacknowledged`] just before and just after it was recorded as the last launch.
    pub before: Option<(u64, Vec<crate::finding::FindingKind>)>,
    pub after: Option<(u64, Vec<crate::finding::FindingKind>)>,
}

/// At most this many launches are in flight at once: enough for the session and the worker to
/// go each at its own pace, few enough that the answers waiting on the pipe stay small.
pub const MAX_IN_FLIGHT: usize = 8;

impl Session {
    /// Let GPU launches run while the session goes on with the next inputs (a replayed script's
    /// runner asks for this; nothing else does): a launch is sent, its input ends with its
    /// answer not taken, and the inputs after it, as long as they are launches too, are parsed,
    /// checked and sent behind it (up to [`MAX_IN_FLIGHT`] in flight) while the GPU runs it.
    /// The answers are taken in order, the oldest once that many are in flight, all of them
    /// before anything else runs (a statement, an `expect`, a command, a launch that reads an
    /// element), so everything but the time is as if each had been waited for; the caller takes
    /// each report with [`Session::finish_launch`] and prints it under its own input. Turning it
    /// off takes the answers of the launches still in flight.
    pub fn pipeline_launches(&mut self, on: bool) -> io::Result<()> {
        if !on {
            self.land()?;
        }
        self.pipelining = on;
        Ok(())
    }

    /// Whether the input may run with launches still in flight (it may be a launch): the others
    /// take their answers first, so a runner takes the finished launches before them.
    pub fn may_pipeline(&self, input: &crate::script::Input) -> bool {
        self.pipelining && self.is_launch(input)
    }

    /// Whether the input is a launch statement ([`crate::script::is_launch`]). The line is
    /// parsed once and kept for the several places that ask about it and for
    /// [`Session::parse_line`], which runs it. The text is the key, so nothing the session holds
    /// can make it stale: a statement's tree depends on its text alone.
    pub(super) fn is_launch(&self, input: &crate::script::Input) -> bool {
        if input.kind != crate::script::InputKind::Statement {
            return false;
        }
        let mut memo = self.parsed.borrow_mut();
        if memo.text != input.text {
            // A line that does not parse is kept as such; running it parses it again, for a
            // message that points into its own source.
            memo.stmt = crate::script::parse_statement(SourceId::default(), &input.text).ok();
            // The old key's allocation is reused: a run of launches allocates nothing here.
            memo.text.clear();
            memo.text.push_str(&input.text);
        }
        matches!(memo.stmt, Some(crate::script::ast::Stmt { kind: crate::script::ast::StmtKind::Launch(_), .. }))
    }

    /// The statement `text` (of source `id`) parsed: the tree [`Session::is_launch`] kept for
    /// the same text, given the source's id, or parsed now.
    pub(super) fn parse_line(&self, id: SourceId, text: &str) -> Result<crate::script::ast::Stmt, Diagnostic> {
        let memo = self.parsed.borrow();
        if memo.text == text
            && let Some(stmt) = &memo.stmt
        {
            let mut stmt = stmt.clone();
            stmt.set_source(id);
            return Ok(stmt);
        }
        crate::script::parse_statement(id, text)
    }

    /// Whether the last input left its launch in flight.
    pub fn launch_in_flight(&self) -> bool {
        self.left_in_flight
    }

    /// The oldest launch that was in flight and was not taken by the caller yet, finished (its
    /// answer taken now, if no input took it since): its status and output. `None` when there is
    /// none.
    pub fn finish_launch(&mut self) -> io::Result<Option<FinishedLaunch>> {
        if self.finished.is_empty() {
            self.land_one()?;
        }
        Ok(self.finished.pop_front())
    }

    /// [`Session::finish_launch`] for a launch already finished (an input took its answer, and
    /// those of the launches ahead of it, before it ran): `None` when there is none, without
    /// waiting for one.
    pub fn finished_launch(&mut self) -> Option<FinishedLaunch> {
        self.finished.pop_front()
    }

    /// Take the answers of every launch in flight, in order, and keep their reports for
    /// [`Session::finish_launch`]. Anything that asks the GPU for more, or looks at buffers, does
    /// this first.
    pub(super) fn land(&mut self) -> io::Result<()> {
        while !self.in_flight.is_empty() {
            self.land_one()?;
        }
        Ok(())
    }

    /// Take the answer of the oldest launch in flight, if any, and keep its report.
    fn land_one(&mut self) -> io::Result<()> {
        let Some(InFlight { spec, names, syntax }) = self.in_flight.pop_front() else { return Ok(()) };
        let before = self.unacknowledged();
        let result = {
            let (module, mut lb) = self.work.for_launch(&names);
            match self.backends.gpu() {
                Some(gpu) => gpu.end_launch(module, &spec, &mut lb),
                None => Err(crate::backend::BackendError::Unavailable("the GPU backend is gone".into())),
            }
        };
        let mut output = Vec::new();
        let status = self.conclude(spec, names, syntax, None, result, &mut output)?;
        let after = self.unacknowledged();
        self.finished.push_back(FinishedLaunch { status, output, before, after });
        Ok(())
    }

    pub(super) fn launch(&mut self, launch: &Launch, text: &str, out: &mut dyn Write) -> io::Result<Status> {
        // A Python kernel becomes CUDA C for these arguments' types first.
        let lowered;
        let launch = if self.is_python_kernel(&launch.kernel) {
            // Lowering may compile: nothing may be in flight.
            self.land()?;
            match self.python_launch(launch, text) {
                Ok(l) => {
                    lowered = l;
                    return self.launch_c(&lowered, text, render::launch::Syntax::Numba, out);
                }
                Err(diags) => {
                    for d in &diags {
                        self.report(d, out)?;
                    }
                    return Ok(Status::Error);
                }
            }
        } else {
            launch
        };
        self.launch_c(launch, text, render::launch::Syntax::Cuda, out)
    }

    /// A launch of a CUDA C kernel (typed, or lowered from Python).
    fn launch_c(
        &mut self,
        launch: &Launch,
        text: &str,
        syntax: render::launch::Syntax,
        out: &mut dyn Write,
    ) -> io::Result<Status> {
        // Sizes and arguments that read a buffer's elements need the bytes of the launches
        // before: the one in flight, and results left on the device (read back here, as before
        // any input that is not a launch).
        if (!self.in_flight.is_empty() || self.has_deferred()) && !self.reads_no_elements(launch) {
            self.settle(out)?;
        }
        // A template instance may be compiled: nothing may be in flight.
        if !self.in_flight.is_empty()
            && (launch.template_args.is_some() || self.work.module().template(&launch.kernel).is_some())
        {
            self.land()?;
        }
        let instance;
        let launch = match self.template_instance(launch, text) {
            Ok(Some(name)) => {
                instance = Launch { kernel: name, ..launch.clone() };
                &instance
            }
            Ok(None) => launch,
            Err(diags) => {
                for d in &diags {
                    self.report(d, out)?;
                }
                return Ok(Status::Error);
            }
        };
        let (spec, names) = match self.prepare(launch, text) {
            Ok(ok) => ok,
            Err(diag) => return self.report(&diag, out),
        };
        // Checked while the launches before ran on the GPU. When none of them has a large buffer,
        // nor this one, this one is sent behind them before their answers are taken, so the GPU
        // goes from one to the next without waiting for the session; otherwise their results are
        // needed now.
        let pipelined = self.pipelining && self.depth == 1 && syntax == render::launch::Syntax::Cuda;
        let behind =
            pipelined && self.in_flight.iter().all(|ahead| self.all_small(&ahead.names)) && self.all_small(&names);
        if !behind {
            self.land()?;
        }
        // Results kept on the GPU are read back now and then, so that the launches to run again
        // after a fault, and the device memory they hold, stay bounded.
        if self.has_deferred() && self.on_gpu() {
            let pending: u64 = self
                .work
                .buffers()
                .iter()
                .filter(|(_, b)| b.on_device().is_some())
                .map(|(_, b)| b.size_bytes() as u64)
                .sum();
            if self.gpu_ready().is_some_and(|g| g.wants_settle(pending)) {
                self.settle(out)?;
            }
        }
        // Keep the launched buffers as they were: to put them back if the launch is stopped
        // part-way, and to show which elements it changed. The GPU backend hands back what it
        // kept (the regions it swapped out, or results it left on the device), so on the GPU
        // nothing is copied for this (a failed launch there leaves the buffers as they were).
        let copied = (!self.on_gpu()).then(|| self.inputs(&names));
        if copied.is_none() && pipelined {
            self.ensure_resolved();
            let begun = loop {
                if self.in_flight.len() >= MAX_IN_FLIGHT {
                    self.land_one()?;
                }
                // For each buffer, the last launch in flight that has it, and its place there.
                let after: Vec<Option<(usize, usize)>> = names
                    .iter()
                    .map(|n| {
                        self.in_flight
                            .iter()
                            .enumerate()
                            .rev()
                            .find_map(|(k, ahead)| Some((k, ahead.names.iter().position(|m| m == n)?)))
                    })
                    .collect();
                let (_, lb) = self.work.for_launch(&names);
                let begun = match self.backends.gpu() {
                    Some(gpu) => gpu.begin_launch(&spec, &lb, &after),
                    None => Err(crate::backend::BackendError::Unavailable("the GPU backend is gone".into())),
                };
                match begun {
                    // The launch ahead is to be answered first.
                    Ok(false) if !self.in_flight.is_empty() => self.land_one()?,
                    begun => break begun,
                }
            };
            match begun {
                Ok(true) => {
                    self.in_flight.push_back(InFlight { spec, names, syntax });
                    self.left_in_flight = true;
                    return Ok(Status::Ok);
                }
                Ok(false) => {}
                Err(e) => {
                    // The launches ahead are reported first, and their results taken.
                    self.land()?;
                    return self.conclude(spec, names, syntax, None, Err(e), out);
                }
            }
        }
        // Not on the GPU (any more): nothing may be in flight.
        self.land()?;
        let result = self.run_launch(&spec, &names);
        self.conclude(spec, names, syntax, copied, result, out)
    }

    /// Whether every buffer named is small: its bytes travel in the launch's messages, and none
    /// of its results stays on the device only.
    fn all_small(&self, names: &[String]) -> bool {
        names.iter().all(|n| self.work.buffer(n).is_some_and(|b| b.shared().is_none()))
    }

    /// Whether evaluating `launch`'s sizes and arguments reads no buffer's elements: only
    /// buffers passed as pointers (`a`, `a + 4`), and their lengths, may be named.
    fn reads_no_elements(&self, launch: &Launch) -> bool {
        fn plain(s: &Session, e: &Expr) -> bool {
            match &e.kind {
                ExprKind::Name(n) => s.work.buffer(n).is_none(),
                ExprKind::Call { func, args, kwargs, .. } if func == "len" && args.len() == 1 && kwargs.is_empty() => {
                    true
                }
                ExprKind::Index { .. } => false,
                _ => e.children().into_iter().all(|c| plain(s, c)),
            }
        }
        let pointer = |e: &Expr| match &e.kind {
            ExprKind::Name(n) => self.work.buffer(n).is_some() || plain(self, e),
            ExprKind::Binary { lhs, rhs, .. } if matches!(&lhs.kind, ExprKind::Name(n) if self.work.buffer(n).is_some()) => {
                plain(self, rhs)
            }
            _ => plain(self, e),
        };
        launch.grid.exprs.iter().chain(&launch.block.exprs).chain(&launch.shared).all(|e| plain(self, e))
            && launch.args.iter().all(pointer)
    }

    /// Report a launch that ran (or failed to): its line, output and findings, and keep it as
    /// the last launch. `copied` are the buffers as they were before it, where the backend does
    /// not hand them back (the simulator).
    fn conclude(
        &mut self,
        spec: LaunchSpec,
        names: Vec<String>,
        syntax: render::launch::Syntax,
        copied: Option<Vec<(String, crate::buffer::Buffer)>>,
        mut result: Result<crate::backend::LaunchReport, crate::backend::BackendError>,
        out: &mut dyn Write,
    ) -> io::Result<Status> {
        let style = self.options.style.clone();
        let kept = result.as_mut().ok().and_then(|r| r.before.take()).filter(|k| k.len() == names.len());
        let before = match (copied, kept) {
            (Some(before), _) => before,
            (None, Some(kept)) => names.iter().cloned().zip(kept).collect(),
            (None, None) => {
                // A failed launch on the GPU: what it ran on, read back for the simulator's
                // second look below. With a launch sent behind this one in flight, nothing else
                // may reach the worker: then its buffers are small ones, which have their bytes.
                let behind = self.backends.gpu_info().is_some_and(|g| g.launch_in_flight());
                if !behind {
                    self.settle(out)?;
                }
                self.inputs(&names)
            }
        };
        match result {
            Ok(mut report) => {
                if self.is_python_kernel(&spec.kernel) {
                    // A Python kernel indexes a 2-D array `m[row, col]`: its findings do too.
                    let work = &self.work;
                    crate::finding::shape_buffers(&mut report.findings, |name| match work.buffer(name)?.shape() {
                        crate::buffer::Shape::D2(rows, cols) => Some(vec![rows as u64, cols as u64]),
                        _ => None,
                    });
                }
                if report.aborted {
                    for (name, old) in &before {
                        if let Some(b) = self.work.buffer_mut(name) {
                            *b = old.clone();
                        }
                    }
                }
                render::launch::write_summary_as(out, &spec, &self.backend_label(), &report, &style, syntax)?;
                render::launch::write_output(out, &report, &style)?;
                render::findings::write_findings(out, &report.findings, self.work.sources(), &style)?;
                if report.aborted {
                    writeln!(out, "{}", style.dim("the launch was stopped; its buffers are as they were before it"))?;
                }
                let config = self.backends.sim_config().clone();
                self.record.launched(LastLaunch { report, before, spec, config, acknowledged: Vec::new() });
                Ok(Status::Ok)
            }
            Err(crate::backend::BackendError::Aborted(_)) if !self.on_gpu() => {
                // On the simulator only Ctrl-C cancels a launch part-way (`SimConfig.cancel`);
                // the backend has already put the buffers back.
                let msg = format!("`{}` stopped by Ctrl-C; buffers are as they were before the launch", spec.kernel);
                writeln!(out, "{}", style.warn(&msg))?;
                Ok(Status::Error)
            }
            // The simulator's refusal of a GPU-only kernel, drawn at the construct's line.
            Err(crate::backend::BackendError::Unsupported(d)) => self.report(&d, out),
            Err(e) => {
                writeln!(out, "{} {e}", style.error("error:"))?;
                // A GPU fault says little; the simulator names the thread, index and line.
                let interrupted =
                    self.options.sim.cancel.as_ref().is_some_and(|c| c.load(std::sync::atomic::Ordering::SeqCst));
                if matches!(e, crate::backend::BackendError::Aborted(_))
                    && !interrupted
                    && let Ok((report, _)) = self.run_copy(&spec, &before, self.backends.sim_config().clone())
                    && !report.findings.is_empty()
                {
                    writeln!(out, "{}", style.dim("The same launch on the simulator shows where it went wrong:"))?;
                    render::findings::write_findings(out, &report.findings, self.work.sources(), &style)?;
                }
                Ok(Status::Error)
            }
        }
    }

    /// Resolve and check everything about a launch; returns the spec and the buffer names that
    /// `Arg::Buffer` indices refer to.
    pub(super) fn prepare(&self, launch: &Launch, text: &str) -> Result<(LaunchSpec, Vec<String>), Diagnostic> {
        let kernel = self.find_kernel(launch, text)?;
        let grid = self.dim(&launch.grid, text, "grid")?;
        let block = self.dim(&launch.block, text, "block")?;
        check_limits(grid, block, launch)?;
        let shared_bytes = match &launch.shared {
            Some(e) => {
                let v = self.integer(e, text)?;
                u32::try_from(v).map_err(|_| {
                    Diagnostic::error(format!(
                        "dynamic shared memory must be between 0 and {MAX_SHARED_BYTES} bytes, not {v}"
                    ))
                    .at(e.span)
                })?
            }
            None => 0,
        };
        let static_shared: u64 = kernel.shared.iter().filter(|s| !s.is_extern).map(|s| s.ty.size()).sum();
        if static_shared + shared_bytes as u64 > MAX_SHARED_BYTES {
            let at = launch.shared.as_ref().map_or(launch.span, |e| e.span);
            return Err(Diagnostic::error(format!(
                "`{}` needs {} bytes of shared memory per block ({static_shared} static + {shared_bytes} dynamic); the limit is {MAX_SHARED_BYTES} bytes (48 KiB)",
                kernel.name,
                static_shared + shared_bytes as u64
            ))
            .at(at)
            .help("use smaller shared arrays, or a smaller third launch parameter"));
        }
        // Parameters with defaults (`int *partial = NULL`) may be left out, from the end.
        let required = kernel.params.iter().take_while(|p| p.default.is_none()).count();
        if launch.args.len() < required || launch.args.len() > kernel.params.len() {
            let takes = if required == kernel.params.len() {
                kernel.params.len().to_string()
            } else {
                format!("{required} to {}", kernel.params.len())
            };
            let next_is_length = kernel
                .params
                .get(launch.args.len())
                .is_some_and(|p| matches!(&p.ty, Type::Scalar(s) if s.is_integer()));
            return Err(wrong_arg_count(
                launch,
                text,
                &kernel.name,
                &takes,
                kernel.params.len(),
                &render::signature(kernel),
                next_is_length && launch.args.len() + 1 == required,
                |name| self.work.buffer(name).is_some(),
            ));
        }
        let mut names: Vec<String> = Vec::new();
        let mut args = Vec::with_capacity(launch.args.len());
        for (expr, param) in launch.args.iter().zip(&kernel.params) {
            let arg = match &param.ty {
                // `NULL`, `nullptr` or `0` for a pointer: the null pointer, as in host code.
                Type::Ptr { .. } if is_null(expr) => Arg::Null,
                Type::Ptr { pointee, .. } => {
                    let (name, offset) = self.buffer_arg(expr, &param.name, &param.ty, pointee, text)?;
                    let idx = names.iter().position(|n| *n == name).unwrap_or_else(|| {
                        names.push(name.clone());
                        names.len() - 1
                    });
                    if offset == 0 { Arg::Buffer(idx) } else { Arg::View { buffer: idx, offset } }
                }
                Type::Scalar(s) => Arg::Scalar(self.scalar_arg(expr, &param.name, *s, text)?),
                Type::Struct(def) => self.struct_arg(expr, &param.name, def, text)?,
                other => {
                    return Err(Diagnostic::error(format!(
                        "parameter `{}` has type `{}`, which a launch cannot pass",
                        param.name,
                        other.c_name()
                    ))
                    .at(expr.span));
                }
            };
            args.push(arg);
        }
        args.extend(kernel.params[launch.args.len()..].iter().filter_map(default_arg));
        let spec =
            LaunchSpec { kernel: kernel.name.clone(), grid, block, shared_bytes, args, symbols: self.symbol_writes() };
        Ok((spec, names))
    }

    /// For `k<ARGS><<<...>>>`, the name of `k`'s instance for `ARGS`, made (and on the GPU,
    /// compiled) if it is new.
    fn template_instance(&mut self, launch: &Launch, text: &str) -> Result<Option<String>, Vec<Diagnostic>> {
        let Some(span) = launch.template_args else {
            if let Some(t) = self.work.module().template(&launch.kernel) {
                // Deduce type parameters from the buffers passed to `T *` parameters.
                let types: Vec<Option<&str>> = launch
                    .args
                    .iter()
                    .map(|a| self.pointer_base(a).and_then(|n| self.buffer(n)).map(|b| b.dtype().c_name()))
                    .collect();
                if let Some(args) = t.deduce(&types) {
                    let at = launch.kernel_span;
                    let previous = self.work.module().clone();
                    let name = self.work.module_mut().instantiate(&launch.kernel, args, at)?;
                    self.reload_after_instance(previous, at)?;
                    return Ok(Some(name));
                }
                let example: Vec<&str> = t.params.iter().map(|p| if p.is_type { "float" } else { "256" }).collect();
                return Err(vec![
                    Diagnostic::error(format!("`{}` is a template kernel: give its template arguments", launch.kernel))
                        .at(launch.kernel_span)
                        .help(format!(
                            "only types of buffers passed to `T *` parameters are deduced; write the rest, e.g. `{}<{}><<<grid, block>>>(...)`",
                            launch.kernel,
                            example.join(", ")
                        )),
                ]);
            }
            return Ok(None);
        };
        let source = launch.kernel_span.source;
        let lo = span.lo as usize;
        let inner = text.get(lo..span.hi as usize).unwrap_or("");
        let tokens = crate::cuda::lexer::lex(source, inner).map_err(|d| vec![d])?;
        let mut args = vec![Vec::new()];
        let mut depth = 0usize;
        for mut t in tokens {
            t.span = Span::new(source, t.span.lo as usize + lo, t.span.hi as usize + lo);
            match &t.tok {
                crate::cuda::lexer::Tok::Punct("(" | "<") => depth += 1,
                crate::cuda::lexer::Tok::Punct(")" | ">") => depth = depth.saturating_sub(1),
                crate::cuda::lexer::Tok::Punct(",") if depth == 0 => {
                    args.push(Vec::new());
                    continue;
                }
                _ => {}
            }
            args.last_mut().expect("one at least").push(t);
        }
        if args.len() == 1 && args[0].is_empty() {
            args.clear();
        }
        let at = launch.kernel_span.to(Span::new(source, lo, span.hi as usize + 1));
        let previous = self.work.module().clone();
        let name = self.work.module_mut().instantiate(&launch.kernel, args, at)?;
        self.reload_after_instance(previous, at)?;
        Ok(Some(name))
    }

    /// Give the backend the module with a new template instance (the GPU compiles it again).
    fn reload_after_instance(&mut self, previous: crate::cuda::Module, at: Span) -> Result<(), Vec<Diagnostic>> {
        if self.work.module().generation() == previous.generation() {
            return Ok(());
        }
        let backend = self.backends.active();
        if let Err(e) = backend.load(self.work.module(), self.work.sources()) {
            self.work.restore_module(previous);
            return Err(match e {
                crate::backend::BackendError::Compile(d) => d,
                other => vec![Diagnostic::error(other.to_string()).at(at)],
            });
        }
        Ok(())
    }

    fn find_kernel(&self, launch: &Launch, text: &str) -> Result<&Function, Diagnostic> {
        let (name, span) = (launch.kernel.as_str(), launch.kernel_span);
        if let Some(k) = self.work.module().kernel(name) {
            return Ok(k);
        }
        if let Some(g) = self.work.module().gpu_only_kernel(name) {
            // Checked like any kernel; the simulator refuses it at launch, naming why.
            return g.launchable(name).map_err(|d| d.at(span));
        }
        if let Some((_, f)) = self.work.module().program().function(name)
            && f.kind == FuncKind::Device
        {
            return Err(Diagnostic::error(format!(
                "`{name}` is a __device__ function; only __global__ kernels can be launched"
            ))
            .at(span)
            .help("call it from a kernel, or declare it `__global__ void`"));
        }
        if let Some(at) = self.work.refused(name) {
            return Err(Diagnostic::error(format!("`{name}` is not defined: its definition was refused"))
                .at(span)
                .label("refused earlier")
                .note(format!("the refused definition starts at {}", self.work.sources().location(at)))
                .help(format!("fix the error shown for `{name}` above and enter it again")));
        }
        let kernels = self.work.module().kernel_names();
        let mut d = Diagnostic::error(format!("no kernel named `{name}`")).at(span).label("not defined");
        d = match crate::diag::suggest::closest(name, kernels.iter().copied()) {
            Some(best) => d.help(format!("did you mean `{best}`?")),
            None if kernels.is_empty() => d.help(format!(
                "define it first: type `__global__ void {name}({}) {{ ... }}`",
                self.parameters_for(launch, text)
            )),
            None => d.help(format!("the kernels defined so far are: {}", kernels.join(", "))),
        };
        Err(d)
    }

    /// Parameters a kernel would need to take this launch's arguments, for the advice to define
    /// one: `float *a, int n` for `(a, len(a))` with `a` a buffer of f32.
    fn parameters_for(&self, launch: &Launch, text: &str) -> String {
        let mut used: Vec<String> = Vec::new();
        let mut params = Vec::new();
        for (k, e) in launch.args.iter().enumerate() {
            let (ty, mut name) = match self.pointer_base(e) {
                Some(n) => (format!("{} *", self.buffer(n).map_or("float", |b| b.dtype().c_name())), n.to_string()),
                None => match eval::eval(e, self, text) {
                    // An array made in the launch (`zeros(n)`) is a buffer like a named one.
                    Ok(Value::Array(a)) => (format!("{} *", a.dtype().map_or("bool", |d| d.c_name())), "a".to_string()),
                    value => {
                        let ty = if matches!(value, Ok(Value::Float(_))) { "float " } else { "int " };
                        let name = match &e.kind {
                            ExprKind::Name(n) => n.clone(),
                            _ if ty == "int " => "n".to_string(),
                            _ => "x".to_string(),
                        };
                        (ty.to_string(), name)
                    }
                },
            };
            if used.contains(&name) {
                name = format!("{name}{k}");
            }
            used.push(name.clone());
            params.push(format!("{ty}{name}"));
        }
        params.join(", ")
    }

    fn integer(&self, e: &Expr, text: &str) -> Result<i128, Diagnostic> {
        self.as_integer(eval::eval(e, self, text)?, e, text)
    }

    /// The value of `e`, already evaluated, as a launch size.
    fn as_integer(&self, value: Value, e: &Expr, text: &str) -> Result<i128, Diagnostic> {
        match value {
            Value::Int(v) => Ok(v),
            Value::Bool(b) => Ok(b as i128),
            Value::Float(f) if f.fract() == 0.0 && f.is_finite() => Ok(f as i128),
            Value::Float(f) => Err(Diagnostic::error(format!("a launch size must be a whole number, but this is {f}"))
                .at(e.span)
                .help(
                    "a float on either side of `/` makes a float division; between integers `/` drops the remainder, as in C: `(n + 255) / 256`",
                )),
            Value::Dim3(_) => Err(Diagnostic::error("a dim3 is a whole grid or block size, not one of its sizes")
                .at(e.span)
                .help(format!("pass it alone, `<<<grid, {0}>>>`, or take one field, `{0}.x`", &text[e.span.lo as usize..e.span.hi as usize]))),
            other => Err(Diagnostic::error(format!("expected an integer here, found {}", other.type_name()))
                .at(e.span)
                .help("launch sizes are whole numbers of blocks and threads")),
        }
    }

    fn dim(&self, dim: &Dim, text: &str, what: &str) -> Result<Dim3, Diagnostic> {
        let mut v = [1u32; 3];
        if dim.exprs.is_empty() || dim.exprs.len() > 3 {
            return Err(
                Diagnostic::error(format!("a {what} size has 1 to 3 dimensions, not {}", dim.exprs.len())).at(dim.span)
            );
        }
        // `let block = dim3(16, 16)` then `k<<<grid, block>>>`: the value is the whole size.
        let given: Vec<i128> = match &dim.exprs[..] {
            [e] if !matches!(e.kind, ExprKind::Int(_)) => match eval::eval(e, self, text)? {
                Value::Dim3(d) => d.iter().map(|&x| x as i128).collect(),
                // Evaluated once: the size is the value just found.
                other => vec![self.as_integer(other, e, text)?],
            },
            exprs => exprs.iter().map(|e| self.integer(e, text)).collect::<Result<_, _>>()?,
        };
        for (i, (&n, e)) in given.iter().zip(dim.exprs.iter().cycle()).enumerate() {
            let axis = ["x", "y", "z"][i];
            if n <= 0 {
                return Err(Diagnostic::error(format!(
                    "the {what} size must be at least 1 in every dimension, but {axis} is {n}"
                ))
                .at(e.span)
                .help(format!(
                    "a launch needs at least one {}",
                    if what == "grid" { "block" } else { "thread per block" }
                )));
            }
            v[i] = u32::try_from(n).map_err(|_| {
                Diagnostic::error(format!(
                    "the {what} size {n} in {axis} is too large (CUDA's limit is {})",
                    limit_of(what, i)
                ))
                .at(e.span)
            })?;
        }
        Ok(Dim3::new(v[0], v[1], v[2]))
    }

    /// A pointer parameter takes a buffer of the matching element type: by name, or a view into
    /// it (`a + 4`, `a[4:]`); returns the buffer's name and the view's offset in elements.
    fn buffer_arg(
        &self,
        e: &Expr,
        param: &str,
        ty: &Type,
        pointee: &Type,
        text: &str,
    ) -> Result<(String, usize), Diagnostic> {
        let (name, offset) = match &e.kind {
            ExprKind::Name(name) => (name.clone(), 0),
            _ => match self.pointer_base(e) {
                Some(base) => {
                    let base = base.to_string();
                    let offset = self.view_offset(e, &base, text)?;
                    (base, offset)
                }
                None => return Err(self.not_a_pointer(e, param, ty, text)),
            },
        };
        let Some(buf) = self.buffer(&name) else {
            let is_scalar = eval::eval(e, self, text).is_ok();
            let d = if is_scalar {
                Diagnostic::error(format!(
                    "`{name}` is a scalar, but parameter `{param}` is a pointer (`{}`)",
                    ty.c_name()
                ))
                .at(e.span)
                .help("pass a buffer made with zeros(...), arange(...) or similar")
            } else {
                let names = self.work.buffers().iter().map(|(n, _)| n.as_str());
                let d = Diagnostic::error(format!("no buffer named `{name}`")).at(e.span);
                match crate::diag::suggest::closest(&name, names) {
                    Some(best) => d.help(format!("did you mean `{best}`?")),
                    None => d.help(format!("create it first, e.g. `let {name} = zeros(1000)`")),
                }
            };
            return Err(d);
        };
        let want = match pointee {
            Type::Scalar(s) => dtype_of(*s),
            // A buffer of structs is a buffer of their one member type (`float4 *` takes f32
            // values, four to an element), as `cudaMalloc` memory holds whatever it is cast to.
            Type::Struct(def) => match def.buffer_layout() {
                Some((s, per)) => {
                    if let Some(dt) = dtype_of(s)
                        && dt == buf.dtype()
                        && buf.len() % per as usize != 0
                    {
                        let members = Type::Struct(def.clone()).leaf_count() as u64;
                        let padding =
                            if members < per { format!(", {} of them padding", per - members) } else { String::new() };
                        return Err(Diagnostic::error(format!(
                            "`{name}` holds {} values, not a whole number of `{}` ({per} {dt} values each{padding})",
                            buf.len(),
                            def.name
                        ))
                        .at(e.span)
                        .help(format!("make its length a multiple of {per}, e.g. `zeros(n * {per}, {dt})`")));
                    }
                    dtype_of(s)
                }
                None => {
                    return Err(Diagnostic::error(format!(
                        "parameter `{param}` points to `{}`, whose members are not all of one type",
                        def.name
                    ))
                    .at(e.span)
                    .help(format!(
                        "gridlab's buffers hold one type: pass one buffer per member, or give `{}` members of one type (e.g. all `float`)",
                        def.name
                    )));
                }
            },
            _ => None,
        };
        // `a + 4` points into `a`: what it holds is `a`'s.
        let what = match &e.kind {
            ExprKind::Name(_) => format!("`{name}` holds"),
            _ => format!("`{}` points into `{name}`, which holds", src(text, e.span)),
        };
        match want {
            Some(dt) if dt == buf.dtype() => Ok((name, offset)),
            Some(dt) => Err(Diagnostic::error(format!(
                "{what} {} ({}), but parameter `{param}` is `{}`",
                buf.dtype(),
                buf.dtype().c_name(),
                ty.c_name()
            ))
            .at(e.span)
            .label(format!("{} buffer", buf.dtype()))
            .help(format!(
                "make the buffer {dt} (e.g. `let {name} = zeros({}, {dt})`), or change the parameter to `{} *`",
                buf.shape(),
                buf.dtype().c_name()
            ))),
            None => Err(Diagnostic::error(format!(
                "parameter `{param}` has type `{}`; gridlab passes buffers of {}",
                ty.c_name(),
                DType::ALL.map(DType::name).join(", ")
            ))
            .at(e.span)),
        }
    }

    /// A struct parameter whose members are one type (`float2 c`, `uchar4 colour`) takes a list
    /// of its members' values, `[-0.8, 0.156]`, each checked as a scalar parameter is.
    fn struct_arg(
        &self,
        e: &Expr,
        param: &str,
        def: &std::sync::Arc<crate::cuda::ast::StructDef>,
        text: &str,
    ) -> Result<Arg, Diagnostic> {
        let example: Vec<&str> = def.fields.iter().map(|f| f.name.as_str()).collect();
        let Some((s, n)) = def.uniform() else {
            return Err(Diagnostic::error(format!(
                "parameter `{param}` is a `{}` by value, whose members are not all one type",
                def.name
            ))
            .at(e.span)
            .help(format!(
                "a launch passes structs of one member type (`float2`, `uchar4`) as a list; give the kernel `{}` as separate parameters",
                example.join(", ")
            )));
        };
        let ExprKind::List(items) = &e.kind else {
            return Err(Diagnostic::error(format!(
                "parameter `{param}` is a `{}`: pass its members as a list",
                def.name
            ))
            .at(e.span)
            .help(format!(
                "write `[{}]`, one value per member ({})",
                vec!["..."; n as usize].join(", "),
                example.join(", ")
            )));
        };
        if items.len() as u64 != n {
            return Err(Diagnostic::error(format!(
                "`{}` has {n} members, but the list has {} values",
                def.name,
                items.len()
            ))
            .at(e.span)
            .help(format!("give one value per member: {}", example.join(", "))));
        }
        let mut members = Vec::new();
        for (item, f) in items.iter().zip(&def.fields) {
            members.push(self.scalar_arg(item, &format!("{param}.{}", f.name), s, text)?);
        }
        Ok(Arg::Struct(members))
    }

    /// Why `e`, which points into no buffer, cannot go to pointer parameter `param`.
    fn not_a_pointer(&self, e: &Expr, param: &str, ty: &Type, text: &str) -> Diagnostic {
        // `a[4]` is an element, a value; in C `&a[4]` would be the pointer. (`a[a > 0]` is a
        // mask, and `b + 4` of no buffer `b` a name to look up.)
        if let ExprKind::Index { target, indices } = &e.kind
            && let ExprKind::Name(b) = &target.kind
            && self.buffer(b).is_some()
            && let [Index::At(i)] = &indices[..]
            && matches!(eval::eval(i, self, text), Ok(Value::Int(_)))
        {
            let i = src(text, i.span);
            return Diagnostic::error(format!(
                "`{}` is one element of `{b}`, a value, but parameter `{param}` is a pointer (`{}`)",
                src(text, e.span),
                ty.c_name()
            ))
            .at(e.span)
            .help(format!("to pass a pointer to it, as `&{b}[{i}]` does in C, write `{b} + {i}` or `{b}[{i}:]`"));
        }
        if let ExprKind::Index { target, .. } = &e.kind
            && let ExprKind::Name(b) = &target.kind
            && self.buffer(b).is_some()
        {
            return Diagnostic::error(format!(
                "`{}` picks elements of `{b}` by a mask, which no pointer points to",
                src(text, e.span)
            ))
            .at(e.span)
            .help(format!(
                "pass `{b}`, or a pointer into it: `{b} + 4`, `{b}[4:]`; the kernel can test each element itself"
            ));
        }
        if let ExprKind::Binary { op: BinOp::Add | BinOp::Sub, lhs, .. } = &e.kind
            && let ExprKind::Name(n) = &lhs.kind
            && eval::eval(lhs, self, text).is_err()
        {
            let names = self.work.buffers().iter().map(|(n, _)| n.as_str());
            let d = Diagnostic::error(format!("no buffer named `{n}`")).at(lhs.span);
            return match crate::diag::suggest::closest(n, names) {
                Some(best) => d.help(format!("did you mean `{best}`?")),
                None => d.help(format!("create it first, e.g. `let {n} = zeros(1000)`")),
            };
        }
        Diagnostic::error(format!("parameter `{param}` is a pointer (`{}`): pass a buffer by name", ty.c_name()))
            .at(e.span)
            .help("create one first, e.g. `let a = zeros(1000)`, then pass `a`, or a pointer into it, `a + 4`")
    }

    /// The buffer that `e` points into, by its form alone: `a`, `a + 4`, `4 + a`, `a - 1`,
    /// `a[4:]`, `a[4:8]`, a row of a matrix `m[2]`, and these combined (`a[4:] + 2`). `None` for
    /// anything else, `a[4]` of a flat buffer included: that is an element, a value.
    fn pointer_base<'e>(&self, e: &'e Expr) -> Option<&'e str> {
        match &e.kind {
            ExprKind::Name(n) => self.buffer(n).is_some().then_some(n.as_str()),
            ExprKind::Binary { op: BinOp::Add, lhs, rhs, .. } => {
                self.pointer_base(lhs).or_else(|| self.pointer_base(rhs))
            }
            ExprKind::Binary { op: BinOp::Sub, lhs, .. } => self.pointer_base(lhs),
            ExprKind::Index { target, indices } => {
                let ExprKind::Name(n) = &target.kind else { return None };
                let buf = self.buffer(n)?;
                let row = matches!(buf.shape(), Shape::D2(..)) && matches!(indices[..], [Index::At(_)]);
                let slice = indices.iter().any(|i| matches!(i, Index::Slice { .. }));
                (row || slice).then_some(n.as_str())
            }
            _ => None,
        }
    }

    /// The offset in elements of the view `e` into buffer `name` ([`Session::pointer_base`]),
    /// checked to lie in the buffer (its end included, as C allows a pointer just past it).
    fn view_offset(&self, e: &Expr, name: &str, text: &str) -> Result<usize, Diagnostic> {
        let len = self.buffer(name).map_or(0, |b| b.len());
        let offset = self.offset_in(e, name, text)?;
        if (0..=len as i128).contains(&offset) {
            return Ok(offset as usize);
        }
        let place = if offset < 0 { "before the start" } else { "past the end" };
        let elements = if len == 1 { "element" } else { "elements" };
        Err(Diagnostic::error(format!(
            "`{}` points {place} of `{name}`: its offset is {offset}, and `{name}` has {len} {elements}",
            src(text, e.span)
        ))
        .at(e.span)
        .label(format!("offset {offset}"))
        .help(format!(
            "a pointer argument points into its buffer: an offset from 0 to {len} (`{name} + {len}` is just past the end)"
        )))
    }

    /// The element offset of `e` from the start of `name`, before the range check.
    fn offset_in(&self, e: &Expr, name: &str, text: &str) -> Result<i128, Diagnostic> {
        let overflow = || Diagnostic::error("this offset is too large for any buffer").at(e.span);
        match &e.kind {
            ExprKind::Name(_) => Ok(0),
            ExprKind::Binary { op: BinOp::Add, lhs, rhs, .. } => {
                let (p, n) = if self.pointer_base(lhs).is_some() { (lhs, rhs) } else { (rhs, lhs) };
                let base = self.offset_in(p, name, text)?;
                base.checked_add(self.offset_amount(n, text)?).ok_or_else(overflow)
            }
            ExprKind::Binary { op: BinOp::Sub, lhs, rhs, .. } => {
                let base = self.offset_in(lhs, name, text)?;
                base.checked_sub(self.offset_amount(rhs, text)?).ok_or_else(overflow)
            }
            ExprKind::Index { indices, .. } => self.slice_offset(e, indices, name, text),
            _ => Err(Diagnostic::error(format!("`{}` is not a pointer into `{name}`", src(text, e.span))).at(e.span)),
        }
    }

    /// How far `a + n` moves: a whole number of elements, as in C.
    fn offset_amount(&self, e: &Expr, text: &str) -> Result<i128, Diagnostic> {
        match eval::eval(e, self, text)? {
            Value::Int(v) => Ok(v),
            Value::Float(f) if f.fract() == 0.0 && f.is_finite() => Ok(f as i128),
            other => Err(Diagnostic::error(match other {
                Value::Float(f) => format!("a pointer moves by a whole number of elements, not by {f}"),
                v => format!(
                    "a pointer moves by a whole number of elements, but `{}` is {}",
                    src(text, e.span),
                    v.type_name()
                ),
            })
            .at(e.span)
            .help(format!(
                "e.g. `a + n / 2`: `/` between integers drops the remainder, or `int({})`",
                src(text, e.span)
            ))),
        }
    }

    /// Where `a[start:stop]` (or a matrix's rows `m[r]`, `m[r0:r1]`) starts, in elements of the
    /// flat buffer: slices count from the end when negative, as the statement language's do,
    /// and move one element (or row) at a time, since a pointer cannot stride.
    fn slice_offset(&self, e: &Expr, indices: &[Index], name: &str, text: &str) -> Result<i128, Diagnostic> {
        let Some(buf) = self.buffer(name) else { return Ok(0) };
        let (rows, row_len, unit) = match buf.shape() {
            Shape::D1(n) => (n, 1, "element"),
            Shape::D2(r, c) => (r, c, "row"),
        };
        let whole = |x: &Expr| -> Result<i128, Diagnostic> { self.offset_amount(x, text) };
        // Negative positions count from the end, as in `a[-256:]`.
        let at = |v: i128| if v < 0 { v + rows as i128 } else { v };
        let (start, stop) = match indices {
            [Index::At(i)] if matches!(buf.shape(), Shape::D2(..)) => {
                let r = whole(i)?;
                if !(-(rows as i128)..rows as i128).contains(&r) {
                    return Err(Diagnostic::error(format!(
                        "row {r} is out of range for `{name}` ({rows} rows, valid 0..={} or -{rows}..=-1)",
                        rows.saturating_sub(1)
                    ))
                    .at(i.span)
                    .help(format!("`{name}[r]` passes a pointer to row r, `{name} + r * {row_len}`")));
                }
                (at(r), None)
            }
            [Index::Slice { start, stop, step, .. }] => {
                if let Some(step) = step {
                    let v = whole(step)?;
                    if v != 1 {
                        return Err(Diagnostic::error(format!(
                            "`{}` takes every {}{} {unit}, but a pointer can't stride: a kernel sees the elements one after another",
                            src(text, e.span),
                            v,
                            ordinal(v)
                        ))
                        .at(step.span)
                        .label("a step")
                        .help(format!(
                            "pass `{name}[start:stop]` with no step, and let the kernel stride (`p[i * {v}]`), or copy the elements out: `let part = {}`",
                            src(text, e.span)
                        )));
                    }
                }
                let start = start.as_ref().map(|s| whole(s)).transpose()?.map_or(0, at);
                let stop = stop.as_ref().map(|s| whole(s)).transpose()?.map(at);
                (start, stop)
            }
            _ => {
                return Err(Diagnostic::error(format!(
                    "`{}` is not one run of `{name}`'s elements, which is what a pointer points to",
                    src(text, e.span)
                ))
                .at(e.span)
                .help(if row_len > 1 {
                    format!(
                        "pass whole rows, `{name}[2]` or `{name}[2:4]`, or an offset in elements of the flat matrix, `{name} + (row * {row_len} + col)`"
                    )
                } else {
                    format!("pass `{name}[start:]` or `{name}[start:stop]`, or `{name} + start`")
                }));
            }
        };
        if let Some(stop) = stop
            && (stop < start || stop > rows as i128)
            && (0..=rows as i128).contains(&start)
        {
            let why = if stop < start { format!("before it starts, at {start}") } else { "past its end".to_string() };
            return Err(Diagnostic::error(format!(
                "`{}` ends at {unit} {stop}, {why}: `{name}` has {rows} {unit}s",
                src(text, e.span)
            ))
            .at(e.span)
            .help(format!(
                "a view's stop lies from its start to {rows}; leave it out to take the rest, `{name}[{start}:]`"
            )));
        }
        start.checked_mul(row_len as i128).ok_or_else(|| Diagnostic::error("this offset is too large").at(e.span))
    }

    /// A scalar parameter takes a number that fits its C type exactly.
    fn scalar_arg(&self, e: &Expr, param: &str, ty: Scalar, text: &str) -> Result<ScalarArg, Diagnostic> {
        if let ExprKind::Name(name) = &e.kind
            && let Some(buf) = self.buffer(name)
        {
            return Err(Diagnostic::error(format!(
                "`{name}` is a buffer ({}[{}]), but parameter `{param}` is `{}`",
                buf.dtype(),
                buf.shape(),
                ty.c_name()
            ))
            .at(e.span)
            .help(format!("to pass its length, write `len({name})`")));
        }
        // `a + 4` is a pointer here, though elsewhere in the statement language it adds 4 to
        // every element.
        if let Some(name) = self.pointer_base(e)
            && let Some(buf) = self.buffer(name)
        {
            return Err(Diagnostic::error(format!(
                "`{}` is a pointer into `{name}` ({}[{}]), but parameter `{param}` is `{}`",
                src(text, e.span),
                buf.dtype(),
                buf.shape(),
                ty.c_name()
            ))
            .at(e.span)
            .help(format!("pass it to a pointer parameter (`{} *`), or pass a number here", buf.dtype().c_name())));
        }
        let v = eval::eval(e, self, text)?;
        let range_err = |v: String| {
            let (lo, hi): (i128, i128) = match ty {
                Scalar::Bool => (0, 1),
                Scalar::I8 => (i8::MIN.into(), i8::MAX.into()),
                Scalar::U8 => (0, u8::MAX.into()),
                Scalar::I16 => (i16::MIN.into(), i16::MAX.into()),
                Scalar::U16 => (0, u16::MAX.into()),
                Scalar::I32 => (i32::MIN.into(), i32::MAX.into()),
                Scalar::U32 => (0, u32::MAX.into()),
                Scalar::I64 => (i64::MIN.into(), i64::MAX.into()),
                Scalar::U64 | Scalar::F32 | Scalar::F64 => (0, u64::MAX.into()),
            };
            Diagnostic::error(format!("{v} does not fit parameter `{param}` of type `{}` ({lo} to {hi})", ty.c_name()))
                .at(e.span)
                .help(if lo == 0 {
                    "unsigned parameters take no negative values: check the sign, or make the parameter `int`"
                        .to_string()
                } else {
                    "pass a smaller value, or make the parameter `long long` (64 bits)".to_string()
                })
        };
        let int = |i: i128| -> Result<ScalarArg, Diagnostic> {
            let s = i.to_string();
            Ok(match ty {
                Scalar::Bool => match i {
                    0 | 1 => ScalarArg::Bool(i == 1),
                    _ => return Err(range_err(s)),
                },
                Scalar::I8 => ScalarArg::I8(i8::try_from(i).map_err(|_| range_err(s))?),
                Scalar::U8 => ScalarArg::U8(u8::try_from(i).map_err(|_| range_err(s))?),
                Scalar::I16 => ScalarArg::I16(i16::try_from(i).map_err(|_| range_err(s))?),
                Scalar::U16 => ScalarArg::U16(u16::try_from(i).map_err(|_| range_err(s))?),
                Scalar::I32 => ScalarArg::I32(i32::try_from(i).map_err(|_| range_err(s))?),
                Scalar::U32 => ScalarArg::U32(u32::try_from(i).map_err(|_| range_err(s))?),
                Scalar::I64 => ScalarArg::I64(i64::try_from(i).map_err(|_| range_err(s))?),
                Scalar::U64 => ScalarArg::U64(u64::try_from(i).map_err(|_| range_err(s))?),
                Scalar::F32 => ScalarArg::F32(i as f32),
                Scalar::F64 => ScalarArg::F64(i as f64),
            })
        };
        match v {
            Value::Int(i) => int(i),
            Value::Bool(b) => int(b as i128),
            Value::Float(f) => match ty {
                Scalar::F32 => Ok(ScalarArg::F32(f as f32)),
                Scalar::F64 => Ok(ScalarArg::F64(f)),
                _ => Err(Diagnostic::error(format!(
                    "{f} is not a whole number, but parameter `{param}` is `{}`",
                    ty.c_name()
                ))
                .at(e.span)
                .help(format!("pass an integer, e.g. `int({})`", &text[e.span.lo as usize..e.span.hi as usize]))),
            },
            other => Err(Diagnostic::error(format!(
                "parameter `{param}` is `{}`, but this is {}",
                ty.c_name(),
                other.type_name()
            ))
            .at(e.span)),
        }
    }
}

/// A launch with the wrong number of arguments (of either language's kernel), with the kernel's
/// signature; when the one argument missing is a number right after an array (`k<<<1, 1>>>(a)`
/// for `k(float *a, int n)`, as a Numba habit writes it), the launch with `len(a)` added.
#[allow(clippy::too_many_arguments)]
pub(super) fn wrong_arg_count(
    launch: &Launch,
    text: &str,
    kernel: &str,
    takes: &str,
    params: usize,
    signature: &str,
    length_missing: bool,
    is_buffer: impl Fn(&str) -> bool,
) -> Diagnostic {
    let given = launch.args.len();
    let d = Diagnostic::error(format!(
        "`{kernel}` takes {takes} argument{}, but {given} {} given",
        if params == 1 { "" } else { "s" },
        if given == 1 { "was" } else { "were" },
    ))
    .at(launch.span);
    // The length of the array just before it: `(a)` for `(a, n)`, not `(a, n)` for `(a, n, m)`.
    let array = launch.args.last().and_then(|a| match &a.kind {
        ExprKind::Name(name) if is_buffer(name) => Some(name.as_str()),
        _ => None,
    });
    let typed = src(text, launch.span).trim_end();
    match (length_missing, array, typed.strip_suffix(')')) {
        (true, Some(array), Some(open)) => d.help(format!(
            "the kernel is `{signature}`: a kernel does not know its array's length, so pass it, `{open}, len({array}))`"
        )),
        _ => d.help(format!("the kernel is `{signature}`")),
    }
}

/// The text of `span` as the learner typed it.
fn src(text: &str, span: Span) -> &str {
    text.get(span.lo as usize..span.hi as usize).unwrap_or("")
}

/// `nd` of 2nd, `rd` of 3rd...
fn ordinal(n: i128) -> &'static str {
    match (n.rem_euclid(10), n.rem_euclid(100)) {
        (_, 11..=13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    }
}

pub(super) fn dtype_of(s: Scalar) -> Option<DType> {
    Some(match s {
        Scalar::F32 => DType::F32,
        Scalar::F64 => DType::F64,
        Scalar::I32 => DType::I32,
        Scalar::U32 => DType::U32,
        Scalar::I64 => DType::I64,
        Scalar::U64 => DType::U64,
        Scalar::Bool => DType::Bool,
        Scalar::I8 => DType::I8,
        Scalar::U8 => DType::U8,
        Scalar::I16 => DType::I16,
        Scalar::U16 => DType::U16,
    })
}

fn limit_of(what: &str, axis: usize) -> u32 {
    if what == "grid" { MAX_GRID[axis] } else { MAX_BLOCK[axis] }
}

/// CUDA's launch limits, each named in the message when broken.
fn check_limits(grid: Dim3, block: Dim3, launch: &Launch) -> Result<(), Diagnostic> {
    let axes = ["x", "y", "z"];
    for (i, (&b, &max)) in block.as_array().iter().zip(&MAX_BLOCK).enumerate() {
        if b > max {
            return Err(Diagnostic::error(format!(
                "block size {b} in {} is above CUDA's limit of {max} (block dimensions are at most (1024, 1024, 64))",
                axes[i]
            ))
            .at(launch.block.span)
            .help("use more blocks and fewer threads per block"));
        }
    }
    if block.count() > MAX_THREADS_PER_BLOCK {
        return Err(Diagnostic::error(format!(
            "{} threads per block ({block}) is above CUDA's limit of {MAX_THREADS_PER_BLOCK}",
            block.count()
        ))
        .at(launch.block.span)
        .help("a block holds at most 1024 threads: use more blocks, e.g. 256 threads per block"));
    }
    for (i, (&g, &max)) in grid.as_array().iter().zip(&MAX_GRID).enumerate() {
        if g > max {
            return Err(Diagnostic::error(format!(
                "grid size {g} in {} is above CUDA's limit of {max} (grids are at most (2^31-1, 65535, 65535) blocks)",
                axes[i]
            ))
            .at(launch.grid.span)
            .help("use a grid-stride loop so fewer blocks cover the data"));
        }
    }
    Ok(())
}

/// `NULL`, `nullptr` or `0` in a launch's argument list.
fn is_null(e: &Expr) -> bool {
    matches!(&e.kind, ExprKind::Int(0)) || matches!(&e.kind, ExprKind::Name(n) if n == "NULL" || n == "nullptr")
}

/// What a launch passes for a kernel parameter it leaves out: its default (the checker folded
/// it to a constant of the parameter's type).
fn default_arg(p: &crate::cuda::ast::Param) -> Option<Arg> {
    use crate::cuda::ast::ExprKind as C;
    let d = p.default.as_ref()?;
    Some(match (&p.ty, &d.kind) {
        (Type::Ptr { .. }, _) => Arg::Null,
        (Type::Scalar(s), C::FloatConst(f)) => match s {
            Scalar::F32 => Arg::Scalar(ScalarArg::F32(*f as f32)),
            _ => Arg::Scalar(ScalarArg::F64(*f)),
        },
        (Type::Scalar(s), C::IntConst(b)) => Arg::Scalar(match s {
            Scalar::Bool => ScalarArg::Bool(*b != 0),
            Scalar::I8 => ScalarArg::I8(*b as i8),
            Scalar::U8 => ScalarArg::U8(*b as u8),
            Scalar::I16 => ScalarArg::I16(*b as i16),
            Scalar::U16 => ScalarArg::U16(*b as u16),
            Scalar::I32 => ScalarArg::I32(*b as i32),
            Scalar::U32 => ScalarArg::U32(*b as u32),
            Scalar::I64 => ScalarArg::I64(*b as i64),
            Scalar::U64 => ScalarArg::U64(*b),
            Scalar::F32 => ScalarArg::F32(*b as i64 as f32),
            Scalar::F64 => ScalarArg::F64(*b as i64 as f64),
        }),
        _ => return None,
    })
}

/// The GPU backend that holds deferred results (it cannot have gone: only it defers them).
fn ready(
    backends: &mut super::backend::Backends,
) -> Result<&mut crate::backend::gpu::GpuBackend, crate::backend::BackendError> {
    backends.gpu().ok_or_else(|| crate::backend::BackendError::Unavailable("the GPU backend is gone".into()))
}

impl Session {
    /// Whether a launch left results on the GPU that the host has not read yet.
    pub(crate) fn has_deferred(&self) -> bool {
        self.work.buffers().iter().any(|(_, b)| b.on_device().is_some())
    }

    /// Read every result the GPU launches left on the device back into the buffers. Should they
    /// be gone (a worker died and could not make them again), the buffers keep the bytes they
    /// hold, and the message says so.
    pub fn settle(&mut self, out: &mut dyn Write) -> io::Result<()> {
        self.land()?;
        if !self.has_deferred() {
            return Ok(());
        }
        let Session { backends, work, .. } = self;
        let mut bufs: Vec<(&str, &mut crate::buffer::Buffer)> = work.buffers_mut().collect();
        let settled = ready(backends).and_then(|g| g.settle(&mut bufs));
        if let Err(e) = settled {
            for (_, b) in self.work.buffers_mut() {
                if b.on_device().is_some() {
                    b.drop_deferred();
                }
            }
            // Its "before" is gone with the results: `:why` and `cost` have no launch to look at.
            self.record.forget_last();
            writeln!(out, "{} {e}", self.options.style.error("error:"))?;
        }
        Ok(())
    }

    /// The last launch, with its "before" copies read back from the GPU where they were left
    /// (they are read only when something looks at them: `:why`, `cost`, a printed buffer's
    /// changed elements, a lesson's check). `None` when there is none, or it is gone.
    pub(crate) fn last_settled(&mut self, out: &mut dyn Write) -> io::Result<Option<&LastLaunch>> {
        self.settle(out)?;
        let deferred = self.record.last().is_some_and(|l| l.before.iter().any(|(_, b)| b.on_device().is_some()));
        if deferred {
            let mut befores: Vec<(&str, &mut crate::buffer::Buffer)> = match self.record.last_mut() {
                Some(l) => l.before.iter_mut().map(|(n, b)| (n.as_str(), b)).collect(),
                None => Vec::new(),
            };
            let settled = ready(&mut self.backends).and_then(|g| g.settle_befores(&mut befores));
            if let Err(e) = settled {
                self.record.forget_last();
                writeln!(out, "{} {e}", self.options.style.error("error:"))?;
            }
        }
        Ok(self.record.last())
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Options, Session, Status};
    use crate::backend::BackendKind;

    fn run(s: &mut Session, text: &str) -> (Status, String) {
        let mut out = Vec::new();
        let status = s.eval_text("t.gridlab", text, false, &mut out).unwrap();
        (status, String::from_utf8(out).unwrap())
    }

    const KERNELS: &str = "__global__ void h(float *a, int n) {\n    half2 v = __floats2half2_rn(1.0f, 2.0f);\n    if (threadIdx.x < n) a[threadIdx.x] = __high2float(v);\n}\n__global__ void k(__half *v) { v[0] = v[0]; }\n__global__ void plain(float *a) { a[0] = 7.0f; }\n";

    /// The session's path for GPU-only code, without a GPU: the session believes it runs on
    /// one, so definitions take the GPU's path, while launches reach the simulator (the only
    /// backend here), which refuses GPU-only kernels.
    #[test]
    fn gpu_only_kernels_are_defined_listed_checked_and_refused_by_the_simulator() {
        let mut s = Session::new(Options::default());
        s.backends.set_active(BackendKind::Gpu);
        let (status, out) = run(&mut s, KERNELS);
        assert_eq!(status, Status::Ok, "{out}");
        // A script is split into one input per item: one note each.
        assert_eq!(
            out,
            "note: `h` uses `half2`, which the simulator does not run; it runs on the GPU\n\
             defined kernel h(float *a, int n)\n\
             note: `k` uses `__half`, which the simulator does not run; it runs on the GPU\n\
             defined kernel k(__half *v)\n\
             defined kernel plain(float *a)\n"
        );

        let (_, out) = run(&mut s, ":kernels");
        assert!(out.contains("__global__ (GPU only)"), "{out}");
        assert_eq!(out.matches("(GPU only)").count(), 2, "{out}");

        run(&mut s, "let a = zeros(4)");
        // Arguments are checked as for any kernel.
        let (status, out) = run(&mut s, "h<<<1, 4>>>(a)");
        assert_eq!(status, Status::Error);
        assert!(out.contains("`h` takes 2 arguments, but 1 was given"), "{out}");
        let (status, out) = run(&mut s, "k<<<1, 1>>>(a)");
        assert_eq!(status, Status::Error);
        assert!(out.contains("gridlab cannot pass parameter `v` of `k`: its type is `__half *`"), "{out}");
        // The simulator says it cannot, where, and what to do.
        let (status, out) = run(&mut s, "h<<<1, 4>>>(a, len(a))");
        assert_eq!(status, Status::Error);
        let out = out.replace("\n       ", " ");
        assert!(
            out.contains("error: the simulator cannot run `h`: it uses `half2`, which runs on the GPU only"),
            "{out}"
        );
        assert!(out.contains("--> t.gridlab:2:5"), "{out}");
        assert!(out.contains("`:backend gpu`"), "{out}");

        // On the simulator the GPU-only kernels stay, refused the same way, and the rest works.
        assert_eq!(s.switch_backend(BackendKind::Sim).unwrap(), "backend: sim");
        let (status, out) = run(&mut s, "plain<<<1, 1>>>(a)\nexpect a[0] == 7");
        assert_eq!(status, Status::Ok, "{out}");
        let (status, out) = run(&mut s, "h<<<1, 4>>>(a, len(a))");
        assert_eq!(status, Status::Error);
        assert!(out.contains("the simulator cannot run `h`"), "{out}");
        let (status, out) = run(&mut s, ":race h<<<1, 4>>>(a, len(a))");
        assert_eq!(status, Status::Error);
        assert!(out.contains("the simulator cannot run `h`"), "{out}");
        assert!(s.module().gpu_only_kernel("h").is_some());
        // New code outside the subset is the simulator's error, as before.
        let (status, out) = run(&mut s, "__global__ void v2(__half *v) { v[0] = v[0]; }");
        assert_eq!(status, Status::Error);
        assert!(out.contains("`__half` runs on the GPU backend only"), "{out}");
        assert!(s.module().gpu_only_kernel("v2").is_none());
    }

    /// The GPU-gated script's definitions take the GPU's path, checked here without a GPU.
    #[test]
    fn the_gpu_scripts_definitions_are_accepted() {
        let mut s = Session::new(Options::default());
        s.backends.set_active(BackendKind::Gpu);
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/gpu/gpu_only.gridlab");
        let text = std::fs::read_to_string(path).unwrap();
        let defs: String = text.split("\nlet ").next().unwrap().to_string();
        let (status, out) = run(&mut s, &defs);
        assert_eq!(status, Status::Ok, "{out}");
        assert!(
            out.contains(
                "note: `step` uses template argument deduction, which the simulator does not run; it runs on the GPU"
            ),
            "{out}"
        );
        assert!(
            out.contains("defined kernel step(float *out, const float *pos, const float * __restrict__ vel, int n)"),
            "{out}"
        );
        assert!(s.module().kernel("fill").is_some(), "within the subset: the simulator's");
        let (status, out) = run(&mut s, &text[defs.len()..]);
        assert_eq!(status, Status::Error, "the simulator refuses `step`:\n{out}");
        assert!(out.contains("the simulator cannot run `step`: it uses template argument deduction"), "{out}");
    }

    /// The errors issue 14 found misleading, each as the learner now sees it.
    #[test]
    fn refusals_name_the_construct_keep_the_defines_and_are_remembered() {
        let mut s = Session::new(Options::default());
        s.backends.set_active(BackendKind::Sim);
        let (status, out) = run(
            &mut s,
            "#define N 8\n#define TILE 4\n__global__ void k(int *a) {\n    again: a[0] -= 1;\n    if (a[0] > 0) goto again;\n    a[0] = TILE;\n}\nlet a = zeros(N, i32)\nk<<<1, 1>>>(a)\n",
        );
        assert_eq!(status, Status::Error);
        // The refusal says that the GPU runs it; the snippet's #defines are kept, so `N` works.
        assert!(out.contains("note: the GPU backend runs this: switch with `:backend gpu`"), "{out}");
        assert!(out.contains("a backward `goto` is not supported"), "{out}");
        assert!(out.contains("kept the snippet's #defines: `N`, `TILE`"), "{out}");
        assert!(!out.contains("`N` is not defined"), "{out}");
        // Launching the refused kernel points at its definition.
        assert!(out.contains("`k` is not defined: its definition was refused"), "{out}");
        assert!(out.contains("the refused definition starts at t.gridlab:3:1"), "{out}");
        assert!(!out.contains("define it first"), "{out}");
        // A genuine mistake does not claim that the GPU would run it.
        let (_, out) = run(&mut s, "__global__ void j(int *a) { a[0] = b; }\n");
        assert!(!out.contains(":backend gpu"), "{out}");
        // A template launch is a launch, not a chained comparison.
        let (status, out) = run(
            &mut s,
            "template <int B> __global__ void fill(int *a) { a[threadIdx.x] = B; }\nlet b = zeros(4, i32)\nfill<7><<<1, 4>>>(b)\nexpect b == full(4, 7, i32)\nfill<<<1, 4>>>(b)\nk2<3><<<1, 1>>>(b)\n",
        );
        assert_eq!(status, Status::Error, "{out}");
        assert!(out.contains("fill<7><<<1, 4>>>: 1 x 4 = 4 threads on sim"), "{out}");
        assert!(!out.contains("comparisons don't chain"), "{out}");
        assert!(out.contains("`fill` is a template kernel: give its template arguments"), "{out}");
        assert!(out.contains("no template kernel named `k2`"), "{out}");
        // A pointer into a buffer is a view of it: the kernel writes into the buffer.
        let (status, out) =
            run(&mut s, "let v = zeros(8, i32)\nfill<2><<<1, 4>>>(v + 4)\nexpect v == [0, 0, 0, 0, 2, 2, 2, 2]\n");
        assert_eq!(status, Status::Ok, "{out}");
        let (status, out) = run(&mut s, "fill<3><<<1, 2>>>(v[2:4])\nexpect v == [0, 0, 3, 3, 2, 2, 2, 2]\n");
        assert_eq!(status, Status::Ok, "{out}");
        // A reference parameter runs; an rvalue reference is named, not a parse error.
        let (status, out) = run(&mut s, "__device__ void inc(float &x) { x += 1.0f; }\n");
        assert_eq!(status, Status::Ok, "{out}");
        assert!(out.contains("defined device function inc(float &x)"), "{out}");
        let (_, out) = run(&mut s, "__device__ void inc2(float &&x) { x += 1.0f; }\n");
        assert!(out.contains("rvalue references (`&&`) are not supported by the simulator"), "{out}");
        assert!(out.contains("note: the GPU backend runs this"), "{out}");
        assert!(!out.contains("expected `)`"), "{out}");
    }

    /// `a + 4`, `a[4:]`, `4 + a` and a matrix's rows are views: the kernel's pointer starts in
    /// the buffer, writes land in it, accesses before the view's start are the buffer's, and
    /// findings name the buffer with its own indices, on every path that runs a launch.
    #[test]
    fn views_write_into_their_buffer_and_findings_name_it() {
        let mut s = Session::new(Options::default());
        s.backends.set_active(BackendKind::Sim);
        let (status, out) = run(
            &mut s,
            "__global__ void put(float *p, int n, float v) { if (threadIdx.x < n) p[threadIdx.x] = v; }\n\
             __global__ void back(float *p) { p[-1] = p[0]; }\n\
             let a = zeros(12)\n\
             put<<<1, 32>>>(a + 4, 2, 1)\n\
             put<<<1, 32>>>(a[8:], 2, 2)\n\
             put<<<1, 32>>>(len(a) / 2 + a, 1, 3)\n\
             back<<<1, 1>>>(a + 9)\n\
             expect a == [0, 0, 0, 0, 1, 1, 3, 0, 2, 2, 0, 0]\n\
             let m = zeros((3, 4))\n\
             put<<<1, 32>>>(m[1], 4, 5)\n\
             put<<<1, 32>>>(m[-1:], 1, 6)\n\
             put<<<1, 32>>>(m + 3, 1, 7)\n\
             expect m == [[0, 0, 0, 7], [5, 5, 5, 5], [6, 0, 0, 0]]\n\
             expect clean\n",
        );
        assert_eq!(status, Status::Ok, "{out}");

        // A race through `p = a + 4` is on `a[4]`, not `p[0]`.
        let racy = "__global__ void same(float *p) { p[0] += 1.0f; }\nsame<<<4, 32>>>(a + 4)\n";
        let (_, out) = run(&mut s, racy);
        assert!(out.contains("data race on `a`"), "{out}");
        assert!(out.contains(" a[4]"), "{out}");
        assert!(!out.contains("wrote p[") && !out.contains("read p[") && !out.contains("`p` in the kernel"), "{out}");
        // Advice is code for the kernel, where the element is `p[0]`.
        assert!(out.contains("atomicAdd(&p[0], ...)"), "{out}");
        let (_, out) = run(&mut s, ":why");
        assert!(out.contains("race on a[4]"), "{out}");
        let (status, out) = run(&mut s, ":race same<<<4, 32>>>(a + 4)");
        assert_eq!(status, Status::Ok, "{out}");
        assert!(out.contains("a[4]"), "{out}");
        // Out of bounds is against the whole buffer: `p[2]` of `a[10:]` is `a[12]`, past its end.
        let (_, out) = run(&mut s, "put<<<1, 4>>>(a[10:], 4, 9)\n");
        let flat = out.replace("\n         ", " ");
        assert!(flat.contains("2 threads wrote past the end of `a` (length 12): indices 12..13"), "{out}");
        assert!(out.contains("block 0 thread 2 wrote a[12]"), "{out}");
        // The advice counts in the kernel's own index, from where `p` starts.
        assert!(flat.contains("`p` is `a + 10`: from there to the end of `a` there are 2 elements"), "{out}");
        // The elements inside were written; the launch ran on the buffer.
        let (status, out) = run(&mut s, "expect a[10:] == [9, 9]\n");
        assert_eq!(status, Status::Ok, "{out}");
        // The measured and costed paths take views too.
        for cmd in [
            ":time put<<<1, 32>>>(a + 4, 2, 1)",
            ":map put<<<1, 32>>>(a + 4, 2, 1)",
            "cost put<<<1, 32>>>(a + 4, 2, 1)",
        ] {
            let (status, out) = run(&mut s, cmd);
            assert_eq!(status, Status::Ok, "{cmd}: {out}");
        }
        let (_, out) = run(&mut s, ":map put<<<1, 32>>>(a + 4, 2, 1)");
        assert!(out.contains("2 of 12 written"), "{out}");
    }
}
