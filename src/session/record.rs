//! The session's record of what ran: the inputs (`:save` writes them), what each printed
//! (`:export` writes it), and the last launch (`expect clean`, `:why`, `cost` and the marks on
//! what a launch changed read it). Kept apart from what the learner made (`workspace.rs`) so a
//! lesson check can set the learner's record aside while it runs, and put it back.

use crate::backend::LaunchReport;
use crate::backend::sim::SimConfig;
use crate::buffer::Buffer;
use crate::finding::{Finding, FindingKind};
use crate::launch::LaunchSpec;
use crate::render::handout::Ran;

/// The last launch, kept for `expect clean`, `expect finding ...` and highlighting what changed.
pub(crate) struct LastLaunch {
    pub report: LaunchReport,
    /// The launched buffers as they were before the launch, by name (in `LaunchBuffers` order).
    pub before: Vec<(String, Buffer)>,
    /// What ran and how, so `:why` can run it again exactly.
    pub spec: LaunchSpec,
    pub config: SimConfig,
    /// Finding kinds an `expect finding` has acknowledged since the launch (a replayed script
    /// fails on a finding nothing acknowledged, see [`Record::unacknowledged`]).
    pub acknowledged: Vec<FindingKind>,
}

/// What ran in a session, in order.
#[derive(Default)]
pub(crate) struct Record {
    /// Inputs that ran, for `:save`.
    history: Vec<String>,
    /// What was typed and what it printed (plain and in colour), for `:export`.
    transcript: Vec<Ran>,
    last: Option<LastLaunch>,
    /// Launches that ran to a report: tells `replay --compare` which inputs launched.
    launches: u64,
    /// Inputs typed at the prompt, which name them: `<input 3>`.
    typed: u32,
    /// The values the last failed `expect` showed as wrong (see `ExpectOutcome::wrong`).
    pub wrong: Vec<f64>,
    /// A cost record has said why its `dram_bytes` holds no reads (the inputs start in the
    /// L2): said once a session, as a note that would otherwise follow every record.
    pub l2_note_said: bool,
}

/// What [`Record::set_aside`] took out: the part of the record a lesson check replaces.
pub(crate) struct SetAside {
    history: Vec<String>,
    last: Option<LastLaunch>,
}

impl Record {
    /// The name of the next input typed at the prompt: `<input 1>`, `<input 2>` ...
    pub fn next_typed(&mut self) -> String {
        self.typed += 1;
        format!("<input {}>", self.typed)
    }

    /// An input (or a setting a command changed, written as its command) ran: `:save` keeps it.
    pub fn ran(&mut self, input: String) {
        self.history.push(input);
    }

    /// The inputs that ran, in order.
    pub fn history(&self) -> &[String] {
        &self.history
    }

    /// Keep what an input printed, for `:export`.
    pub fn transcribe(&mut self, ran: Ran) {
        self.transcript.push(ran);
    }

    /// Every input kept for `:export`, with what it printed.
    pub fn transcript(&self) -> &[Ran] {
        &self.transcript
    }

    /// The last launch, if there was one (and it is not gone with a GPU's lost results).
    pub fn last(&self) -> Option<&LastLaunch> {
        self.last.as_ref()
    }

    pub fn last_mut(&mut self) -> Option<&mut LastLaunch> {
        self.last.as_mut()
    }

    /// The findings of the last launch, if there was one.
    pub fn last_findings(&self) -> Option<&[Finding]> {
        self.last.as_ref().map(|l| l.report.findings.as_slice())
    }

    /// A launch ran to a report: it is the last launch now.
    pub fn launched(&mut self, last: LastLaunch) {
        self.last = Some(last);
        self.launches += 1;
    }

    /// Forget the last launch (its "before" is gone, or a check starts a fresh one).
    pub fn forget_last(&mut self) {
        self.last = None;
    }

    /// How many launches ran to a report.
    pub fn launch_count(&self) -> u64 {
        self.launches
    }

    /// The kinds of finding the last launch had that no `expect finding` has acknowledged since.
    pub fn unacknowledged(&self) -> Option<Vec<FindingKind>> {
        let last = self.last.as_ref()?;
        let mut kinds = Vec::new();
        for k in last.report.findings.iter().map(|f| f.kind()) {
            if !kinds.contains(&k) && !last.acknowledged.contains(&k) {
                kinds.push(k);
            }
        }
        Some(kinds)
    }

    /// An `expect finding` acknowledged `kind` in the last launch.
    pub fn acknowledge(&mut self, kind: FindingKind) {
        if let Some(last) = self.last.as_mut() {
            last.acknowledged.push(kind);
        }
    }

    /// Count every finding of the last launch as acknowledged.
    pub fn acknowledge_all(&mut self) {
        if let Some(last) = self.last.as_mut() {
            last.acknowledged = last.report.findings.iter().map(|f| f.kind()).collect();
        }
    }

    /// Forget the inputs and the last launch (`:reset`); the transcript stays for `:export`.
    pub fn forget(&mut self) {
        self.last = None;
        self.history.clear();
    }

    /// Take the last launch out and keep a copy of the history, for a check to run in a scratch
    /// record.
    pub fn set_aside(&mut self) -> SetAside {
        SetAside { history: self.history.clone(), last: self.last.take() }
    }

    /// Put back what [`Record::set_aside`] took, dropping what the check ran meanwhile.
    pub fn put_back(&mut self, saved: SetAside) {
        self.history = saved.history;
        self.last = saved.last;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_check_sets_the_last_launch_aside_and_its_own_inputs_leave_no_trace() {
        let mut r = Record::default();
        r.ran("let a = zeros(4)".into());
        assert_eq!(r.next_typed(), "<input 1>");
        let saved = r.set_aside();
        r.ran("k<<<1, 4>>>(a)".into());
        r.put_back(saved);
        assert_eq!(r.history(), ["let a = zeros(4)"]);
        assert!(r.last().is_none());
        assert_eq!(r.next_typed(), "<input 2>");
        r.forget();
        assert!(r.history().is_empty());
    }
}
