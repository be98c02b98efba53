//! Findings as the learner reads them: one headline that summarises, the source line with a
//! caret, an example thread, and how to fix it. Drawn through `Diagnostic` so they look like
//! every other message that points at the learner's code.

use std::io::{self, Write};

use super::Style;
use crate::diag::{Diagnostic, SourceMap, Span};
use crate::finding::{Access, Finding, Memory, Site};

use super::advice;
use crate::diag::text::thousands;

/// The largest budget a step-limit finding suggests: beyond it a launch takes minutes.
const MAX_SUGGESTED_STEPS: u64 = 10_000_000_000;

/// Write a launch's findings, in order, each advised with the others in view.
pub fn write_findings(out: &mut dyn Write, findings: &[Finding], sources: &SourceMap, style: &Style) -> io::Result<()> {
    for f in findings {
        to_diagnostic_among(f, findings, sources).render(sources, out, style.color, style.width)?;
    }
    Ok(())
}

/// `a[1024]`, `As[12][0]` for an array of the kernel's with dimensions `shape`; an index beyond
/// what a pointer can address (see `index_range`) is said so.
fn element(name: &str, index: i64, shape: &[u64]) -> String {
    match index {
        i64::MAX => format!("{name}[far past the end]"),
        i64::MIN => format!("{name}[far before the start]"),
        _ => crate::finding::element_name(name, index, shape),
    }
}

fn line(sources: &SourceMap, site: &Site) -> u32 {
    sources.line_of(site.span)
}

/// The diagnostic a finding is drawn as; for a kernel written in Python, its advice in
/// Python's words (`cuda.grid(1)`, `cuda.atomic.add(a, i, ...)`, `cuda.syncthreads()`).
pub fn to_diagnostic(f: &Finding, sources: &SourceMap) -> Diagnostic {
    to_diagnostic_among(f, &[], sources)
}

/// [`to_diagnostic`] for one of a launch's findings (`all`): one finding can explain another's
/// cause (a read of a shared array "before anything wrote it" beside a race on that array is a
/// missing barrier, not a missing initialisation).
pub fn to_diagnostic_among(f: &Finding, all: &[Finding], sources: &SourceMap) -> Diagnostic {
    let mut d = finding_diagnostic(f, sources);
    if let Some(help) = unordered_write(f, all, sources) {
        d.help = Some(help);
    }
    let Some(c) = d.span.and_then(|s| sources.get(s.source)).filter(|file| file.origin.is_some()).map(|f| &f.text)
    else {
        return d;
    };
    // The lowered kernel's extents (`m_rows`) as the learner's Python says them (`m.shape[0]`).
    let say = |text: &str| crate::python::words::extents(&in_python(text), c);
    Diagnostic {
        message: say(&d.message),
        label: d.label.as_deref().map(|l| say(l).into()),
        help: d.help.as_deref().map(say),
        notes: d.notes.iter().map(|n| say(n)).collect(),
        ..d
    }
}

/// CUDA C in advice, said as Numba's Python says it (`crate::python::words`), with the global
/// index as Numba's idiom, `cuda.grid(1)`.
pub(crate) fn in_python(text: &str) -> String {
    let s = text
        .replace("blockIdx.x * blockDim.x + threadIdx.x", "cuda.grid(1)")
        .replace("`blockDim.x * gridDim.x`", "`cuda.gridsize(1)`")
        .replace("`if (i < n) { ... }`", "`if i < n:`")
        .replace("] = 0;`", "] = 0`");
    crate::python::words::words(&python_ifs(&s))
}

/// A quoted C condition (`` `if (row < rows && col < cols)` ``) as Python writes it
/// (`` `if row < rows && col < cols:` ``; `words` then says `and`).
fn python_ifs(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("`if (") {
        out.push_str(&rest[..at]);
        let after = &rest[at + 5..];
        match after.find(")`") {
            Some(end) if !after[..end].contains('`') => {
                out.push_str(&format!("`if {}:`", &after[..end]));
                rest = &after[end + 2..];
            }
            _ => {
                out.push_str("`if (");
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

fn finding_diagnostic(f: &Finding, sources: &SourceMap) -> Diagnostic {
    match f {
        Finding::OutOfBounds {
            memory,
            shape,
            kernel_name,
            view,
            threads,
            len,
            access,
            count,
            min_index,
            max_index,
            first,
            first_index,
        } => {
            let past_end = *first_index >= *len as i64;
            let place = if past_end { "past the end of" } else { "before the start of" };
            let who = if *count == 1 { "1 thread".to_string() } else { format!("{} threads", thousands(*count)) };

            let verb = match access {
                Access::Read => "read",
                Access::Write => "wrote",
                Access::Atomic => "atomically updated",
            };
            let alias = kernel_name.as_ref().map(|k| format!(", `{k}` in the kernel")).unwrap_or_default();
            let kname = kernel_name.as_deref().unwrap_or(memory.name());
            let range = shaped_range(kname, *min_index, *max_index, shape)
                .unwrap_or_else(|| index_range(*min_index, *max_index));
            let size = if shape.len() >= 2 {
                let dims: Vec<String> = shape.iter().map(u64::to_string).collect();
                format!("{} rows of {}", shape[0], dims[1..].join(" x "))
            } else {
                format!("length {len}")
            };
            let mut d = Diagnostic::finding(format!(
                "{who} {verb} {place} {} ({size}{alias}): {range}, first by {}, line {}",
                memory.describe(),
                first.thread.describe(),
                line(sources, first)
            ))
            .at(first.span)
            .label(format!(
                "{} {}",
                first.thread.describe(),
                access_word(*access, &element(kname, *first_index, shape))
            ));
            d = d.note(match access {
                Access::Read => "out-of-bounds reads were given 0 here; on a GPU they read whatever lies there",
                _ => "these writes were not performed; on a GPU they silently overwrite whatever lies there",
            });
            let global = matches!(memory, Memory::Global(_));
            if let Some((param, offset)) = view {
                return d.help(view_out_of_bounds_advice(kname, param, *offset, *threads, *len, *min_index, *max_index));
            }
            if past_end && let Some(help) = rows_advice(sources, first, kname, shape, *min_index, *max_index) {
                return d.help(help);
            }
            d.help(out_of_bounds_advice(sources, first, kname, global, *threads, *len, *min_index, *max_index))
        }
        Finding::PastRow { memory, shape, dim, len, count, min_index, max_index, first_index, first } => {
            past_row_diagnostic(
                sources,
                memory,
                shape,
                (*dim, *len),
                *count,
                (*min_index, *max_index),
                *first_index,
                first,
            )
        }
        Finding::Race { memory, shape, kernel_name, view, index, count, elements, first, second, same_warp } => {
            let lines = {
                let (a, b) = (line(sources, first), line(sources, second));
                if a == b { format!("line {a}") } else { format!("lines {a} and {b}") }
            };
            let elems =
                if *elements == 1 { "1 element".to_string() } else { format!("{} elements", thousands(*elements)) };
            let pairs = if *count == 1 {
                "1 conflicting access".to_string()
            } else {
                format!("{} conflicting accesses", thousands(*count))
            };
            let alias = kernel_name.as_ref().map(|k| format!(" (`{k}` in the kernel)")).unwrap_or_default();
            // Under the kernel's code, the kernel's names.
            let kname = kernel_name.as_deref().unwrap_or(memory.name());
            let el = element(kname, *index, shape);
            let same_block = first.thread.block == second.thread.block;
            // A barrier between them that orders only one pass of a loop (see `race_advice`).
            let looped = matches!(memory, Memory::Shared(_))
                && first.span.source == second.span.source
                && code_at(sources, second).is_some_and(|(text, pos, _)| {
                    advice::barrier_only_inside_loop(&text, first.span.lo as usize, pos).is_some()
                });
            let mut d =
                Diagnostic::finding(format!("data race on {}{alias}: {pairs} to {elems}, {lines}", memory.describe()))
                    .at(second.span)
                    .label(format!("{} {}", second.thread.describe(), access_word(second.access, &el)))
                    .note(format!(
                        "example: {} {}, then {} {}, and nothing orders the two{}",
                        first.thread.describe(),
                        access_word(first.access, &el),
                        second.thread.describe(),
                        access_word(second.access, &el),
                        if looped {
                            " (the __syncthreads() between them orders one pass of the loop, not the next)"
                        } else if *same_warp {
                            " (no __syncwarp() or __syncthreads() between them)"
                        } else if same_block {
                            " (no __syncthreads() between them)"
                        } else {
                            " (they are in different blocks)"
                        }
                    ));
            if first.span.lo != second.span.lo || first.span.source != second.span.source {
                let text = excerpt(sources, first.span);
                d = d.note(format!("the other access is at {}: {text}", sources.location(first.span)));
            }
            // Advice is code for the kernel: through `p = a + 4`, `a[4]` is `p[0]` there.
            match view {
                Some((param, offset)) => {
                    let el = format!("{param}[{}]", index.saturating_sub(*offset as i64));
                    d.help(race_advice(sources, memory, &el, param, (*elements, *count), first, second, *same_warp))
                }
                None => d.help(race_advice(sources, memory, &el, kname, (*elements, *count), first, second, *same_warp)),
            }
        }
        Finding::Uninit { memory, shape, kernel_name, index, count, elements, first } => {
            let kname = kernel_name.as_deref().unwrap_or(memory.name());
            let alias = kernel_name.as_ref().map(|k| format!(" (`{k}` in the kernel)")).unwrap_or_default();
            let (what, how_many) = match index {
                Some(i) => {
                    let el = element(kname, *i, shape);
                    let reads = if *count == 1 { "1 read".to_string() } else { format!("{} reads", thousands(*count)) };
                    let elems = if *elements == 1 {
                        "1 element".to_string()
                    } else {
                        format!("{} elements", thousands(*elements))
                    };
                    (format!("`{el}`"), format!("{reads} of {elems} of {}{alias} in all", memory.describe()))
                }
                None => {
                    let threads = if *elements == 1 {
                        "1 thread".to_string()
                    } else {
                        format!("{} threads", thousands(*elements))
                    };
                    (format!("`{kname}`"), format!("{threads} read {} before giving it a value", memory.describe()))
                }
            };
            let why = match memory {
                Memory::Shared(_) => "`__shared__` memory starts with whatever the last block left there",
                Memory::Variable(_) => "a local variable declared without a value holds whatever its register held before",
                Memory::Local(_) => "a local array declared without an initialiser starts with whatever was in that memory",
                _ => "a buffer made with `empty` has no values until something writes them, like memory from cudaMalloc",
            };
            Diagnostic::finding(format!(
                "uninitialised read of {what} in {}, line {}: {why}",
                first.thread.describe(),
                line(sources, first)
            ))
            .at(first.span)
            .label(format!("{} read {what} before anything wrote it", first.thread.describe()))
            .note(format!(
                "{how_many}; the simulator gave these reads NaN (float, double) or 0xDEADBEEF (-559038737 as an int) so that they show; a GPU gives whatever is there"
            ))
            .help(uninit_advice(memory, kname))
        }
        Finding::BarrierDivergence { block, waiting, other, waiting_threads, other_threads } => {
            let blk = crate::finding::ThreadRef { block: *block, ..Default::default() }.describe();
            let blk = blk.trim_end_matches(" thread 0").to_string();
            let msg = match other {
                Some(o) => format!(
                    "barrier divergence in {blk}: {waiting_threads} threads wait at __syncthreads() on line {} while {other_threads} wait at the one on line {}",
                    line(sources, waiting),
                    line(sources, o)
                ),
                None => format!(
                    "barrier divergence in {blk}: {waiting_threads} threads wait at __syncthreads() on line {} while {other_threads} have already finished",
                    line(sources, waiting)
                ),
            };
            Diagnostic::finding(msg)
                .at(waiting.span)
                .label(format!("{} waits here", waiting.thread.describe()))
                .note("on a GPU this can hang the block or silently skip the barrier")
                .help("every thread of a block must reach the same __syncthreads(): move it out of the `if`, or make the condition the same for the whole block")
        }
        Finding::StepLimit { steps, site, time_limit: Some(limit), .. } => Diagnostic::finding(format!(
            "the launch was stopped after {} s, the simulator's time limit ({} warp steps; line {} was running)",
            limit.as_secs_f64(),
            thousands(*steps),
            line(sources, site)
        ))
        .at(site.span)
        .label(format!("{} was here", site.thread.describe()))
        .note("the simulator runs a few million warp steps a second: it is for lesson-sized launches")
        .help("launch fewer threads, check that every loop ends, or give it longer with --timeout SECS; a GPU (`:backend gpu`) runs it as it is"),
        Finding::StepLimit { steps, budget, warp_limit, sequential, site, time_limit: None } => {
            let at = line(sources, site);
            let headline = match warp_limit {
                Some(limit) => format!(
                    "possible infinite loop at line {at}: a warp was stopped after {} steps, the most one warp may take",
                    thousands(*limit)
                ),
                None => format!(
                    "possible infinite loop at line {at}: the launch was stopped after {} warp steps, its whole budget",
                    thousands(*steps)
                ),
            };
            let mut d =
                Diagnostic::finding(headline).at(site.span).label(format!("{} was here", site.thread.describe()));
            let budget_text = thousands(*budget);
            d = d.note(if *sequential {
                format!(
                    "one warp may take a quarter of the launch's step budget of {budget_text}; the sequential schedule runs one lane per step, so it allows 32 times as many"
                )
            } else {
                format!("one warp may take a quarter of the launch's step budget of {budget_text} warp steps")
            });
            let raise = budget.saturating_mul(4).min(MAX_SUGGESTED_STEPS).max(*budget);
            d.help(format!(
                "check that the loop's condition eventually becomes false; if the kernel really needs more steps, raise the budget: `:max-steps {raise}` (`--max-steps` on the command line)"
            ))
        }
        Finding::GuardWrite { memory, len, count, min_index, max_index } => {
            let place = if *min_index >= *len as i64 { "past the end of" } else { "outside" };
            let range = if min_index == max_index {
                format!("index {min_index}")
            } else {
                format!("indices {min_index}..{max_index}")
            };
            Diagnostic::finding(format!(
                "{} element{} written {place} {} (length {len}): {range}",
                thousands(*count),
                if *count == 1 { "" } else { "s" },
                memory.describe()
            ))
            .note("seen in the guard region gridlab puts around every buffer on the GPU; the GPU itself reported nothing")
            .help("more threads than elements: guard the access, e.g. `if (i < n) { ... }`, and pass n; `:backend sim` names the thread and line")
        }
        Finding::Trap { site, message } => Diagnostic::finding(format!(
            "{} stopped the launch at line {}: {message}",
            site.thread.describe(),
            line(sources, site)
        ))
        .at(site.span),
    }
}

/// An index past one row of a kernel's multi-dimensional array (`Finding::PastRow`): which
/// index, how far, and what C (and Numba's compiled code) did with it instead of stopping.
#[allow(clippy::too_many_arguments)]
fn past_row_diagnostic(
    sources: &SourceMap,
    memory: &Memory,
    shape: &[u64],
    (dim, len): (usize, u64),
    count: u64,
    (min, max): (i64, i64),
    first_index: i64,
    first: &Site,
) -> Diagnostic {
    // A buffer's shape may be unknown here; its checks are of its last dimension only.
    let which = if dim + 1 == shape.len() || shape.is_empty() { "last".to_string() } else { ordinal_word(dim + 1) };
    let who = if count == 1 { "1 thread".to_string() } else { format!("{} threads", thousands(count)) };
    let dims: Vec<String> = shape.iter().map(u64::to_string).collect();
    let dims = if dims.is_empty() { String::new() } else { format!(" ({})", dims.join(" x ")) };
    let range = if min == max { format!("{min}") } else { format!("{min} to {max}") };
    let later = min >= len as i64;
    let past = if later { "past the end of its row" } else { "before the start of its row" };
    // The learner's own text of the access, and the index in question, as they wrote them.
    let own = sources.resolve(first.span);
    let access = sources.get(own.source).and_then(|f| f.text.get(own.lo as usize..own.hi as usize)).unwrap_or("");
    let index = indices_of(access).get(dim).cloned();
    let said = index.as_ref().map(|i| format!(" (`{i}`)")).unwrap_or_default();
    let name = memory.name();
    let python = sources.get(first.span.source).is_some_and(|f| f.origin.is_some());
    let d = Diagnostic::finding(format!(
        "{who} indexed {}{dims} {past}: its {which} index{said} was {range}, where a row has {len} elements, first by {}, line {}",
        memory.describe(),
        first.thread.describe(),
        line(sources, first)
    ))
    .at(first.span)
    .label(format!("{} gave the {which} index {first_index}", first.thread.describe()))
    .note(format!(
        "{}: each of these accesses quietly used an element of {} row, here as on a GPU",
        if python {
            format!("Numba's compiled kernel checks no index (its CPU simulator would raise IndexError), and the element landed on is inside `{name}`")
        } else {
            format!("C does not check an index against its own dimension, and the element landed on is inside `{name}`")
        },
        if later { "a later" } else { "an earlier" }
    ));
    // The thread axis the index comes from, through the variables it is made of (`tx`, set
    // from `threadIdx.x`), read in the C the simulator ran.
    let axis = code_at(sources, first).and_then(|(text, pos, c_access)| {
        let index = indices_of(&c_access).get(dim)?.clone();
        let mut made_of = index.clone();
        for found in advice::definitions(&text, pos, &advice::identifiers(&index)) {
            made_of.push(' ');
            made_of.push_str(&found.text);
        }
        ['x', 'y', 'z'].into_iter().find(|a| made_of.contains(&format!("threadIdx.{a}")))
    });
    // A Python kernel's array argument: its guard is what keeps an index inside its dimension.
    if python && matches!(memory, Memory::Global(_)) {
        let i = index.unwrap_or_else(|| "i".to_string());
        return d.help(if later {
            format!(
                "keep `{i}` below `{name}.shape[{dim}]` ({len}), the length of a row: guard it with `{i} < {name}.shape[{dim}]`, not with another dimension's length"
            )
        } else {
            format!(
                "keep `{i}` from -{len} up: a negative index counts back from the end of its row once (-1 is the last element), and one below -{len} lands on an earlier row"
            )
        });
    }
    d.help(match axis {
        Some(a) if later => format!(
            "the index comes from `threadIdx.{a}`, and the block has more threads along {a} than a row of `{name}` has elements ({len}): launch blocks of {len} threads along {a} to match the array, or make its rows as long as the block"
        ),
        _ => format!("keep the {which} index from 0 to {} (`0 <= i < {len}`), or give `{name}` longer rows", len.saturating_sub(1)),
    })
}

/// The indices of an access as written: `As[ty][tx]` gives `ty` and `tx`, as does Python's
/// `As[ty, tx]`.
fn indices_of(access: &str) -> Vec<String> {
    let mut groups = Vec::new();
    let (mut depth, mut start) = (0usize, 0usize);
    for (i, c) in access.char_indices() {
        match c {
            '[' => {
                if depth == 0 {
                    start = i + 1;
                }
                depth += 1;
            }
            ']' if depth > 0 => {
                depth -= 1;
                if depth == 0 {
                    groups.push(access[start..i].trim().to_string());
                }
            }
            _ => {}
        }
    }
    if let [one] = &groups[..] {
        let parts = crate::python::words::split_top_level(one);
        if parts.len() > 1 {
            return parts.into_iter().map(|p| p.trim().to_string()).collect();
        }
    }
    groups
}

fn ordinal_word(n: usize) -> String {
    match n {
        1 => "first".into(),
        2 => "second".into(),
        3 => "third".into(),
        n => format!("{n}th"),
    }
}

/// The kernel's source around a site: its whole text, the site's offset in it and the text of
/// the access itself (`x[i + 1]`).
///
/// For a Python kernel this is the CUDA C it was lowered to (one statement per line, with the
/// learner's names), not the Python: the scans in `advice` read C. Positions stay in that C;
/// [`SourceMap::line_of`] maps them back to the learner's Python lines.
fn code_at(sources: &SourceMap, site: &Site) -> Option<(String, usize, String)> {
    let span = site.span;
    let text = &sources.get(span.source)?.text;
    let access = text.get(span.lo as usize..span.hi as usize)?;
    Some((text.clone(), span.lo as usize, access.to_string()))
}

/// The index of the access at `site` as the learner wrote it, when the code the simulator ran
/// was generated from theirs (a Python kernel lowered to CUDA C); `None` for their own C.
fn learner_index(sources: &SourceMap, site: &Site) -> Option<String> {
    sources.get(site.span.source)?.origin.as_ref()?;
    let own = sources.resolve(site.span);
    let text = sources.get(own.source)?.text.get(own.lo as usize..own.hi as usize)?;
    let index = advice::index_text(text).trim();
    (!index.is_empty() && text.contains('[')).then(|| index.to_string())
}

/// Out of bounds through a pointer into the buffer (`p = a + 4`): the kernel's own index is the
/// buffer's less the offset, and the elements it may reach run from the pointer to the end.
fn view_out_of_bounds_advice(
    name: &str,
    param: &str,
    offset: u64,
    threads: u64,
    len: u64,
    min: i64,
    max: i64,
) -> String {
    let start = format!("`{param}` is `{name} + {offset}`");
    let off = offset as i64;
    if min < 0 {
        // Beyond what a pointer can address (see `index_range`): no number it really reached.
        let lowest = if min == i64::MIN {
            "an index far below 0".to_string()
        } else {
            format!("`{param}[{}]`", min.saturating_sub(off))
        };
        return format!(
            "{start}, so {lowest} lies before the start of `{name}`: an index may go below 0 only down to -{offset}; check how it is computed"
        );
    }
    let room = len.saturating_sub(offset);
    let room_text = format!("{} element{}", thousands(room), if room == 1 { "" } else { "s" });
    if threads > room {
        return format!(
            "{start}: from there to the end of `{name}` there are {room_text}, and the launch has {} threads: guard the access, e.g. `if (i < n) {{ ... }}` with n the elements `{param}` should cover",
            thousands(threads)
        );
    }
    let reached =
        if max == i64::MAX { "went far".to_string() } else { format!("reached {},", max.saturating_sub(off)) };
    format!(
        "{start}, so its last element is `{param}[{}]`: the kernel's index {reached} past it; check how the index is computed, and the offset",
        room as i64 - 1
    )
}

/// How to fix an out-of-bounds access, from what the launch and the kernel's code say: an
/// inclusive bound (`i <= n`) that let the index reach the length, more threads than elements
/// with no guard, an index off by one, or an index computed wrong.
#[allow(clippy::too_many_arguments)]
fn out_of_bounds_advice(
    sources: &SourceMap,
    first: &Site,
    name: &str,
    global: bool,
    threads: u64,
    len: u64,
    min: i64,
    max: i64,
) -> String {
    if min < 0 {
        return format!("the index went negative (down to {min}): check how it is computed");
    }
    if len == 0 {
        return format!("`{name}` has no elements at all: pass a buffer with some, or check its length first");
    }
    let last = format!("{name}[{}]", len - 1);
    let (text, pos, access) = code_at(sources, first).unwrap_or_default();
    let index = advice::index_text(&access);
    let names = advice::identifiers(index);
    let one_past = min == max && max == len as i64;
    let line_at = |at: usize| sources.line_of(crate::diag::Span::new(first.span.source, at, at + 1));
    // The guard the learner wrote on the index's own variables (`if (i > n) return;`), and
    // failing that one on what they are computed from (`i`, for `m[r * cols + c]` with
    // `r = i / cols`).
    let own = advice::locals(&text, pos, &names);
    let derived = advice::sources_of(&text, pos, &own);
    let derived: Vec<&str> = derived.iter().map(String::as_str).collect();
    let own_guard = advice::guard(&text, pos, &own);
    let from_guard = own_guard.is_none().then(|| advice::guard(&text, pos, &derived)).flatten();
    if one_past && let Some(g) = own_guard.as_ref().filter(|g| g.lets_bound_through()) {
        let how = if g.exit {
            let (lhs, rhs) = g.found.text.split_once(&format!(" {} ", g.op)).unwrap_or(("the index", "the bound"));
            format!(" (at `{lhs} == {rhs}` the condition is false, so the thread goes on to the access)")
        } else {
            String::new()
        };
        return format!(
            "off by one: `{}` on line {} lets the index reach {len}{how}, one past the last element {last}: write `{}`",
            g.found.text,
            line_at(g.found.at),
            g.fixed()
        );
    }
    if one_past && let Some(bound) = advice::inclusive_bound(&text, pos, &names) {
        return format!(
            "off by one: `{}` on line {} lets the index reach {len}, one past the last element {last}: write `{}`",
            bound.text,
            line_at(bound.at),
            advice::exclusive(&bound.text)
        );
    }
    let reached_text = if max == i64::MAX { "went far".to_string() } else { format!("reached {max},") };
    // A guard on what the index is computed from holds the thread, not the index: the formula
    // that turns it into an index is what leaves the array.
    if let Some(g) = &from_guard {
        let computed: Vec<String> = own.iter().map(|n| format!("`{n}`")).collect();
        let which = if computed.is_empty() { "the index".to_string() } else { join_and(&computed) };
        let from: Vec<String> = g
            .found
            .text
            .split(|c: char| !(c.is_alphanumeric() || c == '_'))
            .filter(|w| derived.contains(w))
            .map(|w| format!("`{w}`"))
            .collect();
        return format!(
            "the guard `{}` on line {} keeps {} in range, but the index computed from it, `{index}`, {reached_text} past the last element {last}: the index formula leaves the array; check how {which} {} computed",
            g.found.text,
            line_at(g.found.at),
            from.first().cloned().unwrap_or_else(|| "the thread".into()),
            if computed.len() > 1 { "are" } else { "is" }
        );
    }
    if global && threads > len {
        if let Some(g) = &own_guard {
            return format!(
                "the guard `{}` on line {} is there, yet the index {reached_text} past the last element {last}: it must keep the index below the length of `{name}`, {} (the extra threads of the launch's {} must skip the access)",
                g.found.text,
                line_at(g.found.at),
                thousands(len),
                thousands(threads)
            );
        }
        return format!(
            "the launch has {} threads for {} element{}: guard the access, e.g. `if (i < n) {{ ... }}` with n passed to the kernel, so that the extra threads skip it",
            thousands(threads),
            thousands(len),
            if len == 1 { "" } else { "s" }
        );
    }
    let few = if global {
        format!(
            " (the launch has only {} threads for {} elements: the index itself is off)",
            thousands(threads),
            thousands(len)
        )
    } else {
        String::new()
    };
    if one_past {
        let what = if index.is_empty() { "the index".to_string() } else { format!("`{index}`") };
        let guard = if names.len() == 1 && names[0] == index {
            "check the bound of the loop or the condition that lets it through".to_string()
        } else if !index.is_empty() {
            format!("check it against the length where it is used, e.g. `if ({index} < n)`")
        } else {
            "check how it is computed".to_string()
        };
        return format!("off by one: {what} reached {len}, one past the last element {last}{few}; {guard}");
    }
    // Beyond what a pointer can address (see `index_range`): not a number it really reached.
    let reached = if max == i64::MAX { "went far".to_string() } else { format!("reached {max},") };
    format!(
        "the index {reached} past the last element {last}{few}: check how it is computed (a loop's bound or step, `row * width + col`)"
    )
}

/// How to fix a race: a barrier for shared memory, an atomic for one element many threads
/// update, the whole grid's stride for a grid-stride loop that steps by one block, or elements
/// of their own for threads that share them.
#[allow(clippy::too_many_arguments)]
fn race_advice(
    sources: &SourceMap,
    memory: &Memory,
    el: &str,
    name: &str,
    (elements, count): (u64, u64),
    first: &Site,
    second: &Site,
    same_warp: bool,
) -> String {
    let same_line = first.span.source == second.span.source && line(sources, first) == line(sources, second);
    // One side is atomic already: the plain access is the one to change.
    let plain = match (first.access, second.access) {
        (Access::Atomic, Access::Read | Access::Write) => Some(second),
        (Access::Read | Access::Write, Access::Atomic) => Some(first),
        _ => None,
    };
    if let Some(p) = plain {
        let (what, how) = match p.access {
            Access::Read => ("read", format!("read it atomically too (`atomicAdd(&{el}, 0)`)")),
            _ => ("write", format!("write it atomically too (`atomicExch(&{el}, value)`)")),
        };
        let after = if first.thread.block == second.thread.block {
            "after a __syncthreads() that follows the atomic updates"
        } else {
            "to a later launch, once every block's atomic updates are done"
        };
        return format!(
            "the other access is atomic already; the plain {what} of {el} on line {} is the one to fix: {how}, or move it {after}",
            line(sources, p)
        );
    }
    let barrier = if same_warp {
        "__syncwarp() (the threads are lanes of one warp) or __syncthreads()"
    } else {
        "__syncthreads()"
    };
    match memory {
        Memory::Shared(_) if elements == 1 && same_line => format!(
            "the threads of a block all update {el}: make the update atomic, `atomicAdd(&{el}, ...)`, or give each thread an element of its own and add them up after a __syncthreads()"
        ),
        Memory::Shared(_) => {
            let (text, pos, _) = code_at(sources, second).unwrap_or_default();
            let other = first.span.lo as usize;
            if first.span.source == second.span.source
                && let Some(lb) = advice::barrier_only_inside_loop(&text, other, pos)
            {
                let at = |p: usize| sources.line_of(crate::diag::Span::new(second.span.source, p, p + 1));
                let later = at(other.max(pos));
                return format!(
                    "the __syncthreads() on line {} orders the write and the read within one pass of the loop on line {}, but not the next pass's write against this pass's read: add a __syncthreads() at the end of the loop body, after line {later}, so that no thread overwrites `{name}` while others still read it",
                    at(lb.barrier_at),
                    at(lb.loop_at)
                );
            }
            if same_line
                && first.span.source == second.span.source
                && let Some((loop_at, _)) = advice::loop_without_barrier(&text, other, pos)
            {
                let at = sources.line_of(crate::diag::Span::new(second.span.source, loop_at, loop_at + 1));
                return format!(
                    "line {} reads what another thread wrote there in the loop's last pass, and nothing orders the passes: add __syncthreads() as the last thing in the body of the loop on line {at}, where every thread of the block reaches it (not inside an `if`), so that each pass starts once the last one's writes are done",
                    line(sources, second)
                );
            }
            format!("put {barrier} between the write and the read by another thread")
        }
        _ => {
            let (text, pos, access) = code_at(sources, second).unwrap_or_default();
            let names = advice::identifiers(advice::index_text(&access));
            let stride = advice::partial_grid_stride(&text, pos, &names)
                .filter(|(f, _)| f.text.contains("gridDim") || first.thread.block != second.thread.block);
            if let Some((step, axis)) = stride {
                let at = sources.line_of(crate::diag::Span::new(second.span.source, step.at, step.at + 1));
                return format!(
                    "the loop steps by `{}` on line {at}, not by every thread of the grid, so threads reach elements that others own: a grid-stride loop steps by the whole grid, `blockDim.{axis} * gridDim.{axis}`",
                    step.text.split(" += ").nth(1).unwrap_or("")
                );
            }
            // An index of constants alone (`count[0]`) is one element shared by design, not an
            // index that forgot the block.
            let blockless = first.thread.block != second.thread.block
                && first.thread.thread == second.thread.thread
                && !names.is_empty()
                && advice::kernel_ignores_block(&text, pos) == Some(true);
            if blockless {
                return format!(
                    "the kernel's index comes from threadIdx alone, so every block works on the same elements (the same thread of two blocks touched {el}): index with `blockIdx.x * blockDim.x + threadIdx.x`, which adds the block's offset"
                );
            }
            // An index computed from the thread's place alone: each thread was meant to own its
            // element, and the index gave two of them the same one. Atomics would hide that,
            // not fix it.
            let index = advice::index_text(&access);
            let names = advice::identifiers(index);
            // A few threads to an element, not a crowd: a crowd on each element is a sum or a
            // count the kernel means to share (atomics), a few the index's slip.
            let few = count / elements.max(1) <= 8;
            let owned = first.span.source == second.span.source
                && few
                && !index.contains('[')
                && advice::index_text(&code_at(sources, first).unwrap_or_default().2) == index
                && advice::index_from_thread_place(&text, pos, &names);
            if owned && elements > 1 {
                let own = advice::locals(&text, pos, &names);
                let mut defs = advice::definitions(&text, pos, &own);
                let usual = defs.iter().any(|d| {
                    let w = advice::identifiers(&d.text);
                    w.contains(&"blockIdx") && w.contains(&"threadIdx") && !w.contains(&"blockDim")
                });
                let at = |p: usize| sources.line_of(crate::diag::Span::new(second.span.source, p, p + 1));
                // In a Python kernel, the learner's own line (`r, c = cuda.grid(2)`), once,
                // rather than the C each name was lowered to.
                if sources.get(second.span.source).is_some_and(|f| f.origin.is_some()) {
                    for d in &mut defs {
                        if let Some(own) = sources.line_text(crate::diag::Span::new(second.span.source, d.at, d.at + 1))
                        {
                            d.text = own.trim().to_string();
                        }
                    }
                    defs.dedup_by(|a, b| a.text == b.text);
                }
                let from = match defs.as_slice() {
                    [] => String::new(),
                    [d] => format!(" (`{}` on line {})", d.text, at(d.at)),
                    _ => {
                        let mut lines: Vec<u32> = defs.iter().map(|d| at(d.at)).collect();
                        lines.dedup();
                        let lines: Vec<String> = lines.iter().map(u32::to_string).collect();
                        format!(
                            " (computed from {} on line{} {})",
                            join_and(&defs.iter().map(|d| format!("`{}`", d.text)).collect::<Vec<_>>()),
                            if lines.len() == 1 { "" } else { "s" },
                            join_and(&lines)
                        )
                    }
                };
                let fix = if usual {
                    "; with one element per thread it is `blockIdx.x * blockDim.x + threadIdx.x`"
                } else {
                    ""
                };
                let verb = if first.access == Access::Write && second.access == Access::Write {
                    "both stored to"
                } else {
                    "both used"
                };
                // A column past its row's end (`col` of a grid wider than the matrix) lands on
                // the next row's elements, which their own threads also touch.
                if let Some((col, width, row)) = advice::unguarded_column(&text, pos, index) {
                    // A Python kernel's `m[row, col]`, lowered to the flat index.
                    let access = learner_index(sources, second)
                        .map_or_else(|| format!("{row} * {width} + {col}"), |i| format!("{name}[{i}]"));
                    return format!(
                        "{} and {} {verb} {el}: `{col}` reaches `{width}` or more where the grid is wider than the rows, and `{access}` then lands on the next row, on another thread's element; keep `{col}` within its row: check `{row}` and `{col}` each against its own bound (`{col} < {width}`), not the flat index",
                        first.thread.describe(),
                        second.thread.describe()
                    );
                }
                // In CUDA C lowered from Python the index reads `row * m_cols + col`: quote the
                // learner's own (`row, col`).
                let index = learner_index(sources, second).unwrap_or_else(|| index.to_string());
                return format!(
                    "{} and {} {verb} {el}: each thread should own its element, but the index `{index}`{from} gives two threads the same one; fix the index (not with atomics){fix}",
                    first.thread.describe(),
                    second.thread.describe()
                );
            }
            if elements == 1
                && first.thread.block != second.thread.block
                && first.thread.thread == second.thread.thread
                && advice::one_thread_a_block(&text, pos)
            {
                // One thread a block (`if (tid == 0) total[0] += s[0];`): the blocks' partial
                // results meet in one element.
                let base = el.split('[').next().unwrap_or(name);
                format!(
                    "one thread of each block updates the one element {el}: make the update atomic, `atomicAdd(&{el}, ...)`, or write one result per block (`{base}[blockIdx.x]`) and add those up afterwards"
                )
            } else if elements == 1 {
                format!(
                    "many threads update the one element {el}: make the update atomic, `atomicAdd(&{el}, ...)`, or let only one thread write it"
                )
            } else {
                format!(
                    "threads share elements of `{name}`: give each thread its own (index with blockIdx.x * blockDim.x + threadIdx.x), or make the updates atomic, e.g. `atomicAdd(&{el}, ...)`"
                )
            }
        }
    }
}

/// For an uninitialised read of a shared array that another thread writes without a barrier
/// between (a race on the same array with a write in it): the write it came too early for,
/// and the barrier that orders them.
fn unordered_write(f: &Finding, all: &[Finding], sources: &SourceMap) -> Option<String> {
    if let Some(help) = race_from_past_row(f, all, sources) {
        return Some(help);
    }
    let Finding::Uninit { memory: memory @ Memory::Shared(name), first: read, .. } = f else { return None };
    let read_at = line(sources, read);
    let writes = all.iter().filter_map(|other| match other {
        Finding::Race { memory: m, first, second, .. } if m == memory => {
            [first, second].into_iter().find(|s| s.access == Access::Write)
        }
        _ => None,
    });
    // A write on another line is the one to order before the read; one on the read's own line
    // (`s[tid] += s[tid + half]`) is an earlier pass of a loop.
    let write = writes.clone().find(|w| line(sources, w) != read_at).or_else(|| writes.clone().next())?;
    let at = line(sources, write);
    let code = sources.line_text(write.span).map(str::trim).unwrap_or_default();
    let place = if at == read_at {
        format!("between one pass's write on line {at} and the next pass's read")
    } else {
        format!("after line {at} and before line {read_at}")
    };
    Some(format!(
        "the kernel does write `{name}`, on line {at} (`{code}`), but nothing makes the reading thread wait for \
         that write: put __syncthreads() {place} (the race on `{name}` is the same missing barrier)"
    ))
}

/// A race on an array that the same launch also indexed past a row of: threads whose indices
/// name different elements land on the same one, so the fix is the index, not a barrier.
fn race_from_past_row(f: &Finding, all: &[Finding], sources: &SourceMap) -> Option<String> {
    let Finding::Race { memory, .. } = f else { return None };
    let past = all.iter().find_map(|other| match other {
        Finding::PastRow { memory: m, first, .. } if m == memory => Some(first),
        _ => None,
    })?;
    Some(format!(
        "this race comes from the index past a row of `{}` on line {}: threads that index different elements land on the same one; fix that index first",
        memory.name(),
        line(sources, past)
    ))
}

/// How to fix an uninitialised read, by where the memory lives.
fn uninit_advice(memory: &Memory, name: &str) -> String {
    match memory {
        Memory::Shared(_) => format!(
            "write every element of `{name}` before any thread reads it (e.g. `{name}[threadIdx.x] = 0;`, or the value it should start with), then __syncthreads() so that the other threads see it"
        ),
        Memory::Variable(_) => format!(
            "give `{name}` a value where it is declared (`= 0` for a sum), or assign it on every path before it is read"
        ),
        Memory::Local(_) => format!(
            "initialise `{name}` where it is declared (`= {{0}}` zeroes every element), or write each element before reading it"
        ),
        _ => format!(
            "write `{name}` before a kernel reads it: fill it from the host (`{name}[:] = 0`), make it with `zeros` instead, or let a kernel write every element first"
        ),
    }
}

/// `a`, `a and b`, `a, b and c`.
fn join_and(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

fn access_word(a: Access, el: &str) -> String {
    match a {
        Access::Read => format!("read {el}"),
        Access::Write => format!("wrote {el}"),
        Access::Atomic => format!("atomically updated {el}"),
    }
}

/// `index 12` or `indices 10..15`; an index beyond what a pointer can address (the simulator
/// reports it as `i64::MAX` or `i64::MIN`) is said so, not as a number it never was.
/// The elements an out-of-bounds access reached in an array of rows, by row and column
/// (`m[12][0]..m[12][19]`), as the kernel indexed them; `None` for a flat array or an index that
/// is not a number it really reached.
fn shaped_range(name: &str, min: i64, max: i64, shape: &[u64]) -> Option<String> {
    if shape.len() < 2 || min < 0 || max == i64::MAX {
        return None;
    }
    let (lo, hi) = (element(name, min, shape), element(name, max, shape));
    Some(if min == max { lo } else { format!("{lo}..{hi}") })
}

/// How to fix an access past the last row of an array of rows (`m[r, c]` with `r` reaching
/// `m.shape[0]`): the row index's own guard, the bound that let it through, or how it is
/// computed. `None` where the row index is not the learner's (a flat pointer) or stayed in
/// range (then the flat advice speaks of the whole array).
fn rows_advice(sources: &SourceMap, first: &Site, name: &str, shape: &[u64], min: i64, max: i64) -> Option<String> {
    if shape.len() < 2 || min < 0 || max == i64::MAX {
        return None;
    }
    let inner: u64 = shape[1..].iter().product();
    let rows = shape[0];
    let (row_min, row_max) = ((min as u64 / inner) as i64, (max as u64 / inner) as i64);
    if (row_max as u64) < rows {
        return None;
    }
    let (text, pos, access) = code_at(sources, first)?;
    // The row index as the learner wrote it: `r` of `m[r, c]` in Python, `r` of `m[r][c]`.
    let own = learner_index(sources, first).unwrap_or_else(|| advice::index_text(&access).to_string());
    let line_at = |at: usize| sources.line_of(crate::diag::Span::new(first.span.source, at, at + 1));
    // A column index let through to its bound (`c <= m.shape[1]`) runs into the next row, and
    // past the end only from the last row: the cause, though the row index is what overflowed.
    let own = own.replace("][", ", ");
    let parts: Vec<&str> = crate::python::words::split_top_level(&own).into_iter().map(str::trim).collect();
    let row = parts.first()?.to_string();
    for (k, part) in parts.iter().enumerate().skip(1).take(shape.len() - 1) {
        let names = advice::identifiers(part);
        let what = if k == 1 && shape.len() == 2 { "column".to_string() } else { format!("index {k}") };
        let guard = advice::guard(&text, pos, &names);
        if let Some((found, at, fixed)) = bound_let_through(guard.as_ref(), &text, pos, &names) {
            return Some(format!(
                "off by one: `{found}` on line {} lets the {what} index `{part}` reach {}, one past its last: that element is not in `{name}`; in memory it is the next row's first, and from the last row it is past the end: write `{fixed}`",
                line_at(at),
                shape[k]
            ));
        }
        // No guard on the column at all: a grid wider than the rows sends it past their end.
        if !names.is_empty() && guard.is_none() {
            return Some(format!(
                "nothing keeps the {what} index `{part}` below {}: where the grid is wider than `{name}`, a thread past the end of a row lands on the next row's first elements, and from the last row past the end of `{name}`; guard both, e.g. `if ({row} < rows && {part} < cols)`",
                shape[k]
            ));
        }
    }
    let names = advice::identifiers(&row);
    if names.is_empty() {
        return None;
    }
    let last = format!("{name}[{}][...]", rows - 1);
    let guard = advice::guard(&text, pos, &names);
    let bound = format!("{} rows", thousands(rows));
    if row_min == row_max
        && row_max as u64 == rows
        && let Some((found, at, fixed)) = bound_let_through(guard.as_ref(), &text, pos, &names)
    {
        return Some(format!(
            "off by one: `{found}` on line {} lets the row index `{row}` reach {rows}, one past the last row {last} (`{name}` has {bound}): write `{fixed}`",
            line_at(at)
        ));
    }
    let reached =
        if row_min == row_max { format!("reached {row_max}") } else { format!("reached {row_min}..{row_max}") };
    Some(match guard {
        Some(g) => format!(
            "the guard `{}` on line {} is there, yet the row index `{row}` {reached}, past the last row {last} (`{name}` has {bound}): it must keep `{row}` below {rows}",
            g.found.text,
            line_at(g.found.at)
        ),
        None => format!(
            "the row index `{row}` {reached}, past the last row {last} (`{name}` has {bound}): guard it, e.g. `if ({row} < n)` with n the number of rows, or check how it is computed"
        ),
    })
}

/// The condition that lets an index reach its bound (`r <= rows`, as an `if`'s guard or a
/// loop's bound) on `names`: its text, where it is, and how it should read.
fn bound_let_through(
    guard: Option<&advice::Guard>,
    text: &str,
    pos: usize,
    names: &[&str],
) -> Option<(String, usize, String)> {
    guard.filter(|g| g.lets_bound_through()).map(|g| (g.found.text.clone(), g.found.at, g.fixed())).or_else(|| {
        advice::inclusive_bound(text, pos, names).map(|b| (b.text.clone(), b.at, advice::exclusive(&b.text)))
    })
}

fn index_range(min: i64, max: i64) -> String {
    let one = |i: i64| match i {
        i64::MAX => "an index too far past the end to address (2^47 bytes or more)".to_string(),
        i64::MIN => "an index too far before the start to address (2^47 bytes or more)".to_string(),
        i => format!("index {i}"),
    };
    match (min, max) {
        _ if min == max => one(min),
        (_, i64::MAX) | (i64::MIN, _) => format!("indices from {} to {}", one(min), one(max)),
        _ => format!("indices {min}..{max}"),
    }
}

/// The source line of `span`, trimmed; a long one (a kernel typed on one line) cut to the
/// statement around the span, so a note quotes the access rather than the whole kernel.
fn excerpt(sources: &SourceMap, span: Span) -> String {
    const ROOM: usize = 60;
    let line = sources.line_text(span).unwrap_or("");
    if line.trim().chars().count() <= ROOM {
        return line.trim().to_string();
    }
    let col = sources.line_col(span).map_or(0, |lc| lc.col as usize - 1);
    let chars: Vec<char> = line.chars().collect();
    // From the start of the statement (after the `;`, `{` or `)` before it) to its end.
    let from = chars[..col.min(chars.len())].iter().rposition(|c| matches!(c, ';' | '{' | ')')).map_or(0, |p| p + 1);
    let to = chars[col.min(chars.len())..].iter().position(|c| *c == ';').map_or(chars.len(), |p| col + p + 1);
    let to = to.min(from + ROOM);
    let text: String = chars[from..to].iter().collect();
    let lead = if from > 0 { "... " } else { "" };
    let tail = if to < chars.len() { " ..." } else { "" };
    format!("{lead}{}{tail}", text.trim())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diag::Span;
    use crate::finding::ThreadRef;

    #[test]
    fn a_quoted_c_condition_reads_as_python() {
        assert_eq!(
            in_python("guard both, e.g. `if (row < rows && col < cols)`"),
            "guard both, e.g. `if row < rows and col < cols:`"
        );
        assert_eq!(in_python("`if (` alone"), "`if (` alone");
    }

    #[test]
    fn advice_for_a_python_kernel_is_in_python() {
        let c = "make the updates atomic, e.g. `atomicAdd(&a[0], ...)`, index with blockIdx.x * blockDim.x + threadIdx.x, then __syncthreads(); `s[threadIdx.x] = 0;`";
        assert_eq!(
            in_python(c),
            "make the updates atomic, e.g. `cuda.atomic.add(a, 0, ...)`, index with cuda.grid(1), then cuda.syncthreads(); `s[cuda.threadIdx.x] = 0`"
        );
    }

    fn site(map: &mut SourceMap, access: Access, block: u32, thread: u32) -> (Site, crate::diag::SourceId) {
        let id = map.add(
            "<input 1>",
            "__global__ void k(float *a) {\n    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    a[i] += 0.5f;\n}",
            1,
        );
        let lo = map.get(id).unwrap().text.find("a[i] +=").unwrap();
        (
            Site {
                thread: ThreadRef { block: [block, 0, 0], thread: [thread, 0, 0], ranks: [0; 2] },
                access,
                span: Span::new(id, lo, lo + 4),
            },
            id,
        )
    }

    #[test]
    fn out_of_bounds_summary_names_buffer_range_first_thread_and_line() {
        let mut map = SourceMap::new();
        let (first, _) = site(&mut map, Access::Write, 3, 232);
        let f = Finding::OutOfBounds {
            memory: Memory::Global("a".into()),
            shape: Vec::new(),
            kernel_name: None,
            view: None,
            threads: 1024,
            len: 1000,
            access: Access::Write,
            count: 24,
            min_index: 1000,
            max_index: 1023,
            first,
            first_index: 1000,
        };
        let text = to_diagnostic(&f, &map).to_plain(&map);
        insta::assert_snapshot!(text);
    }

    #[test]
    fn shared_memory_races_get_a_barrier_or_an_atomic() {
        let mut map = SourceMap::new();
        let text = "__global__ void k(float *a) {\n    __shared__ float s[32];\n    s[threadIdx.x] = a[threadIdx.x];\n    s[0] += s[threadIdx.x];\n    a[threadIdx.x] = s[(threadIdx.x + 1) % 32];\n}";
        let id = map.add("<input 1>", text, 1);
        let at = |pat: &str, access, thread| Site {
            thread: ThreadRef { block: [0; 3], thread: [thread, 0, 0], ranks: [0; 2] },
            access,
            span: Span::new(id, text.find(pat).unwrap(), text.find(pat).unwrap() + pat.len()),
        };
        let race = |first, second, elements| Finding::Race {
            memory: Memory::Shared("s".into()),
            shape: Vec::new(),
            kernel_name: None,
            view: None,
            index: 0,
            count: 31,
            elements,
            first,
            second,
            same_warp: false,
        };
        // Every thread adds into s[0]: a barrier cannot help, an atomic can.
        let sum = race(at("s[0]", Access::Read, 1), at("s[0]", Access::Write, 2), 1);
        let text_of = |f: &Finding| to_diagnostic(f, &map).to_plain(&map).replace("\n         ", "");
        assert!(
            text_of(&sum).contains("the threads of a block all update s[0]: make the update atomic"),
            "{}",
            text_of(&sum)
        );
        // A neighbour's element read before it is written: a barrier.
        let neighbour = race(at("s[(", Access::Read, 3), at("s[threadIdx.x] =", Access::Write, 4), 32);
        assert!(
            text_of(&neighbour).contains("put __syncthreads() between the write and the read"),
            "{}",
            text_of(&neighbour)
        );
    }

    #[test]
    fn a_race_with_an_atomic_names_the_plain_access_and_lanes_of_a_warp_get_syncwarp() {
        let mut map = SourceMap::new();
        let text = "__global__ void k(int *c, int *seen) {\n    if (threadIdx.x == 0) seen[0] = c[0];\n    atomicAdd(&c[0], 1);\n}";
        let id = map.add("<input 1>", text, 1);
        let at = |pat: &str, access, thread| Site {
            thread: ThreadRef { block: [0; 3], thread: [thread, 0, 0], ranks: [0; 2] },
            access,
            span: Span::new(id, text.find(pat).unwrap(), text.find(pat).unwrap() + pat.len()),
        };
        let race = |memory, first, second, elements| Finding::Race {
            memory,
            shape: Vec::new(),
            kernel_name: None,
            view: None,
            index: 0,
            count: 31,
            elements,
            first,
            second,
            same_warp: true,
        };
        let text_of = |f: &Finding| to_diagnostic(f, &map).to_plain(&map).replace("\n         ", "");
        // Read first or atomic first: the plain read on line 2 is the one to fix either way.
        for (first, second) in [
            (at("c[0];", Access::Read, 0), at("atomicAdd", Access::Atomic, 1)),
            (at("atomicAdd", Access::Atomic, 1), at("c[0];", Access::Read, 0)),
        ] {
            let t = text_of(&race(Memory::Global("c".into()), first, second, 1));
            assert!(t.contains("the plain read of c[0] on line 2 is the one to fix"), "{t}");
            assert!(!t.contains("make the update atomic"), "{t}");
        }
        // Two lanes of one warp in shared memory: a warp-level sync is offered.
        let shared =
            race(Memory::Shared("s".into()), at("seen[0] =", Access::Write, 0), at("c[0];", Access::Read, 1), 8);
        let t = text_of(&shared);
        assert!(t.contains("no __syncwarp() or __syncthreads() between them"), "{t}");
        assert!(t.contains("put __syncwarp() (the threads are lanes of one warp) or __syncthreads()"), "{t}");
    }

    #[test]
    fn race_summary_gives_an_example_pair() {
        let mut map = SourceMap::new();
        let (first, _) = site(&mut map, Access::Write, 0, 0);
        let second = Site {
            access: Access::Read,
            thread: ThreadRef { block: [1, 0, 0], thread: [37, 0, 0], ranks: [0; 2] },
            ..first
        };
        let f = Finding::Race {
            memory: Memory::Global("a".into()),
            shape: Vec::new(),
            kernel_name: None,
            view: None,
            index: 0,
            count: 1_048_575,
            elements: 2,
            first,
            second,
            same_warp: false,
        };
        insta::assert_snapshot!(to_diagnostic(&f, &map).to_plain(&map));
    }

    #[test]
    fn uninitialised_reads_name_the_element_the_thread_and_why() {
        let mut map = SourceMap::new();
        let text = "__global__ void k(float *out) {\n    __shared__ float s[64];\n    float sum;\n    if (threadIdx.x < 32) s[threadIdx.x] = 1.0f;\n    __syncthreads();\n    out[threadIdx.x] = s[threadIdx.x] + sum;\n}";
        let id = map.add("<input 1>", text, 1);
        let at = |pat: &str, thread| Site {
            thread: ThreadRef { block: [0; 3], thread: [thread, 0, 0], ranks: [0; 2] },
            access: Access::Read,
            span: Span::new(id, text.rfind(pat).unwrap(), text.rfind(pat).unwrap() + pat.len()),
        };
        let shared = Finding::Uninit {
            memory: Memory::Shared("s".into()),
            shape: Vec::new(),
            kernel_name: None,
            index: Some(32),
            count: 64,
            elements: 32,
            first: at("s[threadIdx.x]", 32),
        };
        let local = Finding::Uninit {
            memory: Memory::Variable("sum".into()),
            shape: Vec::new(),
            kernel_name: None,
            index: None,
            count: 64,
            elements: 64,
            first: at("sum", 0),
        };
        let both = [shared, local].map(|f| to_diagnostic(&f, &map).to_plain(&map)).join("\n");
        insta::assert_snapshot!(both);
    }

    /// Where an access is: its text, which match of it, the access and the thread.
    type At<'a> = &'a dyn Fn(&str, usize, Access, u32) -> Site;

    /// A finding's advice, for a kernel `text` and sites found by the text of their access.
    fn help_of(text: &str, f: impl Fn(At) -> Finding) -> String {
        let mut map = SourceMap::new();
        let id = map.add("<input 1>", text, 1);
        let at = |pat: &str, nth: usize, access, thread| {
            let lo = text.match_indices(pat).nth(nth).unwrap().0;
            Site {
                thread: ThreadRef { block: [0; 3], thread: [thread, 0, 0], ranks: [0; 2] },
                access,
                span: Span::new(id, lo, lo + pat.len()),
            }
        };
        to_diagnostic(&f(&at), &map).help.unwrap_or_default()
    }

    fn past_end(memory: Memory, threads: u64, len: u64, max: i64, first: Site) -> Finding {
        Finding::OutOfBounds {
            memory,
            shape: Vec::new(),
            kernel_name: None,
            view: None,
            threads,
            len,
            access: first.access,
            count: 1,
            min_index: len as i64,
            max_index: max,
            first,
            first_index: len as i64,
        }
    }

    #[test]
    fn a_guard_that_lets_the_bound_through_is_named_not_asked_for() {
        let text = "__global__ void k(float *a, int n) {\n    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i > n) return;\n    a[i] = 1.0f;\n}";
        let help = help_of(text, |at: At| {
            past_end(Memory::Global("a".into()), 1024, 1000, 1000, at("a[i]", 0, Access::Write, 5))
        });
        assert!(help.starts_with("off by one: `i > n` on line 3 lets the index reach 1000"), "{help}");
        assert!(help.ends_with("write `i >= n`"), "{help}");
        assert!(!help.contains("guard the access"), "{help}");
        // A guard that is right, with an index that still leaves: not "guard the access" either.
        let text = text.replace("i > n", "i >= n");
        let help = help_of(&text, |at| {
            past_end(Memory::Global("a".into()), 1024, 1000, 1010, at("a[i]", 0, Access::Write, 5))
        });
        assert!(help.starts_with("the guard `i >= n` on line 3 is there, yet the index reached 1010"), "{help}");
        // No guard at all: ask for one.
        let bare = "__global__ void k(float *a, int n) {\n    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    a[i] = 1.0f;\n}";
        let help = help_of(bare, |at: At| {
            past_end(Memory::Global("a".into()), 1024, 1000, 1023, at("a[i]", 0, Access::Write, 5))
        });
        assert!(help.contains("guard the access"), "{help}");
    }

    #[test]
    fn an_index_formula_that_leaves_the_array_behind_a_guard_is_named() {
        let text = "__global__ void t(float *m, float *o, int rows, int cols) {\n    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i >= rows * cols) return;\n    int r = i / rows; int c = i % rows;\n    o[c * rows + r] = m[r * cols + c];\n}";
        let help = help_of(text, |at| {
            past_end(Memory::Global("m".into()), 16, 12, 14, at("m[r * cols + c]", 0, Access::Read, 9))
        });
        assert!(
            help.starts_with("the guard `i >= rows * cols` on line 3 keeps `i` in range, but the index computed from it, `r * cols + c`, reached 14,"),
            "{help}"
        );
        assert!(help.contains("check how `r` and `c` are computed"), "{help}");
    }

    #[test]
    fn a_barrier_inside_a_loop_that_lacks_one_at_its_end_is_named() {
        let text = "__global__ void mm(float *A, float *C, int n) {\n    __shared__ float As[4][4];\n    float s = 0.0f;\n    for (int t = 0; t < n; t++) {\n        As[threadIdx.y][threadIdx.x] = A[t];\n        __syncthreads();\n        for (int k = 0; k < 4; k++) s += As[threadIdx.y][k];\n    }\n    C[0] = s;\n}";
        let race = |at: At| Finding::Race {
            memory: Memory::Shared("As".into()),
            shape: vec![4, 4],
            kernel_name: None,
            view: None,
            index: 5,
            count: 4,
            elements: 16,
            first: at("As[threadIdx.y][k]", 0, Access::Read, 3),
            second: at("As[threadIdx.y][threadIdx.x]", 0, Access::Write, 0),
            same_warp: false,
        };
        let help = help_of(text, race);
        assert!(
            help.starts_with(
                "the __syncthreads() on line 6 orders the write and the read within one pass of the loop on line 4"
            ),
            "{help}"
        );
        assert!(help.contains("add a __syncthreads() at the end of the loop body, after line 7"), "{help}");
        // With the second barrier there, the advice is the usual one.
        let fixed = text.replace("s += As[threadIdx.y][k];\n", "s += As[threadIdx.y][k];\n        __syncthreads();\n");
        assert!(help_of(&fixed, race).starts_with("put __syncthreads() between"));
    }

    #[test]
    fn plain_stores_that_collide_blame_the_index_not_a_missing_atomic() {
        let text = "__global__ void k(const float *a, float *o, int n) {\n    int i = blockIdx.x + threadIdx.x;\n    if (i < n) o[i] = a[i] * 2.0f;\n}";
        let race = |first: Access, second: Access| race_at("o[i]", first, second);
        fn race_at(pat: &'static str, first: Access, second: Access) -> impl Fn(At) -> Finding {
            move |at: At| Finding::Race {
                memory: Memory::Global("o".into()),
                shape: Vec::new(),
                kernel_name: None,
                view: None,
                index: 66,
                count: 765,
                elements: 257,
                first: at(pat, 0, first, 64),
                second: at(pat, 0, second, 65),
                same_warp: false,
            }
        }
        let help = help_of(text, race(Access::Write, Access::Write));
        assert!(help.contains("both stored to o[66]: each thread should own its element, but the index `i` (`i = blockIdx.x + threadIdx.x` on line 2) gives two threads the same one"), "{help}");
        assert!(help.contains("`blockIdx.x * blockDim.x + threadIdx.x`") && !help.contains("atomicAdd"), "{help}");
        // A read of the element it stores (`o[i] = o[i] * 2`) is the same mistake.
        let reread = text.replace("o[i] = a[i] * 2.0f", "o[i] = o[i] * 2.0f");
        let help = help_of(&reread, race(Access::Read, Access::Write));
        assert!(help.contains("both used o[66]: each thread should own its element"), "{help}");
        // An update of an element chosen by data (a histogram's bin) is one for an atomic.
        let update = text.replace("o[i] = a[i] * 2.0f", "o[(int)a[i]] += 1.0f");
        let help = help_of(&update, race_at("o[(int)a[i]]", Access::Read, Access::Write));
        assert!(help.contains("make the updates atomic"), "{help}");
    }
}
