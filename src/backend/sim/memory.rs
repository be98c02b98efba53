//! Pointers, shadow memory for race detection, and the summaries findings are made from.
//!
//! A pointer is 64 bits: a region id in the top 16 bits and a byte offset (biased by 2^47, so
//! pointer arithmetic may go below the start and still be caught as out of bounds) in the low 48.
//! Regions `1..=n` are the launch's buffers in argument order; `STATIC_REGION_BASE + i` is the
//! kernel's `i`-th memory variable (shared, local or global), resolved against the running
//! thread's block or lane. Region 0 is the null pointer.
//!
//! Race detection keeps, for every element of global and shared memory, the last write and up to
//! two reads (thread, the thread's synchronisation clock, instruction), 24 bytes in all. An
//! access conflicts with a recorded one by another thread when at least one writes, they are
//! not both atomic, and nothing orders them. Every thread has a clock that goes up at each
//! synchronisation it takes part in; an access is ordered before a later thread's when that
//! thread has synchronised with the first one since (the recorded clock is below what it knows
//! of that thread's clock):
//!
//! - a block barrier (`__syncthreads()` and its `_count`/`_and`/`_or` forms, a block group's
//!   `sync`) lifts every thread of the block to one clock, the block's *base*: whatever any of
//!   them did before is ordered before what all of them do after;
//! - a warp-level sync (`__syncwarp(mask)`, a tile's `sync`) makes the lanes it names know each
//!   other's clocks (a vector clock per lane of the warp, [`Who::warp`], joined at each sync,
//!   so knowledge passes on through chains of syncs);
//! - a fence followed by an atomic releases what the thread knows (its own accesses before the
//!   fence, its block's up to its last barrier, what it acquired) to that address, and any
//!   later atomic on the address acquires it ([`Knowledge`]); a barrier hands what the block's
//!   threads acquired to all of them. This orders the "last block" pattern across blocks.
//!
//! Threads of different blocks are ordered only through such a release and acquire. Clocks
//! are kept modulo 2^15 in the shadow: an access more than 2^14 synchronisations old may be
//! misjudged, the price of 24-byte shadows. It is O(1) per access (a hash lookup only in
//! kernels that acquired something) and allocates nothing per access.

use std::collections::{HashMap, HashSet};

use crate::cuda::ast::Scalar;
use crate::finding::{Access, POISON_F32, POISON_F64, POISON_INT};

pub const STATIC_REGION_BASE: u32 = 0x1000;
const OFFSET_MASK: u64 = (1 << 48) - 1;
const BIAS: u64 = 1 << 47;

pub fn make_ptr(region: u32, offset: i64) -> u64 {
    ((region as u64) << 48) | ((offset as u64).wrapping_add(BIAS) & OFFSET_MASK)
}

/// The offsets a pointer can hold; one that would leave them sticks at the nearer end.
const MIN_OFFSET: i64 = -(BIAS as i64);
const MAX_OFFSET: i64 = BIAS as i64 - 1;

/// The element index reported for an access through a pointer that went beyond what a pointer
/// can address (its offset stuck at an end): `i64::MAX` past the end, `i64::MIN` before it.
pub const FAR_PAST_END: i64 = i64::MAX;
pub const FAR_BEFORE_START: i64 = i64::MIN;

/// `p` moved by `index` elements of `scale` bytes (C's `p + index`). Where the new offset would
/// leave what a pointer holds, or overflow on the way (`a[9223372036854775807]`), it sticks at
/// the nearer end: the pointer stays in its region, out of bounds, and is reported as far past
/// the end (or before the start) rather than wrapping around to a small index or into
/// another buffer.
pub fn moved(p: u64, index: i64, scale: i64) -> u64 {
    let off = index.checked_mul(scale).and_then(|d| offset(p).checked_add(d));
    let off = match off {
        Some(o) if (MIN_OFFSET..=MAX_OFFSET).contains(&o) => o,
        _ if (index < 0) != (scale < 0) => MIN_OFFSET,
        _ => MAX_OFFSET,
    };
    make_ptr(region(p), off)
}

/// The element index of byte offset `off` for a report (see [`moved`]).
pub fn report_index(off: i64, elem: i64) -> i64 {
    match off {
        MAX_OFFSET => FAR_PAST_END,
        MIN_OFFSET => FAR_BEFORE_START,
        _ => off.div_euclid(elem),
    }
}

pub fn region(p: u64) -> u32 {
    (p >> 48) as u32
}

/// Whether `p` is a saturated pointer, one whose index was too large to address (see
/// `moved`): it is reported far past the end, not as any address of its own.
pub fn saturated(p: u64) -> bool {
    matches!(offset(p), MIN_OFFSET | MAX_OFFSET)
}

pub fn offset(p: u64) -> i64 {
    (p & OFFSET_MASK) as i64 - BIAS as i64
}

/// Whether a pointer can hold offset `off` (see [`moved`]).
#[inline(always)]
pub fn in_range(off: i64) -> bool {
    (MIN_OFFSET..=MAX_OFFSET).contains(&off)
}

/// `p` with its offset set to `off` (one [`in_range`]), in the same region.
#[inline(always)]
pub fn with_offset(p: u64, off: i64) -> u64 {
    (p & !OFFSET_MASK) | ((off as u64).wrapping_add(BIAS) & OFFSET_MASK)
}

/// One recorded access packed in 64 bits: thread + 1 (bits 0..32, 0 = none), instruction
/// (32..48), the thread's clock modulo 2^15 (48..63), atomic (63).
type Acc = u64;
const ATOMIC: u64 = 1 << 63;
const CLOCK_MASK: u32 = 0x7fff;

/// Shadow of one element: the last write and two reads (24 bytes).
pub type Shadow = [u64; 3];

/// Whether an access made at clock `k` (modulo 2^15) comes before `bound`, a clock value of
/// the same thread: within 2^14 below it.
#[inline]
fn before(k: u32, bound: u32) -> bool {
    let d = bound.wrapping_sub(k) & CLOCK_MASK;
    d != 0 && d < 0x4000
}

/// An address atomics synchronise through: a pointer, and for shared memory the block (each
/// block has its own).
pub type SyncKey = (u64, u64);

/// What a thread acquired: per address, how many releases to it it has seen (a prefix of
/// [`Released`]'s history, so that later releases do not count).
pub type Acquired = Vec<(SyncKey, u32)>;

/// Add `(key, version)` to `acq`, keeping the larger version per address.
pub fn acquire(acq: &mut Acquired, key: SyncKey, version: u32) {
    match acq.iter_mut().find(|(k, _)| *k == key) {
        Some(e) => e.1 = e.1.max(version),
        None => acq.push((key, version)),
    }
}

/// Key of a block in [`Released::bounds`] (threads are keyed by their id).
fn block_entity(block: u64) -> u64 {
    (1 << 40) | block
}

/// What fenced atomics released to one address, in the order of the releases: per thread, the
/// clock below which its accesses are published; per block, the base below which all of its
/// threads' accesses are; and what the releasing threads had acquired themselves (so order
/// passes on along chains of releases).
#[derive(Debug, Default)]
pub struct Released {
    /// Releases so far.
    pub version: u32,
    /// Per thread or block: (release number, bound), release numbers increasing.
    bounds: HashMap<u64, Vec<(u32, u32)>>,
    /// (release number, an address the releaser had acquired from, how much of it).
    refs: Vec<(u32, SyncKey, u32)>,
}

impl Released {
    /// One release: `thread`'s accesses below `clock`, its block's below `base`, and what it
    /// acquired (`acquired`, other addresses than `me`).
    pub fn release(&mut self, me: SyncKey, thread: u32, clock: u32, block: u64, base: u32, acquired: &[&Acquired]) {
        self.version += 1;
        let v = self.version;
        for (entity, bound) in [(thread as u64, clock), (block_entity(block), base)] {
            let list = self.bounds.entry(entity).or_default();
            match list.last_mut() {
                Some(last) if last.1 == bound => {}
                _ => list.push((v, bound)),
            }
        }
        for &(key, n) in acquired.iter().copied().flatten() {
            if key != me && !self.refs.iter().any(|&(_, k, m)| k == key && m >= n) {
                self.refs.push((v, key, n));
            }
        }
    }
}

/// Every address released to in a launch.
pub type Releases = HashMap<SyncKey, Released>;

/// Whether an access at clock `k` by `thread` (of `block`) was published by the first
/// `version` releases to `key`, directly or through what those releasers acquired.
fn published(all: &Releases, key: SyncKey, version: u32, thread: u32, block: u64, k: u32, depth: u32) -> bool {
    let Some(r) = all.get(&key) else { return false };
    let bound = |entity: u64| {
        r.bounds.get(&entity).and_then(|list| list.iter().rev().find(|(v, _)| *v <= version)).map(|&(_, b)| b)
    };
    if bound(thread as u64).is_some_and(|b| before(k, b)) || bound(block_entity(block)).is_some_and(|b| before(k, b)) {
        return true;
    }
    depth < 4
        && r.refs.iter().any(|&(v, other, n)| v <= version && published(all, other, n, thread, block, k, depth + 1))
}

/// Who is accessing, for the race check.
#[derive(Clone, Copy, Debug)]
pub struct Who<'a> {
    /// Global linear thread id.
    pub thread: u32,
    /// The thread's synchronisation clock.
    pub clock: u32,
    /// The block's clock at its last barrier: every access of the block below it is ordered.
    pub base: u32,
    /// Threads per block, and the ids of the first thread of this one's block and warp (to tell
    /// whether a recorded access came from the same block or warp).
    pub block_threads: u32,
    pub block_first: u32,
    pub warp_first: u32,
    pub pc: u32,
    /// What this lane knows of the clocks of its warp's lanes through warp-level syncs since the
    /// block's last barrier (0: nothing); `None` when the warp has not synchronised.
    pub warp: Option<&'a [u32; 32]>,
    /// What this thread acquired, and what its block's threads acquired before a barrier
    /// (empty in most kernels).
    pub acquired: [&'a [(SyncKey, u32)]; 2],
}

/// An access pair that raced: the earlier one (thread, pc, atomic) and the later one.
#[derive(Clone, Copy, Debug)]
pub struct Conflict {
    pub first_thread: u32,
    pub first_pc: u32,
    pub first_access: Access,
}

fn thread_of(a: Acc) -> u32 {
    (a as u32).wrapping_sub(1)
}

fn pc_of(a: Acc) -> u32 {
    ((a >> 32) & 0xffff) as u32
}

fn clock_of(a: Acc) -> u32 {
    ((a >> 48) as u32) & CLOCK_MASK
}

/// Instructions beyond 65535 share the last number (only a finding's location suffers).
pub fn pc_key(pc: u32) -> u32 {
    pc.min(0xffff)
}

impl Who<'_> {
    /// Whether the recorded access `prev` is ordered before this one (see the module's doc).
    #[inline(always)]
    fn ordered(&self, prev: Acc, releases: &Releases) -> bool {
        if prev as u32 == 0 {
            return true;
        }
        let t = thread_of(prev);
        if t == self.thread {
            return true;
        }
        let k = clock_of(prev);
        // Same block, same warp: offsets from their first threads (no division on the way).
        if t.wrapping_sub(self.block_first) < self.block_threads {
            if before(k, self.base) {
                return true;
            }
            let lane = t.wrapping_sub(self.warp_first);
            if lane < 32
                && let Some(row) = self.warp
            {
                let known = row[lane as usize];
                if known != 0 && before(k, known) {
                    return true;
                }
            }
        }
        // Most kernels acquire nothing: then threads of other blocks are never ordered.
        if self.acquired[0].is_empty() && self.acquired[1].is_empty() {
            return false;
        }
        self.acquired_orders(t, k, releases)
    }

    /// Whether what this thread acquired publishes thread `t`'s access at clock `k`.
    #[cold]
    fn acquired_orders(&self, t: u32, k: u32, releases: &Releases) -> bool {
        let block = (t / self.block_threads.max(1)) as u64;
        self.acquired.iter().copied().flatten().any(|&(key, n)| published(releases, key, n, t, block, k, 0))
    }

    fn acc(&self, atomic: bool) -> Acc {
        self.thread.wrapping_add(1) as u64
            | (pc_key(self.pc) as u64) << 32
            | ((self.clock & CLOCK_MASK) as u64) << 48
            | if atomic { ATOMIC } else { 0 }
    }
}

/// Check and record an access to the element with shadow `s`, given what fenced atomics
/// released in the launch; returns the conflict, if any.
#[inline(always)]
pub fn check(s: &mut Shadow, who: &Who, access: Access, releases: &Releases) -> Option<Conflict> {
    let atomic = access == Access::Atomic;
    let mut conflict = None;
    let mut note = |prev: Acc, prev_access: Access| {
        if conflict.is_none() && !who.ordered(prev, releases) {
            conflict =
                Some(Conflict { first_thread: thread_of(prev), first_pc: pc_of(prev), first_access: prev_access });
        }
    };
    let w = s[0];
    let w_atomic = w & ATOMIC != 0;
    if !(atomic && w_atomic) {
        note(w, if w_atomic { Access::Atomic } else { Access::Write });
    }
    if access != Access::Read {
        // Reads are recorded plain: a plain read races with an atomic update as much as with a
        // plain write, whichever of the two came first.
        note(s[1], Access::Read);
        note(s[2], Access::Read);
        s[0] = who.acc(atomic);
        if !atomic {
            s[1] = 0;
            s[2] = 0;
        }
    } else {
        let r1 = s[1];
        let slot = if r1 as u32 == 0 || thread_of(r1) == who.thread || who.ordered(r1, releases) { 1 } else { 2 };
        s[slot] = who.acc(false);
    }
    conflict
}

/// Out-of-bounds accesses of one (region, access kind).
#[derive(Clone, Copy, Debug)]
pub struct OobSummary {
    /// Threads that made at least one such access (`x[i] * x[i]` past the end is one thread).
    pub count: u64,
    pub min: i64,
    pub max: i64,
    pub first_thread: u64,
    pub first_pc: u32,
    pub first_index: i64,
    pub len: u64,
    /// When the first such access was made ([`Reports::stamp`]), for merging in order.
    pub first: u64,
}

/// Races of one (region, first instruction, second instruction).
#[derive(Clone, Copy, Debug)]
pub struct RaceSummary {
    pub count: u64,
    /// Distinct elements this pair of instructions raced on.
    pub elements: u64,
    pub index: i64,
    pub first_thread: u64,
    pub first_access: Access,
    pub second_thread: u64,
    pub second_access: Access,
    /// When the first such race was seen ([`Reports::stamp`]).
    pub first: u64,
}

/// Uninitialised reads of one memory variable or buffer (or local variable).
#[derive(Clone, Copy, Debug)]
pub struct UninitSummary {
    pub count: u64,
    /// Distinct elements (for a local variable: threads) read before they were written.
    pub elements: u64,
    pub first_index: i64,
    pub first_thread: u64,
    pub first_pc: u32,
    /// When the first such read was made ([`Reports::stamp`]).
    pub first: u64,
}

/// Everything the findings are built from, in first-seen order.
#[derive(Default)]
pub struct Reports {
    pub oob: Vec<((u32, Access), OobSummary)>,
    oob_index: HashMap<(u32, Access), usize>,
    /// Per out-of-bounds summary, the threads already counted: a bit per thread, in words of 64
    /// threads (only the words of threads that went out of bounds), and the last thread counted,
    /// which a loop going out of bounds repeats.
    oob_threads: Vec<(HashMap<u64, u64>, u64)>,
    pub races: Vec<((u32, u32, u32), RaceSummary)>,
    race_index: HashMap<(u32, u32, u32), usize>,
    last_race: Option<((u32, u32, u32), usize)>,
    /// Per race summary, a bit per element of its region already counted in it (so that every
    /// summary counts its own elements, however the pairs of instructions share them).
    raced: Vec<Vec<u64>>,
    /// Keyed by region (`VAR_REGION_BASE + i` for the kernel's `i`-th tracked local variable).
    pub uninit: Vec<(u32, UninitSummary)>,
    uninit_index: HashMap<u32, usize>,
    /// Per uninit summary, the elements (for a variable: the threads) already counted, sparse
    /// like `oob_threads`.
    uninit_seen: Vec<HashMap<u64, u64>>,
    /// The last access read memory nothing had written: the instruction reads `poison` instead.
    pub poisoned: bool,
    /// When the access being checked is made, recorded with each summary's first access: a
    /// block run on a worker thread stamps its warp and the warp's step, which the launch turns
    /// into the launch's step when it merges the block's reports (see `engine/parallel.rs`).
    pub stamp: u64,
    /// On a worker thread, where a block's warps run one after another rather than
    /// interleaved: each summary's first example from every warp, so that the merge can pick
    /// the one the interleaved launch makes first.
    pub per_warp: bool,
    warp_seen: HashSet<(u8, usize, u64)>,
    alts: Vec<Alt>,
}

/// A warp's first example of a summary, other than the summary's own (see `Reports::per_warp`).
enum Alt {
    Oob(usize, OobSummary),
    Uninit(usize, UninitSummary),
    Race(usize, RaceSummary),
}

/// What a read of uninitialised memory gives, in the register form of `ty` (see
/// `finding::POISON_INT`).
pub fn poison(ty: Scalar) -> u64 {
    match ty {
        Scalar::F32 => POISON_F32 as u64,
        Scalar::F64 => POISON_F64,
        Scalar::Bool => 1,
        Scalar::I8 => POISON_INT as u8 as i8 as i64 as u64,
        Scalar::U8 => POISON_INT as u8 as u64,
        Scalar::I16 => POISON_INT as u16 as i16 as i64 as u64,
        Scalar::U16 => POISON_INT as u16 as u64,
        Scalar::I32 => POISON_INT as u32 as i32 as i64 as u64,
        Scalar::U32 => POISON_INT as u32 as u64,
        Scalar::I64 | Scalar::U64 => POISON_INT,
    }
}

/// Report keys of the local variables a kernel tracks (`Kernel::vars`), beyond every region.
pub const VAR_REGION_BASE: u32 = 0x1_0000;

/// Report keys of indices past a row of a kernel's multi-dimensional array (`Op::PtrAddIn`):
/// one per array and dimension, above every memory's region.
pub const DIM_REGION_BASE: u32 = 0x2_0000;

/// The report key of dimension `dim` of `Kernel::statics[array]`.
pub fn dim_region(array: u32, dim: u8) -> u32 {
    DIM_REGION_BASE + array * 16 + dim.min(15) as u32
}

/// The array and dimension of a report key made by [`dim_region`].
pub fn of_dim_region(region: u32) -> Option<(u32, u8)> {
    if region >= BUFFER_DIM_REGION_BASE {
        return None;
    }
    let r = region.checked_sub(DIM_REGION_BASE)?;
    Some((r / 16, (r % 16) as u8))
}

/// Report keys of indices past a row of a launch buffer laid out as a row-major array
/// (`Op::AddIn`), above those of the kernel's own arrays.
pub const BUFFER_DIM_REGION_BASE: u32 = 0x4_0000;

/// The report key of dimension `dim` of the buffer in memory region `region`.
pub fn buffer_dim_region(region: u32, dim: u8) -> u32 {
    BUFFER_DIM_REGION_BASE + region.min(0x1_0000) * 16 + dim.min(15) as u32
}

/// The buffer's region and the dimension of a report key made by [`buffer_dim_region`].
pub fn of_buffer_dim_region(region: u32) -> Option<(u32, u8)> {
    let r = region.checked_sub(BUFFER_DIM_REGION_BASE)?;
    Some((r / 16, (r % 16) as u8))
}

impl Reports {
    pub fn oob(&mut self, region: u32, access: Access, index: i64, len: u64, thread: u64, pc: u32) {
        let next = self.oob.len();
        let i = *self.oob_index.entry((region, access)).or_insert(next);
        if i == next {
            let s = OobSummary {
                count: 0,
                min: index,
                max: index,
                first_thread: thread,
                first_pc: pc,
                first_index: index,
                len,
                first: self.stamp,
            };
            self.oob.push(((region, access), s));
            self.oob_threads.push((HashMap::new(), u64::MAX));
        }
        if self.per_warp && self.warp_seen.insert((0, i, self.stamp >> 40)) && i != next {
            let s = self.oob[i].1;
            let example = OobSummary { first_thread: thread, first_pc: pc, first_index: index, first: self.stamp, ..s };
            self.alts.push(Alt::Oob(i, example));
        }
        let s = &mut self.oob[i].1;
        let (seen, last) = &mut self.oob_threads[i];
        if *last != thread {
            *last = thread;
            let word = seen.entry(thread / 64).or_insert(0);
            let bit = 1u64 << (thread % 64);
            s.count += (*word & bit == 0) as u64;
            *word |= bit;
        }
        s.min = s.min.min(index);
        s.max = s.max.max(index);
    }

    /// A read of element `index` of `region` (for a local variable: `index` is the thread) that
    /// nothing had written.
    pub fn uninit(&mut self, region: u32, index: i64, thread: u64, pc: u32) {
        let next = self.uninit.len();
        let i = *self.uninit_index.entry(region).or_insert(next);
        if i == next {
            let s = UninitSummary {
                count: 0,
                elements: 0,
                first_index: index,
                first_thread: thread,
                first_pc: pc,
                first: self.stamp,
            };
            self.uninit.push((region, s));
            self.uninit_seen.push(HashMap::new());
        }
        if self.per_warp && self.warp_seen.insert((1, i, self.stamp >> 40)) && i != next {
            let s = self.uninit[i].1;
            let example =
                UninitSummary { first_thread: thread, first_pc: pc, first_index: index, first: self.stamp, ..s };
            self.alts.push(Alt::Uninit(i, example));
        }
        let s = &mut self.uninit[i].1;
        s.count += 1;
        let key = index as u64;
        let word = self.uninit_seen[i].entry(key / 64).or_insert(0);
        let bit = 1u64 << (key % 64);
        s.elements += (*word & bit == 0) as u64;
        *word |= bit;
    }

    pub fn race(&mut self, region: u32, index: i64, elements: u64, c: Conflict, who: &Who, access: Access) {
        let key = (region, c.first_pc, pc_key(who.pc));
        // Racy loops hit the same pair over and over: skip the hash lookup for a repeat.
        let i = match self.last_race {
            Some((k, i)) if k == key => i,
            _ => {
                let next = self.races.len();
                let i = *self.race_index.entry(key).or_insert(next);
                if i == next {
                    self.races.push((
                        key,
                        RaceSummary {
                            count: 0,
                            elements: 0,
                            index,
                            first_thread: c.first_thread as u64,
                            first_access: c.first_access,
                            second_thread: who.thread as u64,
                            second_access: access,
                            first: self.stamp,
                        },
                    ));
                    self.raced.push(vec![0; elements.div_ceil(64) as usize]);
                }
                self.last_race = Some((key, i));
                i
            }
        };
        if self.per_warp && self.warp_seen.insert((2, i, self.stamp >> 40)) && self.races[i].1.first != self.stamp {
            let s = self.races[i].1;
            let example = RaceSummary {
                index,
                first_thread: c.first_thread as u64,
                first_access: c.first_access,
                second_thread: who.thread as u64,
                second_access: access,
                first: self.stamp,
                ..s
            };
            self.alts.push(Alt::Race(i, example));
        }
        let s = &mut self.races[i].1;
        s.count += 1;
        if let Some(word) = self.raced[i].get_mut(index as usize / 64) {
            let bit = 1 << (index as usize % 64);
            s.elements += (*word & bit == 0) as u64;
            *word |= bit;
        }
    }
}

/// Bits set in `from` are set in `into`; returns how many were new.
fn union_words(into: &mut HashMap<u64, u64>, from: HashMap<u64, u64>) -> u64 {
    let mut new = 0;
    for (k, w) in from {
        let e = into.entry(k).or_insert(0);
        new += (w & !*e).count_ones() as u64;
        *e |= w;
    }
    new
}

impl Reports {
    /// Whether nothing was found.
    pub fn is_empty(&self) -> bool {
        self.oob.is_empty() && self.uninit.is_empty() && self.races.is_empty() && self.alts.is_empty()
    }

    /// Add the reports of a block that ran on its own (see `engine/parallel.rs`), whose stamps
    /// `at` turns into the launch's steps: counts add up (the block's threads are its own),
    /// distinct elements are counted once over both, and each summary's example is the one
    /// made first. [`Reports::sort_by_first`] then puts the summaries in first-seen order.
    pub fn merge(&mut self, other: Reports, at: impl Fn(u64) -> u64) {
        let (mut oob_at, mut uninit_at, mut race_at) = (Vec::new(), Vec::new(), Vec::new());
        for (key, mut s) in other.oob {
            s.first = at(s.first);
            oob_at.push(self.oob_index.get(&key).copied().unwrap_or(self.oob.len()));
            match self.oob_index.get(&key) {
                Some(&i) => {
                    let t = &mut self.oob[i].1;
                    t.count += s.count;
                    t.min = t.min.min(s.min);
                    t.max = t.max.max(s.max);
                    if s.first < t.first {
                        (t.first, t.first_thread, t.first_pc, t.first_index) =
                            (s.first, s.first_thread, s.first_pc, s.first_index);
                    }
                }
                None => {
                    self.oob_index.insert(key, self.oob.len());
                    self.oob.push((key, s));
                    self.oob_threads.push((HashMap::new(), u64::MAX));
                }
            }
        }
        for ((region, mut s), seen) in other.uninit.into_iter().zip(other.uninit_seen) {
            s.first = at(s.first);
            uninit_at.push(self.uninit_index.get(&region).copied().unwrap_or(self.uninit.len()));
            match self.uninit_index.get(&region) {
                Some(&i) => {
                    let new = union_words(&mut self.uninit_seen[i], seen);
                    let t = &mut self.uninit[i].1;
                    t.count += s.count;
                    t.elements += new;
                    if s.first < t.first {
                        (t.first, t.first_thread, t.first_pc, t.first_index) =
                            (s.first, s.first_thread, s.first_pc, s.first_index);
                    }
                }
                None => {
                    self.uninit_index.insert(region, self.uninit.len());
                    self.uninit.push((region, s));
                    self.uninit_seen.push(seen);
                }
            }
        }
        for ((key, mut s), raced) in other.races.into_iter().zip(other.raced) {
            s.first = at(s.first);
            race_at.push(self.race_index.get(&key).copied().unwrap_or(self.races.len()));
            match self.race_index.get(&key) {
                Some(&i) => {
                    let mine = &mut self.raced[i];
                    let mut new = 0;
                    for (a, b) in mine.iter_mut().zip(&raced) {
                        new += (b & !*a).count_ones() as u64;
                        *a |= b;
                    }
                    let t = &mut self.races[i].1;
                    t.count += s.count;
                    t.elements += new;
                    if s.first < t.first {
                        let (count, elements) = (t.count, t.elements);
                        *t = RaceSummary { count, elements, ..s };
                    }
                }
                None => {
                    self.race_index.insert(key, self.races.len());
                    self.races.push((key, s));
                    self.raced.push(raced);
                }
            }
        }
        // Another warp's first example may come before the one the block's record starts with.
        for alt in other.alts {
            match alt {
                Alt::Oob(i, e) => {
                    if let Some(t) = oob_at.get(i).and_then(|&j| self.oob.get_mut(j)).map(|t| &mut t.1)
                        && at(e.first) < t.first
                    {
                        (t.first, t.first_thread, t.first_pc, t.first_index) =
                            (at(e.first), e.first_thread, e.first_pc, e.first_index);
                    }
                }
                Alt::Uninit(i, e) => {
                    if let Some(t) = uninit_at.get(i).and_then(|&j| self.uninit.get_mut(j)).map(|t| &mut t.1)
                        && at(e.first) < t.first
                    {
                        (t.first, t.first_thread, t.first_pc, t.first_index) =
                            (at(e.first), e.first_thread, e.first_pc, e.first_index);
                    }
                }
                Alt::Race(i, e) => {
                    if let Some(t) = race_at.get(i).and_then(|&j| self.races.get_mut(j)).map(|t| &mut t.1)
                        && at(e.first) < t.first
                    {
                        *t = RaceSummary { count: t.count, elements: t.elements, first: at(e.first), ..e };
                    }
                }
            }
        }
        self.last_race = None;
    }

    /// The summaries in the order their first accesses were made, as one thread running the
    /// whole launch records them. Only for reading: no report may be added after it.
    pub fn sort_by_first(&mut self) {
        self.oob.sort_by_key(|(_, s)| s.first);
        self.uninit.sort_by_key(|(_, s)| s.first);
        self.races.sort_by_key(|(_, s)| s.first);
        self.oob_index.clear();
        self.uninit_index.clear();
        self.race_index.clear();
        self.last_race = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pointers_round_trip_and_go_negative() {
        let p = make_ptr(3, 40);
        assert_eq!((region(p), offset(p)), (3, 40));
        let q = p.wrapping_add((-48i64) as u64);
        assert_eq!((region(q), offset(q)), (3, -8));
        assert_eq!(region(0), 0);
    }

    /// The check in a launch that released nothing.
    fn check(s: &mut Shadow, who: &Who, access: Access) -> Option<Conflict> {
        super::check(s, who, access, &Releases::new())
    }

    fn who(thread: u32, clock: u32, base: u32) -> Who<'static> {
        let (block_first, warp_first) = (thread / 64 * 64, thread / 32 * 32);
        Who { thread, clock, base, block_threads: 64, block_first, warp_first, pc: 7, warp: None, acquired: [&[], &[]] }
    }

    #[test]
    fn barriers_order_threads_of_one_block_only() {
        let mut s = Shadow::default();
        assert_eq!(std::mem::size_of::<Shadow>(), 24);
        assert!(check(&mut s, &who(0, 1, 1), Access::Write).is_none());
        assert!(check(&mut s, &who(1, 1, 1), Access::Read).is_some());
        // After a barrier the block's base is above every clock before it.
        assert!(check(&mut s, &who(2, 2, 2), Access::Write).is_none());
        assert!(check(&mut s, &who(65, 9, 9), Access::Read).is_some());
        let mut s = Shadow::default();
        assert!(check(&mut s, &who(0, 1, 1), Access::Atomic).is_none());
        assert!(check(&mut s, &who(9, 1, 1), Access::Atomic).is_none());
        assert!(check(&mut s, &who(3, 1, 1), Access::Read).is_some());
    }

    #[test]
    fn a_plain_read_races_with_an_atomic_in_either_order() {
        let mut s = Shadow::default();
        assert!(check(&mut s, &who(3, 1, 1), Access::Read).is_none());
        let c = check(&mut s, &who(9, 1, 1), Access::Atomic).expect("the atomic after the read races");
        assert_eq!((c.first_thread, c.first_access), (3, Access::Read));
        let mut s = Shadow::default();
        assert!(check(&mut s, &who(9, 1, 1), Access::Atomic).is_none());
        let c = check(&mut s, &who(3, 1, 1), Access::Read).expect("the read after the atomic races");
        assert_eq!((c.first_thread, c.first_access), (9, Access::Atomic));
    }

    #[test]
    fn a_warp_sync_orders_only_the_lanes_that_know_each_other() {
        let mut s = Shadow::default();
        assert!(check(&mut s, &who(1, 1, 1), Access::Write).is_none());
        // Lane 0 synchronised with lane 1 after lane 1's write at clock 1 (lane 1 is now at 2).
        let mut row = [0u32; 32];
        row[1] = 2;
        let synced = Who { warp: Some(&row), ..who(0, 2, 1) };
        assert!(check(&mut s.clone(), &synced, Access::Read).is_none());
        // Lane 33 is in another warp: the same knowledge does not apply to it.
        let other_warp = Who { warp: Some(&row), ..who(33, 2, 1) };
        assert!(check(&mut s.clone(), &other_warp, Access::Read).is_some());
        // Knowing lane 1 only up to clock 1 (before its write) orders nothing.
        row[1] = 1;
        let stale = Who { warp: Some(&row), ..who(0, 2, 1) };
        assert!(check(&mut s, &stale, Access::Read).is_some());
    }

    #[test]
    fn a_fenced_release_orders_threads_of_other_blocks_that_acquire_it() {
        let mut s = Shadow::default();
        // Thread 70 (block 1) writes at clock 3.
        assert!(check(&mut s, &who(70, 3, 1), Access::Write).is_none());
        assert!(check(&mut s.clone(), &who(5, 1, 1), Access::Read).is_some());
        let flag: SyncKey = (99, u64::MAX);
        let mut all = Releases::new();
        // It fences (clock 4) and releases to `flag`.
        all.entry(flag).or_default().release(flag, 70, 4, 1, 1, &[]);
        let seen: Acquired = vec![(flag, 1)];
        let acquired = Who { acquired: [&seen, &[]], ..who(5, 1, 1) };
        assert!(super::check(&mut s.clone(), &acquired, Access::Read, &all).is_none());
        // Through the block's knowledge after a barrier, too.
        let via_block = Who { acquired: [&[], &seen], ..who(6, 1, 1) };
        assert!(super::check(&mut s.clone(), &via_block, Access::Read, &all).is_none());
        // Having seen none of the releases orders nothing; nor does a release from before the write.
        let none: Acquired = vec![(flag, 0)];
        assert!(
            super::check(&mut s.clone(), &Who { acquired: [&none, &[]], ..who(5, 1, 1) }, Access::Read, &all).is_some()
        );
        let mut early = Releases::new();
        early.entry(flag).or_default().release(flag, 70, 3, 1, 1, &[]);
        assert!(
            super::check(&mut s.clone(), &Who { acquired: [&seen, &[]], ..who(5, 1, 1) }, Access::Read, &early)
                .is_some()
        );
        // A chain: thread 140 acquired `flag` and released to `other`; acquiring `other` orders 70's write.
        let other: SyncKey = (100, u64::MAX);
        all.entry(other).or_default().release(other, 140, 2, 2, 1, &[&seen]);
        let chained: Acquired = vec![(other, 1)];
        assert!(super::check(&mut s, &Who { acquired: [&chained, &[]], ..who(5, 1, 1) }, Access::Read, &all).is_none());
    }

    #[test]
    fn clocks_compare_across_the_wrap() {
        assert!(before(0x7ffe, 0x8001));
        assert!(!before(0x8001 & CLOCK_MASK, 0x8001));
        assert!(!before(2, 1));
    }
}
