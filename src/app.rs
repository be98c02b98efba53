//! From parsed command-line arguments to an exit code: the glue between `main` and the library.

use std::io::{self, IsTerminal, Write};
use std::process::ExitCode;

use crate::backend::sim::{Schedule, SimConfig};
use crate::cli::{Cli, ColorChoice, Command, DevCommand, GlobalArgs, ReplayArgs, ScheduleArg, ThemeArg};
use crate::lesson::{self, Course, Lesson};
use crate::render::Style;
use crate::render::style::Theme;
use crate::repl;
use crate::replay;
use crate::runner;
use crate::session::{self, Options};

pub fn run(cli: Cli) -> ExitCode {
    let mut options = options(&cli.global);
    let result = match cli.command {
        Some(Command::Replay(args)) => replay_cmd(&args, &options),
        Some(Command::Doctor) => crate::doctor::run(&options, &mut io::stdout()),
        Some(Command::Worker { fake: false }) => return crate::backend::gpu::worker::main(cli.global.device),
        Some(Command::Worker { fake: true }) => return crate::backend::gpu::fake::main(),
        Some(Command::Learn { id }) => repl::run(options, &repl::Start::Learn(id)),
        Some(Command::Demo { id, big }) => {
            options.style.big = big;
            repl::run(options, &repl::Start::Demo(id))
        }
        Some(Command::Lessons { reset }) => lessons_cmd(&options, reset),
        Some(Command::Dev(DevCommand::Check { dir, quiet, mutants, junit })) => {
            dev_check(dir.or(options.course.clone()), &options, DevCheck { quiet, mutants, junit: junit.as_deref() })
        }
        None => {
            let set = |var: &str| std::env::var_os(var).is_some_and(|v| !v.is_empty());
            let free = cli.no_lesson || set("GRIDLAB_NO_LESSON") || set("GRIDLAB_NO_DEMO");
            repl::run(options, if free { &repl::Start::Free } else { &repl::Start::Resume })
        }
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            // A broken pipe (`gridlab replay ... | head`) is not an error worth reporting.
            if e.kind() == io::ErrorKind::BrokenPipe {
                return ExitCode::SUCCESS;
            }
            eprintln!("gridlab: {e}");
            ExitCode::from(2)
        }
    }
}

fn options(g: &GlobalArgs) -> Options {
    let color = match g.color {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()),
    };
    let width = std::env::var("COLUMNS").ok().and_then(|c| c.parse().ok()).filter(|w| *w >= 40).unwrap_or(80);
    let schedule = match g.schedule {
        ScheduleArg::Random => Schedule::Random,
        ScheduleArg::Lockstep => Schedule::Lockstep,
        ScheduleArg::Sequential => Schedule::Sequential,
    };
    let timeout =
        std::time::Duration::from_secs_f64(if g.timeout.is_finite() && g.timeout > 0.0 { g.timeout } else { 10.0 });
    let mut sim = SimConfig { seed: g.seed, schedule, time_limit: Some(timeout), ..SimConfig::default() };
    if let Some(steps) = g.max_steps {
        sim.max_steps = steps;
    }
    if g.no_cost_model {
        sim.cost = None;
    }
    if let Some(n) = g.threads {
        sim.threads = n as usize;
    }
    Options {
        style: Style {
            color,
            width,
            big: false,
            theme: match g.theme {
                Some(ThemeArg::Light) => Theme::Light,
                Some(ThemeArg::Dark) => Theme::Dark,
                None if std::env::var("GRIDLAB_THEME").is_ok_and(|t| t.eq_ignore_ascii_case("light")) => Theme::Light,
                None => Theme::Dark,
            },
            rows: 0,
        },
        max_alloc: g.max_alloc.unwrap_or_else(session::default_max_alloc),
        sim,
        backend: g.backend,
        device: g.device,
        timeout,
        course: g.course.clone(),
        files: session::FileAccess::Anywhere,
        gpu_profile: g.gpu_profile.unwrap_or_else(crate::cost::profiles::default_profile),
        gpu_profile_chosen: g.gpu_profile.is_some(),
        // `GRIDLAB_LANG` for a classroom's machines or a CI job, as `--lang`.
        lang: g.lang.or_else(|| std::env::var("GRIDLAB_LANG").ok().as_deref().and_then(session::Lang::parse)),
    }
}

fn replay_cmd(args: &ReplayArgs, options: &Options) -> io::Result<ExitCode> {
    let scripts = match replay::collect(&args.paths) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("gridlab replay: {e}");
            return Ok(ExitCode::from(2));
        }
    };
    // Into a pipe or a file (CI, a bench, `| less`), lines go out in batches: a script of many
    // quick launches would otherwise spend a system call, and its reader a wake-up, on each.
    let mut out: Box<dyn Write> = if io::stdout().is_terminal() {
        Box::new(crate::render::Closable::new(io::stdout().lock()))
    } else {
        Box::new(crate::render::batched::Batched::new(crate::render::Closable::new(io::stdout())))
    };
    if args.compare.is_some() {
        return compare_cmd(&scripts, options, args.quiet, &mut out);
    }
    if let Some(why) = gpu_refused(options) {
        eprintln!("gridlab replay: {why}");
        return Ok(ExitCode::from(2));
    }
    let mut results = Vec::new();
    // Two lessons of one folder with one number: `dev check` and a course refuse them, and so
    // does replay (each is still replayed).
    let numbered: Vec<(std::path::PathBuf, u32)> = scripts
        .iter()
        .filter_map(|p| Some((p.clone(), lesson::parse::file_name(&p.display().to_string())?.0)))
        .collect();
    for e in lesson::course::duplicate_numbers(&numbered) {
        writeln!(out, "{} {e}", options.style.error("error:"))?;
        let mut r = runner::ScriptResult::new(e.path.clone().into());
        r.errors = 1;
        r.failures.push(e.to_string());
        results.push(r);
    }
    for (i, path) in scripts.iter().enumerate() {
        if lesson::course::is_lesson_file(path) {
            results.push(replay_lesson(path, options, args.quiet, &mut out)?);
            continue;
        }
        match replay::run_script(path, options, args.quiet, i == 0, &mut out) {
            Ok(r) => results.push(r),
            // The caller's own handling (a closed pipe ends quietly).
            Err(replay::UsageError::Output(e)) => return Err(e),
            Err(e) => {
                out.flush()?;
                eprintln!("gridlab replay: {e}");
                return Ok(ExitCode::from(2));
            }
        }
    }
    let skipped = results.iter().filter(|r| r.skipped()).count();
    let passed = results.iter().filter(|r| r.passed() && !r.skipped()).count();
    let failed = results.len() - passed - skipped;
    let lessons = scripts.iter().filter(|p| lesson::course::is_lesson_file(p)).count();
    let what = match (scripts.len() - lessons, lessons) {
        (n, 0) => format!("{n} script{}", plural(n)),
        (0, l) => format!("{l} lesson{}", plural(l)),
        (n, l) => format!("{n} script{} and {l} lesson{}", plural(n), plural(l)),
    };
    writeln!(out, "replayed {what}")?;
    if skipped > 0 {
        writeln!(out, "{passed} passed, {failed} failed, {skipped} skipped")?;
    } else {
        writeln!(out, "{passed} passed, {failed} failed")?;
    }
    if let Some(path) = &args.junit
        && let Err(e) = std::fs::write(path, replay::junit(&results))
    {
        out.flush()?;
        eprintln!("gridlab replay: cannot write the JUnit report to {}: {e}", path.display());
        return Ok(ExitCode::from(2));
    }
    Ok(if failed == 0 { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// Why an explicit `--backend gpu` cannot be honoured, when it cannot: CI that asked for the GPU
/// must not be told that the simulator passed. Only `auto` falls back to the simulator.
fn gpu_refused(options: &Options) -> Option<String> {
    if options.backend != crate::backend::BackendKind::Gpu {
        return None;
    }
    let mut probe = lesson::session(options.clone(), None);
    probe.resolve_backend();
    let why = probe.gpu_problem()?;
    Some(format!(
        "--backend gpu was asked for, but the GPU backend is not usable: {why} (`--backend auto` falls back to the simulator)"
    ))
}

/// Replay one lesson file: solutions in place of exercises, checks included. A lesson that
/// cannot be read is a failure, reported with its file and line.
fn replay_lesson(
    path: &std::path::Path,
    options: &Options,
    quiet: bool,
    out: &mut dyn Write,
) -> io::Result<runner::ScriptResult> {
    let shown = path.display().to_string();
    let parsed = read_lesson(path);
    // The lesson's own course, for `:lesson` and `:lessons` in its blocks (not the built-in one).
    let options = &Options {
        course: options.course.clone().or_else(|| path.parent().map(|p| p.to_path_buf())),
        ..options.clone()
    };
    match parsed {
        Ok(l) => {
            // Each language the lesson is written in, one after the other, as one result.
            let mut all: Option<runner::ScriptResult> = None;
            for lang in replay::lesson::languages(&l, options) {
                let options = &Options { lang: Some(lang), ..options.clone() };
                let r = replay::lesson::run_lesson(&l, options, replay::lesson::Mode::Replay, quiet, out)?;
                all = Some(match all {
                    None => r,
                    Some(mut a) => {
                        a.absorb(r);
                        a
                    }
                });
            }
            Ok(all.expect("a lesson runs in at least one language"))
        }
        Err(e) => {
            writeln!(out, "{} {e}", options.style.error("error:"))?;
            writeln!(out, "{} {shown}", options.style.error("FAIL"))?;
            let mut r = runner::ScriptResult::new(path.to_path_buf());
            r.errors = 1;
            r.failures.push(e.to_string());
            Ok(r)
        }
    }
}

/// `gridlab lessons [--reset]`.
fn lessons_cmd(options: &Options, reset: bool) -> io::Result<ExitCode> {
    // No course at all is 2; lessons that cannot be read are 1, after listing the others.
    let (course, problems) = match Course::chosen_leniently(options.course.as_deref()) {
        Ok(read) => read,
        Err(e) => {
            eprintln!("{} {e}", options.style.error("error:"));
            return Ok(ExitCode::from(2));
        }
    };
    for e in &problems {
        eprintln!("{} {e}", options.style.error("error:"));
    }
    let status = if problems.is_empty() { ExitCode::SUCCESS } else { ExitCode::from(1) };
    let store = lesson::progress::Store::for_course(&course.name);
    let mut out = io::stdout().lock();
    if reset {
        let place = store.path().map(|p| p.display().to_string()).unwrap_or_else(|| "(nowhere)".into());
        match store.reset() {
            Ok(true) => writeln!(out, "progress cleared ({place}); `gridlab` starts at lesson 1 again")?,
            Ok(false) => writeln!(out, "no progress to clear ({place})")?,
            Err(e) => {
                eprintln!("gridlab lessons: cannot remove {place}: {e}");
                return Ok(ExitCode::from(2));
            }
        }
        return Ok(ExitCode::SUCCESS);
    }
    let (progress, note) = store.load();
    if let Some(note) = note {
        writeln!(out, "{}", options.style.warn(&format!("note: {note}")))?;
    }
    let current = progress.current.as_deref().and_then(|id| course.lessons.iter().position(|l| l.id == id));
    lesson::guide::write_course(&mut out, &course, &progress, current, &options.style)?;
    Ok(status)
}

/// How `dev check` runs: `--quiet`, `--mutants`, `--junit FILE`.
struct DevCheck<'a> {
    quiet: bool,
    mutants: bool,
    junit: Option<&'a std::path::Path>,
}

/// `gridlab dev check [DIR | FILE.md]`: every lesson parses, every block runs, every starter
/// compiles and fails its check for the exercise's reason, and every solution passes (and with
/// `--mutants`, every mutant of a solution fails). A lesson that cannot be read is reported and
/// the others are still checked. Lessons run in parallel, each in its own session; their reports
/// come out in course order. Exit 2 when there is no course (a missing folder or file, a folder
/// without lessons), 1 for problems in it.
fn dev_check(dir: Option<std::path::PathBuf>, options: &Options, how: DevCheck) -> io::Result<ExitCode> {
    let DevCheck { quiet, mutants, junit } = how;
    if let Some(why) = gpu_refused(options) {
        eprintln!("gridlab dev check: {why}");
        return Ok(ExitCode::from(2));
    }
    // One lesson file, as `replay FILE.md` takes it.
    let file = dir.as_deref().filter(|p| p.is_file()).map(std::path::Path::to_path_buf);
    if let Some(file) = &file
        && !lesson::course::is_lesson_file(file)
    {
        eprintln!(
            "{} {}: not a lesson: dev check takes a course folder or a lesson file named NN-slug.md",
            options.style.error("error:"),
            file.display()
        );
        return Ok(ExitCode::from(2));
    }
    let folder = match &file {
        Some(f) => f.parent().map(std::path::Path::to_path_buf),
        None => dir.clone().or(options.course.clone()),
    };
    // Sessions open this course for `:lesson` and `:lessons`, not the built-in one.
    let options = &Options { course: folder, ..options.clone() };
    let (course, mut problems) = match &file {
        Some(f) => match read_lesson(f) {
            Ok(l) => (Course { name: f.display().to_string(), lessons: vec![l] }, Vec::new()),
            Err(e) => (Course { name: f.display().to_string(), lessons: Vec::new() }, vec![e]),
        },
        None => match Course::chosen_leniently(dir.as_deref()) {
            Ok(read) => read,
            Err(e) => {
                eprintln!("{} {e}", options.style.error("error:"));
                return Ok(ExitCode::from(2));
            }
        },
    };
    problems.sort_by(|a, b| a.path.cmp(&b.path).then(a.line.cmp(&b.line)));
    let start = std::time::Instant::now();
    let mode = if mutants { replay::lesson::Mode::Mutants } else { replay::lesson::Mode::DevCheck };
    // On the GPU one device serves every session: lessons then run one after another.
    let workers = if options.backend != crate::backend::BackendKind::Sim {
        1
    } else {
        std::thread::available_parallelism().map_or(1, |n| n.get()).min(course.lessons.len()).max(1)
    };
    // Each lesson in each language it is written in.
    let jobs: Vec<(&Lesson, crate::session::Lang)> = course
        .lessons
        .iter()
        .flat_map(|l| replay::lesson::languages(l, options).into_iter().map(move |lang| (l, lang)))
        .collect();
    let reports = replay::parallel(&jobs, workers, "dev-check", |(l, lang)| {
        let mut buf = Vec::new();
        let options = &Options { lang: Some(*lang), ..options.clone() };
        let r = replay::lesson::run_lesson(l, options, mode, quiet, &mut buf);
        (buf, r)
    })?;
    let mut out = crate::render::Closable::new(io::stdout().lock());
    let mut results = Vec::new();
    for e in &problems {
        eprintln!("{} {e}", options.style.error("error:"));
        let mut r = runner::ScriptResult::new(e.path.clone().into());
        r.errors = 1;
        r.failures.push(e.to_string());
        results.push(r);
    }
    let mut failed = 0;
    let mut skipped = 0;
    let exercises: usize = course.lessons.iter().map(|l| l.exercises().count()).sum();
    // A lesson's languages ran as separate jobs, next to each other: one result each lesson.
    let mut merged: Vec<runner::ScriptResult> = Vec::new();
    for ((l, _), (buf, r)) in jobs.iter().zip(reports) {
        out.write_all(&buf)?;
        let r = r?;
        match merged.last_mut() {
            Some(last) if last.path.as_path() == std::path::Path::new(&l.path) => last.absorb(r),
            _ => merged.push(r),
        }
    }
    for r in merged {
        if r.skipped() {
            skipped += 1;
        } else if !r.passed() {
            failed += 1;
        }
        results.push(r);
    }
    let n = course.lessons.len();
    let unread = if problems.is_empty() {
        String::new()
    } else {
        format!(", {} problem{} reading the course", problems.len(), plural(problems.len()))
    };
    writeln!(
        out,
        "checked {n} lesson{} ({exercises} exercise{}{}) of {}: {} sound, {failed} with problems{}{unread} in {:.1} s",
        plural(n),
        plural(exercises),
        if mutants { ", with mutants" } else { "" },
        course.name,
        n - failed - skipped,
        if skipped > 0 { format!(", {skipped} skipped") } else { String::new() },
        start.elapsed().as_secs_f64()
    )?;
    if let Some(path) = junit
        && let Err(e) = std::fs::write(path, replay::junit_named(&results, "gridlab dev check"))
    {
        eprintln!("gridlab dev check: cannot write the JUnit report to {}: {e}", path.display());
        return Ok(ExitCode::from(2));
    }
    Ok(if failed == 0 && problems.is_empty() { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

/// One lesson file, read and parsed; an error names the file (and line).
fn read_lesson(path: &std::path::Path) -> Result<lesson::Lesson, lesson::LessonError> {
    let shown = path.display().to_string();
    crate::script::input::read_script(path)
        .map_err(|e| lesson::LessonError { path: shown.clone(), line: 0, message: format!("cannot read it: {e}") })
        .and_then(|text| lesson::parse(&shown, &text))
}

fn compare_cmd(
    scripts: &[std::path::PathBuf],
    options: &Options,
    quiet: bool,
    out: &mut dyn Write,
) -> io::Result<ExitCode> {
    match replay::compare::compare_scripts(scripts, options, quiet, out) {
        Ok(summary) => Ok(if summary.different.is_empty() { ExitCode::SUCCESS } else { ExitCode::from(1) }),
        Err(replay::compare::CompareError::Usage(replay::UsageError::Output(e))) => Err(e),
        Err(e) => {
            eprintln!("gridlab replay: {e}");
            Ok(ExitCode::from(2))
        }
    }
}
