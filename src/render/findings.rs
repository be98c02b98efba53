//! Findings as the learner reads them: one headline that summarises, the source line with a
//! caret, an example thread, and how to fix it. Drawn through `Diagnostic` so they look like
//! every other message that points at the learner's code.

use std::io::{self, Write};

use super::Style;
use crate::diag::{Diagnostic, SourceMap};
use crate::finding::{Access, Finding, Memory, Site};

use super::text::thousands;

/// Write one finding.
pub fn write_finding(out: &mut dyn Write, f: &Finding, sources: &SourceMap, style: &Style) -> io::Result<()> {
    to_diagnostic(f, sources).render(sources, out, style.color, style.width)
}

/// `a[1024]` for a buffer, `tile[3]` for a shared array.
fn element(memory: &Memory, index: i64) -> String {
    match index {
        // Beyond what a pointer can address (see `index_range`).
        i64::MAX => format!("{}[far past the end]", memory.name()),
        i64::MIN => format!("{}[far before the start]", memory.name()),
        _ => format!("{}[{index}]", memory.name()),
    }
}

fn line(sources: &SourceMap, site: &Site) -> u32 {
    sources.line_of(site.span)
}

/// The diagnostic a finding is drawn as.
pub fn to_diagnostic(f: &Finding, sources: &SourceMap) -> Diagnostic {
    match f {
        Finding::OutOfBounds { memory, len, access, count, min_index, max_index, first, first_index } => {
            let past_end = *first_index >= *len as i64;
            let place = if past_end { "past the end of" } else { "before the start of" };
            let who = if *count == 1 { "1 thread".to_string() } else { format!("{} threads", thousands(*count)) };
            let range = index_range(*min_index, *max_index);
            let verb = match access {
                Access::Read => "read",
                Access::Write => "wrote",
                Access::Atomic => "atomically updated",
            };
            let mut d = Diagnostic::finding(format!(
                "{who} {verb} {place} {} (length {len}): {range}, first by {}, line {}",
                memory.describe(),
                first.thread.describe(),
                line(sources, first)
            ))
            .at(first.span)
            .label(format!("{} {}", first.thread.describe(), access_word(*access, &element(memory, *first_index))));
            d = d.note(match access {
                Access::Read => "out-of-bounds reads were given 0 here; on a GPU they read whatever lies there",
                _ => "these writes were not performed; on a GPU they silently overwrite whatever lies there",
            });
            d.help(if past_end {
                "more threads than elements: guard the access, e.g. `if (i < n) { ... }`, and pass n".to_string()
            } else {
                "the index went negative: check how it is computed".to_string()
            })
        }
        Finding::Race { memory, index, count, elements, first, second } => {
            let lines = {
                let (a, b) = (line(sources, first), line(sources, second));
                if a == b { format!("line {a}") } else { format!("lines {a} and {b}") }
            };
            let elems = if *elements == 1 { "1 element".to_string() } else { format!("{} elements", thousands(*elements)) };
            let pairs = if *count == 1 { "1 conflicting access".to_string() } else { format!("{} conflicting accesses", thousands(*count)) };
            let el = element(memory, *index);
            let same_block = first.thread.block == second.thread.block;
            let mut d = Diagnostic::finding(format!("data race on {}: {pairs} to {elems}, {lines}", memory.describe()))
                .at(second.span)
                .label(format!("{} {}", second.thread.describe(), access_word(second.access, &el)))
                .note(format!(
                    "example: {} {}, then {} {}, and nothing orders the two{}",
                    first.thread.describe(),
                    access_word(first.access, &el),
                    second.thread.describe(),
                    access_word(second.access, &el),
                    if same_block { " (no __syncthreads() between them)" } else { " (they are in different blocks)" }
                ));
            if first.span.lo != second.span.lo || first.span.source != second.span.source {
                let text = sources.line_text(first.span).unwrap_or("").trim();
                d = d.note(format!("the other access is at {}: {text}", sources.location(first.span)));
            }
            d.help(match memory {
                Memory::Shared(_) => "put __syncthreads() between the write and the read by another thread".to_string(),
                _ => format!(
                    "each thread should own its elements (index with blockIdx.x * blockDim.x + threadIdx.x), or update shared totals with atomicAdd(&{el}, ...)"
                ),
            })
        }
        Finding::BarrierDivergence { block, waiting, other, waiting_threads, other_threads } => {
            let blk = crate::finding::ThreadRef { block: *block, thread: [0; 3] }.describe();
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
        Finding::StepLimit { steps, site, time_limit: None } => Diagnostic::finding(format!(
            "possible infinite loop at line {}: the launch was stopped after {} warp steps",
            line(sources, site),
            thousands(*steps)
        ))
        .at(site.span)
        .label(format!("{} was here", site.thread.describe()))
        .help("check that the loop's condition eventually becomes false; if the kernel really needs more steps, raise the budget with --max-steps"),
        Finding::StepLimit { steps, site, time_limit: Some(limit) } => Diagnostic::finding(format!(
            "the launch was stopped after {} s, the simulator's time limit ({} warp steps; line {} was running)",
            limit.as_secs_f64(),
            thousands(*steps),
            line(sources, site)
        ))
        .at(site.span)
        .label(format!("{} was here", site.thread.describe()))
        .note("the simulator runs a few million warp steps a second: it is for lesson-sized launches")
        .help("launch fewer threads, check that every loop ends, or give it longer with --timeout SECS; a GPU (`:backend gpu`) runs it as it is"),
        Finding::GuardWrite { memory, len, count, min_index, max_index } => {
            let place = if *min_index >= *len as i64 { "past the end of" } else { "outside" };
            let range = if min_index == max_index { format!("index {min_index}") } else { format!("indices {min_index}..{max_index}") };
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

fn access_word(a: Access, el: &str) -> String {
    match a {
        Access::Read => format!("read {el}"),
        Access::Write => format!("wrote {el}"),
        Access::Atomic => format!("atomically updated {el}"),
    }
}

/// `index 12` or `indices 10..15`; an index beyond what a pointer can address (the simulator
/// reports it as `i64::MAX` or `i64::MIN`) is said so, not as a number it never was.
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diag::Span;
    use crate::finding::ThreadRef;

    fn site(map: &mut SourceMap, access: Access, block: u32, thread: u32) -> (Site, crate::diag::SourceId) {
        let id = map.add(
            "<input 1>",
            "__global__ void k(float *a) {\n    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    a[i] += 0.5f;\n}",
            1,
        );
        let lo = map.get(id).unwrap().text.find("a[i] +=").unwrap();
        (
            Site {
                thread: ThreadRef { block: [block, 0, 0], thread: [thread, 0, 0] },
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
    fn race_summary_gives_an_example_pair() {
        let mut map = SourceMap::new();
        let (first, _) = site(&mut map, Access::Write, 0, 0);
        let second = Site { access: Access::Read, thread: ThreadRef { block: [1, 0, 0], thread: [37, 0, 0] }, ..first };
        let f = Finding::Race {
            memory: Memory::Global("a".into()),
            index: 0,
            count: 1_048_575,
            elements: 2,
            first,
            second,
        };
        insta::assert_snapshot!(to_diagnostic(&f, &map).to_plain(&map));
    }
}
