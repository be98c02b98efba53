//! Running a Python program (`gridlab replay program.py`, `gridlab run program.py`): a Numba
//! tutorial as written, its host code in Python, its kernels in gridlab.
//!
//! The host code is ordinary Python and numpy, so a real interpreter runs it: gridlab starts
//! `python3` (or `$GRIDLAB_PYTHON`) on a small host script with gridlab's stand-in for
//! `numba` first on its path (`assets/python/`). `@cuda.jit` there hands each kernel's source
//! to this runner, which defines it in the session as if it were typed; a launch sends the
//! arrays' bytes, runs as the statement `kernel[blocks, threads](a, b)` at the program's line
//! (so it is echoed, checked and reported like any launch), and sends the arrays back. The
//! program's prints travel the same pipe, so its output and gridlab's reports keep their order.
//!
//! A failing `assert` is a failed expectation at its line; an exception is an error; a finding
//! no `# expect: KIND` comment on the launch's line acknowledges fails the program, as an
//! unacknowledged finding fails a `.gridlab` script.

use std::io::{self, Write};
use std::path::Path;

use serde_json::{Value as Json, json};

use super::UsageError;
use crate::python::host::{self, Host};
use crate::runner::ScriptResult;
use crate::runner::{Expect, Runner};
use crate::session::{Session, Status, host_definition, host_globals};

/// Whether `path` is a Python program.
pub fn is_python(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "py")
}

/// Run the Python program at `path` in `session`, through `runner`'s transcript and tally.
pub fn run_program(path: &Path, text: &str, runner: &mut Runner) -> Result<(), UsageError> {
    let name = path.display().to_string();
    let mut child = match Host::start("gridlab_host.py", &[path.as_os_str()]) {
        Ok(c) => c,
        Err(e) => {
            let python = host::interpreter();
            let msg = format!(
                "{name} is a Python program: gridlab runs its host code with Python 3 and numpy, and could not start `{python}` ({e}); install Python 3 and `pip install numpy` (or set GRIDLAB_PYTHON to the interpreter)"
            );
            report_error(runner, &msg);
            return Ok(());
        }
    };
    let lines: Vec<&str> = text.lines().collect();
    let result = converse(&mut child, &name, &lines, runner);
    let code = child.stop();
    let stderr = child.stderr();
    match result {
        Ok(true) => {}
        Ok(false) => {
            // The interpreter ended without saying it was done: it crashed or was killed.
            let mut msg = format!("{name}: Python stopped before the program finished ({code})");
            if !stderr.trim().is_empty() {
                msg.push_str(&format!(":\n{}", stderr.trim_end()));
            }
            report_error(runner, &msg);
        }
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe || e.kind() == io::ErrorKind::UnexpectedEof => {
            let mut msg = format!("{name}: the Python interpreter stopped talking to gridlab");
            if !stderr.trim().is_empty() {
                msg.push_str(&format!(":\n{}", stderr.trim_end()));
            }
            report_error(runner, &msg);
        }
        Err(e) => return Err(UsageError::Output(e)),
    }
    Ok(())
}

fn report_error(runner: &mut Runner, msg: &str) {
    let styled = runner.style.error(&format!("error: {msg}"));
    let _ = writeln!(runner.out(), "{styled}");
    runner.fail(None, false, msg.to_string());
}

/// Answer the program's messages until it is done. `Ok(false)` when it ended without `done`.
fn converse(child: &mut Host, name: &str, lines: &[&str], runner: &mut Runner) -> io::Result<bool> {
    loop {
        let Some((header, payload)) = child.receive()? else { return Ok(false) };
        let op = header["op"].as_str().unwrap_or("");
        match op {
            "out" => {
                // In a quiet replay only failures are shown, the program's prints included.
                if !runner.quiet() {
                    let text = header["text"].as_str().unwrap_or("");
                    runner.out().write_all(text.as_bytes())?;
                }
            }
            "define" => define(&header, name, runner, child)?,
            "launch" => launch(&header, &payload, name, lines, runner, child)?,
            "assert" => {
                let line = header["line"].as_u64().unwrap_or(0);
                let source = header["source"].as_str().unwrap_or("").trim();
                let message = header["message"].as_str().unwrap_or("");
                let mut msg = format!("{name}:{line}: assertion failed: `{source}`");
                if !message.is_empty() {
                    msg.push_str(&format!(" ({message})"));
                }
                let styled = runner.style.error(&format!("expect failed: {msg}"));
                writeln!(runner.out(), "{styled}")?;
                runner.fail(None, true, msg);
            }
            "exception" => {
                let line = header["line"].as_u64().unwrap_or(0);
                let kind = header["kind"].as_str().unwrap_or("Exception");
                let message = header["message"].as_str().unwrap_or("");
                let tb = header["traceback"].as_str().unwrap_or("");
                if !tb.is_empty() {
                    write!(runner.out(), "{tb}")?;
                }
                report_error(runner, &format!("{name}:{line}: {kind}: {message}"));
            }
            "missing" => {
                let what = header["what"].as_str().unwrap_or("numpy");
                report_error(
                    runner,
                    &format!(
                        "{name} needs {what}, which this Python does not have: `python3 -m pip install {what}` (gridlab's own `numba` stands in for Numba)"
                    ),
                );
            }
            "exit" => {
                let code = header["code"].as_i64().unwrap_or(1);
                report_error(runner, &format!("{name}: the program exited with status {code}"));
            }
            "done" => return Ok(true),
            other => {
                report_error(
                    runner,
                    &format!("{name}: gridlab's Python side sent a message it does not know (`{other}`)"),
                );
                return Ok(true);
            }
        }
    }
}

fn define(header: &Json, name: &str, runner: &mut Runner, to: &mut Host) -> io::Result<()> {
    let file = header["file"].as_str().map_or(name.to_string(), |f| display_path(f, name));
    let (session, _) = runner.parts();
    session.python_globals(host_globals(header));
    let mut buf = Vec::new();
    let input = host_definition(header);
    let status = session.eval_input(&file, &input, false, &mut buf)?;
    if status == Status::Error {
        runner.out().write_all(&buf)?;
        runner.fail(None, false, crate::render::text::strip_ansi(&buf));
        return to.send(&json!({"ok": false, "error": "gridlab refused the kernel (see above)"}), &[]);
    }
    // Warnings (a variable unified from int and float) are worth seeing; the "defined" lines
    // are not, in a program's output.
    let text = String::from_utf8_lossy(&buf);
    if text.contains("warning") {
        runner.out().write_all(&buf)?;
    }
    to.send(&json!({"ok": true}), &[])
}

/// The path as the learner named it when the program is theirs.
fn display_path(file: &str, name: &str) -> String {
    let same = std::fs::canonicalize(file).ok().zip(std::fs::canonicalize(name).ok()).is_some_and(|(a, b)| a == b);
    if same { name.to_string() } else { file.to_string() }
}

fn launch(
    header: &Json,
    payload: &[u8],
    name: &str,
    lines: &[&str],
    runner: &mut Runner,
    to: &mut Host,
) -> io::Result<()> {
    let line = header["line"].as_u64().unwrap_or(1) as u32;
    let file = header["file"].as_str().map_or(name.to_string(), |f| display_path(f, name));
    let (session, _) = runner.parts();
    let launch = match session.host_launch(header, payload) {
        Ok(l) => l,
        Err(e) => return refuse(to, runner, &format!("{file}:{line}: {e}")),
    };
    let stmt = launch.statement.clone();
    let status = runner.run_text_at(&file, &stmt, line, Expect::Ok, None)?;
    // The finding the program is about: `kernel[...](a)  # expect: race`.
    let comment =
        lines.get(line.saturating_sub(1) as usize).and_then(|l| l.split_once("# expect:")).map(|(_, k)| k.to_string());
    if let Some(kinds) = comment {
        for kind in kinds.split([',', ' ']).map(str::trim).filter(|k| !k.is_empty()) {
            runner.run_text_at(&file, &format!("expect finding {kind}"), line, Expect::Ok, None)?;
        }
    }
    let (session, _) = runner.parts();
    if status == Status::Error {
        return to.send(&json!({"ok": false, "error": "the launch did not run (see above)"}), &[]);
    }
    // Every array comes back, in the order it was sent: the buffers were made from them above.
    let back = match session.host_launch_results(&launch) {
        Ok(back) => back,
        Err(e) => return refuse(to, runner, &format!("{file}:{line}: {e}")),
    };
    let ms = session.last_kernel_ms().unwrap_or(0.0);
    to.send(&json!({"ok": true, "time_ms": ms}), &back)
}

fn refuse(to: &mut Host, runner: &mut Runner, msg: &str) -> io::Result<()> {
    report_error(runner, msg);
    to.send(&json!({"ok": false, "error": msg}), &[])
}

/// Run a Python program in a fresh session (what `replay` does with a `.py`).
pub fn run_file(
    path: &Path,
    text: &str,
    session: &mut Session,
    quiet: bool,
    out: &mut dyn Write,
) -> Result<ScriptResult, UsageError> {
    let name = path.display().to_string();
    let mut runner = Runner::new(session, ScriptResult::new(path.to_path_buf()), quiet, out);
    run_program(path, text, &mut runner)?;
    runner.settle(None).map_err(UsageError::Output)?;
    let n = runner.result.inputs;
    let detail = format!("{n} input{} run", if n == 1 { "" } else { "s" });
    runner.finish(&name, detail, "expect(s)").map_err(UsageError::Output)
}
