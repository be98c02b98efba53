//! `gridlab replay`: run scripts non-interactively, echo every input with its output, and turn
//! the outcome into an exit code and, for CI systems, a JUnit report.
//!
//! Each script runs in a fresh session, so scripts never depend on the order they run in.
//! [`runner`] runs the inputs (the same runner serves lessons and piped stdin), [`lesson`]
//! walks a lesson file for `replay` and `dev check`, [`compare`] runs scripts on both backends.

pub mod compare;
pub mod lesson;
pub mod runner;

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::session::Options;
use runner::{Expect, Runner};

/// `work` on each of `items` on `workers` named threads (`{name}-1` ...), each taking the next
/// item when it is done with one; the results come back in the order of `items`. Threads are
/// scoped, so `work` may borrow; a thread that cannot be started is an I/O error.
pub fn parallel<T: Sync, R: Send>(
    items: &[T],
    workers: usize,
    name: &str,
    work: impl Fn(&T) -> R + Sync,
) -> io::Result<Vec<R>> {
    use std::sync::Mutex;
    use std::sync::atomic::{AtomicUsize, Ordering};
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<R>>> = Mutex::new((0..items.len()).map(|_| None).collect());
    let worker = || {
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            let Some(item) = items.get(i) else { break };
            let r = work(item);
            results.lock().unwrap_or_else(|e| e.into_inner())[i] = Some(r);
        }
    };
    std::thread::scope(|s| -> io::Result<()> {
        let mut handles = Vec::new();
        for k in 1..=workers.max(1) {
            handles.push(std::thread::Builder::new().name(format!("{name}-{k}")).spawn_scoped(s, worker)?);
        }
        for h in handles {
            if let Err(panic) = h.join() {
                std::panic::resume_unwind(panic);
            }
        }
        Ok(())
    })?;
    let results = results.into_inner().unwrap_or_else(|e| e.into_inner());
    Ok(results.into_iter().map(|r| r.expect("every item was taken by a worker")).collect())
}

/// What happened to one script.
#[derive(Clone, Debug)]
pub struct ScriptResult {
    pub path: PathBuf,
    pub inputs: usize,
    pub expects_failed: usize,
    pub errors: usize,
    /// Each input that failed, echoed with its output (plain text), for reports.
    pub failures: Vec<String>,
    pub elapsed: Duration,
    /// A lesson's steps, each its own test case in the JUnit report; empty for a script, which
    /// is one test case.
    pub cases: Vec<Case>,
}

/// One test case of a JUnit report: a step of a lesson.
#[derive(Clone, Debug)]
pub struct Case {
    pub name: String,
    pub failures: Vec<String>,
    pub elapsed: Duration,
    /// Why it did not run (a lesson that needs a GPU, without one).
    pub skipped: Option<String>,
}

impl Case {
    pub fn new(name: String) -> Case {
        Case { name, failures: Vec::new(), elapsed: Duration::ZERO, skipped: None }
    }
}

impl ScriptResult {
    pub fn new(path: PathBuf) -> ScriptResult {
        ScriptResult {
            path,
            inputs: 0,
            expects_failed: 0,
            errors: 0,
            failures: Vec::new(),
            elapsed: Duration::ZERO,
            cases: Vec::new(),
        }
    }

    pub fn passed(&self) -> bool {
        self.expects_failed == 0 && self.errors == 0
    }

    /// Every case was skipped (a lesson that needs a GPU, without one).
    pub fn skipped(&self) -> bool {
        !self.cases.is_empty() && self.cases.iter().all(|c| c.skipped.is_some())
    }
}

/// A problem with the command line itself: exit status 2.
#[derive(Debug, thiserror::Error)]
pub enum UsageError {
    #[error("{path}: no such file or folder")]
    Missing { path: PathBuf },
    #[error("no .gridlab scripts or NN-slug.md lessons found under {path}")]
    Empty { path: PathBuf },
    #[error("cannot read {path}: {source}")]
    Unreadable { path: PathBuf, source: io::Error },
    /// Writing the transcript failed (e.g. a closed pipe): not a problem with the scripts.
    #[error("cannot write the transcript: {0}")]
    Output(io::Error),
}

/// Expand files and folders into the scripts to run, folders searched recursively for
/// `*.gridlab` scripts and `NN-slug.md` lessons, in sorted order so runs are reproducible.
pub fn collect(paths: &[PathBuf]) -> Result<Vec<PathBuf>, UsageError> {
    let mut scripts = Vec::new();
    for path in paths {
        if path.is_dir() {
            let before = scripts.len();
            walk(path, &mut scripts).map_err(|source| UsageError::Unreadable { path: path.clone(), source })?;
            if scripts.len() == before {
                return Err(UsageError::Empty { path: path.clone() });
            }
        } else if path.is_file() {
            scripts.push(path.clone());
        } else {
            return Err(UsageError::Missing { path: path.clone() });
        }
    }
    Ok(scripts)
}

fn walk(dir: &Path, found: &mut Vec<PathBuf>) -> io::Result<()> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)?.map(|e| e.map(|e| e.path())).collect::<Result<_, _>>()?;
    entries.sort();
    for p in entries {
        if p.is_dir() {
            walk(&p, found)?;
        } else if p.extension().is_some_and(|e| e == "gridlab") || crate::lesson::course::is_lesson_file(&p) {
            found.push(p);
        }
    }
    Ok(())
}

/// Run one script in a fresh session, writing the transcript to `out` (or only failures when
/// `quiet`).
pub fn run_script(
    path: &Path,
    options: &Options,
    quiet: bool,
    announce: bool,
    out: &mut dyn Write,
) -> Result<ScriptResult, UsageError> {
    let text = crate::script::input::read_script(path)
        .map_err(|source| UsageError::Unreadable { path: path.to_path_buf(), source })?;
    let start = Instant::now();
    // A script is someone else's: its file commands stay in its own folder.
    let folder = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let options = Options { files: crate::session::FileAccess::Within(folder.to_path_buf()), ..options.clone() };
    let mut session = crate::lesson::session(options.clone(), None);
    let name = path.display().to_string();
    // Say once which backend runs the scripts (and why), when the learner did not pin `sim`.
    if options.backend != crate::backend::BackendKind::Sim && announce {
        writeln!(out, "{}", session.resolve_backend()).map_err(UsageError::Output)?;
    }
    let style = options.style.clone();
    if !quiet {
        writeln!(out, "{}", style.bold(&format!("== {name}"))).map_err(UsageError::Output)?;
    }
    let mut runner = Runner::new(&mut session, ScriptResult::new(path.to_path_buf()), quiet, out);
    runner.run_text(&name, &text, Expect::Ok, None).map_err(UsageError::Output)?;
    runner.settle(None).map_err(UsageError::Output)?;
    let detail = format!("{} inputs", runner.result.inputs);
    let mut result = runner.finish(&name, detail, "expect(s)").map_err(UsageError::Output)?;
    result.elapsed = start.elapsed();
    Ok(result)
}

/// A JUnit XML report, as CI systems read them: one test case per script, and one per step of
/// each lesson.
pub fn junit(results: &[ScriptResult]) -> String {
    struct Row<'a> {
        name: String,
        failures: &'a [String],
        message: String,
        elapsed: Duration,
        skipped: Option<&'a str>,
    }
    let mut rows = Vec::new();
    for r in results {
        if r.cases.is_empty() {
            rows.push(Row {
                name: r.path.display().to_string(),
                failures: &r.failures,
                message: format!("{} expect(s) failed, {} error(s)", r.expects_failed, r.errors),
                elapsed: r.elapsed,
                skipped: None,
            });
        }
        for c in &r.cases {
            rows.push(Row {
                name: c.name.clone(),
                failures: &c.failures,
                message: format!("{} failure(s)", c.failures.len()),
                elapsed: c.elapsed,
                skipped: c.skipped.as_deref(),
            });
        }
    }
    let failures = rows.iter().filter(|r| !r.failures.is_empty()).count();
    let skipped = rows.iter().filter(|r| r.skipped.is_some()).count();
    let total: f64 = rows.iter().map(|r| r.elapsed.as_secs_f64()).sum();
    let mut x = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    x.push_str(&format!(
        "<testsuites tests=\"{n}\" failures=\"{failures}\" time=\"{total:.3}\">\n  <testsuite name=\"gridlab replay\" tests=\"{n}\" failures=\"{failures}\" errors=\"0\" skipped=\"{skipped}\" time=\"{total:.3}\">\n",
        n = rows.len(),
    ));
    for r in &rows {
        x.push_str(&format!(
            "    <testcase classname=\"gridlab\" name=\"{}\" time=\"{:.3}\"",
            escape(&r.name),
            r.elapsed.as_secs_f64()
        ));
        if let Some(why) = r.skipped {
            x.push_str(&format!(">\n      <skipped message=\"{}\"/>\n    </testcase>\n", escape(why)));
        } else if r.failures.is_empty() {
            x.push_str("/>\n");
        } else {
            x.push_str(&format!(
                ">\n      <failure message=\"{}\">{}</failure>\n    </testcase>\n",
                escape(&r.message),
                escape(&r.failures.join("\n"))
            ));
        }
    }
    x.push_str("  </testsuite>\n</testsuites>\n");
    x
}

fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            // XML 1.0 forbids most control characters even escaped.
            c if (c as u32) < 0x20 && !matches!(c, '\n' | '\r' | '\t') => out.push('?'),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn junit_escapes_and_counts_failures() {
        let ok = ScriptResult {
            path: "a.gridlab".into(),
            inputs: 3,
            expects_failed: 0,
            errors: 0,
            failures: vec![],
            elapsed: Duration::from_millis(5),
            cases: vec![],
        };
        let bad = ScriptResult {
            path: "b<c>.gridlab".into(),
            inputs: 2,
            expects_failed: 1,
            errors: 0,
            failures: vec!["b.gridlab:2\n>>> expect a == \"x\"\n".into()],
            elapsed: Duration::from_millis(7),
            cases: vec![],
        };
        let x = junit(&[ok, bad]);
        assert!(x.contains("tests=\"2\" failures=\"1\""));
        assert!(x.contains("name=\"b&lt;c&gt;.gridlab\""));
        assert!(x.contains("&gt;&gt;&gt; expect a == &quot;x&quot;"));
        assert!(x.contains("<testcase classname=\"gridlab\" name=\"a.gridlab\" time=\"0.005\"/>"));
    }
}
