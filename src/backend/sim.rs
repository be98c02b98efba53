//! The CPU simulator: runs a kernel the way a GPU would, and reports what a GPU hides.
//!
//! # Execution model
//!
//! **Compilation.** At its first launch (and again after the module changes) a kernel is compiled
//! from the checked AST to a compact register bytecode (`compile.rs`): every `__device__` call is
//! inlined, every operation is typed (`Add` in `int`, `float`, ...), conversions follow C. Each
//! lane has its own registers holding 64-bit patterns.
//!
//! **Warps.** Threads run as warps of 32 lanes. Each lane has a program counter; a warp runs the
//! group of lanes with the smallest one, one instruction for the whole group per *step*. Code is
//! laid out in source order, so after a divergent `if` or loop the lanes that went ahead wait
//! until the others reach them, and the warp reconverges. Loads and stores are separate steps:
//! `a[0] += 0.5f` is a load, an add and a store, and another warp may run in between, so updates
//! get lost as on a GPU. Lanes of one warp storing to the same element in one step: the highest
//! lane's value wins (and it is a race).
//!
//! **Memory.** A pointer is a region id and a byte offset (`memory.rs`): the launch's buffers
//! (accessed in place, little-endian), each block's `__shared__` arrays (`extern __shared__`
//! sized by the launch's dynamic shared bytes), each thread's local arrays, and the launch's
//! `__constant__`/`__device__` variables (fresh at every launch from their initialisers, and the
//! values statements set, `LaunchSpec::symbols`).
//! Accesses outside a region are not performed (reads give 0) and become an out-of-bounds
//! finding, summarised per memory and access kind; indices in findings are the byte offset
//! divided by the element size (of the buffer's dtype, or the array's element type). An access
//! through a pointer into no region at all stops the launch with a trap.
//!
//! **Schedules.** `Random` (the default): up to 8 blocks are resident; a seeded RNG picks which
//! ready warp runs next and for how many steps (1 to 16). The same seed gives the same result,
//! byte for byte. `Lockstep`: resident warps take one step each in turn. `Sequential`: one block
//! at a time, one thread at a time in thread order, each until it exits or reaches a barrier;
//! this is what a CPU loop computes, the reference answer for racy kernels. Warp collectives
//! (`__shfl*`, `__ballot`, `__any`, `__all`, `__syncwarp`) in `Sequential` run each lane up to
//! the collective, then do it for the whole warp at once, so shuffle reductions agree.
//!
//! **Barriers.** At `__syncthreads()` (or a counting `__syncthreads_count/_and/_or`) a lane
//! waits until every thread of its block is waiting or has exited; then all are released.
//! Threads waiting at different barriers, or waiting while others exited, give a
//! barrier-divergence finding (and are released anyway).
//!
//! **Races.** With findings on, each element of global and shared memory remembers its last
//! write and two reads (thread, the thread's synchronisation clock, instruction). Two accesses
//! of different threads race when one writes, not both are atomic, and nothing orders them:
//! a barrier of their block, a `__syncwarp`/tile sync of the lanes, or a fence-then-atomic
//! release that the later thread (or its block, after a barrier) acquired (`memory.rs`). Races
//! are summarised per memory and pair of source locations. Costs O(1) per access and a few
//! words per element.
//!
//! **Uninitialised reads.** With findings on, a read of a shared element whose race shadow has
//! no write yet (each block's shadow starts empty), or of a local variable declared without a
//! value before this thread assigned it (a hidden flag register per such variable), is an
//! uninitialised-read finding, and reads a poison value (`finding::POISON_*`).
//!
//! **Limits.** A launch may take `max_steps` warp steps in all (32 times as many with
//! `Sequential`, where a step runs one lane) and a warp a quarter of that; beyond, it stops with a
//! step-limit finding at the busiest warp's instruction ("possible infinite loop"). `__trap()`,
//! a failed `assert` and integer division by zero stop the launch with a trap finding. A stopped
//! launch reports `aborted`. Arithmetic C leaves undefined is defined (see `alu.rs`).

mod alu;
mod compile;
pub mod cost;
mod engine;
mod memory;
mod printf;
#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use crate::backend::{Backend, BackendError, BackendKind, LaunchBuffers, LaunchReport, LaunchSpec};
use crate::cuda::Module;

pub use engine::MAX_OUTPUT_LINES;

/// Memory a kernel's own variables may take per resident block (shared and local arrays,
/// `__device__` variables), so absurd declarations get an error rather than an allocation failure.
const MAX_MEMORY_BYTES: u64 = 256 << 20;

/// How the simulator interleaves warps.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Schedule {
    /// Seeded random choice of the next warp and its burst length.
    #[default]
    Random,
    /// Every resident warp one step at a time, round-robin.
    Lockstep,
    /// One thread at a time, in thread order: the sequential reference answer.
    Sequential,
}

impl Schedule {
    pub const ALL: [Schedule; 3] = [Schedule::Random, Schedule::Lockstep, Schedule::Sequential];

    pub fn name(self) -> &'static str {
        match self {
            Schedule::Random => "random",
            Schedule::Lockstep => "lockstep",
            Schedule::Sequential => "sequential",
        }
    }

    pub fn parse(s: &str) -> Option<Schedule> {
        Schedule::ALL.into_iter().find(|k| k.name() == s)
    }
}

impl fmt::Display for Schedule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The simulator's settings (the session's `:seed`, `:schedule` and `:max-steps` change them).
#[derive(Clone, Debug)]
pub struct SimConfig {
    pub seed: u64,
    pub schedule: Schedule,
    /// Warp steps a launch may take in all; one warp may take a quarter of it.
    pub max_steps: u64,
    /// Race and out-of-bounds tracking.
    pub findings: bool,
    /// Set from another thread (Ctrl-C) to stop the running launch at its next step.
    pub cancel: Option<Arc<AtomicBool>>,
    /// Wall time a launch may take, whatever its step budget: a launch of millions of threads
    /// stays within seconds (`--timeout`). `None`: only the step budget bounds it.
    pub time_limit: Option<Duration>,
    /// Told how a long launch is getting on (see [`Progress`]), for the prompt to show.
    pub progress: Option<ProgressSink>,
    /// Record who wrote each buffer element (`LaunchReport::writes`, for `:map`). Off by default:
    /// an ordinary launch pays one untaken branch per memory access.
    pub trace_writes: bool,
    /// Record every access of two threads to one element (`LaunchReport::watched`, for `:why`).
    pub watch: Option<Watch>,
    /// Count what the launch would cost on this reference GPU (the cost model); `None` turns
    /// the model off, for replay speed.
    pub cost: Option<&'static crate::cost::GpuProfile>,
    /// Worker threads a launch may run its blocks on (`--threads`, `GRIDLAB_THREADS`; every
    /// core by default). 1 runs every launch on the calling thread; any number gives the same
    /// output, byte for byte (`docs/simulator.md`, "Launches on several cores").
    pub threads: usize,
}

/// How far a running launch has got: blocks started of all, warp steps, time so far; `done`
/// once it has ended (to clear what was shown).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Progress {
    pub blocks_started: u64,
    pub blocks: u64,
    pub steps: u64,
    pub elapsed: Duration,
    pub done: bool,
}

/// Where a long launch reports its [`Progress`]: called about twice a second once a launch has
/// run for a second, and once more when it ends.
#[derive(Clone)]
pub struct ProgressSink(pub Arc<dyn Fn(Progress) + Send + Sync>);

impl fmt::Debug for ProgressSink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ProgressSink")
    }
}

/// What `SimConfig::watch` records: accesses of `threads` (global linear ids) to element `index`
/// of any memory; the caller picks out the memory it is after.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Watch {
    pub index: i64,
    pub threads: [u32; 2],
}

impl SimConfig {
    /// Room for a million threads of a few dozen instructions (about 2 million warp steps) or a
    /// 256x256 naive matmul (11 million), while a one-thread `while (true) {}` stops after a
    /// quarter of it (50 million steps, well under a second).
    pub const DEFAULT_MAX_STEPS: u64 = 200_000_000;
    /// The wall time a launch may take by default, as on the GPU (`--timeout`).
    pub const DEFAULT_TIME_LIMIT: Duration = Duration::from_secs(10);
}

impl Default for SimConfig {
    fn default() -> SimConfig {
        SimConfig {
            seed: 0,
            schedule: Schedule::Random,
            max_steps: SimConfig::DEFAULT_MAX_STEPS,
            findings: true,
            cancel: None,
            time_limit: Some(SimConfig::DEFAULT_TIME_LIMIT),
            progress: None,
            trace_writes: false,
            watch: None,
            cost: Some(crate::cost::profiles::default_profile()),
            threads: engine::default_threads(),
        }
    }
}

/// The CPU simulator backend.
#[derive(Default)]
pub struct SimBackend {
    pub config: SimConfig,
    /// Compiled kernels by name, with the module generation they were compiled from.
    cache: HashMap<String, (u64, Arc<compile::Kernel>)>,
    /// Race-detection shadows kept for the next launch.
    scratch: Vec<Vec<memory::Shadow>>,
    /// Threads the last launch's blocks ran on (see `SimConfig::threads`): 1 when it ran on
    /// one, as it does wherever blocks communicate; 0 before the first launch.
    last_threads: usize,
}

impl SimBackend {
    pub fn new(config: SimConfig) -> SimBackend {
        SimBackend { config, cache: HashMap::new(), scratch: Vec::new(), last_threads: 1 }
    }

    /// Threads the last launch's blocks ran on: 1 unless `SimConfig::threads` allowed more and
    /// its blocks did not communicate (`docs/simulator.md`, "Launches on several cores").
    pub fn last_threads(&self) -> usize {
        self.last_threads
    }

    fn kernel(&mut self, module: &Module, name: &str) -> Result<Arc<compile::Kernel>, BackendError> {
        let generation = module.generation();
        if let Some((g, k)) = self.cache.get(name)
            && *g == generation
        {
            return Ok(k.clone());
        }
        if let Some(g) = module.gpu_only_kernel(name) {
            return Err(BackendError::Unsupported(g.sim_refusal(name)));
        }
        let program = module.program();
        let (id, _) = program
            .function(name)
            .filter(|(_, f)| f.kind == crate::cuda::ast::FuncKind::Kernel)
            .ok_or_else(|| BackendError::Launch(format!("no kernel named `{name}`")))?;
        let kernel = Arc::new(compile::compile(program, id).map_err(BackendError::Unsupported)?);
        self.cache.insert(name.to_string(), (generation, kernel.clone()));
        Ok(kernel)
    }
}

impl Backend for SimBackend {
    fn kind(&self) -> BackendKind {
        BackendKind::Sim
    }

    fn label(&self) -> String {
        "sim".to_string()
    }

    fn load(&mut self, _module: &Module, _sources: &crate::diag::SourceMap) -> Result<(), BackendError> {
        Ok(())
    }

    fn launch(
        &mut self,
        module: &Module,
        spec: &LaunchSpec,
        buffers: &mut LaunchBuffers<'_>,
    ) -> Result<LaunchReport, BackendError> {
        let start = Instant::now();
        if spec.grid.count() == 0 || spec.block.count() == 0 {
            return Err(BackendError::Launch(format!(
                "cannot launch `{}` with <<<{}, {}>>>: every dimension must be at least 1",
                spec.kernel, spec.grid, spec.block
            )));
        }
        if spec.block.count() > 1 << 16 {
            return Err(BackendError::Launch(format!("blocks of {} threads are too large", spec.block.count())));
        }
        // Every warp takes at least one step: a launch with more warps than the step budget
        // could not even start them all, and would only grind until it hit the budget.
        let warps = u128::from(spec.grid.count()) * u128::from(spec.block.count().div_ceil(32));
        if warps > u128::from(self.config.max_steps) {
            return Err(BackendError::Launch(format!(
                "`{}<<<{}, {}>>>` is {} threads in {} warps, more than the simulator's budget of {} warp steps per \
                 launch (`--max-steps`): it could not run every warp even once. The simulator is for lesson-sized \
                 launches, up to a few million threads: launch fewer, or run this one on a GPU (`:backend gpu`)",
                spec.kernel,
                spec.grid,
                spec.block,
                crate::diag::text::thousands(spec.total_threads()),
                crate::diag::text::thousands(warps),
                crate::diag::text::thousands(self.config.max_steps),
            )));
        }
        let kernel = self.kernel(module, &spec.kernel)?;
        let memory = kernel.memory_bytes(spec.block.count(), spec.shared_bytes as u64);
        if memory > MAX_MEMORY_BYTES {
            return Err(BackendError::Launch(format!(
                "`{}` would need {} MiB of shared, local and global variables per resident block; the simulator allows {} MiB",
                spec.kernel,
                memory >> 20,
                MAX_MEMORY_BYTES >> 20
            )));
        }
        // A struct argument fills one parameter register per member.
        let registers: usize = spec.args.iter().map(crate::launch::Arg::width).sum();
        if kernel.params as usize != registers {
            return Err(BackendError::Launch(format!(
                "`{}` takes {} arguments, {} given",
                spec.kernel,
                kernel.params,
                spec.args.len()
            )));
        }
        for a in &spec.args {
            if let Some((i, offset)) = a.pointer() {
                let Some(b) = buffers.buffers.get(i) else {
                    return Err(BackendError::Launch(format!("argument refers to missing buffer {i}")));
                };
                if offset > b.len() {
                    return Err(BackendError::Launch(format!(
                        "an argument points {offset} elements into `{}`, which has {}",
                        buffers.names.get(i).map_or("?", String::as_str),
                        b.len()
                    )));
                }
            }
        }
        // Undo on Ctrl-C, as `Err` promises.
        let snapshot: Option<Vec<Vec<u8>>> =
            self.config.cancel.as_ref().map(|_| buffers.buffers.iter().map(|b| b.bytes().to_vec()).collect());
        let elems = buffers.buffers.iter().map(|b| b.dtype().size() as u32).collect();
        let unset = buffers.buffers.iter().map(|b| b.unset().map(<[bool]>::to_vec)).collect();
        let bytes = buffers.buffers.iter_mut().map(|b| b.bytes_mut()).collect();
        let out = engine::run(
            &kernel,
            module.program(),
            spec,
            bytes,
            elems,
            unset,
            &buffers.names,
            &self.config,
            &mut self.scratch,
        );
        self.last_threads = out.workers;
        if out.cancelled {
            if let Some(snapshot) = snapshot {
                for (b, s) in buffers.buffers.iter_mut().zip(snapshot) {
                    b.bytes_mut().copy_from_slice(&s);
                }
            }
            return Err(BackendError::Aborted(format!("launch of `{}` interrupted", spec.kernel)));
        }
        // A stopped launch leaves its buffers as they were, unwritten elements included.
        if !out.aborted {
            for (b, u) in buffers.buffers.iter_mut().zip(&out.unset) {
                if let Some(u) = u {
                    b.mark_written(|i| !u.get(i).copied().unwrap_or(false));
                }
            }
        }
        Ok(LaunchReport {
            elapsed: start.elapsed(),
            steps: Some(out.steps),
            kernel_ms: None,
            findings: out.findings,
            output: out.output,
            output_truncated: out.output_truncated,
            aborted: out.aborted,
            writes: out.writes,
            watched: out.watched,
            cost: out.cost,
            before: None,
        })
    }
}
