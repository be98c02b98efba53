//! From parsed command-line arguments to an exit code: the glue between `main` and the library.

use std::io::{self, IsTerminal, Write};
use std::process::ExitCode;

use crate::backend::sim::{Schedule, SimConfig};
use crate::cli::{Cli, ColorChoice, Command, GlobalArgs, ReplayArgs, ScheduleArg};
use crate::render::Style;
use crate::repl;
use crate::replay;
use crate::session::{self, Options};

pub fn run(cli: Cli) -> ExitCode {
    let options = options(&cli.global);
    let result = match cli.command {
        Some(Command::Replay(args)) => replay_cmd(&args, &options),
        Some(Command::Doctor) => crate::doctor::run(&options, &mut io::stdout()),
        Some(Command::Worker) => return crate::backend::gpu::worker::main(cli.global.device),
        None => {
            let no_demo = std::env::var_os("GRIDLAB_NO_DEMO").is_some_and(|v| !v.is_empty());
            repl::run(options, &repl::Settings { demo: !(cli.no_demo || no_demo), lesson: None })
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
    let mut sim = SimConfig { seed: g.seed, schedule, ..SimConfig::default() };
    if let Some(steps) = g.max_steps {
        sim.max_steps = steps;
    }
    Options {
        style: Style { color, width },
        max_alloc: g.max_alloc.unwrap_or_else(session::default_max_alloc),
        sim,
        backend: g.backend,
        device: g.device,
        timeout: std::time::Duration::from_secs_f64(if g.timeout.is_finite() && g.timeout > 0.0 {
            g.timeout
        } else {
            10.0
        }),
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
    let stdout = io::stdout();
    let mut out = stdout.lock();
    if args.compare.is_some() {
        return compare_cmd(&scripts, options, args.quiet, &mut out);
    }
    let mut results = Vec::new();
    for (i, path) in scripts.iter().enumerate() {
        match replay::run_script(path, options, args.quiet, i == 0, &mut out) {
            Ok(r) => results.push(r),
            // The caller's own handling (a closed pipe ends quietly).
            Err(replay::UsageError::Output(e)) => return Err(e),
            Err(e) => {
                eprintln!("gridlab replay: {e}");
                return Ok(ExitCode::from(2));
            }
        }
    }
    let passed = results.iter().filter(|r| r.passed()).count();
    let failed = results.len() - passed;
    writeln!(out, "replayed {} script{}", results.len(), if results.len() == 1 { "" } else { "s" })?;
    writeln!(out, "{passed} passed, {failed} failed")?;
    if let Some(path) = &args.junit
        && let Err(e) = std::fs::write(path, replay::junit(&results))
    {
        eprintln!("gridlab replay: cannot write the JUnit report to {}: {e}", path.display());
        return Ok(ExitCode::from(2));
    }
    Ok(if failed == 0 { ExitCode::SUCCESS } else { ExitCode::from(1) })
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
