//! `:time`: how long a launch takes. On the simulator that is simulated warp steps (one
//! instruction for one warp), not seconds: they are deterministic and say how much work the
//! kernel does, not how fast a GPU would do it. The GPU backend fills in `kernel_times`.

use std::io::{self, Write};
use std::time::Duration;

use comfy_table::{Cell, CellAlignment, Table, presets::UTF8_FULL_CONDENSED};

use super::Style;
use super::launch::format_duration;
use crate::diag::text::thousands;

#[derive(Clone, Debug, Default)]
pub struct Timing {
    /// `kernel<<<grid, block>>>`.
    pub launch: String,
    /// `sim`, or the GPU's name.
    pub backend: String,
    pub schedule: String,
    /// `0..4`, or `5` for one run.
    pub seeds: String,
    pub threads: u128,
    /// Simulated warp steps per run (simulator).
    pub steps: Vec<u64>,
    /// Kernel times per run, measured on a GPU (empty on the simulator).
    pub kernel_times: Vec<Duration>,
    /// Host time of each launch call on the GPU (the launch overhead).
    pub launch_overhead: Vec<Duration>,
    /// Bytes of the buffer arguments, for the bandwidth estimate.
    pub bytes: u64,
    /// The device's peak memory bandwidth in GB/s.
    pub peak_gbs: Option<f64>,
    /// The cost model's estimated time per run on the reference GPU, in microseconds
    /// (simulator), with the GPU's name and what limits the launch.
    pub estimates: Vec<f64>,
    pub reference: String,
    pub limiter: String,
    /// How far to trust the estimate, in words ([`crate::cost::GpuProfile::trust`]).
    pub trust: String,
    /// Why fewer runs were made than asked, or why their figures are not the kernel's.
    pub note: Option<String>,
}

fn min_median_max<T: Copy + Ord>(v: &[T]) -> Option<[T; 3]> {
    let mut s = v.to_vec();
    s.sort();
    Some([*s.first()?, s[(s.len() - 1) / 2], *s.last()?])
}

pub fn write_timing(out: &mut dyn Write, t: &Timing, style: &Style) -> io::Result<()> {
    let runs = t.steps.len().max(t.kernel_times.len());
    let rest = if t.kernel_times.is_empty() {
        format!(
            "{} run{} on {} ({} schedule, seed{} {}), {} thread{}",
            runs,
            if runs == 1 { "" } else { "s" },
            t.backend,
            t.schedule,
            if runs == 1 { "" } else { "s" },
            t.seeds,
            thousands(t.threads),
            if t.threads == 1 { "" } else { "s" }
        )
    } else {
        format!(
            "{} launch{} on {}, {} thread{}",
            runs,
            if runs == 1 { "" } else { "es" },
            t.backend,
            thousands(t.threads),
            if t.threads == 1 { "" } else { "s" }
        )
    };
    super::write_heading(out, &t.launch, &rest, style)?;
    let mut table = Table::new();
    table.load_preset(UTF8_FULL_CONDENSED);
    // A narrow screen wraps the long row labels (the reference GPU's name), not the border.
    table.set_content_arrangement(comfy_table::ContentArrangement::Dynamic);
    table.set_width(style.width.min(u16::MAX as usize) as u16);
    table.force_no_tty();
    table.set_header(["", "min", "median", "max"]);
    let right = |s: String| Cell::new(s).set_alignment(CellAlignment::Right);
    let us = |x: f64| Duration::from_secs_f64(x / 1e6);
    let estimates: Vec<Duration> = t.estimates.iter().map(|x| us(*x)).collect();
    if let Some([lo, mid, hi]) = min_median_max(&estimates) {
        table.add_row(vec![
            Cell::new(format!("estimated time on {}", t.reference)),
            right(format_duration(lo)),
            right(format_duration(mid)),
            right(format_duration(hi)),
        ]);
    }
    if let Some([lo, mid, hi]) = min_median_max(&t.steps) {
        table.add_row(vec![
            Cell::new("simulated warp steps"),
            right(thousands(lo)),
            right(thousands(mid)),
            right(thousands(hi)),
        ]);
        // Warps, not threads / 32: a launch of 1 thread is still one warp. A whole number is
        // written as one.
        let per = |s: u64| {
            let warps = t.threads.div_ceil(32).max(1) as u64;
            if s % warps == 0 { thousands(s / warps) } else { format!("{:.2}", s as f64 / warps as f64) }
        };
        table.add_row(vec![Cell::new("steps per warp"), right(per(lo)), right(per(mid)), right(per(hi))]);
    }
    if let Some([lo, mid, hi]) = min_median_max(&t.kernel_times) {
        table.add_row(vec![
            Cell::new("kernel time"),
            right(format_duration(lo)),
            right(format_duration(mid)),
            right(format_duration(hi)),
        ]);
    }
    if let Some([lo, mid, hi]) = min_median_max(&t.launch_overhead) {
        table.add_row(vec![
            Cell::new("launch overhead (host)"),
            right(format_duration(lo)),
            right(format_duration(mid)),
            right(format_duration(hi)),
        ]);
    }
    style.enlarge(&mut table, 3);
    writeln!(out, "{table}")?;
    if let Some(note) = &t.note {
        writeln!(out, "{}", style.warn(&super::prose(note, style)))?;
    }
    if let (Some([_, mid, _]), true) = (min_median_max(&t.kernel_times), t.bytes > 0) {
        let gbs = t.bytes as f64 / mid.as_secs_f64().max(1e-12) / 1e9;
        let share =
            t.peak_gbs.map(|p| format!(", {:.0}% of this GPU's peak {p:.0} GB/s", 100.0 * gbs / p)).unwrap_or_default();
        writeln!(
            out,
            "{}",
            super::prose(
                &format!(
                    "effective bandwidth {gbs:.0} GB/s{share} (an estimate: the bytes of the buffer arguments, {}, moved once per launch in the median kernel time)",
                    crate::diag::text::human_bytes(t.bytes)
                ),
                style
            )
        )?;
    }
    if !t.limiter.is_empty() {
        writeln!(out, "{}", super::prose(&t.limiter, style))?;
    }
    if !t.steps.is_empty() && t.kernel_times.is_empty() {
        let note = if t.estimates.is_empty() {
            "simulated warp steps (one instruction for one warp), not seconds: they count the work the kernel does, not how fast a GPU runs it; the GPU backend reports kernel times"
        } else {
            "the estimate comes from the simulator's counts of memory traffic, instructions and atomics (`:profile` shows them line by line); warp steps count the work, not time"
        };
        writeln!(out, "{}", style.dim(&super::prose(note, style)))?;
        if !t.estimates.is_empty() && !t.trust.is_empty() {
            writeln!(out, "{}", style.dim(&super::prose(&format!("{}.", t.trust), style)))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_projectors_table_keeps_to_the_screens_width() {
        let t = Timing {
            launch: "add_half<<<1024, 1024>>>".into(),
            backend: "sim".into(),
            schedule: "random".into(),
            seeds: "0..2".into(),
            threads: 1 << 20,
            steps: vec![393_216; 3],
            estimates: vec![9.0; 3],
            reference: "NVIDIA H100 SXM5 80GB".into(),
            limiter: "launch-bound".into(),
            ..Timing::default()
        };
        for width in [60, 80, 100] {
            let style = Style { color: false, width, big: true, rows: 40, ..Style::plain() };
            let mut out = Vec::new();
            write_timing(&mut out, &t, &style).unwrap();
            let text = String::from_utf8(out).unwrap();
            let table: Vec<&str> = text.lines().filter(|l| l.starts_with(['┌', '│', '└'])).collect();
            assert!(table.len() >= 5, "{text}");
            assert!(table.iter().all(|l| l.chars().count() <= width), "wider than {width}:\n{text}");
        }
    }
}
