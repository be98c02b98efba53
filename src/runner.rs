//! The one input runner: echo an input, evaluate it, tally how it went, and keep what a report
//! needs when it failed. `gridlab replay` of a script, a lesson's blocks in `replay` and
//! `dev check`, and piped stdin all run their inputs through it, so a transcript, a failure
//! message and the PASS/FAIL line read the same wherever they come from.
//!
//! A replayed script's runner ([`Runner::pipelined`]) lets GPU launches run while the inputs
//! after them are checked and, when they are launches too, sent behind them: each launch's echo
//! is kept until the session hands over its report ([`Session::finish_launch`]), in order, and it
//! is tallied then, as its own input.

use std::collections::VecDeque;
use std::io::{self, Write};
use std::path::PathBuf;
use std::time::Duration;

use crate::render::text::strip_ansi;
use crate::render::{self, Style};
use crate::session::{FinishedLaunch, Session, Status, worse};

/// What an input is expected to do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Expect {
    /// Run cleanly (an `expect` that fails or an error is a failure).
    Ok,
    /// Be refused (a lesson's ` ```cuda error ` block): running is the failure.
    Refusal,
}

/// What happened to one script.
#[derive(Clone, Debug)]
pub struct ScriptResult {
    pub path: PathBuf,
    pub inputs: usize,
    pub expects_failed: usize,
    pub errors: usize,
    /// Each input that failed, echoed with its output (plain text), for reports.
    pub failures: Vec<String>,
    pub elapsed: Duration,
    /// A lesson's steps, each its own test case in the JUnit report; empty for a script, which
    /// is one test case.
    pub cases: Vec<Case>,
}

/// One test case of a JUnit report: a step of a lesson.
#[derive(Clone, Debug)]
pub struct Case {
    pub name: String,
    pub failures: Vec<String>,
    pub elapsed: Duration,
    /// Why it did not run (a lesson that needs a GPU, without one).
    pub skipped: Option<String>,
}

impl Case {
    pub fn new(name: String) -> Case {
        Case { name, failures: Vec::new(), elapsed: Duration::ZERO, skipped: None }
    }
}

impl ScriptResult {
    /// Add `other`'s inputs, failures and cases to this one: the same lesson run again in its
    /// other language is one result.
    pub fn absorb(&mut self, other: ScriptResult) {
        self.inputs += other.inputs;
        self.expects_failed += other.expects_failed;
        self.errors += other.errors;
        self.failures.extend(other.failures);
        self.elapsed += other.elapsed;
        self.cases.extend(other.cases);
    }

    pub fn new(path: PathBuf) -> ScriptResult {
        ScriptResult {
            path,
            inputs: 0,
            expects_failed: 0,
            errors: 0,
            failures: Vec::new(),
            elapsed: Duration::ZERO,
            cases: Vec::new(),
        }
    }

    pub fn passed(&self) -> bool {
        self.expects_failed == 0 && self.errors == 0
    }

    /// Every case was skipped (a lesson that needs a GPU, without one).
    pub fn skipped(&self) -> bool {
        !self.cases.is_empty() && self.cases.iter().all(|c| c.skipped.is_some())
    }
}

/// [`Session::unacknowledged`]: the last launch's number and the kinds of its findings that no
/// `expect finding` acknowledged.
type Unacknowledged = Option<(u64, Vec<crate::finding::FindingKind>)>;

/// An input that ran: its echo and output, how it went, and the last launch's unacknowledged
/// findings before and after it.
struct Ran<'i> {
    input: &'i crate::script::Input,
    buf: Vec<u8>,
    /// Where the output starts in `buf`, after the echo.
    echoed: usize,
    status: Status,
    before: Unacknowledged,
    after: Unacknowledged,
}

/// An input whose launch is in flight: the input, its echo, and where the echo ends.
type Held<'i> = (&'i crate::script::Input, Vec<u8>, usize);

/// Runs inputs in a session, writing the transcript (or, when `quiet`, only what failed) and
/// tallying into a [`ScriptResult`].
pub struct Runner<'a> {
    pub session: &'a mut Session,
    pub result: ScriptResult,
    pub style: Style,
    quiet: bool,
    /// Keep each input and its output in the session's transcript (for `:export`).
    record: bool,
    /// What the inputs printed (no echo, no colour), while a caller collects it.
    captured: Option<String>,
    out: &'a mut dyn Write,
    /// Where the last launch was typed (file and line) and its first line, for the failure
    /// that names a finding nothing acknowledged.
    last_launch: Option<(String, u32, String)>,
    /// Let the session go on with the next inputs while GPU launches run ([`Runner::pipelined`]).
    pipelined: bool,
}

impl<'a> Runner<'a> {
    pub fn new(session: &'a mut Session, result: ScriptResult, quiet: bool, out: &'a mut dyn Write) -> Runner<'a> {
        let style = session.style().clone();
        Runner {
            session,
            result,
            style,
            quiet,
            record: false,
            captured: None,
            out,
            last_launch: None,
            pipelined: false,
        }
    }

    /// Keep inputs and outputs for `:export`, as typed input is.
    pub fn recording(mut self) -> Runner<'a> {
        self.record = true;
        self
    }

    /// Let GPU launches run while the next inputs are checked, each report written under its
    /// launch once it is taken ([`Session::pipeline_launches`]): for a script's inputs, not for a recorded
    /// session's or a lesson's, whose steps look at each input's output as it comes.
    pub fn pipelined(mut self) -> Runner<'a> {
        self.pipelined = true;
        self
    }

    /// Where the transcript goes, for lines the caller adds (headings, exercise verdicts).
    pub fn out(&mut self) -> &mut dyn Write {
        &mut *self.out
    }

    /// The session and the transcript's destination at once, for inputs run outside
    /// [`Runner::run_text`] (typed at a terminal).
    pub fn parts(&mut self) -> (&mut Session, &mut dyn Write) {
        (&mut *self.session, &mut *self.out)
    }

    pub fn quiet(&self) -> bool {
        self.quiet
    }

    /// Collect what the inputs run from now on print, until [`Runner::take_captured`].
    pub fn capture(&mut self) {
        self.captured = Some(String::new());
    }

    /// What the inputs printed since [`Runner::capture`], without echo or colour.
    pub fn take_captured(&mut self) -> String {
        self.captured.take().unwrap_or_default()
    }

    /// Run every input of `text` (from the file `name`, padded so lines match the file),
    /// counting failures against the script and, when given, the test case. Returns the worst
    /// status (a refused input in a `Refusal` block counts as `Ok`).
    pub fn run_text(&mut self, name: &str, text: &str, expect: Expect, case: Option<&mut Case>) -> io::Result<Status> {
        self.run_text_at(name, text, 1, expect, case)
    }

    /// [`Runner::run_text`] for text that starts on line `first_line` of `name` (piped input,
    /// run an input at a time), without padding it with the lines before.
    ///
    /// GPU results may stay on the device from one input to the next launch, and are read back
    /// at the end (or before any other input), so a script of many launches over a large buffer
    /// crosses the bus once.
    pub fn run_text_at(
        &mut self,
        name: &str,
        text: &str,
        first_line: u32,
        expect: Expect,
        mut case: Option<&mut Case>,
    ) -> io::Result<Status> {
        let outer = self.session.keeps_results_on_device();
        self.session.keep_results_on_device(true, &mut io::sink())?;
        let status = self.run_inputs(name, text, first_line, expect, case.as_deref_mut());
        let mut buf = Vec::new();
        self.session.keep_results_on_device(outer, &mut buf)?;
        let status = status?;
        if buf.is_empty() {
            return Ok(status);
        }
        // Results that could not be read back at the end: the script's failure.
        self.out.write_all(&buf)?;
        self.fail(case, false, strip_ansi(&buf));
        Ok(worse(status, Status::Error))
    }

    fn run_inputs(
        &mut self,
        name: &str,
        text: &str,
        first_line: u32,
        expect: Expect,
        mut case: Option<&mut Case>,
    ) -> io::Result<Status> {
        let (inputs, broken) = self.session.split_at(name, text, first_line);
        let pipelined = self.pipelined && !self.record;
        self.session.pipeline_launches(pipelined)?;
        let mut worst = Status::Ok;
        // The inputs whose launches the session left running on the GPU while it went on, oldest
        // first: their echoes, each kept until its launch is finished and its report put under it.
        let mut held: VecDeque<Held<'_>> = VecDeque::new();
        for input in &inputs {
            if !held.is_empty() && !self.session.may_pipeline(input) {
                worst = worse(worst, self.finish_held(&mut held, true, name, expect, case.as_deref_mut())?.0);
            }
            let mut buf = Vec::new();
            render::write_echo(&mut buf, &input.text, &self.style)?;
            let echoed = buf.len();
            let mut before = self.session.unacknowledged();
            let status = self.session.eval_input(name, input, self.record, &mut buf)?;
            self.result.inputs += 1;
            let in_flight = self.session.launch_in_flight();
            // Launches before this one that were finished while it ran, and, unless it is in
            // flight too, all the others: each under its own input, before this one.
            if !held.is_empty() {
                let (done, after) = self.finish_held(&mut held, !in_flight, name, expect, case.as_deref_mut())?;
                worst = worse(worst, done);
                before = after.unwrap_or(before);
            }
            if in_flight {
                held.push_back((input, buf, echoed));
                continue;
            }
            let after = self.session.unacknowledged();
            let ran = Ran { input, buf, echoed, status, before, after };
            worst = worse(worst, self.conclude(name, ran, expect, case.as_deref_mut())?);
            if self.session.wants_to_quit() {
                // Piped input said `exit`: what follows is not run.
                break;
            }
        }
        worst = worse(worst, self.finish_held(&mut held, true, name, expect, case.as_deref_mut())?.0);
        self.session.pipeline_launches(false)?;
        if let Some(diag) = broken {
            let mut buf = Vec::new();
            diag.render(self.session.sources(), &mut buf, self.style.color, self.style.width)?;
            self.out.write_all(&buf)?;
            self.fail(case, false, strip_ansi(&buf));
            worst = Status::Error;
        }
        Ok(worst)
    }

    /// Finish the inputs `held` whose launches were in flight, oldest first: each report under
    /// its echo, counted and written like any input's; all of them when `all` (waiting for their
    /// answers), otherwise those the session has finished already. Returns how they went and
    /// [`Session::unacknowledged`] just after the last of them was recorded, if any was.
    fn finish_held(
        &mut self,
        held: &mut VecDeque<Held<'_>>,
        all: bool,
        name: &str,
        expect: Expect,
        mut case: Option<&mut Case>,
    ) -> io::Result<(Status, Option<Unacknowledged>)> {
        let mut worst = Status::Ok;
        let mut last = None;
        while let Some((input, mut buf, echoed)) = held.pop_front() {
            let finished = if all {
                self.session.finish_launch()?
            } else {
                match self.session.finished_launch() {
                    Some(finished) => Some(finished),
                    None => {
                        held.push_front((input, buf, echoed));
                        break;
                    }
                }
            };
            let ran = match finished {
                Some(finished) => {
                    buf.extend_from_slice(&finished.output);
                    let FinishedLaunch { status, before, after, .. } = finished;
                    Ran { input, buf, echoed, status, before, after }
                }
                None => {
                    let after = self.session.unacknowledged();
                    Ran { input, buf, echoed, status: Status::Ok, before: after.clone(), after }
                }
            };
            last = Some(ran.after.clone());
            worst = worse(worst, self.conclude(name, ran, expect, case.as_deref_mut())?);
        }
        Ok((worst, last))
    }

    /// Tally an input that ran, and write its echo and output (all of it, or when quiet only a
    /// failure's). Returns how it counts towards the script.
    fn conclude(
        &mut self,
        name: &str,
        ran: Ran<'_>,
        expect: Expect,
        mut case: Option<&mut Case>,
    ) -> io::Result<Status> {
        let Ran { input, mut buf, echoed, status, before, after } = ran;
        let mut worst = Status::Ok;
        if before.as_ref().map(|b| b.0) != after.as_ref().map(|a| a.0) {
            // A new launch (or `:reset`) replaced the last one: its findings can no longer
            // be acknowledged.
            if let Some((_, kinds)) = before.filter(|(_, k)| !k.is_empty()) {
                self.unacknowledged(&kinds, case.as_deref_mut(), Some(&mut buf))?;
            }
            if after.is_some() {
                let first = input.text.lines().next().unwrap_or("").trim().to_string();
                self.last_launch = Some((name.to_string(), input.line, first));
            }
        }
        if let Some(c) = self.captured.as_mut() {
            c.push_str(&strip_ansi(&buf[echoed..]));
        }
        let failed = match expect {
            Expect::Ok => status != Status::Ok,
            Expect::Refusal => status != Status::Error,
        };
        if failed {
            let mut plain = Vec::new();
            render::write_echo(&mut plain, &input.text, &Style::plain())?;
            let mut text =
                format!("{name}:{}\n{}{}", input.line, String::from_utf8_lossy(&plain), strip_ansi(&buf[echoed..]));
            if expect == Expect::Refusal {
                // A kernel that compiles and a statement that runs, each named as what it did.
                let did = if input.kind == crate::script::InputKind::Cuda { "compiled" } else { "ran" };
                let msg = format!(
                    "{name}:{}: expected an error: the block says `error`, but this input {did}; fix the block or drop `error` from its tag",
                    input.line
                );
                text.push_str(&format!("{msg}\n"));
                writeln!(buf, "{}", self.style.error(&msg))?;
            }
            let counts_as_expect = status == Status::ExpectFailed || expect == Expect::Refusal;
            self.fail(case, counts_as_expect, text);
            worst = if counts_as_expect { Status::ExpectFailed } else { Status::Error };
        }
        if !self.quiet || failed {
            self.out.write_all(&buf)?;
        }
        Ok(worst)
    }

    /// The last launch had findings of `kinds` that no `expect finding` acknowledged: in a
    /// script that is a failure, as compute-sanitizer's `--error-exitcode` makes it one.
    fn unacknowledged(
        &mut self,
        kinds: &[crate::finding::FindingKind],
        case: Option<&mut Case>,
        buf: Option<&mut Vec<u8>>,
    ) -> io::Result<()> {
        let names: Vec<&str> = kinds.iter().map(|k| k.name()).collect();
        let (file, line, text) = self.last_launch.clone().unwrap_or_default();
        let what = match names.as_slice() {
            [one] if one.starts_with(['a', 'e', 'i', 'o', 'u']) => format!("an {one} finding"),
            [one] => format!("a {one} finding"),
            _ => format!("findings ({})", names.join(", ")),
        };
        let expects: Vec<String> = names.iter().map(|n| format!("`expect finding {n}`")).collect();
        let msg = if file.ends_with(".py") {
            // A Python program acknowledges with a comment on the launch's line.
            format!(
                "{file}:{line}: `{text}` had {what} that nothing acknowledged: fix the kernel, or, if the finding is the point, end the launch's line with `# expect: {}`",
                names.join(", ")
            )
        } else {
            format!(
                "{file}:{line}: `{text}` had {what} that nothing acknowledged: fix the kernel, or, if the finding is the point, add {} after the launch",
                expects.join(" and ")
            )
        };
        let mut own = Vec::new();
        let buf = buf.unwrap_or(&mut own);
        writeln!(buf, "{} {msg}", self.style.error("error:"))?;
        if !own.is_empty() {
            self.out.write_all(&own)?;
        }
        self.fail(case, false, msg);
        Ok(())
    }

    /// The end of a script or lesson: the last launch's findings must be acknowledged too.
    pub fn settle(&mut self, case: Option<&mut Case>) -> io::Result<()> {
        if let Some((_, kinds)) = self.session.unacknowledged().filter(|(_, k)| !k.is_empty()) {
            self.unacknowledged(&kinds, case, None)?;
            // Said once: the session's last launch stays, but it is settled.
            self.session.acknowledge_all();
        }
        Ok(())
    }

    /// Count a failure (`expect`: a failed expectation rather than an error) against the script
    /// and the case.
    pub fn fail(&mut self, case: Option<&mut Case>, expect: bool, text: String) {
        if expect {
            self.result.expects_failed += 1;
        } else {
            self.result.errors += 1;
        }
        if let Some(case) = case {
            case.failures.push(text.clone());
        }
        self.result.failures.push(text);
    }

    /// The closing `PASS name (detail)` or `FAIL ...` line, and the result. `failed` names what
    /// failed expectations are (`expect(s)` in a script; in a lesson, checks and blocks too).
    pub fn finish(mut self, name: &str, mut detail: String, failed: &str) -> io::Result<ScriptResult> {
        let verdict = if self.result.passed() { self.style.ok("PASS") } else { self.style.error("FAIL") };
        if self.result.expects_failed > 0 {
            let what = if failed.is_empty() { String::new() } else { format!("{failed} ") };
            detail.push_str(&format!(", {} {what}failed", self.result.expects_failed));
        }
        if self.result.errors > 0 {
            detail.push_str(&format!(", {} error(s)", self.result.errors));
        }
        writeln!(self.out, "{verdict} {name} ({detail})")?;
        if !self.quiet {
            writeln!(self.out)?;
        }
        Ok(std::mem::replace(&mut self.result, ScriptResult::new(Default::default())))
    }
}
