//! `:race` and `:compare`: the outcomes of one launch run many times, side by side with the
//! sequential answer, a histogram of the distinct results and a verdict in plain words.
//!
//! ```text
//! add_half_everywhere<<<1024, 1024>>>: 10 runs on sim (random schedule, seeds 0..9)
//! ┌────────────┬─────────┬──────────┬──────────┐
//! │ run        ┆ outcome ┆ a[0]     ┆ a[1]     │
//! ╞════════════╪═════════╪══════════╪══════════╡
//! │ sequential ┆ A       ┆ 524288.  ┆ 524289.  │
//! ...
//! ```

use std::collections::HashMap;
use std::io::{self, Write};

use comfy_table::{Attribute, Cell, Color, Table, presets::UTF8_FULL_CONDENSED};

use super::Style;
use super::array::element;
use super::text::visible_width;
use crate::buffer::{Buffer, Shape};

/// One run of a launch: on the simulator (a seed) or on a GPU.
#[derive(Clone, Debug)]
pub struct Run {
    /// `sequential`, `seed 3`, `sim seed 3` (beside GPU runs) or `gpu 1`.
    pub label: String,
    /// Where it ran: `sim`, or the GPU's name.
    pub backend: String,
    /// The launch's buffers after the run, in launch order.
    pub buffers: Vec<Buffer>,
    /// The run was stopped (its buffers are as they were before).
    pub aborted: bool,
}

/// Every run of one launch, all from the same inputs.
#[derive(Clone, Debug)]
pub struct Outcomes {
    /// `kernel<<<grid, block>>>`.
    pub launch: String,
    /// The buffers' session names, in launch order.
    pub names: Vec<String>,
    /// The buffers as they were before every run.
    pub before: Vec<Buffer>,
    /// The simulator's sequential schedule: what a CPU loop computes.
    pub reference: Run,
    /// The runs to compare with it, which the histogram and the verdict speak about: the
    /// simulator's random schedules, or the GPU's runs when the session runs on a GPU.
    pub runs: Vec<Run>,
    /// Runs shown in the table under `runs` for comparison, but not counted by the histogram
    /// or the verdict: the simulator's random schedules beside GPU runs.
    pub beside: Vec<Run>,
    /// Some run reported a race finding.
    pub race_found: bool,
    /// Why the sequential run is no reference answer, when it is not: its own race made it wrong
    /// (a thread read shared memory before another thread of its block wrote it, with no
    /// barrier between, so even one thread at a time gives the wrong numbers).
    pub reference_wrong: Option<String>,
}

/// A column of the table: an element of one buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Col {
    buffer: usize,
    index: usize,
}

impl Outcomes {
    /// `self` (the simulator's runs) with `gpu`'s runs in their place: the simulator's random
    /// schedules stay in the table, beside the GPU's, relabelled `sim seed N`.
    pub fn with_gpu_runs(mut self, gpu: Vec<Run>) -> Outcomes {
        let mut sim = std::mem::replace(&mut self.runs, gpu);
        for run in &mut sim {
            run.label = format!("sim {}", run.label);
        }
        self.beside = sim;
        self
    }

    /// Every row of the table: the reference, the runs, then the runs beside them.
    fn all_runs(&self) -> impl Iterator<Item = &Run> {
        std::iter::once(&self.reference).chain(&self.runs).chain(&self.beside)
    }

    /// A row's label: the run's, marked when the run was stopped (`*`) or when it is a
    /// sequential run that is no reference.
    fn row_label(&self, run: &Run) -> String {
        let mut label = run.label.clone();
        if std::ptr::eq(run, &self.reference) && self.reference_wrong.is_some() {
            label.push_str(" (wrong too)");
        }
        if run.aborted {
            label.push('*');
        }
        label
    }

    /// Whether the runs the verdict speaks about ran on the simulator.
    fn on_sim(&self) -> bool {
        self.runs.iter().all(|r| r.backend == "sim")
    }

    /// Outcome number of each run (0 for the first distinct result), reference first.
    fn outcome_ids(&self) -> (Vec<usize>, usize) {
        let mut seen: HashMap<Vec<&[u8]>, usize> = HashMap::new();
        let ids = self
            .all_runs()
            .map(|r| {
                let key: Vec<&[u8]> = r.buffers.iter().map(Buffer::bytes).collect();
                let next = seen.len();
                *seen.entry(key).or_insert(next)
            })
            .collect();
        (ids, seen.len())
    }

    /// Elements worth a column, most telling first: those that differ across runs or from the
    /// sequential answer, by how many runs differ and then by how far; when nothing varies, the
    /// elements the launch changed (the first 64). With how many elements there are of that
    /// kind, to say how many the table leaves out.
    fn interesting(&self) -> Candidates {
        let mut scored: Vec<(usize, f64, Col)> = Vec::new();
        let mut changed: Vec<Col> = Vec::new();
        let mut changed_total = 0usize;
        for (b, reference) in self.reference.buffers.iter().enumerate() {
            let size = reference.dtype().size();
            for i in 0..reference.len() {
                let r = &reference.bytes()[i * size..(i + 1) * size];
                let mut differ = 0;
                let mut spread = 0.0f64;
                for run in self.runs.iter().chain(&self.beside) {
                    let Some(buf) = run.buffers.get(b) else { continue };
                    if &buf.bytes()[i * size..(i + 1) * size] != r {
                        differ += 1;
                        let d = (buf.get(i).as_f64() - reference.get(i).as_f64()).abs();
                        spread = spread.max(if d.is_nan() { f64::INFINITY } else { d });
                    }
                }
                let col = Col { buffer: b, index: i };
                if differ > 0 {
                    scored.push((differ, spread, col));
                } else if self.before.get(b).is_some_and(|o| o.bytes()[i * size..(i + 1) * size] != *r) {
                    changed_total += 1;
                    if changed.len() < 64 {
                        changed.push(col);
                    }
                }
            }
        }
        if scored.is_empty() {
            return Candidates { cols: changed, total: changed_total, varying: false };
        }
        scored.sort_by(|a, b| b.0.cmp(&a.0).then(b.1.total_cmp(&a.1)).then(a.2.cmp(&b.2)));
        let total = scored.len();
        Candidates { cols: scored.into_iter().map(|(_, _, c)| c).collect(), total, varying: true }
    }

    fn header(&self, c: Col) -> String {
        let name = &self.names[c.buffer];
        match self.reference.buffers[c.buffer].shape() {
            Shape::D2(_, cols) if cols > 0 => format!("{name}[{}, {}]", c.index / cols, c.index % cols),
            _ => format!("{name}[{}]", c.index),
        }
    }

    fn cell(&self, run: &Run, c: Col) -> String {
        let b = &run.buffers[c.buffer];
        element(b.get(c.index), Some(b.dtype()))
    }
}

/// The elements that could have a column, most telling first.
struct Candidates {
    cols: Vec<Col>,
    /// How many elements there are of this kind (more than `cols` holds when nothing varies).
    total: usize,
    /// They differ between runs or from the sequential run (else: the launch changed them).
    varying: bool,
}

impl Candidates {
    /// `showing 7 of the 40 elements that differ; ...`, when the table leaves some out.
    fn hidden_note(&self, shown: usize) -> Option<String> {
        if shown >= self.total {
            return None;
        }
        let what = if self.varying { "where the runs differ" } else { "the launch changed" };
        let left = self.total - shown;
        let rest = if left == 1 {
            "the other one does not fit in this width".to_string()
        } else {
            format!("the other {} do not fit in this width", crate::diag::text::thousands(left as u64))
        };
        Some(format!(
            "showing {shown} of the {} elements {what}, the most telling first; {rest}",
            crate::diag::text::thousands(self.total as u64),
        ))
    }
}

fn letter(id: usize) -> String {
    let l = (b'A' + (id % 26) as u8) as char;
    if id < 26 { l.to_string() } else { format!("{l}{}", id / 26) }
}

fn table(style: &Style) -> Table {
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED);
    if style.color {
        t.enforce_styling();
    } else {
        t.force_no_tty();
    }
    t
}

/// The columns to show: `candidates` in order of interest, as many as fit in `width` columns
/// in each of `tables` (one table for `:race`; both for `:compare`, so that the two show the same
/// elements side by side), then in index order. `pad`: the columns each cell takes beyond the
/// usual one space either side (2 when a projector's table is enlarged, `Style::enlarge`).
fn pick_columns(tables: &[&Outcomes], candidates: Vec<Col>, width: usize, pad: usize) -> Vec<Col> {
    let label_w =
        tables.iter().flat_map(|o| o.all_runs().map(|r| o.row_label(r).len())).max().unwrap_or(3).max(3) + 3 + pad;
    let mut used = 1 + label_w + "outcome".len() + 3 + pad;
    let mut cols = Vec::new();
    for c in candidates {
        let w = tables
            .iter()
            .map(|o| o.all_runs().map(|r| o.cell(r, c).len()).max().unwrap_or(1).max(o.header(c).len()))
            .max()
            .unwrap_or(1)
            + 3
            + pad;
        if used + w > width {
            break;
        }
        used += w;
        cols.push(c);
    }
    cols.sort();
    cols
}

/// The outcome table of `o` with the columns `cols`.
fn outcome_table(o: &Outcomes, cols: &[Col], style: &Style) -> Table {
    let (ids, _) = o.outcome_ids();
    let runs: Vec<&Run> = o.all_runs().collect();
    let mut t = table(style);
    let mut header = vec![Cell::new("run"), Cell::new("outcome")];
    header.extend(cols.iter().map(|c| Cell::new(o.header(*c))));
    t.set_header(header);
    // A sequential run that raced is no answer to hold the others against: no bold, no red.
    let trusted = o.reference_wrong.is_none();
    for (k, run) in runs.iter().enumerate() {
        let mut row = vec![Cell::new(o.row_label(run)), Cell::new(letter(ids[k]))];
        for c in cols {
            let mut cell = Cell::new(o.cell(run, *c));
            if trusted && k == 0 {
                cell = cell.add_attribute(Attribute::Bold);
            } else if trusted && run.buffers[c.buffer].get(c.index) != o.reference.buffers[c.buffer].get(c.index) {
                cell = cell.fg(Color::Red);
            }
            row.push(cell);
        }
        t.add_row(row);
    }
    t
}

/// `A ████████████▌ 7 runs  (the sequential answer)`, one line per distinct outcome of the runs;
/// none when no two runs agree.
fn histogram(o: &Outcomes, width: usize, style: &Style) -> Vec<String> {
    let (ids, _) = o.outcome_ids();
    let mut counts: Vec<(usize, usize)> = Vec::new();
    for id in &ids[1..=o.runs.len()] {
        match counts.iter_mut().find(|(i, _)| i == id) {
            Some((_, n)) => *n += 1,
            None => counts.push((*id, 1)),
        }
    }
    // Every run different: the table has already lettered each, and bars of one run each would
    // say nothing the verdict does not ("10 different results in 10 runs"), while pushing the
    // command off a 24-line screen.
    if counts.len() > 1 && counts.iter().all(|c| c.1 == 1) {
        return Vec::new();
    }
    counts.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    // Bars are shares of all runs, so one run in ten is a tenth of the width.
    let max = o.runs.len().max(1);
    // The letter before the bar and the count and note after it (`  10 runs  (the sequential
    // answer)`) take about 40 columns.
    let bar_w = if style.big { width.saturating_sub(42).clamp(8, 60) } else { width.saturating_sub(40).clamp(8, 40) };
    let shown = if counts.len() > MAX_BARS { MAX_BARS - 1 } else { counts.len() };
    let rest: usize = counts[shown..].iter().map(|c| c.1).sum();
    let rest_n = counts.len() - shown;
    let mut lines: Vec<String> = counts[..shown]
        .iter()
        .map(|&(id, n)| {
            let eighths = (n * bar_w * 8).div_ceil(max);
            let bar = bar(eighths);
            let pad = " ".repeat(bar_w.saturating_sub(bar.chars().count()));
            let trusted = o.reference_wrong.is_none();
            let bar = if id == ids[0] && trusted { style.ok(&bar) } else { style.warn(&bar) };
            let note = match (id == ids[0], trusted) {
                (true, true) => "  (the sequential answer)",
                (true, false) => "  (the sequential run's, wrong too)",
                _ => "",
            };
            format!("  {:<2} {bar}{pad} {n:>3} run{}{note}", letter(id), if n == 1 { "" } else { "s" })
        })
        .collect();
    if rest_n > 0 {
        lines.push(style.dim(&format!("  ... {rest_n} more outcomes, {rest} runs in all")));
    }
    lines
}

/// Histogram lines before the rest are summed up.
const MAX_BARS: usize = 6;

fn bar(eighths: usize) -> String {
    const PARTS: [char; 8] = [' ', '▏', '▎', '▍', '▌', '▋', '▊', '▉'];
    let mut s = "█".repeat(eighths / 8);
    if eighths % 8 != 0 {
        s.push(PARTS[eighths % 8]);
    }
    s
}

/// The one-line verdict under the histogram.
pub fn verdict(o: &Outcomes) -> String {
    let (ids, _) = o.outcome_ids();
    let n = o.runs.len();
    let runs = &ids[1..=n];
    let mut distinct: Vec<usize> = runs.to_vec();
    distinct.sort();
    distinct.dedup();
    let matching = runs.iter().filter(|&&i| i == ids[0]).count();
    // On a GPU, say so: the simulator's runs beside them are not what the verdict counts.
    let on = match o.runs.first() {
        Some(r) if !o.on_sim() => format!(" on {}", r.backend),
        _ => String::new(),
    };
    if let Some(why) = &o.reference_wrong {
        let runs = if distinct.len() > 1 {
            format!("{} different results in {n} runs{on}: the result depends on timing", distinct.len())
        } else if matching == n {
            format!("all {n} runs{on} match the sequential run")
        } else {
            format!("the same result {n} times out of {n}{on}")
        };
        return format!("{runs}; the sequential run is no reference here: {why}");
    }
    if distinct.len() > 1 {
        format!("{} different results in {n} runs{on}: the result depends on timing", distinct.len())
    } else if matching == n {
        let still = if o.race_found {
            "; the simulator still found a race: it is still a race, this time without visible harm"
        } else {
            ""
        };
        format!("all {n} runs{on} match the sequential answer{still}")
    } else {
        format!("the same wrong result {n} times out of {n}{on}: a race can be stable and still wrong")
    }
}

fn describe(o: &Outcomes) -> String {
    let plural = |n: usize| if n == 1 { "" } else { "s" };
    // `3 runs on sim (random schedule, seeds 0..2)`.
    let sim = |runs: &[Run]| {
        let seed = |r: &Run| r.label.trim_start_matches("sim ").trim_start_matches("seed ").to_string();
        let seeds = match (runs.first(), runs.last()) {
            (Some(a), Some(b)) if runs.len() > 1 => format!("{}..{}", seed(a), seed(b)),
            (Some(a), _) => seed(a),
            _ => String::new(),
        };
        format!("{} run{} on sim (random schedule, seed{} {seeds})", runs.len(), plural(runs.len()), plural(runs.len()))
    };
    // A sequential run that raced is no answer: call it a run.
    let seq = if o.reference_wrong.is_some() { "the sequential run" } else { "the sequential answer" };
    if o.on_sim() {
        return format!("{} and {seq}", sim(&o.runs));
    }
    let gpu = o.runs.first().map_or("the GPU", |r| r.backend.as_str());
    let n = o.runs.len();
    if o.beside.is_empty() {
        format!("{n} run{} on {gpu} and {seq}", plural(n))
    } else {
        format!("{n} run{} on {gpu}, {} and {seq}", plural(n), sim(&o.beside))
    }
}

fn footnote(o: &Outcomes, style: &Style) -> Option<String> {
    o.all_runs().any(|r| r.aborted).then(|| style.dim("* the run was stopped: its buffers are as they were before it"))
}

/// `:race`: the table, the histogram and the verdict.
pub fn write_race(out: &mut dyn Write, o: &Outcomes, style: &Style) -> io::Result<()> {
    super::write_heading(out, &o.launch, &describe(o), style)?;
    let candidates = o.interesting();
    // Enlarged for a projector, each cell has two more spaces.
    let cols = pick_columns(&[o], candidates.cols.clone(), style.width, if style.big { 2 } else { 0 });
    let mut table = outcome_table(o, &cols, style);
    let note = candidates.hidden_note(cols.len()).map(|note| style.dim(&super::prose(&note, style)));
    let foot = footnote(o, style);
    let bars = histogram(o, style.width, style);
    let verdict = verdict_styled(o, style);
    // On a projector the table gives way (no rules between rows) so that the command above it
    // and the verdict below stay on one screen: count what comes with it, and the blank lines
    // that set the histogram and the verdict apart.
    let lines = |text: &str| text.lines().count();
    let around = lines(&describe(o)).max(1)
        + note.as_deref().map_or(0, lines)
        + foot.as_deref().map_or(0, lines)
        + bars.len()
        + lines(&verdict)
        + 2;
    style.enlarge(&mut table, around);
    writeln!(out, "{table}")?;
    for line in note.iter().chain(&foot) {
        writeln!(out, "{line}")?;
    }
    if style.big {
        writeln!(out)?;
    }
    for line in bars {
        writeln!(out, "{line}")?;
    }
    if style.big {
        writeln!(out)?;
        return writeln!(out, "  {}", style.bold(&verdict));
    }
    writeln!(out, "{verdict}")
}

fn verdict_styled(o: &Outcomes, style: &Style) -> String {
    let v = super::prose(&verdict(o), style);
    if v.starts_with("all ") && !o.race_found { style.ok(&v) } else { style.warn(&v) }
}

/// `:compare`: two launches' outcome tables side by side when they fit, else one above the other.
pub fn write_compare(out: &mut dyn Write, a: &Outcomes, b: &Outcomes, style: &Style) -> io::Result<()> {
    let both = format!("{} vs {}", a.launch, b.launch);
    if both.chars().count() <= style.width {
        super::write_heading(out, &both, &describe(a), style)?;
    } else {
        super::write_heading(out, "compare", &describe(a), style)?;
    }
    let half = style.width.saturating_sub(3) / 2;
    // The same elements on both sides when the two launches have the same buffers: the racy
    // kernel's varying elements beside the fix's values of them.
    let same_buffers = a.names == b.names
        && a.before.len() == b.before.len()
        && a.before.iter().zip(&b.before).all(|(x, y)| x.len() == y.len());
    let (ia, ib) = (a.interesting(), b.interesting());
    let (ca, cb) = if same_buffers {
        let mut candidates = ia.cols.clone();
        for c in &ib.cols {
            if !candidates.contains(c) {
                candidates.push(*c);
            }
        }
        let cols = pick_columns(&[a, b], candidates, half, 0);
        (cols.clone(), cols)
    } else {
        (pick_columns(&[a], ia.cols.clone(), half, 0), pick_columns(&[b], ib.cols.clone(), half, 0))
    };
    let ta = outcome_table(a, &ca, style).to_string();
    let tb = outcome_table(b, &cb, style).to_string();
    let la: Vec<&str> = ta.lines().collect();
    let lb: Vec<&str> = tb.lines().collect();
    let wa = la.iter().map(|l| visible_width(l)).max().unwrap_or(0);
    let wb = lb.iter().map(|l| visible_width(l)).max().unwrap_or(0);
    if wa + 3 + wb <= style.width {
        writeln!(out, "{:<wa$}   {}", fit(&a.launch, wa), fit(&b.launch, wb))?;
        for k in 0..la.len().max(lb.len()) {
            let l = la.get(k).copied().unwrap_or("");
            let pad = " ".repeat(wa - visible_width(l));
            writeln!(out, "{l}{pad}   {}", lb.get(k).copied().unwrap_or(""))?;
        }
    } else {
        writeln!(out, "{}\n{ta}\n{}\n{tb}", fit(&a.launch, style.width), fit(&b.launch, style.width))?;
    }
    for (o, candidates, cols) in [(a, &ia, &ca), (b, &ib, &cb)] {
        // Columns are shared when the buffers are: count those of this launch's kind.
        let shown = cols.iter().filter(|c| candidates.cols.contains(c)).count();
        if let Some(note) = candidates.hidden_note(shown) {
            writeln!(out, "{}", style.dim(&super::prose(&format!("{}: {note}", o.launch), style)))?;
        }
    }
    for o in [a, b] {
        writeln!(out, "{}", style.bold(&fit(&o.launch, style.width)))?;
        for line in histogram(o, style.width, style) {
            writeln!(out, "{line}")?;
        }
        writeln!(out, "  {}", verdict_styled(o, style))?;
    }
    Ok(())
}

/// `s`, cut to `width` characters with a `…` when longer.
fn fit(s: &str, width: usize) -> String {
    if s.chars().count() <= width {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(width.saturating_sub(1)).collect();
        t.push('…');
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::buffer::Num;
    use crate::dtype::DType;

    fn run(label: &str, v: &[f64]) -> Run {
        let b = Buffer::from_nums(DType::F32, Shape::D1(v.len()), v.iter().map(|x| Num::Float(*x)));
        Run { label: label.into(), backend: "sim".into(), buffers: vec![b], aborted: false }
    }

    fn outcomes(reference: &[f64], runs: &[&[f64]], race_found: bool) -> Outcomes {
        Outcomes {
            launch: "k<<<1, 2>>>(a)".into(),
            names: vec!["a".into()],
            before: vec![run("", &vec![0.0; reference.len()]).buffers.remove(0)],
            reference: run("sequential", reference),
            runs: runs.iter().enumerate().map(|(i, r)| run(&format!("seed {i}"), r)).collect(),
            beside: Vec::new(),
            race_found,
            reference_wrong: None,
        }
    }

    #[test]
    fn verdicts() {
        let varied = outcomes(&[2.0], &[&[1.0], &[2.0], &[1.0]], true);
        assert_eq!(verdict(&varied), "2 different results in 3 runs: the result depends on timing");
        let stable = outcomes(&[2.0], &[&[1.0], &[1.0]], true);
        assert_eq!(verdict(&stable), "the same wrong result 2 times out of 2: a race can be stable and still wrong");
        let right = outcomes(&[2.0], &[&[2.0], &[2.0]], false);
        assert_eq!(verdict(&right), "all 2 runs match the sequential answer");
        let lucky = outcomes(&[2.0], &[&[2.0], &[2.0]], true);
        assert!(verdict(&lucky).contains("it is still a race"));
    }

    #[test]
    fn verdicts_with_a_sequential_run_that_is_no_reference() {
        let why = "in it too, a thread read too early";
        let wrong = |runs: &[&[f64]]| Outcomes { reference_wrong: Some(why.into()), ..outcomes(&[2.0], runs, true) };
        assert_eq!(
            verdict(&wrong(&[&[2.0], &[2.0]])),
            format!("all 2 runs match the sequential run; the sequential run is no reference here: {why}")
        );
        assert_eq!(
            verdict(&wrong(&[&[1.0], &[1.0]])),
            format!("the same result 2 times out of 2; the sequential run is no reference here: {why}")
        );
        assert!(verdict(&wrong(&[&[1.0], &[3.0]])).starts_with("2 different results in 2 runs"));
        let o = wrong(&[&[1.0], &[1.0]]);
        let lines = histogram(&o, 80, &Style::plain()).join("\n");
        assert!(!lines.contains("the sequential answer"), "{lines}");
        let hidden = Candidates { cols: vec![], total: 40, varying: true };
        assert_eq!(
            hidden.hidden_note(7).as_deref(),
            Some(
                "showing 7 of the 40 elements where the runs differ, the most telling first; the other 33 do not fit in this width"
            )
        );
        assert_eq!(hidden.hidden_note(40), None);
        assert!(hidden.hidden_note(39).unwrap().ends_with("; the other one does not fit in this width"));
    }

    #[test]
    fn compared_launches_show_the_same_elements_side_by_side() {
        // The racy kernel varies in a[1]; the fix varies nowhere, and alone would show a[0].
        let racy = outcomes(&[8.0, 9.0], &[&[8.0, 3.0], &[8.0, 4.0]], true);
        let fixed = outcomes(&[8.0, 9.0], &[&[8.0, 9.0], &[8.0, 9.0]], false);
        let mut out = Vec::new();
        write_compare(&mut out, &racy, &fixed, &Style { color: false, width: 80, big: false, ..Style::plain() })
            .unwrap();
        let text = String::from_utf8(out).unwrap();
        let header = text.lines().find(|l| l.contains("outcome")).unwrap();
        let (left, right) = header.split_once("│   │").unwrap();
        assert_eq!(format!("{left}│"), format!("│{right}"), "{text}");
        assert!(left.contains("a[1]"), "{text}");
    }

    #[test]
    fn columns_are_the_elements_that_vary_most_and_fit_the_width() {
        let mut reference = vec![1.0; 100];
        reference[50] = 5.0;
        let mut a = reference.clone();
        a[7] = 0.0;
        a[50] = 1.0;
        let mut b = reference.clone();
        b[50] = 2.0;
        let o = outcomes(&reference, &[&a, &b], true);
        // a[50] differs in both runs, a[7] in one: a[50] comes first.
        assert_eq!(o.interesting().cols, vec![Col { buffer: 0, index: 50 }, Col { buffer: 0, index: 7 }]);
        let style = Style { color: false, width: 40, big: false, ..Style::plain() };
        let text = outcome_table(&o, &pick_columns(&[&o], o.interesting().cols, 40, 0), &style).to_string();
        assert!(text.contains("a[50]") && text.lines().all(|l| l.chars().count() <= 40), "{text}");
    }

    #[test]
    fn a_projectors_race_view_fits_its_width_with_the_roomier_cells() {
        // Every element changed in every run (lesson 3's clean `:race` over 1,024 elements).
        let reference = vec![0.5; 1024];
        let runs: Vec<Vec<f64>> = (0..10).map(|_| reference.clone()).collect();
        let refs: Vec<&[f64]> = runs.iter().map(Vec::as_slice).collect();
        let o = outcomes(&reference, &refs, false);
        for width in [60, 80, 100] {
            let style = Style { color: false, width, big: true, rows: 40, ..Style::plain() };
            let mut out = Vec::new();
            write_race(&mut out, &o, &style).unwrap();
            let text = String::from_utf8(out).unwrap();
            assert!(text.lines().all(|l| visible_width(l) <= width), "wider than {width}:\n{text}");
            assert!(text.contains("a[0]"), "{text}");
        }
    }
}
