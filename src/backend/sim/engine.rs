//! Warps, blocks and the scheduler: runs a compiled kernel over a grid.
//!
//! A warp is 32 lanes with a program counter each. It runs the group of lanes at the smallest
//! program counter together (with `Sequential`, one lane at a time); since code is laid out in
//! source order, lanes that took the short way round an `if` or left a loop early wait ahead
//! until the others catch up, which is where they reconverge. One step executes one instruction
//! for the whole group.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use rand_core::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

use crate::backend::{Arg, Dim3, LaunchSpec, PrintLine, WatchedAccess, WriteTrace};
use crate::buffer::Num;
use crate::cuda::ast::{BarrierReduce, BinaryOp, Program, Scalar, ShflKind};
use crate::finding::{Access, Finding, Memory, Site, ThreadRef};

use super::alu;
use super::compile::{DimArray, Kernel, Op, SPECIAL_REGS, StaticKind, Vote};
use super::cost::{Counter, Held, MemOp};
use super::memory::{self, Reports, STATIC_REGION_BASE, Shadow, Who, poison};
use super::printf::{self, Value};
use super::{Progress, Schedule, SimConfig, Watch};
use crate::cost::CostReport;

mod parallel;
mod writes;

pub use parallel::default_threads;

const WARP: usize = 32;
/// Blocks resident at once (`Random`, `Lockstep`), and the memory they may hold together.
const RESIDENT_BLOCKS: u64 = 8;
const RESIDENT_MEMORY: u64 = 256 << 20;
/// Steps a warp's group may run ahead of its turn through instructions that touch only its
/// registers (see `Machine::run_warp`).
const AHEAD: u64 = 512;
/// Printed lines kept per launch.
pub const MAX_OUTPUT_LINES: usize = 10_000;

struct Warp {
    /// `regs[r * 32 + lane]`.
    regs: Vec<u64>,
    pc: [u32; WARP],
    live: u32,
    /// Waiting at `__syncthreads`.
    bar: u32,
    /// Parked at a warp collective (`Sequential` only).
    coll: u32,
    /// The running group: its program counter and lanes.
    gpc: u32,
    gmask: u32,
    /// The smallest program counter of the other runnable lanes: reaching it means merging.
    wait_pc: u32,
    reselect: bool,
    coll_group: bool,
    steps: u64,
    local: Local,
    queued: bool,
    /// Per lane, its synchronisation clock for the race check (see `memory.rs`).
    clock: [u32; WARP],
    /// Per lane, what it knows of the other lanes' clocks through warp-level syncs since the
    /// block's last barrier; `None` until the warp's first such sync.
    known: Option<Box<[[u32; WARP]; WARP]>>,
    /// Per lane, its clock at its last fence (0: none): its atomics after it release.
    fence: [u32; WARP],
    /// Per lane, what it acquired through atomics since the block's last barrier (empty unless
    /// the kernel fences).
    acquired: Vec<memory::Acquired>,
    /// Steps the group ran ahead of its turn (see [`run_pure`]), not yet counted: its next
    /// turns count them before it runs anything else.
    ahead: u64,
    /// The instructions of the last run, from the first one run ahead: the last `ahead` of
    /// them are where the group is in the schedule's eyes.
    path: Vec<u32>,
    /// The cost model's L1 lookups of the loads among the steps run ahead, made as they count.
    held: Held,
}

/// The lanes' local arrays: `local_bytes` bytes per lane, and with findings on a flag per byte
/// saying whether the lane has written it (local arrays declared without an initialiser start
/// unwritten, and a read of an unwritten byte is an uninitialised read).
#[derive(Default)]
struct Local {
    bytes: Vec<u8>,
    set: Vec<u8>,
}

struct Block {
    linear: u64,
    coords: [u32; 3],
    warps: Vec<Warp>,
    shared: Vec<Vec<u8>>,
    shadow: Vec<Vec<Shadow>>,
    /// The block's clock at its last barrier: every lane's clock is at least this after it.
    base: u32,
    /// What the block's threads acquired before its last barrier: all of them know it now.
    acquired: memory::Acquired,
    /// `__syncthreads_count`: threads arrived at this round's barrier with a non-zero predicate.
    bar_count: u32,
    arrived: u32,
    exited: u32,
    /// First barrier reached in this round (pc, thread in block) and how many wait there.
    bar_first: Option<(u32, u32)>,
    bar_same: u32,
    bar_other: Option<(u32, u32)>,
    bar_other_n: u32,
    live_warps: u32,
    woke: bool,
    /// Barriers the block has passed: accesses of two epochs are ordered (see `parallel.rs`).
    epoch: u32,
}

impl Block {
    fn empty() -> Block {
        Block {
            linear: 0,
            coords: [0; 3],
            warps: Vec::new(),
            shared: Vec::new(),
            shadow: Vec::new(),
            base: 1,
            acquired: Vec::new(),
            bar_count: 0,
            arrived: 0,
            exited: 0,
            bar_first: None,
            bar_same: 0,
            bar_other: None,
            bar_other_n: 0,
            live_warps: 0,
            woke: false,
            epoch: 0,
        }
    }
}

enum Event {
    None,
    /// Lanes arriving at a barrier, and how many of them with a non-zero predicate.
    Barrier(u32, u32),
    Exit(u32),
}

enum Stop {
    Trap {
        pc: u32,
        thread: u64,
        message: String,
    },
    /// The step budget ran out: one warp's (`warp`), or the whole launch's.
    StepLimit {
        warp: bool,
    },
    /// The launch's wall time ran out (`SimConfig::time_limit`).
    TimeLimit(Duration),
    Cancelled,
    /// A block run on a worker thread touched what another block or warp touched unordered
    /// (see `parallel.rs`): the launch runs again on one thread.
    Conflict,
}

/// What the running warp's block contributes to the race check.
struct BlockSync<'a> {
    base: u32,
    acquired: &'a memory::Acquired,
    linear: u64,
}

/// Who each lane of the running group is, for the race check of a whole-warp access
/// ([`Machine::access_warp`]): the parts of [`Who`] that do not change from lane to lane, and
/// the per-lane state to pick from.
struct LaneWho<'a> {
    thread0: u64,
    clock: &'a [u32; WARP],
    known: Option<&'a [[u32; WARP]; WARP]>,
    acquired: &'a [memory::Acquired],
    block_acquired: &'a memory::Acquired,
    base: u32,
    block_threads: u32,
    block_first: u32,
    site: u32,
}

impl LaneWho<'_> {
    /// Whether no lane of the warp nor its block acquired anything through atomics (every
    /// kernel without fences): then [`LaneWho::plain`] is who each lane is.
    fn acquired_nothing(&self) -> bool {
        self.block_acquired.is_empty() && self.acquired.iter().all(Vec::is_empty)
    }

    /// [`LaneWho::at`] where [`LaneWho::acquired_nothing`] holds.
    #[inline(always)]
    fn plain(&self, l: usize) -> Who<'_> {
        Who {
            thread: (self.thread0 + l as u64) as u32,
            clock: self.clock[l],
            base: self.base,
            block_threads: self.block_threads,
            block_first: self.block_first,
            warp_first: self.thread0 as u32,
            pc: self.site,
            warp: self.known.map(|k| &k[l]),
            acquired: [&[], &[]],
        }
    }

    #[inline(always)]
    fn at(&self, l: usize) -> Who<'_> {
        Who {
            thread: (self.thread0 + l as u64) as u32,
            clock: self.clock[l],
            base: self.base,
            block_threads: self.block_threads,
            block_first: self.block_first,
            warp_first: self.thread0 as u32,
            pc: self.site,
            warp: self.known.map(|k| &k[l]),
            acquired: [self.acquired.get(l).map_or(&[][..], |a| &a[..]), &self.block_acquired[..]],
        }
    }
}

/// What a launch produced.
pub struct Outcome {
    pub steps: u64,
    pub findings: Vec<Finding>,
    pub output: Vec<PrintLine>,
    pub output_truncated: bool,
    pub aborted: bool,
    pub cancelled: bool,
    pub writes: Option<Vec<WriteTrace>>,
    pub watched: Option<Vec<WatchedAccess>>,
    /// What the launch would cost on the reference GPU (`SimConfig::cost`; not on the sequential
    /// schedule, which runs one lane at a time as no GPU does).
    pub cost: Option<CostReport>,
    /// Per buffer made with `empty`, the elements still unwritten after the launch.
    pub unset: Vec<Option<Vec<bool>>>,
    /// Threads the launch's blocks ran on: 1 unless its speculation on several held (see
    /// `parallel.rs`). Nothing else in the outcome depends on it.
    pub workers: usize,
}

/// A watched access as recorded, resolved to a [`WatchedAccess`] when the launch ends.
struct RawWatched {
    step: u64,
    thread: u32,
    pc: u32,
    access: Access,
    region: u32,
    index: i64,
    old: u64,
    new: Option<u64>,
    ty: Scalar,
}

/// What `SimConfig::watch` collects.
struct WatchState {
    watch: Watch,
    events: Vec<RawWatched>,
    /// The last access recorded an event whose value the instruction fills in.
    pending: bool,
}

/// Launch-wide memory: buffers, globals and their shadows. Blocks run on worker threads each
/// have a `Mem` of their own over the same memory (see `parallel.rs`).
struct Mem<'b> {
    bufs: Vec<&'b mut [u8]>,
    buf_elem: Vec<u32>,
    buf_shadow: Vec<&'b mut [Shadow]>,
    /// Per buffer made with `empty`, a flag per element nothing wrote before the launch (`None`
    /// for every other buffer): read before this launch writes it, it is uninitialised.
    buf_unset: &'b [Option<Vec<bool>>],
    /// Per buffer, whether the launch assumes nothing writes it (the kernel takes it through
    /// `const` pointers only): its reads then need no race shadow, since they race with
    /// nothing, and a write to it voids the run (`conflict`), which runs again without the
    /// assumption (see `run`).
    read_only: &'b [bool],
    /// With findings off on one thread, per buffer, whether no instruction of the kernel can
    /// write it (`writes.rs`); empty otherwise.
    unwritten: Vec<bool>,
    /// Per static: index into `Block::shared` or `globals`.
    slot: Vec<u32>,
    globals: Vec<&'b mut [u8]>,
    global_shadow: Vec<&'b mut [Shadow]>,
    /// On a worker thread, who last touched each element of the buffers and globals, and of
    /// the running block's shared arrays (see `parallel.rs`); `None` and empty on one thread.
    tags: Option<&'b parallel::Tags>,
    shared_tags: Vec<Vec<AtomicU64>>,
    /// The running warp as a tag: block, epoch and warp.
    me: u64,
    /// An access met another block's or warp's unordered access: the speculation is void.
    conflict: bool,
    findings: bool,
    /// `trace` or `watch` is on: one branch per access when both are off.
    extra: bool,
    trace: Option<Vec<WriteTrace>>,
    watch: Option<WatchState>,
    /// The launch's step counter, kept here for watched accesses.
    clock: u64,
    /// What fenced atomics released, per address (see `memory.rs`).
    releases: memory::Releases,
}

struct Machine<'k, 'b> {
    k: &'k Kernel,
    mem: Mem<'b>,
    reports: Reports,
    barrier_findings: Vec<Finding>,
    barrier_seen: HashSet<(u32, Option<u32>)>,
    stop: Option<Stop>,
    output: Vec<PrintLine>,
    pending: HashMap<u64, String>,
    truncated: bool,
    block_dim: Dim3,
    grid_dim: Dim3,
    block_threads: u32,
    dyn_shared: u32,
    params: Vec<u64>,
    seq: bool,
    total: u64,
    max_total: u64,
    max_warp: u64,
    cost: Option<Box<Counter>>,
    /// Per buffer (in region order), the kernel's name for it: the parameter it was passed to,
    /// when only one.
    param_names: Vec<Option<String>>,
    /// Per buffer, how many of its values make one element of the struct pointer it was passed
    /// to (1 for a pointer to numbers).
    param_per: Vec<u64>,
    /// Per buffer, the parameter and offset in elements when the kernel got it as one pointer
    /// into it (`p = a + 4`), for advice in the kernel's own indices.
    param_views: Vec<Option<(String, u64)>>,
    /// Threads in the launch.
    threads: u64,
    /// Whether the kernel fences: only then do atomics release and acquire.
    fences: bool,
    /// On a worker thread, what the running block did that the launch replays in order (see
    /// `parallel.rs`).
    log: Option<Box<parallel::Log>>,
}

fn coords(linear: u64, d: Dim3) -> [u32; 3] {
    let (x, y) = (d.x.max(1) as u64, d.y.max(1) as u64);
    [(linear % x) as u32, ((linear / x) % y) as u32, (linear / (x * y)) as u32]
}

#[inline(always)]
fn read(bytes: &[u8], ty: Scalar) -> u64 {
    // Fixed-size reads for the scalar sizes: a variable-length copy is a call to `memmove`.
    let v = match *bytes {
        [a, b, c, d, e, f, g, h] => u64::from_le_bytes([a, b, c, d, e, f, g, h]),
        [a, b, c, d] => u32::from_le_bytes([a, b, c, d]) as u64,
        [a, b] => u16::from_le_bytes([a, b]) as u64,
        [a] => a as u64,
        _ => {
            let mut b = [0u8; 8];
            let n = bytes.len().min(8);
            b[..n].copy_from_slice(&bytes[..n]);
            u64::from_le_bytes(b)
        }
    };
    match ty {
        Scalar::Bool => (v != 0) as u64,
        Scalar::I8 => v as i8 as i64 as u64,
        Scalar::I16 => v as i16 as i64 as u64,
        Scalar::I32 => v as i32 as i64 as u64,
        _ => v,
    }
}

fn write(bytes: &mut [u8], v: u64) {
    match bytes.len() {
        8 => bytes.copy_from_slice(&v.to_le_bytes()),
        4 => bytes.copy_from_slice(&(v as u32).to_le_bytes()),
        2 => bytes.copy_from_slice(&(v as u16).to_le_bytes()),
        1 => bytes[0] = v as u8,
        n => bytes.copy_from_slice(&v.to_le_bytes()[..n]),
    }
}

/// Run `body` for each lane `l` of `mask`, in lane order. A whole warp, the common case, is a
/// counted loop the compiler unrolls and vectorises; other masks walk their bits.
macro_rules! lanes {
    ($mask:expr, |$l:ident| $body:expr) => {{
        let mut m: u32 = $mask;
        if m == u32::MAX {
            for $l in 0..WARP {
                $body;
            }
        } else {
            while m != 0 {
                let $l = m.trailing_zeros() as usize;
                m &= m - 1;
                $body;
            }
        }
    }};
}

/// Each active lane's byte offset into buffer `region` for a `size`-byte access at the pointers
/// in `r[a..]`, into `offs`; `false` when any lane points into another buffer, outside this
/// one, or off its alignment (the fast paths then leave the access to `Mem::access`, which
/// reports it). Then every active lane's `offs[l]..offs[l] + size` lies within `0..len`.
#[inline(always)]
fn lane_offsets(r: &[u64], a: usize, mask: u32, (region, size, len): (u32, i64, i64), offs: &mut [i64; WARP]) -> bool {
    // The register's 32 lanes as one slice, bounds-checked once: a check per lane kept the
    // compiler from vectorising the loop.
    let ptrs = &r[a..a + WARP];
    let mut ok = true;
    lanes!(mask, |l| {
        let p = ptrs[l];
        let off = memory::offset(p);
        offs[l] = off;
        ok &= (memory::region(p) == region) & (off >= 0) & (off + size <= len) & (off & (size - 1) == 0);
    });
    ok
}

/// The `N` bytes at `o` of `bytes`, where [`lane_offsets`] checked that they lie within it.
#[inline(always)]
fn bytes_at<const N: usize>(bytes: &[u8], o: usize) -> [u8; N] {
    debug_assert!(o + N <= bytes.len());
    // SAFETY: every caller passes an offset `lane_offsets` checked against `bytes.len()` for
    // an access of `N` bytes (the access's size); what this skips is the slice's bounds
    // check, once per lane.
    unsafe { bytes.as_ptr().add(o).cast::<[u8; N]>().read_unaligned() }
}

mod arith;

fn f32x(v: u64) -> f32 {
    f32::from_bits(v as u32)
}

impl Mem<'_> {
    /// The bytes `[ptr, ptr + size)` if they are in bounds, checking for races on the way; a
    /// [`Fault`] for a pointer into no region at all or one a GPU could not access at all.
    #[allow(clippy::too_many_arguments)]
    fn access<'a>(
        &'a mut self,
        k: &Kernel,
        reports: &mut Reports,
        shared: &'a mut [Vec<u8>],
        shadow: &'a mut [Vec<Shadow>],
        local: &'a mut Local,
        lane: usize,
        ptr: u64,
        size: u32,
        access: Access,
        who: &Who,
    ) -> Result<Option<&'a mut [u8]>, Fault> {
        let region = memory::region(ptr);
        let off = memory::offset(ptr);
        // Shared memory starts uninitialised in every block: a read of an element with no
        // write recorded in its race shadow is an uninitialised read.
        let mut shared_init = false;
        let mut local_set = None;
        let mut unset: Option<&[bool]> = None;
        let mut tag: Option<&[AtomicU64]> = None;
        let mut ro = false;
        let (bytes, sh, elem): (&mut [u8], Option<&mut [Shadow]>, u32) = if region >= STATIC_REGION_BASE {
            let i = (region - STATIC_REGION_BASE) as usize;
            let st = k.statics.get(i).ok_or(Fault::Invalid)?;
            let slot = self.slot[i] as usize;
            match st.kind {
                StaticKind::Shared => {
                    shared_init = true;
                    tag = self.shared_tags.get(slot).map(|t| &t[..]);
                    (&mut shared[slot][..], shadow.get_mut(slot).map(|s| &mut s[..]), st.elem)
                }
                StaticKind::Local { offset } => {
                    let start = lane * k.local_bytes as usize + offset as usize;
                    let end = start + st.bytes as usize;
                    local_set = local.set.get_mut(start..end);
                    (&mut local.bytes[start..end], None, st.elem)
                }
                StaticKind::Global { .. } => {
                    tag = self.tags.and_then(|t| t.globals.get(slot)).map(|t| &t[..]);
                    (&mut *self.globals[slot], self.global_shadow.get_mut(slot).map(|s| &mut **s), st.elem)
                }
            }
        } else if region >= 1 && (region as usize) <= self.bufs.len() {
            let i = region as usize - 1;
            unset = self.buf_unset.get(i).and_then(|u| u.as_deref());
            tag = self.tags.and_then(|t| t.bufs.get(i)).map(|t| &t[..]);
            ro = self.read_only.get(i) == Some(&true);
            (&mut *self.bufs[i], self.buf_shadow.get_mut(i).map(|s| &mut **s), self.buf_elem[i])
        } else {
            return Err(Fault::Invalid);
        };
        // A GPU accesses a value only at a multiple of its size (buffers and arrays start
        // aligned, so only pointer casts get here); a saturated pointer is reported out of bounds.
        if size.is_power_of_two() && size <= 16 && !memory::saturated(ptr) && off.rem_euclid(size as i64) != 0 {
            return Err(Fault::Misaligned);
        }
        let elem = elem.max(1) as i64;
        let len = bytes.len() as i64;
        if off < 0 || off + size as i64 > len {
            if self.findings {
                reports.oob(
                    region,
                    access,
                    memory::report_index(off, elem),
                    (len / elem) as u64,
                    who.thread as u64,
                    who.pc,
                );
            }
            if self.extra
                && access != Access::Read
                && (1..STATIC_REGION_BASE).contains(&region)
                && let Some(t) = self.trace.as_mut().and_then(|t| t.get_mut(region as usize - 1))
            {
                t.out_of_bounds_total += 1;
                if t.out_of_bounds.len() < WriteTrace::MAX_OUT_OF_BOUNDS {
                    t.out_of_bounds.push((memory::report_index(off, elem), who.thread));
                }
            }
            return Ok(None);
        }
        if ro && access != Access::Read {
            // Made nothing: the launch runs again without assuming the buffer is only read.
            self.conflict = true;
            return Ok(None);
        }
        if let Some(t) = tag
            && !parallel::note(t, off, size, elem, self.me, access != Access::Read)
        {
            self.conflict = true;
            return Ok(None);
        }
        if self.extra {
            let index = off / elem;
            if access != Access::Read
                && (1..STATIC_REGION_BASE).contains(&region)
                && let Some(t) = self.trace.as_mut().and_then(|t| t.get_mut(region as usize - 1))
                && let Some(n) = t.writes.get_mut(index as usize)
            {
                *n = n.saturating_add(1);
                t.last_writer[index as usize] = who.thread;
            }
            if let Some(w) = self.watch.as_mut() {
                w.pending = false;
                if index == w.watch.index && w.watch.threads.contains(&who.thread) {
                    let mut b = [0u8; 8];
                    let n = (size as usize).min(8);
                    b[..n].copy_from_slice(&bytes[off as usize..off as usize + n]);
                    w.events.push(RawWatched {
                        step: self.clock,
                        thread: who.thread,
                        pc: who.pc,
                        access,
                        region,
                        index,
                        old: u64::from_le_bytes(b),
                        new: None,
                        ty: Scalar::U8,
                    });
                    w.pending = true;
                }
            }
        }
        if self.findings
            && let Some(set) = local_set
        {
            // A thread's own memory: no races, only whether it wrote these bytes yet.
            let set = &mut set[off as usize..(off + size as i64) as usize];
            if access != Access::Write && set.contains(&0) {
                reports.uninit(region, off / elem, who.thread as u64, who.pc);
                reports.poisoned = true;
            }
            // A read leaves them unwritten (every later read is poisoned too); an atomic wrote.
            if access != Access::Read {
                set.fill(1);
            }
        }
        if self.findings
            && let Some(sh) = sh
        {
            // Element sizes are powers of two: a shift instead of a division on every access.
            let index = if elem.count_ones() == 1 { off >> elem.trailing_zeros() } else { off / elem };
            if ro {
                // A read-only buffer (see `access_warp`).
                if unset.is_some_and(|u| u.get(index as usize) == Some(&true)) {
                    reports.uninit(region, index, who.thread as u64, who.pc);
                    reports.poisoned = true;
                }
            } else if let Some(s) = sh.get_mut(index as usize) {
                let fresh = shared_init || unset.is_some_and(|u| u.get(index as usize) == Some(&true));
                if fresh && s[0] == 0 && access != Access::Write {
                    reports.uninit(region, index, who.thread as u64, who.pc);
                    reports.poisoned = true;
                }
                if let Some(c) = memory::check(s, who, access, &self.releases) {
                    reports.race(region, index, (len / elem) as u64, c, who, access);
                }
            }
        }
        Ok(Some(&mut bytes[off as usize..(off + size as i64) as usize]))
    }
}

impl Mem<'_> {
    /// Complete the watched access the instruction just made (if it was one): its type, the
    /// value it wrote, and the value it read where that was not what memory held (the poison
    /// an uninitialised read gives).
    #[inline]
    fn watched(&mut self, ty: Scalar, new: Option<u64>, read: Option<u64>) {
        if let Some(w) = self.watch.as_mut()
            && w.pending
        {
            w.pending = false;
            if let Some(e) = w.events.last_mut() {
                e.ty = ty;
                e.new = new;
                if let Some(v) = read {
                    e.old = v;
                }
            }
        }
    }
}

/// A warp-level sync of the lanes in `group` (a warp's `known` and `clock`, see `Warp`): each
/// one's clock goes up, and each learns what the others knew and where they are now.
#[allow(clippy::type_complexity)]
fn sync_lanes(known: &mut Option<Box<[[u32; WARP]; WARP]>>, clock: &mut [u32; WARP], group: u32) {
    let known = known.get_or_insert_with(|| Box::new([[0; WARP]; WARP]));
    let mut row = [0u32; WARP];
    lanes!(group, |l| for (m, v) in row.iter_mut().enumerate() {
        *v = (*v).max(known[l][m]);
    });
    lanes!(group, |l| {
        clock[l] += 1;
        row[l] = clock[l];
    });
    lanes!(group, |l| known[l] = row);
}

impl Warp {
    fn flush(&mut self) {
        let gpc = self.gpc;
        lanes!(self.gmask, |l| self.pc[l] = gpc);
    }

    /// Choose the next group to run; `false` when no lane can run (then it stays to be chosen).
    fn select(&mut self, seq: bool, code: &[Op]) -> bool {
        let found = self.select_group(seq, code);
        self.reselect = !found;
        found
    }

    fn select_group(&mut self, seq: bool, code: &[Op]) -> bool {
        self.coll_group = false;
        let at = |pc: u32| code.get(pc as usize);
        loop {
            let run = self.live & !self.bar & !self.coll;
            if seq {
                if run != 0 {
                    let l = run.trailing_zeros() as usize;
                    if at(self.pc[l]).is_some_and(Op::is_collective) {
                        self.coll |= 1 << l;
                        continue;
                    }
                    self.gpc = self.pc[l];
                    self.gmask = 1 << l;
                    self.wait_pc = u32::MAX;
                    return true;
                }
                let c = self.coll & self.live & !self.bar;
                if c == 0 {
                    return false;
                }
                let min = self.min_pc(c);
                self.gmask = self.lanes_at(c, min);
                self.gpc = min;
                self.coll &= !self.gmask;
                self.coll_group = true;
                self.wait_pc = u32::MAX;
                return true;
            }
            if run == 0 {
                return false;
            }
            let min = self.min_pc(run);
            self.gpc = min;
            self.gmask = self.lanes_at(run, min);
            let rest = run & !self.gmask;
            self.wait_pc = if rest == 0 { u32::MAX } else { self.min_pc(rest) };
            return true;
        }
    }

    fn min_pc(&self, mask: u32) -> u32 {
        let mut min = u32::MAX;
        lanes!(mask, |l| min = min.min(self.pc[l]));
        min
    }

    fn lanes_at(&self, mask: u32, pc: u32) -> u32 {
        let mut m = 0;
        lanes!(mask, |l| if self.pc[l] == pc {
            m |= 1 << l
        });
        m
    }
}

/// Run the warp's group through instructions that touch only its registers (see `arith.rs`),
/// jumps and branches every lane of it takes the same way, up to `room` steps: until one that
/// needs the machine, a divergent branch, or the point where the group merges with other lanes
/// (then the warp chooses its group again). Returns how many it ran; what each of them did is
/// what [`Machine::exec`] would have done, cost counts included.
#[inline(always)]
fn run_pure(
    code: &[Op],
    warp: &mut Warp,
    (room, ahead): (u64, u64),
    cost: Option<&mut Counter>,
    inputs: Option<&Inputs>,
) -> u64 {
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx2") {
        // SAFETY: the processor has AVX2, checked just above.
        return unsafe { run_pure_avx2(code, warp, (room, ahead), cost, inputs) };
    }
    run_pure_in(code, warp, (room, ahead), cost, inputs)
}

/// [`run_pure_in`] compiled for AVX2, which most x86 processors of the last ten years have: the
/// lanes' arithmetic then goes four 64-bit lanes to an instruction instead of two, with the
/// same results (no contraction or reassociation: the same IEEE operations).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn run_pure_avx2(
    code: &[Op],
    warp: &mut Warp,
    (room, ahead): (u64, u64),
    cost: Option<&mut Counter>,
    inputs: Option<&Inputs>,
) -> u64 {
    run_pure_in(code, warp, (room, ahead), cost, inputs)
}

/// What a register-only run needs to run loads from the buffers the launch only reads (the
/// kernel takes them through `const` pointers): such a load changes nothing but the group's
/// registers and, with the cost model on, its caches, in the same order as the step it is.
struct Inputs<'m, 'b> {
    bufs: &'m [&'b mut [u8]],
    read_only: &'m [bool],
    unset: &'m [Option<Vec<bool>>],
    findings: bool,
    /// Findings off, one thread: a load of any buffer has nothing to check or claim, and
    /// runs in its turn; one of a buffer in `unwritten` also ahead of it.
    any: bool,
    unwritten: &'m [bool],
    /// The running block, for the cost model's choice of L1.
    block: u64,
    /// On a worker thread, the stamp of the run's first step (see `parallel::stamp`).
    stamp: Option<u64>,
}

impl<'m, 'b> Inputs<'m, 'b> {
    /// `None` when no buffer is only read, or a trace or watch records every access.
    fn of(mem: &'m Mem<'b>, block: u64, stamp: Option<u64>) -> Option<Inputs<'m, 'b>> {
        let any = !mem.findings && mem.tags.is_none();
        if mem.extra || !(any || mem.read_only.contains(&true)) {
            return None;
        }
        Some(Inputs {
            bufs: &mem.bufs,
            read_only: mem.read_only,
            unset: mem.buf_unset,
            findings: mem.findings,
            any,
            unwritten: &mem.unwritten,
            block,
            stamp,
        })
    }

    /// The group's load of a `ty` through the pointers in `addr` into `dst`, as
    /// `Machine::access_warp` makes it, when every lane reads the same buffer that the launch
    /// only reads, in bounds and aligned, with nothing to report (a buffer made with `empty`
    /// may be read before it is written: that one takes the ordinary path); `false`, having
    /// done nothing, otherwise. `n`: the steps the run made before this one; `ahead`: which
    /// step past the group's turn this one is, if it runs ahead (then only a buffer nothing
    /// writes will do, and its L1 lookups wait in `held`).
    #[inline(always)]
    fn load(
        &self,
        (r, held): (&mut [u64], &mut Held),
        (mask, addr, ty, dst): (u32, u32, Scalar, u32),
        pc: u32,
        (n, ahead): (u64, Option<u64>),
        cost: Option<&mut Counter>,
    ) -> bool {
        if mask == 0 {
            return false;
        }
        let size = ty.size() as i64;
        let (a, d) = (addr as usize * WARP, dst as usize * WARP);
        let region = memory::region(r[a + mask.trailing_zeros() as usize]);
        if region == 0 || region as usize > self.bufs.len() {
            return false;
        }
        let i = region as usize - 1;
        let assumed =
            self.read_only.get(i) == Some(&true) && !(self.findings && self.unset.get(i).is_some_and(Option::is_some));
        if !assumed && !(self.any && (ahead.is_none() || self.unwritten.get(i) == Some(&true))) {
            return false;
        }
        let bytes = &self.bufs[i][..];
        let len = bytes.len() as i64;
        let mut offs = [0i64; WARP];
        if !lane_offsets(r, a, mask, (region, size, len), &mut offs) {
            return false;
        }
        if let Some(c) = cost {
            if let Some(s) = self.stamp {
                c.stamp = s + n;
            }
            let mut gathered = [0u64; WARP];
            let addrs = if mask == u32::MAX {
                // The lanes' pointers as they are, in lane order: nothing to gather.
                &r[a..a + WARP]
            } else {
                let mut k = 0;
                lanes!(mask, |l| {
                    gathered[k] = r[a + l];
                    k += 1;
                });
                &gathered[..k]
            };
            match ahead {
                Some(idx) => c.load_ahead(pc, addrs, size as u32, held, idx as u32),
                None => c.memory(pc, self.block, MemOp::Load, addrs, size as u32),
            }
        }
        // Bounds-checked once, not once a lane.
        let out = &mut r[d..d + WARP];
        macro_rules! load {
            ($n:literal, $t:ty, $widen:expr) => {
                lanes!(mask, |l| {
                    let o = offs[l] as usize;
                    out[l] = $widen(<$t>::from_le_bytes(bytes_at::<$n>(bytes, o)));
                })
            };
        }
        match (size, ty) {
            (4, Scalar::I32) => load!(4, i32, |v: i32| v as i64 as u64),
            (4, Scalar::U32 | Scalar::F32) => load!(4, u32, |v: u32| v as u64),
            (8, Scalar::I64 | Scalar::U64 | Scalar::F64) => load!(8, u64, |v: u64| v),
            _ => lanes!(mask, |l| {
                let o = offs[l] as usize;
                out[l] = read(&bytes[o..o + size as usize], ty);
            }),
        }
        true
    }
}

#[inline(always)]
fn run_pure_in(
    code: &[Op],
    warp: &mut Warp,
    (room, ahead): (u64, u64),
    mut cost: Option<&mut Counter>,
    inputs: Option<&Inputs>,
) -> u64 {
    let mask = warp.gmask;
    let mut pc = warp.gpc;
    let mut n = 0;
    let mut merge = false;
    // The run's issues are counted a straight stretch of code at a time (`Counter::issue_run`):
    // `seg` is where the stretch that `pc` ends began.
    let mut seg = pc;
    // Kept out of `warp` while the run lasts, so that the compiler keeps their lengths and
    // bounds in registers rather than reading them back after every store to the registers.
    let mut path = std::mem::take(&mut warp.path);
    path.clear();
    let (wait_pc, end) = (warp.wait_pc, room + ahead);
    while n < end {
        let Some(&op) = code.get(pc as usize) else { break };
        if n >= room {
            path.push(pc);
        }
        let next = match op {
            Op::Jump { target } => target,
            // A load ahead of the group's turn would reach the cost model's caches before the
            // accesses of the steps between: it may run ahead only when its L1 lookups are all
            // that depends on them, and those wait for its step to count (`Counter::load_ahead`).
            Op::Load { .. } if n >= room && cost.as_deref().is_some_and(|c| !c.loads_need_only_l1()) => break,
            Op::Load { ty, dst, addr } => match inputs {
                Some(i)
                    if i.load(
                        (&mut warp.regs, &mut warp.held),
                        (mask, addr, ty, dst),
                        pc,
                        (n, n.checked_sub(room)),
                        cost.as_deref_mut(),
                    ) =>
                {
                    pc + 1
                }
                _ => break,
            },
            Op::Branch { cond, when, target } => {
                let c = cond as usize * WARP;
                let conds = &warp.regs[c..c + WARP];
                let mut taken = 0u32;
                lanes!(mask, |l| if (conds[l] != 0) == when {
                    taken |= 1 << l
                });
                if taken == mask {
                    target
                } else if taken == 0 {
                    pc + 1
                } else {
                    break;
                }
            }
            _ => {
                if !arith::exec(op, mask, &mut warp.regs) {
                    break;
                }
                pc + 1
            }
        };
        n += 1;
        if next != pc + 1 {
            if let Some(c) = cost.as_deref_mut() {
                c.issue_run(seg, pc + 1, mask);
            }
            seg = next;
        }
        pc = next;
        if next >= wait_pc {
            merge = true;
            break;
        }
    }
    if pc != seg
        && let Some(c) = cost
    {
        c.issue_run(seg, pc, mask);
    }
    warp.gpc = pc;
    if merge {
        warp.flush();
        warp.reselect = true;
    }
    path.truncate(n.saturating_sub(room) as usize);
    warp.path = path;
    n
}

impl Machine<'_, '_> {
    fn thread_ref(&self, global: u64) -> ThreadRef {
        let bt = self.block_threads.max(1) as u64;
        let ranks = [self.grid_dim.rank(), self.block_dim.rank()];
        ThreadRef { block: coords(global / bt, self.grid_dim), thread: coords(global % bt, self.block_dim), ranks }
    }

    fn site(&self, pc: u32, thread: u64, access: Access) -> Site {
        let span = self.k.spans.get(pc as usize).copied().unwrap_or_default();
        Site { thread: self.thread_ref(thread), access, span }
    }

    fn init_block(&self, b: &mut Block, linear: u64) {
        let k = self.k;
        b.linear = linear;
        b.coords = coords(linear, self.grid_dim);
        b.base = 1;
        b.acquired.clear();
        b.bar_count = 0;
        b.arrived = 0;
        b.exited = 0;
        b.bar_first = None;
        b.bar_other = None;
        b.bar_same = 0;
        b.bar_other_n = 0;
        b.woke = false;
        let n = self.block_threads as usize;
        let nwarps = n.div_ceil(WARP);
        b.live_warps = nwarps as u32;
        b.epoch = 0;
        b.shared.resize_with(k.shared.len(), Vec::new);
        b.shadow.resize_with(k.shared.len(), Vec::new);
        for (i, &s) in k.shared.iter().enumerate() {
            let st = &k.statics[s as usize];
            let bytes = if st.is_extern { self.dyn_shared as usize } else { st.bytes as usize };
            b.shared[i].clear();
            b.shared[i].resize(bytes, 0);
            b.shadow[i].clear();
            if self.mem.findings {
                b.shadow[i].resize(bytes / st.elem.max(1) as usize, Shadow::default());
            }
        }
        let regs = k.regs as usize;
        b.warps.truncate(nwarps);
        while b.warps.len() < nwarps {
            b.warps.push(Warp {
                regs: Vec::new(),
                pc: [0; WARP],
                live: 0,
                bar: 0,
                coll: 0,
                gpc: 0,
                gmask: 0,
                wait_pc: u32::MAX,
                reselect: false,
                coll_group: false,
                steps: 0,
                local: Local::default(),
                queued: false,
                clock: [1; WARP],
                known: None,
                fence: [0; WARP],
                acquired: Vec::new(),
                ahead: 0,
                path: Vec::new(),
                held: Held::default(),
            });
        }
        let [bx, by, bz] = b.coords;
        for (w, warp) in b.warps.iter_mut().enumerate() {
            let lanes = (n - w * WARP).min(WARP);
            warp.live = if lanes == WARP { u32::MAX } else { (1u32 << lanes) - 1 };
            warp.regs.clear();
            warp.regs.resize(regs * WARP, 0);
            for l in 0..lanes {
                let [tx, ty, tz] = coords((w * WARP + l) as u64, self.block_dim);
                let special = [
                    tx,
                    ty,
                    tz,
                    bx,
                    by,
                    bz,
                    self.block_dim.x,
                    self.block_dim.y,
                    self.block_dim.z,
                    self.grid_dim.x,
                    self.grid_dim.y,
                    self.grid_dim.z,
                ];
                for (r, v) in special.iter().enumerate() {
                    warp.regs[r * WARP + l] = *v as u64;
                }
                for (p, v) in self.params.iter().enumerate() {
                    warp.regs[(SPECIAL_REGS as usize + p) * WARP + l] = *v;
                }
            }
            warp.pc = [0; WARP];
            warp.bar = 0;
            warp.coll = 0;
            warp.gpc = 0;
            warp.gmask = warp.live;
            warp.wait_pc = u32::MAX;
            warp.reselect = true;
            warp.coll_group = false;
            warp.steps = 0;
            let local_bytes = k.local_bytes as usize * WARP;
            warp.local.bytes.clear();
            warp.local.bytes.resize(local_bytes, 0);
            warp.local.set.clear();
            warp.local.set.resize(if self.mem.findings { local_bytes } else { 0 }, 0);
            warp.queued = false;
            warp.clock = [1; WARP];
            warp.known = None;
            warp.fence = [0; WARP];
            warp.acquired.clear();
            warp.ahead = 0;
            warp.path.clear();
            warp.held.clear();
        }
    }

    /// Run warp `w` of `b` for up to `budget` steps; `false` when it cannot run any more (done,
    /// or waiting at a barrier).
    fn run_warp(&mut self, b: &mut Block, w: usize, budget: u32) -> bool {
        let code = &self.k.code;
        let mut left = budget as u64;
        let linear = b.linear;
        let warp = &mut b.warps[w];
        if warp.ahead > 0 {
            // Steps the group ran ahead of its turn: they count now, as the budget and the step
            // limits allow, before anything else runs.
            let limit =
                (self.max_warp - warp.steps.min(self.max_warp)).min(self.max_total - self.total.min(self.max_total));
            let n = warp.ahead.min(left).min(limit);
            warp.ahead -= n;
            warp.steps += n;
            self.total += n;
            self.mem.clock = self.total;
            left -= n;
            if let Some(c) = self.cost.as_deref_mut() {
                c.count_held(&mut warp.held, warp.path.len() as u64 - warp.ahead, linear);
            }
            if warp.ahead > 0 {
                if left > 0 {
                    // The next is the step past a limit, which stops the launch as before.
                    warp.ahead -= 1;
                    warp.steps += 1;
                    self.total += 1;
                    self.mem.clock = self.total;
                    self.stop.get_or_insert(Stop::StepLimit { warp: warp.steps > self.max_warp });
                }
                return true;
            }
        }
        while left > 0 {
            left -= 1;
            let warp = &mut b.warps[w];
            if warp.reselect && !warp.select(self.seq, code) {
                return false;
            }
            if !warp.coll_group {
                // Instructions that touch only registers run in a loop of their own, as many as
                // the budget and the step limits allow (the step that reaches a limit is run
                // below, which stops the launch as before). On the sequential schedule the
                // group is one lane; a group of lanes parked at a warp collective runs it below.
                // When the budget ends first, the group may run on ahead of its turn (one
                // thread only: a worker runs each block to its end anyway); those steps count
                // in its next turns (above), so every other instruction runs at the same step
                // of the launch as before.
                let limit = (self.max_warp - warp.steps.min(self.max_warp))
                    .min(self.max_total - self.total.min(self.max_total));
                let room = (left + 1).min(limit);
                let ahead = if self.log.is_none() && room == left + 1 { (limit - room).min(AHEAD) } else { 0 };
                let stamp = self.log.is_some().then(|| parallel::stamp(w, warp.steps));
                let inputs = Inputs::of(&self.mem, b.linear, stamp);
                let n = run_pure(code, warp, (room, ahead), self.cost.as_deref_mut(), inputs.as_ref());
                if n > 0 {
                    let counted = n.min(room);
                    warp.ahead = n - counted;
                    warp.steps += counted;
                    self.total += counted;
                    self.mem.clock = self.total;
                    left = left + 1 - counted;
                    continue;
                }
            }
            if self.seq && !warp.coll_group && code[warp.gpc as usize].is_collective() {
                warp.flush();
                warp.reselect = true;
                continue;
            }
            let thread0 = b.linear * self.block_threads as u64 + (w * WARP) as u64;
            if self.log.is_some() {
                self.reports.stamp = parallel::stamp(w, warp.steps);
                self.mem.me = parallel::me(b.linear, b.epoch, w);
                if let Some(c) = self.cost.as_deref_mut() {
                    c.stamp = self.reports.stamp;
                }
            }
            let event = {
                let Block { warps, shared, shadow, base, acquired, linear, .. } = b;
                self.exec(&mut warps[w], shared, shadow, BlockSync { base: *base, acquired, linear: *linear }, thread0)
            };
            let warp = &mut b.warps[w];
            warp.steps += 1;
            self.total += 1;
            self.mem.clock = self.total;
            if self.mem.conflict && self.log.is_none() {
                // A write to a buffer assumed read-only, on one thread: the launch runs again
                // (see `run`), whatever else this step did.
                self.stop = Some(Stop::Conflict);
                return true;
            }
            if warp.steps > self.max_warp || self.total > self.max_total {
                self.stop.get_or_insert(Stop::StepLimit { warp: warp.steps > self.max_warp });
            }
            if let Some(log) = self.log.as_deref_mut() {
                log.event(w, warp.steps - 1, &event);
                if std::mem::take(&mut self.mem.conflict) {
                    self.stop.get_or_insert(Stop::Conflict);
                }
            }
            match event {
                Event::None => {}
                Event::Barrier(mask, count) => {
                    b.bar_count += count;
                    let pc = warp.gpc;
                    lanes!(mask, |l| warp.pc[l] = pc + 1);
                    warp.bar |= mask;
                    warp.reselect = true;
                    let first = (w * WARP) as u32 + mask.trailing_zeros();
                    let n = mask.count_ones();
                    b.arrived += n;
                    match b.bar_first {
                        None => {
                            b.bar_first = Some((pc, first));
                            b.bar_same = n;
                        }
                        Some((p, _)) if p == pc => b.bar_same += n,
                        Some(_) => {
                            b.bar_other.get_or_insert((pc, first));
                            b.bar_other_n += n;
                        }
                    }
                    self.maybe_release(b);
                }
                Event::Exit(mask) => {
                    warp.live &= !mask;
                    warp.reselect = true;
                    b.exited += mask.count_ones();
                    if warp.live == 0 {
                        b.live_warps -= 1;
                    }
                    self.maybe_release(b);
                }
            }
            if self.stop.is_some() {
                return true;
            }
        }
        true
    }

    fn maybe_release(&mut self, b: &mut Block) {
        if b.arrived == 0 || b.arrived + b.exited < self.block_threads {
            return;
        }
        if let Some((pc, thread)) = b.bar_first {
            let other = b.bar_other.map(|(p, _)| p);
            let divergent = b.bar_other.is_some() || b.exited > 0;
            // Which warp reached the barrier first depends on the interleaving: a block on a
            // worker thread that diverges runs again with the launch on one thread.
            if divergent && self.log.is_some() {
                self.stop.get_or_insert(Stop::Conflict);
            }
            if divergent && self.barrier_seen.insert((pc, other)) {
                let base = b.linear * self.block_threads as u64;
                let waiting = self.site(pc, base + thread as u64, Access::Read);
                let (other_site, other_threads) = match b.bar_other {
                    Some((p, t)) => (Some(self.site(p, base + t as u64, Access::Read)), b.bar_other_n),
                    None => (None, b.exited),
                };
                self.barrier_findings.push(Finding::BarrierDivergence {
                    block: b.coords,
                    waiting,
                    other: other_site,
                    waiting_threads: b.bar_same,
                    other_threads,
                });
            }
        }
        // Every lane's clock goes above every clock of the block: all it did before is ordered
        // before all it does after; what some threads acquired, all of them know now.
        b.epoch = b.epoch.saturating_add(1);
        let top = b.warps.iter().flat_map(|w| w.clock).max().unwrap_or(b.base);
        b.base = top.wrapping_add(1).max(b.base);
        let arrived = b.arrived;
        let count = std::mem::take(&mut b.bar_count);
        let reduces = |at: Option<(u32, u32)>| {
            at.is_some_and(|(pc, _)| matches!(self.k.code.get(pc as usize), Some(Op::SyncThreadsReduce { .. })))
        };
        let reduce = reduces(b.bar_first) || reduces(b.bar_other);
        for warp in &mut b.warps {
            warp.clock = [b.base; WARP];
            warp.known = None;
            for acq in warp.acquired.iter_mut() {
                for (key, n) in acq.drain(..) {
                    memory::acquire(&mut b.acquired, key, n);
                }
            }
            // `__syncthreads_count/_and/_or`: the combined predicate lands in each waiting lane.
            lanes!(if reduce { warp.bar } else { 0 }, |l| if let Some(Op::SyncThreadsReduce { kind, dst, .. }) =
                warp.pc[l].checked_sub(1).and_then(|p| self.k.code.get(p as usize))
            {
                warp.regs[*dst as usize * WARP + l] = match kind {
                    BarrierReduce::Count => count as u64,
                    BarrierReduce::And => (count == arrived) as u64,
                    BarrierReduce::Or => (count > 0) as u64,
                };
            });
        }
        b.arrived = 0;
        b.bar_first = None;
        b.bar_other = None;
        b.bar_same = 0;
        b.bar_other_n = 0;
        for warp in &mut b.warps {
            if warp.bar != 0 {
                warp.bar = 0;
                warp.reselect = true;
            }
        }
        b.woke = true;
    }

    /// The group's load (`store` false: into `data`) or store (from `data`) of a `ty` through
    /// the pointers in `addr`, all at once, when every lane accesses the same buffer or shared
    /// or global array, in bounds and aligned, and no trace or watch is on: the region is
    /// resolved once, and each lane pays only for its race and uninitialised check, in lane
    /// order as the per-lane path makes them. `false`, having done nothing, when any lane needs
    /// the per-lane path (which reports what is out of bounds and stops on a fault).
    #[allow(clippy::too_many_arguments)]
    fn access_warp(
        &mut self,
        r: &mut [u64],
        who: &LaneWho,
        shared: &mut [Vec<u8>],
        shadow: &mut [Vec<Shadow>],
        mask: u32,
        addr: u32,
        ty: Scalar,
        data: u32,
        store: bool,
    ) -> bool {
        #[cfg(target_arch = "x86_64")]
        if std::is_x86_feature_detected!("avx2") {
            // SAFETY: the processor has AVX2, checked just above.
            return unsafe { self.access_warp_avx2(r, who, shared, shadow, mask, addr, ty, data, store) };
        }
        self.access_warp_in(r, who, shared, shadow, mask, addr, ty, data, store)
    }

    /// [`Machine::access_warp`] compiled for AVX2 (as `run_pure_avx2`): its per-lane loops
    /// (offsets, bounds, element indices) go four lanes to an instruction.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    #[allow(clippy::too_many_arguments)]
    fn access_warp_avx2(
        &mut self,
        r: &mut [u64],
        who: &LaneWho,
        shared: &mut [Vec<u8>],
        shadow: &mut [Vec<Shadow>],
        mask: u32,
        addr: u32,
        ty: Scalar,
        data: u32,
        store: bool,
    ) -> bool {
        self.access_warp_in(r, who, shared, shadow, mask, addr, ty, data, store)
    }

    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    fn access_warp_in(
        &mut self,
        r: &mut [u64],
        who: &LaneWho,
        shared: &mut [Vec<u8>],
        shadow: &mut [Vec<Shadow>],
        mask: u32,
        addr: u32,
        ty: Scalar,
        data: u32,
        store: bool,
    ) -> bool {
        if self.mem.extra || mask == 0 {
            return false;
        }
        let k = self.k;
        let size = ty.size() as i64;
        let (a, d) = (addr as usize * WARP, data as usize * WARP);
        let region = memory::region(r[a + mask.trailing_zeros() as usize]);
        let findings = self.mem.findings;
        let Mem {
            bufs,
            buf_elem,
            buf_shadow,
            buf_unset,
            read_only,
            slot,
            globals,
            global_shadow,
            releases,
            tags,
            shared_tags,
            me,
            conflict,
            ..
        } = &mut self.mem;
        // The region's bytes, race shadow, element size and (on a worker thread) tags; whether
        // its elements start unwritten (shared memory), or which do (a buffer made with `empty`).
        #[allow(clippy::type_complexity)]
        let (bytes, sh, elem, fresh_all, unset, tag, ro): (
            &mut [u8],
            Option<&mut [Shadow]>,
            u32,
            bool,
            Option<&[bool]>,
            Option<&[AtomicU64]>,
            bool,
        ) = if region >= STATIC_REGION_BASE {
            let i = (region - STATIC_REGION_BASE) as usize;
            let (Some(st), Some(&slot)) = (k.statics.get(i), slot.get(i)) else { return false };
            let slot = slot as usize;
            match st.kind {
                StaticKind::Shared => match shared.get_mut(slot) {
                    Some(b) => (
                        &mut b[..],
                        shadow.get_mut(slot).map(|s| &mut s[..]),
                        st.elem,
                        true,
                        None,
                        shared_tags.get(slot).map(|t| &t[..]),
                        false,
                    ),
                    None => return false,
                },
                StaticKind::Global { .. } => match globals.get_mut(slot) {
                    Some(b) => (
                        &mut **b,
                        global_shadow.get_mut(slot).map(|s| &mut **s),
                        st.elem,
                        false,
                        None,
                        tags.and_then(|t| t.globals.get(slot)).map(|t| &t[..]),
                        false,
                    ),
                    None => return false,
                },
                StaticKind::Local { .. } => return false,
            }
        } else if region >= 1 && (region as usize) <= bufs.len() {
            let i = region as usize - 1;
            (
                &mut *bufs[i],
                buf_shadow.get_mut(i).map(|s| &mut **s),
                buf_elem[i],
                false,
                buf_unset.get(i).and_then(|u| u.as_deref()),
                tags.and_then(|t| t.bufs.get(i)).map(|t| &t[..]),
                read_only.get(i) == Some(&true),
            )
        } else {
            return false;
        };
        let len = bytes.len() as i64;
        let mut offs = [0i64; WARP];
        if !lane_offsets(r, a, mask, (region, size, len), &mut offs) {
            return false;
        }
        if ro && store {
            // Nothing of it is made: the launch runs again without assuming the buffer is
            // only read.
            *conflict = true;
            return true;
        }
        if let Some(t) = tag {
            let elem = elem.max(1) as i64;
            let mut ok = true;
            lanes!(mask, |l| ok &= parallel::note(t, offs[l], size as u32, elem, *me, store));
            if !ok {
                // Nothing of it is made: the launch runs again on one thread.
                *conflict = true;
                return true;
            }
        }
        // The checks first, in lane order, then the data: checks read and write only the
        // shadows, so this is what doing both lane by lane would do.
        let mut poisoned = 0u32;
        if findings && let Some(sh) = sh {
            let elem = elem.max(1) as i64;
            let elements = (len / elem) as u64;
            let access = if store { Access::Write } else { Access::Read };
            // Element sizes are powers of two: a shift instead of a division.
            let mut index = [0usize; WARP];
            if elem.count_ones() == 1 {
                lanes!(mask, |l| index[l] = (offs[l] >> elem.trailing_zeros()) as usize);
            } else {
                lanes!(mask, |l| index[l] = (offs[l] / elem) as usize);
            }
            // Touch every lane's shadow first: the lanes' cache misses then overlap instead of
            // each waiting for the one before it (the checks are a chain of dependencies).
            if ro {
                // A read-only buffer: nothing writes it in this launch (a write is a conflict),
                // so a read races with nothing, and reads only what was written before the
                // launch; it has no shadow.
                lanes!(mask, |l| if unset.is_some_and(|u| u.get(index[l]) == Some(&true)) {
                    self.reports.uninit(region, index[l] as i64, who.at(l).thread as u64, who.site);
                    poisoned |= 1 << l;
                });
            } else {
                let mut touch = 0u64;
                lanes!(mask, |l| touch ^= sh.get(index[l]).map_or(0, |s| s[0]));
                std::hint::black_box(touch);
                // One loop per access kind and per whether any lane acquired anything (rare:
                // only kernels that fence), so that the check's branches on them fold away.
                macro_rules! checks {
                    ($access:expr, $plain:expr) => {
                        lanes!(mask, |l| if let Some(s) = sh.get_mut(index[l]) {
                            let w = if $plain { who.plain(l) } else { who.at(l) };
                            let fresh = fresh_all || unset.is_some_and(|u| u.get(index[l]) == Some(&true));
                            if fresh && s[0] == 0 && $access == Access::Read {
                                self.reports.uninit(region, index[l] as i64, w.thread as u64, w.pc);
                                poisoned |= 1 << l;
                            }
                            if let Some(c) = memory::check(s, &w, $access, releases) {
                                self.reports.race(region, index[l] as i64, elements, c, &w, $access);
                            }
                        })
                    };
                }
                match (access, who.acquired_nothing()) {
                    (Access::Read, true) => checks!(Access::Read, true),
                    (Access::Read, false) => checks!(Access::Read, false),
                    (_, true) => checks!(Access::Write, true),
                    (_, false) => checks!(Access::Write, false),
                }
            }
        }
        // One loop per access size, so that each lane's access is a fixed-size move.
        macro_rules! data {
            ($n:literal) => {
                if store {
                    lanes!(mask, |l| {
                        let o = offs[l] as usize;
                        let v: [u8; $n] = r[d + l].to_le_bytes()[..$n].try_into().expect("the access size");
                        bytes[o..o + $n].copy_from_slice(&v);
                    });
                } else {
                    lanes!(mask, |l| {
                        let o = offs[l] as usize;
                        r[d + l] = read(&bytes[o..o + $n], ty);
                    });
                }
            };
        }
        // The common loads as whole words, widened as `read` does, with the type's match out
        // of the loop.
        macro_rules! load {
            ($n:literal, $t:ty, $widen:expr) => {
                lanes!(mask, |l| {
                    let o = offs[l] as usize;
                    r[d + l] = $widen(<$t>::from_le_bytes(bytes_at::<$n>(bytes, o)));
                })
            };
        }
        match (size, ty) {
            (4, Scalar::I32) if !store => load!(4, i32, |v: i32| v as i64 as u64),
            (4, Scalar::U32 | Scalar::F32) if !store => load!(4, u32, |v: u32| v as u64),
            (8, Scalar::I64 | Scalar::U64 | Scalar::F64) if !store => load!(8, u64, |v: u64| v),
            (4, _) => data!(4),
            (8, _) => data!(8),
            (2, _) => data!(2),
            _ => data!(1),
        }
        if poisoned != 0 {
            let v = poison(ty);
            lanes!(poisoned, |l| r[d + l] = v);
        }
        true
    }

    /// One lane's load of a `ty` at `ptr`: the value, poison for an uninitialised read, 0 after
    /// an out-of-bounds read (reported) or a fault (which stops the launch).
    #[allow(clippy::too_many_arguments)]
    fn load_lane(
        &mut self,
        local: &mut Local,
        shared: &mut [Vec<u8>],
        shadow: &mut [Vec<Shadow>],
        l: usize,
        ptr: u64,
        ty: Scalar,
        w: &Who,
        pc: u32,
        thread0: u64,
    ) -> u64 {
        let mut poisoned = false;
        let v =
            match self.mem.access(self.k, &mut self.reports, shared, shadow, local, l, ptr, ty.size(), Access::Read, w)
            {
                Ok(Some(bytes)) if !self.reports.poisoned => read(bytes, ty),
                Ok(Some(_)) => {
                    self.reports.poisoned = false;
                    poisoned = true;
                    poison(ty)
                }
                Ok(None) => 0,
                Err(f) => {
                    self.trap(pc, thread0 + l as u64, &f.message("read", ty.size()));
                    0
                }
            };
        if self.mem.extra {
            self.mem.watched(ty, None, poisoned.then_some(v));
        }
        v
    }

    /// One lane's store of `v` as a `ty` at `ptr`.
    #[allow(clippy::too_many_arguments)]
    fn store_lane(
        &mut self,
        local: &mut Local,
        shared: &mut [Vec<u8>],
        shadow: &mut [Vec<Shadow>],
        l: usize,
        ptr: u64,
        ty: Scalar,
        v: u64,
        w: &Who,
        pc: u32,
        thread0: u64,
    ) {
        match self.mem.access(self.k, &mut self.reports, shared, shadow, local, l, ptr, ty.size(), Access::Write, w) {
            Ok(Some(bytes)) => write(bytes, v),
            Ok(None) => {}
            Err(f) => self.trap(pc, thread0 + l as u64, &f.message("write", ty.size())),
        }
        if self.mem.extra {
            self.mem.watched(ty, Some(v), None);
        }
    }

    /// A vector access must be aligned to its whole size (a `float4` to 16 bytes), or the GPU
    /// faults; `false` (and the launch stopped) when it is not.
    fn vector_aligned(&mut self, ptr: u64, ty: Scalar, n: u8, what: &str, pc: u32, thread: u64) -> bool {
        let whole = ty.size() * n as u32;
        if memory::saturated(ptr) || memory::offset(ptr).rem_euclid(whole as i64) == 0 {
            return true;
        }
        self.trap(pc, thread, &Fault::Misaligned.message(what, whole));
        false
    }

    fn trap(&mut self, pc: u32, thread: u64, message: &str) {
        self.stop.get_or_insert(Stop::Trap { pc, thread, message: message.to_string() });
    }

    /// Execute one instruction for the warp's running group.
    fn exec(
        &mut self,
        warp: &mut Warp,
        shared: &mut [Vec<u8>],
        shadow: &mut [Vec<Shadow>],
        blk: BlockSync,
        thread0: u64,
    ) -> Event {
        let k = self.k;
        let pc = warp.gpc;
        let mask = warp.gmask;
        let r = &mut warp.regs;
        let at = |reg: u32, l: usize| reg as usize * WARP + l;
        let block_threads = self.block_threads;
        let site = k.sites[pc as usize];
        let base = blk.base;
        let block_first = (blk.linear * block_threads as u64) as u32;
        // Who a lane is, for the race check (a macro: the borrows of the warp's fields it takes
        // last one access, so the instruction may update them afterwards).
        macro_rules! who {
            ($l:expr) => {{
                let l: usize = $l;
                Who {
                    thread: (thread0 + l as u64) as u32,
                    clock: warp.clock[l],
                    base,
                    block_threads,
                    block_first,
                    warp_first: thread0 as u32,
                    pc: site,
                    warp: warp.known.as_deref().map(|k| &k[l]),
                    acquired: [warp.acquired.get(l).map_or(&[][..], |a| &a[..]), &blk.acquired[..]],
                }
            }};
        }
        macro_rules! lane_who {
            () => {
                LaneWho {
                    thread0,
                    clock: &warp.clock,
                    known: warp.known.as_deref(),
                    acquired: &warp.acquired,
                    block_acquired: blk.acquired,
                    base,
                    block_threads,
                    block_first,
                    site,
                }
            };
        }
        let mut next = pc + 1;
        if let Some(c) = self.cost.as_deref_mut() {
            let op = &k.code[pc as usize];
            c.issue(pc, mask);
            let mem = match *op {
                Op::Load { ty, addr, .. } => Some((MemOp::Load, addr, ty.size())),
                Op::Store { ty, addr, .. } => Some((MemOp::Store, addr, ty.size())),
                Op::LoadVec { ty, n, addr, .. } => Some((MemOp::Load, addr, ty.size() * n as u32)),
                Op::StoreVec { ty, n, addr, .. } => Some((MemOp::Store, addr, ty.size() * n as u32)),
                Op::Atomic { ty, addr, .. } => Some((MemOp::Atomic, addr, ty.size())),
                _ => None,
            };
            if let Some((kind, addr, size)) = mem {
                // Addresses before the instruction runs: a load may overwrite its own address register.
                let block = thread0 / block_threads.max(1) as u64;
                if mask == u32::MAX {
                    c.memory(pc, block, kind, &r[at(addr, 0)..at(addr, WARP)], size);
                } else {
                    let mut addrs = [0u64; WARP];
                    let mut n = 0;
                    lanes!(mask, |l| {
                        addrs[n] = r[at(addr, l)];
                        n += 1;
                    });
                    c.memory(pc, block, kind, &addrs[..n], size);
                }
            }
        }
        let op = k.code[pc as usize];
        match op {
            Op::Bin { op, ty, dst, a, b } if arith::traps(op, ty) => {
                let mut div0 = None;
                lanes!(mask, |l| match alu::bin(op, ty, r[at(a, l)], r[at(b, l)]) {
                    Some(v) => r[at(dst, l)] = v,
                    None => {
                        div0.get_or_insert(l);
                    }
                });
                if let Some(l) = div0 {
                    self.trap(pc, thread0 + l as u64, "integer division by zero");
                }
                // A 64-bit division by a run-time value runs the 32-bit routine when both
                // operands fit 32 bits, as the compiler arranges; a lane that does not fit sends
                // the warp down the long one. One by a constant is a multiply either way.
                if matches!(ty, Scalar::I64 | Scalar::U64)
                    && !k.divides_by_constant(pc)
                    && let Some(c) = self.cost.as_deref_mut()
                {
                    let mut wide = false;
                    lanes!(mask, |l| wide |= (r[at(a, l)] | r[at(b, l)]) >> 32 != 0);
                    if wide {
                        c.wide_division(pc);
                    }
                }
            }
            Op::Load { ty, dst, addr } => {
                let lanes = lane_who!();
                if !self.access_warp(r, &lanes, shared, shadow, mask, addr, ty, dst, false) {
                    lanes!(mask, |l| {
                        let v = self.load_lane(
                            &mut warp.local,
                            shared,
                            shadow,
                            l,
                            r[at(addr, l)],
                            ty,
                            &who!(l),
                            pc,
                            thread0,
                        );
                        r[at(dst, l)] = v;
                    })
                }
            }
            Op::Store { ty, addr, src } => {
                let lanes = lane_who!();
                if !self.access_warp(r, &lanes, shared, shadow, mask, addr, ty, src, true) {
                    lanes!(mask, |l| {
                        let v = r[at(src, l)];
                        self.store_lane(
                            &mut warp.local,
                            shared,
                            shadow,
                            l,
                            r[at(addr, l)],
                            ty,
                            v,
                            &who!(l),
                            pc,
                            thread0,
                        );
                    })
                }
            }
            Op::LoadVec { ty, n, dst, addr } => lanes!(mask, |l| {
                let base = r[at(addr, l)];
                if self.vector_aligned(base, ty, n, "read", pc, thread0 + l as u64) {
                    for j in 0..n as u32 {
                        let p = memory::moved(base, j as i64, ty.size() as i64);
                        let v = self.load_lane(&mut warp.local, shared, shadow, l, p, ty, &who!(l), pc, thread0);
                        r[at(dst + j, l)] = v;
                    }
                }
            }),
            Op::StoreVec { ty, n, addr, src } => lanes!(mask, |l| {
                let base = r[at(addr, l)];
                if self.vector_aligned(base, ty, n, "write", pc, thread0 + l as u64) {
                    for j in 0..n as u32 {
                        let p = memory::moved(base, j as i64, ty.size() as i64);
                        let v = r[at(src + j, l)];
                        self.store_lane(&mut warp.local, shared, shadow, l, p, ty, v, &who!(l), pc, thread0);
                    }
                }
            }),
            Op::Zero { addr, bytes, written } => {
                let findings = std::mem::replace(&mut self.mem.findings, false);
                lanes!(mask, |l| {
                    let w = who!(l);
                    let p = r[at(addr, l)];
                    let m = &mut self.mem;
                    if let Ok(Some(b)) =
                        m.access(k, &mut self.reports, shared, shadow, &mut warp.local, l, p, bytes, Access::Write, &w)
                    {
                        b.fill(0);
                    }
                    // Each pass through the declaration starts the array over: written when it
                    // has an initialiser, unwritten (as C's lifetime rules say) when not.
                    if findings
                        && let Some(StaticKind::Local { offset }) = memory::region(p)
                            .checked_sub(STATIC_REGION_BASE)
                            .and_then(|i| k.statics.get(i as usize))
                            .map(|st| st.kind)
                    {
                        let start = l * k.local_bytes as usize + offset as usize;
                        if let Some(set) = warp.local.set.get_mut(start..start + bytes as usize) {
                            set.fill(written as u8);
                        }
                    }
                });
                self.mem.findings = findings;
            }
            Op::Atomic { op, ty, dst, addr, a, b } => {
                lanes!(mask, |l| {
                    let w = who!(l);
                    let (va, vb) = (r[at(a, l)], r[at(b, l)]);
                    let old = match self.mem.access(
                        k,
                        &mut self.reports,
                        shared,
                        shadow,
                        &mut warp.local,
                        l,
                        r[at(addr, l)],
                        ty.size(),
                        Access::Atomic,
                        &w,
                    ) {
                        Ok(Some(bytes)) => {
                            let poisoned = std::mem::take(&mut self.reports.poisoned);
                            let old = if poisoned { poison(ty) } else { read(bytes, ty) };
                            let new = alu::atomic(op, ty, old, va, vb);
                            write(bytes, new);
                            if self.mem.extra {
                                self.mem.watched(ty, Some(new), poisoned.then_some(old));
                            }
                            old
                        }
                        Ok(None) => 0,
                        Err(f) => {
                            self.trap(pc, thread0 + l as u64, &f.message("atomic", ty.size()));
                            0
                        }
                    };
                    r[at(dst, l)] = old;
                    if self.fences && self.mem.findings {
                        let p = r[at(addr, l)];
                        self.release_acquire(&mut warp.acquired, &warp.fence, l, p, &blk, thread0);
                    }
                })
            }
            Op::CheckInit { flag, var } => {
                let findings = self.mem.findings;
                lanes!(mask, |l| if r[at(flag, l)] == 0 {
                    r[at(flag, l)] = 1;
                    if findings {
                        let t = thread0 + l as u64;
                        self.reports.uninit(memory::VAR_REGION_BASE + var, t as i64, t, site);
                    }
                });
            }
            Op::Jump { target } => next = target,
            Op::Branch { cond, when, target } => {
                let mut taken = 0u32;
                lanes!(mask, |l| if (r[at(cond, l)] != 0) == when {
                    taken |= 1 << l
                });
                if taken == mask {
                    next = target;
                } else if taken != 0 {
                    lanes!(mask, |l| warp.pc[l] = if taken & (1 << l) != 0 { target } else { pc + 1 });
                    warp.reselect = true;
                    return Event::None;
                }
            }
            Op::Exit => {
                self.flush_exited(mask, thread0);
                return Event::Exit(mask);
            }
            Op::SyncThreads => return Event::Barrier(mask, 0),
            Op::SyncThreadsReduce { pred, .. } => {
                let mut count = 0;
                lanes!(mask, |l| count += (r[at(pred, l)] != 0) as u32);
                return Event::Barrier(mask, count);
            }
            Op::SyncWarp { mask: named } => {
                if self.mem.findings {
                    // Lanes that name the same lanes synchronise with each other (a tile's
                    // `sync` names its tile); only those running together here take part.
                    let mut done = 0u32;
                    lanes!(mask, |l| if done & (1 << l) == 0 {
                        let group = (r[at(named, l)] as u32 | 1 << l) & mask & !done;
                        sync_lanes(&mut warp.known, &mut warp.clock, group);
                        done |= group;
                    });
                }
            }
            Op::Fence => {
                if self.mem.findings {
                    lanes!(mask, |l| {
                        warp.clock[l] += 1;
                        warp.fence[l] = warp.clock[l];
                    });
                }
            }
            Op::Shfl { kind, dst, val, lane, width } => {
                let mut out = [0u64; WARP];
                lanes!(mask, |l| {
                    let w = r[at(width, l)] as u32;
                    let w = if w.is_power_of_two() && w <= 32 { w as usize } else { WARP };
                    let base = l & !(w - 1);
                    // Clamped so a wild delta cannot overflow; anything past 32 is out of range.
                    let arg = (r[at(lane, l)] as i64).clamp(-64, 64);
                    let src = match kind {
                        ShflKind::Idx => Some(base + (arg.rem_euclid(w as i64)) as usize),
                        ShflKind::Up => (l as i64 - arg >= base as i64).then(|| (l as i64 - arg) as usize),
                        ShflKind::Down => (l as i64 + arg < (base + w) as i64).then(|| (l as i64 + arg) as usize),
                        ShflKind::Xor => {
                            let s = l ^ (arg as usize & 31);
                            (s >= base && s < base + w).then_some(s)
                        }
                    };
                    out[l] = r[at(val, src.unwrap_or(l))];
                });
                lanes!(mask, |l| r[at(dst, l)] = out[l]);
            }
            Op::Vote { kind: kind @ (Vote::Ballot | Vote::Any | Vote::All), dst, pred } => {
                let mut ballot = 0u32;
                lanes!(mask, |l| if r[at(pred, l)] != 0 {
                    ballot |= 1 << l
                });
                let v = match kind {
                    Vote::Ballot => ballot as u64,
                    Vote::Any => (ballot != 0) as u64,
                    _ => (ballot == mask) as u64,
                };
                lanes!(mask, |l| r[at(dst, l)] = v);
            }
            Op::Vote { kind, dst, pred } => {
                let mut values = [0u64; WARP];
                lanes!(mask, |l| values[l] = r[at(pred, l)]);
                let out = alu::warp_vote(kind, mask, &values);
                lanes!(mask, |l| r[at(dst, l)] = out[l]);
            }
            Op::AddIn { dst, a, b, len } => {
                if self.mem.findings && !arith::in_row_of(mask, r, b, len) {
                    let check = k.dim_check(pc);
                    lanes!(mask, |l| {
                        let (i, n) = (r[at(b, l)], r[at(len, l)]);
                        if i >= n {
                            // The buffer the lane's pointer points into names the report (none
                            // for a null pointer, whose access is its own finding).
                            let region = check.and_then(|d| match d.array {
                                DimArray::Buffer(p) => {
                                    let buffer = memory::region(r[at(p, l)]);
                                    (1..STATIC_REGION_BASE)
                                        .contains(&buffer)
                                        .then(|| memory::buffer_dim_region(buffer, d.dim))
                                }
                                DimArray::Static(s) => Some(memory::dim_region(s, d.dim)),
                            });
                            if let Some(region) = region {
                                self.reports.oob(region, Access::Read, i as i64, n, thread0 + l as u64, site);
                            }
                        }
                    });
                }
                arith::exec(Op::Bin { op: BinaryOp::Add, ty: Scalar::I64, dst, a, b }, mask, r);
            }
            Op::PtrAddIn { dst, ptr, idx, scale, len } => {
                if self.mem.findings && !arith::in_row(mask, r, idx, len) {
                    let region = k.dim_check(pc).map_or(0, |d| match d.array {
                        DimArray::Static(s) => memory::dim_region(s, d.dim),
                        DimArray::Buffer(_) => 0,
                    });
                    lanes!(mask, |l| {
                        let i = r[at(idx, l)];
                        if i >= len as u64 {
                            self.reports.oob(region, Access::Read, i as i64, len as u64, thread0 + l as u64, site);
                        }
                    });
                }
                arith::exec(Op::PtrAdd { dst, ptr, idx, scale: scale as u32 }, mask, r);
            }
            Op::Clock { dst } => {
                let now = warp.steps;
                lanes!(mask, |l| r[at(dst, l)] = now)
            }
            Op::Trap { cond: None } => self.trap(pc, thread0 + mask.trailing_zeros() as u64, "__trap() called"),
            Op::Trap { cond: Some(c) } => {
                let mut failed = None;
                lanes!(mask, |l| if r[at(c, l)] == 0 {
                    failed.get_or_insert(l);
                });
                if let Some(l) = failed {
                    self.trap(pc, thread0 + l as u64, "assertion failed");
                }
            }
            Op::Printf { index } => {
                let call = &k.printfs[index as usize];
                lanes!(mask, |l| {
                    let args: Vec<Value> = call
                        .args
                        .iter()
                        .map(|&(reg, ty)| match ty {
                            Scalar::F32 => Value::Float(f32::from_bits(r[at(reg, l)] as u32) as f64),
                            Scalar::F64 => Value::Float(f64::from_bits(r[at(reg, l)])),
                            ty => Value::Int { bits: r[at(reg, l)], ty },
                        })
                        .collect();
                    let text = {
                        let mut read_str = |p: u64| {
                            let mut s = Vec::new();
                            let w = who!(l);
                            while s.len() < 1024 {
                                let ptr = p.wrapping_add(s.len() as u64);
                                let findings = std::mem::replace(&mut self.mem.findings, false);
                                let m = &mut self.mem;
                                let byte = match m.access(
                                    k,
                                    &mut self.reports,
                                    shared,
                                    shadow,
                                    &mut warp.local,
                                    l,
                                    ptr,
                                    1,
                                    Access::Read,
                                    &w,
                                ) {
                                    Ok(Some(b)) => b[0],
                                    _ => 0,
                                };
                                self.mem.findings = findings;
                                if byte == 0 {
                                    break;
                                }
                                s.push(byte);
                            }
                            String::from_utf8_lossy(&s).into_owned()
                        };
                        printf::format(&call.pieces, &args, &mut read_str)
                    };
                    self.print(thread0 + l as u64, &text);
                });
            }
            // The rest touch only registers.
            _ => {
                arith::exec(op, mask, r);
            }
        }
        warp.gpc = next;
        if next >= warp.wait_pc || warp.coll_group {
            warp.flush();
            warp.reselect = true;
        }
        Event::None
    }

    /// An atomic of lane `l` at `ptr` in a kernel that fences: it acquires what was released to
    /// the address so far, and after a fence releases what the lane did before it (see
    /// `memory.rs`).
    #[allow(clippy::too_many_arguments)]
    fn release_acquire(
        &mut self,
        acquired: &mut Vec<memory::Acquired>,
        fence: &[u32; WARP],
        l: usize,
        ptr: u64,
        blk: &BlockSync,
        thread0: u64,
    ) {
        let region = memory::region(ptr);
        let shared = region >= STATIC_REGION_BASE
            && matches!(
                self.k.statics.get((region - STATIC_REGION_BASE) as usize).map(|s| s.kind),
                Some(StaticKind::Shared)
            );
        let key = (ptr, if shared { blk.linear } else { u64::MAX });
        if acquired.is_empty() {
            acquired.resize_with(WARP, Vec::new);
        }
        let releases = &mut self.mem.releases;
        if let Some(r) = releases.get(&key) {
            memory::acquire(&mut acquired[l], key, r.version);
        }
        if fence[l] != 0 {
            let thread = (thread0 + l as u64) as u32;
            let released = releases.entry(key).or_default();
            released.release(key, thread, fence[l], blk.linear, blk.base, &[&acquired[l], blk.acquired]);
            let v = released.version;
            memory::acquire(&mut acquired[l], key, v);
        }
    }

    fn print(&mut self, thread: u64, text: &str) {
        if let Some(log) = self.log.as_deref_mut() {
            log.print(self.reports.stamp, thread, text);
            return;
        }
        let mut pending = self.pending.remove(&thread).unwrap_or_default();
        pending.push_str(text);
        while let Some(i) = pending.find('\n') {
            let line = pending[..i].to_string();
            pending.drain(..=i);
            if self.output.len() >= MAX_OUTPUT_LINES {
                self.truncated = true;
            } else {
                self.output.push(PrintLine { thread: Some(self.thread_ref(thread)), text: line });
            }
        }
        if !pending.is_empty() {
            self.pending.insert(thread, pending);
        }
    }

    /// Output a thread left without a final newline is printed when it exits.
    fn flush_exited(&mut self, mask: u32, thread0: u64) {
        if let Some(log) = self.log.as_deref_mut() {
            log.flush(self.reports.stamp, mask, thread0);
            return;
        }
        if self.pending.is_empty() {
            return;
        }
        lanes!(mask, |l| if let Some(text) = self.pending.remove(&(thread0 + l as u64)) {
            self.print(thread0 + l as u64, &(text + "\n"))
        });
    }

    /// Buffer values per element of the kernel's pointer to it (see `param_per`).
    fn per(&self, region: u32) -> i64 {
        if region == 0 || region >= STATIC_REGION_BASE {
            return 1;
        }
        self.param_per.get(region as usize - 1).copied().unwrap_or(1).max(1) as i64
    }

    /// The kernel's own name for a buffer, where it differs from the session's.
    fn kernel_name(&self, region: u32, names: &[String]) -> Option<String> {
        if region == 0 || region >= STATIC_REGION_BASE {
            return None;
        }
        let i = region as usize - 1;
        self.param_names.get(i)?.clone().filter(|p| names.get(i) != Some(p))
    }

    /// The parameter that points into a buffer, and where (see `param_views`).
    fn view_of(&self, region: u32) -> Option<(String, u64)> {
        if region == 0 || region >= STATIC_REGION_BASE {
            return None;
        }
        self.param_views.get(region as usize - 1)?.clone()
    }

    /// The dimensions of a kernel's own array (see `StaticMem::shape`); empty for a buffer.
    fn shape_of(&self, region: u32) -> Vec<u64> {
        if (STATIC_REGION_BASE..memory::VAR_REGION_BASE).contains(&region) {
            self.k.statics.get((region - STATIC_REGION_BASE) as usize).map(|s| s.shape.clone()).unwrap_or_default()
        } else {
            Vec::new()
        }
    }

    fn memory_of(&self, region: u32, names: &[String]) -> Memory {
        if region >= memory::VAR_REGION_BASE {
            let i = (region - memory::VAR_REGION_BASE) as usize;
            Memory::Variable(self.k.vars.get(i).cloned().unwrap_or_default())
        } else if region >= STATIC_REGION_BASE {
            let st = &self.k.statics[(region - STATIC_REGION_BASE) as usize];
            match st.kind {
                StaticKind::Shared => Memory::Shared(st.name.clone()),
                StaticKind::Local { .. } => Memory::Local(st.name.clone()),
                StaticKind::Global { constant: true, .. } => Memory::Constant(st.name.clone()),
                StaticKind::Global { constant: false, .. } => Memory::Global(st.name.clone()),
            }
        } else {
            Memory::Global(names.get(region as usize - 1).cloned().unwrap_or_default())
        }
    }
}

/// Run `kernel` for `spec` over `bufs` (in argument-index order, with their names and element
/// sizes). `scratch` keeps shadow memory between launches: zeroing memory the process already
/// has is several times cheaper than having fresh pages faulted in.
#[allow(clippy::too_many_arguments)]
pub fn run(
    kernel: &Kernel,
    program: &Program,
    spec: &LaunchSpec,
    mut bufs: Vec<&mut [u8]>,
    buf_elem: Vec<u32>,
    buf_unset: Vec<Option<Vec<bool>>>,
    names: &[String],
    config: &SimConfig,
    scratch: &mut Vec<Vec<Shadow>>,
) -> Outcome {
    let start = Instant::now();
    let workers = parallel::workers(kernel, spec, config);
    let read_only = read_only(program, spec, bufs.len());
    // On one thread, buffers the kernel takes as `const` need no race shadow while nothing
    // writes them; the run that assumes so keeps a copy of the other buffers, to run again
    // from if a write comes (through a cast). Only where the shadows it saves (24 bytes an
    // element) outweigh that copy, so that a launch needs no more memory than without it.
    let bytes = |ro: bool| -> (u64, u64) {
        let mut n = (0, 0);
        for ((b, e), r) in bufs.iter().zip(&buf_elem).zip(&read_only) {
            if *r == ro {
                n.0 += b.len() as u64;
                n.1 += (b.len() / (*e).max(1) as usize) as u64;
            }
        }
        n
    };
    let saved = bytes(true).1 * std::mem::size_of::<Shadow>() as u64;
    let assume =
        config.findings && !config.trace_writes && config.watch.is_none() && saved > 0 && saved >= bytes(false).0;
    if workers > 1 || assume {
        // What the buffers held, for a run after one that failed; a read-only one keeps it (a
        // write to it is a conflict, which is never made).
        let before: Vec<Option<Vec<u8>>> =
            bufs.iter().zip(&read_only).map(|(b, ro)| (!ro).then(|| b.to_vec())).collect();
        let args = (kernel, program, spec, names, config);
        let tries = [(workers > 1).then_some(workers), assume.then_some(1)];
        for threads in tries.into_iter().flatten() {
            let views = bufs.iter_mut().map(|b| &mut **b).collect();
            if let Some(mut out) =
                launch(args, views, buf_elem.clone(), &buf_unset, &read_only, scratch, threads, start)
            {
                out.workers = threads;
                return out;
            }
            for (b, s) in bufs.iter_mut().zip(&before) {
                if let Some(s) = s {
                    b.copy_from_slice(s);
                }
            }
        }
    }
    let writable = vec![false; bufs.len()];
    launch((kernel, program, spec, names, config), bufs, buf_elem, &buf_unset, &writable, scratch, 1, start)
        .expect("a launch that assumes nothing always ends")
}

/// Per buffer, whether the kernel takes it only through `const` pointers, so reads it only (a
/// write through a cast is a conflict on a worker thread, see `parallel.rs`).
fn read_only(program: &Program, spec: &LaunchSpec, buffers: usize) -> Vec<bool> {
    let params = program.function(&spec.kernel).map(|(_, f)| &f.params[..]).unwrap_or(&[]);
    let mut read_only = vec![true; buffers];
    for (arg, p) in spec.args.iter().zip(params) {
        if let Some((i, _)) = arg.pointer()
            && let Some(ro) = read_only.get_mut(i)
        {
            *ro &= matches!(p.ty, crate::cuda::ast::Type::Ptr { is_const: true, .. });
        }
    }
    read_only
}

/// One run of a launch begun at `start`: on this thread (`workers` 1), or speculated on
/// `workers` threads (see `parallel.rs`), `None` when the speculation failed.
#[allow(clippy::type_complexity, clippy::too_many_arguments)]
fn launch(
    (kernel, program, spec, names, config): (&Kernel, &Program, &LaunchSpec, &[String], &SimConfig),
    bufs: Vec<&mut [u8]>,
    buf_elem: Vec<u32>,
    buf_unset: &[Option<Vec<bool>>],
    read_only: &[bool],
    scratch: &mut Vec<Vec<Shadow>>,
    workers: usize,
    start: Instant,
) -> Option<Outcome> {
    let findings = config.findings;
    let mut shadow_store: Vec<Vec<Shadow>> = bufs
        .iter()
        .zip(&buf_elem)
        .zip(read_only)
        .map(|((b, e), ro)| {
            let mut v = scratch.pop().unwrap_or_default();
            v.clear();
            if findings && !ro {
                v.resize(b.len() / *e.max(&1) as usize, Shadow::default());
            }
            v
        })
        .collect();
    let mut slot = Vec::new();
    let mut globals: Vec<Vec<u8>> = Vec::new();
    let mut global_shadow: Vec<Vec<Shadow>> = Vec::new();
    let mut shared_i = 0;
    for st in &kernel.statics {
        match st.kind {
            StaticKind::Shared => {
                slot.push(shared_i);
                shared_i += 1;
            }
            StaticKind::Local { .. } => slot.push(0),
            StaticKind::Global { index, constant } => {
                slot.push(globals.len() as u32);
                let mut bytes = vec![0u8; st.bytes as usize];
                if let Some(g) = program.globals.get(index as usize) {
                    let elem = st.elem.clamp(1, 8) as usize;
                    for (i, v) in g.init.iter().enumerate() {
                        if let Some(dst) = bytes.get_mut(i * elem..(i + 1) * elem) {
                            write(dst, *v);
                        }
                    }
                    // Values the session set (`coef = [...]`) go over the initialiser's.
                    if let Some(w) = spec.symbols.iter().find(|w| w.name == g.var.name) {
                        let n = w.bytes.len().min(bytes.len());
                        bytes[..n].copy_from_slice(&w.bytes[..n]);
                    }
                }
                let n = if findings && !constant { bytes.len() / st.elem.max(1) as usize } else { 0 };
                global_shadow.push(vec![Shadow::default(); n]);
                globals.push(bytes);
            }
        }
    }
    let params: Vec<u64> = spec
        .args
        .iter()
        .flat_map(|a| match a {
            Arg::Buffer(i) => vec![memory::make_ptr(*i as u32 + 1, 0)],
            // A view is the buffer's own region, further in: its accesses are the buffer's, by
            // the buffer's indices, and bounds are the whole buffer's.
            Arg::View { buffer, offset } => {
                let elem = buf_elem.get(*buffer).copied().unwrap_or(1) as i64;
                vec![memory::make_ptr(*buffer as u32 + 1, *offset as i64 * elem)]
            }
            Arg::Scalar(s) => vec![s.to_bits()],
            Arg::Null => vec![0],
            // A struct parameter fills one register per member, in order.
            Arg::Struct(members) => members.iter().map(|s| s.to_bits()).collect(),
        })
        .collect();
    let seq = config.schedule == Schedule::Sequential;
    let (param_names, param_views, param_per) = {
        let kernel_params = program.function(&spec.kernel).map(|(_, f)| &f.params[..]).unwrap_or(&[]);
        let mut names: Vec<Option<String>> = vec![None; bufs.len()];
        let mut views: Vec<Option<(String, u64)>> = vec![None; bufs.len()];
        let mut passed = vec![0u32; bufs.len()];
        // A buffer passed whole to a `float4 *` holds four of its values per element the kernel
        // indexes: findings count in the kernel's elements (`v[2]`, not the buffer's `v[8]`).
        let mut per = vec![1u64; bufs.len()];
        for (arg, p) in spec.args.iter().zip(kernel_params) {
            if let Some((i, offset)) = arg.pointer()
                && i < bufs.len()
            {
                if let (0, Some(crate::cuda::ast::Type::Struct(def))) = (offset, p.ty.pointee())
                    && let Some((_, n)) = def.buffer_layout()
                {
                    per[i] = n;
                }
                // A buffer passed to two parameters has no one name in the kernel, nor has one
                // passed as a view: `p[0]` of `p = a + 4` is `a[4]`, and findings say `a[4]`.
                passed[i] += 1;
                names[i] = Some(p.name.clone()).filter(|_| offset == 0);
                views[i] = (offset != 0).then(|| (p.name.clone(), offset as u64));
            }
        }
        (
            names.into_iter().zip(&passed).map(|(n, k)| n.filter(|_| *k == 1)).collect(),
            views.into_iter().zip(&passed).map(|(v, k)| v.filter(|_| *k == 1)).collect(),
            per,
        )
    };
    let bufs_bytes: u64 = bufs.iter().map(|b| b.len() as u64).sum();
    let tags = (workers > 1).then(|| parallel::Tags::new(&bufs, &buf_elem, &globals, read_only));
    let unwritten = if findings || tags.is_some() {
        Vec::new()
    } else {
        writes::unwritten(&kernel.code, kernel.regs, &params, bufs.len())
    };
    let max_total = config.max_steps.saturating_mul(if seq { WARP as u64 } else { 1 });
    let mut m = Machine {
        k: kernel,
        mem: Mem {
            trace: config.trace_writes.then(|| {
                bufs.iter().zip(&buf_elem).map(|(b, e)| WriteTrace::new(b.len() / *e.max(&1) as usize)).collect()
            }),
            watch: config.watch.map(|watch| WatchState { watch, events: Vec::new(), pending: false }),
            extra: config.trace_writes || config.watch.is_some(),
            clock: 0,
            releases: memory::Releases::new(),
            bufs,
            buf_elem,
            buf_shadow: shadow_store.iter_mut().map(|v| &mut v[..]).collect(),
            buf_unset,
            read_only,
            unwritten,
            slot,
            globals: globals.iter_mut().map(|v| &mut v[..]).collect(),
            global_shadow: global_shadow.iter_mut().map(|v| &mut v[..]).collect(),
            findings,
            tags: tags.as_ref(),
            shared_tags: Vec::new(),
            me: 0,
            conflict: false,
        },
        reports: Reports::default(),
        barrier_findings: Vec::new(),
        barrier_seen: HashSet::new(),
        stop: None,
        output: Vec::new(),
        pending: HashMap::new(),
        truncated: false,
        block_dim: spec.block,
        grid_dim: spec.grid,
        block_threads: spec.block.count() as u32,
        dyn_shared: spec.shared_bytes,
        params,
        seq,
        total: 0,
        max_total,
        // A quarter of the launch's budget, so that one runaway warp is stopped before it has
        // used it all; on the sequential schedule a step runs one lane, and both are 32 times as
        // many.
        max_warp: (max_total / 4).max(1),
        param_names,
        param_per,
        param_views,
        threads: u64::try_from(spec.total_threads()).unwrap_or(u64::MAX),
        fences: kernel.code.iter().any(|op| matches!(op, Op::Fence)),
        log: None,
        cost: config.cost.filter(|_| !seq).map(|p| {
            let data = bufs_bytes
                + kernel
                    .statics
                    .iter()
                    .filter(|s| matches!(s.kind, StaticKind::Global { .. }))
                    .map(|s| s.bytes)
                    .sum::<u64>();
            let shared = shared_bytes(kernel, spec.shared_bytes);
            Box::new(Counter::new(kernel, p, spec.block.count() as u32, shared, data))
        }),
    };
    let busiest = if workers > 1 {
        if !parallel::run(&mut m, spec.grid.count(), config, workers, start) {
            return None;
        }
        None
    } else {
        let busiest = schedule(&mut m, spec.grid.count(), config, start);
        if m.mem.conflict {
            return None;
        }
        busiest
    };
    // What the launch wrote of a buffer made with `empty` is written from now on. Without
    // findings there are no shadows to tell: all of it counts as written.
    let mut unset = buf_unset.to_vec();
    for (u, sh) in unset.iter_mut().zip(&m.mem.buf_shadow) {
        if let Some(u) = u {
            if findings {
                u.iter_mut().zip(sh.iter()).for_each(|(x, s)| *x &= s[0] == 0);
            } else {
                u.fill(false);
            }
        }
    }
    let mut out = finish(m, names, busiest);
    scratch.append(&mut shadow_store);
    out.unset = unset;
    Some(out)
}

/// The scheduler. Returns the site of the busiest resident warp (for a step-limit finding).
fn schedule(m: &mut Machine, blocks: u64, config: &SimConfig, start: Instant) -> Option<(u32, u64)> {
    // Fewer resident blocks when each needs a lot of memory (big local or shared arrays).
    let per_block = m.k.memory_bytes(m.block_threads as u64, m.dyn_shared as u64).max(1);
    let window = match config.schedule {
        Schedule::Sequential => 1,
        _ => (RESIDENT_MEMORY / per_block).clamp(1, RESIDENT_BLOCKS),
    };
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(config.seed);
    let mut slots: Vec<Option<Block>> = Vec::new();
    let mut pool: Vec<Block> = Vec::new();
    let mut ready: Vec<(u32, u32)> = Vec::new();
    let mut next = 0u64;
    let new_block = |m: &Machine, pool: &mut Vec<Block>, linear: u64| {
        let mut b = pool.pop().unwrap_or_else(Block::empty);
        m.init_block(&mut b, linear);
        b
    };
    let enqueue = |b: &mut Block, s: usize, ready: &mut Vec<(u32, u32)>| {
        for (w, warp) in b.warps.iter_mut().enumerate() {
            if !warp.queued && warp.live & !warp.bar != 0 {
                warp.queued = true;
                ready.push((s as u32, w as u32));
            }
        }
    };
    while next < blocks && (slots.len() as u64) < window {
        let mut b = new_block(m, &mut pool, next);
        enqueue(&mut b, slots.len(), &mut ready);
        slots.push(Some(b));
        next += 1;
    }
    let mut cursor = 0usize;
    let mut polls = 0u32;
    let mut reported: Option<Duration> = None;
    let progress = |m: &Machine, next: u64, done: bool| Progress {
        blocks_started: next,
        blocks,
        steps: m.total,
        elapsed: start.elapsed(),
        done,
    };
    while !ready.is_empty() && m.stop.is_none() {
        polls = polls.wrapping_add(1);
        if polls % 64 == 0 {
            if config.cancel.as_ref().is_some_and(|c| c.load(Ordering::Relaxed)) {
                m.stop = Some(Stop::Cancelled);
                break;
            }
            let elapsed = start.elapsed();
            if let Some(limit) = config.time_limit.filter(|l| elapsed >= *l) {
                m.stop = Some(Stop::TimeLimit(limit));
                break;
            }
            if let Some(sink) = &config.progress
                && elapsed >= Duration::from_secs(1)
                && reported.is_none_or(|r| elapsed >= r + Duration::from_millis(500))
            {
                reported = Some(elapsed);
                (sink.0)(progress(m, next, false));
            }
        }
        let (i, budget) = match config.schedule {
            Schedule::Random => {
                let r = rng.next_u64();
                ((r % ready.len() as u64) as usize, 1 + ((r >> 32) % 16) as u32)
            }
            Schedule::Lockstep => {
                if cursor >= ready.len() {
                    cursor = 0;
                }
                (cursor, 1)
            }
            Schedule::Sequential => {
                let i = (0..ready.len()).min_by_key(|&i| ready[i]).unwrap_or(0);
                (i, 4096)
            }
        };
        let (s, w) = ready[i];
        let Some(b) = slots[s as usize].as_mut() else {
            ready.swap_remove(i);
            continue;
        };
        if m.run_warp(b, w as usize, budget) {
            cursor = i + 1;
        } else {
            b.warps[w as usize].queued = false;
            ready.swap_remove(i);
        }
        if b.woke {
            b.woke = false;
            enqueue(b, s as usize, &mut ready);
        }
        if b.live_warps == 0 {
            let done = slots[s as usize].take().expect("finished block");
            pool.push(done);
            if next < blocks && m.stop.is_none() {
                let mut nb = new_block(m, &mut pool, next);
                enqueue(&mut nb, s as usize, &mut ready);
                slots[s as usize] = Some(nb);
                next += 1;
            }
        }
    }
    if let (Some(sink), Some(_)) = (&config.progress, reported) {
        (sink.0)(progress(m, next, true));
    }
    let mut busiest: Option<(u64, u32, u64)> = None;
    for b in slots.iter().flatten() {
        for (w, warp) in b.warps.iter().enumerate() {
            if warp.live != 0 && busiest.is_none_or(|(s, _, _)| warp.steps > s) {
                let lane = (warp.gmask & warp.live).trailing_zeros().min(warp.live.trailing_zeros());
                let thread = b.linear * m.block_threads as u64 + (w * WARP) as u64 + lane as u64;
                // A group that ran ahead of its turn is, for the schedule, where its steps so far
                // took it.
                let pc = warp
                    .path
                    .len()
                    .checked_sub(warp.ahead as usize)
                    .filter(|_| warp.ahead > 0)
                    .map_or(warp.gpc, |i| warp.path[i]);
                busiest = Some((warp.steps, pc, thread));
            }
        }
    }
    busiest.map(|(_, pc, t)| (pc, t))
}

/// Shared memory one block uses: its `__shared__` arrays, `extern` ones sized by the launch.
fn shared_bytes(k: &Kernel, dynamic: u32) -> u64 {
    k.statics
        .iter()
        .filter(|s| s.kind == StaticKind::Shared)
        .map(|s| if s.is_extern { dynamic as u64 } else { s.bytes })
        .sum()
}

fn finish(mut m: Machine, names: &[String], busiest: Option<(u32, u64)>) -> Outcome {
    let mut pending: Vec<(u64, String)> = std::mem::take(&mut m.pending).into_iter().collect();
    pending.sort();
    for (t, text) in pending {
        m.print(t, &(text + "\n"));
    }
    let mut findings = Vec::new();
    for ((region, access), s) in &m.reports.oob {
        // An index past a row: of a launch buffer laid out as an array (whose shape is the
        // session's to give, `finding::shape_buffers`, and whose check points at the access),
        // or of a kernel's own array.
        let past_row = match (memory::of_buffer_dim_region(*region), memory::of_dim_region(*region)) {
            (Some((buffer, dim)), _) => {
                let mut first = m.site(s.first_pc, s.first_thread, *access);
                if let Some(check) = m.k.dim_check(s.first_pc) {
                    first.span = check.access;
                }
                Some((m.memory_of(buffer, names), Vec::new(), dim, first))
            }
            (None, Some((array, dim))) => {
                let region = STATIC_REGION_BASE + array;
                let first = m.site(s.first_pc, s.first_thread, *access);
                Some((m.memory_of(region, names), m.shape_of(region), dim, first))
            }
            (None, None) => None,
        };
        if let Some((memory, shape, dim, first)) = past_row {
            findings.push(Finding::PastRow {
                memory,
                shape,
                dim: dim as usize,
                len: s.len,
                count: s.count,
                min_index: s.min,
                max_index: s.max,
                first_index: s.first_index,
                first,
            });
            continue;
        }
        let per = m.per(*region);
        findings.push(Finding::OutOfBounds {
            memory: m.memory_of(*region, names),
            shape: m.shape_of(*region),
            kernel_name: m.kernel_name(*region, names),
            view: m.view_of(*region),
            threads: m.threads,
            len: s.len / per as u64,
            access: *access,
            count: s.count,
            min_index: s.min.div_euclid(per),
            max_index: s.max.div_euclid(per),
            first: m.site(s.first_pc, s.first_thread, *access),
            first_index: s.first_index.div_euclid(per),
        });
    }
    for (region, s) in &m.reports.uninit {
        findings.push(Finding::Uninit {
            memory: m.memory_of(*region, names),
            shape: m.shape_of(*region),
            kernel_name: m.kernel_name(*region, names),
            index: (*region < memory::VAR_REGION_BASE).then_some(s.first_index.div_euclid(m.per(*region))),
            count: s.count,
            elements: s.elements,
            first: m.site(s.first_pc, s.first_thread, Access::Read),
        });
    }
    for ((region, pc1, pc2), s) in &m.reports.races {
        findings.push(Finding::Race {
            memory: m.memory_of(*region, names),
            shape: m.shape_of(*region),
            kernel_name: m.kernel_name(*region, names),
            view: m.view_of(*region),
            index: s.index,
            count: s.count,
            elements: s.elements.max(1),
            first: m.site(*pc1, s.first_thread, s.first_access),
            second: m.site(*pc2, s.second_thread, s.second_access),
            same_warp: {
                let bt = m.block_threads.max(1) as u64;
                let warp = |t: u64| (t / bt, t % bt / WARP as u64);
                warp(s.first_thread) == warp(s.second_thread)
            },
        });
    }
    findings.append(&mut m.barrier_findings);
    let mut cancelled = false;
    match m.stop.take() {
        Some(Stop::Trap { pc, thread, message }) => {
            findings.push(Finding::Trap { site: m.site(pc, thread, Access::Read), message })
        }
        Some(Stop::StepLimit { warp }) => {
            let (pc, thread) = busiest.unwrap_or((0, 0));
            findings.push(Finding::StepLimit {
                steps: m.total,
                budget: if m.seq { m.max_total / WARP as u64 } else { m.max_total },
                warp_limit: warp.then_some(m.max_warp),
                sequential: m.seq,
                site: m.site(pc, thread, Access::Read),
                time_limit: None,
            });
        }
        Some(Stop::TimeLimit(limit)) => {
            let (pc, thread) = busiest.unwrap_or((0, 0));
            findings.push(Finding::StepLimit {
                steps: m.total,
                budget: if m.seq { m.max_total / WARP as u64 } else { m.max_total },
                warp_limit: None,
                sequential: m.seq,
                site: m.site(pc, thread, Access::Read),
                time_limit: Some(limit),
            });
        }
        Some(Stop::Cancelled) => cancelled = true,
        // Never finished: such a launch runs again on one thread.
        Some(Stop::Conflict) | None => {}
    }
    let aborted = findings.iter().any(|f| matches!(f, Finding::Trap { .. } | Finding::StepLimit { .. })) || cancelled;
    let watched = m.mem.watch.take().map(|w| {
        let num = |bits: u64, ty: Scalar| match ty {
            Scalar::F32 => Num::Float(f32x(bits) as f64),
            Scalar::F64 => Num::Float(f64::from_bits(bits)),
            Scalar::I8 | Scalar::I16 | Scalar::I32 | Scalar::I64 => {
                Num::Int(read(&bits.to_le_bytes()[..ty.size() as usize], ty) as i64 as i128)
            }
            _ => Num::Int(read(&bits.to_le_bytes()[..ty.size() as usize], ty) as i128),
        };
        w.events
            .into_iter()
            .map(|e| {
                let site = m.site(e.pc, e.thread as u64, e.access);
                WatchedAccess {
                    step: e.step,
                    thread: site.thread,
                    access: e.access,
                    memory: m.memory_of(e.region, names),
                    index: e.index,
                    read: (e.access != Access::Write).then(|| num(e.old, e.ty)),
                    written: e.new.map(|v| num(v, e.ty)),
                    span: site.span,
                }
            })
            .collect()
    });
    let writes = m.mem.trace.take();
    // A stopped launch has no cost worth reporting: it did not do the kernel's work.
    let cost = m
        .cost
        .take()
        .filter(|_| !aborted)
        .map(|c| c.finish(m.k, m.grid_dim.count(), shared_bytes(m.k, m.dyn_shared), m.total));
    Outcome {
        workers: 1,
        unset: Vec::new(),
        cost,
        steps: m.total,
        findings,
        output: m.output,
        output_truncated: m.truncated,
        aborted,
        cancelled,
        writes,
        watched,
    }
}

/// Why an access could not be made at all (a GPU stops the kernel for either).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fault {
    /// The pointer is into no buffer or array.
    Invalid,
    /// An N-byte value at an address that is not a multiple of N (a pointer cast such as
    /// `(float *)(bytes + 1)`).
    Misaligned,
}

impl Fault {
    /// The trap's message for a `what` ("read", "write", "atomic") of `size` bytes.
    fn message(self, what: &str, size: u32) -> String {
        match self {
            Fault::Invalid => format!("{what} through an invalid pointer"),
            Fault::Misaligned => format!(
                "misaligned address: a {size}-byte {what} at an address that is not a multiple of {size} (on a GPU, CUDA_ERROR_MISALIGNED_ADDRESS)"
            ),
        }
    }
}
