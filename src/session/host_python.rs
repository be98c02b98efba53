//! Host Python at the prompt: the loops, list comprehensions, f-strings, plain functions and
//! `assert np.allclose(...)` that Numba tutorials write around their kernels.
//!
//! gridlab's statement language reads numpy's names (`a = np.zeros(n, np.float32)`,
//! `print(a)`), and runs first: lessons and the CUDA C course never need Python. What it cannot
//! run, and what is plainly Python (a `for` block, a plain `def`), goes to one real Python
//! interpreter per session (`python::host`, `assets/python/gridlab_prompt.py`), started the
//! first time it is needed. The session's buffers and scalars stay the one workspace: each
//! input sends them to Python, runs there, and takes back every array and number it created or
//! changed. A launch inside the Python (`for _ in range(3): k[4, 256](a)`) comes back here and
//! runs as the statement `k[4, 256](a)` at its line, so it is reported, recorded for `:race`
//! and `:why`, and checked like one typed. A failing `assert` is a failed expectation at its
//! line; an exception is an error at its line.

use std::io::{self, Write};

use serde_json::{Value as Json, json};

use super::{HostGlobal, Lang, Session, Status};
use crate::buffer::Shape;
use crate::diag::{Diagnostic, SourceId, Span};
use crate::dtype::DType;
use crate::python::host::{self, Host};
use crate::python::{self, ArgType, Global, types};
use crate::script::{self, Input, InputKind, ast::StmtKind};
use crate::value::Value;

/// The session's interpreter, started on first need. A copy of a session starts its own.
#[derive(Default)]
pub(crate) struct HostSlot {
    host: Option<Host>,
    /// Python could not start here: why, said once per session.
    unavailable: Option<String>,
}

impl Clone for HostSlot {
    fn clone(&self) -> HostSlot {
        HostSlot { host: None, unavailable: self.unavailable.clone() }
    }
}

impl std::fmt::Debug for HostSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.host.is_some() { "HostSlot(running)" } else { "HostSlot(none)" })
    }
}

/// A launch a Python host sent (`launch` message), made ready to run: its arrays are in the
/// session's buffers, and `statement` is the launch as a statement (`k[4, 256](a, 3)`).
pub struct HostLaunch {
    pub statement: String,
    /// The buffers it passes, in the order their bytes go back.
    pub arrays: Vec<String>,
}

/// The module globals a `define` message says a kernel reads (Numba freezes them in).
pub fn host_globals(msg: &Json) -> Vec<(String, HostGlobal)> {
    let Some(map) = msg["globals"].as_object() else { return Vec::new() };
    map.iter()
        .filter_map(|(k, v)| {
            let g = match v["kind"].as_str() {
                Some("host_function") => Some(HostGlobal::Value(Global::HostFunction)),
                Some("module" | "path") => v["path"].as_str().map(|p| HostGlobal::Path(p.to_string())),
                Some("int") => v["value"].as_i64().map(|i| HostGlobal::Value(Global::Int(i))),
                Some("float") => v["value"].as_f64().map(|f| HostGlobal::Value(Global::Float(f))),
                Some("bool") => v["value"].as_bool().map(|b| HostGlobal::Value(Global::Bool(b))),
                Some("dtype") => {
                    v["name"].as_str().and_then(types::from_name).map(|d| HostGlobal::Value(Global::Dtype(d)))
                }
                Some("array") => {
                    let dtype = v["dtype"].as_str().and_then(types::from_name)?;
                    let shape = v["shape"].as_array()?.iter().filter_map(Json::as_i64).collect();
                    let values = v["values"].as_array()?.iter().filter_map(Json::as_f64).collect();
                    Some(HostGlobal::Value(Global::Array { dtype, shape, values }))
                }
                _ => None,
            }?;
            Some((k.clone(), g))
        })
        .collect()
}

/// A `define` message's kernel as an input at its own file and line.
pub fn host_definition(msg: &Json) -> Input {
    let source = msg["source"].as_str().unwrap_or("").trim_end();
    let line = msg["line"].as_u64().unwrap_or(1) as u32;
    Input {
        kind: InputKind::Python,
        text: source.to_string(),
        line,
        end_line: line + source.lines().count().saturating_sub(1) as u32,
    }
}

impl Session {
    /// Take a `launch` message: its arrays become buffers named as the call site names them
    /// (`data` holds their bytes in order), its numbers keep their types (`np.float32(2)`), and
    /// the launch becomes a statement. The error says what arrived wrong.
    pub fn host_launch(&mut self, msg: &Json, data: &[u8]) -> Result<HostLaunch, String> {
        let kernel = msg["kernel"].as_str().unwrap_or("");
        let dims = |v: &Json| -> String {
            let parts: Vec<String> = v
                .as_array()
                .map(|a| a.iter().map(|x| x.as_u64().unwrap_or(0).to_string()).collect())
                .unwrap_or_default();
            if parts.len() == 1 { parts[0].clone() } else { format!("({})", parts.join(", ")) }
        };
        let mut config = format!("{}, {}", dims(&msg["grid"]), dims(&msg["block"]));
        let shared = msg["shared"].as_u64().unwrap_or(0);
        if shared > 0 {
            config.push_str(&format!(", 0, {shared}"));
        }
        let mut args = Vec::new();
        let mut arrays = Vec::new();
        let mut arg_types = Vec::new();
        let mut at = 0usize;
        for a in msg["args"].as_array().map(Vec::as_slice).unwrap_or(&[]) {
            let arg_name = a["name"].as_str().unwrap_or("arg");
            let dtype = a["dtype"].as_str().and_then(types::from_name);
            match (a["kind"].as_str(), dtype) {
                (Some("array"), Some(dtype)) => {
                    let shape: Vec<usize> = a["shape"]
                        .as_array()
                        .map(|s| s.iter().map(|x| x.as_u64().unwrap_or(0) as usize).collect())
                        .unwrap_or_default();
                    let n = shape.iter().product::<usize>() * dtype.size();
                    let bytes = data.get(at..at + n).ok_or_else(|| format!("array `{arg_name}` arrived short"))?;
                    at += n;
                    let fresh = a["fresh"].as_bool().unwrap_or(false);
                    self.set_host_array(arg_name, dtype, &shape, bytes, fresh)?;
                    args.push(arg_name.to_string());
                    arrays.push(arg_name.to_string());
                    arg_types.push(None);
                }
                (Some("scalar"), Some(dtype)) => {
                    let v = &a["value"];
                    let text = if dtype == DType::Bool {
                        if v.as_bool().unwrap_or(false) { "true".to_string() } else { "false".to_string() }
                    } else if dtype.is_float() {
                        let f = v.as_f64().unwrap_or(0.0);
                        if !f.is_finite() {
                            return Err(format!("`{arg_name}` is {f}: gridlab passes finite numbers to kernels"));
                        }
                        format!("{f:?}")
                    } else {
                        v.to_string()
                    };
                    args.push(text);
                    arg_types.push(Some(ArgType::Scalar(dtype)));
                }
                _ => return Err(format!("argument `{arg_name}` is neither an array nor a number gridlab knows")),
            }
        }
        self.python_next_types(arg_types);
        let statement = format!("{kernel}[{config}]({})", args.join(", "));
        Ok(HostLaunch { statement, arrays })
    }

    /// After a host launch ran: its arrays' bytes, in the order they came, for the host to copy
    /// back into its own arrays.
    pub fn host_launch_results(&self, launch: &HostLaunch) -> Result<Vec<u8>, String> {
        let mut back = Vec::new();
        for a in &launch.arrays {
            let b = self.buffer(a).ok_or_else(|| format!("array `{a}` is gone after the launch"))?;
            back.extend_from_slice(b.bytes());
        }
        Ok(back)
    }
}

/// Buffers larger than this in all are sent to Python only when the input names them.
const SEND_ALL_BELOW: usize = 64 << 20;

impl Session {
    /// Whether a statement gridlab's statement language cannot run should be tried as host
    /// Python: the learner writes Python (`--lang python`, `:lang python`, or, with no
    /// language chosen, a Python kernel defined). A CUDA C learner keeps gridlab's messages.
    pub(super) fn python_host_wanted(&self) -> bool {
        match self.options.lang {
            Some(lang) => lang == Lang::Python,
            None => !self.python_kernel_names().is_empty(),
        }
    }

    /// Run the input `id` as host Python. `said` is what gridlab's statement language said of
    /// it: shown instead when there is no Python to run it, and instead of Python's exception
    /// when `said_first` (gridlab's message says more about the learner's mistake than, say,
    /// an `IndexError` does).
    pub(super) fn host_python(
        &mut self,
        id: SourceId,
        said: Option<&[u8]>,
        said_first: bool,
        out: &mut dyn Write,
    ) -> io::Result<Status> {
        let (name, text, first) = match self.work.sources().get(id) {
            Some(f) => (f.name.clone(), f.text.clone(), f.first_line),
            None => return Ok(Status::Error),
        };
        if let Err(why) = self.start_host() {
            if let Some(said) = said {
                out.write_all(said)?;
            }
            let d = Diagnostic::error("this is host Python, and gridlab has no Python to run it")
                .at(Span::new(id, 0, text.lines().next().map_or(0, str::len)))
                .note(why)
                .help("install Python 3 with numpy (`python3 -m pip install numpy`, or set GRIDLAB_PYTHON), or write it in gridlab's statements: `a = np.zeros(n, np.float32)`, `print(a)`, `expect a == b`");
            return self.report(&d, out);
        }
        let (header, payload) = self.workspace_message(&name, &text, first);
        let instead = if said_first { said } else { None };
        let result = self.converse_host(id, &name, first, (&header, &payload), instead, out);
        match result {
            Ok(status) => Ok(status),
            Err(e) if e.kind() == io::ErrorKind::Other && e.to_string().starts_with("gridlab:") => Err(e),
            Err(e) => {
                // The interpreter died (killed, out of memory, a crash in an extension): say so,
                // start a fresh one next time. The session's buffers are as the last sync left them.
                let mut host = self.work.python_mut().host.host.take();
                let how = host.as_mut().map(Host::stop).unwrap_or_default();
                let stderr = host.as_mut().map(Host::stderr).unwrap_or_default();
                let mut d = Diagnostic::error(format!("Python stopped while running this input ({how}: {e})"))
                    .at(Span::new(id, 0, text.lines().next().map_or(0, str::len)))
                    .help("gridlab's buffers are as they were after the last Python input; the next one starts a fresh interpreter, whose own names (functions, lists) are gone");
                if !stderr.trim().is_empty() {
                    d = d.note(stderr.trim_end().to_string());
                }
                self.report(&d, out)
            }
        }
    }

    /// A statement: gridlab's statement language runs it when it can; host Python when it
    /// cannot and the text is Python (`[x * 2 for x in a]`, `print(f"{a.sum()}")`,
    /// `b = np.cumsum(a)`). Only statements that change nothing before they fail are tried
    /// again as Python: a launch, an `expect` or `cost` is never run twice.
    pub(super) fn statement_or_host(&mut self, id: SourceId, out: &mut dyn Write) -> io::Result<Status> {
        if !self.python_host_wanted() {
            return self.statement(id, out);
        }
        let text = self.text(id);
        match script::parse_statement(id, &text) {
            // What the statement language cannot read, Python may: `[x * x for x in a]`,
            // `print(f"{n} done")`. Where Python fails too, a habit's message (`printf(...)`,
            // `cudaMemcpy(...)` at the prompt) says more than a `NameError`.
            Err(_) if python::parse::parses(&text) => {
                let mut said = Vec::new();
                self.statement(id, &mut said)?;
                let habit = script::habits::is_habit(id, &text);
                self.host_python(id, Some(&said), habit, out)
            }
            // What it read but could not evaluate (`a.sum()`, `np.cumsum(a)`,
            // `cuda.to_device(a)`): Python's answer, or gridlab's message if Python fails too.
            Ok(stmt) if changes_nothing_first(&stmt.kind) => {
                let mut said = Vec::new();
                let status = self.statement(id, &mut said)?;
                if status == Status::Error && python::parse::parses(&text) && self.start_host().is_ok() {
                    return self.host_python(id, Some(&said), true, out);
                }
                out.write_all(&said)?;
                Ok(status)
            }
            _ => self.statement(id, out),
        }
    }

    fn start_host(&mut self) -> Result<(), String> {
        if self.work.python().host.host.is_some() {
            return Ok(());
        }
        if let Some(why) = &self.work.python().host.unavailable {
            return Err(why.clone());
        }
        let python = host::interpreter();
        let started = Host::start("gridlab_prompt.py", &[]).map_err(|e| format!("`{python}` could not start ({e})"));
        let mut h = match started {
            Ok(h) => h,
            Err(why) => {
                self.work.python_mut().host.unavailable = Some(why.clone());
                return Err(why);
            }
        };
        let why = match h.receive() {
            Ok(Some((hello, _))) if hello["op"] == "ready" => {
                self.work.python_mut().host.host = Some(h);
                return Ok(());
            }
            Ok(Some((hello, _))) if hello["op"] == "missing" => {
                format!("`{python}` has no {}", hello["what"].as_str().unwrap_or("numpy"))
            }
            _ => {
                let how = h.stop();
                let err = h.stderr();
                format!(
                    "`{python}` ended as it started ({how}){}",
                    if err.is_empty() { String::new() } else { format!(": {}", err.trim_end()) }
                )
            }
        };
        self.work.python_mut().host.unavailable = Some(why.clone());
        Err(why)
    }

    /// The `exec` message: the input and the session's workspace.
    fn workspace_message(&self, file: &str, text: &str, first: u32) -> (Json, Vec<u8>) {
        let total: usize = self.work.buffers().iter().map(|(_, b)| b.bytes().len()).sum();
        let named = names_in(text);
        let mut arrays = Vec::new();
        let mut payload = Vec::new();
        for (name, b) in self.work.buffers() {
            if total > SEND_ALL_BELOW && !named.contains(name) {
                continue;
            }
            let shape: Vec<usize> = match self.work.python().host_shape(name) {
                Some(s) if s.iter().product::<usize>() == b.len() => s.to_vec(),
                _ => match b.shape() {
                    Shape::D1(n) => vec![n],
                    Shape::D2(r, c) => vec![r, c],
                },
            };
            arrays.push(json!({"name": name, "dtype": types::numba_name(b.dtype()), "shape": shape}));
            payload.extend_from_slice(b.bytes());
        }
        let mut scalars = serde_json::Map::new();
        for (name, v) in self.work.scalars() {
            let s = match v {
                Value::Int(i) => match i64::try_from(*i) {
                    Ok(i) => json!({"kind": "int", "value": i}),
                    Err(_) => json!({"kind": "int", "value": i.to_string().parse::<f64>().unwrap_or(0.0)}),
                },
                Value::Float(f) if f.is_finite() => json!({"kind": "float", "value": f}),
                Value::Float(f) => json!({"kind": "float", "value": format!("{f}").replace("NaN", "nan")}),
                Value::Bool(b) => json!({"kind": "bool", "value": b}),
                Value::Dim3(d) => json!({"kind": "tuple", "value": d}),
                Value::Array(_) => continue,
            };
            scalars.insert(name.clone(), s);
        }
        let mut kernels: Vec<String> = self.work.module().kernel_names().iter().map(|s| s.to_string()).collect();
        kernels.extend(self.python_kernel_names().iter().map(|s| s.to_string()));
        // Names gridlab's module owns (kernels, functions, `__device__` variables) never come back as data.
        let mut skip = kernels.clone();
        skip.extend(self.work.module().program().globals.iter().map(|g| g.var.name.clone()));
        let mut source = String::new();
        for line in &self.work.python().import_lines {
            source.push_str(line);
            source.push('\n');
        }
        let header = json!({
            "op": "exec",
            "file": file,
            "line": first,
            "source": text,
            "imports": source,
            "arrays": arrays,
            "scalars": scalars,
            "kernels": kernels,
            "skip": skip,
        });
        (header, payload)
    }

    /// Send the input and answer Python until it is done.
    fn converse_host(
        &mut self,
        id: SourceId,
        file: &str,
        first: u32,
        (header, payload): (&Json, &[u8]),
        instead: Option<&[u8]>,
        out: &mut dyn Write,
    ) -> io::Result<Status> {
        self.host()?.send(header, payload)?;
        let mut status = Status::Ok;
        loop {
            let Some((msg, data)) = self.host()?.receive()? else {
                return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "it ended"));
            };
            match msg["op"].as_str().unwrap_or("") {
                "out" => out.write_all(msg["text"].as_str().unwrap_or("").as_bytes())?,
                "define" => {
                    let reply = self.host_define(&msg, file, out)?;
                    if !reply {
                        status = Status::Error;
                    }
                    let answer = if reply {
                        json!({"ok": true})
                    } else {
                        json!({"ok": false, "error": "gridlab refused the kernel (see above)"})
                    };
                    self.host()?.send(&answer, &[])?;
                }
                "launch" => {
                    let (answer, back) = self.run_host_launch(&msg, &data, file, out)?;
                    if answer["ok"] != true {
                        status = Status::Error;
                    }
                    self.host()?.send(&answer, &back)?;
                }
                "assert" => {
                    let line = msg["line"].as_u64().unwrap_or(first as u64) as u32;
                    let message = msg["message"].as_str().unwrap_or("");
                    let source = msg["source"].as_str().unwrap_or("").trim();
                    let mut said = format!("{file}:{line}: `{source}` did not hold");
                    if !message.is_empty() {
                        said.push_str(&format!(": {message}"));
                    }
                    writeln!(out, "{} {said}", self.options.style.error("expect failed:"))?;
                    status = Status::ExpectFailed;
                }
                "exception" if instead.is_some() => {
                    out.write_all(instead.unwrap_or_default())?;
                    status = Status::Error;
                }
                "exception" => {
                    let line = msg["line"].as_u64().unwrap_or(first as u64) as u32;
                    let kind = msg["kind"].as_str().unwrap_or("Exception");
                    let message = msg["message"].as_str().unwrap_or("");
                    let tb = msg["traceback"].as_str().unwrap_or("");
                    if !tb.is_empty() {
                        write!(out, "{}", self.options.style.dim(tb))?;
                    }
                    let mut d = Diagnostic::error(format!("{kind}: {message}"))
                        .at(line_span(id, &self.text(id), first, line))
                        .label("raised here");
                    if let Some(help) = exception_help(kind, message) {
                        d = d.help(help);
                    }
                    self.report(&d, out)?;
                    status = Status::Error;
                }
                "sync" => self.host_sync(&msg, &data, out)?,
                "done" => return Ok(status),
                other => {
                    let e = format!("gridlab: Python sent a message gridlab does not know (`{other}`)");
                    return Err(io::Error::other(e));
                }
            }
        }
    }

    fn host(&mut self) -> io::Result<&mut Host> {
        self.work
            .python_mut()
            .host
            .host
            .as_mut()
            .ok_or_else(|| io::Error::new(io::ErrorKind::BrokenPipe, "no interpreter"))
    }

    /// A `@cuda.jit` function defined in the Python: define it here, as if typed.
    fn host_define(&mut self, msg: &Json, file: &str, out: &mut dyn Write) -> io::Result<bool> {
        self.python_globals(host_globals(msg));
        let status = self.eval(file, &host_definition(msg), out)?;
        Ok(status != Status::Error)
    }

    /// A launch from the Python runs as a statement at its line.
    fn run_host_launch(
        &mut self,
        msg: &Json,
        data: &[u8],
        file: &str,
        out: &mut dyn Write,
    ) -> io::Result<(Json, Vec<u8>)> {
        let line = msg["line"].as_u64().unwrap_or(1) as u32;
        let refuse = |this: &Session, out: &mut dyn Write, why: String| -> io::Result<(Json, Vec<u8>)> {
            writeln!(out, "{} {file}:{line}: {why}", this.options.style.error("error:"))?;
            Ok((json!({"ok": false, "error": why}), Vec::new()))
        };
        let launch = match self.host_launch(msg, data) {
            Ok(l) => l,
            Err(why) => return refuse(self, out, why),
        };
        let input = Input { kind: InputKind::Statement, text: launch.statement.clone(), line, end_line: line };
        if self.eval(file, &input, out)? == Status::Error {
            return Ok((json!({"ok": false, "error": "the launch did not run (see above)"}), Vec::new()));
        }
        match self.host_launch_results(&launch) {
            Ok(back) => Ok((json!({"ok": true, "time_ms": self.last_kernel_ms().unwrap_or(0.0)}), back)),
            Err(why) => refuse(self, out, why),
        }
    }

    /// What the Python created or changed comes back as buffers and scalars.
    fn host_sync(&mut self, msg: &Json, data: &[u8], out: &mut dyn Write) -> io::Result<()> {
        let mut at = 0usize;
        for a in msg["arrays"].as_array().map(Vec::as_slice).unwrap_or(&[]) {
            let name = a["name"].as_str().unwrap_or("");
            let Some(dtype) = a["dtype"].as_str().and_then(types::from_name) else { continue };
            let shape: Vec<usize> = a["shape"]
                .as_array()
                .map(|s| s.iter().map(|x| x.as_u64().unwrap_or(0) as usize).collect())
                .unwrap_or_default();
            let n = shape.iter().product::<usize>() * dtype.size();
            let Some(bytes) = data.get(at..at + n) else { break };
            at += n;
            let total: usize =
                self.work.buffers().iter().filter(|(b, _)| b != name).map(|(_, b)| b.bytes().len()).sum();
            if (total + n) as u64 > self.options.max_alloc {
                let why = format!(
                    "`{name}` ({}) stays in Python only: gridlab's buffers would pass their limit of {}",
                    crate::diag::text::human_bytes(n as u64),
                    crate::diag::text::human_bytes(self.options.max_alloc)
                );
                writeln!(out, "{} {why}", self.options.style.warn("warning:"))?;
                continue;
            }
            let fresh = a["fresh"].as_bool().unwrap_or(false);
            self.work.remove_scalars(|s| s == name);
            if let Err(e) = self.set_host_array(name, dtype, &shape, bytes, fresh) {
                writeln!(out, "{} {e}", self.options.style.warn("warning:"))?;
            }
        }
        if let Some(map) = msg["scalars"].as_object() {
            for (name, s) in map {
                let value = match s["kind"].as_str() {
                    Some("bool") => s["value"].as_bool().map(Value::Bool),
                    Some("int") => s["value"]
                        .as_i64()
                        .map(|i| Value::Int(i as i128))
                        .or_else(|| s["value"].as_u64().map(|u| Value::Int(u as i128))),
                    Some("float") => s["value"]
                        .as_f64()
                        .or_else(|| s["value"].as_str().and_then(|t| t.parse().ok()))
                        .map(Value::Float),
                    _ => None,
                };
                if let Some(v) = value {
                    self.bind(name.clone(), v);
                }
            }
        }
        Ok(())
    }
}

/// Statements whose failure leaves the session as it was (the value is computed before it is
/// stored or shown).
fn changes_nothing_first(kind: &StmtKind) -> bool {
    matches!(
        kind,
        StmtKind::Let { .. }
            | StmtKind::Assign { .. }
            | StmtKind::SetSymbol { .. }
            | StmtKind::Print(_)
            | StmtKind::Inspect(_)
    )
}

/// The identifiers in `text`: which buffers an input can name.
fn names_in(text: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut word = String::new();
    for c in text.chars().chain(std::iter::once(' ')) {
        if c.is_alphanumeric() || c == '_' {
            word.push(c);
        } else if !word.is_empty() {
            if !word.starts_with(|d: char| d.is_ascii_digit()) {
                names.push(std::mem::take(&mut word));
            }
            word.clear();
        }
    }
    names
}

/// The span of line `line` (the learner's numbering) of an input that starts at line `first`.
fn line_span(id: SourceId, text: &str, first: u32, line: u32) -> Span {
    let want = line.saturating_sub(first) as usize;
    let mut at = 0;
    for (i, l) in text.split('\n').enumerate() {
        if i == want {
            let indent = l.len() - l.trim_start().len();
            return Span::new(id, at + indent, at + l.len());
        }
        at += l.len() + 1;
    }
    Span::new(id, 0, text.find('\n').unwrap_or(text.len()))
}

/// What to do about a Python exception, where gridlab can say more than its message.
fn exception_help(kind: &str, message: &str) -> Option<String> {
    match kind {
        "NameError" => Some(
            "a name gets its value before it is used: gridlab's buffers and scalars, kernels and what earlier Python inputs defined are all in scope".to_string(),
        ),
        "ModuleNotFoundError" => Some(format!("{message}: install it for this Python, or leave it out")),
        "IndentationError" | "TabError" => Some("indent a block's lines by the same amount (4 spaces is usual)".to_string()),
        _ => None,
    }
}
