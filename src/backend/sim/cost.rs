//! The cost model: what a launch would cost on a real GPU, counted during the ordinary simulated
//! launch (no second pass) and turned into an estimated time on a reference GPU.
//!
//! The engine calls [`Counter::issue`] for every warp instruction it executes (or
//! [`Counter::issue_run`] for a straight stretch of them) and
//! [`Counter::memory`] with the addresses of the active lanes of every memory instruction. From
//! them the counter keeps, per instruction and in total, what Nsight Compute would report:
//! global requests and the 32-byte sectors and 128-byte lines they touch, L1 hits (one small
//! cache per SM), L2 hits and DRAM traffic (an L2 the size of the reference GPU's), shared-memory
//! wavefronts and bank conflicts, atomics and how many land on one address, active lanes per
//! instruction (SIMT efficiency) and instructions by kind. [`estimate`] turns the totals into
//! time: the largest of the DRAM, L2, L1, shared-memory, issue, atomic and latency limits.
//! `docs/cost-model.md` gives the formulas and what the model leaves out.

use std::collections::{HashMap, VecDeque};

use crate::cost::{AtomicLoad, CostReport, Counts, GpuProfile, PlaceCost, estimate, occupancy};
use crate::cuda::ast::{BinaryOp, MathFn, Scalar};

use super::compile::{Kernel, Op, StaticKind};
use super::memory::{self, STATIC_REGION_BASE};

const WARP: usize = crate::cost::WARP;
const SECTOR: u64 = crate::cost::SECTOR;
/// Atomics on distinct addresses tracked for same-address serialisation; past this many the
/// busiest so far is kept (a scatter over millions of addresses has no hot address anyway).
const MAX_ATOMIC_ADDRESSES: usize = 1 << 20;

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
    /// Indexed by region id (a hash lookup per sector cost more than the rest of the model).
    regions: Vec<RegionBits>,
    order: VecDeque<(u32, u32)>,
}

impl L2 {
    fn new(bytes: u64, data: u64) -> L2 {
        L2 { warm: data <= bytes, capacity: (bytes / SECTOR) as usize, regions: Vec::new(), order: VecDeque::new() }
    }

    /// Look up a sector; `(hit, newly_dirty)`. Loads that miss are charged a DRAM read by the
    /// caller; a sector written for the first time while resident is charged one write back.
    fn access(&mut self, region: u32, sector: u32, write: bool) -> (bool, bool) {
        let ri = region as usize;
        if self.regions.len() <= ri {
            self.regions.resize_with(ri + 1, RegionBits::default);
        }
        let r = &mut self.regions[ri];
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
            && let Some(r) = self.regions.get_mut(reg as usize)
        {
            set_bit(&mut r.resident, sec as usize, false);
            set_bit(&mut r.dirty, sec as usize, false);
        }
        (hit, newly_dirty)
    }
}

/// The sectors (`SECTOR` bytes) that `size`-byte accesses at `addrs` touch, in lane order,
/// into the front of `sectors` (room for two a lane); how many. With `repeats` off, a sector
/// the entry before already holds is left out (only stores count the lanes in a sector).
#[inline(always)]
fn sector_list(addrs: &[u64], size: u32, repeats: bool, sectors: &mut [u64]) -> usize {
    let mut n = 0;
    let last_byte = size.max(1) as u64 - 1;
    // Aligned accesses of at most a sector (every lane's address a multiple of a
    // power-of-two size) cross no sector: one OR over the lanes tells.
    let mut any = 0u64;
    for &a in addrs {
        any |= a;
    }
    let aligned = size.is_power_of_two() && u64::from(size) <= SECTOR && any & last_byte == 0;
    let mut straddles = false;
    if !aligned {
        for &a in addrs {
            straddles |= (a % SECTOR) + last_byte >= SECTOR;
        }
    }
    if !straddles && addrs.len() <= WARP {
        // No lane's access crosses a sector (every aligned access): one sector a lane, or
        // (but for stores) only the lanes whose sector is not the lane before's.
        if repeats {
            for (s, &a) in sectors.iter_mut().zip(addrs) {
                *s = a / SECTOR;
            }
            n = addrs.len();
        } else {
            // Two lanes share a sector when their addresses agree above the sector's bits.
            // Compared on the addresses, not on sectors just stored: reading those back one
            // lane over defeats the processor's store forwarding, at a stall a vector.
            let mut keep = sector_starts(addrs);
            while keep != 0 {
                sectors[n] = addrs[keep.trailing_zeros() as usize] / SECTOR;
                n += 1;
                keep &= keep - 1;
            }
        }
    } else {
        for &a in addrs {
            let lo = a / SECTOR;
            let hi = (a + last_byte) / SECTOR;
            if !repeats && hi == lo && n > 0 && sectors[n - 1] == lo {
                continue;
            }
            if n < sectors.len() {
                sectors[n] = lo;
                n += 1;
            }
            if hi != lo && n < sectors.len() {
                sectors[n] = hi;
                n += 1;
            }
        }
    }
    n
}

/// Append `head` (if any) and `words` (a warp's few sectors) to `v`: word by word, since a copy
/// of a length known only at run time is a call to `memmove`, which showed in profiles.
#[inline(always)]
fn push_words(v: &mut Vec<u64>, head: Option<u64>, words: &[u64]) {
    v.reserve(1 + words.len());
    if let Some(h) = head {
        v.push(h);
    }
    for &w in words {
        v.push(w);
    }
}

/// Sort a warp's sectors in place: by insertion, inline, for the few an access usually
/// touches (most often already in order: one compare each); the library's sort past eight.
#[inline(always)]
fn sort_sectors(list: &mut [u64]) {
    if list.len() > 8 {
        if !list.is_sorted() {
            list.sort_unstable();
        }
        return;
    }
    for i in 1..list.len() {
        let x = list[i];
        let mut j = i;
        while j > 0 && list[j - 1] > x {
            list[j] = list[j - 1];
            j -= 1;
        }
        list[j] = x;
    }
}

/// The lanes of `addrs` (at most a warp's) whose sector is not the lane before's, as a mask
/// (the first lane's always: it has none before).
#[inline(always)]
fn sector_starts(addrs: &[u64]) -> u32 {
    #[cfg(target_arch = "x86_64")]
    if let Ok(warp) = <&[u64; WARP]>::try_from(addrs)
        && std::is_x86_feature_detected!("avx2")
    {
        // SAFETY: the processor has AVX2, checked just above.
        return unsafe { sector_starts_avx2(warp) };
    }
    let mut keep = u32::from(!addrs.is_empty());
    for i in 1..addrs.len() {
        keep |= u32::from((addrs[i] ^ addrs[i - 1]) >= SECTOR) << i;
    }
    keep
}

/// [`sector_starts`] of a whole warp, four lanes to an instruction: each lane's address against
/// the lane before's (loaded one lane over), the sector bits of their difference tested for zero.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn sector_starts_avx2(addrs: &[u64; WARP]) -> u32 {
    use std::arch::x86_64::*;
    const { assert!(SECTOR == 32 && WARP == 32) };
    let p = addrs.as_ptr();
    let zero = _mm256_setzero_si256();
    let mut keep = 1u32;
    for c in 0..WARP / 4 {
        // SAFETY: lanes `4c - 1 .. 4c + 4` are in the array (the first group takes lane 0 as
        // its own predecessor, which never counts: lane 0 is kept anyway).
        let (cur, prev) = unsafe {
            let cur = _mm256_loadu_si256(p.add(4 * c).cast());
            let prev = if c == 0 {
                _mm256_permute4x64_epi64::<0b10_01_00_00>(cur)
            } else {
                _mm256_loadu_si256(p.add(4 * c - 1).cast())
            };
            (cur, prev)
        };
        let same = _mm256_cmpeq_epi64(_mm256_srli_epi64::<5>(_mm256_xor_si256(cur, prev)), zero);
        let changed = !_mm256_movemask_pd(_mm256_castsi256_pd(same)) as u32 & 0xf;
        keep |= changed << (4 * c);
    }
    keep
}

/// One SM's L1 for global loads: 4-way set-associative over sectors, least recently used out.
pub struct L1 {
    sets: Vec<[u64; 4]>,
}

impl L1 {
    pub fn new(bytes: u64) -> L1 {
        let sets = ((bytes / SECTOR / 4) as usize).next_power_of_two().max(1);
        L1 { sets: vec![[u64::MAX; 4]; sets] }
    }

    /// Look `key` up: whether it hit. The set's ways are kept most recent first; a hit moves
    /// its way to the front, a miss puts the key there and drops the last. Written out way by
    /// way (the most recent first: a warp's next load usually finds its sector there) rather
    /// than as a search and a call to rotate the slice.
    #[inline(always)]
    pub fn access(&mut self, key: u64) -> bool {
        let n = self.sets.len();
        let set = &mut self.sets[((key ^ (key >> 13)) as usize) & (n - 1)];
        let [a, b, c, d] = *set;
        if a == key {
            return true;
        }
        let (order, hit) = if b == key {
            ([b, a, c, d], true)
        } else if c == key {
            ([c, a, b, d], true)
        } else if d == key {
            ([d, a, b, c], true)
        } else {
            ([key, a, b, c], false)
        };
        *set = order;
        hit
    }
}

/// How the L2 sees an atomic instruction's lanes.
#[derive(Clone, Copy, Default)]
struct AtomicKind {
    /// Floating-point atomics on one address take longer than integer ones.
    float: bool,
    /// The compiler combines the warp's lanes and sends one atomic
    /// ([`super::compile::CostHints`]).
    aggregated: bool,
}

fn atomic_kinds(k: &Kernel) -> Vec<AtomicKind> {
    k.code
        .iter()
        .enumerate()
        .map(|(pc, op)| match op {
            Op::Atomic { ty, .. } => AtomicKind {
                float: matches!(ty, Scalar::F32 | Scalar::F64),
                aggregated: k.hints.warp_aggregated.binary_search(&(pc as u32)).is_ok(),
            },
            _ => AtomicKind::default(),
        })
        .collect()
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
            | MathFn::Rint
            | MathFn::Trunc
            | MathFn::Copysign
            | MathFn::Fma => scalar_kind(*ty),
            _ => Kind::Special,
        },
        Op::Cvt { .. }
        | Op::AddIn { .. }
        | Op::PtrAdd { .. }
        | Op::PtrAddIn { .. }
        | Op::PtrDiff { .. }
        | Op::Imm { .. }
        | Op::Mov { .. } => Kind::Int,
        _ => Kind::Other,
    }
}

/// Issue slots (in quarters) a GPU spends on instruction `pc` of `k`. The simulator
/// compiles straightforwardly: every constant, copy, jump and index multiplication is an
/// instruction. An optimising compiler folds constants and copies away, strength-reduces index
/// arithmetic in loops, fuses a multiply and an add into one FMA and unrolls short loops, so
/// those count for less; memory, shuffle and barrier instructions count in full, 64-bit integer
/// arithmetic for the two or three 32-bit instructions it becomes, special functions for what
/// their units' rate (16 lanes per cycle per SM against 128) costs, full-precision math
/// routines (`sinf`, not `__sinf`) and integer division by a run-time value for the instructions
/// they run, and FP64 for the GPU's FP64 rate. The integer, 64-bit and math weights were
/// measured by `bench/cost/calibrate`.
pub fn issue_weight(k: &Kernel, pc: usize, p: &GpuProfile) -> u32 {
    let fp64 = (0.5 / p.fp64_ratio).max(1.0);
    let hinted = |pcs: &[u32]| pcs.binary_search(&(pc as u32)).is_ok();
    let op = &k.code[pc];
    match op {
        Op::Imm { .. } | Op::Mov { .. } | Op::Jump { .. } | Op::Exit => 0,
        Op::PtrAdd { .. } | Op::PtrAddIn { .. } | Op::PtrDiff { .. } | Op::Branch { .. } => 1,
        Op::Cvt { .. } => 2,
        Op::Bin { op: BinaryOp::Div | BinaryOp::Rem, ty, .. } if !matches!(ty, Scalar::F32 | Scalar::F64) => {
            division_quarters(*ty, k.divides_by_constant(pc as u32))
        }
        Op::Math { f, ty, .. } if kind_of(op) == Kind::Special => {
            let quarters = if hinted(&k.hints.accurate_math) { accurate_math_quarters(*f) } else { 32 };
            if *ty == Scalar::F64 { (quarters as f64 * 2.0 * fp64).round() as u32 } else { quarters }
        }
        _ => match kind_of(op) {
            Kind::Int if is_64_bit(op) => 5,
            Kind::Int => 2,
            Kind::F32 => 2,
            Kind::F64 => (2.0 * fp64).round() as u32,
            Kind::Special => 32,
            Kind::Other => 4,
        },
    }
}

/// Issue quarters of a full-precision math routine in float. Measured on an H100 against the
/// fast intrinsic (32: one special-function instruction): `sinf` 3.9x, `logf` 3.4x, `sqrtf`
/// 1.6x, `expf` 1.2x; the others by their kinship with those (inverse trigonometric and
/// hyperbolic functions run polynomials like `sinf`, `powf` is a `logf` and an `expf`).
fn accurate_math_quarters(f: MathFn) -> u32 {
    match f {
        MathFn::Sin | MathFn::Cos | MathFn::Tan => 124,
        MathFn::Log | MathFn::Log2 | MathFn::Log10 | MathFn::Log1p => 108,
        MathFn::Exp | MathFn::Exp2 | MathFn::Expm1 => 40,
        MathFn::Sqrt | MathFn::Cbrt | MathFn::Hypot => 52,
        MathFn::Rsqrt => 32,
        MathFn::Pow | MathFn::Tgamma | MathFn::Lgamma => 150,
        MathFn::Asin | MathFn::Acos | MathFn::Atan | MathFn::Atan2 => 100,
        _ => 64,
    }
}

/// Issue quarters of a 64-bit division by a run-time value whose operands do not fit 32 bits:
/// a routine of about seventy instructions.
const WIDE_DIVISION_QUARTERS: u32 = 280;

/// Issue quarters of a 64-bit division by a run-time value whose operands both fit 32 bits
/// (non-negative and below 2^32): NVVM, and so nvcc and Numba, test for that first and run the
/// 32-bit routine (LLVM's slow-division bypass), as Numba's 64-bit `i // cols` always does for
/// an index. The engine adds the difference for a warp with any lane that does not fit
/// (`Counter::wide_division`), since only the run shows which.
const NARROW_WIDE_DIVISION_QUARTERS: u32 = 88;

/// Issue quarters of an integer division or remainder. By a constant the compiler multiplies
/// and shifts (a few instructions); by a value known only at run time it runs a routine of about
/// twenty (a reciprocal estimate and its correction), and in 64 bits the same after a test that
/// both operands fit 32 bits (several times that when they do not, see `wide_division`).
fn division_quarters(ty: Scalar, constant_divisor: bool) -> u32 {
    let wide = matches!(ty, Scalar::I64 | Scalar::U64);
    match (constant_divisor, wide) {
        (true, false) => 12,
        (true, true) => 24,
        (false, false) => 80,
        (false, true) => NARROW_WIDE_DIVISION_QUARTERS,
    }
}

/// Whether an integer instruction works on 64-bit values.
fn is_64_bit(op: &Op) -> bool {
    match op {
        Op::Bin { ty, .. } | Op::Un { ty, .. } | Op::Min { ty, .. } | Op::Max { ty, .. } | Op::Abs { ty, .. } => {
            matches!(ty, Scalar::I64 | Scalar::U64)
        }
        // Only made for a 64-bit index (`Compiler::row_major_index`).
        Op::AddIn { .. } => true,
        _ => false,
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
    /// Per instruction, for atomics: how the L2 sees them.
    atomic_kinds: Vec<AtomicKind>,
    /// Per address: atomics (lanes) and their time one after another, nanoseconds.
    atomic_addresses: HashMap<u64, (u64, f64)>,
    /// Per L2 atomic unit: sector operations and their time, nanoseconds.
    atomic_units: Vec<(u64, f64)>,
    block_threads: u32,
    /// On a worker thread (see `engine/parallel.rs`): what depends on the order of global
    /// accesses (the caches, atomics' addresses) is recorded here, stamped with
    /// [`Counter::stamp`], for the launch to count in its own order; the rest is counted as usual.
    pub deferred: Option<Deferred>,
    pub stamp: u64,
    /// A global access's sectors, sorted and made distinct in place: kept from one access to
    /// the next (never empty but while in use), so that an access zeroes no array of its own.
    sectors: Vec<u64>,
    /// The last block asked for its SM, and that SM.
    sm_block: (u64, usize),
    /// Issues and lanes of [`Counter::issue_run`]'s stretches, as differences: one more entry
    /// than instructions.
    runs: Vec<(u64, u64)>,
    /// Loads' L1 lookups not made yet ([`Counter::pend`]), per SM: per load a head (pc, sector
    /// count) and its distinct sectors.
    pending: Vec<Vec<u64>>,
    /// The words in `pending`, all SMs together.
    pending_words: usize,
    /// Emptied logs of `pending`, kept for their room (see [`Counter::flush_pending`]).
    spare: Vec<Vec<u64>>,
}

/// Words of pending L1 lookups that make the counter make them (2 MiB).
const PENDING: usize = 1 << 18;

/// A warp's loads run ahead of its turn whose L1 lookups wait for their steps to count (see
/// [`Counter::load_ahead`]): per load a head (its step past the turn, pc and sector count)
/// and its distinct sectors.
#[derive(Default)]
pub struct Held {
    data: Vec<u64>,
    /// Where the first load not yet counted starts.
    next: usize,
}

impl Held {
    /// Forget what is held (a warp starting anew).
    pub fn clear(&mut self) {
        self.data.clear();
        self.next = 0;
    }
}

/// Global accesses a worker's counter left for the launch's (see [`Counter::deferred`]).
#[derive(Default)]
pub struct Deferred {
    /// (stamp, pc, block, kind, where its distinct sectors and then its atomic addresses start
    /// in `data`, how many sectors, how many addresses).
    pub events: Vec<(u64, u32, u64, MemOp, u32, u8, u8)>,
    /// Loads, when the launch's data fits the L2 ([`Counter::loads_need_only_l1`]): (stamp,
    /// pc, where its distinct sectors start in `data`, how many).
    pub loads: Vec<(u64, u32, u32, u8)>,
    pub data: Vec<u64>,
}

/// What the L1 lookups of global loads add to an instruction's counts, when they are made
/// apart from the rest of the counter ([`Counter::loads_need_only_l1`]).
#[derive(Clone, Copy, Default)]
pub struct L1Counts {
    /// Loads all of whose sectors hit.
    pub hit_requests: u64,
    pub hits: u64,
    /// Sectors that went on to the L2 (where they hit: the data fits).
    pub misses: u64,
}

impl L1Counts {
    /// One load's distinct `sectors` through the SM's `l1`, as [`Counter::caches`] counts it.
    #[inline]
    pub fn load(&mut self, l1: &mut L1, sectors: &[u64]) {
        let mut hits = 0;
        for &s in sectors {
            hits += u64::from(l1.access(s));
        }
        self.hit_requests += u64::from(hits == sectors.len() as u64);
        self.hits += hits;
        self.misses += sectors.len() as u64 - hits;
    }

    /// Add another worker's counts for the same instruction.
    pub fn add(&mut self, other: &L1Counts) {
        self.hit_requests += other.hit_requests;
        self.hits += other.hits;
        self.misses += other.misses;
    }
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
        let occ = occupancy(estimated_registers(k), profile, block_threads, shared_per_block, 1);
        // What is left of the SM's L1/shared storage for caching once its blocks' shared memory is
        // carved out (never below the smallest carve-out the hardware offers).
        let shared_used = shared_per_block * occ.blocks_per_sm as u64;
        let l1_bytes = (profile.l1_shared_bytes as u64).saturating_sub(shared_used).max(28 << 10);
        Counter {
            profile,
            per_pc: vec![Counts::default(); k.code.len()],
            kinds: k.code.iter().map(kind_of).collect(),
            weights: (0..k.code.len()).map(|pc| issue_weight(k, pc, profile)).collect(),
            statics,
            l2: L2::new(profile.l2_bytes, data_bytes),
            l1: Vec::new(),
            l1_bytes,
            atomic_kinds: atomic_kinds(k),
            atomic_addresses: HashMap::new(),
            atomic_units: vec![(0, 0.0); profile.atomic_units as usize],
            block_threads,
            deferred: None,
            stamp: 0,
            sectors: vec![0; 2 * WARP],
            sm_block: (0, 0),
            runs: vec![(0, 0); k.code.len() + 1],
            pending: Vec::new(),
            pending_words: 0,
            spare: Vec::new(),
        }
    }

    /// A counter like this one, counting from nothing, that leaves what depends on order in
    /// [`Counter::deferred`] (a worker's).
    pub fn deferring(&self) -> Counter {
        Counter {
            profile: self.profile,
            per_pc: vec![Counts::default(); self.per_pc.len()],
            kinds: self.kinds.clone(),
            weights: self.weights.clone(),
            statics: self.statics.clone(),
            l2: L2 { warm: self.l2.warm, capacity: self.l2.capacity, regions: Vec::new(), order: VecDeque::new() },
            l1: Vec::new(),
            l1_bytes: self.l1_bytes,
            atomic_kinds: self.atomic_kinds.clone(),
            atomic_addresses: HashMap::new(),
            atomic_units: vec![(0, 0.0); self.atomic_units.len()],
            block_threads: self.block_threads,
            deferred: Some(Deferred::default()),
            stamp: 0,
            sectors: vec![0; 2 * WARP],
            sm_block: (0, 0),
            runs: vec![(0, 0); self.runs.len()],
            pending: Vec::new(),
            pending_words: 0,
            spare: Vec::new(),
        }
    }

    /// Whether a global load's cost past the counts the instruction alone decides is its SM's
    /// L1 lookups and nothing else: every buffer of the launch fits the L2 and is resident
    /// from the start (loads change nothing there). Then a worker's counter leaves loads in
    /// [`Deferred::loads`], and each SM's lookups, in the launch's order, need only that SM's
    /// loads: they run on the workers, SM by SM, and add [`L1Counts`].
    pub fn loads_need_only_l1(&self) -> bool {
        self.l2.warm
    }

    /// The SM that runs block `block`, and the size of its L1 (see [`Counter::caches`]).
    pub fn sm_of(&self, block: u64) -> (usize, u64) {
        ((block % self.profile.sms as u64) as usize, self.l1_bytes)
    }

    /// The SMs of the reference GPU.
    pub fn sms(&self) -> usize {
        self.profile.sms as usize
    }

    /// Add the counts of loads' L1 lookups made apart, per instruction.
    pub fn add_l1_counts(&mut self, counts: &[L1Counts]) {
        for (c, o) in self.per_pc.iter_mut().zip(counts) {
            c.l1_hit_requests += o.hit_requests;
            c.l1_hits += o.hits;
            c.l2_hits += o.misses;
            c.l2_sectors += o.misses;
        }
    }

    /// The counts so far, leaving zeros (a worker's, one block at a time).
    pub fn take_counts(&mut self) -> Vec<Counts> {
        self.fold_runs();
        let n = self.per_pc.len();
        std::mem::replace(&mut self.per_pc, vec![Counts::default(); n])
    }

    /// Add counts a worker took (sums: their order does not matter).
    pub fn add_counts(&mut self, counts: &[Counts]) {
        for (c, o) in self.per_pc.iter_mut().zip(counts) {
            c.add(o);
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
    pub fn issue(&mut self, pc: u32, mask: u32) {
        // What follows from the instruction alone (its issue slots, kind, whether it is a
        // barrier) is counted once per instruction when the launch ends (`settle`): here only
        // what changes from one issue to the next.
        let c = &mut self.per_pc[pc as usize];
        c.issued += 1;
        c.lanes += mask.count_ones() as u64;
    }

    /// A 64-bit division or remainder at `pc` whose warp had a lane with an operand that does
    /// not fit 32 bits: the long routine instead of the 32-bit one `issue_weight` counts.
    pub fn wide_division(&mut self, pc: u32) {
        self.per_pc[pc as usize].slots += (WIDE_DIVISION_QUARTERS - NARROW_WIDE_DIVISION_QUARTERS) as u64;
    }

    /// One issue each of the instructions `lo..hi`, run one after another by the lanes in
    /// `mask`: counted at the stretch's two ends (a difference array, summed by
    /// `fold_runs`), so that a long run of register-only steps costs two updates, not two a step.
    #[inline(always)]
    pub fn issue_run(&mut self, lo: u32, hi: u32, mask: u32) {
        let lanes = u64::from(mask.count_ones());
        let (lo, hi) = (lo as usize, hi as usize);
        self.runs[lo].0 = self.runs[lo].0.wrapping_add(1);
        self.runs[lo].1 = self.runs[lo].1.wrapping_add(lanes);
        self.runs[hi].0 = self.runs[hi].0.wrapping_sub(1);
        self.runs[hi].1 = self.runs[hi].1.wrapping_sub(lanes);
    }

    /// Add the issues of [`Counter::issue_run`] to the counts, leaving zeros.
    fn fold_runs(&mut self) {
        self.flush_pending();
        let (mut issued, mut lanes) = (0u64, 0u64);
        for (c, r) in self.per_pc.iter_mut().zip(self.runs.iter_mut()) {
            issued = issued.wrapping_add(r.0);
            lanes = lanes.wrapping_add(r.1);
            c.issued += issued;
            c.lanes += lanes;
            *r = (0, 0);
        }
        if let Some(r) = self.runs.last_mut() {
            *r = (0, 0);
        }
    }

    /// Fill in the counts that follow from each instruction's issues alone (see `issue`).
    fn settle(&mut self, code: &[Op]) {
        self.fold_runs();
        for (pc, c) in self.per_pc.iter_mut().enumerate() {
            let n = c.issued;
            c.slots += n * self.weights[pc] as u64;
            match self.kinds[pc] {
                Kind::Int => c.int_ops += n,
                Kind::F32 => c.f32_ops += n,
                Kind::F64 => c.f64_ops += n,
                Kind::Special => c.special_ops += n,
                Kind::Other => {}
            }
            if matches!(code.get(pc), Some(Op::SyncThreads | Op::SyncThreadsReduce { .. })) {
                c.barriers += n;
            }
        }
    }

    /// One warp-level memory instruction at `pc` of the block `block`: the active lanes'
    /// addresses (`addrs`, in lane order) of `size` bytes each.
    pub fn memory(&mut self, pc: u32, block: u64, op: MemOp, addrs: &[u64], size: u32) {
        #[cfg(target_arch = "x86_64")]
        if std::is_x86_feature_detected!("avx2") {
            // SAFETY: the processor has AVX2, checked just above.
            return unsafe { self.memory_avx2(pc, block, op, addrs, size, None) };
        }
        self.memory_in(pc, block, op, addrs, size, None)
    }

    /// A global load at `pc` that runs ahead of its warp's turn (`engine.rs`, `run_pure`), as
    /// its `idx`th step past the turn: counted as [`Counter::memory`] counts it but for its L1
    /// lookups, which wait in `held` for [`Counter::count_held`] to make them when the step
    /// counts, in the launch's order. Only while [`Counter::loads_need_only_l1`] (the caller
    /// checks): then nothing else a load does depends on the accesses before it.
    pub fn load_ahead(&mut self, pc: u32, addrs: &[u64], size: u32, held: &mut Held, idx: u32) {
        #[cfg(target_arch = "x86_64")]
        if std::is_x86_feature_detected!("avx2") {
            // SAFETY: the processor has AVX2, checked just above.
            return unsafe { self.memory_avx2(pc, 0, MemOp::Load, addrs, size, Some((held, idx))) };
        }
        self.memory_in(pc, 0, MemOp::Load, addrs, size, Some((held, idx)))
    }

    /// The L1 lookups of the loads in `held` among a warp's first `steps` steps past its turn,
    /// made now, on the SM of block `block`; the rest stay held.
    /// Inlined: the engine calls it at every turn of a warp that ran ahead, mostly for a load
    /// or two.
    #[inline]
    pub fn count_held(&mut self, held: &mut Held, steps: u64, block: u64) {
        let sm = self.sm(block);
        // A held load is already a pending one (its step, above the head's bits that
        // `flush_pending` reads, is all that differs): the loads due go over in one copy.
        let start = held.next;
        while let Some(&head) = held.data.get(held.next)
            && head >> 40 < steps
        {
            held.next += 1 + (head & 0xff) as usize;
        }
        if held.next > start {
            self.pend_loads(sm, &held.data[start..held.next]);
        }
        if held.next == held.data.len() {
            held.data.clear();
            held.next = 0;
        }
    }

    /// A load's L1 lookups on SM `sm`, left for [`Counter::flush_pending`] (only while
    /// [`Counter::loads_need_only_l1`]: then they add to the counts the same whenever they
    /// are made, as long as each SM's come in the launch's order). Each SM's wait in a log of
    /// their own, so that making them needs no sort and reads each log straight through.
    #[inline(always)]
    fn pend(&mut self, pc: u32, sm: usize, sectors: &[u64]) {
        push_words(self.log_of(sm), Some(u64::from(pc) << 8 | sectors.len() as u64), sectors);
        self.pending_words += 1 + sectors.len();
        if self.pending_words >= PENDING {
            self.flush_pending();
        }
    }

    /// Loads' L1 lookups on SM `sm` as [`Counter::pend`] leaves them, several at once: each a
    /// head (the pc in bits 8 to 40, the sector count in the low 8) and its sectors.
    #[inline(always)]
    fn pend_loads(&mut self, sm: usize, loads: &[u64]) {
        self.log_of(sm).extend_from_slice(loads);
        self.pending_words += loads.len();
        if self.pending_words >= PENDING {
            self.flush_pending();
        }
    }

    /// SM `sm`'s log of pending lookups, given a spare one's room if it has none.
    #[inline(always)]
    fn log_of(&mut self, sm: usize) -> &mut Vec<u64> {
        if self.pending.len() <= sm {
            self.pending.resize_with(sm + 1, Vec::new);
        }
        let log = &mut self.pending[sm];
        if log.capacity() == 0
            && let Some(spare) = self.spare.pop()
        {
            *log = spare;
        }
        log
    }

    /// Make the pending L1 lookups, one SM after another (each SM's in the order they came):
    /// one SM's table then stays in the host's caches for all of its lookups, where the
    /// launch's order would take the tables of every resident block's SM in turn.
    fn flush_pending(&mut self) {
        if self.pending_words == 0 {
            return;
        }
        // Logs emptied go to `spare`, for the SMs of the blocks to come, as long as their room
        // comes to at most `PENDING` words; the rest is freed.
        let mut room = PENDING - self.spare.iter().map(Vec::capacity).sum::<usize>().min(PENDING);
        for (sm, log) in self.pending.iter_mut().enumerate() {
            if log.is_empty() {
                continue;
            }
            let l1 = Self::l1_of(&mut self.l1, sm, self.l1_bytes);
            let mut at = 0;
            while let Some(&head) = log.get(at) {
                let (pc, n) = ((head >> 8) as u32 as usize, (head & 0xff) as usize);
                let mut hits = 0;
                for &s in &log[at + 1..at + 1 + n] {
                    hits += u64::from(l1.access(s));
                }
                at += 1 + n;
                let c = &mut self.per_pc[pc];
                c.l1_hit_requests += u64::from(hits == n as u64);
                c.l1_hits += hits;
                c.l2_hits += n as u64 - hits;
                c.l2_sectors += n as u64 - hits;
            }
            log.clear();
            let log = std::mem::take(log);
            if log.capacity() <= room {
                room -= log.capacity();
                self.spare.push(log);
            }
        }
        self.pending_words = 0;
    }

    /// The SM that runs block `block`, remembered from the last call (a division per access
    /// showed in profiles).
    #[inline(always)]
    fn sm(&mut self, block: u64) -> usize {
        if block != self.sm_block.0 {
            self.sm_block = (block, (block % self.profile.sms as u64) as usize);
        }
        self.sm_block.1
    }

    /// SM `sm`'s L1 of the `l1s`, of `bytes` made on its first load.
    #[inline(always)]
    fn l1_of(l1s: &mut Vec<Option<L1>>, sm: usize, bytes: u64) -> &mut L1 {
        if l1s.len() <= sm {
            l1s.resize_with(sm + 1, || None);
        }
        l1s[sm].get_or_insert_with(|| L1::new(bytes))
    }

    /// [`Counter::memory`] compiled for AVX2, as the engine's loops are (`engine.rs`,
    /// `run_pure_avx2`): the per-lane loops over 64-bit addresses (sectors, their changes from
    /// lane to lane) then compare four lanes to an instruction, which plain x86-64 cannot.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    fn memory_avx2(
        &mut self,
        pc: u32,
        block: u64,
        op: MemOp,
        addrs: &[u64],
        size: u32,
        hold: Option<(&mut Held, u32)>,
    ) {
        self.memory_in(pc, block, op, addrs, size, hold)
    }

    #[inline(always)]
    fn memory_in(&mut self, pc: u32, block: u64, op: MemOp, addrs: &[u64], size: u32, hold: Option<(&mut Held, u32)>) {
        let Some(&first) = addrs.first() else { return };
        match self.space(first) {
            Space::Global => self.global(pc, block, op, addrs, size, hold),
            Space::Shared => self.shared(pc, op, addrs, size),
            Space::Local | Space::Constant => {}
        }
    }

    #[inline(always)]
    fn global(&mut self, pc: u32, block: u64, op: MemOp, addrs: &[u64], size: u32, hold: Option<(&mut Held, u32)>) {
        let mut sectors = std::mem::take(&mut self.sectors);
        if sectors.len() < 2 * WARP {
            sectors.resize(2 * WARP, 0);
        }
        // Only stores count the lanes in a sector; for the rest, a sector repeated by the lane
        // before is dropped, which leaves a short list to sort (a broadcast is one entry).
        let n = sector_list(addrs, size, op == MemOp::Store, &mut sectors);
        let list = &mut sectors[..n];
        sort_sectors(list);
        // The distinct sectors, moved to the front of the list in place (the `i`th is read
        // before anything is written at or past it).
        let mut distinct = 0usize;
        let mut lines = 0u64;
        let (mut last, mut last_line) = (u64::MAX, u64::MAX);
        let mut partial = 0u64;
        for i in 0..n {
            let s = list[i];
            if s == last {
                continue;
            }
            if op == MemOp::Store {
                let lanes_here = list[i..].iter().take_while(|&&x| x == s).count() as u64;
                if lanes_here * (size as u64) < SECTOR {
                    partial += 1;
                }
            }
            last = s;
            list[distinct] = s;
            distinct += 1;
            if s / 4 != last_line {
                last_line = s / 4;
                lines += 1;
            }
        }
        let lanes = addrs.len() as u64;
        let c = &mut self.per_pc[pc as usize];
        c.global_requests += 1;
        c.sectors += distinct as u64;
        match op {
            MemOp::Load => {
                c.global_load_requests += 1;
                c.load_sectors += distinct as u64;
            }
            MemOp::Store => {
                c.global_store_requests += 1;
                c.store_sectors += distinct as u64;
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
        let uniq = &list[..distinct];
        let atomic = if op == MemOp::Atomic { addrs } else { &[] };
        if let Some((held, idx)) = hold {
            push_words(&mut held.data, Some(u64::from(idx) << 40 | u64::from(pc) << 8 | uniq.len() as u64), uniq);
            self.sectors = sectors;
            return;
        }
        if op == MemOp::Load && self.l2.warm && self.deferred.is_none() {
            let sm = self.sm(block);
            self.pend(pc, sm, uniq);
            self.sectors = sectors;
            return;
        }
        if let Some(d) = self.deferred.as_mut() {
            if op == MemOp::Load && self.l2.warm {
                // Past its SM's L1 a load only hits in L2: its L1 lookups are all that depends
                // on order, and the launch makes them apart (`engine/parallel.rs`).
                d.loads.push((self.stamp, pc, d.data.len() as u32, uniq.len() as u8));
                push_words(&mut d.data, None, uniq);
                self.sectors = sectors;
                return;
            }
            d.events.push((self.stamp, pc, block, op, d.data.len() as u32, uniq.len() as u8, atomic.len() as u8));
            d.data.extend_from_slice(uniq);
            d.data.extend_from_slice(atomic);
        } else {
            self.caches(pc, block, op, uniq, atomic);
        }
        self.sectors = sectors;
    }

    /// The part of a global access that depends on the accesses before it: the SM's L1 and the
    /// L2 for its distinct `sectors` (sorted), and an atomic's `addrs`.
    #[inline(always)]
    pub fn caches(&mut self, pc: u32, block: u64, op: MemOp, sectors: &[u64], addrs: &[u64]) {
        let sm = self.sm(block);
        let mut l1_hits = 0;
        let mut l2_hits = 0;
        let mut l2_sectors = 0;
        let (mut dram_read, mut dram_write) = (0, 0);
        // Loads look in the SM's L1 first; stores and atomics go to L2 (L1 is write-through).
        let mut l1 = None;
        if op == MemOp::Load {
            l1 = Some(Self::l1_of(&mut self.l1, sm, self.l1_bytes));
        }
        for &s in sectors {
            if let Some(l1) = l1.as_deref_mut()
                && l1.access(s)
            {
                l1_hits += 1;
                continue;
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
        let c = &mut self.per_pc[pc as usize];
        if op == MemOp::Load {
            c.l1_hit_requests += u64::from(l1_hits == sectors.len() as u64);
        }
        c.l1_hits += l1_hits;
        c.l2_hits += l2_hits;
        c.l2_sectors += l2_sectors;
        c.dram_read += dram_read;
        c.dram_write += dram_write;
        if op == MemOp::Atomic {
            self.atomics(pc, addrs);
        }
    }

    /// A warp's global atomic at `pc` on `addrs` (one per active lane), as the L2 serves it:
    /// a warp-aggregated atomic arrives as one; lanes on one address run one after another at
    /// the address's rate (integer or floating-point); each 32-byte sector the request touches
    /// is one operation of the atomic unit of its L2 slice, which takes the unit's time plus
    /// the extra rounds its most contended address needs.
    fn atomics(&mut self, pc: u32, addrs: &[u64]) {
        let p = self.profile;
        let kind = self.atomic_kinds.get(pc as usize).copied().unwrap_or_default();
        let rate = if kind.float { p.same_address_atomic_ns } else { p.same_address_int_atomic_ns };
        let mut sorted = [0u64; WARP];
        let sorted = &mut sorted[..addrs.len()];
        sorted.copy_from_slice(addrs);
        sorted.sort_unstable();
        let seen = if kind.aggregated { &sorted[..sorted.len().min(1)] } else { &sorted[..] };
        let mut worst = 0u64;
        let (mut run, mut sector_worst) = (0u64, 0u64);
        for i in 0..seen.len() {
            run = if i > 0 && seen[i] == seen[i - 1] { run + 1 } else { 1 };
            worst = worst.max(run);
            sector_worst = sector_worst.max(run);
            let last_of_address = i + 1 == seen.len() || seen[i + 1] != seen[i];
            if last_of_address {
                let known =
                    self.atomic_addresses.len() < MAX_ATOMIC_ADDRESSES || self.atomic_addresses.contains_key(&seen[i]);
                if known {
                    let (lanes, ns) = self.atomic_addresses.entry(seen[i]).or_default();
                    *lanes += run;
                    *ns += run as f64 * rate;
                }
            }
            if i + 1 == seen.len() || seen[i + 1] / SECTOR != seen[i] / SECTOR {
                let units = self.atomic_units.len().max(1) as u64;
                let unit = ((seen[i] / p.atomic_unit_bytes.max(1)) % units) as usize;
                if let Some((ops, ns)) = self.atomic_units.get_mut(unit) {
                    *ops += 1;
                    *ns += p.atomic_sector_ns + (sector_worst - 1) as f64 * rate;
                }
                sector_worst = 0;
            }
        }
        let c = &mut self.per_pc[pc as usize];
        c.atomics += addrs.len() as u64;
        c.atomic_requests += 1;
        c.worst_atomic_lanes = c.worst_atomic_lanes.max(worst);
    }

    /// The busiest address and L2 atomic unit of the launch (ties go to the larger count, then
    /// the lower address or unit, so the report never depends on the hash map's order).
    fn atomic_load(&self) -> AtomicLoad {
        let hottest = self
            .atomic_addresses
            .iter()
            .max_by(|a, b| a.1.1.total_cmp(&b.1.1).then(a.1.0.cmp(&b.1.0)).then(b.0.cmp(a.0)))
            .map_or((0, 0.0), |(_, &v)| v);
        let busiest = self
            .atomic_units
            .iter()
            .rev()
            .max_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)))
            .map_or((0, 0.0), |&v| v);
        AtomicLoad {
            hottest_address: hottest.0,
            hottest_address_ns: hottest.1,
            busiest_unit_ops: busiest.0,
            busiest_unit_ns: busiest.1,
        }
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
        if !words.is_sorted() {
            words.sort_unstable();
        }
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
    pub fn finish(mut self, k: &Kernel, grid_blocks: u64, shared_per_block: u64, warp_steps: u64) -> CostReport {
        self.settle(&k.code);
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
        // Places nest (`a[i]` inside `a[i] += x`) and may start at one column: the end too, so
        // that the order never depends on the hash map's.
        places.sort_by_key(|p| (p.span.source, p.span.lo, p.span.hi));
        let occupancy =
            occupancy(estimated_registers(k), self.profile, self.block_threads, shared_per_block, grid_blocks);
        let threads = grid_blocks * self.block_threads as u64;
        let atomics = self.atomic_load();
        let estimate = estimate(&totals, &occupancy, self.profile, &atomics, grid_blocks);
        CostReport {
            profile: self.profile,
            totals,
            places,
            occupancy,
            estimate,
            warp_steps,
            threads,
            blocks: grid_blocks,
            block_threads: self.block_threads,
            atomics,
            inputs_in_l2: self.l2.warm,
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

    /// `sector_list` as the cost model first counted, lane by lane, for the test below.
    fn sector_list_by_lane(addrs: &[u64], size: u32, repeats: bool) -> Vec<u64> {
        let mut v: Vec<u64> = Vec::new();
        for &a in addrs {
            let lo = a / SECTOR;
            let hi = (a + size.max(1) as u64 - 1) / SECTOR;
            if !repeats && hi == lo && v.last() == Some(&lo) {
                continue;
            }
            v.push(lo);
            if hi != lo {
                v.push(hi);
            }
        }
        v
    }

    #[test]
    fn sector_lists_are_those_of_a_lane_by_lane_count() {
        // Broadcasts, strides, misaligned and straddling lanes, partial warps, all sizes.
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut sectors = vec![0u64; 2 * WARP];
        for case in 0..20_000 {
            let size = [1u32, 2, 4, 8, 12, 16, 32, 3][case % 8];
            let lanes = 1 + (next() % WARP as u64) as usize;
            let base = (1u64 << 48) | (1 << 47) | (next() % 4096);
            let stride = [0u64, 1, 4, 8, 32, 128, 4096][(next() % 7) as usize];
            let jitter = next() % 3 == 0;
            let addrs: Vec<u64> = (0..lanes as u64)
                .map(|l| {
                    let a = base + l / ((next() % 3) + 1) * stride;
                    if jitter { a + next() % 40 } else { a / u64::from(size) * u64::from(size) }
                })
                .collect();
            for repeats in [false, true] {
                let n = sector_list(&addrs, size, repeats, &mut sectors);
                assert_eq!(sectors[..n], sector_list_by_lane(&addrs, size, repeats)[..], "{addrs:?}, size {size}");
            }
        }
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
