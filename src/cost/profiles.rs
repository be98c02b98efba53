//! Reference GPUs: the parameters the cost model turns counts into time with.
//!
//! Every figure is data, with where it comes from, so a course author can see why the model says
//! what it says and add a GPU without touching the model. Vendor figures are from NVIDIA's
//! datasheets and architecture whitepapers; the few that no datasheet gives (achievable DRAM
//! efficiency, latencies, the rate of atomics on one address) were measured on an H100 in this
//! project (`bench/README.md`) or come from public microbenchmark studies, and are marked so.

/// One reference GPU.
#[derive(Clone, Debug, PartialEq)]
pub struct GpuProfile {
    /// The name `--gpu-profile` and `:gpu` take (lower case, no spaces).
    pub name: &'static str,
    /// What it is, for the learner.
    pub title: &'static str,
    pub sms: u32,
    /// Boost clock in GHz.
    pub clock_ghz: f64,
    /// Peak DRAM bandwidth, GB/s.
    pub dram_gbs: f64,
    /// The share of peak DRAM bandwidth a streaming kernel reaches (measured: about 0.8-0.85).
    pub dram_efficiency: f64,
    /// L2 capacity in bytes, and its bandwidth in GB/s.
    pub l2_bytes: u64,
    pub l2_gbs: f64,
    /// Combined L1 and shared memory per SM, bytes; the most of it one block's shared memory
    /// may use per SM.
    pub l1_shared_bytes: u32,
    pub shared_per_sm: u32,
    pub max_warps_per_sm: u32,
    pub max_blocks_per_sm: u32,
    pub regs_per_sm: u32,
    /// FP64 throughput relative to FP32 (H100: 1/2; consumer parts: 1/64).
    pub fp64_ratio: f64,
    /// Latencies in clock cycles: an L1 hit, an L2 hit, a DRAM access.
    pub l1_latency: f64,
    pub l2_latency: f64,
    pub dram_latency: f64,
    /// Nanoseconds between two floating-point atomics on the same address (they serialise in
    /// L2), and between two integer ones.
    pub same_address_atomic_ns: f64,
    pub same_address_int_atomic_ns: f64,
    /// The L2's atomic units: how many, how many bytes of address space each serves in turn
    /// (addresses map to units in chunks of this size), and nanoseconds a unit takes for one
    /// 32-byte sector's worth of a warp's atomics.
    pub atomic_units: u32,
    pub atomic_unit_bytes: u64,
    pub atomic_sector_ns: f64,
    /// What one launch costs besides its work, as CUDA events see it, microseconds.
    pub launch_us: f64,
    /// Nanoseconds an SM takes to start and retire one block.
    pub block_launch_ns: f64,
    /// Where the figures come from.
    pub source: &'static str,
    /// How close the model came to this GPU's measured times, when that was measured.
    pub validation: Option<Validation>,
}

/// The model against a real GPU on the kernels of `bench/cost/set` it was not fitted to
/// (`bench/cost/validate`): what `:time` and `:profile` tell a learner about how far to trust
/// an estimate.
#[derive(Clone, Debug, PartialEq)]
pub struct Validation {
    /// Launches compared.
    pub launches: u32,
    /// The median of max(model / GPU, GPU / model).
    pub median_error: f64,
    /// The share within 1.5x either way, and the worst ratio.
    pub within_1_5: f64,
    pub worst: f64,
    pub date: &'static str,
}

impl GpuProfile {
    /// One sentence on how far to trust an estimate for this GPU.
    pub fn trust(&self) -> String {
        match &self.validation {
            Some(v) => format!(
                "On {} launches of kernels the model was not tuned on, the {} took within {:.0}% of the estimate for half of them and within 1.5x for {:.0}%; the worst was {:.1}x off (bench/cost/validate, {})",
                v.launches,
                self.title,
                (v.median_error - 1.0) * 100.0,
                v.within_1_5 * 100.0,
                v.worst,
                v.date
            ),
            None => match PROFILES.iter().find(|p| p.validation.is_some()) {
                Some(checked) => format!(
                    "The model has not been checked against a real {}; its figures come from the data sheet, and on the {}, where it was checked, half its estimates are within {:.0}%: expect larger errors here",
                    self.title,
                    checked.title,
                    (checked.validation.as_ref().map_or(1.0, |v| v.median_error) - 1.0) * 100.0
                ),
                None => format!("The model has not been checked against a real {}", self.title),
            },
        }
    }
}

/// The default profile, which the H200's shares but for its memory.
const H100: GpuProfile = GpuProfile {
    name: "h100",
    title: "NVIDIA H100 SXM5 80GB",
    sms: 132,
    clock_ghz: 1.98,
    dram_gbs: 3350.0,
    dram_efficiency: 0.82,
    l2_bytes: 50 << 20,
    l2_gbs: 7000.0,
    l1_shared_bytes: 256 << 10,
    shared_per_sm: 228 << 10,
    max_warps_per_sm: 64,
    max_blocks_per_sm: 32,
    regs_per_sm: 65536,
    fp64_ratio: 0.5,
    l1_latency: 35.0,
    l2_latency: 260.0,
    dram_latency: 1000.0,
    same_address_atomic_ns: 1.8,
    same_address_int_atomic_ns: 0.75,
    atomic_units: 64,
    atomic_unit_bytes: 1024,
    atomic_sector_ns: 0.5,
    launch_us: 5.7,
    block_launch_ns: 80.0,
    source: "NVIDIA H100 datasheet and Hopper whitepaper (SMs, clock, HBM3 3.35 TB/s, 50 MB L2, 228 KB \
             shared per SM); DRAM efficiency and the cost of a block measured on an H100 in this project \
             (vector add 2^26: 0.295 ms; 2^18 blocks of 64 threads copying 64 MiB: 165 us, about 80 ns \
             per block per SM); the launch, atomic rates and atomic units measured by \
             bench/cost/calibrate on an H100 (an empty kernel: 5.7 us; one atomic per warp on one \
             address: 1.8 ns float, 0.75 ns integer; 2^20 integer atomics over 128 B to 1 MB: 310 us \
             within 1 KB, 97 us over 4 KB, 35 us over 16 KB, 20 us over 64 KB); latencies from public \
             microbenchmarks of Hopper",
    validation: Some(Validation { launches: 94, median_error: 1.14, within_1_5: 0.95, worst: 1.9, date: "2026-11-27" }),
};

/// The GPUs the model knows; the first is the default.
pub const PROFILES: &[GpuProfile] = &[
    H100,
    GpuProfile {
        name: "h200",
        title: "NVIDIA H200 SXM 141GB",
        dram_gbs: 4800.0,
        source: "NVIDIA H200 datasheet (the H100's GH100 chip: 132 SMs, 1.98 GHz, 50 MB L2, 228 KB shared per \
                 SM; HBM3e at 4.8 TB/s); the rest is the H100's, measured there, on the same chip: not yet \
                 validated on an H200 (bench/cost/validate)",
        validation: None,
        ..H100
    },
    GpuProfile {
        name: "a100",
        title: "NVIDIA A100 SXM4 80GB",
        sms: 108,
        clock_ghz: 1.41,
        dram_gbs: 2039.0,
        dram_efficiency: 0.85,
        l2_bytes: 40 << 20,
        l2_gbs: 4800.0,
        l1_shared_bytes: 192 << 10,
        shared_per_sm: 164 << 10,
        max_warps_per_sm: 64,
        max_blocks_per_sm: 32,
        regs_per_sm: 65536,
        fp64_ratio: 0.5,
        l1_latency: 33.0,
        l2_latency: 200.0,
        dram_latency: 800.0,
        same_address_atomic_ns: 2.4,
        same_address_int_atomic_ns: 1.0,
        atomic_units: 64,
        atomic_unit_bytes: 1024,
        atomic_sector_ns: 0.7,
        launch_us: 5.7,
        block_launch_ns: 110.0,
        source: "NVIDIA A100 datasheet and Ampere whitepaper (SMs, clock, HBM2e 2.0 TB/s, 40 MB L2, 164 KB shared \
                 per SM); latencies and atomic rate scaled from the H100 figures by clock",
        validation: None,
    },
    GpuProfile {
        name: "l4",
        title: "NVIDIA L4 (Ada, 24GB)",
        sms: 58,
        clock_ghz: 2.04,
        dram_gbs: 300.0,
        dram_efficiency: 0.85,
        l2_bytes: 48 << 20,
        l2_gbs: 2500.0,
        l1_shared_bytes: 128 << 10,
        shared_per_sm: 100 << 10,
        max_warps_per_sm: 48,
        max_blocks_per_sm: 24,
        regs_per_sm: 65536,
        fp64_ratio: 1.0 / 64.0,
        l1_latency: 33.0,
        l2_latency: 230.0,
        dram_latency: 700.0,
        same_address_atomic_ns: 1.8,
        same_address_int_atomic_ns: 0.75,
        atomic_units: 32,
        atomic_unit_bytes: 1024,
        atomic_sector_ns: 0.5,
        launch_us: 5.7,
        block_launch_ns: 80.0,
        source: "NVIDIA L4 datasheet and Ada whitepaper (58 SMs, GDDR6 300 GB/s, 48 MB L2, 100 KB shared per SM, \
                 48 warps per SM); latencies and atomic rate from the H100 figures",
        validation: None,
    },
    GpuProfile {
        name: "rtx4090",
        title: "NVIDIA GeForce RTX 4090 (Ada)",
        sms: 128,
        clock_ghz: 2.52,
        dram_gbs: 1008.0,
        dram_efficiency: 0.88,
        l2_bytes: 72 << 20,
        l2_gbs: 5000.0,
        l1_shared_bytes: 128 << 10,
        shared_per_sm: 100 << 10,
        max_warps_per_sm: 48,
        max_blocks_per_sm: 24,
        regs_per_sm: 65536,
        fp64_ratio: 1.0 / 64.0,
        l1_latency: 33.0,
        l2_latency: 230.0,
        dram_latency: 700.0,
        same_address_atomic_ns: 1.5,
        same_address_int_atomic_ns: 0.62,
        atomic_units: 48,
        atomic_unit_bytes: 1024,
        atomic_sector_ns: 0.4,
        launch_us: 5.7,
        block_launch_ns: 80.0,
        source: "NVIDIA Ada whitepaper (128 SMs, 2.52 GHz boost, GDDR6X 1008 GB/s, 72 MB L2, 100 KB shared per SM); \
                 latencies and atomic rate from the H100 figures",
        validation: None,
    },
];

/// The profile named `name` (case and spaces ignored, `h100-sxm` and `sxm` suffixes accepted),
/// or a message that lists the known ones.
pub fn find(name: &str) -> Result<&'static GpuProfile, String> {
    let key: String = name.chars().filter(|c| c.is_ascii_alphanumeric()).collect::<String>().to_ascii_lowercase();
    let key = key.trim_start_matches("nvidia").trim_start_matches("geforce");
    let key = key
        .strip_suffix("sxm5")
        .or_else(|| key.strip_suffix("sxm4"))
        .or_else(|| key.strip_suffix("sxm"))
        .unwrap_or(key);
    PROFILES.iter().find(|p| p.name == key).ok_or_else(|| {
        format!(
            "no GPU profile named `{name}`; the known ones are {}",
            PROFILES.iter().map(|p| format!("`{}` ({})", p.name, p.title)).collect::<Vec<_>>().join(", ")
        )
    })
}

/// The profile of a GPU by its device name (`NVIDIA H100 80GB HBM3`), when the model knows it.
pub fn matching(device: &str) -> Option<&'static GpuProfile> {
    let d = device.to_ascii_lowercase();
    let has = |w: &str| d.split(|c: char| !c.is_ascii_alphanumeric()).any(|part| part == w);
    PROFILES.iter().find(|p| match p.name {
        "rtx4090" => has("4090"),
        name => has(name),
    })
}

/// The default reference GPU (an H100 SXM).
pub fn default_profile() -> &'static GpuProfile {
    &PROFILES[0]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profiles_are_found_by_loose_names_and_unknown_ones_list_the_known() {
        assert_eq!(find("H100").unwrap().name, "h100");
        assert_eq!(find("h100-sxm").unwrap().name, "h100");
        assert_eq!(find("NVIDIA A100 SXM4").unwrap().name, "a100");
        assert_eq!(find("RTX 4090").unwrap().name, "rtx4090");
        assert_eq!(matching("NVIDIA H100 80GB HBM3").map(|p| p.name), Some("h100"));
        assert_eq!(matching("NVIDIA H200").map(|p| p.name), Some("h200"));
        assert_eq!(matching("NVIDIA GeForce RTX 4090").map(|p| p.name), Some("rtx4090"));
        assert_eq!(matching("NVIDIA L40S"), None, "an L40S is not an L4");
        let err = find("v100").unwrap_err();
        assert!(err.contains("`v100`") && err.contains("`h100`") && err.contains("`l4`"), "{err}");
    }
}
