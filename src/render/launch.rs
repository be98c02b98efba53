//! The lines under a launch: the one-line summary and the kernel's printf output.

use std::io::{self, Write};

use super::Style;
use super::findings::thousands;
use crate::backend::{LaunchReport, LaunchSpec};

/// `add_half<<<4096, 256>>>: 4096 x 256 = 1,048,576 threads on sim, 98,304 warp steps`.
///
/// On the simulator the cost is counted in warp steps, not seconds, so that the same seed gives
/// byte-identical output (wall time is for `:time`).
pub fn write_summary(
    out: &mut dyn Write,
    spec: &LaunchSpec,
    backend: &str,
    report: &LaunchReport,
    style: &Style,
) -> io::Result<()> {
    let cost = match (report.steps, report.kernel_ms) {
        (Some(steps), _) => format!("{} warp steps", thousands(steps)),
        (None, Some(ms)) => format!("kernel {}", format_duration(std::time::Duration::from_secs_f64(ms as f64 / 1e3))),
        (None, None) => format_duration(report.elapsed),
    };
    let findings = match report.findings.len() {
        0 => style.ok("clean"),
        1 => style.warn("1 finding"),
        n => style.warn(&format!("{n} findings")),
    };
    writeln!(
        out,
        "{}: {} x {} = {} thread{} on {backend}, {cost}, {findings}",
        style.bold(&format!("{}<<<{}, {}>>>", spec.kernel, spec.grid, spec.block)),
        spec.grid,
        spec.block,
        thousands(spec.total_threads()),
        if spec.total_threads() == 1 { "" } else { "s" },
    )
}

/// printf output, each line under its thread, in the order the threads printed.
pub fn write_output(out: &mut dyn Write, report: &LaunchReport, style: &Style) -> io::Result<()> {
    if report.output.is_empty() {
        return Ok(());
    }
    let n = report.output.len();
    writeln!(out, "{}", style.dim(&format!("printf output ({n} line{}):", if n == 1 { "" } else { "s" })))?;
    for line in &report.output {
        let text = line.text.trim_end_matches('\n');
        match &line.thread {
            Some(t) => writeln!(out, "  {} {text}", style.dim(&format!("[{}]", t.describe())))?,
            None => writeln!(out, "  {text}")?,
        }
    }
    if report.output_truncated {
        writeln!(out, "{}", style.warn("  ... more output was cut off"))?;
    }
    Ok(())
}

/// `12.3 ms`, `1.52 s`, `850 us`.
pub fn format_duration(d: std::time::Duration) -> String {
    let s = d.as_secs_f64();
    if s >= 1.0 {
        format!("{s:.2} s")
    } else if s >= 1e-3 {
        format!("{:.1} ms", s * 1e3)
    } else {
        format!("{:.0} us", s * 1e6)
    }
}
