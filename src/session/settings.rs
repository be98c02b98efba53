//! The session's own commands: its settings (`:backend`, `:seed`, `:schedule`, `:max-steps`,
//! `:reference`), what it holds (`:buffers`, `:kernels`, `:device`, `:reset`), what the GPU's
//! compiler made (`:ptx`, `:info`, `:cuda`) and the views over a launch (`:race`, `:compare`,
//! `:map`, `:why`, `:time`, `:profile`), each a row of [`COMMANDS`] beside the function it runs.

use std::io::{self, Write};

use super::command::{Args, Call, CommandSpec};
use super::{Session, Status};
use crate::backend::BackendKind;
use crate::backend::sim::{Schedule, SimConfig};
use crate::cuda::ItemKind;
use crate::render;
use crate::render::listing::{Listing, write_listing};

/// The session's own commands, in the order `:help` lists them after `:help` itself.
pub const COMMANDS: &[CommandSpec] = &[
    CommandSpec {
        name: "buffers",
        args: Args::None,
        aliases: &[],
        summary: "list buffers and scalars",
        help: "Lists every buffer with its dtype, shape and size, and every scalar with its value.",
        run: buffers,
    },
    CommandSpec {
        name: "kernels",
        args: Args::None,
        aliases: &[],
        summary: "list kernels and device functions",
        help: "Lists the kernels and __device__ functions defined so far, with their parameters and where they were defined; Python kernels (`@cuda.jit`) too.",
        run: kernels,
    },
    CommandSpec {
        name: "cuda",
        args: Args::Text("NAME"),
        aliases: &[],
        summary: "show the CUDA C a Python kernel means",
        help: "`:cuda NAME` prints the CUDA C that the Python kernel NAME (`@cuda.jit`) is lowered to: the C its last launch ran, typed from that launch's arguments, or before any launch, the C for the types its code suggests. gridlab runs that C on the simulator and the GPU; every finding points back at the Python line.",
        run: cuda_of,
    },
    CommandSpec {
        name: "device",
        args: Args::None,
        aliases: &[],
        summary: "what runs your kernels: the GPU or the simulator",
        help: "On the GPU backend: the device's name, compute capability, number of SMs (streaming multiprocessors: choose grid sizes as a few blocks per SM), memory, peak memory bandwidth and launch limits. On the simulator: how it runs threads (warps of 32, schedule, seed, step budget) and the limits it enforces, which are CUDA's.",
        run: device,
    },
    CommandSpec {
        name: "reset",
        args: Args::None,
        aliases: &[],
        summary: "forget kernels, buffers and scalars",
        help: "Starts over: forgets every kernel, buffer, scalar and the last launch's findings. Settings (backend, seed, schedule) stay.",
        run: reset,
    },
    CommandSpec {
        name: "backend",
        args: Args::Choice { value: None, words: &["sim", "gpu", "auto"], what: "a backend" },
        aliases: &[],
        summary: "show or choose where kernels run",
        help: "`sim` is gridlab's CPU simulator: it runs everywhere and reports races and out-of-bounds accesses. `gpu` runs on an NVIDIA GPU; `auto` picks the GPU when one works.",
        run: backend,
    },
    CommandSpec {
        name: "seed",
        args: Args::Text("[N]"),
        aliases: &[],
        summary: "show or set the simulator's seed",
        help: "The random schedule interleaves warps in an order drawn from this seed: the same seed gives the same result, byte for byte. Try another seed to see a racy kernel give another answer.",
        run: seed,
    },
    CommandSpec {
        name: "schedule",
        args: Args::Choice { value: None, words: &["random", "lockstep", "sequential"], what: "a schedule" },
        aliases: &[],
        summary: "show or set how the simulator interleaves threads",
        help: "`random` (default) interleaves warps in a seeded random order, as a GPU might; `lockstep` advances every resident warp one step at a time; `sequential` runs one thread at a time to completion (or to a barrier): what a CPU loop computes, the reference answer for racy kernels.",
        run: schedule,
    },
    CommandSpec {
        name: "max-steps",
        args: Args::Choice { value: Some("N"), words: &["default"], what: "a step budget" },
        aliases: &[],
        summary: "show or set the simulator's step budget per launch",
        help: "The simulator stops a launch that takes more than N warp steps in all, or a single warp that takes more than a quarter of N, with a step-limit finding (\"possible infinite loop\"): an endless loop ends there instead of hanging the session. On the sequential schedule a step runs one lane, so both are 32 times as many. `:max-steps` shows the budget, `:max-steps 1000000000` raises it for a kernel that really needs more (a bigger budget lets an endless loop run longer before it is stopped), `:max-steps default` puts back 200,000,000. `--max-steps N` sets it on the command line.",
        run: max_steps,
    },
    CommandSpec {
        name: "race",
        args: Args::Text("LAUNCH [xN]"),
        aliases: &[],
        summary: "run a launch N times, compare results",
        help: "`:race add_half_everywhere<<<1024, 1024>>>(a, len(a)) x10` runs the launch 10 times from the same inputs, on the random schedule with seeds SEED, SEED+1, ... (the session's seed first), and once on the sequential schedule for the reference answer. A table shows the elements that vary, one row per run; a histogram counts the distinct results and a verdict says whether the result depends on timing. On the GPU (`:backend gpu`), the N runs are on the device (rows `gpu 1`, `gpu 2`, ...), beside up to 3 of the simulator's random schedules (rows `sim seed ...`) for reference; the histogram and the verdict count the GPU's runs. The session's buffers are left as they were.",
        run: |s, c, o| s.race_view(c.args, o),
    },
    CommandSpec {
        name: "compare",
        args: Args::Text("LAUNCH vs LAUNCH [xN]"),
        aliases: &[],
        summary: "race two launches side by side",
        help: "`:compare racy<<<8, 256>>>(a) vs fixed<<<8, 256>>>(a) x10` runs both as `:race` does, each from the session's buffers, and shows their outcome tables side by side with a verdict for each. On the GPU (`:backend gpu`), each launch runs N times on the device (rows `gpu 1`, `gpu 2`, ...), beside up to 3 of the simulator's random schedules (rows `sim seed ...`) for reference; the histograms and the verdicts count the GPU's runs.",
        run: |s, c, o| s.compare_view(c.args, o),
    },
    CommandSpec {
        name: "map",
        args: Args::Text("LAUNCH"),
        aliases: &[],
        summary: "which thread wrote each element",
        help: "`:map add_half<<<4, 256>>>(a, len(a))` runs the launch on a copy of its buffers on the simulator and draws, for every buffer it wrote, which block (colour or character) and thread (shade) wrote each element: `·` nobody wrote it, `!` it was written twice or more, red `×` after `│` writes past the end. Long buffers are bucketed to the terminal width; 2-D launches over 2-D buffers draw a grid.",
        run: |s, c, o| s.map_view(c.args, o),
    },
    CommandSpec {
        name: "why",
        args: Args::None,
        aliases: &[],
        summary: "replay the last launch's race",
        help: "After a launch with a race finding, `:why` runs it again exactly (same seed, schedule and inputs) watching the finding's two threads on the racing element, and shows their reads and writes in the order they ran, with the values, then explains what went wrong (\"both read before either wrote: one update lost\").",
        run: |s, c, o| s.why_view(c.args, o),
    },
    CommandSpec {
        name: "time",
        args: Args::Text("LAUNCH [xN]"),
        aliases: &[],
        summary: "time a launch over N runs (estimated on the simulator)",
        help: "`:time add_half<<<4, 256>>>(a, len(a)) x5` runs the launch 5 times on copies of its buffers (seeds from the session's) and reports the minimum, median and maximum. On the simulator: the time the cost model estimates on the reference GPU (`:reference`), what limits it (DRAM bandwidth, L2, shared memory, instruction issue, atomics queueing in L2, latency, block scheduling or the launch itself), and the simulated warp steps, the work done, deterministic for a seed. On the GPU: kernel times measured with CUDA events and the host's launch overhead. `:profile` shows the estimate line by line; `docs/cost-model.md` explains it.",
        run: |s, c, o| s.time_view(c.args, o),
    },
    CommandSpec {
        name: "profile",
        args: Args::Text("LAUNCH"),
        aliases: &[],
        summary: "what a launch costs on a GPU, line by line",
        help: "`:profile transpose<<<(32, 32), (32, 8)>>>(out, in, n)` runs the launch on a copy of its buffers on the simulator and shows, for each source line, what the cost model counted, as Nsight Compute's source view would: warp instructions issued and the share of lanes active (divergence), 32-byte sectors per global request against the ideal (coalescing), DRAM bytes, shared-memory wavefronts per request (bank conflicts) and atomics. The line that wastes most is marked with what to change. The estimate is for the reference GPU (`:reference`); `docs/cost-model.md` explains the model.",
        run: |s, c, o| s.profile_view(c.args, o),
    },
    CommandSpec {
        name: "reference",
        args: Args::Text("[NAME]"),
        aliases: &[],
        summary: "show or choose the GPU the simulator estimates for",
        help: "The simulator's cost model estimates what a launch would take on a reference GPU: an H100 SXM unless you choose another. `:reference` lists the known GPUs with their figures; `:reference a100` picks one (also `--gpu-profile NAME`). `:time`, `:profile` and `cost` use it.",
        run: |s, c, o| s.reference_view(c.args, o),
    },
    CommandSpec {
        name: "ptx",
        args: Args::Text("[KERNEL]"),
        aliases: &[],
        summary: "show the PTX the GPU compiler made",
        help: "`:ptx add_half` shows the PTX (the GPU's portable assembly) that NVRTC makes from your kernel: its `.param`s, the registers it declares, every load (`ld.global`), store and branch. Without a name it shows the whole module. Needs the GPU backend (`:backend gpu`).",
        run: ptx,
    },
    CommandSpec {
        name: "info",
        args: Args::Text("KERNEL [BLOCK]"),
        aliases: &[],
        summary: "registers, memory and occupancy of a kernel",
        help: "`:info add_half 256` shows what the compiled kernel uses: registers per thread, static shared memory per block, local memory per thread (local arrays and register spills, which are slow), the most threads a block of it may have, and its occupancy for blocks of BLOCK threads (256 unless given): how many warps are resident on an SM at once, out of the most it can hold. More resident warps hide more memory latency. Needs the GPU backend (`:backend gpu`).",
        run: info,
    },
];

fn buffers(session: &mut Session, _: Call<'_>, out: &mut dyn Write) -> io::Result<Status> {
    if session.buffers().is_empty() && session.scalars().is_empty() {
        writeln!(out, "no buffers or scalars yet; make one with `let a = zeros(1000)`")?;
        return Ok(Status::Ok);
    }
    let mut t = Listing::new(&["name", "kind", "dtype", "shape", "bytes"]);
    for (name, b) in session.work.buffers() {
        t.row([
            name.clone(),
            "buffer".into(),
            b.dtype().to_string(),
            b.shape().to_string(),
            b.size_bytes().to_string(),
        ]);
    }
    for (name, v) in session.work.scalars() {
        t.row([name.clone(), "scalar".into(), v.type_name(), String::new(), String::new()]);
    }
    write_listing(out, session.style().width, &t)?;
    Ok(Status::Ok)
}

/// `:device`: the backend's device as a table of properties.
fn device(session: &mut Session, _: Call<'_>, out: &mut dyn Write) -> io::Result<Status> {
    let width = session.style().width;
    let mut t = Listing::new(&["", "device"]);
    if let Some(gpu) = session.active_gpu() {
        let i = gpu.info().clone();
        let [bx, by, bz] = i.max_block;
        let [gx, gy, gz] = i.max_grid;
        t.row(["backend".to_string(), format!("gpu {}: {}", i.ordinal, i.name)]);
        t.row(["compute capability".to_string(), format!("{}.{}", i.compute_capability.0, i.compute_capability.1)]);
        t.row(["SMs".to_string(), i.sm_count.to_string()]);
        t.row(["memory".to_string(), format!("{:.1} GiB", i.total_mem as f64 / f64::from(1u32 << 30))]);
        t.row(["peak memory bandwidth".to_string(), format!("{:.0} GB/s", i.peak_bandwidth_gbs)]);
        t.row(["threads per block".to_string(), format!("at most {}", i.max_threads_per_block)]);
        t.row(["block".to_string(), format!("at most ({bx}, {by}, {bz})")]);
        t.row(["grid".to_string(), format!("at most ({gx}, {gy}, {gz})")]);
        t.row(["shared memory".to_string(), format!("{} KiB per block", i.max_shared_per_block / 1024)]);
        t.row([
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
        let config = session.backends.sim_config().clone();
        t.row(["backend", "sim: gridlab's CPU simulator of CUDA C"]);
        t.row(["threads", "run as warps of 32 lanes in lockstep; warps interleave like a GPU's"]);
        t.row(["schedule".to_string(), format!("{} (seed {})", schedule_name(config.schedule), config.seed)]);
        t.row([
            "step budget".to_string(),
            format!(
                "{} warp steps per launch, {} for one warp (`:max-steps` changes it); 32 times as many on the sequential schedule, which runs one lane per step",
                crate::diag::text::thousands(config.max_steps),
                crate::diag::text::thousands((config.max_steps / 4).max(1))
            ),
        ]);
        t.row(["limits", "CUDA's: 1024 threads per block, block (1024, 1024, 64), grid (2147483647, 65535, 65535), 48 KiB shared memory per block"]);
        t.row(["SMs", "none: it has no hardware to fill (an H100 has 132); `:backend gpu` and `gridlab doctor` tell about a real GPU"]);
    }
    write_listing(out, width, &t)?;
    Ok(Status::Ok)
}

fn schedule_name(s: Schedule) -> &'static str {
    match s {
        Schedule::Random => "random",
        Schedule::Lockstep => "lockstep",
        Schedule::Sequential => "sequential",
    }
}

fn kernels(session: &mut Session, _: Call<'_>, out: &mut dyn Write) -> io::Result<Status> {
    let program = session.work.module().program();
    let gpu_only: Vec<_> = session
        .work
        .module()
        .items()
        .iter()
        .filter(|i| matches!(i.kind, ItemKind::Kernel | ItemKind::DeviceFunction))
        .filter_map(|i| Some((i, i.gpu_only()?)))
        .collect();
    let python = session.python_rows();
    // Python kernels are listed as Python; their lowered C is not listed again.
    let lowered = |name: &str| session.work.python().get(name).is_some();
    if program.functions.iter().all(|f| lowered(&f.name)) && gpu_only.is_empty() && python.is_empty() {
        writeln!(out, "no kernels yet; type one, starting with `__global__ void` (or `@cuda.jit` in Python)")?;
        return Ok(Status::Ok);
    }
    let mut t = Listing::new(&["kind", "signature", "defined at"]);
    for row in python {
        t.row(row);
    }
    for f in program.functions.iter().filter(|f| !lowered(&f.name)) {
        let kind = match f.kind {
            crate::cuda::ast::FuncKind::Kernel => "__global__",
            crate::cuda::ast::FuncKind::Device => "__device__",
        };
        t.row([kind.to_string(), render::signature(f), session.work.sources().location(f.name_span)]);
    }
    // GPU-only functions are marked: the simulator does not run them.
    for (item, g) in gpu_only {
        let kind = if item.kind == ItemKind::Kernel { "__global__ (GPU only)" } else { "__device__ (GPU only)" };
        t.row([kind.to_string(), g.signature(&item.name), session.work.sources().location(item.span)]);
    }
    // Kinds and locations stay whole; a long signature wraps instead.
    t.whole = vec![0, 2];
    write_listing(out, session.style().width, &t)?;
    Ok(Status::Ok)
}

fn cuda_of(session: &mut Session, Call { args: arg, .. }: Call<'_>, out: &mut dyn Write) -> io::Result<Status> {
    session.show_cuda(arg, out)
}

fn reset(session: &mut Session, _: Call<'_>, out: &mut dyn Write) -> io::Result<Status> {
    session.reset();
    writeln!(out, "session reset: no kernels, buffers or scalars")?;
    Ok(Status::Ok)
}

fn backend(session: &mut Session, call: Call<'_>, out: &mut dyn Write) -> io::Result<Status> {
    let args = call.args;
    if args.is_empty() {
        let label = session.backend_label();
        let what = if session.on_gpu() { "the GPU" } else { "the CPU simulator" };
        writeln!(out, "backend: {label} ({what})")?;
        return Ok(Status::Ok);
    }
    let Some(kind) = BackendKind::parse(args) else { return call.not_a_choice(session, out) };
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

fn seed(session: &mut Session, call: Call<'_>, out: &mut dyn Write) -> io::Result<Status> {
    let args = call.args;
    if args.is_empty() {
        writeln!(out, "seed: {}", session.backends.sim_config().seed)?;
        return Ok(Status::Ok);
    }
    match args.replace('_', "").parse::<u64>() {
        Ok(n) => {
            session.set_seed(n);
            session.record.ran(format!(":seed {n}"));
            writeln!(out, "seed: {n}")?;
            Ok(Status::Ok)
        }
        Err(_) => call.usage(session, out, &format!("`{args}` is not a whole number from 0 to {}", u64::MAX)),
    }
}

fn schedule(session: &mut Session, call: Call<'_>, out: &mut dyn Write) -> io::Result<Status> {
    let args = call.args;
    if args.is_empty() {
        writeln!(out, "schedule: {}", session.backends.sim_config().schedule.name())?;
        return Ok(Status::Ok);
    }
    match Schedule::parse(args) {
        Some(s) => {
            session.set_schedule(s);
            session.record.ran(format!(":schedule {}", s.name()));
            writeln!(out, "schedule: {}", s.name())?;
            Ok(Status::Ok)
        }
        None => call.not_a_choice(session, out),
    }
}

/// `:max-steps [N|default]`.
fn max_steps(session: &mut Session, call: Call<'_>, out: &mut dyn Write) -> io::Result<Status> {
    let args = call.args;
    let show = |steps: u64| {
        format!(
            "max-steps: {} warp steps per launch, {} for one warp",
            crate::diag::text::thousands(steps),
            crate::diag::text::thousands((steps / 4).max(1))
        )
    };
    if args.is_empty() {
        writeln!(out, "{}", show(session.backends.sim_config().max_steps))?;
        return Ok(Status::Ok);
    }
    let steps = if args == "default" {
        Some(SimConfig::DEFAULT_MAX_STEPS)
    } else {
        args.replace(['_', ','], "").parse::<u64>().ok().filter(|n| (MIN_STEPS..=MAX_STEPS).contains(n))
    };
    let Some(steps) = steps else {
        return call.usage(
            session,
            out,
            &format!(
                "`{args}` is not a step budget: a whole number from {} to {}, or `default`",
                crate::diag::text::thousands(MIN_STEPS),
                crate::diag::text::thousands(MAX_STEPS)
            ),
        );
    };
    session.set_max_steps(steps);
    session.record.ran(format!(":max-steps {steps}"));
    writeln!(out, "{}", show(steps))?;
    Ok(Status::Ok)
}

/// The step budgets `:max-steps` accepts: fewer than a thousand steps cannot run a warp through
/// a loop of any size; past a hundred billion a launch takes hours on the simulator.
const MIN_STEPS: u64 = 1_000;
const MAX_STEPS: u64 = 100_000_000_000;

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
    let kernels = session.work.module().kernel_names();
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

fn ptx(session: &mut Session, Call { args, .. }: Call<'_>, out: &mut dyn Write) -> io::Result<Status> {
    if let Some(status) = needs_gpu(session, "ptx", "PTX is what NVRTC, CUDA's compiler, makes for a real GPU", out)? {
        return Ok(status);
    }
    let kernel = args.trim();
    if !kernel.is_empty()
        && let Some(status) = not_a_kernel(session, kernel, out)?
    {
        return Ok(status);
    }
    if session.work.module().is_empty() {
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

fn info(session: &mut Session, call: Call<'_>, out: &mut dyn Write) -> io::Result<Status> {
    let args = call.args;
    let mut words = args.split_whitespace();
    let (Some(kernel), block, None) = (words.next(), words.next(), words.next()) else {
        return call.usage(session, out, "which kernel?");
    };
    let block_size = match block.map(|b| b.replace('_', "").parse::<u32>()) {
        None => 256,
        Some(Ok(n)) if n > 0 => n,
        Some(_) => {
            let b = block.unwrap_or_default();
            return call.usage(session, out, &format!("`{b}` is not a block size (threads per block, like 256)"));
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
            writeln!(out, "{}", render::info::info_table(kernel, &i, &style))?;
            Ok(Status::Ok)
        }
        Err(e) => {
            writeln!(out, "{} {e}", style.error("error:"))?;
            Ok(Status::Error)
        }
    }
}
