//! The cost model: what a launch would cost on a real GPU, counted during the ordinary simulated
//! launch (no second pass) and turned into an estimated time on a reference GPU.
//!
//! The engine calls [`Counter::issue`] for every warp instruction it executes and
//! [`Counter::memory`] with the addresses of the active lanes of every memory instruction. From
//! them the counter keeps, per instruction and in total, what Nsight Compute would report:
//! global requests and the 32-byte sectors and 128-byte lines they touch, L1 hits (one small
//! cache per SM), L2 hits and DRAM traffic (an L2 the size of the reference GPU's), shared-memory
//! wavefronts and bank conflicts, atomics and how many land on one address, active lanes per
//! instruction (SIMT efficiency) and instructions by kind. [`estimate`] turns the totals into
//! time: the largest of the DRAM, L2, L1, shared-memory, issue, atomic and latency limits.
//! `docs/cost-model.md` gives the formulas and what the model leaves out.

pub mod profiles;

use std::collections::{HashMap, VecDeque};

use crate::cuda::ast::{MathFn, Scalar};
use crate::diag::Span;
use crate::render::findings::thousands;

pub use profiles::{GpuProfile, PROFILES};

use super::compile::{Kernel, Op, StaticKind};
use super::memory::{self, STATIC_REGION_BASE};

const WARP: usize = 32;
const SECTOR: u64 = 32;
/// Atomics on distinct addresses tracked for same-address serialisation; past this many the
/// busiest so far is kept (a scatter over millions of addresses has no hot address anyway).
const MAX_ATOMIC_ADDRESSES: usize = 1 << 20;

/// What one instruction (or one source line, once summed) cost.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Counts {
    /// Warp instructions issued, and the active lanes they had.
    pub issued: u64,
    pub lanes: u64,
    /// Global memory: warp-level requests (loads, stores, atomics), the sectors and lines they
    /// touched, and the sectors a perfectly coalesced request of the same lanes would touch.
    pub global_requests: u64,
    pub global_load_requests: u64,
    pub global_store_requests: u64,
    pub sectors: u64,
    pub load_sectors: u64,
    pub store_sectors: u64,
    /// Stored sectors that the request wrote only part of: L2 must merge them into the sector
    /// it holds (a read-modify-write), which costs several times a whole-sector write.
    pub partial_store_sectors: u64,
    pub ideal_sectors: u64,
    pub ideal_ld_st_sectors: u64,
    pub lines: u64,
    /// Bytes the lanes asked for.
    pub bytes_requested: u64,
    /// Sectors that went to L2 (L1 misses, stores and atomics), and bytes to and from DRAM.
    pub l2_sectors: u64,
    pub l1_hits: u64,
    /// Load requests whose every sector was in L1 (a request waits for its slowest sector).
    pub l1_hit_requests: u64,
    pub l2_hits: u64,
    pub dram_read: u64,
    pub dram_write: u64,
    /// Shared memory: requests, the wavefronts they took, and the fewest they could take.
    pub shared_requests: u64,
    pub wavefronts: u64,
    pub ideal_wavefronts: u64,
    /// Atomic operations (one per active lane), and the most lanes of one request on one address.
    pub atomics: u64,
    pub atomic_requests: u64,
    pub worst_atomic_lanes: u64,
    /// Issue slots in quarters: the simulator's instructions weighted by what a GPU compiler
    /// makes of them (see [`issue_weight`]).
    pub slots: u64,
    /// Instructions by kind (warp instructions).
    pub int_ops: u64,
    pub f32_ops: u64,
    pub f64_ops: u64,
    pub special_ops: u64,
    pub barriers: u64,
}

impl Counts {
    /// Add another place's counts (the worst atomic contention is the larger of the two).
    pub fn add(&mut self, o: &Counts) {
        self.issued += o.issued;
        self.lanes += o.lanes;
        self.global_requests += o.global_requests;
        self.global_load_requests += o.global_load_requests;
        self.global_store_requests += o.global_store_requests;
        self.sectors += o.sectors;
        self.load_sectors += o.load_sectors;
        self.store_sectors += o.store_sectors;
        self.partial_store_sectors += o.partial_store_sectors;
        self.ideal_sectors += o.ideal_sectors;
        self.ideal_ld_st_sectors += o.ideal_ld_st_sectors;
        self.lines += o.lines;
        self.bytes_requested += o.bytes_requested;
        self.l2_sectors += o.l2_sectors;
        self.l1_hits += o.l1_hits;
        self.l1_hit_requests += o.l1_hit_requests;
        self.l2_hits += o.l2_hits;
        self.dram_read += o.dram_read;
        self.dram_write += o.dram_write;
        self.shared_requests += o.shared_requests;
        self.wavefronts += o.wavefronts;
        self.ideal_wavefronts += o.ideal_wavefronts;
        self.atomics += o.atomics;
        self.atomic_requests += o.atomic_requests;
        self.worst_atomic_lanes = self.worst_atomic_lanes.max(o.worst_atomic_lanes);
        self.slots += o.slots;
        self.int_ops += o.int_ops;
        self.f32_ops += o.f32_ops;
        self.f64_ops += o.f64_ops;
        self.special_ops += o.special_ops;
        self.barriers += o.barriers;
    }

    /// Global sectors per load or store request, as Nsight Compute reports it
    /// (`l1tex__t_sectors_pipe_lsu_mem_global_op_{ld,st}` over the requests; atomics are counted
    /// apart there too).
    pub fn sectors_per_request(&self) -> f64 {
        ratio(self.load_sectors + self.store_sectors, self.global_load_requests + self.global_store_requests)
    }

    /// What [`Counts::sectors_per_request`] would be if every load and store were coalesced.
    pub fn ideal_sectors_per_request(&self) -> f64 {
        ratio(self.ideal_ld_st_sectors, self.global_load_requests + self.global_store_requests)
    }

    /// Active lanes per issued warp instruction, 0 to 1.
    pub fn simt_efficiency(&self) -> f64 {
        ratio(self.lanes, self.issued * WARP as u64)
    }

    /// Shared-memory wavefronts beyond the fewest the requests needed.
    pub fn bank_conflicts(&self) -> u64 {
        self.wavefronts.saturating_sub(self.ideal_wavefronts)
    }

    pub fn dram_bytes(&self) -> u64 {
        self.dram_read + self.dram_write
    }
}

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 { 0.0 } else { a as f64 / b as f64 }
}

/// What limits a launch's estimated time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Limiter {
    Dram,
    L2,
    L1,
    Shared,
    Issue,
    Atomics,
    Latency,
    Blocks,
    Launch,
}

impl Limiter {
    pub fn name(self) -> &'static str {
        match self {
            Limiter::Dram => "DRAM bandwidth",
            Limiter::L2 => "L2 bandwidth",
            Limiter::L1 => "L1 throughput",
            Limiter::Shared => "shared-memory throughput",
            Limiter::Issue => "instruction issue",
            Limiter::Atomics => "atomics on one address",
            Limiter::Latency => "latency",
            Limiter::Blocks => "block scheduling",
            Limiter::Launch => "launch overhead",
        }
    }
}

/// How a launch occupies the GPU.
#[derive(Clone, Debug, PartialEq)]
pub struct Occupancy {
    pub warps_per_block: u32,
    /// Blocks of this kernel one SM can hold, and what limits that.
    pub blocks_per_sm: u32,
    pub limited_by: &'static str,
    /// Estimated registers per thread (the simulator's live values; the GPU's `:info` has the
    /// compiler's figure).
    pub registers: u32,
    pub shared_per_block: u64,
    /// Resident warps per SM over the most it can hold (theoretical, as Nsight Compute's
    /// "theoretical occupancy"), and the warps a busy SM really has when the grid is small.
    pub theoretical: f64,
    pub achieved: f64,
    pub sms_used: u32,
    pub waves: u64,
}

/// The estimate: time, what limits it, and every limit's time.
#[derive(Clone, Debug, PartialEq)]
pub struct Estimate {
    pub time_us: f64,
    pub limiter: Limiter,
    /// Each limit's time in microseconds, largest first.
    pub terms: Vec<(Limiter, f64)>,
}

/// One source place's share of a launch.
#[derive(Clone, Debug, PartialEq)]
pub struct PlaceCost {
    pub span: Span,
    pub counts: Counts,
}

/// What a launch would cost on the reference GPU, and why.
#[derive(Clone, Debug, PartialEq)]
pub struct CostReport {
    pub profile: &'static GpuProfile,
    pub totals: Counts,
    pub places: Vec<PlaceCost>,
    pub occupancy: Occupancy,
    pub estimate: Estimate,
    pub warp_steps: u64,
    pub threads: u64,
    /// Atomics on the busiest single address.
    pub hottest_address: u64,
}

/// How the engine tells the counter where memory is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Space {
    Global,
    Shared,
    Local,
    Constant,
}

/// The kind of a memory instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemOp {
    Load,
    Store,
    Atomic,
}

/// Residency of one memory region's sectors in L2: resident and dirty bits.
#[derive(Default)]
struct RegionBits {
    resident: Vec<u64>,
    dirty: Vec<u64>,
}

fn bit(v: &[u64], i: usize) -> bool {
    v.get(i / 64).is_some_and(|w| w & (1 << (i % 64)) != 0)
}

fn set_bit(v: &mut Vec<u64>, i: usize, on: bool) {
    if v.len() <= i / 64 {
        v.resize(i / 64 + 1, 0);
    }
    if on {
        v[i / 64] |= 1 << (i % 64);
    } else {
        v[i / 64] &= !(1 << (i % 64));
    }
}

/// An L2 of the reference GPU's capacity: exact residency while the data fits, first-in
/// first-out eviction beyond it (streaming kernels evict in that order anyway).
struct L2 {
    /// Every buffer of the launch fits: they are taken as resident from the start, as they are
    /// on a GPU after the host copied them in or an earlier launch used them.
    warm: bool,
    capacity: usize,
    regions: HashMap<u32, RegionBits>,
    order: VecDeque<(u32, u32)>,
}

impl L2 {
    fn new(bytes: u64, data: u64) -> L2 {
        L2 { warm: data <= bytes, capacity: (bytes / SECTOR) as usize, regions: HashMap::new(), order: VecDeque::new() }
    }

    /// Look up a sector; `(hit, newly_dirty)`. Loads that miss are charged a DRAM read by the
    /// caller; a sector written for the first time while resident is charged one write back.
    fn access(&mut self, region: u32, sector: u32, write: bool) -> (bool, bool) {
        let r = self.regions.entry(region).or_default();
        let i = sector as usize;
        let hit = self.warm || bit(&r.resident, i);
        let mut newly_dirty = false;
        if !hit {
            set_bit(&mut r.resident, i, true);
            self.order.push_back((region, sector));
        }
        if self.warm && !write {
            return (true, false);
        }
        if write && !bit(&r.dirty, i) {
            set_bit(&mut r.dirty, i, true);
            newly_dirty = true;
        }
        if self.order.len() > self.capacity
            && let Some((reg, sec)) = self.order.pop_front()
            && let Some(r) = self.regions.get_mut(&reg)
        {
            set_bit(&mut r.resident, sec as usize, false);
            set_bit(&mut r.dirty, sec as usize, false);
        }
        (hit, newly_dirty)
    }
}

/// One SM's L1 for global loads: 4-way set-associative over sectors, least recently used out.
struct L1 {
    sets: Vec<[u64; 4]>,
}

impl L1 {
    fn new(bytes: u64) -> L1 {
        let sets = ((bytes / SECTOR / 4) as usize).next_power_of_two().max(1);
        L1 { sets: vec![[u64::MAX; 4]; sets] }
    }

    fn access(&mut self, key: u64) -> bool {
        let n = self.sets.len();
        let set = &mut self.sets[((key ^ (key >> 13)) as usize) & (n - 1)];
        if let Some(p) = set.iter().position(|&k| k == key) {
            set[..=p].rotate_right(1);
            true
        } else {
            set.rotate_right(1);
            set[0] = key;
            false
        }
    }
}

/// The kind of work an instruction is, for the issue limit.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Int,
    F32,
    F64,
    Special,
    Other,
}

fn kind_of(op: &Op) -> Kind {
    match op {
        Op::Bin { ty, .. } | Op::Un { ty, .. } | Op::Min { ty, .. } | Op::Max { ty, .. } | Op::Abs { ty, .. } => {
            scalar_kind(*ty)
        }
        // Transcendentals run on the SM's special-function units (16 lanes per cycle per SM).
        Op::Math { f, ty, .. } => match f {
            MathFn::Fabs
            | MathFn::Fmin
            | MathFn::Fmax
            | MathFn::Floor
            | MathFn::Ceil
            | MathFn::Round
            | MathFn::Trunc
            | MathFn::Fma => scalar_kind(*ty),
            _ => Kind::Special,
        },
        Op::Cvt { .. } | Op::PtrAdd { .. } | Op::PtrDiff { .. } | Op::Imm { .. } | Op::Mov { .. } => Kind::Int,
        _ => Kind::Other,
    }
}

/// Issue slots (in quarters) a GPU spends on one of the simulator's instructions. The simulator
/// compiles straightforwardly: every constant, copy, jump and index multiplication is an
/// instruction. An optimising compiler folds constants and copies away, strength-reduces index
/// arithmetic in loops, fuses a multiply and an add into one FMA and unrolls short loops, so
/// those count for less; memory, shuffle and barrier instructions count in full, special
/// functions for what their units' rate (16 lanes per cycle per SM against 128) costs, and FP64
/// for the GPU's FP64 rate.
pub fn issue_weight(op: &Op, p: &GpuProfile) -> u32 {
    match op {
        Op::Imm { .. } | Op::Mov { .. } | Op::Jump { .. } | Op::Exit => 0,
        Op::PtrAdd { .. } | Op::PtrDiff { .. } | Op::Branch { .. } => 1,
        Op::Cvt { .. } => 2,
        _ => match kind_of(op) {
            Kind::Int => 1,
            Kind::F32 => 2,
            Kind::F64 => (2.0 * (0.5 / p.fp64_ratio).max(1.0)).round() as u32,
            Kind::Special => 32,
            Kind::Other => 4,
        },
    }
}

fn scalar_kind(ty: Scalar) -> Kind {
    match ty {
        Scalar::F32 => Kind::F32,
        Scalar::F64 => Kind::F64,
        _ => Kind::Int,
    }
}

/// The counter the engine feeds during one launch.
pub struct Counter {
    profile: &'static GpuProfile,
    per_pc: Vec<Counts>,
    kinds: Vec<Kind>,
    weights: Vec<u32>,
    statics: Vec<Space>,
    l2: L2,
    l1: Vec<Option<L1>>,
    l1_bytes: u64,
    atomic_addresses: HashMap<u64, u64>,
    hottest_address: u64,
    block_threads: u32,
}

impl Counter {
    /// `data_bytes`: the launch's buffers and globals, which start resident in L2 when they fit.
    pub fn new(
        k: &Kernel,
        profile: &'static GpuProfile,
        block_threads: u32,
        shared_per_block: u64,
        data_bytes: u64,
    ) -> Counter {
        let statics = k
            .statics
            .iter()
            .map(|s| match s.kind {
                StaticKind::Shared => Space::Shared,
                StaticKind::Local { .. } => Space::Local,
                StaticKind::Global { constant: true, .. } => Space::Constant,
                StaticKind::Global { .. } => Space::Global,
            })
            .collect();
        let occ = occupancy(k, profile, block_threads, shared_per_block, 1);
        // What is left of the SM's L1/shared storage for caching once its blocks' shared memory is
        // carved out (never below the smallest carve-out the hardware offers).
        let shared_used = shared_per_block * occ.blocks_per_sm as u64;
        let l1_bytes = (profile.l1_shared_bytes as u64).saturating_sub(shared_used).max(28 << 10);
        Counter {
            profile,
            per_pc: vec![Counts::default(); k.code.len()],
            kinds: k.code.iter().map(kind_of).collect(),
            weights: k.code.iter().map(|op| issue_weight(op, profile)).collect(),
            statics,
            l2: L2::new(profile.l2_bytes, data_bytes),
            l1: Vec::new(),
            l1_bytes,
            atomic_addresses: HashMap::new(),
            hottest_address: 0,
            block_threads,
        }
    }

    /// The space a pointer points into.
    pub fn space(&self, ptr: u64) -> Space {
        let region = memory::region(ptr);
        if region >= STATIC_REGION_BASE {
            self.statics.get((region - STATIC_REGION_BASE) as usize).copied().unwrap_or(Space::Global)
        } else {
            Space::Global
        }
    }

    /// One warp instruction issued at `pc` for the lanes in `mask`.
    #[inline]
    pub fn issue(&mut self, pc: u32, mask: u32, barrier: bool) {
        let c = &mut self.per_pc[pc as usize];
        c.issued += 1;
        c.lanes += mask.count_ones() as u64;
        c.slots += self.weights[pc as usize] as u64;
        match self.kinds[pc as usize] {
            Kind::Int => c.int_ops += 1,
            Kind::F32 => c.f32_ops += 1,
            Kind::F64 => c.f64_ops += 1,
            Kind::Special => c.special_ops += 1,
            Kind::Other => {}
        }
        if barrier {
            c.barriers += 1;
        }
    }

    /// One warp-level memory instruction at `pc` of the block `block`: the active lanes'
    /// addresses (`addrs`, in lane order) of `size` bytes each.
    pub fn memory(&mut self, pc: u32, block: u64, op: MemOp, addrs: &[u64], size: u32) {
        let Some(&first) = addrs.first() else { return };
        match self.space(first) {
            Space::Global => self.global(pc, block, op, addrs, size),
            Space::Shared => self.shared(pc, op, addrs, size),
            Space::Local | Space::Constant => {}
        }
    }

    fn global(&mut self, pc: u32, block: u64, op: MemOp, addrs: &[u64], size: u32) {
        let mut sectors = [0u64; 2 * WARP];
        let mut n = 0;
        for &a in addrs {
            let lo = a / SECTOR;
            let hi = (a + size.max(1) as u64 - 1) / SECTOR;
            sectors[n] = lo;
            n += 1;
            if hi != lo && n < sectors.len() {
                sectors[n] = hi;
                n += 1;
            }
        }
        let sectors = &mut sectors[..n];
        if !sectors.is_sorted() {
            sectors.sort_unstable();
        }
        let mut distinct = 0u64;
        let mut lines = 0u64;
        let (mut last, mut last_line) = (u64::MAX, u64::MAX);
        let sms = self.profile.sms as u64;
        let sm = (block % sms) as usize;
        let mut l1_hits = 0;
        let mut l2_hits = 0;
        let mut l2_sectors = 0;
        let (mut dram_read, mut dram_write) = (0, 0);
        let mut partial = 0u64;
        for i in 0..sectors.len() {
            let s = sectors[i];
            if s == last {
                continue;
            }
            if op == MemOp::Store {
                let lanes_here = sectors[i..].iter().take_while(|&&x| x == s).count() as u64;
                if lanes_here * (size as u64) < SECTOR {
                    partial += 1;
                }
            }
            last = s;
            distinct += 1;
            if s / 4 != last_line {
                last_line = s / 4;
                lines += 1;
            }
            // Loads look in the SM's L1 first; stores and atomics go to L2 (L1 is write-through).
            if op == MemOp::Load {
                if self.l1.len() <= sm {
                    self.l1.resize_with(sm + 1, || None);
                }
                let l1_bytes = self.l1_bytes;
                if self.l1[sm].get_or_insert_with(|| L1::new(l1_bytes)).access(s) {
                    l1_hits += 1;
                    continue;
                }
            }
            l2_sectors += 1;
            let ptr = s * SECTOR;
            let region = memory::region(ptr);
            let sector = ((memory::offset(ptr).max(0) as u64) / SECTOR) as u32;
            let (hit, newly_dirty) = self.l2.access(region, sector, op != MemOp::Load);
            if hit {
                l2_hits += 1;
            } else if op != MemOp::Store {
                dram_read += SECTOR;
            }
            if newly_dirty {
                dram_write += SECTOR;
            }
        }
        let lanes = addrs.len() as u64;
        let c = &mut self.per_pc[pc as usize];
        c.global_requests += 1;
        c.sectors += distinct;
        match op {
            MemOp::Load => {
                c.global_load_requests += 1;
                c.load_sectors += distinct;
                c.l1_hit_requests += u64::from(l1_hits == distinct);
            }
            MemOp::Store => {
                c.global_store_requests += 1;
                c.store_sectors += distinct;
                c.partial_store_sectors += partial;
            }
            MemOp::Atomic => {}
        }
        c.ideal_sectors += (lanes * size as u64).div_ceil(SECTOR);
        if op != MemOp::Atomic {
            c.ideal_ld_st_sectors += (lanes * size as u64).div_ceil(SECTOR);
        }
        c.lines += lines;
        c.bytes_requested += lanes * size as u64;
        c.l1_hits += l1_hits;
        c.l2_hits += l2_hits;
        c.l2_sectors += l2_sectors;
        c.dram_read += dram_read;
        c.dram_write += dram_write;
        if op == MemOp::Atomic {
            self.atomics(pc, addrs);
        }
    }

    fn atomics(&mut self, pc: u32, addrs: &[u64]) {
        let mut worst = 0u64;
        let mut sorted = [0u64; WARP];
        let sorted = &mut sorted[..addrs.len()];
        sorted.copy_from_slice(addrs);
        sorted.sort_unstable();
        let mut run = 0;
        for i in 0..sorted.len() {
            run = if i > 0 && sorted[i] == sorted[i - 1] { run + 1 } else { 1 };
            worst = worst.max(run);
            if i + 1 == sorted.len() || sorted[i + 1] != sorted[i] {
                let known = self.atomic_addresses.len() < MAX_ATOMIC_ADDRESSES
                    || self.atomic_addresses.contains_key(&sorted[i]);
                if known {
                    let n = self.atomic_addresses.entry(sorted[i]).or_default();
                    *n += run;
                    self.hottest_address = self.hottest_address.max(*n);
                }
            }
        }
        let c = &mut self.per_pc[pc as usize];
        c.atomics += addrs.len() as u64;
        c.atomic_requests += 1;
        c.worst_atomic_lanes = c.worst_atomic_lanes.max(worst);
    }

    fn shared(&mut self, pc: u32, op: MemOp, addrs: &[u64], size: u32) {
        // Words each lane touches, as (word); a bank is a word's index mod 32. The request takes
        // as many wavefronts as the most distinct words any one bank must deliver; lanes reading
        // the same word share it (a broadcast).
        let per = (size.max(4) / 4) as usize;
        let mut words = [0u64; WARP * 4];
        let mut n = 0;
        for &a in addrs {
            let w0 = (memory::offset(a).max(0) as u64) / 4;
            for j in 0..per.min(4) {
                words[n] = w0 + j as u64;
                n += 1;
            }
        }
        let words = &mut words[..n];
        words.sort_unstable();
        let mut per_bank = [0u8; 32];
        let mut distinct = 0u64;
        let mut last = u64::MAX;
        for &w in words.iter() {
            if w != last {
                last = w;
                distinct += 1;
                per_bank[(w % 32) as usize] += 1;
            }
        }
        let mut wavefronts = per_bank.iter().copied().max().unwrap_or(0) as u64;
        let ideal = distinct.div_ceil(32).max(1);
        if op == MemOp::Atomic {
            // Shared atomics on one address serialise lane by lane.
            let mut run = 1u64;
            let mut worst = 1u64;
            let mut sorted = [0u64; WARP];
            let sorted = &mut sorted[..addrs.len()];
            sorted.copy_from_slice(addrs);
            sorted.sort_unstable();
            for i in 1..sorted.len() {
                run = if sorted[i] == sorted[i - 1] { run + 1 } else { 1 };
                worst = worst.max(run);
            }
            wavefronts = wavefronts.max(worst);
            let c = &mut self.per_pc[pc as usize];
            c.atomics += addrs.len() as u64;
            c.atomic_requests += 1;
            c.worst_atomic_lanes = c.worst_atomic_lanes.max(worst);
        }
        let c = &mut self.per_pc[pc as usize];
        c.shared_requests += 1;
        c.wavefronts += wavefronts.max(1);
        c.ideal_wavefronts += ideal;
    }

    /// The report, once the launch has run: `sites` groups instructions by source place.
    pub fn finish(self, k: &Kernel, grid_blocks: u64, shared_per_block: u64, warp_steps: u64) -> CostReport {
        let mut totals = Counts::default();
        let mut by_site: HashMap<u32, Counts> = HashMap::new();
        for (pc, c) in self.per_pc.iter().enumerate() {
            if c.issued == 0 {
                continue;
            }
            totals.add(c);
            by_site.entry(k.sites[pc]).or_default().add(c);
        }
        let mut places: Vec<PlaceCost> =
            by_site.into_iter().map(|(site, counts)| PlaceCost { span: k.spans[site as usize], counts }).collect();
        places.sort_by_key(|p| (p.span.source, p.span.lo));
        let occupancy = occupancy(k, self.profile, self.block_threads, shared_per_block, grid_blocks);
        let threads = grid_blocks * self.block_threads as u64;
        let estimate = estimate(&totals, &occupancy, self.profile, self.hottest_address, grid_blocks);
        CostReport {
            profile: self.profile,
            totals,
            places,
            occupancy,
            estimate,
            warp_steps,
            threads,
            hottest_address: self.hottest_address,
        }
    }
}

/// Registers per thread the compiled kernel would need, estimated from the simulator's peak of
/// live values (the simulator keeps every temporary of a statement live; a pointer takes two
/// 32-bit registers on the GPU: the two roughly cancel). The GPU backend's `:info` has the
/// compiler's real figure.
pub fn estimated_registers(k: &Kernel) -> u32 {
    k.regs.clamp(16, 255).next_multiple_of(8)
}

/// How many blocks of the kernel an SM holds, and so how full it is.
pub fn occupancy(k: &Kernel, p: &GpuProfile, block_threads: u32, shared_per_block: u64, blocks: u64) -> Occupancy {
    let warps_per_block = block_threads.div_ceil(WARP as u32).max(1);
    let registers = estimated_registers(k);
    let by_warps = p.max_warps_per_sm / warps_per_block;
    let by_regs = p.regs_per_sm / (registers * WARP as u32 * warps_per_block).max(1);
    let by_shared =
        (p.shared_per_sm as u64).checked_div(shared_per_block).map_or(u32::MAX, |v| v.min(u32::MAX as u64) as u32);
    let mut limits = [
        (p.max_blocks_per_sm, "the blocks an SM holds"),
        (by_warps, "warps per SM"),
        (by_regs, "registers"),
        (by_shared, "shared memory"),
    ];
    limits.sort_by_key(|l| l.0);
    let (blocks_per_sm, limited_by) = (limits[0].0.max(1), limits[0].1);
    let theoretical = (blocks_per_sm * warps_per_block) as f64 / p.max_warps_per_sm as f64;
    let sms_used = blocks.min(p.sms as u64).max(1) as u32;
    let per_sm = blocks.div_ceil(p.sms as u64).min(blocks_per_sm as u64).max(1);
    let achieved = (per_sm * warps_per_block as u64) as f64 / p.max_warps_per_sm as f64;
    let waves = blocks.div_ceil(p.sms as u64 * blocks_per_sm as u64).max(1);
    Occupancy {
        warps_per_block,
        blocks_per_sm,
        limited_by,
        registers,
        shared_per_block,
        theoretical: theoretical.min(1.0),
        achieved: achieved.min(1.0),
        sms_used,
        waves,
    }
}

/// Memory requests a warp keeps in flight at once (independent loads the compiler overlaps).
const REQUESTS_IN_FLIGHT: f64 = 4.0;
/// Cycles between two dependent instructions of one warp.
const DEPENDENT_ISSUE: f64 = 4.0;
/// Cycles a `__syncthreads` costs the block once every warp has arrived.
const BARRIER_CYCLES: f64 = 20.0;
/// A partial-sector write costs L2 this many whole-sector transfers (measured on an H100: the
/// naive transpose's scattered 4-byte stores run about four times slower than their bytes).
const PARTIAL_WRITE_COST: f64 = 4.0;
/// The limits add up a little where they overlap: the estimate is their 3-norm, so the largest
/// dominates but a second one close to it still shows (an offset copy moves the same DRAM bytes
/// as an aligned one, with more L2 traffic, and is a little slower).
const OVERLAP_NORM: f64 = 3.0;

/// The estimated time from the totals: each limit's time, the largest wins.
pub fn estimate(t: &Counts, o: &Occupancy, p: &GpuProfile, hottest_address: u64, blocks: u64) -> Estimate {
    let clock = p.clock_ghz * 1e9;
    let sms = o.sms_used as f64;
    let resident_warps = (o.achieved * p.max_warps_per_sm as f64).max(1.0);
    // DRAM: at the achievable share of peak, unless too few requests are in flight to cover the
    // latency (Little's law: bytes in flight = bandwidth x latency).
    let bytes_per_request =
        if t.global_requests == 0 { 128.0 } else { (t.l2_sectors * SECTOR) as f64 / t.global_requests as f64 };
    let in_flight = sms * resident_warps * REQUESTS_IN_FLIGHT * bytes_per_request.max(SECTOR as f64);
    let latency_s = p.dram_latency / clock;
    let dram_bw = (p.dram_gbs * 1e9 * p.dram_efficiency).min(in_flight / latency_s);
    let scale = sms / p.sms as f64;
    let dram = t.dram_bytes() as f64 / dram_bw;
    let l2_transfers = (t.l2_sectors - t.partial_store_sectors.min(t.l2_sectors)) as f64
        + t.partial_store_sectors as f64 * PARTIAL_WRITE_COST;
    let l2 = l2_transfers * SECTOR as f64 / (p.l2_gbs * 1e9 * scale.max(0.05));
    // L1: one 128-byte line (tag look-up) per cycle per SM.
    let l1 = t.lines as f64 / (sms * clock);
    let shared = t.wavefronts as f64 / (sms * clock);
    // Issue: four schedulers per SM, one warp instruction each per cycle; FP64 and special
    // functions take more of the SM's units; with few warps per scheduler dependent
    // instructions cannot be hidden.
    let weighted = t.slots as f64 / 4.0;
    let issue_eff = (resident_warps / 4.0 / 2.0).min(1.0);
    let issue = weighted / (sms * 4.0 * clock * issue_eff);
    let atomics = hottest_address as f64 * p.same_address_atomic_ns * 1e-9;
    // Latency: one block's critical path, once per wave: its warps' instructions back to back,
    // their memory accesses (a few in flight at a time) and barriers.
    let warps = (blocks * o.warps_per_block as u64).max(1) as f64;
    let loads = t.global_load_requests as f64 / warps;
    let hits_l1 = ratio(t.l1_hit_requests, t.global_load_requests.max(1)).min(1.0);
    let dram_share = ratio(t.dram_read / SECTOR, t.l2_sectors.max(1)).min(1.0);
    let load_latency =
        hits_l1 * p.l1_latency + (1.0 - hits_l1) * ((1.0 - dram_share) * p.l2_latency + dram_share * p.dram_latency);
    let atomic_latency = if t.atomic_requests > 0 { p.l2_latency * 2.0 } else { 0.0 };
    let per_warp = t.slots as f64 / 4.0 / warps * DEPENDENT_ISSUE
        + loads * load_latency / REQUESTS_IN_FLIGHT.min(loads.max(1.0))
        + t.barriers as f64 / warps * BARRIER_CYCLES
        + atomic_latency;
    let latency = o.waves as f64 * per_warp / clock;
    // Each SM starts (and retires) its blocks one after another: many tiny blocks cost more
    // than their work.
    let dispatch = blocks.div_ceil(p.sms as u64) as f64 * p.block_launch_ns * 1e-9;
    let mut terms = vec![
        (Limiter::Dram, dram * 1e6),
        (Limiter::L2, l2 * 1e6),
        (Limiter::L1, l1 * 1e6),
        (Limiter::Shared, shared * 1e6),
        (Limiter::Issue, issue * 1e6),
        (Limiter::Atomics, atomics * 1e6),
        (Limiter::Latency, latency * 1e6),
        (Limiter::Blocks, dispatch * 1e6),
    ];
    terms.sort_by(|a, b| b.1.total_cmp(&a.1));
    let limiter = terms[0].0;
    let work = terms.iter().map(|t| t.1.powf(OVERLAP_NORM)).sum::<f64>().powf(1.0 / OVERLAP_NORM);
    let (limiter, time_us) =
        if work < p.launch_us { (Limiter::Launch, p.launch_us + work) } else { (limiter, p.launch_us + work) };
    terms.push((Limiter::Launch, p.launch_us));
    Estimate { time_us, limiter, terms }
}

/// Bytes as `16.8 MB` (decimal, as bandwidths are quoted).
pub fn decimal_bytes(b: f64) -> String {
    match b {
        b if b >= 1e9 => format!("{:.2} GB", b / 1e9),
        b if b >= 1e6 => format!("{:.1} MB", b / 1e6),
        b if b >= 1e3 => format!("{:.1} kB", b / 1e3),
        b => format!("{b:.0} B"),
    }
}

/// Microseconds as `12.3 us` or `1.25 ms`.
pub fn format_us(us: f64) -> String {
    if us >= 1000.0 {
        format!("{:.3} ms", us / 1000.0)
    } else if us >= 10.0 {
        format!("{us:.1} us")
    } else {
        format!("{us:.2} us")
    }
}

impl CostReport {
    /// The share of the bytes moved by global sectors that the lanes asked for.
    pub fn sector_use(&self) -> f64 {
        ratio(self.totals.bytes_requested, self.totals.sectors * SECTOR).min(1.0)
    }

    /// One line on what limits the launch, with the figures behind it.
    pub fn explain(&self) -> String {
        let t = &self.totals;
        let p = self.profile;
        let o = &self.occupancy;
        let spr = t.sectors_per_request();
        let ideal = t.ideal_sectors_per_request();
        let coalescing = if t.global_load_requests + t.global_store_requests == 0 {
            String::new()
        } else if spr <= ideal * 1.05 {
            format!("; {:.0}% of each 32-byte sector used", 100.0 * self.sector_use())
        } else {
            format!("; {spr:.1} sectors per request where {ideal:.1} would do (uncoalesced)")
        };
        match self.estimate.limiter {
            Limiter::Dram => format!(
                "memory-bound: {} moved to and from DRAM at {:.2} TB/s{coalescing}",
                decimal_bytes(t.dram_bytes() as f64),
                p.dram_gbs * p.dram_efficiency / 1000.0
            ),
            Limiter::L2 => format!(
                "L2-bound: {} through L2 ({} from DRAM){coalescing}",
                decimal_bytes((t.l2_sectors * SECTOR) as f64),
                decimal_bytes(t.dram_bytes() as f64)
            ),
            Limiter::L1 => {
                format!("L1-bound: {} cache lines looked up by {} requests{coalescing}", t.lines, t.global_requests)
            }
            Limiter::Shared => format!(
                "shared-memory-bound: {} wavefronts for {} requests, {} of them bank conflicts",
                t.wavefronts,
                t.shared_requests,
                t.bank_conflicts()
            ),
            Limiter::Issue => format!(
                "compute-bound: {} warp instructions at 4 per SM per cycle; {:.0}% of lanes active",
                t.issued,
                100.0 * t.simt_efficiency()
            ),
            Limiter::Atomics => format!(
                "atomic-bound: {} atomics, up to {} on one address, which run one after another ({} ns each)",
                t.atomics, self.hottest_address, p.same_address_atomic_ns
            ),
            Limiter::Latency => format!(
                "latency-bound: {} block{} of {} warp{} ({:.0}% occupancy on {} of {} SMs) leave too little work in flight to hide memory and instruction latency",
                self.threads.div_ceil((o.warps_per_block * 32) as u64),
                if self.threads > (o.warps_per_block * 32) as u64 { "s" } else { "" },
                o.warps_per_block,
                if o.warps_per_block == 1 { "" } else { "s" },
                100.0 * o.achieved,
                o.sms_used,
                p.sms
            ),
            Limiter::Blocks => format!(
                "block-scheduling-bound: {} blocks of {} thread{}, {} per SM one after another; larger blocks (or a \
                 grid-stride loop) do the same work in fewer",
                thousands(self.threads.div_ceil((o.warps_per_block * 32) as u64) as u128),
                o.warps_per_block * 32,
                if o.warps_per_block * 32 == 1 { "" } else { "s" },
                thousands(self.threads.div_ceil((o.warps_per_block * 32) as u64).div_ceil(p.sms as u64) as u128),
            ),
            Limiter::Launch => format!("launch-bound: the work takes less than the {} us a launch costs", p.launch_us),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn l1_keeps_recent_sectors_and_evicts_the_least_recent() {
        let mut l1 = L1::new(4 * SECTOR);
        assert!(!l1.access(1));
        assert!(l1.access(1));
        for k in 2..=5 {
            l1.access(k);
        }
        assert!(!l1.access(1), "five sectors in a four-way set push the first out");
    }

    #[test]
    fn l2_charges_a_write_back_once_per_dirty_sector() {
        let mut l2 = L2::new(2 * SECTOR, 1 << 20);
        assert_eq!(l2.access(1, 0, true), (false, true));
        assert_eq!(l2.access(1, 0, true), (true, false));
        l2.access(1, 1, false);
        l2.access(1, 2, false);
        assert_eq!(l2.access(1, 0, false), (false, false), "evicted first in, first out");
    }
}
