//! The command line, declared with clap's derive API: the doc comments are the help text.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::backend::BackendKind;

#[derive(Debug, Parser)]
#[command(
    name = "gridlab",
    version,
    about = "Learn to write CUDA kernels: type a kernel, launch it, see what every thread did.",
    long_about = "gridlab compiles the CUDA C kernels you type, launches them with the grid and block \
                  sizes you choose, and shows the results. The `sim` backend is a CPU simulator that \
                  runs everywhere and explains races and out-of-bounds accesses that a GPU hides.",
    after_help = "Run without a command to start the course where you left off (the first lesson the first time).\n\
                  Examples:\n  gridlab learn 3\n  gridlab --no-lesson\n  gridlab replay lessons/ --backend sim --junit report.xml"
)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,

    /// Start a free session, without opening a lesson (or set GRIDLAB_NO_LESSON=1).
    #[arg(long, alias = "no-demo")]
    pub no_lesson: bool,

    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Debug, Args, Clone)]
pub struct GlobalArgs {
    /// Where kernels run: the CPU simulator, the GPU, or the GPU when one works.
    #[arg(long, value_enum, default_value_t = BackendKind::Auto, global = true)]
    pub backend: BackendKind,

    /// Seed of the simulator's random schedule and of `random(...)` without a seed.
    #[arg(long, default_value_t = 0, global = true)]
    pub seed: u64,

    /// Order in which the simulator interleaves threads.
    #[arg(long, value_enum, default_value_t = ScheduleArg::Random, global = true)]
    pub schedule: ScheduleArg,

    /// Refuse buffers beyond this many bytes in total (e.g. 512M, 4G). Default: half of memory.
    #[arg(long, value_name = "SIZE", value_parser = parse_size, global = true)]
    pub max_alloc: Option<u64>,

    /// Simulator step budget per launch (warp steps); an endless loop stops there.
    #[arg(long, value_name = "STEPS", global = true)]
    pub max_steps: Option<u64>,

    /// The GPU the simulator's cost model estimates times for: h100 (default), a100, l4, rtx4090.
    #[arg(long, value_name = "NAME", value_parser = parse_gpu_profile, global = true)]
    pub gpu_profile: Option<&'static crate::cost::GpuProfile>,

    /// Turn the simulator's cost model off (faster replays; `:time` then counts warp steps only).
    #[arg(long, global = true)]
    pub no_cost_model: bool,

    /// Threads the simulator may run a launch's blocks on (default: every core, or
    /// `GRIDLAB_THREADS`); 1 runs each launch on one thread. The output is the same for any
    /// number.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..), global = true)]
    pub threads: Option<u16>,

    /// Which GPU to use, when there are several (see `gridlab doctor`).
    #[arg(long, default_value_t = 0, global = true)]
    pub device: usize,

    /// Stop a launch that runs longer than this many seconds (an endless loop, say), on the GPU
    /// or the simulator.
    #[arg(long, value_name = "SECS", default_value_t = 10.0, global = true)]
    pub timeout: f64,

    /// When to use colour.
    #[arg(long, value_enum, default_value_t = ColorChoice::Auto, global = true)]
    pub color: ColorChoice,

    /// The terminal's background, which colours must read on: `light` for dark text on a light
    /// background (a projector's white screen); or set GRIDLAB_THEME.
    #[arg(long, value_enum, global = true)]
    pub theme: Option<ThemeArg>,

    /// A course folder to use instead of the built-in lessons (or set GRIDLAB_COURSE).
    #[arg(long, value_name = "DIR", global = true)]
    pub course: Option<PathBuf>,

    /// The language lessons are shown and checked in: cuda (CUDA C) or python (Numba). Saved
    /// with your progress; `:lang` switches in a lesson (or set GRIDLAB_LANG). Replay and dev
    /// check take both without it.
    #[arg(long, value_enum, global = true)]
    pub lang: Option<crate::session::Lang>,
}

fn parse_gpu_profile(name: &str) -> Result<&'static crate::cost::GpuProfile, String> {
    crate::cost::profiles::find(name)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ScheduleArg {
    Random,
    Lockstep,
    Sequential,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ThemeArg {
    Dark,
    Light,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ColorChoice {
    Auto,
    Always,
    Never,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run .gridlab scripts and Python (Numba) programs non-interactively, echoing each input and its output.
    ///
    /// Exit status: 0 when every statement ran and every expect held, 1 when an expect failed, a
    /// statement errored or a lesson has problems (it cannot be read, two share a number), 2 for
    /// usage errors (no such file, no scripts or lessons found).
    #[command(visible_alias = "run")]
    Replay(ReplayArgs),

    /// Open a lesson of the course (by number, id or slug).
    Learn {
        /// e.g. 3, 03-one-thread-per-element, or one-thread-per-element.
        id: String,
    },

    /// List the course's lessons with your progress.
    ///
    /// Exit status: 0 when every lesson can be read, 1 when some cannot (the others are listed),
    /// 2 when there is no course (no such folder, no NN-slug.md lessons in it).
    Lessons {
        /// Forget your progress (which lessons you saw, which exercises you solved).
        #[arg(long)]
        reset: bool,
    },

    /// Present a lesson live: each Enter on an empty line shows the next part or statement.
    Demo {
        /// The lesson, as for `learn`.
        id: String,
        /// Size for a projector: roomier tables that still fit the screen (100x30), no dim
        /// text; with `--theme light` for a white screen.
        #[arg(long)]
        big: bool,
    },

    /// Tools for course authors.
    #[command(subcommand)]
    Dev(DevCommand),

    /// Check the GPU set-up: driver, NVRTC, devices, and which backend `auto` picks.
    ///
    /// Exit status: 0 when a GPU is usable, 1 otherwise (with what to install).
    Doctor,

    /// The GPU worker process (started by gridlab itself, not by hand).
    #[command(hide = true)]
    Worker {
        /// Speak the worker protocol without CUDA, crashing or hanging on request: for gridlab's
        /// own tests (`backend/gpu/fake.rs`).
        #[arg(long, hide = true)]
        fake: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum DevCommand {
    /// Verify a course: every lesson parses, every block runs, every starter compiles and fails
    /// its check for the exercise's reason (wrong values, a finding, a cost), every solution
    /// passes. Every problem is reported, not only the first.
    ///
    /// Exit status: 0 when the course is sound, 1 for problems in it, 2 when there is no course
    /// (no such folder or file, no NN-slug.md lessons in it).
    Check {
        /// The course folder, or one lesson file (default: `--course`, else the built-in lessons).
        dir: Option<PathBuf>,
        /// Print only problems and the summary.
        #[arg(long, short)]
        quiet: bool,
        /// Also make mutants of each solution (an off-by-one, a dropped guard, `=` for `+=`,
        /// a loop capped at 1024, the index written for the element ...) and require that the
        /// check rejects every one; a surviving mutant is shown with its diff.
        #[arg(long)]
        mutants: bool,
        /// Write a JUnit XML report (a test case per lesson step, grouped by lesson) for CI.
        #[arg(long, value_name = "FILE")]
        junit: Option<PathBuf>,
    },
}

#[derive(Debug, Args)]
pub struct ReplayArgs {
    /// Scripts (.gridlab) and lessons (NN-slug.md), or folders searched for both.
    #[arg(required = true, value_name = "PATH")]
    pub paths: Vec<PathBuf>,

    /// Write a JUnit XML report (one test case per script, one per lesson step) for CI systems.
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,

    /// Print only failures and the summary, not every input and output.
    #[arg(long, short)]
    pub quiet: bool,

    /// Run each script on both backends in lockstep and report where buffers or scalars differ
    /// (exit 1), instead of the transcript. Exit 2 when the GPU is not usable.
    #[arg(long, value_name = "sim,gpu", value_parser = crate::replay::compare::parse_backends, conflicts_with = "junit")]
    pub compare: Option<crate::replay::compare::SimAndGpu>,
}

/// `4096`, `512K`, `512M`, `4G`, `1T` (powers of 1024; a trailing `B` or `iB` is accepted).
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let t = t.strip_suffix("iB").or_else(|| t.strip_suffix('B')).unwrap_or(t);
    let (num, mult) = match t.chars().last() {
        Some('K' | 'k') => (&t[..t.len() - 1], 1u64 << 10),
        Some('M' | 'm') => (&t[..t.len() - 1], 1 << 20),
        Some('G' | 'g') => (&t[..t.len() - 1], 1 << 30),
        Some('T' | 't') => (&t[..t.len() - 1], 1 << 40),
        _ => (t, 1),
    };
    let n: f64 = num.trim().parse().map_err(|_| format!("`{s}` is not a size; write e.g. 512M or 4G"))?;
    if !(n.is_finite() && n >= 0.0) {
        return Err(format!("`{s}` is not a size; write e.g. 512M or 4G"));
    }
    Ok((n * mult as f64) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_with_binary_suffixes() {
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("512M"), Ok(512 << 20));
        assert_eq!(parse_size("1.5GiB"), Ok(3 << 29));
        assert!(parse_size("lots").is_err());
    }

    #[test]
    fn the_command_line_is_consistent() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }
}
