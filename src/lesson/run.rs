//! A lesson without a learner: `gridlab replay` of a lesson file (solutions in place of the
//! exercises, checks included) and `gridlab dev check` (which also makes sure every starter
//! fails its check). Each lesson runs in a fresh session, step by step, as a learner would.

use std::io::{self, Write};
use std::time::Instant;

use super::{Exercise, Lesson, Part, check};
use crate::render::{self, Style};
use crate::replay::{Case, ScriptResult, strip_ansi};
use crate::session::{Options, Session, Status};

/// What to do with each exercise.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Define the solution and run the check: it must pass.
    Replay,
    /// First the starter (its check must fail), then the solution (its check must pass).
    DevCheck,
}

/// Run `lesson` in a fresh session, writing a transcript (or, when `quiet`, only failures).
pub fn run_lesson(
    lesson: &Lesson,
    options: &Options,
    mode: Mode,
    quiet: bool,
    out: &mut dyn Write,
) -> io::Result<ScriptResult> {
    let start = Instant::now();
    let style = options.style.clone();
    let mut session = Session::new(options.clone());
    let mut result = ScriptResult::new(lesson.path.clone().into());
    if !quiet {
        writeln!(out, "{}", style.bold(&format!("== {}: {}", lesson.path, lesson.title())))?;
    }
    if lesson.meta.needs_gpu && !session.on_gpu() {
        let why = "the lesson needs a GPU (its front matter says backend = \"gpu\") and none is in use".to_string();
        writeln!(out, "{} {}: {why}", style.warn("SKIP"), lesson.path)?;
        result.cases = lesson
            .steps
            .iter()
            .enumerate()
            .map(|(i, s)| Case { skipped: Some(why.clone()), ..Case::new(step_name(lesson, i, &s.title)) })
            .collect();
        result.elapsed = start.elapsed();
        return Ok(result);
    }
    for (i, step) in lesson.steps.iter().enumerate() {
        let step_start = Instant::now();
        let mut case = Case::new(step_name(lesson, i, &step.title));
        if !quiet {
            writeln!(out, "{}", style.accent(&format!("-- {}. {}", i + 1, step.title)))?;
        }
        for part in &step.parts {
            match part {
                Part::Prose(_) => {}
                Part::Cuda(code) | Part::Gridlab(code) => {
                    run_code(&mut session, lesson, code, quiet, &mut result, &mut case, out)?;
                }
                Part::Exercise(ex) => exercise(&mut session, lesson, ex, mode, quiet, &mut result, &mut case, out)?,
            }
        }
        case.elapsed = step_start.elapsed();
        result.cases.push(case);
    }
    result.elapsed = start.elapsed();
    let verdict = if result.passed() { style.ok("PASS") } else { style.error("FAIL") };
    let mut detail = format!("{} steps, {} inputs", lesson.steps.len(), result.inputs);
    if result.expects_failed > 0 {
        detail.push_str(&format!(", {} failed", result.expects_failed));
    }
    if result.errors > 0 {
        detail.push_str(&format!(", {} error(s)", result.errors));
    }
    writeln!(out, "{verdict} {} ({detail})", lesson.path)?;
    if !quiet {
        writeln!(out)?;
    }
    Ok(result)
}

fn step_name(lesson: &Lesson, i: usize, title: &str) -> String {
    format!("{} step {}: {title}", lesson.id, i + 1)
}

/// A `cuda` or `gridlab` block, input by input, with the file's own line numbers.
fn run_code(
    session: &mut Session,
    lesson: &Lesson,
    code: &super::Code,
    quiet: bool,
    result: &mut ScriptResult,
    case: &mut Case,
    out: &mut dyn Write,
) -> io::Result<()> {
    let style = session.style().clone();
    let padded = format!("{}{}", "\n".repeat(code.line.saturating_sub(1) as usize), code.text);
    let (inputs, broken) = session.split(&lesson.path, &padded);
    for input in &inputs {
        let mut buf = Vec::new();
        render::write_echo(&mut buf, &input.text, &style)?;
        let echoed = buf.len();
        let status = session.eval(&lesson.path, input, &mut buf)?;
        result.inputs += 1;
        if status != Status::Ok {
            let mut plain = Vec::new();
            render::write_echo(&mut plain, &input.text, &Style::plain())?;
            let failure = format!(
                "{}:{}\n{}{}",
                lesson.path,
                input.line,
                String::from_utf8_lossy(&plain),
                strip_ansi(&buf[echoed..])
            );
            match status {
                Status::ExpectFailed => result.expects_failed += 1,
                _ => result.errors += 1,
            }
            result.failures.push(failure.clone());
            case.failures.push(failure);
        }
        if !quiet || status != Status::Ok {
            out.write_all(&buf)?;
        }
    }
    if let Some(diag) = broken {
        let mut buf = Vec::new();
        diag.render(session.sources(), &mut buf, style.color, style.width)?;
        out.write_all(&buf)?;
        result.errors += 1;
        result.failures.push(strip_ansi(&buf));
        case.failures.push(strip_ansi(&buf));
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn exercise(
    session: &mut Session,
    lesson: &Lesson,
    ex: &Exercise,
    mode: Mode,
    quiet: bool,
    result: &mut ScriptResult,
    case: &mut Case,
    out: &mut dyn Write,
) -> io::Result<()> {
    let style = session.style().clone();
    let task = ex.task.lines().next().unwrap_or("");
    if !quiet {
        writeln!(out, "{} {task}", style.bold("exercise:"))?;
    }
    if mode == Mode::DevCheck {
        let mut buf = Vec::new();
        if let Some(starter) = &ex.starter {
            // The starter may not even compile: then its check fails too, which is all we ask.
            let padded = format!("{}{}", "\n".repeat(starter.line.saturating_sub(1) as usize), starter.text);
            let mut sink = Vec::new();
            session.eval_text(&lesson.path, &padded, false, &mut sink)?;
        }
        let outcome = check::run(session, &lesson.path, &ex.check)?;
        match &outcome.failure {
            Some(f) => {
                if !quiet {
                    let with = f.config.as_ref().map(|c| format!("with {c}, ")).unwrap_or_default();
                    writeln!(buf, "{} the starter fails its check ({with}on {}: {})", style.ok("✓"), f.run, f.why)?;
                }
            }
            None => {
                let what = if ex.starter.is_some() {
                    "the starter passes its check"
                } else {
                    "the check passes with no kernel written"
                };
                let msg = format!(
                    "{}:{}: {what}: the check does not catch the mistake the exercise is about; add a configuration that breaks it",
                    lesson.path, ex.line
                );
                writeln!(buf, "{} {msg}", style.error("✗"))?;
                result.expects_failed += 1;
                result.failures.push(msg.clone());
                case.failures.push(msg);
            }
        }
        out.write_all(&buf)?;
    }
    let solution = super::Code { text: ex.solution.text.clone(), line: ex.solution.line };
    run_code(session, lesson, &solution, quiet, result, case, out)?;
    let outcome = check::run(session, &lesson.path, &ex.check)?;
    let mut buf = Vec::new();
    write!(buf, "{} ", style.bold("check:"))?;
    check::write(&mut buf, &outcome, &style)?;
    if !outcome.passed() {
        let msg = format!("{}:{}: the solution fails its check\n{}", lesson.path, ex.line, strip_ansi(&buf));
        result.expects_failed += 1;
        result.failures.push(msg.clone());
        case.failures.push(msg);
    }
    if !quiet || !outcome.passed() {
        out.write_all(&buf)?;
    }
    Ok(())
}
