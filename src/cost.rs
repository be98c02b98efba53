//! The cost model's figures and its arithmetic: what a launch would cost on a reference GPU.
//!
//! The simulator counts (`backend/sim/cost.rs` is the counter the engine feeds, per warp
//! instruction); this module holds what it counts ([`Counts`], per source place and in total),
//! how a launch occupies an SM ([`occupancy`]), and how the totals become an estimated time
//! ([`estimate`]): the 3-norm of the DRAM, L2, L1, shared-memory, issue, atomic, latency and
//! block-scheduling limits, plus the launch overhead. It sits low in the house, beside
//! `launch`, because a launch's report carries its cost to the session and the views; the
//! reference GPUs are data in [`profiles`]. `docs/cost-model.md` gives the formulas and what
//! the model leaves out.

pub mod profiles;

use crate::diag::Span;

pub use profiles::{GpuProfile, PROFILES};

/// Lanes per warp.
pub const WARP: usize = 32;
/// Bytes per global-memory sector, the unit DRAM and L2 move.
pub const SECTOR: u64 = 32;

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
    /// makes of them (the counter's `issue_weight`).
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
            Limiter::Atomics => "atomics queueing in L2",
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
    /// Registers per thread: the simulator's estimate from its live values, or, on a GPU, the
    /// compiler's own figure (what `:info` shows; `registers_from_compiler` says which).
    pub registers: u32,
    pub registers_from_compiler: bool,
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

/// Where a launch's global atomics queue, and for how long. Atomics are done by the L2's atomic
/// units, each serving the addresses of one slice of the L2: atomics on one address run one
/// after another, and a unit handles one 32-byte sector's worth of a warp's atomics at a time.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AtomicLoad {
    /// Atomics (lanes, after the compiler's warp aggregation) on the busiest single address, and
    /// the time they take one after another.
    pub hottest_address: u64,
    pub hottest_address_ns: f64,
    /// Sector operations the busiest L2 atomic unit handles, and their time.
    pub busiest_unit_ops: u64,
    pub busiest_unit_ns: f64,
}

impl AtomicLoad {
    /// The time the atomics need at least, nanoseconds.
    pub fn ns(&self) -> f64 {
        self.hottest_address_ns.max(self.busiest_unit_ns)
    }

    /// Whether one address, rather than one unit's share of many, is what queues.
    pub fn one_address(&self) -> bool {
        self.hottest_address_ns >= self.busiest_unit_ns
    }
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
    /// Blocks in the grid and threads in each (a block of 48 threads is 2 warps, not 64 threads).
    pub blocks: u64,
    pub block_threads: u32,
    /// Where the launch's global atomics queue.
    pub atomics: AtomicLoad,
    /// The launch's buffers fit in the L2 and were taken as resident from the start (as after
    /// the host copied them in): its DRAM bytes are only what is written back.
    pub inputs_in_l2: bool,
}

impl CostReport {
    /// The same launch with `registers` per thread as the GPU's compiler allocated them: the
    /// occupancy and the estimate are worked out again (the counts do not change).
    pub fn with_compiler_registers(&mut self, registers: u32, blocks: u64) {
        let o = &self.occupancy;
        let block_threads = o.warps_per_block * WARP as u32;
        let occupancy = occupancy(registers.max(1), self.profile, block_threads, o.shared_per_block, blocks);
        self.estimate = estimate(&self.totals, &occupancy, self.profile, &self.atomics, blocks);
        self.occupancy = Occupancy { registers_from_compiler: true, ..occupancy };
    }

    /// The share of the bytes moved by global sectors that the lanes asked for.
    pub fn sector_use(&self) -> f64 {
        ratio(self.totals.bytes_requested, self.totals.sectors * SECTOR).min(1.0)
    }
}

/// How many blocks of the kernel an SM holds, and so how full it is.
///
/// `registers` per thread: the compiler's figure when a GPU compiled the kernel, else the
/// simulator's estimate.
pub fn occupancy(registers: u32, p: &GpuProfile, block_threads: u32, shared_per_block: u64, blocks: u64) -> Occupancy {
    let warps_per_block = block_threads.div_ceil(WARP as u32).max(1);
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
        registers_from_compiler: false,
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
pub fn estimate(t: &Counts, o: &Occupancy, p: &GpuProfile, atomic_load: &AtomicLoad, blocks: u64) -> Estimate {
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
    let atomics = atomic_load.ns() * 1e-9;
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

#[cfg(test)]
mod tests {
    use super::*;

    fn report(registers: u32, blocks: u64) -> CostReport {
        let p = profiles::default_profile();
        let totals = Counts { issued: 1 << 20, lanes: 32 << 20, slots: 4 << 20, ..Counts::default() };
        let occupancy = occupancy(registers, p, 256, 0, blocks);
        let estimate = estimate(&totals, &occupancy, p, &AtomicLoad::default(), blocks);
        CostReport {
            profile: p,
            totals,
            places: Vec::new(),
            occupancy,
            estimate,
            warp_steps: 0,
            threads: blocks * 256,
            blocks,
            block_threads: 256,
            atomics: AtomicLoad::default(),
            inputs_in_l2: false,
        }
    }

    #[test]
    fn the_compilers_registers_redo_occupancy_and_the_estimate() {
        let blocks = 4 * 132;
        let mut c = report(32, blocks);
        assert!(!c.occupancy.registers_from_compiler);
        assert_eq!(c.occupancy.theoretical, 1.0);
        let before = c.estimate.time_us;
        // 128 registers a thread: 65,536 / (128 x 256) = 2 blocks of 8 warps, a quarter of 64.
        c.with_compiler_registers(128, blocks);
        assert!(c.occupancy.registers_from_compiler);
        assert_eq!((c.occupancy.registers, c.occupancy.blocks_per_sm), (128, 2));
        assert_eq!(c.occupancy.limited_by, "registers");
        assert_eq!(c.occupancy.theoretical, 0.25);
        assert!(c.estimate.time_us >= before, "{} < {before}", c.estimate.time_us);
        // The same figure as the estimate changes nothing but where it came from.
        let mut same = report(32, blocks);
        same.with_compiler_registers(32, blocks);
        assert_eq!(same.estimate, report(32, blocks).estimate);
    }
}
