//! `gridlab doctor`: is there a usable GPU, and if not, what to install. Everything it checks is
//! what the GPU backend needs at start: the driver and NVRTC libraries, a context on a device.

use std::io::{self, Write};
use std::process::ExitCode;

use crate::backend::gpu::cache;
use crate::backend::gpu::libs::Libraries;
use crate::backend::gpu::{GpuBackend, short_name};
use crate::session::Options;

/// `13000` -> `13.0`.
fn cuda_version(v: i32) -> String {
    format!("{}.{}", v / 1000, (v % 1000) / 10)
}

/// The compile cache's folder and what it holds: `~/.cache/gridlab/kernels (3 entries, 41 KiB)`.
fn compile_cache() -> String {
    match cache::dir() {
        Some(dir) => {
            let (entries, bytes) = cache::usage(&dir);
            let plural = if entries == 1 { "entry" } else { "entries" };
            format!("{} ({entries} {plural}, {})", dir.display(), crate::diag::text::human_bytes(bytes))
        }
        None => "none (this platform has no cache folder)".into(),
    }
}

pub fn run(options: &Options, out: &mut impl Write) -> io::Result<ExitCode> {
    let style = &options.style;
    let libs = Libraries::find();
    let show = |p: &Option<std::path::PathBuf>| {
        p.as_ref().map_or_else(|| style.error("not found"), |p| p.display().to_string())
    };
    writeln!(out, "{}", style.bold("gridlab doctor"))?;
    writeln!(out, "  driver library   {}", show(&libs.driver))?;
    writeln!(out, "  NVRTC library    {}", show(&libs.nvrtc))?;
    writeln!(out, "  compile cache    {}", compile_cache())?;
    if let Some(advice) = libs.missing_advice() {
        writeln!(
            out,
            "  searched         {} folders (the loader path, CUDA_HOME, CUDA_PATH, /usr/local/cuda*, Python wheels)",
            libs.searched.len()
        )?;
        writeln!(out, "  auto picks       sim")?;
        writeln!(out, "\n{} {advice}", style.error("no usable GPU:"))?;
        return Ok(ExitCode::from(1));
    }
    match GpuBackend::start(options.device, options.timeout) {
        Ok(gpu) => {
            let i = gpu.info();
            writeln!(out, "  driver           CUDA {}", cuda_version(i.driver_version))?;
            writeln!(out, "  NVRTC            {}.{}", i.nvrtc_version.0, i.nvrtc_version.1)?;
            writeln!(
                out,
                "  device {}         {} ({}): compute capability {}.{}, {} SMs, {:.1} GiB, peak memory bandwidth {:.0} GB/s",
                i.ordinal,
                i.name,
                short_name(&i.name),
                i.compute_capability.0,
                i.compute_capability.1,
                i.sm_count,
                i.total_mem as f64 / (1u64 << 30) as f64,
                i.peak_bandwidth_gbs
            )?;
            writeln!(
                out,
                "  limits           {} threads per block, block ({}, {}, {}), grid ({}, {}, {}), {} KiB shared memory per block",
                i.max_threads_per_block,
                i.max_block[0],
                i.max_block[1],
                i.max_block[2],
                i.max_grid[0],
                i.max_grid[1],
                i.max_grid[2],
                i.max_shared_per_block / 1024
            )?;
            writeln!(out, "  auto picks       gpu")?;
            Ok(ExitCode::SUCCESS)
        }
        Err(why) => {
            writeln!(out, "  auto picks       sim")?;
            writeln!(out, "\n{} {why}", style.error("no usable GPU:"))?;
            writeln!(
                out,
                "Check that `nvidia-smi` lists a GPU; on a machine without one, gridlab runs kernels on its simulator."
            )?;
            Ok(ExitCode::from(1))
        }
    }
}
