//! A lesson without a learner: `gridlab replay` of a lesson file (solutions in place of the
//! exercises, checks included) and `gridlab dev check` (which also makes sure every starter
//! fails its check). Each lesson runs in a fresh session, step by step, as a learner would, its
//! blocks through the same [`Runner`] as a script's inputs.

use std::collections::BTreeSet;
use std::io::{self, Write};
use std::time::{Duration, Instant};

use crate::finding::FindingKind;
use crate::lesson::{Code, Exercise, Lang, Lesson, Part, Shown, check, figures, mutants};
use crate::render::text::strip_ansi;
use crate::runner::{Case, ScriptResult};
use crate::runner::{Expect, Runner};
use crate::session::{Options, Status};

/// What to do with each exercise.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Define the solution and run the check: it must pass.
    Replay,
    /// First the starter (its check must fail), then the solution (its check must pass).
    DevCheck,
    /// As [`Mode::DevCheck`], and then every mutant of the solution must fail the check too
    /// (`dev check --mutants`, see [`crate::lesson::mutants`]).
    Mutants,
}

/// The languages to run `lesson` in: the one `options.lang` names, else CUDA C and, when the
/// lesson has Python twins, Python too.
pub fn languages(lesson: &Lesson, options: &Options) -> Vec<Lang> {
    match options.lang {
        Some(lang) => vec![lang],
        None if lesson.has_python() => vec![Lang::Cuda, Lang::Python],
        None => vec![Lang::Cuda],
    }
}

/// Run `lesson` in a fresh session, in the language `options.lang` (CUDA C when none), writing
/// a transcript (or, when `quiet`, only failures).
pub fn run_lesson(
    lesson: &Lesson,
    options: &Options,
    mode: Mode,
    quiet: bool,
    out: &mut dyn Write,
) -> io::Result<ScriptResult> {
    let start = Instant::now();
    let style = options.style.clone();
    let lang = options.lang.unwrap_or_default();
    let shown_in = lesson.in_lang(lang);
    let lesson = &shown_in;
    // A lesson is someone else's input, like a script: its file commands are refused when it is
    // parsed, and confining the session also keeps its `:lesson` away from saved progress.
    let folder = std::path::Path::new(&lesson.path).parent().unwrap_or(std::path::Path::new(".")).to_path_buf();
    let options = Options { files: crate::session::FileAccess::Within(folder), ..options.clone() };
    let mut session = crate::lesson::session(options, None);
    if !quiet {
        let suffix = if lang == Lang::Cuda { String::new() } else { " (in Python)".to_string() };
        writeln!(out, "{}", style.bold(&format!("== {}: {}{suffix}", lesson.path, lesson.title())))?;
    }
    let mut result = ScriptResult::new(lesson.path.clone().into());
    if lesson.meta.needs_gpu && !session.on_gpu() {
        let why = "the lesson needs a GPU (its front matter says backend = \"gpu\") and none is in use".to_string();
        writeln!(out, "{} {}: {why}", style.warn("SKIP"), lesson.path)?;
        result.cases = lesson
            .steps
            .iter()
            .enumerate()
            .map(|(i, s)| Case { skipped: Some(why.clone()), ..Case::new(step_name_in(lesson, lang, i, &s.title)) })
            .collect();
        result.elapsed = start.elapsed();
        return Ok(result);
    }
    let mut runner = Runner::new(&mut session, result, quiet, out);
    // The figures the lesson's blocks printed so far, for those its prose quotes.
    let mut printed_so_far = Vec::new();
    let file = std::fs::read_to_string(&lesson.path).unwrap_or_default();
    for (i, step) in lesson.steps.iter().enumerate() {
        let step_start = Instant::now();
        let mut case = Case::new(step_name_in(lesson, lang, i, &step.title));
        if !quiet {
            writeln!(runner.out(), "{}", style.accent(&format!("-- {}. {}", i + 1, step.title)))?;
        }
        for part in &step.parts {
            match part {
                Part::Prose(_) => {}
                Part::Cuda(code) | Part::Python(code) | Part::Gridlab(code) => {
                    let shown: Vec<&Shown> = step.outputs.iter().filter(|o| o.after == code.line).collect();
                    runner.capture();
                    run_code(&mut runner, lesson, code, &mut case)?;
                    let printed = runner.take_captured();
                    if !shown.is_empty() {
                        compare_output(&mut runner, lesson, &shown, &printed, &mut case)?;
                    }
                    printed_so_far.extend(figures::printed(&printed));
                }
                Part::Exercise(ex) => exercise(&mut runner, lesson, ex, mode, lang, &mut case)?,
            }
        }
        runner.settle(Some(&mut case))?;
        let intro = if i == 0 { lesson.intro.as_str() } else { "" };
        compare_figures(&mut runner, lesson, &file, step, intro, &printed_so_far, &mut case)?;
        case.elapsed = step_start.elapsed();
        runner.result.cases.push(case);
    }
    let detail = format!("{} steps, {} inputs", lesson.steps.len(), runner.result.inputs);
    let mut result = runner.finish(&lesson.path, detail, "")?;
    result.elapsed = start.elapsed();
    Ok(result)
}

fn step_name(lesson: &Lesson, i: usize, title: &str) -> String {
    format!("{} step {}: {title}", lesson.id, i + 1)
}

/// `step_name` in the language the lesson runs in, when it is not CUDA C.
fn step_name_in(lesson: &Lesson, lang: Lang, i: usize, title: &str) -> String {
    match lang {
        Lang::Cuda => step_name(lesson, i, title),
        other => format!("{} [{}] step {}: {title}", lesson.id, other.name(), i + 1),
    }
}

/// A `cuda` or `gridlab` block, input by input, with the file's own line numbers.
fn run_code(runner: &mut Runner<'_>, lesson: &Lesson, code: &Code, case: &mut Case) -> io::Result<()> {
    // In an `error` block the refusal is the point; running is the failure.
    let expect = if code.refused { Expect::Refusal } else { Expect::Ok };
    runner.run_text(&lesson.path, &code.padded(), expect, Some(case))?;
    Ok(())
}

/// The `output` blocks after a block: each must be what it printed. On the GPU the numbers of
/// a run differ from the simulator's (times, lost updates, the backend's name), and a lesson
/// shows the simulator's: there they are not compared.
fn compare_output(
    runner: &mut Runner<'_>,
    lesson: &Lesson,
    shown: &[&Shown],
    printed: &str,
    case: &mut Case,
) -> io::Result<()> {
    if runner.session.on_gpu() {
        return Ok(());
    }
    for s in shown {
        if let Err(line) = s.check(printed) {
            let msg = format!(
                "{}:{}: the `output` block does not match what the block above printed: `{line}` is not in it (or not in this order). It printed:\n{}",
                lesson.path,
                s.line,
                printed.trim_end()
            );
            let style = runner.style.clone();
            writeln!(runner.out(), "{} {msg}", style.error("✗"))?;
            runner.fail(Some(case), true, msg);
        }
    }
    Ok(())
}

/// The figures the step's prose quotes (`intro` too, for the first step): each must be one
/// that the lesson's blocks printed up to the end of the step. In each language, against that
/// language's run (prose that quotes counts has a twin per language); only on the simulator,
/// because a GPU's figures differ from run to run.
fn compare_figures(
    runner: &mut Runner<'_>,
    lesson: &Lesson,
    file: &str,
    step: &crate::lesson::Step,
    intro: &str,
    printed: &[figures::Figure],
    case: &mut Case,
) -> io::Result<()> {
    if runner.session.on_gpu() {
        return Ok(());
    }
    let prose = step.parts.iter().filter_map(|p| if let Part::Prose(md) = p { Some(md.as_str()) } else { None });
    for md in std::iter::once(intro).chain(prose) {
        for figure in figures::in_prose(md) {
            if figures::backed(&figure, printed) {
                continue;
            }
            let number =
                figure.text.split_whitespace().find(|w| w.starts_with(|c: char| c.is_ascii_digit())).unwrap_or("");
            let line = file
                .lines()
                .enumerate()
                .skip(if intro.is_empty() { step.line as usize } else { 0 })
                .find(|(_, l)| l.contains(number))
                .map_or(step.line, |(n, _)| n as u32 + 1);
            let msg = format!(
                "{}:{line}: the prose quotes `{}`, which the lesson's blocks never printed (up to this step's end): quote what gridlab prints, put it in an ` ```output ` block, or say in the sentence that a GPU measured it",
                lesson.path, figure.text
            );
            let style = runner.style.clone();
            writeln!(runner.out(), "{} {msg}", style.error("✗"))?;
            runner.fail(Some(case), true, msg);
        }
    }
    Ok(())
}

/// A dev check's look at the starter: it must compile, and its check must fail for the reason
/// the exercise is about (wrong values, a finding, a cost), which the transcript names.
fn starter(runner: &mut Runner<'_>, lesson: &Lesson, ex: &Exercise, case: &mut Case) -> io::Result<()> {
    let (path, style, quiet) = (lesson.path.clone(), runner.style.clone(), runner.quiet());
    if let Some(starter) = &ex.starter {
        let mut printed = Vec::new();
        let status = runner.session.eval_text(&path, &starter.padded(), false, &mut printed)?;
        if status == crate::session::Status::Error {
            let msg = format!(
                "{path}:{}: the starter does not compile: a starter must run and fail its check for the mistake the exercise is about (wrong values, a finding, a cost)\n{}",
                starter.line,
                strip_ansi(&printed).trim_end()
            );
            writeln!(runner.out(), "{} {msg}", style.error("✗"))?;
            runner.fail(Some(case), true, msg);
            return Ok(());
        }
    }
    let outcome = check::run(runner.session, &path, &ex.check)?;
    match &outcome.failure {
        // With no starter the learner starts from nothing: no kernel yet is the failure.
        Some(f) if f.kind.is_the_lesson() || (ex.starter.is_none() && f.kind == check::FailureKind::NoKernel) => {
            if !quiet {
                // The place says where; the kind says why (a finding's `why` repeats its name).
                let why = if f.place().is_empty() { f.why.clone() } else { f.place() };
                writeln!(
                    runner.out(),
                    "{} the starter fails its check with {} ({why})",
                    style.ok("✓"),
                    f.kind.describe()
                )?;
            }
        }
        Some(f) => {
            let msg = format!(
                "{path}:{}: the starter fails its check only with {} ({}), not for the mistake the exercise is about: make the starter run and give wrong values, a finding or a cost",
                ex.starter.as_ref().map_or(ex.line, |s| s.line),
                f.kind.describe(),
                f.why
            );
            writeln!(runner.out(), "{} {msg}", style.error("✗"))?;
            runner.fail(Some(case), true, msg);
        }
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
            writeln!(runner.out(), "{} {msg}", style.error("✗"))?;
            runner.fail(Some(case), true, msg);
        }
    }
    Ok(())
}

/// An exercise: in a dev check the starter must fail its check; then the solution must pass it.
fn exercise(
    runner: &mut Runner<'_>,
    lesson: &Lesson,
    ex: &Exercise,
    mode: Mode,
    lang: Lang,
    case: &mut Case,
) -> io::Result<()> {
    let (path, style, quiet) = (lesson.path.clone(), runner.style.clone(), runner.quiet());
    if !quiet {
        writeln!(runner.out(), "{} {}", style.bold("exercise:"), ex.task.lines().next().unwrap_or(""))?;
    }
    if mode != Mode::Replay {
        starter(runner, lesson, ex, case)?;
    }
    run_code(runner, lesson, &ex.solution, case)?;
    // Coverage is the check's, judged once, against the CUDA C solution (whose code the rules
    // read); a Python twin runs the same check.
    let judge = mode != Mode::Replay && lang == Lang::Cuda;
    let (outcome, seen) = check::run_observed(runner.session, &path, &ex.check, judge)?;
    let mut buf = Vec::new();
    write!(buf, "{} ", style.bold("check:"))?;
    check::write(&mut buf, &outcome, &style)?;
    if !outcome.passed() {
        // The first line says what failed, for a CI report's one-line message.
        let what = outcome.failure.as_ref().map_or(String::new(), |f| {
            let place = if f.place().is_empty() { String::new() } else { format!("{}: ", f.place()) };
            match (f.input.lines().next(), f.output.lines().map(str::trim).find(|l| !l.is_empty())) {
                (Some(input), Some(said)) => format!(": {place}`{input}`: {said}"),
                _ => format!(": {place}{}", f.why),
            }
        });
        let msg = format!("{path}:{}: the solution fails its check{what}\n{}", ex.line, strip_ansi(&buf));
        runner.fail(Some(case), true, msg);
    }
    if !quiet || !outcome.passed() {
        runner.out().write_all(&buf)?;
    }
    if judge && outcome.passed() {
        coverage(runner, lesson, ex, &seen, case)?;
    }
    if mode == Mode::Mutants && outcome.passed() {
        mutants(runner, lesson, ex, case)?;
    }
    Ok(())
}

/// What the check covers (see [`crate::lesson::coverage`]): each gap is a problem at the
/// check's line, saying what to add.
fn coverage(
    runner: &mut Runner<'_>,
    lesson: &Lesson,
    ex: &Exercise,
    seen: &[check::Observed],
    case: &mut Case,
) -> io::Result<()> {
    let style = runner.style.clone();
    let kernels: Vec<String> = ex.check.kernels.iter().map(|(k, _)| k.clone()).collect();
    for gap in crate::lesson::coverage::gaps(seen, &kernels, &ex.solution.text, &ex.task) {
        let msg = format!(
            "{}:{}: the check does not cover enough: {}",
            lesson.path,
            ex.check.body.line.saturating_sub(1),
            gap.message
        );
        writeln!(runner.out(), "{} {msg}", style.error("✗"))?;
        runner.fail(Some(case), true, msg);
    }
    Ok(())
}

/// A launch of a mutant may take this long: a mutant that never ends (a loop whose step was
/// made `i = stride`) is killed by its time, and should not hold up the course for long.
const MUTANT_TIME_LIMIT: Duration = Duration::from_secs(1);

/// How the mutants of one exercise fared.
#[derive(Default)]
struct Tally {
    generated: usize,
    stillborn: usize,
    killed: usize,
    equivalent: usize,
    /// Dropped initialisations that survive only because the simulator does not yet report
    /// reads of uninitialised memory.
    waiting: usize,
    survived: usize,
}

/// Every mutant of the solution must fail the exercise's check, unless the solution marks it
/// equivalent. The solution is defined again after each, so the lesson goes on with it.
fn mutants(runner: &mut Runner<'_>, lesson: &Lesson, ex: &Exercise, case: &mut Case) -> io::Result<()> {
    let start = Instant::now();
    let (path, style) = (lesson.path.clone(), runner.style.clone());
    let first = ex.solution.line;
    let (_, unknown) = mutants::markers(&ex.solution.text);
    for (line, name) in unknown {
        let kinds: Vec<&str> = mutants::Op::ALL.iter().map(|o| o.name()).collect();
        let msg = format!(
            "{path}:{}: `{name}` is no kind of mutant; `// gridlab: equivalent` names one or more of: {}",
            first + line - 1,
            kinds.join(", ")
        );
        writeln!(runner.out(), "{} {msg}", style.error("✗"))?;
        runner.fail(Some(case), true, msg);
    }
    // Reads of uninitialised memory are what expose a dropped initialisation; until the
    // simulator reports them such a mutant reads zeros and may pass.
    let uninit_reported = FindingKind::ALL.iter().any(|k| k.name().starts_with("uninit"));
    let python = ex.solution.text.trim_start().starts_with('@');
    let all = if python {
        mutants::generate_python(&ex.solution.text, &ex.check)
    } else {
        mutants::generate(&ex.solution.text, &ex.check, &mutants::hard_coded_sizes(&ex.task))
    };
    let solution = ex.solution.padded();
    let pad = "\n".repeat(first.saturating_sub(1) as usize);
    let limit = runner.session.set_time_limit(Some(MUTANT_TIME_LIMIT));
    let mut tally = Tally { generated: all.len(), ..Tally::default() };
    let (mut killed_marked, mut survived_marked) = (BTreeSet::new(), BTreeSet::new());
    for m in &all {
        let defined = runner.session.eval_text(&path, &format!("{pad}{}", m.text), false, &mut Vec::new())?;
        let mut outcome =
            if defined == Status::Ok { Some(check::run(runner.session, &path, &ex.check)?) } else { None };
        // The short limit is there to end mutants that never end, not to judge one the author
        // marked equivalent: on a busy machine a launch of it can run out of its second (and
        // then fail as wrong values, not as a stop), so it is judged again under the usual
        // limit before its marker is called stale.
        if m.equivalent && outcome.as_ref().is_some_and(|o| !o.passed()) {
            runner.session.set_time_limit(limit);
            outcome = Some(check::run(runner.session, &path, &ex.check)?);
            runner.session.set_time_limit(Some(MUTANT_TIME_LIMIT));
        }
        runner.session.eval_text(&path, &solution, false, &mut Vec::new())?;
        let Some(outcome) = outcome else {
            tally.stillborn += 1;
            continue;
        };
        let diff = m.diff(&ex.solution.text, &path, first);
        match (outcome.passed(), m.equivalent) {
            (false, false) => tally.killed += 1,
            (true, true) => tally.equivalent += 1,
            (true, false) if m.reads_uninit && !uninit_reported => tally.waiting += 1,
            (true, false) => {
                tally.survived += 1;
                let msg = format!(
                    "{path}:{}: a mutant of the solution passes the check, so the check accepts this wrong answer; add data or a configuration that tells it apart (or, if it is not wrong, end that line with `{comment} gridlab: equivalent {}`):\n{diff}",
                    first + m.line - 1,
                    m.op,
                    comment = if python { "#" } else { "//" }
                );
                write!(runner.out(), "{} {msg}", style.error("✗"))?;
                runner.fail(Some(case), true, msg);
            }
            (false, true) => {
                tally.killed += 1;
                killed_marked.insert((m.line, m.op));
            }
        }
        if m.equivalent && outcome.passed() {
            survived_marked.insert((m.line, m.op));
        }
    }
    // A marker whose every mutant the check kills is stale: it would hide a real survivor later.
    for (line, op) in killed_marked.difference(&survived_marked) {
        let msg = format!(
            "{path}:{}: the check kills every `{op}` mutant of this line, so it is not equivalent; remove `{op}` from its `// gridlab: equivalent`",
            first + line - 1
        );
        writeln!(runner.out(), "{} {msg}", style.error("✗"))?;
        runner.fail(Some(case), true, msg);
    }
    runner.session.set_time_limit(limit);
    let mut text = format!("mutants of {path}:{first}: {} generated, {} killed", tally.generated, tally.killed);
    for (n, what) in [
        (tally.equivalent, "equivalent"),
        (tally.stillborn, "did not compile"),
        (tally.waiting, "need the uninitialised-read finding"),
    ] {
        if n > 0 {
            text.push_str(&format!(", {n} {what}"));
        }
    }
    text.push_str(&format!(", {} survived ({:.1} s)", tally.survived, start.elapsed().as_secs_f64()));
    let mark = if tally.survived == 0 { style.ok("✓") } else { style.error("✗") };
    writeln!(runner.out(), "{mark} {text}")
}
