//! A gridlab session: the state behind the prompt, and `Session::eval` that runs one input.
//!
//! A session is three parts with walls of their own, and what ties them together:
//! - `workspace.rs`, `Workspace`: what the learner made: the CUDA module and its sources,
//!   buffers (host copies, the single source of truth), scalars, the module's constants, module
//!   variables' values, Python kernels, refused definitions;
//! - `backend.rs`, `Backends`: where launches run: the simulator, the GPU backend (started in
//!   the background) and which of them now;
//! - `record.rs`, `Record`: what ran: inputs for `:save`, the transcript for `:export`, the
//!   last launch and its findings.
//!
//! The rooms that use them: `pipeline.rs` (an input from text to its effect), `launch.rs`
//! (checking and running a launch statement), `cost.rs` (the `cost` statement and the cost
//! views), `views.rs` (`:race`, `:map`, `:why`, `:time`), `command.rs` (what a `:` command is,
//! defined once), `dispatch.rs` (running a `:` line, `:help`), `settings.rs` (the settings,
//! listings and views), `files.rs` (`:load`, `:save`, `:export`), `extension.rs` (how `lesson`
//! adds its commands, and the one channel between the session and it), `state.rs` (reset, save,
//! restore), `symbols.rs` (`__constant__` variables set from statements), `python.rs` and
//! `host_python.rs` (Numba kernels and host Python).
//!
//! The REPL, `replay` and lessons all feed inputs through the same `eval`, so a statement means
//! the same thing wherever it is typed. Nothing outside `session/` sees a field of [`Session`]:
//! callers use its methods. A backend only ever borrows buffers for the length of one launch.

mod backend;
pub mod command;
mod cost;
pub mod dispatch;
mod extension;
pub mod files;
pub mod host_python;
mod launch;
mod pipeline;
mod python;
mod record;
mod settings;
mod state;
mod symbols;
mod views;
mod workspace;

/// The fields of a `cost` record (`c.time_us` ...), for what documents them.
pub use cost::FIELDS as COST_FIELDS;
pub use extension::{Extension, Question};
pub use host_python::{HostLaunch, host_definition, host_globals};
pub use launch::{FinishedLaunch, MAX_IN_FLIGHT};
pub use python::HostGlobal;

use backend::Backends;
pub(crate) use record::LastLaunch;
use record::Record;
use workspace::Workspace;

use std::time::Duration;

use crate::backend::sim::{Schedule, SimConfig};
use crate::backend::{BackendKind, LaunchReport, LaunchSpec};
use crate::buffer::Buffer;
use crate::cuda::Module;
use crate::diag::SourceMap;
use crate::finding::Finding;
use crate::render::Style;
use crate::script::eval::Env;
use crate::value::Value;

/// How one input went, for `replay`'s exit code and summary.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    Ok,
    /// An `expect` did not hold.
    ExpectFailed,
    /// The input could not run (parse error, unknown name, refused launch, ...).
    Error,
}

/// Settings fixed when the session starts (from the command line).
#[derive(Clone, Debug)]
pub struct Options {
    pub style: Style,
    /// Refuse buffers beyond this many bytes in total.
    pub max_alloc: u64,
    pub sim: SimConfig,
    /// What the learner asked for; `Auto` becomes `Gpu` when one works.
    pub backend: BackendKind,
    /// Which GPU, when there are several.
    pub device: usize,
    /// Per GPU launch; a kernel running longer is stopped.
    pub timeout: Duration,
    /// The course folder (`--course`); `None` for the built-in course.
    pub course: Option<std::path::PathBuf>,
    /// Where `:load`, `:save` and `:export` may reach.
    pub files: FileAccess,
    /// The GPU the simulator's cost model estimates times for (`--gpu-profile`, `:reference`).
    pub gpu_profile: &'static crate::cost::GpuProfile,
    /// The learner named the reference GPU (`--gpu-profile`, `:reference NAME`); otherwise a
    /// GPU the session runs on is its own reference when the model knows it.
    pub gpu_profile_chosen: bool,
    /// The language lessons are shown in (`--lang`); `None`: the one saved with the learner's
    /// progress, asked for on the course's first start.
    pub lang: Option<Lang>,
}

/// The language a learner writes kernels in. Both always work at the prompt; this picks which
/// one lessons show, put in the editor and check.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, clap::ValueEnum)]
pub enum Lang {
    /// CUDA C: `__global__ void k(float *a)`, launched `k<<<blocks, threads>>>(a)`.
    #[default]
    #[value(alias = "c", alias = "cu", alias = "cpp")]
    Cuda,
    /// Numba's Python: `@cuda.jit def k(a):`, launched `k[blocks, threads](a)`.
    #[value(alias = "numba", alias = "py")]
    Python,
}

impl Lang {
    pub const ALL: [Lang; 2] = [Lang::Cuda, Lang::Python];

    /// The word `:lang` and `--lang` take, and progress files keep.
    pub fn name(self) -> &'static str {
        match self {
            Lang::Cuda => "cuda",
            Lang::Python => "python",
        }
    }

    /// How the learner would name it.
    pub fn title(self) -> &'static str {
        match self {
            Lang::Cuda => "CUDA C",
            Lang::Python => "Python (Numba)",
        }
    }

    /// `cuda`, `c`, `python`, `numba`, `py`, any case.
    pub fn parse(word: &str) -> Option<Lang> {
        match word.trim().to_ascii_lowercase().as_str() {
            "cuda" | "c" | "cu" | "cpp" | "cuda-c" | "cuda c" => Some(Lang::Cuda),
            "python" | "py" | "numba" => Some(Lang::Python),
            _ => None,
        }
    }

    /// How a launch is written in it.
    pub fn syntax(self) -> crate::render::launch::Syntax {
        match self {
            Lang::Cuda => crate::render::launch::Syntax::Cuda,
            Lang::Python => crate::render::launch::Syntax::Numba,
        }
    }
}

impl Default for Options {
    fn default() -> Options {
        Options {
            style: Style::plain(),
            max_alloc: default_max_alloc(),
            sim: SimConfig::default(),
            backend: BackendKind::Sim,
            device: 0,
            timeout: Duration::from_secs(10),
            course: None,
            files: FileAccess::Anywhere,
            gpu_profile: crate::cost::profiles::default_profile(),
            gpu_profile_chosen: false,
            lang: None,
        }
    }
}

/// Where the file commands (`:load`, `:save`, `:export`) of a session may reach. What the
/// learner types may name any file; a replayed script is someone else's, and may only touch
/// files in its own folder (see `docs/security.md`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum FileAccess {
    #[default]
    Anywhere,
    /// Relative paths inside this folder, without `..`.
    Within(std::path::PathBuf),
}

/// Half of physical memory, or 4 GiB where it cannot be read.
pub fn default_max_alloc() -> u64 {
    let total = std::fs::read_to_string("/proc/meminfo").ok().and_then(|s| {
        let line = s.lines().find(|l| l.starts_with("MemTotal:"))?;
        let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
        Some(kib * 1024)
    });
    total.map_or(4 << 30, |t| t / 2)
}

/// Where a check's run goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunOn {
    Sim { seed: u64, schedule: Schedule },
    Gpu,
}

/// What [`Session::last_launch`] tells about the last launch.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LaunchOutline {
    /// The buffers it was given, by name.
    pub given: Vec<String>,
    /// Those whose contents it changed.
    pub changed: Vec<String>,
    /// It had a race finding.
    pub racy: bool,
}

pub struct Session {
    /// What the learner made: module, sources, buffers, scalars, module variables' values.
    work: Workspace,
    /// Where launches run: the simulator, the GPU, and which of them now.
    backends: Backends,
    options: Options,
    /// What ran: inputs, what they printed, the last launch.
    record: Record,
    /// A yes/no question for the learner, and the input to run on yes (`:save` over an
    /// existing file asks before writing over it); the REPL asks, elsewhere the message says
    /// what to type instead.
    question: Option<Question>,
    /// Commands and state a layer above added (the lesson guide), see [`Extension`].
    extension: Option<Box<dyn Extension>>,
    /// The scripts `:load` is running now, outermost first (one may not load itself).
    loading: Vec<std::path::PathBuf>,
    /// `exit`, `quit`, `:q` and `:quit` leave: see [`Session::allow_quit`].
    leave: Leave,
    /// The caller runs a series of inputs and reads results back at its end
    /// ([`Session::keep_results_on_device`]): a GPU launch's results may stay on the device
    /// from one input to the next launch.
    deferring: bool,
    /// How deep in [`Session::eval`] this is (a Python program's launch runs inside an input).
    depth: u32,
    /// A GPU launch may be left running while the next input is checked
    /// ([`Session::pipeline_launches`]).
    pipelining: bool,
    /// The GPU launches sent and not answered yet, oldest first, and those that were, answered
    /// and reported, until the caller takes them ([`Session::finish_launch`]).
    in_flight: std::collections::VecDeque<launch::InFlight>,
    finished: std::collections::VecDeque<launch::FinishedLaunch>,
    /// The last input left its launch in flight ([`Session::launch_in_flight`]).
    left_in_flight: bool,
    /// The last statement asked whether it is a launch, parsed ([`Session::is_launch`]): a
    /// replayed launch is asked about by the runner and by `eval`, and then runs, and each of
    /// them parsed the line again.
    parsed: std::cell::RefCell<launch::ParsedLine>,
}

/// Whether leaving was asked for, and whether it may be: only input typed (or piped) into the
/// prompt leaves. In a replayed script, a lesson, or a file run by `:load`, `exit` does nothing
/// but say so, so a script always runs to its end.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Leave {
    /// The driver leaves when asked (the REPL, piped stdin).
    pub allowed: bool,
    /// Inside `:load`: the file is a script.
    pub loading: u32,
    /// Asked for and allowed: the driver stops reading input.
    pub asked: bool,
}

impl Session {
    pub fn new(options: Options) -> Session {
        Session {
            backends: Backends::new(&options),
            work: Workspace::default(),
            options,
            record: Record::default(),
            extension: None,
            question: None,
            loading: Vec::new(),
            leave: Leave::default(),
            deferring: false,
            depth: 0,
            pipelining: false,
            in_flight: Default::default(),
            finished: Default::default(),
            left_in_flight: false,
            parsed: Default::default(),
        }
    }

    /// Let `exit`, `quit`, `:q` and `:quit` leave: for input typed at the prompt or piped in.
    pub fn allow_quit(&mut self) {
        self.leave.allowed = true;
    }

    /// An input asked to leave (and leaving is allowed): the driver stops reading input.
    pub fn wants_to_quit(&self) -> bool {
        self.leave.asked
    }

    /// `exit` or `:quit` (as `how`): leave when allowed, otherwise say why nothing happens.
    pub(crate) fn quit(&mut self, how: &str, out: &mut dyn std::io::Write) -> std::io::Result<Status> {
        if self.leave.allowed && self.leave.loading == 0 {
            self.leave.asked = true;
        } else {
            let note = format!("`{how}` leaves the prompt; a script runs to its end, so here it does nothing");
            writeln!(out, "{}", self.options.style.dim(&note))?;
        }
        Ok(Status::Ok)
    }

    pub fn style(&self) -> &Style {
        &self.options.style
    }

    pub fn sources(&self) -> &SourceMap {
        self.work.sources()
    }

    pub fn module(&self) -> &Module {
        self.work.module()
    }

    /// The settings the session started with, as commands have changed them since.
    pub fn options(&self) -> &Options {
        &self.options
    }

    /// The terminal's size, for what is drawn next (the REPL reads it before each input).
    pub fn set_screen(&mut self, width: usize, rows: usize) {
        self.options.style.width = width;
        self.options.style.rows = rows;
    }

    /// Draw in colour or not, and this wide (a lesson check's output is plain and indented).
    pub(crate) fn set_plain_width(&mut self, width: usize) {
        self.options.style.color = false;
        self.options.style.width = width;
    }

    /// The language lessons are shown in (`:lang`, the course's first start).
    pub fn set_lang(&mut self, lang: Lang) {
        self.options.lang = Some(lang);
    }

    /// The findings of the last launch, if there was one.
    pub fn last_findings(&self) -> Option<&[Finding]> {
        self.record.last_findings()
    }

    /// The values the last failed `expect` showed as wrong, in its order.
    pub(crate) fn last_wrong_values(&self) -> &[f64] {
        &self.record.wrong
    }

    /// The last launch as it was kept (its "before" copies may still be on the GPU: see
    /// [`Session::last_settled`]).
    pub(crate) fn last(&self) -> Option<&LastLaunch> {
        self.record.last()
    }

    /// Forget the last launch: what runs next is looked at alone.
    pub(crate) fn forget_last(&mut self) {
        self.record.forget_last();
    }

    pub fn buffer(&self, name: &str) -> Option<&Buffer> {
        self.work.buffer(name)
    }

    /// Every buffer, by name, in the order they were made.
    pub fn buffers(&self) -> &[(String, Buffer)] {
        self.work.buffers()
    }

    /// Where the last definition of kernel or function `name` was refused, if it was.
    pub(crate) fn refused_at(&self, name: &str) -> Option<crate::diag::Span> {
        self.work.refused(name)
    }

    /// Every scalar, by name, in the order they were made.
    pub fn scalars(&self) -> &[(String, Value)] {
        self.work.scalars()
    }

    /// The kinds of finding the last launch had that no `expect finding` has acknowledged since,
    /// with the launch's number (its [`Session::launch_count`] when it ran).
    pub fn unacknowledged(&self) -> Option<(u64, Vec<crate::finding::FindingKind>)> {
        Some((self.record.launch_count(), self.record.unacknowledged()?))
    }

    /// Count every finding of the last launch as acknowledged (a runner has reported them).
    pub fn acknowledge_all(&mut self) {
        self.record.acknowledge_all();
    }

    /// How many launches ran to a report in this session (not counting the views' runs).
    pub fn launch_count(&self) -> u64 {
        self.record.launch_count()
    }

    /// The last launch: the names of the buffers it was given, those it changed, and whether it
    /// had a race finding.
    pub fn last_launch(&mut self) -> Option<LaunchOutline> {
        // What it changed is read from its "before" copies, which may still be on the GPU.
        self.last_settled(&mut std::io::sink()).ok()?;
        let last = self.record.last()?;
        let given: Vec<String> = last.before.iter().map(|(n, _)| n.clone()).collect();
        let changed = last.before.iter().filter(|(n, b)| self.buffer(n) != Some(b)).map(|(n, _)| n.clone()).collect();
        let racy = last.report.findings.iter().any(|f| f.kind() == crate::finding::FindingKind::Race);
        Some(LaunchOutline { given, changed, racy })
    }

    pub(crate) fn total_buffer_bytes(&self) -> u64 {
        self.work.total_bytes()
    }

    fn run_launch(
        &mut self,
        spec: &LaunchSpec,
        names: &[String],
    ) -> Result<LaunchReport, crate::backend::BackendError> {
        self.ensure_resolved();
        let (module, mut lb) = self.work.for_launch(names);
        self.backends.active().launch(module, spec, &mut lb)
    }
}

impl Env for Session {
    fn buffer(&self, name: &str) -> Option<&Buffer> {
        Session::buffer(self, name)
    }

    fn scalar(&self, name: &str) -> Option<&Value> {
        self.work.scalar(name)
    }

    fn max_alloc_bytes(&self) -> u64 {
        self.options.max_alloc.saturating_sub(self.total_buffer_bytes())
    }

    fn dims(&self, name: &str) -> Option<Vec<usize>> {
        self.work.python().host_shape(name).map(<[usize]>::to_vec)
    }

    fn cancelled(&self) -> bool {
        self.options.sim.cancel.as_ref().is_some_and(|c| c.load(std::sync::atomic::Ordering::SeqCst))
    }

    fn module_variable(&self, name: &str) -> Option<&'static str> {
        // A file-scope `__shared__` is each block's own: no statement reaches it.
        let g = self.work.module().program().globals.iter().find(|g| g.var.name == name && !g.is_shared)?;
        Some(if g.is_constant { "__constant__" } else { "__device__" })
    }

    fn names(&self) -> Vec<String> {
        self.work.names()
    }
}

/// The more serious of two statuses.
pub fn worse(a: Status, b: Status) -> Status {
    match (a, b) {
        (Status::Error, _) | (_, Status::Error) => Status::Error,
        (Status::ExpectFailed, _) | (_, Status::ExpectFailed) => Status::ExpectFailed,
        _ => Status::Ok,
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// A session small enough that any mutated script runs in milliseconds.
    fn small_session() -> Session {
        let sim = SimConfig { max_steps: 200_000, ..SimConfig::default() };
        Session::new(Options { max_alloc: 1 << 20, sim, ..Options::default() })
    }

    fn scripts() -> Vec<String> {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/scripts");
        let mut v: Vec<String> =
            std::fs::read_dir(dir).unwrap().map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap()).collect();
        v.sort();
        v
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

        /// Mutated scripts (lines dropped, duplicated, swapped, characters changed) may fail,
        /// but never panic the session: whatever the learner types, the session survives.
        #[test]
        fn mutated_scripts_never_panic(
            which in any::<prop::sample::Index>(),
            edits in proptest::collection::vec((0u8..4, any::<prop::sample::Index>(), any::<prop::sample::Index>(), any::<char>()), 1..6),
        ) {
            let all = scripts();
            let mut lines: Vec<String> = which.get(&all).lines().map(str::to_string).collect();
            for (op, a, b, c) in edits {
                if lines.is_empty() {
                    break;
                }
                let i = a.index(lines.len());
                match op {
                    0 => { lines.remove(i); }
                    1 => { let l = lines[i].clone(); lines.insert(b.index(lines.len() + 1), l); }
                    2 => { let j = b.index(lines.len()); lines.swap(i, j); }
                    _ => {
                        let mut chars: Vec<char> = lines[i].chars().collect();
                        if !chars.is_empty() {
                            let k = b.index(chars.len());
                            chars[k] = c;
                        }
                        lines[i] = chars.into_iter().collect();
                    }
                }
            }
            let text = lines.join("\n");
            let mut out = Vec::new();
            small_session().eval_text("mutated.gridlab", &text, true, &mut out).unwrap();
        }
    }

    #[test]
    fn the_note_that_inputs_start_in_the_l2_is_said_once_a_session() {
        let mut s = small_session();
        let mut out = Vec::new();
        let script = "__global__ void k(float *a) { a[threadIdx.x] += 1; }\nlet a = zeros(32)\n\
                      let c1 = cost k<<<1, 32>>>(a)\nlet c2 = cost k<<<1, 32>>>(a)\n";
        s.eval_text("l2.gridlab", script, true, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(text.matches("is only what is written back").count(), 1, "{text}");
        assert!(text.contains("c1.dram_bytes is only what is written back"), "{text}");
    }

    #[test]
    fn a_profile_leaves_out_columns_with_nothing_in_them_and_gives_their_room_to_the_source() {
        let style = crate::render::Style { width: 80, ..Default::default() };
        let mut s = Session::new(Options { style, max_alloc: 1 << 20, ..Options::default() });
        let mut out = Vec::new();
        let script = "__global__ void scale_every_element(float *a, int n) {\n\
                      int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) a[i] = a[i] * 2.0f;\n}\n\
                      let a = zeros(1024)\n:profile scale_every_element<<<4, 256>>>(a, 1024)\n";
        s.eval_text("p.gridlab", script, true, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        let header = text.lines().find(|l| l.contains("source")).expect("a table");
        assert!(header.contains("sectors/req") && !header.contains("ways") && !header.contains("atomics"), "{text}");
        assert!(!text.contains("ways:"), "the legend names only the columns shown:\n{text}");
        assert!(text.contains("int i = blockIdx.x * blockDim"), "{text}");
        let mut shown = text.lines().filter(|l| !l.starts_with(">>>") && !l.starts_with("..."));
        assert!(shown.all(|l| l.chars().count() <= 80), "{text}");
    }

    #[test]
    fn a_python_kernels_profile_advises_in_python() {
        let mut s = small_session();
        let mut out = Vec::new();
        let script = "@cuda.jit\ndef t(out, m):\n    tile = cuda.shared.array((32, 32), float32)\n    \
                      tx = cuda.threadIdx.x\n    ty = cuda.threadIdx.y\n    \
                      tile[tx, ty] = m[ty * 32 + tx]\n    cuda.syncthreads()\n    \
                      out[ty * 32 + tx] = tile[ty, tx]\n\n\
                      let m = zeros(1024)\nlet o = zeros(1024)\n:profile t[1, (32, 32)](o, m)\n";
        s.eval_text("p.gridlab", script, true, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(flat.contains("(e.g. `cuda.shared.array((32, 33), float32)`)"), "{text}");
        assert!(!flat.contains("[32][33]"), "{text}");
    }

    #[test]
    fn the_largest_legal_launch_is_refused_by_the_simulator_at_once() {
        let mut s = small_session();
        let mut out = Vec::new();
        let script = "__global__ void k(float *a) { a[0] = 1; }\nlet a = zeros(4)\n\
                      k<<<(2147483647, 65535, 65535), 1024>>>(a)\n";
        assert_eq!(s.eval_text("t.gridlab", script, false, &mut out).unwrap(), Status::Error);
        let out = String::from_utf8(out).unwrap();
        assert!(out.contains("is 9,444,444,733,164,249,676,800 threads in 295,138,897,911,382,802,400 warps"), "{out}");
        assert!(out.contains("launch fewer, or run this one on a GPU"), "{out}");
        assert!(s.buffer("a").unwrap().bytes().iter().all(|b| *b == 0));
    }

    #[test]
    fn numeric_defines_are_constants_in_statements() {
        let mut s = small_session();
        let mut out = Vec::new();
        let script = "#define TILE 16\n#define HALF 0.5f\n#define N (TILE * 4)\n#define NAME foo\n\
                      __global__ void k(float *a) { a[threadIdx.x + blockIdx.x * TILE] += HALF; }\n\
                      let a = zeros(N)\nk<<<N // TILE, TILE>>>(a)\nexpect a == HALF\nexpect len(a) == 64\n";
        let status = s.eval_text("t.gridlab", script, false, &mut out).unwrap();
        assert_eq!(status, Status::Ok, "{}", String::from_utf8_lossy(&out));
        // A `let` of the same name wins; a macro that is not a number is no constant.
        let mut out = Vec::new();
        s.eval_text("t.gridlab", "let TILE = 3\nexpect TILE == 3\nNAME\n", false, &mut out).unwrap();
        let out = String::from_utf8(out).unwrap();
        assert!(out.contains("`NAME` is not defined"), "{out}");
        s.reset();
        let mut out = Vec::new();
        assert_eq!(s.eval_text("t.gridlab", "HALF\n", false, &mut out).unwrap(), Status::Error);
    }

    #[test]
    fn a_failed_expect_counts_elements_with_thousands_separators() {
        let mut s = small_session();
        let mut out = Vec::new();
        let status = s.eval_text("t.gridlab", "let a = zeros(12000)\nexpect a == 1\n", false, &mut out).unwrap();
        assert_eq!(status, Status::ExpectFailed);
        let out = String::from_utf8(out).unwrap();
        assert!(out.starts_with("expect failed: 12,000 of 12,000 elements differ"), "{out}");
    }

    #[test]
    fn a_failed_expect_wraps_between_words() {
        let mut s = small_session();
        s.options.style.width = 60;
        let mut out = Vec::new();
        let status = s.eval_text("t.gridlab", "let a = arange(40) + 1000\nexpect a == 0\n", false, &mut out).unwrap();
        assert_eq!(status, Status::ExpectFailed);
        let out = String::from_utf8(out).unwrap();
        assert!(out.starts_with("expect failed: 40 of 40 elements differ: a[0] = 1000\n"), "{out}");
        for line in out.lines() {
            assert!(line.chars().count() <= 60, "{line:?} in\n{out}");
            assert!(!line.trim_start().starts_with("cted") && !line.ends_with("(expe"), "{out}");
        }
        // Continuation lines line up under the message.
        assert!(out.lines().nth(1).unwrap().starts_with(&" ".repeat("expect failed: ".len())), "{out}");
    }

    #[test]
    fn a_stopped_launch_leaves_its_buffers_as_they_were() {
        let mut s = small_session();
        let mut out = Vec::new();
        let script = "__global__ void k(int *a) { a[0] = 7; while (a[1] == 0) {} }\nlet a = zeros(2, i32)\nk<<<1, 1>>>(a)\nexpect a[0] == 0\nexpect finding step_limit\n";
        let status = s.eval_text("t.gridlab", script, false, &mut out).unwrap();
        assert_eq!(status, Status::Ok, "{}", String::from_utf8_lossy(&out));
    }

    #[test]
    fn the_number_of_names_is_bounded_with_a_message() {
        let mut s = small_session();
        let script: String = (0..pipeline::MAX_NAMES).map(|i| format!("let x{i} = {i}\n")).collect();
        let start = std::time::Instant::now();
        assert_eq!(s.eval_text("t.gridlab", &script, false, &mut Vec::new()).unwrap(), Status::Ok);
        let mut out = Vec::new();
        assert_eq!(s.eval_text("t.gridlab", "let one_more = 1\n", false, &mut out).unwrap(), Status::Error);
        let out = String::from_utf8(out).unwrap();
        assert!(out.contains("a session holds at most 10,000 buffers and scalars"), "{out}");
        // An existing name is still free to bind again.
        assert_eq!(
            s.eval_text("t.gridlab", "let x7 = 70\nexpect x7 == 70\n", false, &mut Vec::new()).unwrap(),
            Status::Ok
        );
        assert!(start.elapsed() < std::time::Duration::from_secs(30), "{:?}", start.elapsed());
    }
}
