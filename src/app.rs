//! From parsed command-line arguments to an exit code: the glue between `main` and the library.

use std::io::{self, IsTerminal, Write};
use std::process::ExitCode;

use crate::backend::BackendKind;
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
        // There is no GPU backend yet: `auto` and `gpu` both run on the simulator (and say so).
        backend: BackendKind::Sim,
    }
}

pub(crate) fn note_backend(requested: BackendKind, out: &mut dyn Write) -> io::Result<()> {
    match requested {
        BackendKind::Sim => Ok(()),
        BackendKind::Auto => {
            writeln!(out, "backend: sim (auto picks the simulator: this version of gridlab has no GPU backend yet)")
        }
        BackendKind::Gpu => writeln!(out, "backend: sim (this version of gridlab has no GPU backend yet)"),
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
    let mut results = Vec::new();
    for path in &scripts {
        match replay::run_script(path, options, args.quiet, &mut out) {
            Ok(r) => results.push(r),
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
