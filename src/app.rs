//! From parsed command-line arguments to an exit code: the glue between `main` and the library.

use std::io::{self, BufRead, IsTerminal, Write};
use std::process::ExitCode;

use crate::backend::BackendKind;
use crate::backend::sim::{Schedule, SimConfig};
use crate::cli::{Cli, ColorChoice, Command, GlobalArgs, ReplayArgs, ScheduleArg};
use crate::render::Style;
use crate::replay;
use crate::script;
use crate::session::{self, Options, Session, Status};

/// The demo replayed when gridlab starts interactively, until the guided lessons arrive.
const DEMO: &str = include_str!("../assets/demo.gridlab");

pub fn run(cli: Cli) -> ExitCode {
    let options = options(&cli.global);
    let result = match cli.command {
        Some(Command::Replay(args)) => replay_cmd(&args, &options),
        Some(Command::Doctor) => crate::doctor::run(&options, &mut io::stdout()),
        Some(Command::Worker) => return crate::backend::gpu::worker::main(cli.global.device),
        None => interactive(&options),
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
    let mut results = Vec::new();
    for (i, path) in scripts.iter().enumerate() {
        match replay::run_script(path, options, args.quiet, i == 0, &mut out) {
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

/// No command: with a terminal, show the demo and read statements at a prompt; with piped
/// input, run it like a script.
fn interactive(options: &Options) -> io::Result<ExitCode> {
    let stdin = io::stdin();
    let stdout = io::stdout();
    let mut out = stdout.lock();
    let mut session = Session::new(options.clone());
    let tty = stdin.is_terminal();
    if tty {
        writeln!(out, "{}", options.style.bold("gridlab: write a CUDA kernel, launch it, see what every thread did."))?;
        writeln!(
            out,
            "{}",
            options.style.dim("A short demo first; then it's your turn. Type :help for help, Ctrl-D to leave.")
        )?;
        writeln!(out)?;
        if options.backend != BackendKind::Sim {
            writeln!(out, "{}", session.resolve_backend())?;
        }
        session.eval_text("demo.gridlab", DEMO, true, &mut out)?;
        session.reset();
        writeln!(out)?;
    }
    let mut worst = Status::Ok;
    let mut pending = String::new();
    let mut first_line = 1u32;
    let mut line_no = 0u32;
    let prompt = |out: &mut dyn Write, more: bool| -> io::Result<()> {
        if tty {
            write!(out, "{}", if more { "... " } else { "sim> " })?;
            out.flush()?;
        }
        Ok(())
    };
    prompt(&mut out, false)?;
    for line in stdin.lock().lines() {
        let line = line?;
        line_no += 1;
        if pending.is_empty() {
            first_line = line_no;
        }
        pending.push_str(&line);
        pending.push('\n');
        if !script::is_complete(&pending) {
            prompt(&mut out, true)?;
            continue;
        }
        let text = std::mem::take(&mut pending);
        let status = if tty {
            session.eval_typed(&text, &mut out)?
        } else {
            // Piped input is a script: echo it and keep its line numbers.
            let padded = format!("{}{text}", "\n".repeat(first_line as usize - 1));
            session.eval_text("<stdin>", &padded, true, &mut out)?
        };
        worst = session::worse(worst, status);
        prompt(&mut out, false)?;
    }
    if !pending.trim().is_empty() {
        let status = session.eval_typed(&pending, &mut out)?;
        worst = session::worse(worst, status);
    }
    if tty {
        writeln!(out)?;
        return Ok(ExitCode::SUCCESS);
    }
    Ok(if worst == Status::Ok { ExitCode::SUCCESS } else { ExitCode::from(1) })
}
