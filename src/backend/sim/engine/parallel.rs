//! Launches on several cores, with byte for byte the output of one.
//!
//! The random and lockstep schedules interleave the warps of up to 8 resident blocks step by
//! step, and what a learner sees depends on that interleaving. A launch on several threads
//! keeps it exactly, by construction:
//!
//! 1. **Speculate.** Worker threads (a rayon pool) run blocks, each on its own and to the end,
//!    against the launch's memory, a batch at a time (the next while the main thread replays
//!    this one), recording per warp the steps at which lanes arrived at a
//!    barrier or exited, the `printf` output and barrier findings (stamped with the warp and
//!    its step), and the block's reports. Every access also claims its element in a tag
//!    ([`claim`]): who touched it (block, barrier epoch, warp) and whether it was written.
//! 2. **Validate.** An access that meets another block's access to the same element, or
//!    another warp's of the same block since their last common barrier, where either writes
//!    (atomics write), voids the speculation: the blocks communicated, and what they saw would
//!    depend on the interleaving. So does a trap, a step limit, Ctrl-C or the time limit, a
//!    kernel that fences, the sequential schedule and `:map`/`:why` recording:
//!    the buffers are put back and the launch runs on one thread, as it always did. Whether a
//!    conflict is found does not depend on timing: every claim is one atomic step of a state
//!    machine in which any two conflicting accesses meet, in either order.
//! 3. **Replay and merge.** Without communication every warp's steps are what they would be in
//!    any interleaving, so the main thread replays the seeded scheduler over the recorded
//!    barrier arrivals and exits, executing nothing, and learns at which step of the launch
//!    each warp step ran. Reports (counts, and as each one's example the access the launch
//!    makes first, from the first example of every warp) and `printf` lines are merged in
//!    that order, the order one thread produces them in. A block whose barrier diverges runs
//!    again on one thread, since which warp waited first depends on the interleaving.
//!
//! The race shadows of elements several blocks only read are written by several workers (the
//! read slots): those values are never read back in a launch that validates, since a write to
//! such an element is a conflict.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use rand_core::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use rayon::prelude::*;

use super::{Block, Event, Machine, Mem, RESIDENT_BLOCKS, RESIDENT_MEMORY, Stop, WARP};
use crate::backend::LaunchSpec;

use super::super::compile::{Kernel, Op};
use super::super::cost::{Counter, Deferred, L1, L1Counts};
use super::super::memory::{Reports, Shadow};
use super::super::{Progress, Schedule, SimConfig};
use crate::cost::Counts;

/// The worker threads a launch may use unless told (`GRIDLAB_THREADS`, `--threads`): every
/// core.
pub fn default_threads() -> usize {
    std::env::var("GRIDLAB_THREADS")
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok())
        .filter(|n| *n >= 1)
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// How many threads this launch runs on: 1 where speculation cannot keep its output (see the
/// module's doc) or there is one block.
pub(super) fn workers(k: &Kernel, spec: &LaunchSpec, config: &SimConfig) -> usize {
    let blocks = spec.grid.count();
    if config.threads <= 1
        || config.schedule == Schedule::Sequential
        || config.trace_writes
        || config.watch.is_some()
        || blocks < 2
        || blocks >= u32::MAX as u64
        || spec.block.count() > MANY_WARPS * WARP as u64
        || k.code.iter().any(|op| matches!(op, Op::Fence))
    {
        return 1;
    }
    config.threads.min(blocks as usize)
}

/// One rayon pool per thread count, made once.
fn pool(n: usize) -> Option<Arc<rayon::ThreadPool>> {
    static POOLS: OnceLock<Mutex<HashMap<usize, Arc<rayon::ThreadPool>>>> = OnceLock::new();
    let mut pools = POOLS.get_or_init(Default::default).lock().ok()?;
    if let Some(p) = pools.get(&n) {
        return Some(p.clone());
    }
    let p = Arc::new(
        rayon::ThreadPoolBuilder::new().num_threads(n).thread_name(|i| format!("gridlab-sim-{i}")).build().ok()?,
    );
    pools.insert(n, p.clone());
    Some(p)
}

// A tag: block + 1 (bits 0..32, 0: untouched), barrier epoch (32..48), warp (48..54, or
// `MANY_WARPS`), and whether the recorded warp wrote in this epoch, the block wrote at all, and
// several blocks read the element (then the block is meaningless, and nobody may write).
const EPOCH_SHIFT: u32 = 32;
const WARP_SHIFT: u32 = 48;
const MANY_WARPS: u64 = 63;
const LAST_EPOCH: u64 = 0xffff;
const WROTE_NOW: u64 = 1 << 60;
const WROTE: u64 = 1 << 61;
const MANY_BLOCKS: u64 = 1 << 62;

/// Per element of every buffer and `__device__` variable, its tag.
pub(super) struct Tags {
    /// None for a buffer the kernel takes as `const` only: its reads need no claim, and a
    /// write to it is a conflict.
    pub(super) bufs: Vec<Vec<AtomicU64>>,
    /// Per byte of each variable (more than its elements; they are few).
    pub(super) globals: Vec<Vec<AtomicU64>>,
}

fn zeroed(n: usize) -> Vec<AtomicU64> {
    std::iter::repeat_with(|| AtomicU64::new(0)).take(n).collect()
}

impl Tags {
    pub(super) fn new(bufs: &[&mut [u8]], elem: &[u32], globals: &[Vec<u8>], read_only: &[bool]) -> Tags {
        let n = |(b, e): (&&mut [u8], &u32)| b.len() / (*e).max(1) as usize;
        Tags {
            bufs: bufs.iter().zip(elem).zip(read_only).map(|(b, ro)| zeroed(if *ro { 0 } else { n(b) })).collect(),
            globals: globals.iter().map(|g| zeroed(g.len())).collect(),
        }
    }
}

/// The running warp as a tag (see [`claim`]).
pub(super) fn me(linear: u64, epoch: u32, warp: usize) -> u64 {
    ((linear + 1) & 0xffff_ffff) | (epoch as u64).min(LAST_EPOCH) << EPOCH_SHIFT | (warp as u64 & 63) << WARP_SHIFT
}

/// A warp's step, as [`Reports::stamp`] records it.
pub(super) fn stamp(warp: usize, step: u64) -> u64 {
    (warp as u64) << STEP_BITS | step
}

/// The bits of a [`stamp`] that hold the step; the warp is above them.
const STEP_BITS: u32 = 40;

/// A [`stamp`]'s warp and step.
fn unstamp(stamp: u64) -> (usize, u64) {
    ((stamp >> STEP_BITS) as usize, stamp & ((1 << STEP_BITS) - 1))
}

/// Claim the elements of `tags` that bytes `[off, off + size)` cover (elements of `elem`
/// bytes) for `me`; `false` when one was touched by another block, or by another warp of this
/// block since their last common barrier, and either access writes.
#[inline]
pub(super) fn note(tags: &[AtomicU64], off: i64, size: u32, elem: i64, me: u64, write: bool) -> bool {
    if tags.is_empty() {
        // A buffer the kernel takes as `const` (see `Tags::bufs`); nothing in bounds is in an
        // empty region.
        return !write;
    }
    let (first, last) = if elem.count_ones() == 1 {
        let s = elem.trailing_zeros();
        (off >> s, (off + size as i64 - 1) >> s)
    } else {
        (off / elem, (off + size as i64 - 1) / elem)
    };
    (first..=last).all(|i| tags.get(i as usize).is_none_or(|t| claim(t, me, write)))
}

/// One access by `me` to an element with tag `t` (see the module's doc). Each claim is one
/// atomic step, so two conflicting accesses meet in whichever order they come.
#[inline]
fn claim(t: &AtomicU64, me: u64, write: bool) -> bool {
    let wrote = if write { WROTE_NOW | WROTE } else { 0 };
    let mut s = t.load(Ordering::Relaxed);
    loop {
        let new = if s == 0 {
            me | wrote
        } else if s & MANY_BLOCKS != 0 {
            return !write;
        } else if s as u32 != me as u32 {
            if write || s & WROTE != 0 {
                return false;
            }
            s | MANY_BLOCKS
        } else {
            let epoch = |v: u64| (v >> EPOCH_SHIFT) & LAST_EPOCH;
            let warp = |v: u64| (v >> WARP_SHIFT) & 63;
            if epoch(me) == LAST_EPOCH {
                return false;
            }
            if epoch(s) < epoch(me) {
                // A barrier of the block orders what came before.
                me | (s & WROTE) | wrote
            } else if warp(s) == warp(me) {
                s | wrote
            } else if write || s & WROTE_NOW != 0 {
                return false;
            } else {
                s | MANY_WARPS << WARP_SHIFT
            }
        };
        if new == s {
            return true;
        }
        match t.compare_exchange_weak(s, new, Ordering::Relaxed, Ordering::Relaxed) {
            Ok(_) => return true,
            Err(now) => s = now,
        }
    }
}

/// A barrier arrival or exit of some lanes of a warp, at its own step.
#[derive(Clone, Copy)]
struct Ev {
    step: u64,
    arrive: u32,
    exit: u32,
}

/// Output of a block, in the order the main thread replays it.
enum Out {
    Print(u64, String),
    Flush(u32, u64),
}

/// What a worker records of the block it runs.
#[derive(Default)]
pub(super) struct Log {
    warps: Vec<Vec<Ev>>,
    prints: Vec<(u64, Out)>,
}

impl Log {
    pub(super) fn event(&mut self, w: usize, step: u64, e: &Event) {
        let ev = match *e {
            Event::None => return,
            Event::Barrier(mask, _) => Ev { step, arrive: mask.count_ones(), exit: 0 },
            Event::Exit(mask) => Ev { step, arrive: 0, exit: mask.count_ones() },
        };
        if let Some(v) = self.warps.get_mut(w) {
            v.push(ev);
        }
    }

    pub(super) fn print(&mut self, stamp: u64, thread: u64, text: &str) {
        self.prints.push((stamp, Out::Print(thread, text.to_string())));
    }

    /// Exiting lanes print what they left without a newline; only a block that printed has any.
    pub(super) fn flush(&mut self, stamp: u64, mask: u32, thread0: u64) {
        if !self.prints.is_empty() {
            self.prints.push((stamp, Out::Flush(mask, thread0)));
        }
    }
}

/// A block run to its end on a worker.
struct BlockLog {
    /// The block's linear index in the grid.
    linear: u64,
    /// Live lanes per warp at the start.
    lanes: Vec<u32>,
    /// Every warp's barrier arrivals and exits, one warp after the other: warp `w`'s end where
    /// `ends[w]` says (one vector for the block, since the replay may hold many blocks' records,
    /// see [`replay`]).
    events: Vec<Ev>,
    ends: Vec<u32>,
    prints: Vec<(u64, Out)>,
    /// None when the block found nothing.
    reports: Option<Box<Reports>>,
    /// With the cost model on: the block's order-free counts, and its global accesses for the
    /// launch's caches.
    counts: Vec<Counts>,
    deferred: Deferred,
}

impl BlockLog {
    /// Warp `w`'s barrier arrivals and exits.
    fn warp(&self, w: usize) -> &[Ev] {
        let start = w.checked_sub(1).map_or(0, |p| self.ends[p] as usize);
        &self.events[start..self.ends[w] as usize]
    }

    /// The steps of warp `w`: it runs until its last event, at which its last lanes exit.
    fn warp_steps(&self, w: usize) -> u64 {
        self.warp(w).last().map_or(0, |e| e.step + 1)
    }

    /// The bytes its record takes while the replay holds it back (no output, no findings).
    fn held_bytes(&self) -> usize {
        std::mem::size_of::<BlockLog>() + 8 * self.lanes.len() + std::mem::size_of::<Ev>() * self.events.len()
    }

    /// The steps of all its warps.
    fn steps(&self) -> u64 {
        (0..self.ends.len()).map(|w| self.warp_steps(w)).sum()
    }

    /// Whether it holds anything that the step at which the launch ran each of its warps' steps
    /// decides: `printf` output, findings (their first example), or accesses for the cost
    /// model's caches and counts to add. A block without is quiet: the replay need not place
    /// its steps (see [`replay`]).
    fn loud(&self) -> bool {
        !self.prints.is_empty()
            || self.reports.is_some()
            || !self.counts.is_empty()
            || !self.deferred.events.is_empty()
            || !self.deferred.loads.is_empty()
    }
}

/// Slices of the launch's memory, shared by the workers.
struct Raw<T>(Vec<(*mut T, usize)>);

// SAFETY: the pointers are into the launch's buffers, globals and shadows, which outlive the
// speculation (the main thread waits for it and touches none of them meanwhile). Workers write
// the same element only in a speculation that then fails, whose writes are thrown away.
unsafe impl<T> Send for Raw<T> {}
unsafe impl<T> Sync for Raw<T> {}

impl<T> Raw<T> {
    fn of(v: &mut [&mut [T]]) -> Raw<T> {
        Raw(v.iter_mut().map(|s| (s.as_mut_ptr(), s.len())).collect())
    }

    /// SAFETY: as for `Raw`'s `Sync`; the slices are used only during the speculation.
    unsafe fn slices<'a>(&self) -> Vec<&'a mut [T]> {
        self.0.iter().map(|&(p, n)| unsafe { std::slice::from_raw_parts_mut(p, n) }).collect()
    }
}

/// What every worker's machine is made from.
struct Proto<'k, 'b> {
    k: &'k Kernel,
    bufs: Raw<u8>,
    buf_shadow: Raw<Shadow>,
    globals: Raw<u8>,
    global_shadow: Raw<Shadow>,
    buf_elem: Vec<u32>,
    buf_unset: &'b [Option<Vec<bool>>],
    read_only: &'b [bool],
    slot: Vec<u32>,
    findings: bool,
    tags: &'b Tags,
    block_dim: crate::backend::Dim3,
    grid_dim: crate::backend::Dim3,
    block_threads: u32,
    dyn_shared: u32,
    params: Vec<u64>,
    max_total: u64,
    max_warp: u64,
    threads: u64,
    cost: Option<Counter>,
}

/// When workers stop early: another block failed, Ctrl-C, or the wall-time limit.
struct Control<'a> {
    abort: AtomicBool,
    /// Steps run by blocks that were given up when the launch stopped, never to be replayed:
    /// a launch stopped by the clock says how far it got with them too.
    abandoned: AtomicU64,
    cancel: Option<&'a AtomicBool>,
    limit: Option<Duration>,
    start: Instant,
}

impl Control<'_> {
    /// Why the launch as a whole must stop, if it must: Ctrl-C or the wall-time limit. (A
    /// worker that found communication stops it too, but then it runs again on one thread.)
    fn stop(&self) -> Option<Stop> {
        if self.cancel.is_some_and(|c| c.load(Ordering::Relaxed)) {
            return Some(Stop::Cancelled);
        }
        self.limit.filter(|l| self.start.elapsed() >= *l).map(Stop::TimeLimit)
    }

    fn stopped(&self) -> bool {
        self.abort.load(Ordering::Relaxed)
            || self.cancel.is_some_and(|c| c.load(Ordering::Relaxed))
            || self.limit.is_some_and(|l| self.start.elapsed() >= l)
    }
}

struct Worker<'k, 'b> {
    m: Machine<'k, 'b>,
    pool: Vec<Block>,
    /// The lengths of the last block's deferred accesses (events, loads, data): the next
    /// block's records start with that room, rather than grow to it copy by copy.
    room: [usize; 3],
}

impl<'k, 'b> Worker<'k, 'b> {
    fn new(p: &'b Proto<'k, 'b>) -> Worker<'k, 'b> {
        // SAFETY: see `Raw`.
        let (bufs, buf_shadow, globals, global_shadow) =
            unsafe { (p.bufs.slices(), p.buf_shadow.slices(), p.globals.slices(), p.global_shadow.slices()) };
        let m = Machine {
            k: p.k,
            mem: Mem {
                bufs,
                buf_elem: p.buf_elem.clone(),
                buf_shadow,
                buf_unset: p.buf_unset,
                read_only: p.read_only,
                unwritten: Vec::new(),
                slot: p.slot.clone(),
                globals,
                global_shadow,
                findings: p.findings,
                extra: false,
                trace: None,
                watch: None,
                clock: 0,
                releases: Default::default(),
                tags: Some(p.tags),
                shared_tags: Vec::new(),
                me: 0,
                conflict: false,
            },
            reports: Reports::default(),
            barrier_findings: Vec::new(),
            barrier_seen: Default::default(),
            stop: None,
            output: Vec::new(),
            pending: HashMap::new(),
            truncated: false,
            block_dim: p.block_dim,
            grid_dim: p.grid_dim,
            block_threads: p.block_threads,
            dyn_shared: p.dyn_shared,
            params: p.params.clone(),
            seq: false,
            total: 0,
            max_total: p.max_total,
            max_warp: p.max_warp,
            cost: p.cost.as_ref().map(|c| Box::new(c.deferring())),
            param_names: Vec::new(),
            param_per: Vec::new(),
            param_views: Vec::new(),
            threads: p.threads,
            fences: false,
            log: Some(Box::default()),
        };
        Worker { m, pool: Vec::new(), room: [0; 3] }
    }

    /// Run block `linear` to its end; `None` when its speculation failed.
    fn speculate(&mut self, linear: u64, ctl: &Control) -> Option<BlockLog> {
        if ctl.stopped() {
            return None;
        }
        let m = &mut self.m;
        let mut b = self.pool.pop().unwrap_or_else(Block::empty);
        m.init_block(&mut b, linear);
        m.reports = Reports::default();
        m.reports.per_warp = true;
        m.barrier_seen.clear();
        m.barrier_findings.clear();
        m.total = 0;
        m.stop = None;
        if let Some(log) = m.log.as_deref_mut() {
            log.warps.iter_mut().for_each(Vec::clear);
            log.warps.resize_with(b.warps.len(), Vec::new);
            log.prints.clear();
        }
        m.mem.shared_tags.resize_with(b.shared.len(), Vec::new);
        for (t, s) in m.mem.shared_tags.iter_mut().zip(&b.shared) {
            t.clear();
            t.resize_with(s.len(), || AtomicU64::new(0));
        }
        if let Some(c) = m.cost.as_deref_mut() {
            c.take_counts();
            let [events, loads, data] = self.room;
            c.deferred = Some(Deferred {
                events: Vec::with_capacity(events),
                loads: Vec::with_capacity(loads),
                data: Vec::with_capacity(data),
            });
        }
        let lanes = b.warps.iter().map(|w| w.live.count_ones()).collect();
        let mut runs = 0u32;
        while b.live_warps > 0 && m.stop.is_none() {
            let mut ran = false;
            for w in 0..b.warps.len() {
                while b.warps[w].live & !b.warps[w].bar != 0 && m.stop.is_none() {
                    ran = true;
                    m.run_warp(&mut b, w, 1024);
                    runs = runs.wrapping_add(1);
                    if runs % 16 == 0 && ctl.stopped() {
                        m.stop = Some(Stop::Cancelled);
                    }
                }
            }
            if !ran {
                // Every live lane waits at a barrier that all have reached: cannot happen, as a
                // barrier lets its block go once every thread waits or has exited.
                m.stop = Some(Stop::Conflict);
            }
        }
        b.woke = false;
        self.pool.push(b);
        if m.stop.take().is_some() {
            ctl.abandoned.fetch_add(m.total, Ordering::Relaxed);
            ctl.abort.store(true, Ordering::Relaxed);
            return None;
        }
        let (counts, deferred) = match m.cost.as_deref_mut() {
            Some(c) => {
                let d = c.deferred.take().unwrap_or_default();
                self.room = [d.events.len(), d.loads.len(), d.data.len()];
                (c.take_counts(), d)
            }
            None => (Vec::new(), Deferred::default()),
        };
        let log = m.log.as_deref_mut()?;
        let mut events = Vec::with_capacity(log.warps.iter().map(Vec::len).sum());
        let ends = log
            .warps
            .iter()
            .map(|w| {
                events.extend_from_slice(w);
                events.len() as u32
            })
            .collect();
        let reports = std::mem::take(&mut m.reports);
        Some(BlockLog {
            linear,
            counts,
            deferred,
            lanes,
            events,
            ends,
            prints: std::mem::take(&mut log.prints),
            reports: (!reports.is_empty()).then(|| Box::new(reports)),
        })
    }
}

/// A warp in the replay: its lanes, where it is in its record, and which of its steps ran at
/// which step of the launch.
struct RWarp {
    live: u32,
    bar: u32,
    queued: bool,
    steps: u64,
    ev: usize,
    /// (the warp's step, the launch's step) at the start of each run the scheduler gave it.
    chunks: Vec<(u64, u64)>,
    /// Its deferred global accesses (indices into the block's), and how many are counted.
    cost: Vec<u32>,
    counted: usize,
}

struct RBlock {
    log: BlockLog,
    warps: Vec<RWarp>,
    /// With loads for the L1 stage: (the launch's step, the warp, the warp's step at its end) of
    /// each run the scheduler gave a warp, in the launch's order.
    order: Vec<(u64, u32, u64)>,
    /// Whether it printed or found something: only then does it need its warps' `chunks`
    /// (see [`RBlock::at`]), which a launch of a million warp runs would otherwise fill.
    stamped: bool,
    arrived: u32,
    exited: u32,
    live_warps: u32,
    woke: bool,
}

impl RBlock {
    fn new(log: BlockLog) -> RBlock {
        let mut warps: Vec<RWarp> = log
            .lanes
            .iter()
            .map(|&live| RWarp {
                live,
                bar: 0,
                queued: false,
                steps: 0,
                ev: 0,
                chunks: Vec::new(),
                cost: Vec::new(),
                counted: 0,
            })
            .collect();
        for (i, e) in log.deferred.events.iter().enumerate() {
            if let Some(w) = warps.get_mut(unstamp(e.0).0) {
                w.cost.push(i as u32);
            }
        }
        // About one run of a warp per load it makes, in the kernels that load in a loop.
        let order = Vec::with_capacity(log.deferred.loads.len());
        let stamped = log.reports.is_some() || !log.prints.is_empty();
        RBlock { live_warps: warps.len() as u32, warps, order, stamped, log, arrived: 0, exited: 0, woke: false }
    }

    fn enqueue(&mut self, s: usize, ready: &mut Vec<(u32, u32)>) {
        for (w, warp) in self.warps.iter_mut().enumerate() {
            if !warp.queued && warp.live > warp.bar {
                warp.queued = true;
                ready.push((s as u32, w as u32));
            }
        }
    }

    /// As `Machine::maybe_release`, on counts.
    fn maybe_release(&mut self, block_threads: u32) {
        if self.arrived == 0 || self.arrived + self.exited < block_threads {
            return;
        }
        self.arrived = 0;
        for w in &mut self.warps {
            w.bar = 0;
        }
        self.woke = true;
    }

    /// As `Machine::run_warp`, replaying the record: `None` past a step limit.
    fn run_warp(
        &mut self,
        w: usize,
        budget: u32,
        total: &mut u64,
        limits: (u64, u64, u32),
        counter: Option<&mut Counter>,
    ) -> Option<bool> {
        let (max_total, max_warp, block_threads) = limits;
        let (start, at) = (self.warps[w].steps, *total);
        let mut more = true;
        let mut left = budget as u64;
        while left > 0 {
            let warp = &mut self.warps[w];
            if warp.live <= warp.bar {
                more = false;
                break;
            }
            // The steps before the warp's next recorded event change nothing but the counts:
            // they are taken at once (a step limit they pass stops the replay all the same).
            let next = self.log.warp(w).get(warp.ev).map_or(u64::MAX, |e| e.step);
            let quiet = next.saturating_sub(warp.steps).min(left);
            if quiet > 0 {
                warp.steps += quiet;
                *total += quiet;
                left -= quiet;
                if warp.steps > max_warp || *total > max_total {
                    return None;
                }
                continue;
            }
            let step = warp.steps;
            warp.steps += 1;
            *total += 1;
            left -= 1;
            if warp.steps > max_warp || *total > max_total {
                return None;
            }
            let Some(&ev) = self.log.warp(w).get(warp.ev).filter(|e| e.step == step) else { continue };
            warp.ev += 1;
            if ev.arrive > 0 {
                warp.bar += ev.arrive;
                self.arrived += ev.arrive;
            }
            if ev.exit > 0 {
                warp.live -= ev.exit;
                self.exited += ev.exit;
                if warp.live == 0 {
                    self.live_warps -= 1;
                }
            }
            self.maybe_release(block_threads);
        }
        let warp = &mut self.warps[w];
        if warp.steps > start {
            if self.stamped {
                warp.chunks.push((start, at));
            }
            if !self.log.deferred.loads.is_empty() {
                self.order.push((at, w as u32, warp.steps));
            }
        }
        // The chunk's global accesses reach the caches now, in the launch's order.
        if let Some(c) = counter {
            let d = &self.log.deferred;
            while let Some(&(stamp, pc, block, op, at, ns, na)) =
                warp.cost.get(warp.counted).and_then(|&i| d.events.get(i as usize))
            {
                if unstamp(stamp).1 >= warp.steps {
                    break;
                }
                let (at, ns, na) = (at as usize, ns as usize, na as usize);
                c.caches(pc, block, op, &d.data[at..at + ns], &d.data[at + ns..at + ns + na]);
                warp.counted += 1;
            }
        }
        Some(more)
    }

    /// The steps of its warps not replayed yet.
    fn left(&self) -> u64 {
        self.warps.iter().enumerate().map(|(w, warp)| self.log.warp_steps(w) - warp.steps).sum()
    }

    /// The launch's step at which stamp `stamp` of this block ran (only of a block that is
    /// `stamped`: the others keep no `chunks`).
    fn at(&self, stamp: u64) -> u64 {
        let (w, step) = unstamp(stamp);
        let Some(chunks) = self.warps.get(w).map(|w| &w.chunks) else { return 0 };
        let i = chunks.partition_point(|c| c.0 <= step);
        i.checked_sub(1).map_or(0, |i| chunks[i].1 + (step - chunks[i].0))
    }
}

/// Run the launch on `workers` threads (see the module's doc); `false`, with the buffers and
/// `m` in no state to use, when it must run on one thread instead.
pub(super) fn run(m: &mut Machine, blocks: u64, config: &SimConfig, workers: usize, start: Instant) -> bool {
    let Some(pool) = pool(workers) else { return false };
    let Some(tags) = m.mem.tags else { return false };
    let proto = Proto {
        k: m.k,
        bufs: Raw::of(&mut m.mem.bufs),
        buf_shadow: Raw::of(&mut m.mem.buf_shadow),
        globals: Raw::of(&mut m.mem.globals),
        global_shadow: Raw::of(&mut m.mem.global_shadow),
        buf_elem: m.mem.buf_elem.clone(),
        buf_unset: m.mem.buf_unset,
        read_only: m.mem.read_only,
        slot: m.mem.slot.clone(),
        findings: m.mem.findings,
        tags,
        block_dim: m.block_dim,
        grid_dim: m.grid_dim,
        block_threads: m.block_threads,
        dyn_shared: m.dyn_shared,
        params: m.params.clone(),
        max_total: m.max_total,
        max_warp: m.max_warp,
        threads: m.threads,
        cost: m.cost.as_deref().map(Counter::deferring),
    };
    let ctl = Control {
        abort: AtomicBool::new(false),
        abandoned: AtomicU64::new(0),
        cancel: config.cancel.as_deref(),
        limit: config.time_limit,
        start,
    };
    // Blocks are speculated a batch at a time, two batches in flight (workers done with one
    // start on the next while the others finish theirs); the replay takes them in order. The
    // records held are those of the batches in flight, the resident blocks and the quiet ones
    // the replay holds back (bounded, see `replay`).
    let batch = (workers as u64 * 16).max(32);
    pool.in_place_scope(|scope| {
        let (tx, rx) = std::sync::mpsc::channel::<(u64, Vec<Option<BlockLog>>)>();
        let mut speculated = 0u64;
        let (proto, ctl) = (&proto, &ctl);
        let mut speculate = move || {
            let range = speculated..blocks.min(speculated + batch);
            if range.is_empty() {
                return;
            }
            speculated = range.end;
            let tx = tx.clone();
            scope.spawn(move |_| {
                let first = range.start;
                let done = range
                    .into_par_iter()
                    .map_init(|| Worker::new(proto), |w, linear| w.speculate(linear, ctl))
                    .collect();
                // The receiver is gone only when the replay stopped, and then nothing waits.
                let _ = tx.send((first, done));
            });
        };
        speculate();
        speculate();
        // Batches that came before the one the replay needs next.
        let mut early: Vec<(u64, Vec<Option<BlockLog>>)> = Vec::new();
        let mut handed = 0u64;
        let more = |logs: &mut VecDeque<BlockLog>| -> bool {
            let done = loop {
                if let Some(i) = early.iter().position(|b| b.0 == handed) {
                    break early.swap_remove(i).1;
                }
                match rx.recv() {
                    Ok(b) => early.push(b),
                    Err(_) => return false,
                }
            };
            speculate();
            handed += done.len() as u64;
            for log in done {
                let Some(log) = log else { return false };
                logs.push_back(log);
            }
            true
        };
        let finished = replay(m, blocks, config, start, ctl, more, scope);
        // Whatever is still running is of no use now.
        ctl.abort.store(true, Ordering::Relaxed);
        finished
    })
}

/// A finished block's global loads, for the L1 stage.
struct BlockLoads {
    loads: Vec<(u64, u32, u32, u8)>,
    data: Vec<u64>,
    order: Vec<(u64, u32, u64)>,
    warps: usize,
}

/// The blocks of one SM whose loads the L1 stage takes together, in the launch's order.
type Group = Vec<BlockLoads>;

/// A batch of the L1 stage, done: per SM, its L1 and the counts its lookups added.
type Done = Vec<(usize, L1, Vec<L1Counts>)>;

/// The cost model's L1 lookups for global loads, off the replay's thread. Where the launch's
/// data fits the L2 (`Counter::loads_need_only_l1`), what a load adds past the counts of the
/// instruction alone depends only on the loads before it on the same SM: the replay hands
/// each finished block's loads, with the order in which it ran its warps' steps, to this
/// stage, which makes every SM's lookups in the launch's order on the workers, a batch of
/// blocks at a time (one batch in flight; the SMs of a batch in parallel), and adds up their
/// counts, sums whose order does not matter. Blocks of one SM that were resident together
/// are taken together, their steps merged in the launch's order.
struct L1Stage {
    sms: usize,
    bytes: u64,
    pcs: usize,
    /// Per SM, its L1 (None while a batch has it, or before its first load).
    tables: Vec<Option<L1>>,
    /// Per SM, finished blocks whose SM still has a resident block.
    waiting: HashMap<usize, Group>,
    batch: Vec<(usize, Group)>,
    batched: usize,
    in_flight: Option<std::sync::mpsc::Receiver<Done>>,
    counts: Vec<L1Counts>,
}

/// Blocks per batch of the L1 stage.
const L1_BATCH: usize = 32;

impl L1Stage {
    fn new(c: &Counter, pcs: usize) -> L1Stage {
        L1Stage {
            sms: c.sms(),
            bytes: c.sm_of(0).1,
            pcs,
            tables: (0..c.sms()).map(|_| None).collect(),
            waiting: HashMap::new(),
            batch: Vec::new(),
            batched: 0,
            in_flight: None,
            counts: vec![L1Counts::default(); pcs],
        }
    }

    /// Block `b` has run all its steps; `slots`: the blocks still resident.
    fn block<'s>(&mut self, b: &mut RBlock, slots: &[Option<RBlock>], scope: &rayon::Scope<'s>) {
        if b.log.deferred.loads.is_empty() {
            return;
        }
        let sm = self.sm(b);
        let loads = BlockLoads {
            loads: std::mem::take(&mut b.log.deferred.loads),
            data: std::mem::take(&mut b.log.deferred.data),
            order: std::mem::take(&mut b.order),
            warps: b.warps.len(),
        };
        let mut group = self.waiting.remove(&sm).unwrap_or_default();
        group.push(loads);
        if slots.iter().flatten().any(|r| self.sm(r) == sm) {
            self.waiting.insert(sm, group);
            return;
        }
        self.batched += group.len();
        self.batch.push((sm, group));
        if self.batched >= L1_BATCH {
            self.dispatch(scope);
        }
    }

    /// The SM that runs block `b` (as [`Counter::sm_of`] places blocks).
    fn sm(&self, b: &RBlock) -> usize {
        (b.log.linear % self.sms as u64) as usize
    }

    /// Wait for the batch in flight and take back its tables and counts.
    fn collect(&mut self) {
        let Some(rx) = self.in_flight.take() else { return };
        // The sender is gone only if the batch's task panicked, which the scope then reports.
        let Ok(done) = rx.recv() else { return };
        for (sm, table, counts) in done {
            self.tables[sm] = Some(table);
            for (c, o) in self.counts.iter_mut().zip(counts) {
                c.add(&o);
            }
        }
    }

    /// Send the batch to the workers (after the one before has come back: an SM's lookups go
    /// in the launch's order).
    fn dispatch<'s>(&mut self, scope: &rayon::Scope<'s>) {
        self.collect();
        if self.batch.is_empty() {
            return;
        }
        let mut by_sm: Vec<(usize, L1, Vec<Group>)> = Vec::new();
        for (sm, group) in self.batch.drain(..) {
            match by_sm.iter_mut().find(|t| t.0 == sm) {
                Some(t) => t.2.push(group),
                None => {
                    let table = self.tables[sm].take().unwrap_or_else(|| L1::new(self.bytes));
                    by_sm.push((sm, table, vec![group]));
                }
            }
        }
        self.batched = 0;
        let pcs = self.pcs;
        let (tx, rx) = std::sync::mpsc::channel();
        self.in_flight = Some(rx);
        scope.spawn(move |_| {
            let done: Done = by_sm
                .into_par_iter()
                .map(|(sm, mut table, groups)| {
                    let mut counts = vec![L1Counts::default(); pcs];
                    for g in &groups {
                        count_group(&mut table, g, &mut counts);
                    }
                    (sm, table, counts)
                })
                .collect();
            // The receiver is gone only when the replay stopped, and then nothing waits.
            let _ = tx.send(done);
        });
    }

    /// The counts of every block handed over, once the launch has ended.
    fn finish<'s>(&mut self, scope: &rayon::Scope<'s>) -> Vec<L1Counts> {
        let mut waiting: Vec<(usize, Group)> = self.waiting.drain().collect();
        waiting.sort_by_key(|w| w.0);
        self.batch.extend(waiting);
        self.dispatch(scope);
        self.collect();
        std::mem::take(&mut self.counts)
    }
}

/// One SM's lookups for the loads of `group`'s blocks, in the launch's order, into `counts`
/// (per instruction).
fn count_group(table: &mut L1, group: &[BlockLoads], counts: &mut [L1Counts]) {
    // Each block's loads, warp by warp in their own order (a worker records a warp's loads in
    // its step order, the warps of a block interleaved in runs).
    let per_warp: Vec<(Vec<u32>, Vec<usize>)> = group
        .iter()
        .map(|b| {
            let mut starts = vec![0usize; b.warps + 1];
            for l in &b.loads {
                starts[unstamp(l.0).0.min(b.warps - 1) + 1] += 1;
            }
            for w in 0..b.warps {
                starts[w + 1] += starts[w];
            }
            let mut next = starts.clone();
            let mut index = vec![0u32; b.loads.len()];
            for (i, l) in b.loads.iter().enumerate() {
                let w = unstamp(l.0).0.min(b.warps - 1);
                index[next[w]] = i as u32;
                next[w] += 1;
            }
            (index, starts)
        })
        .collect();
    let mut cursors: Vec<Vec<usize>> = per_warp.iter().map(|(_, starts)| starts[..starts.len() - 1].to_vec()).collect();
    let mut run = |bi: usize, w: usize, end: u64| {
        let b = &group[bi];
        let (index, starts) = &per_warp[bi];
        let cursor = &mut cursors[bi][w];
        while *cursor < starts[w + 1] {
            let (stamp, pc, at, n) = b.loads[index[*cursor] as usize];
            if unstamp(stamp).1 >= end {
                break;
            }
            if let Some(c) = counts.get_mut(pc as usize) {
                c.load(table, &b.data[at as usize..at as usize + n as usize]);
            }
            *cursor += 1;
        }
    };
    if let [one] = group {
        for &(_, w, end) in &one.order {
            run(0, w as usize, end);
        }
    } else {
        let mut order: Vec<(u64, usize, u32, u64)> = group
            .iter()
            .enumerate()
            .flat_map(|(bi, b)| b.order.iter().map(move |&(at, w, end)| (at, bi, w, end)))
            .collect();
        order.sort_unstable_by_key(|o| o.0);
        for (_, bi, w, end) in order {
            run(bi, w as usize, end);
        }
    }
}

/// What the replay holds of the blocks received and not yet admitted: their records' bytes and
/// their steps; how many blocks received are loud ([`BlockLog::loud`]) and not yet merged.
#[derive(Default)]
struct Held {
    bytes: usize,
    steps: u64,
    loud: usize,
    /// The steps of every block received, all of which the launch's count will hold.
    received: u64,
}

/// The bytes of quiet blocks' records (see [`BlockLog::loud`]) the replay may hold back before
/// it places their steps (a block of 8 warps takes about 370); a few blocks' in the tests, so
/// that they hold back and catch up in turn.
const HELD_BYTES: usize = if cfg!(test) { 2000 } else { 32 << 20 };

/// Step 3 of the module's doc: the seeded scheduler over the blocks' records, in the launch's
/// order, as `more` hands them over (a batch at a time, `false` when a speculation failed);
/// `false` where the launch must run on one thread instead.
///
/// The scheduler places steps only while some block received and not yet merged is loud
/// ([`BlockLog::loud`]): where no block prints, finds anything or feeds the cost model, nothing
/// the launch shows depends on when each step ran, and its step count is the sum of the
/// blocks'. Quiet blocks' records wait meanwhile (up to [`HELD_BYTES`]; past that the scheduler
/// catches up), and the replay goes on from where it stopped when a loud block comes:
/// the scheduler's choices depend only on the records and the seed, so steps placed late are
/// placed where they would have been.
fn replay<'s>(
    m: &mut Machine,
    blocks: u64,
    config: &SimConfig,
    start: Instant,
    ctl: &Control,
    mut more: impl FnMut(&mut VecDeque<BlockLog>) -> bool,
    scope: &rayon::Scope<'s>,
) -> bool {
    let per_block = m.k.memory_bytes(m.block_threads as u64, m.dyn_shared as u64).max(1);
    let window = (RESIDENT_MEMORY / per_block).clamp(1, RESIDENT_BLOCKS);
    let limits = (m.max_total, m.max_warp, m.block_threads);
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(config.seed);
    let mut l1 = m.cost.as_deref().filter(|c| c.loads_need_only_l1()).map(|c| L1Stage::new(c, m.k.code.len()));
    let mut slots: Vec<Option<RBlock>> = Vec::new();
    let mut ready: Vec<(u32, u32)> = Vec::new();
    let mut next = 0u64;
    let mut total = 0u64;
    let mut prints: Vec<(u64, Out)> = Vec::new();
    // Received and not yet admitted.
    let mut logs: VecDeque<BlockLog> = VecDeque::new();
    let mut held = Held::default();
    let mut receive = |logs: &mut VecDeque<BlockLog>, held: &mut Held| -> bool {
        let before = logs.len();
        if !more(logs) {
            return false;
        }
        for log in logs.range(before..) {
            let steps = log.steps();
            held.bytes += log.held_bytes();
            held.steps += steps;
            held.received += steps;
            held.loud += usize::from(log.loud());
        }
        // Past the step limit already: the launch runs on one thread, which stops where it
        // falls, without speculating the rest.
        held.received <= limits.0
    };
    let admit = |log: BlockLog, held: &mut Held| {
        held.bytes -= log.held_bytes();
        held.steps -= log.steps();
        RBlock::new(log)
    };
    let mut merge = |m: &mut Machine, mut b: RBlock, held: &mut Held| {
        held.loud -= usize::from(b.log.loud());
        if let Some(reports) = b.log.reports.take() {
            m.reports.merge(*reports, |s| b.at(s));
        }
        if let Some(c) = m.cost.as_deref_mut() {
            c.add_counts(&b.log.counts);
        }
        prints.extend(std::mem::take(&mut b.log.prints).into_iter().map(|(s, o)| (b.at(s), o)));
    };
    let mut reported: Option<Duration> = None;
    let mut report = |blocks_started: u64, steps: u64| {
        let elapsed = start.elapsed();
        if let Some(sink) = &config.progress
            && elapsed >= Duration::from_secs(1)
            && reported.is_none_or(|r| elapsed >= r + Duration::from_millis(500))
        {
            reported = Some(elapsed);
            (sink.0)(Progress { blocks_started, blocks, steps, elapsed, done: false });
        }
    };
    // Stopped by the clock or Ctrl-C, the launch ends here with the steps run so far (running
    // it again on one thread would find the time already spent); stopped because a block
    // communicated, it runs again on one thread.
    let halted = |m: &mut Machine| match ctl.stop() {
        Some(stop) => {
            m.stop = Some(stop);
            true
        }
        None => false,
    };
    let mut filled = false;
    let mut cursor = 0usize;
    let mut polls = 0u32;
    let finished = 'replay: loop {
        // Nothing loud to place: take in more records instead, while they are few enough.
        while held.loud == 0 && held.bytes < HELD_BYTES && next + (logs.len() as u64) < blocks {
            if !receive(&mut logs, &mut held) {
                break 'replay halted(m);
            }
            report(next + logs.len() as u64, total + held.steps);
        }
        if held.loud == 0 && next + logs.len() as u64 == blocks {
            break true;
        }
        if !filled {
            filled = true;
            while next < blocks && (slots.len() as u64) < window {
                if logs.is_empty() && !receive(&mut logs, &mut held) {
                    break 'replay halted(m);
                }
                let Some(log) = logs.pop_front() else { break 'replay halted(m) };
                let mut b = admit(log, &mut held);
                b.enqueue(slots.len(), &mut ready);
                slots.push(Some(b));
                next += 1;
            }
        }
        if ready.is_empty() {
            break true;
        }
        polls = polls.wrapping_add(1);
        if polls % 64 == 0 {
            if ctl.stopped() {
                break 'replay halted(m);
            }
            report(next, total);
        }
        let (i, budget) = match config.schedule {
            Schedule::Random => {
                let r = rng.next_u64();
                ((r % ready.len() as u64) as usize, 1 + ((r >> 32) % 16) as u32)
            }
            _ => {
                if cursor >= ready.len() {
                    cursor = 0;
                }
                (cursor, 1)
            }
        };
        let (s, w) = ready[i];
        let Some(b) = slots[s as usize].as_mut() else {
            ready.swap_remove(i);
            continue;
        };
        match b.run_warp(w as usize, budget, &mut total, limits, m.cost.as_deref_mut()) {
            None => break 'replay false,
            Some(true) => cursor = i + 1,
            Some(false) => {
                b.warps[w as usize].queued = false;
                ready.swap_remove(i);
            }
        }
        if b.woke {
            b.woke = false;
            b.enqueue(s as usize, &mut ready);
        }
        if b.live_warps == 0 {
            if let Some(mut done) = slots[s as usize].take() {
                if let Some(l1) = l1.as_mut() {
                    l1.block(&mut done, &slots, scope);
                }
                merge(m, done, &mut held);
            }
            if next < blocks {
                if logs.is_empty() && !receive(&mut logs, &mut held) {
                    break 'replay halted(m);
                }
                let Some(log) = logs.pop_front() else { break 'replay halted(m) };
                let mut nb = admit(log, &mut held);
                nb.enqueue(s as usize, &mut ready);
                slots[s as usize] = Some(nb);
                next += 1;
            }
        }
    };
    // Stopped or not, the progress shown goes away (the run on one thread shows its own).
    if let (Some(sink), Some(_)) = (&config.progress, reported) {
        (sink.0)(Progress { blocks_started: next, blocks, steps: total, elapsed: start.elapsed(), done: true });
    }
    if !finished {
        return false;
    }
    // The steps nobody needed placed: those of the blocks held back and the rest of the
    // resident ones'. All were run; a launch they take past its step limit runs on one thread,
    // which stops it where the limit falls.
    total += held.steps + slots.iter().flatten().map(RBlock::left).sum::<u64>();
    if m.stop.is_none() && total > m.max_total {
        return false;
    }
    // Resident blocks left (quiet ones the replay did not finish, or all of them when the
    // launch was stopped): merge whatever they hold so nothing recorded is lost.
    for b in slots.into_iter().flatten() {
        merge(m, b, &mut held);
    }

    // A stopped launch reports no cost (`finish` in engine.rs): nothing to wait for.
    if let Some(mut l1) = l1.filter(|_| m.stop.is_none())
        && let Some(c) = m.cost.as_deref_mut()
    {
        c.add_l1_counts(&l1.finish(scope));
    }
    m.reports.sort_by_first();
    prints.sort_by_key(|p| p.0);
    for (_, out) in prints {
        match out {
            Out::Print(thread, text) => m.print(thread, &text),
            Out::Flush(mask, thread0) => m.flush_exited(mask, thread0),
        }
    }
    m.total = total;
    if m.stop.is_some() {
        m.total += ctl.abandoned.load(Ordering::Relaxed);
    }
    true
}
