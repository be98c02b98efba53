//! `:why`: the race finding's example pair replayed as a timeline of their accesses to the
//! element, in the order the simulator's schedule ran them, then what went wrong in plain words.
//!
//! ```text
//! step     812  block 0 thread 5    reads  a[0] = 0.0     line 3
//! step     815  block 1 thread 37   reads  a[0] = 0.0     line 3
//! step     818  block 0 thread 5    writes a[0] = 0.5     line 3
//! step     901  block 1 thread 37   writes a[0] = 0.5     line 3
//! both read a[0] = 0.0 before either wrote: one update lost.
//! ```

use std::io::{self, Write};

use super::Style;
use super::array::scalar_float;
use crate::buffer::Num;
use crate::diag::SourceMap;
use crate::finding::{Access, Memory, Site, ThreadRef};
use crate::launch::WatchedAccess;

/// Timeline lines shown before eliding the rest.
const MAX_EVENTS: usize = 16;

#[derive(Clone, Debug)]
pub struct WhyView {
    /// `kernel<<<grid, block>>>`.
    pub launch: String,
    pub schedule: String,
    pub seed: u64,
    pub memory: Memory,
    /// The element, as the kernel names it (`out[3]`, `m[4][0]`; `m[4, 0]` for a Python kernel).
    pub element: String,
    /// The finding's example pair.
    pub first: Site,
    pub second: Site,
    /// Their accesses to the element, in the order they ran.
    pub events: Vec<WatchedAccess>,
}

fn num(n: Option<Num>) -> String {
    match n {
        Some(Num::Float(f)) => scalar_float(f),
        Some(Num::Int(i)) => i.to_string(),
        None => "?".into(),
    }
}

impl WhyView {
    fn elem(&self) -> String {
        self.element.clone()
    }

    fn what(&self, e: &WatchedAccess) -> String {
        let elem = self.elem();
        match e.access {
            Access::Read => format!("reads  {elem} = {}", num(e.read)),
            Access::Write => format!("writes {elem} = {}", num(e.written)),
            Access::Atomic => format!("atomic {elem}: {} -> {}", num(e.read), num(e.written)),
        }
    }

    /// What went wrong, in plain words, read off the timeline.
    pub fn explain(&self) -> String {
        let ev = &self.events;
        let elem = self.elem();
        let name = |t: &ThreadRef| t.describe();
        if ev.is_empty() {
            return format!(
                "the replay saw neither thread touch {elem}; the race is between other accesses of theirs (see the finding's lines)"
            );
        }
        let atomic = ev.iter().any(|e| e.access == Access::Atomic);
        let plain = ev.iter().any(|e| e.access != Access::Atomic);
        let prefix = if atomic && plain {
            "one thread used an atomic and the other a plain access: atomics only order other atomics; "
        } else {
            ""
        };
        let writes = |e: &WatchedAccess| e.access != Access::Read;
        for (i, r) in ev.iter().enumerate().filter(|(_, e)| e.access == Access::Read) {
            let t = r.thread;
            let Some(j) = (i + 1..ev.len()).find(|&j| ev[j].thread == t && writes(&ev[j])) else { continue };
            if let Some(k) = (i + 1..j).find(|&k| ev[k].thread != t && writes(&ev[k])) {
                return format!(
                    "{prefix}{} wrote {elem} between {}'s read and its write; {} then wrote a value computed from the old {}: {}'s update is lost",
                    name(&ev[k].thread),
                    name(&t),
                    name(&t),
                    num(r.read),
                    name(&ev[k].thread)
                );
            }
            if (i + 1..j).any(|k| ev[k].thread != t && ev[k].access == Access::Read) {
                return format!("{prefix}both read {elem} = {} before either wrote: one update lost", num(r.read));
            }
        }
        if let Some((i, r)) = ev.iter().enumerate().find(|(_, e)| e.access == Access::Read)
            && let Some(w) = ev[i + 1..].iter().find(|e| e.thread != r.thread && writes(e))
        {
            return format!(
                "{prefix}{} read {elem} = {} before {}'s write reached memory: it saw the old value",
                name(&r.thread),
                num(r.read),
                name(&w.thread)
            );
        }
        if let Some((i, w)) = ev.iter().enumerate().find(|(_, e)| writes(e))
            && let Some(r) = ev[i + 1..].iter().find(|e| e.thread != w.thread && e.access == Access::Read)
        {
            return format!(
                "{prefix}this time {} read {elem} after {}'s write and saw {}; nothing orders them, so another schedule may not (try `:race`)",
                name(&r.thread),
                name(&w.thread),
                num(r.read)
            );
        }
        format!("{prefix}both threads wrote {elem} and nothing orders the writes: which value stays depends on timing")
    }
}

fn kind(m: &Memory) -> &'static str {
    match m {
        Memory::Global(_) => "",
        Memory::Shared(_) => "shared ",
        Memory::Local(_) | Memory::Variable(_) => "local ",
        Memory::Constant(_) => "constant ",
    }
}

pub fn write_why(out: &mut dyn Write, v: &WhyView, sources: &SourceMap, style: &Style) -> io::Result<()> {
    let title = format!("race on {}{}", kind(&v.memory), v.elem());
    let rest = format!("{}, {} schedule, seed {}, replayed", v.launch, v.schedule, v.seed);
    super::write_heading(out, &title, &rest, style)?;
    let intro =
        format!("{} and {} touch {} in this order:", v.first.thread.describe(), v.second.thread.describe(), v.elem());
    writeln!(out, "{}", style.dim(&super::prose(&intro, style)))?;
    let who_w = v.events.iter().map(|e| e.thread.describe().len()).max().unwrap_or(0);
    let what_w = v.events.iter().take(MAX_EVENTS).map(|e| v.what(e).len()).max().unwrap_or(0);
    for e in v.events.iter().take(MAX_EVENTS) {
        let who = format!("{:<who_w$}", e.thread.describe());
        let who = if e.thread == v.first.thread { style.accent(&who) } else { style.warn(&who) };
        let line = sources.line_of(e.span);
        writeln!(
            out,
            "  {} {who}  {:<what_w$}  {}",
            style.dim(&format!("step {:>8}", e.step)),
            v.what(e),
            style.dim(&format!("line {line}"))
        )?;
    }
    let shown = &v.events[..v.events.len().min(MAX_EVENTS)];
    if shown.windows(2).any(|p| p[0].step == p[1].step && p[0].thread != p[1].thread) {
        let note = "accesses at the same step ran together, as lanes of one warp; of two writes at one step, the higher lane's lands last";
        writeln!(out, "  {}", style.dim(&crate::diag::wrap(note, style.width, 2)))?;
    }
    if v.events.len() > MAX_EVENTS {
        writeln!(out, "  {}", style.dim(&format!("... {} more", v.events.len() - MAX_EVENTS)))?;
    }
    writeln!(out, "{}", style.warn(&super::prose(&format!("{}.", v.explain()), style)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diag::Span;

    fn t(thread: u32) -> ThreadRef {
        ThreadRef { block: [0, 0, 0], thread: [thread, 0, 0], ranks: [0; 2] }
    }

    fn ev(step: u64, thread: u32, access: Access, read: Option<f64>, written: Option<f64>) -> WatchedAccess {
        WatchedAccess {
            step,
            thread: t(thread),
            access,
            memory: Memory::Global("a".into()),
            index: 0,
            read: read.map(Num::Float),
            written: written.map(Num::Float),
            span: Span::default(),
        }
    }

    fn view(events: Vec<WatchedAccess>) -> WhyView {
        let site = |n| Site { thread: t(n), access: Access::Write, span: Span::default() };
        WhyView {
            launch: "k<<<1, 2>>>".into(),
            schedule: "random".into(),
            seed: 0,
            memory: Memory::Global("a".into()),
            element: "a[0]".into(),
            first: site(1),
            second: site(2),
            events,
        }
    }

    #[test]
    fn explanations_follow_the_timeline() {
        use Access::*;
        let lost = view(vec![
            ev(1, 1, Read, Some(0.0), None),
            ev(2, 2, Read, Some(0.0), None),
            ev(3, 1, Write, None, Some(0.5)),
            ev(4, 2, Write, None, Some(0.5)),
        ]);
        assert!(lost.explain().starts_with("both read a[0] = 0.0 before either wrote"), "{}", lost.explain());
        let overwritten = view(vec![
            ev(1, 1, Read, Some(0.0), None),
            ev(2, 2, Write, None, Some(7.0)),
            ev(3, 1, Write, None, Some(0.5)),
        ]);
        assert!(overwritten.explain().contains("block 0 thread 2's update is lost"), "{}", overwritten.explain());
        let stale = view(vec![ev(1, 1, Read, Some(0.0), None), ev(2, 2, Write, None, Some(7.0))]);
        assert!(stale.explain().contains("before block 0 thread 2's write reached memory"), "{}", stale.explain());
        let lucky = view(vec![ev(1, 2, Write, None, Some(7.0)), ev(2, 1, Read, Some(7.0), None)]);
        assert!(lucky.explain().starts_with("this time block 0 thread 1 read a[0] after"), "{}", lucky.explain());
        let writes = view(vec![ev(1, 2, Write, None, Some(7.0)), ev(2, 1, Write, None, Some(8.0))]);
        assert!(writes.explain().starts_with("both threads wrote a[0]"), "{}", writes.explain());
        let mixed = view(vec![ev(1, 2, Atomic, Some(0.0), Some(1.0)), ev(2, 1, Write, None, Some(8.0))]);
        assert!(mixed.explain().starts_with("one thread used an atomic"), "{}", mixed.explain());
        assert!(view(vec![]).explain().contains("neither thread"));
    }
}
