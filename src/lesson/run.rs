//! A lesson without a learner: `gridlab replay` of a lesson file (solutions in place of the
//! exercises, checks included) and `gridlab dev check` (which also makes sure every starter
//! fails its check). Each lesson runs in a fresh session, step by step, as a learner would.

use std::io::{self, Write};
use std::time::Instant;

use super::{Code, Exercise, Lesson, Part, check};
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
    let mut walk = Walk {
        session: Session::new(options.clone()),
        lesson,
        style: style.clone(),
        quiet,
        result: ScriptResult::new(lesson.path.clone().into()),
        out,
    };
    if !quiet {
        writeln!(walk.out, "{}", style.bold(&format!("== {}: {}", lesson.path, lesson.title())))?;
    }
    if lesson.meta.needs_gpu && !walk.session.on_gpu() {
        let why = "the lesson needs a GPU (its front matter says backend = \"gpu\") and none is in use".to_string();
        writeln!(walk.out, "{} {}: {why}", style.warn("SKIP"), lesson.path)?;
        walk.result.cases = lesson
            .steps
            .iter()
            .enumerate()
            .map(|(i, s)| Case { skipped: Some(why.clone()), ..Case::new(step_name(lesson, i, &s.title)) })
            .collect();
        walk.result.elapsed = start.elapsed();
        return Ok(walk.result);
    }
    for (i, step) in lesson.steps.iter().enumerate() {
        let step_start = Instant::now();
        let mut case = Case::new(step_name(lesson, i, &step.title));
        if !quiet {
            writeln!(walk.out, "{}", style.accent(&format!("-- {}. {}", i + 1, step.title)))?;
        }
        for part in &step.parts {
            match part {
                Part::Prose(_) => {}
                Part::Cuda(code) | Part::Gridlab(code) => walk.code(code, &mut case)?,
                Part::Exercise(ex) => walk.exercise(ex, mode, &mut case)?,
            }
        }
        case.elapsed = step_start.elapsed();
        walk.result.cases.push(case);
    }
    let mut result = walk.result;
    result.elapsed = start.elapsed();
    let verdict = if result.passed() { style.ok("PASS") } else { style.error("FAIL") };
    let mut detail = format!("{} steps, {} inputs", lesson.steps.len(), result.inputs);
    if result.expects_failed > 0 {
        detail.push_str(&format!(", {} failed", result.expects_failed));
    }
    if result.errors > 0 {
        detail.push_str(&format!(", {} error(s)", result.errors));
    }
    writeln!(walk.out, "{verdict} {} ({detail})", lesson.path)?;
    if !quiet {
        writeln!(walk.out)?;
    }
    Ok(result)
}

fn step_name(lesson: &Lesson, i: usize, title: &str) -> String {
    format!("{} step {}: {title}", lesson.id, i + 1)
}

/// A lesson being walked through: its session, the transcript's destination and the tally.
struct Walk<'a> {
    session: Session,
    lesson: &'a Lesson,
    style: Style,
    quiet: bool,
    result: ScriptResult,
    out: &'a mut dyn Write,
}

impl Walk<'_> {
    /// Count a failure (`expect` is whether it is a failed expectation rather than an error)
    /// against the lesson and the step.
    fn fail(&mut self, case: &mut Case, expect: bool, text: String) {
        if expect {
            self.result.expects_failed += 1;
        } else {
            self.result.errors += 1;
        }
        self.result.failures.push(text.clone());
        case.failures.push(text);
    }

    /// A `cuda` or `gridlab` block, input by input, with the file's own line numbers.
    fn code(&mut self, code: &Code, case: &mut Case) -> io::Result<()> {
        let path = &self.lesson.path;
        let (inputs, broken) = self.session.split(path, &code.padded());
        for input in &inputs {
            let mut buf = Vec::new();
            render::write_echo(&mut buf, &input.text, &self.style)?;
            let echoed = buf.len();
            let status = self.session.eval(path, input, &mut buf)?;
            self.result.inputs += 1;
            // In an `error` block the refusal is the point; running is the failure.
            let failed = if code.refused { status != Status::Error } else { status != Status::Ok };
            if failed {
                let mut plain = Vec::new();
                render::write_echo(&mut plain, &input.text, &Style::plain())?;
                let mut text =
                    format!("{path}:{}\n{}{}", input.line, String::from_utf8_lossy(&plain), strip_ansi(&buf[echoed..]));
                if code.refused {
                    text.push_str("this input ran, but its block says `error`: gridlab should have refused it\n");
                    writeln!(
                        buf,
                        "{}",
                        self.style.error("expected an error: the block says `error`, but this input ran")
                    )?;
                }
                self.fail(case, status == Status::ExpectFailed || code.refused, text);
            }
            if !self.quiet || failed {
                self.out.write_all(&buf)?;
            }
        }
        if let Some(diag) = broken {
            let mut buf = Vec::new();
            diag.render(self.session.sources(), &mut buf, self.style.color, self.style.width)?;
            self.out.write_all(&buf)?;
            self.fail(case, false, strip_ansi(&buf));
        }
        Ok(())
    }

    /// An exercise: in a dev check the starter must fail its check; then the solution must
    /// pass it.
    fn exercise(&mut self, ex: &Exercise, mode: Mode, case: &mut Case) -> io::Result<()> {
        let (path, style) = (self.lesson.path.clone(), self.style.clone());
        if !self.quiet {
            writeln!(self.out, "{} {}", style.bold("exercise:"), ex.task.lines().next().unwrap_or(""))?;
        }
        if mode == Mode::DevCheck {
            if let Some(starter) = &ex.starter {
                // The starter may not even compile: then its check fails too, which is all we ask.
                self.session.eval_text(&path, &starter.padded(), false, &mut Vec::new())?;
            }
            let outcome = check::run(&mut self.session, &path, &ex.check)?;
            match &outcome.failure {
                Some(f) if !self.quiet => {
                    let with = f.config.as_ref().map(|c| format!("with {c}, ")).unwrap_or_default();
                    writeln!(
                        self.out,
                        "{} the starter fails its check ({with}on {}: {})",
                        style.ok("✓"),
                        f.run,
                        f.why
                    )?;
                }
                Some(_) => {}
                None => {
                    let what = if ex.starter.is_some() {
                        "the starter passes its check"
                    } else {
                        "the check passes with no kernel written"
                    };
                    let msg = format!(
                        "{path}:{}: {what}: the check does not catch the mistake the exercise is about; add a configuration that breaks it",
                        ex.line
                    );
                    writeln!(self.out, "{} {msg}", style.error("✗"))?;
                    self.fail(case, true, msg);
                }
            }
        }
        self.code(&ex.solution, case)?;
        let outcome = check::run(&mut self.session, &path, &ex.check)?;
        let mut buf = Vec::new();
        write!(buf, "{} ", style.bold("check:"))?;
        check::write(&mut buf, &outcome, &style)?;
        if !outcome.passed() {
            let msg = format!("{path}:{}: the solution fails its check\n{}", ex.line, strip_ansi(&buf));
            self.fail(case, true, msg);
        }
        if !self.quiet || !outcome.passed() {
            self.out.write_all(&buf)?;
        }
        Ok(())
    }
}
