//! The lines under a launch: the one-line summary and the kernel's printf output.

use std::io::{self, Write};

use super::Style;
use crate::diag::text::thousands;
use crate::launch::{LaunchReport, LaunchSpec};

/// `add_half<<<4096, 256>>>: 4096 x 256 = 1,048,576 threads on sim, 98,304 warp steps, clean`.
///
/// On the simulator the cost is counted in warp steps, not seconds, so that the same seed gives
/// byte-identical output (wall time is for `:time`).
///
/// The line fits `style.width`: when it does not, the cost and findings go on a second line,
/// then the threads too, and a kernel name too long for a line of its own is cut with `…`
/// (its `<<<grid, block>>>` stays whole: that is what the learner launched).
pub fn write_summary(
    out: &mut dyn Write,
    spec: &LaunchSpec,
    backend: &str,
    report: &LaunchReport,
    style: &Style,
) -> io::Result<()> {
    write_summary_as(out, spec, backend, report, style, Syntax::Cuda)
}

/// How a launch is written: CUDA's `k<<<grid, block>>>` or Numba's `k[grid, block]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Syntax {
    Cuda,
    Numba,
}

/// [`write_summary`], naming the launch as the learner's language writes it.
pub fn write_summary_as(
    out: &mut dyn Write,
    spec: &LaunchSpec,
    backend: &str,
    report: &LaunchReport,
    style: &Style,
    syntax: Syntax,
) -> io::Result<()> {
    // This line is written under every launch, thousands of times in a script of launches: its
    // pieces are made once each and written straight out, not formatted again into new strings.
    let cost = match (report.steps, report.kernel_ms) {
        (Some(steps), _) => format!("{} warp step{}", thousands(steps), if steps == 1 { "" } else { "s" }),
        (None, Some(ms)) => format!("kernel {}", format_duration(std::time::Duration::from_secs_f64(ms as f64 / 1e3))),
        (None, None) => format_duration(report.elapsed),
    };
    let many;
    let findings = match report.findings.len() {
        0 => "clean",
        1 => "1 finding",
        n => {
            many = format!("{n} findings");
            many.as_str()
        }
    };
    let findings_w = findings.chars().count();
    let findings = if report.findings.is_empty() { style.ok(findings) } else { style.warn(findings) };
    let threads = format!(
        "{} x {} = {} thread{} on {backend}",
        spec.grid,
        spec.block,
        thousands(spec.total_threads()),
        if spec.total_threads() == 1 { "" } else { "s" },
    );
    let launch = config_written(spec, syntax);
    let width = style.width;
    // Widths are counted on the plain text: colour codes take no columns.
    let cols = |s: &str| s.chars().count();
    let launch_w = cols(&launch);
    let head_w = cols(&spec.kernel) + launch_w + 1;
    let tail_w = cols(&cost) + 2 + findings_w;
    let threads_w = cols(&threads);
    // The kernel's name and configuration, the name cut with `…` where the line has no room.
    let head = |room: usize| {
        let mut text = String::with_capacity(spec.kernel.len() + launch.len() + 3);
        if head_w <= room {
            text.push_str(&spec.kernel);
        } else {
            let keep = room.saturating_sub(launch_w + 2).max(1);
            text.extend(spec.kernel.chars().take(keep));
            text.push('…');
        }
        text.push_str(&launch);
        style.bold(&text)
    };
    let head = head(width);
    if head_w + 1 + threads_w + 2 + tail_w <= width {
        writeln!(out, "{head}: {threads}, {cost}, {findings}")
    } else if head_w + 1 + threads_w <= width {
        writeln!(out, "{head}: {threads}\n  {cost}, {findings}")
    } else if 2 + threads_w + 2 + tail_w <= width {
        writeln!(out, "{head}:\n  {threads}, {cost}, {findings}")
    } else {
        writeln!(out, "{head}:\n  {threads}\n  {cost}, {findings}")
    }
}

/// printf output, each line under its thread, in the order the threads printed.
pub fn write_output(out: &mut dyn Write, report: &LaunchReport, style: &Style) -> io::Result<()> {
    if report.output.is_empty() {
        return Ok(());
    }
    let n = report.output.len();
    writeln!(out, "{}", style.dim(&format!("printf output ({n} line{}):", if n == 1 { "" } else { "s" })))?;
    for line in &report.output {
        // A kernel can print any byte (`printf("%c", 27)`): shown escaped, never sent raw.
        let text = crate::diag::printable(line.text.trim_end_matches('\n'));
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

/// A launch's configuration as its language writes it: `<<<4, 256>>>` or `[4, 256]`.
pub fn config_written(spec: &LaunchSpec, syntax: Syntax) -> String {
    match syntax {
        Syntax::Cuda => format!("<<<{}, {}>>>", spec.grid, spec.block),
        Syntax::Numba => format!("[{}, {}]", spec.grid, spec.block),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::launch::Dim3;
    use crate::render::text::visible_width;

    fn summary(kernel: &str, grid: Dim3, block: Dim3, backend: &str, report: &LaunchReport, color: bool) -> String {
        let spec =
            LaunchSpec { kernel: kernel.into(), grid, block, shared_bytes: 0, args: vec![], symbols: Vec::new() };
        let mut out = Vec::new();
        write_summary(&mut out, &spec, backend, report, &Style { color, width: 80, big: false, ..Style::plain() })
            .unwrap();
        let text = String::from_utf8(out).unwrap();
        for line in text.lines() {
            assert!(visible_width(line) <= 80, "{} columns:\n{text}", visible_width(line));
        }
        text
    }

    fn sim_report() -> LaunchReport {
        LaunchReport { steps: Some(98_304), ..LaunchReport::default() }
    }

    #[test]
    fn a_summary_is_one_line_when_it_fits_else_the_cost_goes_below() {
        let text = summary("add_half", Dim3::linear(4), Dim3::linear(256), "sim", &sim_report(), false);
        assert_eq!(text, "add_half<<<4, 256>>>: 4 x 256 = 1,024 threads on sim, 98,304 warp steps, clean\n");
        let text = summary("add_half", Dim3::linear(4096), Dim3::linear(256), "sim", &sim_report(), false);
        assert_eq!(
            text,
            "add_half<<<4096, 256>>>: 4096 x 256 = 1,048,576 threads on sim\n  98,304 warp steps, clean\n"
        );
    }

    #[test]
    fn long_summaries_fit_80_columns() {
        let gpu = LaunchReport { kernel_ms: Some(12.3), ..LaunchReport::default() };
        let (grid, block) = (Dim3::new(4096, 4096, 1), Dim3::new(16, 16, 1));
        let mut all = String::new();
        for (kernel, report, backend) in [
            ("add_half", &sim_report(), "sim"),
            ("matmul_tiled_shared", &sim_report(), "sim"),
            ("matrix_multiply_tiled_with_shared_memory_padding", &gpu, "H100"),
            ("matrix_multiply_tiled_with_shared_memory_padding_to_avoid_bank_conflicts", &gpu, "RTX 4090"),
        ] {
            all.push_str(&summary(kernel, grid, block, backend, report, false));
        }
        insta::assert_snapshot!("long_summaries_80", all);
    }

    #[test]
    fn colour_codes_do_not_count_towards_the_width() {
        let report = LaunchReport {
            steps: Some(1),
            findings: vec![crate::finding::Finding::GuardWrite {
                memory: crate::finding::Memory::Global("a".into()),
                len: 32,
                count: 1,
                min_index: 32,
                max_index: 32,
            }],
            ..LaunchReport::default()
        };
        // 79 columns of text, many more bytes with the colour codes.
        let text = summary("a_longer_kernel", Dim3::linear(1), Dim3::linear(32), "sim", &report, true);
        assert_eq!(text.lines().count(), 1, "{text}");
        assert!(text.contains("1 warp step, "), "{text}");
    }
}
