//! Words for the cost model's verdict: what limits a launch and the figures behind it, as
//! `:time` and `cost` say it ("memory-bound: 16.8 MB moved to and from DRAM at 2.68 TB/s ...").

use crate::cost::{CostReport, Limiter, SECTOR};

use crate::diag::text::{decimal_bytes, thousands};

/// A bandwidth in GB/s, as TB/s from 1000 GB/s up: `2.75 TB/s`, `7.9 GB/s`.
fn gbs(gbs: f64) -> String {
    if gbs >= 1000.0 { format!("{:.2} TB/s", gbs / 1000.0) } else { format!("{gbs:.1} GB/s") }
}

/// One line on what limits the launch, with the figures behind it (`:time` prints it under the
/// estimate).
pub fn explain(c: &CostReport) -> String {
    let t = &c.totals;
    let p = c.profile;
    let o = &c.occupancy;
    let spr = t.sectors_per_request();
    let ideal = t.ideal_sectors_per_request();
    let coalescing = if t.global_load_requests + t.global_store_requests == 0 {
        String::new()
    } else if spr <= ideal * 1.05 {
        format!("; {:.0}% of each 32-byte sector used", 100.0 * c.sector_use())
    } else {
        format!("; {spr:.1} sectors per request where {ideal:.1} would do (uncoalesced)")
    };
    match c.estimate.limiter {
        Limiter::Dram => {
            // The rate the estimate used: the GPU's achievable bandwidth, or less when too few
            // loads are in flight to cover DRAM's latency (one block on one SM, say).
            let peak = p.dram_gbs * p.dram_efficiency;
            let dram_us = c.estimate.terms.iter().find(|(l, _)| *l == Limiter::Dram).map_or(0.0, |t| t.1);
            let rate = if dram_us > 0.0 { t.dram_bytes() as f64 / (dram_us * 1e3) } else { peak };
            let starved = if rate < 0.9 * peak {
                let blocks = c.blocks;
                format!(
                    ": {} block{} on {} of {} SMs {} too few loads in flight to reach the {} the GPU can",
                    thousands(blocks as u128),
                    if blocks == 1 { "" } else { "s" },
                    o.sms_used,
                    p.sms,
                    if blocks == 1 { "keeps" } else { "keep" },
                    gbs(peak)
                )
            } else {
                String::new()
            };
            format!(
                "memory-bound: {} moved to and from DRAM at {}{starved}{coalescing}",
                decimal_bytes(t.dram_bytes() as f64),
                gbs(rate)
            )
        }
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
        Limiter::Atomics if c.atomics.one_address() => format!(
            "atomic-bound: {} atomics, up to {} on one address, which run one after another ({:.1} us for that address)",
            t.atomics,
            c.atomics.hottest_address,
            c.atomics.hottest_address_ns / 1000.0
        ),
        Limiter::Atomics => format!(
            "atomic-bound: {} atomics on addresses close together: the L2's atomic unit that serves them handles {} sector operations one after another ({:.1} us); spread the addresses over more memory, or combine in shared memory first",
            t.atomics,
            c.atomics.busiest_unit_ops,
            c.atomics.busiest_unit_ns / 1000.0
        ),
        Limiter::Latency => {
            // The record's `occupancy` is the theoretical one; a small grid fills less of it:
            // both are named, so that 0.75 beside 25% reads as two figures, not one wrong.
            let (achieved, theoretical) = (100.0 * o.achieved, 100.0 * o.theoretical);
            let occupancy = if (achieved - theoretical).abs() >= 0.5 {
                format!("{achieved:.0}% occupancy achieved, of {theoretical:.0}% theoretical,")
            } else {
                format!("{achieved:.0}% occupancy")
            };
            format!(
                "latency-bound: {} block{} of {} warp{} ({occupancy} on {} of {} SMs) leave too little work in flight to hide memory and instruction latency",
                c.blocks,
                if c.blocks == 1 { "" } else { "s" },
                o.warps_per_block,
                if o.warps_per_block == 1 { "" } else { "s" },
                o.sms_used,
                p.sms
            )
        }
        Limiter::Blocks => format!(
            "block-scheduling-bound: {} blocks of {} thread{}, {} per SM one after another; larger blocks (or a \
             grid-stride loop) do the same work in fewer blocks",
            thousands(c.blocks as u128),
            c.block_threads,
            if c.block_threads == 1 { "" } else { "s" },
            thousands(c.blocks.div_ceil(p.sms as u64) as u128),
        ),
        Limiter::Launch => {
            // The estimate is the launch's cost and the work together: say both, so that an
            // estimate above the launch cost does not read as a contradiction.
            let work = (c.estimate.time_us - p.launch_us).max(0.0);
            format!(
                "launch-bound: the work itself takes about {work:.1} us, less than the {} us a launch costs; the estimate is the two together",
                p.launch_us
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::sim::SimBackend;
    use crate::backend::{Arg, Backend, Dim3, LaunchBuffers, LaunchSpec};
    use crate::buffer::{Buffer, Num, Shape};
    use crate::cuda::Module;
    use crate::diag::SourceMap;
    use crate::dtype::DType;

    /// The simulator's cost report for a copy kernel over `grid` blocks of `block` threads.
    fn copy_cost(grid: u32, block: u32) -> CostReport {
        let text = "__global__ void copy(float *a, float *b) {\n    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    b[i] = a[i];\n}\n";
        let mut sources = SourceMap::new();
        let id = sources.add("<input 1>", text, 1);
        let mut module = Module::new();
        assert!(module.add(id, text).is_ok(), "the kernel checks");
        let len = (grid * block) as usize;
        let mut a = Buffer::from_nums(DType::F32, Shape::D1(len), (0..len).map(|_| Num::Float(1.0)));
        let mut b = Buffer::from_nums(DType::F32, Shape::D1(len), (0..len).map(|_| Num::Float(0.0)));
        let spec = LaunchSpec {
            kernel: "copy".into(),
            grid: Dim3::linear(grid),
            block: Dim3::linear(block),
            shared_bytes: 0,
            args: vec![Arg::Buffer(0), Arg::Buffer(1)],
            symbols: Vec::new(),
        };
        let mut buffers = LaunchBuffers { names: vec!["a".into(), "b".into()], buffers: vec![&mut a, &mut b] };
        let report = SimBackend::default().launch(&module, &spec, &mut buffers).expect("the launch runs");
        report.cost.expect("the cost model is on by default")
    }

    #[test]
    fn the_verdict_names_the_blocks_as_launched() {
        // Many small blocks: block scheduling limits, and the verdict says 40,960 blocks of
        // 48 threads, not the 30,720 blocks of 64 their warps would fill.
        let words = explain(&copy_cost(20 * 2048, 48));
        assert!(words.contains("40,960 blocks of 48 threads"), "{words}");
    }
}
