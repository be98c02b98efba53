//! The `:` commands. Each is one row of a table: name, argument synopsis, one-line summary, long
//! help and the function that runs it. The session's own are [`COMMANDS`] and
//! [`FILE_COMMANDS`]; a layer above adds more through an [`Extension`] (the lesson guide's
//! `:lesson`, `:next`, `:check` ...). `:help`, completion and the highlighter read the same rows
//! ([`listing`]), so a new row is documented, completed and coloured at once.

use std::io::{self, Write};
use std::path::{Component, Path, PathBuf};

use comfy_table::{ColumnConstraint, ContentArrangement, Table, presets::UTF8_FULL_CONDENSED};

use super::{Extension, FileAccess, Session, Status};
use crate::backend::BackendKind;
use crate::backend::gpu::protocol::KernelInfo;
use crate::backend::sim::{Schedule, SimConfig};
use crate::cuda::ItemKind;
use crate::render::{self, Style};

/// What runs a command: the session, the text after the name, where to write.
pub type Run = fn(&mut Session, &str, &mut dyn Write) -> io::Result<Status>;

pub struct CommandSpec {
    pub name: &'static str,
    /// Argument synopsis for help, e.g. `[sim|gpu|auto]`.
    pub args: &'static str,
    pub summary: &'static str,
    pub help: &'static str,
    pub run: Run,
}

pub const COMMANDS: &[CommandSpec] = &[
    CommandSpec {
        name: "help",
        args: "[topic]",
        summary: "show help on commands and the language",
        help: "`:help` lists commands and topics; `:help NAME` explains one (a command like `backend`, or a topic like `launch`).",
        run: help,
    },
    CommandSpec {
        name: "buffers",
        args: "",
        summary: "list buffers and scalars",
        help: "Lists every buffer with its dtype, shape and size, and every scalar with its value.",
        run: buffers,
    },
    CommandSpec {
        name: "kernels",
        args: "",
        summary: "list kernels and device functions",
        help: "Lists the kernels and __device__ functions defined so far, with their parameters and where they were defined; Python kernels (`@cuda.jit`) too.",
        run: kernels,
    },
    CommandSpec {
        name: "cuda",
        args: "NAME",
        summary: "show the CUDA C a Python kernel means",
        help: "`:cuda NAME` prints the CUDA C that the Python kernel NAME (`@cuda.jit`) is lowered to: the C its last launch ran, typed from that launch's arguments, or before any launch, the C for the types its code suggests. gridlab runs that C on the simulator and the GPU; every finding points back at the Python line.",
        run: cuda_of,
    },
    CommandSpec {
        name: "device",
        args: "",
        summary: "what runs your kernels: the GPU or the simulator",
        help: "On the GPU backend: the device's name, compute capability, number of SMs (streaming multiprocessors: choose grid sizes as a few blocks per SM), memory, peak memory bandwidth and launch limits. On the simulator: how it runs threads (warps of 32, schedule, seed, step budget) and the limits it enforces, which are CUDA's.",
        run: device,
    },
    CommandSpec {
        name: "reset",
        args: "",
        summary: "forget kernels, buffers and scalars",
        help: "Starts over: forgets every kernel, buffer, scalar and the last launch's findings. Settings (backend, seed, schedule) stay.",
        run: reset,
    },
    CommandSpec {
        name: "backend",
        args: "[sim|gpu|auto]",
        summary: "show or choose where kernels run",
        help: "`sim` is gridlab's CPU simulator: it runs everywhere and reports races and out-of-bounds accesses. `gpu` runs on an NVIDIA GPU; `auto` picks the GPU when one works.",
        run: backend,
    },
    CommandSpec {
        name: "seed",
        args: "[N]",
        summary: "show or set the simulator's seed",
        help: "The random schedule interleaves warps in an order drawn from this seed: the same seed gives the same result, byte for byte. Try another seed to see a racy kernel give another answer.",
        run: seed,
    },
    CommandSpec {
        name: "schedule",
        args: "[random|lockstep|sequential]",
        summary: "show or set how the simulator interleaves threads",
        help: "`random` (default) interleaves warps in a seeded random order, as a GPU might; `lockstep` advances every resident warp one step at a time; `sequential` runs one thread at a time to completion (or to a barrier): what a CPU loop computes, the reference answer for racy kernels.",
        run: schedule,
    },
    CommandSpec {
        name: "max-steps",
        args: "[N|default]",
        summary: "show or set the simulator's step budget per launch",
        help: "The simulator stops a launch that takes more than N warp steps in all, or a single warp that takes more than a quarter of N, with a step-limit finding (\"possible infinite loop\"): an endless loop ends there instead of hanging the session. On the sequential schedule a step runs one lane, so both are 32 times as many. `:max-steps` shows the budget, `:max-steps 1000000000` raises it for a kernel that really needs more (a bigger budget lets an endless loop run longer before it is stopped), `:max-steps default` puts back 200,000,000. `--max-steps N` sets it on the command line.",
        run: max_steps,
    },
    CommandSpec {
        name: "race",
        args: "LAUNCH [xN]",
        summary: "run a launch N times, compare results",
        help: "`:race add_half_everywhere<<<1024, 1024>>>(a, len(a)) x10` runs the launch 10 times from the same inputs, on the random schedule with seeds SEED, SEED+1, ... (the session's seed first), and once on the sequential schedule for the reference answer. A table shows the elements that vary, one row per run; a histogram counts the distinct results and a verdict says whether the result depends on timing. On the GPU (`:backend gpu`), the N runs are on the device (rows `gpu 1`, `gpu 2`, ...), beside up to 3 of the simulator's random schedules (rows `sim seed ...`) for reference; the histogram and the verdict count the GPU's runs. The session's buffers are left as they were.",
        run: |s, a, o| s.race_view(a, o),
    },
    CommandSpec {
        name: "compare",
        args: "LAUNCH vs LAUNCH [xN]",
        summary: "race two launches side by side",
        help: "`:compare racy<<<8, 256>>>(a) vs fixed<<<8, 256>>>(a) x10` runs both as `:race` does, each from the session's buffers, and shows their outcome tables side by side with a verdict for each. On the GPU (`:backend gpu`), each launch runs N times on the device (rows `gpu 1`, `gpu 2`, ...), beside up to 3 of the simulator's random schedules (rows `sim seed ...`) for reference; the histograms and the verdicts count the GPU's runs.",
        run: |s, a, o| s.compare_view(a, o),
    },
    CommandSpec {
        name: "map",
        args: "LAUNCH",
        summary: "which thread wrote each element",
        help: "`:map add_half<<<4, 256>>>(a, len(a))` runs the launch on a copy of its buffers on the simulator and draws, for every buffer it wrote, which block (colour or character) and thread (shade) wrote each element: `·` nobody wrote it, `!` it was written twice or more, red `×` after `│` writes past the end. Long buffers are bucketed to the terminal width; 2-D launches over 2-D buffers draw a grid.",
        run: |s, a, o| s.map_view(a, o),
    },
    CommandSpec {
        name: "why",
        args: "",
        summary: "replay the last launch's race",
        help: "After a launch with a race finding, `:why` runs it again exactly (same seed, schedule and inputs) watching the finding's two threads on the racing element, and shows their reads and writes in the order they ran, with the values, then explains what went wrong (\"both read before either wrote: one update lost\").",
        run: |s, a, o| s.why_view(a, o),
    },
    CommandSpec {
        name: "time",
        args: "LAUNCH [xN]",
        summary: "time a launch over N runs (estimated on the simulator)",
        help: "`:time add_half<<<4, 256>>>(a, len(a)) x5` runs the launch 5 times on copies of its buffers (seeds from the session's) and reports the minimum, median and maximum. On the simulator: the time the cost model estimates on the reference GPU (`:reference`), what limits it (DRAM bandwidth, L2, shared memory, instruction issue, atomics on one address, latency, block scheduling or the launch itself), and the simulated warp steps, the work done, deterministic for a seed. On the GPU: kernel times measured with CUDA events and the host's launch overhead. `:profile` shows the estimate line by line; `docs/cost-model.md` explains it.",
        run: |s, a, o| s.time_view(a, o),
    },
    CommandSpec {
        name: "profile",
        args: "LAUNCH",
        summary: "what a launch costs on a GPU, line by line",
        help: "`:profile transpose<<<(32, 32), (32, 8)>>>(out, in, n)` runs the launch on a copy of its buffers on the simulator and shows, for each source line, what the cost model counted, as Nsight Compute's source view would: warp instructions issued and the share of lanes active (divergence), 32-byte sectors per global request against the ideal (coalescing), DRAM bytes, shared-memory wavefronts per request (bank conflicts) and atomics. The line that wastes most is marked with what to change. The estimate is for the reference GPU (`:reference`); `docs/cost-model.md` explains the model.",
        run: |s, a, o| s.profile_view(a, o),
    },
    CommandSpec {
        name: "reference",
        args: "[NAME]",
        summary: "show or choose the GPU the simulator estimates for",
        help: "The simulator's cost model estimates what a launch would take on a reference GPU: an H100 SXM unless you choose another. `:reference` lists the known GPUs with their figures; `:reference a100` picks one (also `--gpu-profile NAME`). `:time`, `:profile` and `cost` use it.",
        run: |s, a, o| s.reference_view(a, o),
    },
    CommandSpec {
        name: "ptx",
        args: "[KERNEL]",
        summary: "show the PTX the GPU compiler made",
        help: "`:ptx add_half` shows the PTX (the GPU's portable assembly) that NVRTC makes from your kernel: its `.param`s, the registers it declares, every load (`ld.global`), store and branch. Without a name it shows the whole module. Needs the GPU backend (`:backend gpu`).",
        run: ptx,
    },
    CommandSpec {
        name: "info",
        args: "KERNEL [BLOCK]",
        summary: "registers, memory and occupancy of a kernel",
        help: "`:info add_half 256` shows what the compiled kernel uses: registers per thread, static shared memory per block, local memory per thread (local arrays and register spills, which are slow), the most threads a block of it may have, and its occupancy for blocks of BLOCK threads (256 unless given): how many warps are resident on an SM at once, out of the most it can hold. More resident warps hide more memory latency. Needs the GPU backend (`:backend gpu`).",
        run: info,
    },
];

/// Commands on files, and leaving, listed after the extensions' commands (`:help` reads settings
/// and views first, then what an extension adds, then files).
pub const FILE_COMMANDS: &[CommandSpec] = &[
    CommandSpec {
        name: "export",
        args: "[--force] FILE.md|FILE.html",
        summary: "write this session as a handout (Markdown or HTML)",
        help: "Writes a handout to read on its own: with a lesson open, the lesson's headings and prose with each step's code and what it printed in order (the starter labelled as the wrong version); otherwise everything typed and what it printed. `FILE.html` is one self-contained page with the terminal's colours; any other name gets Markdown. Findings name the kernel and line (`kernel add_one, line 3`). An existing file is not written over unless you say yes (or give `--force`).",
        run: export,
    },
    CommandSpec {
        name: "load",
        args: "FILE",
        summary: "run a .gridlab script in this session",
        help: "Runs every input of FILE in this session, echoing each, as `gridlab replay` does.",
        run: load,
    },
    CommandSpec {
        name: "save",
        args: "[--force] FILE",
        summary: "save this session as a replayable script",
        help: "Writes every input that ran (kernels, lets, launches, expects, seed and schedule changes) to FILE; `gridlab replay FILE` or `:load FILE` runs it again. An existing file is not written over unless you say yes (or give `--force`). In a replayed script, `:load`, `:save` and `:export` reach only files in the script's own folder.",
        run: save,
    },
    CommandSpec {
        name: "quit",
        args: "",
        summary: "leave gridlab (also :q, exit, quit, Ctrl-D)",
        help: "Leaves the prompt, as Ctrl-D does; `:q`, `exit`, `quit`, `exit()` and `quit()` do the same. A lesson keeps your place. In a script (`gridlab replay`, `:load`, a lesson) it does nothing but say so: a script runs to its end.",
        run: |s, _, o| s.quit(":quit", o),
    },
    CommandSpec {
        name: "q",
        args: "",
        summary: "leave gridlab, as :quit",
        help: "The same as `:quit`.",
        run: |s, _, o| s.quit(":q", o),
    },
];

/// Topics of the language, for `:help TOPIC`.
pub const TOPICS: &[(&str, &str)] = &[
    (
        "keys",
        "Enter runs the input, or starts a new line while a kernel, `(` or `[` is open (a Python kernel ends with a blank line, as at Python's prompt). Alt-Enter or Shift-Enter starts a new line anywhere: to add a line in the middle of a kernel, put the cursor there and press Alt-Enter. Up and Down move between the lines of a kernel, and past its first line recall older inputs; Ctrl-R searches them. In a lesson, the step's next input waits in the editor: Enter runs it, typing replaces it, the arrow keys edit it, Ctrl-C clears it. A `:` command typed on a line of its own under an unfinished kernel runs, and the kernel stays in the editor. Tab completes. Ctrl-C stops a running launch; Ctrl-D leaves.",
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
    COMMANDS.iter().chain(extra).chain(FILE_COMMANDS).collect()
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
    match all.iter().find(|c| c.name == name) {
        Some(cmd) => (cmd.run)(session, args.trim(), out),
        None => {
            let style = session.style();
            let suggestion = crate::diag::suggest::closest(name, all.iter().map(|c| c.name))
                .map(|c| format!(" Did you mean `:{c}`?"))
                .unwrap_or_default();
            writeln!(out, "{} unknown command `:{name}`.{suggestion} Type :help for the list.", style.error("error:"))?;
            Ok(Status::Error)
        }
    }
}

/// The row of a command named `name` among `commands` (from [`listing`]).
pub fn find<'a>(commands: &[&'a CommandSpec], name: &str) -> Option<&'a CommandSpec> {
    commands.iter().copied().find(|c| c.name == name)
}

/// A command's arguments were wrong: say why, and show its synopsis.
pub fn usage(session: &Session, out: &mut dyn Write, cmd: &str, msg: &str) -> io::Result<Status> {
    writeln!(out, "{} {msg}", session.style().error("error:"))?;
    if let Some(spec) = find(&commands_of(session), cmd) {
        writeln!(out, "usage: :{} {}", spec.name, spec.args)?;
    }
    Ok(Status::Error)
}

fn help(session: &mut Session, args: &str, out: &mut dyn Write) -> io::Result<Status> {
    let style = session.style().clone();
    let topic = args.trim().trim_start_matches(':');
    let all = commands_of(session);
    if topic.is_empty() {
        writeln!(out, "{}", style.bold("Commands"))?;
        let heads: Vec<String> = all.iter().map(|c| format!(":{} {}", c.name, c.args).trim_end().to_string()).collect();
        let w = heads.iter().map(|h| h.len()).max().unwrap_or(0);
        for (c, head) in all.iter().zip(&heads) {
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
    if let Some(c) = find(&all, topic) {
        writeln!(out, "{} {}", style.accent(&format!(":{}", c.name)), c.args)?;
        writeln!(out, "{}", crate::diag::wrap(c.help, style.width, 0))?;
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
    let all = all.iter().map(|c| c.name).chain(TOPICS.iter().map(|(n, _)| *n)).chain(["functions"]);
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

/// A table that wraps its cells to fit the terminal's width.
fn table(width: usize) -> Table {
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED);
    t.set_content_arrangement(ContentArrangement::Dynamic);
    t.set_width(width.min(u16::MAX as usize) as u16);
    t
}

fn buffers(session: &mut Session, _: &str, out: &mut dyn Write) -> io::Result<Status> {
    if session.buffers.is_empty() && session.scalars.is_empty() {
        writeln!(out, "no buffers or scalars yet; make one with `let a = zeros(1000)`")?;
        return Ok(Status::Ok);
    }
    let mut t = table(session.style().width);
    t.set_header(["name", "kind", "dtype", "shape", "bytes"]);
    for (name, b) in &session.buffers {
        t.add_row([
            name.clone(),
            "buffer".into(),
            b.dtype().to_string(),
            b.shape().to_string(),
            b.size_bytes().to_string(),
        ]);
    }
    for (name, v) in &session.scalars {
        t.add_row([name.clone(), "scalar".into(), v.type_name(), String::new(), String::new()]);
    }
    writeln!(out, "{t}")?;
    Ok(Status::Ok)
}

/// `:device`: the backend's device as a table of properties.
fn device(session: &mut Session, _: &str, out: &mut dyn Write) -> io::Result<Status> {
    let width = session.style().width;
    let mut t = table(width);
    t.set_header(["", "device"]);
    if let Some(gpu) = session.active_gpu() {
        let i = gpu.info().clone();
        let [bx, by, bz] = i.max_block;
        let [gx, gy, gz] = i.max_grid;
        t.add_row(["backend".to_string(), format!("gpu {}: {}", i.ordinal, i.name)]);
        t.add_row(["compute capability".to_string(), format!("{}.{}", i.compute_capability.0, i.compute_capability.1)]);
        t.add_row(["SMs".to_string(), i.sm_count.to_string()]);
        t.add_row(["memory".to_string(), format!("{:.1} GiB", i.total_mem as f64 / f64::from(1u32 << 30))]);
        t.add_row(["peak memory bandwidth".to_string(), format!("{:.0} GB/s", i.peak_bandwidth_gbs)]);
        t.add_row(["threads per block".to_string(), format!("at most {}", i.max_threads_per_block)]);
        t.add_row(["block".to_string(), format!("at most ({bx}, {by}, {bz})")]);
        t.add_row(["grid".to_string(), format!("at most ({gx}, {gy}, {gz})")]);
        t.add_row(["shared memory".to_string(), format!("{} KiB per block", i.max_shared_per_block / 1024)]);
        t.add_row([
            "CUDA".to_string(),
            format!(
                "driver {}.{}, NVRTC {}.{}",
                i.driver_version / 1000,
                i.driver_version % 1000 / 10,
                i.nvrtc_version.0,
                i.nvrtc_version.1
            ),
        ]);
    } else {
        let config = session.sim.config.clone();
        t.add_row(["backend", "sim: gridlab's CPU simulator of CUDA C"]);
        t.add_row(["threads", "run as warps of 32 lanes in lockstep; warps interleave like a GPU's"]);
        t.add_row(["schedule".to_string(), format!("{} (seed {})", schedule_name(config.schedule), config.seed)]);
        t.add_row([
            "step budget".to_string(),
            format!(
                "{} warp steps per launch, {} for one warp (`:max-steps` changes it); 32 times as many on the sequential schedule, which runs one lane per step",
                crate::diag::text::thousands(config.max_steps),
                crate::diag::text::thousands((config.max_steps / 4).max(1))
            ),
        ]);
        t.add_row(["limits", "CUDA's: 1024 threads per block, block (1024, 1024, 64), grid (2147483647, 65535, 65535), 48 KiB shared memory per block"]);
        t.add_row(["SMs", "none: it has no hardware to fill (an H100 has 132); `:backend gpu` and `gridlab doctor` tell about a real GPU"]);
    }
    writeln!(out, "{t}")?;
    Ok(Status::Ok)
}

fn schedule_name(s: Schedule) -> &'static str {
    match s {
        Schedule::Random => "random",
        Schedule::Lockstep => "lockstep",
        Schedule::Sequential => "sequential",
    }
}

fn kernels(session: &mut Session, _: &str, out: &mut dyn Write) -> io::Result<Status> {
    let program = session.module.program();
    let gpu_only: Vec<_> = session
        .module
        .items()
        .iter()
        .filter(|i| matches!(i.kind, ItemKind::Kernel | ItemKind::DeviceFunction))
        .filter_map(|i| Some((i, i.gpu_only()?)))
        .collect();
    let python = session.python_rows();
    // Python kernels are listed as Python; their lowered C is not listed again.
    let lowered = |name: &str| session.python.get(name).is_some();
    if program.functions.iter().all(|f| lowered(&f.name)) && gpu_only.is_empty() && python.is_empty() {
        writeln!(out, "no kernels yet; type one, starting with `__global__ void` (or `@cuda.jit` in Python)")?;
        return Ok(Status::Ok);
    }
    let mut t = table(session.style().width);
    t.set_header(["kind", "signature", "defined at"]);
    for row in python {
        t.add_row(row);
    }
    for f in program.functions.iter().filter(|f| !lowered(&f.name)) {
        let kind = match f.kind {
            crate::cuda::ast::FuncKind::Kernel => "__global__",
            crate::cuda::ast::FuncKind::Device => "__device__",
        };
        t.add_row([kind.to_string(), render::signature(f), session.sources.location(f.name_span)]);
    }
    // GPU-only functions are marked: the simulator does not run them.
    for (item, g) in gpu_only {
        let kind = if item.kind == ItemKind::Kernel { "__global__ (GPU only)" } else { "__device__ (GPU only)" };
        t.add_row([kind.to_string(), g.signature(&item.name), session.sources.location(item.span)]);
    }
    // Kinds and locations stay whole; a long signature wraps instead.
    for i in [0, 2] {
        if let Some(c) = t.column_mut(i) {
            c.set_constraint(ColumnConstraint::ContentWidth);
        }
    }
    writeln!(out, "{t}")?;
    Ok(Status::Ok)
}

fn cuda_of(session: &mut Session, arg: &str, out: &mut dyn Write) -> io::Result<Status> {
    session.show_cuda(arg, out)
}

fn reset(session: &mut Session, _: &str, out: &mut dyn Write) -> io::Result<Status> {
    session.reset();
    writeln!(out, "session reset: no kernels, buffers or scalars")?;
    Ok(Status::Ok)
}

fn backend(session: &mut Session, args: &str, out: &mut dyn Write) -> io::Result<Status> {
    if args.is_empty() {
        let label = session.backend_label();
        let what = if session.on_gpu() { "the GPU" } else { "the CPU simulator" };
        writeln!(out, "backend: {label} ({what})")?;
        return Ok(Status::Ok);
    }
    let Some(kind) = BackendKind::parse(args) else {
        return usage(session, out, "backend", &format!("`{args}` is not a backend"));
    };
    match session.switch_backend(kind) {
        Ok(msg) => {
            writeln!(out, "{msg}")?;
            Ok(Status::Ok)
        }
        Err(msg) => {
            writeln!(out, "{} {msg}", session.style().error("error:"))?;
            Ok(Status::Error)
        }
    }
}

fn seed(session: &mut Session, args: &str, out: &mut dyn Write) -> io::Result<Status> {
    if args.is_empty() {
        writeln!(out, "seed: {}", session.sim.config.seed)?;
        return Ok(Status::Ok);
    }
    match args.replace('_', "").parse::<u64>() {
        Ok(n) => {
            session.set_seed(n);
            session.history.push(format!(":seed {n}"));
            writeln!(out, "seed: {n}")?;
            Ok(Status::Ok)
        }
        Err(_) => usage(session, out, "seed", &format!("`{args}` is not a whole number from 0 to {}", u64::MAX)),
    }
}

fn schedule(session: &mut Session, args: &str, out: &mut dyn Write) -> io::Result<Status> {
    if args.is_empty() {
        writeln!(out, "schedule: {}", session.sim.config.schedule.name())?;
        return Ok(Status::Ok);
    }
    match Schedule::parse(args) {
        Some(s) => {
            session.set_schedule(s);
            session.history.push(format!(":schedule {}", s.name()));
            writeln!(out, "schedule: {}", s.name())?;
            Ok(Status::Ok)
        }
        None => usage(session, out, "schedule", &format!("`{args}` is not a schedule")),
    }
}

/// The file `arg` names, if this session may `verb` it (see [`FileAccess`]).
fn reachable(session: &Session, verb: &str, arg: &str) -> Result<PathBuf, String> {
    let FileAccess::Within(folder) = &session.options.files else { return Ok(PathBuf::from(arg)) };
    let path = Path::new(arg);
    let escapes = path.components().any(|c| !matches!(c, Component::Normal(_) | Component::CurDir));
    let refuse = || {
        format!(
            "a replayed script may only {verb} files in its own folder ({}): `{arg}` is outside it; name a file there with a relative path, without `..`",
            folder.display()
        )
    };
    if escapes {
        return Err(refuse());
    }
    let joined = folder.join(path);
    // A link inside the folder may still point out of it.
    let real_folder = folder.canonicalize().map_err(|e| format!("cannot read the script's folder: {e}"))?;
    let mut probe = joined.clone();
    while !probe.exists() {
        if !probe.pop() {
            break;
        }
    }
    if probe.exists() && !probe.canonicalize().is_ok_and(|p| p.starts_with(&real_folder)) {
        return Err(refuse());
    }
    Ok(joined)
}

/// `--force` before a file name: write over an existing file.
fn force_flag(args: &str) -> (bool, &str) {
    match args.trim().strip_prefix("--force") {
        Some(rest) if rest.is_empty() || rest.starts_with(char::is_whitespace) => (true, rest.trim()),
        _ => (false, args.trim()),
    }
}

/// `:max-steps [N|default]`.
fn max_steps(session: &mut Session, args: &str, out: &mut dyn Write) -> io::Result<Status> {
    let show = |steps: u64| {
        format!(
            "max-steps: {} warp steps per launch, {} for one warp",
            crate::diag::text::thousands(steps),
            crate::diag::text::thousands((steps / 4).max(1))
        )
    };
    if args.is_empty() {
        writeln!(out, "{}", show(session.sim.config.max_steps))?;
        return Ok(Status::Ok);
    }
    let steps = if args == "default" {
        Some(SimConfig::DEFAULT_MAX_STEPS)
    } else {
        args.replace(['_', ','], "").parse::<u64>().ok().filter(|n| (MIN_STEPS..=MAX_STEPS).contains(n))
    };
    let Some(steps) = steps else {
        return usage(
            session,
            out,
            "max-steps",
            &format!(
                "`{args}` is not a step budget: a whole number from {} to {}, or `default`",
                crate::diag::text::thousands(MIN_STEPS),
                crate::diag::text::thousands(MAX_STEPS)
            ),
        );
    };
    session.set_max_steps(steps);
    session.history.push(format!(":max-steps {steps}"));
    writeln!(out, "{}", show(steps))?;
    Ok(Status::Ok)
}

/// The step budgets `:max-steps` accepts: fewer than a thousand steps cannot run a warp through
/// a loop of any size; past a hundred billion a launch takes hours on the simulator.
const MIN_STEPS: u64 = 1_000;
const MAX_STEPS: u64 = 100_000_000_000;

fn load(session: &mut Session, args: &str, out: &mut dyn Write) -> io::Result<Status> {
    if args.is_empty() {
        return usage(session, out, "load", "which file?");
    }
    let path = match reachable(session, "load", args) {
        Ok(p) => p,
        Err(why) => {
            writeln!(out, "{} {why}", session.style().error("error:"))?;
            return Ok(Status::Error);
        }
    };
    let path = path.as_path();
    // A script that loads itself, or two that load each other, would never end.
    let key = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    if let Some(at) = session.loading.iter().position(|p| *p == key) {
        let chain: Vec<String> = session.loading[at..].iter().chain([&key]).map(|p| p.display().to_string()).collect();
        writeln!(
            out,
            "{} {} is already being loaded ({}): a script that loads itself would never end",
            session.style().error("error:"),
            path.display(),
            chain.join(" -> ")
        )?;
        return Ok(Status::Error);
    }
    if session.loading.len() >= MAX_LOAD_DEPTH {
        writeln!(
            out,
            "{} `:load {}` would nest more than {MAX_LOAD_DEPTH} scripts deep",
            session.style().error("error:"),
            path.display()
        )?;
        return Ok(Status::Error);
    }
    let text = match crate::script::input::read_script(path) {
        Ok(t) => t,
        Err(e) => {
            writeln!(out, "{} cannot read {}: {e}", session.style().error("error:"), path.display())?;
            return Ok(Status::Error);
        }
    };
    // The file is a script: `exit` in it does not leave the prompt.
    session.leave.loading += 1;
    session.loading.push(key);
    let status = session.eval_text(&path.display().to_string(), &text, true, out);
    session.loading.pop();
    session.leave.loading -= 1;
    status
}

/// Scripts that `:load` others may nest this deep.
const MAX_LOAD_DEPTH: usize = 16;

fn save(session: &mut Session, args: &str, out: &mut dyn Write) -> io::Result<Status> {
    let (force, args) = force_flag(args);
    if args.is_empty() {
        return usage(session, out, "save", "which file?");
    }
    let Some(path) = writable(session, "save", args, force, out)? else { return Ok(Status::Error) };
    let path = path.as_path();
    let mut text = String::from("# saved by gridlab: replay with `gridlab replay FILE` or `:load FILE`\n");
    for input in &session.history {
        text.push_str(input.trim_end());
        text.push('\n');
    }
    let n = session.history.len();
    let what = format!("saved {n} input{} to {}", if n == 1 { "" } else { "s" }, path.display());
    write_file(session, path, &text, &what, out)
}

/// `:export FILE.md`: the session so far as Markdown, each input in a fenced block followed by
/// its output.
fn export(session: &mut Session, args: &str, out: &mut dyn Write) -> io::Result<Status> {
    let (force, args) = force_flag(args);
    if args.is_empty() {
        return usage(session, out, "export", "which file? e.g. `:export session.md`");
    }
    let Some(path) = writable(session, "export", args, force, out)? else { return Ok(Status::Error) };
    let path = path.as_path();
    let backend = session.backend_label();
    let doc = session
        .extension
        .as_deref()
        .and_then(|e| e.handout(&session.transcript))
        .unwrap_or_else(|| session_document(&session.transcript, &backend));
    let html = path.extension().is_some_and(|e| e.eq_ignore_ascii_case("html") || e.eq_ignore_ascii_case("htm"));
    let text = if html { doc.html() } else { doc.markdown() };
    // What the file holds, not what the session ran: a lesson's handout takes that lesson's
    // inputs only, and leaves out the commands that moved about it.
    let n = doc.inputs();
    let what = format!("wrote {n} input{} and their output to {}", if n == 1 { "" } else { "s" }, path.display());
    write_file(session, path, &text, &what, out)
}

/// The file `:save`/`:export` may write, or `None` after saying why not: outside a script's
/// folder, or an existing file without `--force` (the REPL then asks whether to write over it).
fn writable(
    session: &mut Session,
    verb: &str,
    arg: &str,
    force: bool,
    out: &mut dyn Write,
) -> io::Result<Option<PathBuf>> {
    let path = match reachable(session, verb, arg) {
        Ok(p) => p,
        Err(why) => {
            writeln!(out, "{} {why}", session.style().error("error:"))?;
            return Ok(None);
        }
    };
    if path.exists() && !force {
        writeln!(
            out,
            "{} {} exists: `:{verb} --force {arg}` writes over it",
            session.style().error("error:"),
            path.display()
        )?;
        session.ask(format!("{} exists. Write over it? [y/N] ", path.display()), format!(":{verb} --force {arg}"));
        return Ok(None);
    }
    Ok(Some(path))
}

/// Write a file the learner named, saying `done` or why not.
fn write_file(session: &Session, path: &Path, text: &str, done: &str, out: &mut dyn Write) -> io::Result<Status> {
    match std::fs::write(path, text) {
        Ok(()) => {
            writeln!(out, "{done}")?;
            Ok(Status::Ok)
        }
        Err(e) => {
            writeln!(out, "{} cannot write {}: {e}", session.style().error("error:"), path.display())?;
            Ok(Status::Error)
        }
    }
}

/// The handout of a session without a lesson: every input and what it printed, kernels in
/// blocks of their own, consecutive statements together.
pub fn session_document(transcript: &[crate::render::handout::Ran], backend: &str) -> crate::render::handout::Document {
    use crate::render::handout::{Block, Document};
    let mut doc = Document::new("A gridlab session");
    doc.blocks.push(Block::Prose(format!(
        "Kernels ran on `{backend}`. Each input (after `>`) is followed by what gridlab printed."
    )));
    for ran in transcript {
        doc.ran(ran.clone(), is_cuda(&ran.input));
    }
    doc
}

/// Whether an input is CUDA source (a kernel, a function), not a statement.
pub fn is_cuda(input: &str) -> bool {
    crate::script::split_inputs(input)
        .is_ok_and(|inputs| inputs.iter().any(|i| i.kind == crate::script::InputKind::Cuda))
}

/// Refuse, with the way to switch, when the GPU backend is not the one running launches.
fn needs_gpu(session: &mut Session, cmd: &str, what: &str, out: &mut dyn Write) -> io::Result<Option<Status>> {
    if session.active_gpu().is_some() {
        return Ok(None);
    }
    writeln!(
        out,
        "{} `:{cmd}` needs the GPU backend: {what}. Switch with `:backend gpu` (`gridlab doctor` says whether this machine has a usable GPU).",
        session.style().error("error:")
    )?;
    Ok(Some(Status::Error))
}

/// Refuse a name that is not a kernel of the session, suggesting the closest one.
fn not_a_kernel(session: &Session, name: &str, out: &mut dyn Write) -> io::Result<Option<Status>> {
    let kernels = session.module.kernel_names();
    if kernels.contains(&name) {
        return Ok(None);
    }
    let style = session.style();
    if kernels.is_empty() {
        writeln!(out, "{} no kernels yet; type one, starting with `__global__ void`", style.error("error:"))?;
        return Ok(Some(Status::Error));
    }
    let hint = crate::diag::suggest::closest(name, kernels.iter().copied())
        .map(|c| format!(" Did you mean `{c}`?"))
        .unwrap_or_default();
    writeln!(out, "{} there is no kernel `{name}`.{hint} `:kernels` lists them.", style.error("error:"))?;
    Ok(Some(Status::Error))
}

fn ptx(session: &mut Session, args: &str, out: &mut dyn Write) -> io::Result<Status> {
    if let Some(status) = needs_gpu(session, "ptx", "PTX is what NVRTC, CUDA's compiler, makes for a real GPU", out)? {
        return Ok(status);
    }
    let kernel = args.trim();
    if !kernel.is_empty()
        && let Some(status) = not_a_kernel(session, kernel, out)?
    {
        return Ok(status);
    }
    if session.module.is_empty() {
        writeln!(out, "no kernels yet; type one, starting with `__global__ void`")?;
        return Ok(Status::Ok);
    }
    let style = session.style().clone();
    let Some(gpu) = session.active_gpu() else { return Ok(Status::Error) };
    let text = match gpu.ptx() {
        Ok(text) => text,
        Err(e) => {
            writeln!(out, "{} {e}", style.error("error:"))?;
            return Ok(Status::Error);
        }
    };
    match crate::backend::gpu::ptx::entry(&text, kernel) {
        Some(entry) if !kernel.is_empty() => writeln!(out, "{entry}")?,
        _ => {
            if !kernel.is_empty() {
                writeln!(
                    out,
                    "{}",
                    style.dim(&format!("(`{kernel}` was not found on its own in the PTX: the whole module follows)"))
                )?;
            }
            writeln!(out, "{}", text.trim_end())?;
        }
    }
    Ok(Status::Ok)
}

fn info(session: &mut Session, args: &str, out: &mut dyn Write) -> io::Result<Status> {
    let mut words = args.split_whitespace();
    let (Some(kernel), block, None) = (words.next(), words.next(), words.next()) else {
        return usage(session, out, "info", "which kernel?");
    };
    let block_size = match block.map(|b| b.replace('_', "").parse::<u32>()) {
        None => 256,
        Some(Ok(n)) if n > 0 => n,
        Some(_) => {
            let b = block.unwrap_or_default();
            return usage(session, out, "info", &format!("`{b}` is not a block size (threads per block, like 256)"));
        }
    };
    if let Some(status) =
        needs_gpu(session, "info", "registers and occupancy are what the GPU's compiler decides", out)?
    {
        return Ok(status);
    }
    if let Some(status) = not_a_kernel(session, kernel, out)? {
        return Ok(status);
    }
    let style = session.style().clone();
    let Some(gpu) = session.active_gpu() else { return Ok(Status::Error) };
    match gpu.kernel_info(kernel, block_size) {
        Ok(i) => {
            writeln!(out, "{}", info_table(kernel, &i, &style))?;
            Ok(Status::Ok)
        }
        Err(e) => {
            writeln!(out, "{} {e}", style.error("error:"))?;
            Ok(Status::Error)
        }
    }
}

/// `:info`'s table: one row per resource, then the occupancy for the block size.
fn info_table(kernel: &str, i: &KernelInfo, style: &Style) -> Table {
    let mut t = table(style.width);
    t.set_header([style.bold(kernel), String::new()]);
    let bytes = |n: i32| if n == 1 { "1 byte".to_string() } else { format!("{n} bytes") };
    t.add_row(["registers per thread".to_string(), i.registers.to_string()]);
    t.add_row(["shared memory per block (static)".to_string(), bytes(i.shared_bytes)]);
    let local = bytes(i.local_bytes);
    let local = if i.local_bytes > 0 { style.warn(&format!("{local}, slow (spills or arrays)")) } else { local };
    t.add_row(["local memory per thread".to_string(), local]);
    t.add_row(["max threads per block".to_string(), i.max_threads_per_block.to_string()]);
    let occupancy = if i.active_blocks_per_sm <= 0 {
        style.error(&format!("cannot launch (at most {})", i.max_threads_per_block))
    } else {
        let blocks = if i.active_blocks_per_sm == 1 { "block" } else { "blocks" };
        format!(
            "{:.0}%: {} {blocks} per SM, {} of {} warps",
            i.occupancy() * 100.0,
            i.active_blocks_per_sm,
            i.active_warps(),
            i.max_warps()
        )
    };
    t.add_row([format!("occupancy at {} threads per block", i.block_size), occupancy]);
    if let Some(c) = t.column_mut(0) {
        c.set_constraint(ColumnConstraint::ContentWidth);
    }
    t
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
        assert_eq!((s.sim.config.max_steps, s.options.sim.max_steps), (1_000_000, 1_000_000));
        assert_eq!(s.history.last().map(String::as_str), Some(":max-steps 1000000"));
        for bad in ["lots", "0", "-5", "999", "100000000001"] {
            let mut out = Vec::new();
            assert_eq!(run(&mut s, &format!(":max-steps {bad}"), &mut out).unwrap(), Status::Error, "{bad}");
            let out = String::from_utf8(out).unwrap();
            assert!(out.contains("is not a step budget") && out.contains("usage: :max-steps [N|default]"), "{out}");
        }
        assert_eq!(s.sim.config.max_steps, 1_000_000);
        assert_eq!(run(&mut s, ":max-steps default", &mut Vec::new()).unwrap(), Status::Ok);
        assert_eq!(s.sim.config.max_steps, SimConfig::DEFAULT_MAX_STEPS);
        let (_, help) = run_on_sim(":help\n");
        assert!(help.contains(":max-steps [N|default]"), "{help}");
        let (_, device) = run_on_sim(":device\n");
        assert!(device.replace('\n', " ").contains("50,000,000 for one warp"), "{device}");
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

    fn kernel_info() -> KernelInfo {
        KernelInfo {
            registers: 16,
            shared_bytes: 1024,
            local_bytes: 0,
            max_threads_per_block: 1024,
            block_size: 256,
            active_blocks_per_sm: 6,
            max_threads_per_sm: 2048,
        }
    }

    #[test]
    fn info_shows_resources_and_occupancy() {
        let text = info_table("add_half", &kernel_info(), &Style::plain()).to_string();
        for want in [
            "registers per thread",
            "16",
            "1024 bytes",
            "0 bytes",
            "occupancy at 256 threads per block",
            "75%: 6 blocks per SM, 48 of 64 warps",
        ] {
            assert!(text.contains(want), "{want}:\n{text}");
        }
        assert!(text.lines().all(|l| l.chars().count() <= 80), "{text}");
    }

    #[test]
    fn info_warns_of_spills_and_impossible_blocks() {
        let i = KernelInfo { local_bytes: 48, block_size: 2048, active_blocks_per_sm: 0, ..kernel_info() };
        let text = info_table("k", &i, &Style::plain()).to_string();
        assert!(text.contains("48 bytes, slow (spills or arrays)"), "{text}");
        assert!(text.contains("cannot launch (at most 1024)"), "{text}");
        assert!(text.lines().all(|l| l.chars().count() <= 80), "{text}");
    }
}
