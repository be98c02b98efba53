//! `gridlab replay`: run scripts non-interactively, echo every input with its output, and turn
//! the outcome into an exit code and, for CI systems, a JUnit report.
//!
//! Each script runs in a fresh session, so scripts never depend on the order they run in.
//! `crate::runner` runs the inputs (the same runner serves lessons and piped stdin), [`lesson`]
//! walks a lesson file for `replay` and `dev check`, [`compare`] runs scripts on both backends.

pub mod compare;
pub mod lesson;
pub mod python;

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::runner::ScriptResult;
use crate::runner::{Expect, Runner};
use crate::session::Options;

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
/// `*.gridlab` scripts, `*.py` programs and `NN-slug.md` lessons, in sorted order so runs are reproducible.
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
        } else if p.extension().is_some_and(|e| e == "gridlab" || e == "py")
            || crate::lesson::course::is_lesson_file(&p)
        {
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
    if python::is_python(path) {
        let mut result = python::run_file(path, &text, &mut session, quiet, out)?;
        result.elapsed = start.elapsed();
        return Ok(result);
    }
    let mut runner = Runner::new(&mut session, ScriptResult::new(path.to_path_buf()), quiet, out).pipelined();
    runner.run_text(&name, &text, Expect::Ok, None).map_err(UsageError::Output)?;
    runner.settle(None).map_err(UsageError::Output)?;
    let detail = format!("{} inputs", runner.result.inputs);
    let mut result = runner.finish(&name, detail, "expect(s)").map_err(UsageError::Output)?;
    result.elapsed = start.elapsed();
    Ok(result)
}

/// A JUnit XML report, as CI systems read them: one test suite for the scripts (a test case
/// each), and one per lesson, whose steps are its test cases (`classname` the lesson, `name` the
/// step). A failure's `message` says what failed, in one line.
pub fn junit(results: &[ScriptResult]) -> String {
    junit_named(results, "gridlab replay")
}

/// [`junit`], the scripts' suite named `suite` (`gridlab dev check` for a course's report).
pub fn junit_named(results: &[ScriptResult], suite: &str) -> String {
    struct Row<'a> {
        class: String,
        name: String,
        failures: &'a [String],
        elapsed: Duration,
        skipped: Option<&'a str>,
    }
    // (suite name, rows), in the order the results came.
    let mut suites: Vec<(String, Vec<Row>)> = Vec::new();
    let mut scripts: Vec<Row> = Vec::new();
    for r in results {
        let path = r.path.display().to_string();
        if r.cases.is_empty() {
            scripts.push(Row {
                class: path.clone(),
                name: path,
                failures: &r.failures,
                elapsed: r.elapsed,
                skipped: None,
            });
            continue;
        }
        let class = r.path.file_stem().map_or(path.clone(), |s| s.to_string_lossy().into_owned());
        let rows = r
            .cases
            .iter()
            .map(|c| Row {
                class: class.clone(),
                name: c.name.strip_prefix(&format!("{class} ")).unwrap_or(&c.name).to_string(),
                failures: &c.failures,
                elapsed: c.elapsed,
                skipped: c.skipped.as_deref(),
            })
            .collect();
        suites.push((path, rows));
    }
    if !scripts.is_empty() {
        suites.insert(0, (suite.to_string(), scripts));
    }
    let count = |rows: &[Row], f: &dyn Fn(&Row) -> bool| rows.iter().filter(|r| f(r)).count();
    let time = |rows: &[Row]| rows.iter().map(|r| r.elapsed.as_secs_f64()).sum::<f64>();
    let all: Vec<&Row> = suites.iter().flat_map(|(_, rows)| rows).collect();
    let failures = all.iter().filter(|r| !r.failures.is_empty()).count();
    let total: f64 = all.iter().map(|r| r.elapsed.as_secs_f64()).sum();
    let mut x = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    x.push_str(&format!(
        "<testsuites name=\"{}\" tests=\"{}\" failures=\"{failures}\" time=\"{total:.3}\">\n",
        escape(suite),
        all.len()
    ));
    for (name, rows) in &suites {
        x.push_str(&format!(
            "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"0\" skipped=\"{}\" time=\"{:.3}\">\n",
            escape(name),
            rows.len(),
            count(rows, &|r| !r.failures.is_empty()),
            count(rows, &|r| r.skipped.is_some()),
            time(rows)
        ));
        for r in rows {
            x.push_str(&format!(
                "    <testcase classname=\"{}\" name=\"{}\" time=\"{:.3}\"",
                escape(&r.class),
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
                    escape(&message(r.failures)),
                    escape(&r.failures.join("\n"))
                ));
            }
        }
        x.push_str("  </testsuite>\n");
    }
    x.push_str("</testsuites>\n");
    x
}

/// One line that says what failed: the first failure's own first line (a script's failure
/// starts with its place alone, then the input and what it printed: those are joined), and how
/// many more there are.
fn message(failures: &[String]) -> String {
    let Some(first) = failures.first() else { return String::new() };
    let mut lines = first.lines().map(str::trim).filter(|l| !l.is_empty());
    let head = lines.next().unwrap_or("");
    let mut text = if head.contains(' ') {
        head.to_string()
    } else {
        // `file:12`, then `>>> input`, then what it printed.
        let input = lines.next().unwrap_or("").trim_start_matches(">>> ");
        let said = lines.find(|l| !l.starts_with("...")).unwrap_or("");
        format!("{head}: `{input}`: {said}")
    };
    if failures.len() > 1 {
        text.push_str(&format!(" (and {} more)", failures.len() - 1));
    }
    text
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
        assert!(x.contains("<testcase classname=\"a.gridlab\" name=\"a.gridlab\" time=\"0.005\"/>"), "{x}");
        assert!(x.contains("failure message=\"b.gridlab:2: `expect a == &quot;x&quot;`: \""), "{x}");
    }
}
