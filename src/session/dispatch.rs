//! Running a `:` line, and `:help`: the one place that lists every command of a session (its
//! own rows, then its extension's, then the file commands and leaving), looks a typed name up
//! among their names and aliases, and says "did you mean" when none fits.

use std::io::{self, Write};

use super::command::{Alias, Args, Call, CommandSpec, entries, find};
use super::files::FILE_COMMANDS;
use super::settings::COMMANDS;
use super::{Extension, Session, Status};
use crate::render::Style;

/// `:help`, listed first.
pub const HELP: &[CommandSpec] = &[CommandSpec {
    name: "help",
    args: Args::Command,
    aliases: &[],
    summary: "show help on commands and the language",
    help: "`:help` lists commands and topics; `:help NAME` explains one (a command like `backend`, or a topic like `launch`).",
    run: help,
}];

/// Leaving, listed last.
pub const LEAVE: &[CommandSpec] = &[CommandSpec {
    name: "quit",
    args: Args::None,
    aliases: &[Alias { name: "q", summary: "leave gridlab, as :quit" }],
    summary: "leave gridlab (also :q, exit, quit, Ctrl-D)",
    help: "Leaves the prompt, as Ctrl-D does; `:q`, `exit`, `quit`, `exit()` and `quit()` do the same. A lesson keeps your place. In a script (`gridlab replay`, `:load`, a lesson) it does nothing but say so: a script runs to its end.",
    run: |s, c, o| s.quit(&format!(":{}", c.name), o),
}];

/// Topics of the language, for `:help TOPIC`.
pub const TOPICS: &[(&str, &str)] = &[
    (
        "keys",
        "Enter runs the input, or starts a new line while a kernel, `(` or `[` is open (a Python kernel ends with a blank line, as at Python's prompt). Alt-Enter or Shift-Enter starts a new line anywhere: to add a line in the middle of a kernel, put the cursor there and press Alt-Enter. Up and Down move between the lines of a kernel; on its first line, Up recalls the input before with the cursor at its end, so Up again walks through a recalled kernel's lines. Alt-Up and Alt-Down (or Ctrl-Up, Ctrl-Down) go to the older or newer input at once; Ctrl-R searches them. In a lesson, the step's next input waits in the editor: Enter runs it, typing replaces it, the arrow keys edit it, Ctrl-C clears it. A `:` command typed on a line of its own under an unfinished kernel runs, and the kernel stays in the editor. Tab completes. Ctrl-C stops a running launch; Ctrl-D leaves.",
    ),
    (
        "cuda",
        "Type CUDA C directly: a line starting with __global__, __device__, __constant__, #define, #include, struct, typedef, template or extern \"C\" starts CUDA source, read until its braces balance. It is checked at once; defining a kernel again replaces it.",
    ),
    (
        "let",
        "let NAME = EXPR makes a buffer or a scalar. Constructors: zeros(N), ones(N), full(N, V), arange(N), arange(START, STOP[, STEP]), linspace(A, B, N), random(N, seed=S), randint(N, LO, HI, seed=S), [0, 1], copy(NAME). Each takes a dtype last: f32 (default), f64, i32, u32, i64, u64. N may be (rows, cols). `:help functions` lists every function. C declarations work too: `int n = 1 << 20;`, `float s = 2.5f;`, `dim3 block(16, 16);` (`:help host`).",
    ),
    (
        "launch",
        "KERNEL<<<GRID, BLOCK>>>(ARGS) or KERNEL<<<GRID, BLOCK, SHARED_BYTES>>>(ARGS). GRID and BLOCK are numbers, (x, y), (x, y, z) or dim3(x, y, z). `/` between integers drops the remainder, as in C, so a grid rounded up is (n + 255) / 256; a float on either side divides as floats. Buffers are passed by name, or as a pointer into one (`a + 4`, `a[4:]`, a matrix's row `m[2]`); scalars as names, numbers or expressions. Arguments are checked against the kernel's parameters before anything runs.",
    ),
    (
        "inspect",
        "Type a name to see its values: a, a[3], a[10:20], a[-1]; print(a, n) shows several. Long arrays are elided with ...; 2-D buffers print as matrices. Elements can be changed: a[3] = 5, a[-1] += 1, a[2:6] = 0, a[a < 0] = 0, m[1, 2] = 7 (indices are checked, and the value must fit the buffer's dtype).",
    ),
    (
        "expect",
        "expect EXPR checks a condition and says which elements broke it: expect a == 0.5, expect sum(a) ~= 10 (approximately), expect count(a > 0) == 3, expect all(a[0:4] < 1). expect clean checks the last launch had no findings; expect finding race (or out_of_bounds, barrier, step_limit, trap) that it had one; expect printed \"Hello\" that its printf output holds the text.",
    ),
    (
        "cost",
        "let c = cost KERNEL<<<GRID, BLOCK>>>(ARGS) runs the launch and binds what it would cost on the reference GPU (:reference): c.time_us, c.dram_bytes, c.sectors_per_request (4 is ideal for f32), c.bank_conflicts, c.atomics, c.simt_efficiency (0 to 1), c.occupancy (0 to 1) and c.warp_steps. Use them in checks: expect c.atomics <= 64. Type c to see them all. On the GPU backend time_us is measured on the device. docs/cost-model.md explains the model.",
    ),
    (
        "host",
        "Host code from a CUDA program mostly means something here. Declarations are lets with the C type's meaning: `int n = 1 << 20;`, `float s = 2.5f;` (C's suffixes are read), `dim3 block(16, 16);` (then `block.x` is 16), `float x[N];` (a buffer of zeros). `/` between integers drops the remainder, as in C. `sizeof(float)` is 4. `cudaDeviceSynchronize();`, `cudaFree(p);` and `cudaGetLastError();` do nothing and say why. `cudaMalloc`, `cudaMallocManaged`, `cudaMemcpy`, `cudaMemset`, pointers, `printf`, `std::cout`, host loops, `np.zeros(...)` and Numba's `k[blocks, threads](...)` each get one message saying what to write instead: buffers are made with `zeros(N)`, are on the host and the device at once, and show their values when you type their names. `exit`, `quit`, `:q` and `:quit` leave.",
    ),
    (
        "findings",
        "After a launch on the simulator gridlab reports: out-of-bounds reads and writes (writes are not performed), data races (two threads touch one element, one writes, nothing orders them), barrier divergence (threads of a block at different __syncthreads), and possible infinite loops (the step budget ran out).",
    ),
];

/// Every command of a session with `extra` installed, in the order `:help` lists them.
pub fn listing(extra: &'static [CommandSpec]) -> Vec<&'static CommandSpec> {
    HELP.iter().chain(COMMANDS).chain(extra).chain(FILE_COMMANDS).chain(LEAVE).collect()
}

/// The commands of this session: its own and its extension's.
fn commands_of(session: &Session) -> Vec<&'static CommandSpec> {
    listing(session.extension.as_deref().map_or(&[], Extension::commands))
}

/// Run a `:command` line.
pub fn run(session: &mut Session, line: &str, out: &mut dyn Write) -> io::Result<Status> {
    let body = line.trim().trim_start_matches(':');
    let (name, args) = body.split_once(char::is_whitespace).unwrap_or((body, ""));
    let all = commands_of(session);
    match find(&all, name) {
        Some(spec) => {
            let call = Call { name, args: args.trim(), spec };
            if !spec.args.accepts(call.args) {
                return call.not_a_choice(session, out);
            }
            (spec.run)(session, call, out)
        }
        None => {
            let style = session.style();
            let suggestion = crate::diag::suggest::closest(name, entries(&all).iter().map(|e| e.name))
                .map(|c| format!(" Did you mean `:{c}`?"))
                .unwrap_or_default();
            writeln!(out, "{} unknown command `:{name}`.{suggestion} Type :help for the list.", style.error("error:"))?;
            Ok(Status::Error)
        }
    }
}

fn help(session: &mut Session, Call { args, .. }: Call<'_>, out: &mut dyn Write) -> io::Result<Status> {
    let style = session.style().clone();
    let topic = args.trim().trim_start_matches(':');
    let all = commands_of(session);
    let names = entries(&all);
    if topic.is_empty() {
        writeln!(out, "{}", style.bold("Commands"))?;
        let heads: Vec<String> =
            names.iter().map(|c| format!(":{} {}", c.name, c.spec.args.synopsis()).trim_end().to_string()).collect();
        let w = heads.iter().map(|h| h.len()).max().unwrap_or(0);
        for (c, head) in names.iter().zip(&heads) {
            // Summaries wrap under themselves; on a narrow screen they go on the next line.
            let (sep, indent) = if 2 + w + 1 + 20 <= style.width {
                (" ".repeat(w - head.len() + 1), 2 + w + 1)
            } else {
                ("\n    ".into(), 4)
            };
            let summary = crate::diag::wrap(c.summary, style.width, indent);
            writeln!(out, "  {}{sep}{summary}", style.accent(head))?;
        }
        writeln!(out, "{}", style.bold("Topics (:help TOPIC)"))?;
        let names: Vec<&str> = TOPICS.iter().map(|(n, _)| *n).chain(["functions"]).collect();
        writeln!(out, "  {}", names.join(", "))?;
        return Ok(Status::Ok);
    }
    if let Some(c) = names.iter().find(|c| c.name == topic) {
        writeln!(out, "{} {}", style.accent(&format!(":{}", c.name)), c.spec.args.synopsis())?;
        // An alias's help sends to the command's.
        let same = format!("The same as `:{}`.", c.spec.name);
        let text = if c.name == c.spec.name { c.spec.help } else { &same };
        writeln!(out, "{}", crate::diag::wrap(text, style.width, 0))?;
        return Ok(Status::Ok);
    }
    if topic == "functions" {
        write_functions(out, &style)?;
        return Ok(Status::Ok);
    }
    if let Some((_, text)) = TOPICS.iter().find(|(n, _)| *n == topic) {
        // Wrapped at spaces: a terminal would cut words in two.
        writeln!(out, "{}", crate::diag::wrap(text, style.width, 0))?;
        return Ok(Status::Ok);
    }
    let all = names.iter().map(|c| c.name).chain(TOPICS.iter().map(|(n, _)| *n)).chain(["functions"]);
    let hint = crate::diag::suggest::closest(topic, all).map(|c| format!(" Did you mean `{c}`?")).unwrap_or_default();
    writeln!(out, "{} no help on `{topic}`.{hint} Type :help for the list.", style.error("error:"))?;
    Ok(Status::Error)
}

/// `:help functions`: the statement language's built-in functions, from the table evaluation
/// and completion read.
fn write_functions(out: &mut dyn Write, style: &Style) -> io::Result<()> {
    use crate::script::builtins::{BUILTINS, BuiltinKind};
    for (kind, title) in [
        (BuiltinKind::Constructor, "Constructors (each takes a dtype last: f32, f64, i32, u32, i64, u64)"),
        (BuiltinKind::Function, "Functions"),
    ] {
        writeln!(out, "{}", style.bold(title))?;
        let rows: Vec<_> = BUILTINS.iter().filter(|b| b.kind == kind).collect();
        let w = rows.iter().map(|b| b.synopsis.len()).max().unwrap_or(0);
        for b in rows {
            let (sep, indent) = if 2 + w + 2 + 20 <= style.width {
                (" ".repeat(w - b.synopsis.len() + 2), 2 + w + 2)
            } else {
                ("\n    ".into(), 4)
            };
            writeln!(out, "  {}{sep}{}", style.accent(b.synopsis), crate::diag::wrap(b.summary, style.width, indent))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn device_describes_the_simulator_without_a_gpu() {
        let mut s = Session::new(crate::session::Options::default());
        let mut out = Vec::new();
        assert_eq!(run(&mut s, ":device", &mut out).unwrap(), Status::Ok);
        let out = String::from_utf8(out).unwrap();
        assert!(out.contains("sim: gridlab's CPU simulator of CUDA C"), "{out}");
        assert!(out.contains("random (seed 0)"), "{out}");
        assert!(out.contains("200,000,000 warp steps per launch"), "{out}");
        assert!(out.lines().all(|l| l.chars().count() <= 80), "{out}");
    }

    use super::*;
    use crate::backend::BackendKind;
    use crate::backend::sim::{Schedule, SimConfig};
    use crate::session::Options;

    fn run_on_sim(script: &str) -> (Status, String) {
        let mut s = Session::new(Options::default());
        let mut out = Vec::new();
        let status = s.eval_text("t.gridlab", script, false, &mut out).unwrap();
        (status, String::from_utf8(out).unwrap())
    }

    #[test]
    fn help_on_race_and_compare_says_what_happens_on_the_gpu() {
        for cmd in ["race", "compare"] {
            let (status, out) = run_on_sim(&format!(":help {cmd}\n"));
            assert_eq!(status, Status::Ok, "{out}");
            // Wrapped at spaces to the width (80 here); read it as one paragraph.
            assert!(out.lines().all(|l| l.chars().count() <= 80), "{out}");
            let out = out.replace('\n', " ");
            assert!(out.contains("On the GPU (`:backend gpu`)") && out.contains("`gpu 1`"), "{out}");
            assert!(out.contains("up to 3 of the simulator's"), "{out}");
        }
    }

    #[test]
    fn max_steps_shows_and_sets_the_budget() {
        let (status, out) = run_on_sim(":max-steps\n");
        assert_eq!(status, Status::Ok);
        assert_eq!(out, "max-steps: 200,000,000 warp steps per launch, 50,000,000 for one warp\n");
        let mut s = Session::new(Options::default());
        let mut out = Vec::new();
        assert_eq!(run(&mut s, ":max-steps 1_000_000", &mut out).unwrap(), Status::Ok);
        assert_eq!((s.backends.sim_config().max_steps, s.options.sim.max_steps), (1_000_000, 1_000_000));
        assert_eq!(s.record.history().last().map(String::as_str), Some(":max-steps 1000000"));
        for bad in ["lots", "0", "-5", "999", "100000000001"] {
            let mut out = Vec::new();
            assert_eq!(run(&mut s, &format!(":max-steps {bad}"), &mut out).unwrap(), Status::Error, "{bad}");
            let out = String::from_utf8(out).unwrap();
            assert!(out.contains("is not a step budget") && out.contains("usage: :max-steps [N|default]"), "{out}");
        }
        assert_eq!(s.backends.sim_config().max_steps, 1_000_000);
        assert_eq!(run(&mut s, ":max-steps default", &mut Vec::new()).unwrap(), Status::Ok);
        assert_eq!(s.backends.sim_config().max_steps, SimConfig::DEFAULT_MAX_STEPS);
        let (_, help) = run_on_sim(":help\n");
        assert!(help.contains(":max-steps [N|default]"), "{help}");
        let (_, device) = run_on_sim(":device\n");
        assert!(device.replace('\n', " ").contains("50,000,000 for one warp"), "{device}");
    }

    #[test]
    fn a_word_that_is_no_choice_is_refused_from_the_row_before_the_command_runs() {
        let choices: Vec<_> = listing(&[])
            .into_iter()
            .filter_map(|c| match c.args {
                Args::Choice { value: None, words, what } => Some((c.name, words, what)),
                _ => None,
            })
            .collect();
        assert!(choices.len() >= 2, "the session has choice commands: {choices:?}");
        for (name, words, what) in choices {
            let mut s = Session::new(Options::default());
            let before = s.record.history().len();
            let mut out = Vec::new();
            assert_eq!(run(&mut s, &format!(":{name} sideways"), &mut out).unwrap(), Status::Error, ":{name}");
            let out = String::from_utf8(out).unwrap();
            let usage = format!("usage: :{name} [{}]", words.join("|"));
            assert_eq!(out, format!("error: `sideways` is not {what}\n{usage}\n"), ":{name}");
            assert_eq!(s.record.history().len(), before, "a refused `:{name}` changes nothing");
        }
        // Each word of a row is one its command reads.
        let words = |name: &str| match find(&listing(&[]), name).map(|c| c.args) {
            Some(Args::Choice { words, .. }) => words,
            _ => panic!("`:{name}` takes a choice"),
        };
        assert!(words("backend").iter().all(|w| BackendKind::parse(w).is_some()));
        assert!(words("schedule").iter().all(|w| Schedule::parse(w).is_some()));
        let (status, out) = run_on_sim(":schedule lockstep\n:schedule\n");
        assert_eq!(status, Status::Ok, "{out}");
        assert!(out.ends_with("schedule: lockstep\n"), "{out}");
    }

    #[test]
    fn ptx_on_the_simulator_says_how_to_switch() {
        let (status, out) = run_on_sim("__global__ void k(float *a) { a[0] = 1; }\n:ptx k\n");
        assert_eq!(status, Status::Error, "{out}");
        assert!(out.contains("`:ptx` needs the GPU backend"), "{out}");
        assert!(out.contains("`:backend gpu`"), "{out}");
    }

    #[test]
    fn info_checks_its_arguments_then_needs_the_gpu() {
        let (status, out) = run_on_sim(":info\n");
        assert_eq!(status, Status::Error);
        assert!(out.contains("usage: :info KERNEL [BLOCK]"), "{out}");
        let (_, out) = run_on_sim(":info k zero\n");
        assert!(out.contains("`zero` is not a block size"), "{out}");
        let (_, out) = run_on_sim(":info k 0\n");
        assert!(out.contains("`0` is not a block size"), "{out}");
        let (status, out) = run_on_sim("__global__ void k(float *a) { a[0] = 1; }\n:info k 128\n");
        assert_eq!(status, Status::Error);
        assert!(out.contains("`:info` needs the GPU backend"), "{out}");
    }
}
