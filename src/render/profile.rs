//! `:profile`'s view: what the cost model counted for each source line of a launch, as Nsight
//! Compute's source view shows it (warp instructions, active lanes, sectors per request, DRAM
//! bytes, bank-conflict ways, atomics), the line that wastes most marked with what to change,
//! and the occupancy and traffic under it.

use std::io::{self, Write};

use comfy_table::{Cell, CellAlignment, Table, presets::UTF8_FULL_CONDENSED};

use super::Style;
use crate::cost::{self, CostReport, Limiter};
use crate::diag::SourceMap;
use crate::diag::text::thousands;

/// Draw `c`, the cost report of a launch, line by line under `title`; `sources` holds the
/// kernel's text, for each line's number and source.
pub fn write_profile(
    out: &mut dyn Write,
    title: &str,
    c: &CostReport,
    sources: &SourceMap,
    style: &Style,
) -> io::Result<()> {
    let o = &c.occupancy;
    let rest = format!(
        "estimated {} on {}: {}",
        crate::diag::text::format_us(c.estimate.time_us),
        c.profile.title,
        c.estimate.limiter.name()
    );
    super::write_heading(out, title, &rest, style)?;
    let rows = line_rows(c, sources);
    let worst = worst_line(&rows, c, sources);
    let all = ["line", "source", "instr", "lanes", "sectors/req", "DRAM", "ways", "atomics"];
    // Every column but the source, as text: their widths say how much room the source has.
    let cells: Vec<[String; 7]> = rows
        .iter()
        .map(|(line, _, k)| {
            let spr = if k.global_load_requests + k.global_store_requests > 0 {
                format!("{:.1} / {:.1}", k.sectors_per_request(), k.ideal_sectors_per_request())
            } else {
                "-".into()
            };
            let ways = if k.shared_requests > 0 {
                format!("{:.1}", k.wavefronts as f64 / k.shared_requests as f64)
            } else {
                "-".into()
            };
            let mark = if worst.as_ref().is_some_and(|w| w.0 == *line) { "▶ " } else { "" };
            let number = if *line == HELPER_LINE { "-".to_string() } else { line.to_string() };
            [
                format!("{mark}{number}"),
                thousands(k.issued as u128),
                format!("{:.0}%", 100.0 * k.simt_efficiency()),
                spr,
                if k.dram_bytes() > 0 { crate::diag::text::decimal_bytes(k.dram_bytes() as f64) } else { "-".into() },
                ways,
                if k.atomics > 0 { thousands(k.atomics as u128) } else { "-".into() },
            ]
        })
        .collect();
    // A column with nothing on any line (no shared memory, no atomics) is left out: at 80
    // columns its room goes to the source.
    let shown: Vec<usize> = (0..7).filter(|&i| i < 3 || cells.iter().any(|c| c[i] != "-")).collect();
    let header: Vec<&str> =
        std::iter::once(all[0]).chain(std::iter::once(all[1])).chain(shown[1..].iter().map(|&i| all[i + 1])).collect();
    let right = |s: &str| Cell::new(s).set_alignment(CellAlignment::Right);
    let build = |room: usize| {
        let mut table = Table::new();
        table.load_preset(UTF8_FULL_CONDENSED);
        table.force_no_tty();
        table.set_header(header.clone());
        for ((_, text, _), cell) in rows.iter().zip(&cells) {
            // A source line longer than its room is cut with `…`, never wrapped: one table
            // row per line of the kernel.
            let source = if text.chars().count() > room {
                format!("{}…", text.chars().take(room.saturating_sub(1)).collect::<String>())
            } else {
                text.clone()
            };
            // Plain text: colour codes inside a cell would count towards its width.
            let mut row = vec![Cell::new(&cell[0]), Cell::new(source)];
            row.extend(shown[1..].iter().map(|&i| right(&cell[i])));
            table.add_row(row);
        }
        style.enlarge(&mut table, 4);
        table
    };
    // The source gets what the other columns, their padding and the borders leave.
    let probe = build(usize::MAX);
    let padding: usize = probe.column_iter().map(|c| c.padding_width() as usize).sum();
    let others: usize = shown
        .iter()
        .map(|&i| {
            let head = all[if i == 0 { 0 } else { i + 1 }].chars().count();
            cells.iter().map(|c| c[i].chars().count()).max().unwrap_or(0).max(head)
        })
        .sum();
    let borders = header.len() + 1;
    let room = style.width.saturating_sub(others + padding + borders).max("source".len());
    let table = build(room);
    writeln!(out, "{table}")?;
    let t = &c.totals;
    writeln!(
        out,
        "{}",
        super::prose(
            &format!(
                "{}. Occupancy {:.0}% ({} blocks of {} warps per SM, limited by {}; {}); \
                 {:.0}% of lanes active; {} through L2, {} to and from DRAM.",
                super::cost::explain(c),
                100.0 * o.theoretical,
                o.blocks_per_sm,
                o.warps_per_block,
                o.limited_by,
                if o.registers_from_compiler {
                    format!("{} registers per thread, from the GPU's compiler", o.registers)
                } else {
                    format!("about {} registers per thread", o.registers)
                },
                100.0 * t.simt_efficiency(),
                crate::diag::text::decimal_bytes((t.l2_sectors * 32) as f64),
                crate::diag::text::decimal_bytes(t.dram_bytes() as f64),
            ),
            style
        )
    )?;
    if let Some((line, advice)) = worst {
        writeln!(out, "{}", style.warn(&super::prose(&format!("line {line}: {advice}"), style)))?;
    }
    writeln!(out, "{}", style.dim(&super::prose(&format!("{}.", c.profile.trust()), style)))?;
    writeln!(out, "{}", style.dim(&super::prose(&legend(&header), style)))
}

/// What the columns shown mean, for the line under the table.
fn legend(header: &[&str]) -> String {
    let words = [
        ("instr", "warp instructions"),
        ("lanes", "active lanes per instruction"),
        ("sectors/req", "32-byte sectors per global load or store, measured / ideal"),
        ("ways", "wavefronts per shared-memory request (1 = no bank conflict)"),
        ("atomics", "atomic operations"),
    ];
    let parts: Vec<String> =
        words.iter().filter(|(h, _)| header.contains(h)).map(|(h, m)| format!("{h}: {m}")).collect();
    format!("{}; `docs/cost-model.md` explains the model", parts.join("; "))
}

/// One row per source line of the kernel: its number, its text and the counts of its places.
fn line_rows(c: &CostReport, sources: &SourceMap) -> Vec<(u32, String, cost::Counts)> {
    let mut rows: Vec<(u32, String, cost::Counts)> = Vec::new();
    for place in &c.places {
        let (line, text) = match helper_of(sources, place.span) {
            // Not a line of the learner's: one row for the helper, after their lines.
            Some(name) => (HELPER_LINE, format!("{name}, a helper of gridlab's")),
            None => (sources.line_of(place.span), sources.line_text(place.span).unwrap_or("").trim().to_string()),
        };
        match rows.iter_mut().find(|r| r.0 == line && r.1 == text) {
            Some(r) => r.2.add(&place.counts),
            None => rows.push((line, text, place.counts.clone())),
        }
    }
    rows.sort_by_key(|r| r.0);
    rows
}

/// The row of a helper function's costs, shown as line `-`.
const HELPER_LINE: u32 = u32::MAX;

/// The function around `span` when it is C that gridlab wrote for a Python kernel, not lowered
/// from one of the learner's lines (`py_floordiv` for Python's `//`): its name.
fn helper_of(sources: &SourceMap, span: crate::diag::Span) -> Option<String> {
    let file = sources.get(span.source)?;
    file.origin.as_ref()?;
    if sources.resolve(span) != span {
        return None;
    }
    let before = file.text.get(..span.lo as usize)?;
    let decl = &before[before.rfind("__device__")?..];
    let name = decl[..decl.find('(')?].split_whitespace().last()?;
    Some(name.trim_start_matches('*').to_string())
}

/// The branch around the learner's `line` when its condition reads an array (`if (x[i] < 0.0f)`,
/// `if x[i] < 0:`): that branch's line and condition. Found in the learner's own text, by the
/// lines' indentation, as both languages are written.
fn data_branch(c: &CostReport, sources: &SourceMap, line: u32) -> Option<(u32, String)> {
    let place = c.places.iter().find(|p| helper_of(sources, p.span).is_none() && sources.line_of(p.span) == line)?;
    let at = sources.resolve(place.span);
    let text = &sources.get(at.source)?.text;
    let (cond, offset) = crate::render::advice::enclosing_branch(text, at.lo as usize)?;
    cond.contains('[').then(|| (sources.line_of(crate::diag::Span::new(at.source, offset, offset + 1)), cond))
}

/// A kernel written in Python is advised in Python's words.
fn is_python(c: &CostReport, sources: &SourceMap) -> bool {
    c.places.first().and_then(|p| sources.get(p.span.source)).is_some_and(|f| f.origin.is_some())
}

/// The launch's costliest waste, as one sentence: the line, its code and what to do
/// (`line 4 (`img[r * cols + c] *= gain;`): the lanes of a warp touch 32.0 sectors ...`). What a
/// failed check on a cost says why with; `:profile` marks the same line.
pub fn costliest_line(c: &CostReport, sources: &SourceMap) -> Option<String> {
    let rows = line_rows(c, sources);
    let (line, advice) = worst_line(&rows, c, sources)?;
    Some(said(&rows, line, &advice))
}

/// The costliest waste among those a check's failed `expect` reads (`fields`, names of the cost
/// record's fields: `atomics`, `sectors_per_request`, ...):
/// why `expect c.atomics <= blocks` failed, said for that field even when another waste costs
/// more time or the field's waste is not what limits the launch.
pub fn field_gap(c: &CostReport, sources: &SourceMap, fields: &[&str]) -> Option<String> {
    let rows = line_rows(c, sources);
    let w = costliest(wastes(&rows, c, sources, true).into_iter().filter(|w| fields.contains(&w.field)))?;
    Some(said(&rows, w.line, &w.advice))
}

fn said(rows: &[(u32, String, cost::Counts)], line: u32, advice: &str) -> String {
    let text = rows.iter().find(|r| r.0 == line).map(|r| r.1.as_str()).unwrap_or_default();
    format!("line {line} (`{text}`): {advice}")
}

/// What one line wastes, by the cost record's field that shows it.
struct Waste {
    field: &'static str,
    /// Roughly in sectors' worth of time, to rank one waste against another.
    waste: f64,
    line: u32,
    advice: String,
}

/// The first of the largest (in the lines' order, so ties go to the earlier line).
fn costliest(wastes: impl Iterator<Item = Waste>) -> Option<Waste> {
    wastes.filter(|w| w.waste > 0.0).fold(None, |best: Option<Waste>, w| match best {
        Some(b) if b.waste >= w.waste => Some(b),
        _ => Some(w),
    })
}

/// The line that wastes the most, and what to do about it: uncoalesced global access, bank
/// conflicts, atomics on one address or divergence, judged by how much each costs.
fn worst_line(rows: &[(u32, String, cost::Counts)], c: &CostReport, sources: &SourceMap) -> Option<(u32, String)> {
    costliest(wastes(rows, c, sources, false).into_iter()).map(|w| (w.line, w.advice))
}

/// Every line's waste of each kind. Atomics count as waste where they limit the launch, or,
/// with `all_atomics` (a check that counts them), wherever a line makes any.
fn wastes(rows: &[(u32, String, cost::Counts)], c: &CostReport, sources: &SourceMap, all_atomics: bool) -> Vec<Waste> {
    let python = is_python(c, sources);
    let (padded, per_warp) = if python {
        ("`cuda.shared.array((32, 33), float32)`", "`cuda.threadIdx.x // 32`")
    } else {
        ("`[32][33]`", "`threadIdx.x / 32`")
    };
    let mut found = Vec::new();
    let mut consider = |field: &'static str, waste: f64, line: u32, advice: String| {
        let advice = if python { super::findings::in_python(&advice) } else { advice };
        found.push(Waste { field, waste, line, advice });
    };
    let atomics_limit = c.estimate.limiter == Limiter::Atomics || all_atomics;
    // A helper's waste is not on a line the learner can change.
    for (line, _, k) in rows.iter().filter(|r| r.0 != HELPER_LINE) {
        if k.global_load_requests + k.global_store_requests > 0 {
            let spr = k.sectors_per_request();
            let ideal = k.ideal_sectors_per_request();
            if spr > ideal * 1.5 {
                consider(
                    "sectors_per_request",
                    (k.load_sectors + k.store_sectors).saturating_sub(k.ideal_ld_st_sectors) as f64,
                    *line,
                    format!(
                        "the lanes of a warp touch {spr:.1} sectors per request instead of {ideal:.1}: neighbouring threads \
                         reach addresses far apart; make threadIdx.x index the fastest-changing (last) array index, or stage \
                         the data through shared memory"
                    ),
                );
            }
        }
        if k.shared_requests > 0 && k.wavefronts > k.ideal_wavefronts + k.shared_requests / 10 {
            let ways = k.wavefronts as f64 / k.shared_requests as f64;
            consider(
                "bank_conflicts",
                (k.wavefronts - k.ideal_wavefronts) as f64 * 4.0,
                *line,
                format!(
                    "{ways:.1}-way shared-memory bank conflicts: lanes of a warp hit different words of the same bank; \
                     pad the array's row by one element (e.g. {padded}) so a column falls in 32 different banks"
                ),
            );
        }
        if k.atomics > 0 && atomics_limit && !c.atomics.one_address() {
            consider(
                "atomics",
                k.atomics as f64 * 8.0,
                *line,
                format!(
                    "{} atomics on a few nearby addresses queue at one of the L2's atomic units: count in shared \
                     memory per block first (a private copy, as a histogram does), then add each block's counts \
                     to global memory",
                    thousands(k.atomics as u128)
                ),
            );
        } else if k.worst_atomic_lanes > 1 && atomics_limit {
            consider(
                "atomics",
                k.atomics as f64 * 8.0,
                *line,
                format!(
                    "{} atomics land on one address and run one after another: combine first (a shared-memory or \
                     warp-shuffle reduction per block) and let one thread per block do the atomic",
                    thousands(c.atomics.hottest_address as u128)
                ),
            );
        }
        if k.issued > 0 && k.simt_efficiency() < 0.6 && k.issued * 10 > c.totals.issued / 10 {
            let active = format!("only {:.0}% of the lanes are active here", 100.0 * k.simt_efficiency());
            // A branch on the data each thread reads diverges where a warp's elements differ: the
            // fix is which elements a warp reads, not what it branches on.
            let advice = match data_branch(c, sources, *line) {
                Some((at, cond)) => format!(
                    "{active}: the branch on line {at} (`{cond}`) goes by the data each thread reads, and the threads of \
                     a warp read elements that go different ways; give neighbouring threads neighbouring elements \
                     (thread `i` element `i`), so that a warp's elements take one path wherever the data does"
                ),
                None => format!(
                    "{active}: the warp's threads took different branches (divergence); branch on something the same \
                     for a whole warp, e.g. {per_warp}"
                ),
            };
            consider("simt_efficiency", (k.issued as f64) * (1.0 - k.simt_efficiency()), *line, advice);
        }
    }
    found
}
