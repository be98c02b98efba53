//! The guided mode: which lesson and step the learner is on, what goes in their editor next,
//! how many hints they have seen, and the `:lesson :next :back :step :hint :check :solution
//! :lessons` commands that move them along.
//!
//! The guide lives in the [`Session`] as its [`Extension`] ([`Lessons`]), so the lesson commands
//! run like any other, and the REPL reaches it only through the session's extension channel:
//! after each input it picks up a *suggestion* (text to put in the editor: the step's next
//! statement, a starter, a solution) and a *question* (`:solution` asks before it gives the
//! answer away), and reports the input back ([`Guide::input_ran`]), so the step's next input
//! follows whatever the learner ran, `:` commands included.
//!
//! In a demo (`gridlab demo ID`), a step is shown a piece at a time: each Enter on an empty
//! line shows the next paragraph or puts the next statement in the editor. An exercise is
//! presented as a lesson would want it taught: the task, the starter (labelled as the wrong
//! version) and `:check` saying why it fails, then a solution and `:check` passing. The end of
//! the lesson pauses on a summary of its steps rather than running into the next lesson.

use std::collections::VecDeque;
use std::io::{self, Write};

use comfy_table::{ContentArrangement, Table, presets::UTF8_FULL_CONDENSED};

use super::progress::{Progress, Store};
use super::{Course, Lang, Lesson, Part, check};
use crate::render::{self, Style};
use crate::script;
use crate::session::command::{Args, Call, CommandSpec};
use crate::session::{Extension, Question, Session, Status};

/// An input queued for the editor.
#[derive(Clone, Debug)]
struct Offer {
    text: String,
    /// From an `error` block: gridlab is meant to refuse it.
    refused: bool,
    /// In a demo, said before the input appears in the editor ("A solution:").
    intro: Option<&'static str>,
}

impl Offer {
    fn new(text: String, refused: bool) -> Offer {
        Offer { text, refused, intro: None }
    }

    fn introduced(text: String, intro: &'static str) -> Offer {
        Offer { text, refused: false, intro: Some(intro) }
    }
}

pub struct Guide {
    /// The course in the learner's language ([`Guide::lang`]).
    pub course: Course,
    /// The course as written, both languages.
    source: Course,
    lang: Lang,
    pub lesson: usize,
    pub step: usize,
    /// A live presentation: shown a piece at a time, progress left alone.
    pub demo: bool,
    /// The step's inputs still to offer, in order, each with whether gridlab is meant to
    /// refuse it (from an `error` block).
    queue: VecDeque<Offer>,
    /// Text for the editor, taken by the REPL.
    suggestion: Option<String>,
    /// The input offered last and not run yet, with whether it is meant to be refused (its
    /// error still moves the step on). A `:` command of the learner's own puts it back.
    offered: Option<(String, bool)>,
    /// The learner cleared the offered input with Ctrl-C (see [`Guide::set_offer_aside`]).
    set_aside: bool,
    /// The step said it is done (or, showing no input, what `:next` does).
    said_done: bool,
    /// On an exercise step (lesson, step): the learner's last CUDA input that ran, their
    /// answer once the check passes.
    draft: Option<(usize, usize, String)>,
    question: Option<Question>,
    /// In a demo: the parts of the step not shown yet.
    pending_parts: VecDeque<Part>,
    /// In a demo: the lesson's last step has been shown to its end and summed up; Enter
    /// stays here until the presenter asks for more (`:next`).
    at_end: bool,
    /// In a demo at the end: the last thing on screen already says where the demo is (the
    /// summary, or one reminder), so an Enter stays silent and a projector's screen does not
    /// fill with the same line. Any input run after it makes the next Enter remind again.
    end_on_screen: bool,
    hints_shown: usize,
    /// What the last failed `:check` of this step said about the learner's mistake, not given
    /// by `:hint` yet: the next `:hint` gives it before the exercise's own hints, which cannot
    /// know which mistake was made.
    check_advice: Option<String>,
    progress: Progress,
    store: Store,
    /// A failed save is reported once, not at every step.
    save_failed: bool,
    /// Nothing shown yet: the first step shown names the lesson even when it is not step 1.
    fresh: bool,
}

impl Guide {
    /// Open `course` at its saved place (the first lesson the first time), with a note when
    /// the saved progress could not be read.
    pub fn resume(course: Course, store: Store) -> (Guide, Option<String>) {
        let (progress, note) = store.load();
        let (lesson, step) = progress
            .current
            .as_deref()
            .and_then(|id| course.lessons.iter().position(|l| l.id == id))
            .map_or((0, 0), |i| (i, progress.step.min(course.lessons[i].steps.len().saturating_sub(1))));
        (Guide::new(course, store, progress, lesson, step, false), note)
    }

    /// Open lesson `lesson` of `course` at its first step.
    pub fn open(course: Course, store: Store, lesson: usize, demo: bool) -> (Guide, Option<String>) {
        let (progress, note) = if demo { (Progress::default(), None) } else { store.load() };
        (Guide::new(course, store, progress, lesson, 0, demo), note)
    }

    fn new(source: Course, store: Store, progress: Progress, lesson: usize, step: usize, demo: bool) -> Guide {
        let lang = progress.lang.as_deref().and_then(Lang::parse).unwrap_or_default();
        Guide {
            course: source.in_lang(lang),
            source,
            lang,
            lesson,
            step,
            demo,
            queue: VecDeque::new(),
            suggestion: None,
            offered: None,
            set_aside: false,
            said_done: false,
            draft: None,
            question: None,
            pending_parts: VecDeque::new(),
            at_end: false,
            end_on_screen: false,
            hints_shown: 0,
            check_advice: None,
            progress,
            store,
            save_failed: false,
            fresh: true,
        }
    }

    /// A lesson resumed at a later step, in a new session: run the kernels and statements of
    /// the steps before it quietly (and the solutions of the exercises already solved), so the
    /// step finds the kernels and buffers it builds on. Views (`:race`, `:time` ...) are skipped;
    /// settings (`:backend`, `:seed`, `:schedule`) are kept. Returns how many steps ran.
    pub fn catch_up(&self, session: &mut Session) -> io::Result<usize> {
        let lesson = self.current();
        let mut sink = Vec::new();
        for (i, step) in lesson.steps.iter().enumerate().take(self.step) {
            for part in &step.parts {
                let code = match part {
                    Part::Prose(_) => continue,
                    // What was refused on purpose changed nothing.
                    Part::Cuda(code) | Part::Python(code) | Part::Gridlab(code) if code.refused => continue,
                    Part::Cuda(code) | Part::Python(code) | Part::Gridlab(code) => code.clone(),
                    Part::Exercise(ex) if self.solved(i) => ex.solution.clone(),
                    Part::Exercise(_) => continue,
                };
                let (inputs, _) = session.split(&lesson.path, &code.padded());
                for input in &inputs {
                    let command =
                        input.text.trim_start().strip_prefix(':').map(|c| c.split_whitespace().next().unwrap_or(""));
                    if command.is_some_and(|c| !matches!(c, "backend" | "seed" | "schedule")) {
                        continue;
                    }
                    session.eval(&lesson.path, input, &mut sink)?;
                    sink.clear();
                }
            }
        }
        Ok(self.step)
    }

    /// `:next` from a step whose inputs were not all run: define, quietly, what they would have
    /// defined and the session still lacks (kernels, functions, `let` names), so the steps ahead
    /// find what they build on. Nothing of the learner's is replaced, launches and views are not
    /// run, and an exercise is left to the learner: its solution, defined quietly, would pass
    /// its `:check`. Returns the names defined.
    pub fn fill_in_step(&self, session: &mut Session) -> io::Result<Vec<String>> {
        let lesson = self.current();
        let Some(step) = lesson.steps.get(self.step) else { return Ok(Vec::new()) };
        if self.step + 1 >= lesson.steps.len() {
            // The next lesson starts afresh: nothing of this one is needed there.
            return Ok(Vec::new());
        }
        let mut sink = Vec::new();
        let mut defined = Vec::new();
        for part in &step.parts {
            let code = match part {
                Part::Cuda(code) | Part::Python(code) | Part::Gridlab(code) if !code.refused => code.clone(),
                _ => continue,
            };
            let (inputs, _) = session.split(&lesson.path, &code.padded());
            for input in &inputs {
                if let Some(names) = session.new_names(input)
                    && session.eval(&lesson.path, input, &mut sink)? == Status::Ok
                {
                    defined.extend(names);
                }
                sink.clear();
            }
        }
        Ok(defined)
    }

    /// After `:lang` switched: define the kernels of the steps before this one in the new
    /// language, quietly, so the statements of this step find them as the lesson writes them.
    /// Buffers and the learner's own kernels are left as they are. Returns how many were defined.
    pub fn define_earlier_kernels(&self, session: &mut Session) -> io::Result<usize> {
        let lesson = self.current().clone();
        let mut sink = Vec::new();
        let mut defined = 0;
        for step in lesson.steps.iter().take(self.step) {
            for part in &step.parts {
                if let Part::Cuda(code) | Part::Python(code) = part
                    && !code.refused
                {
                    session.eval_text(&lesson.path, &code.padded(), false, &mut sink)?;
                    sink.clear();
                    defined += 1;
                }
            }
        }
        Ok(defined)
    }

    /// The current step's number as the learner reads it (from 1).
    pub fn step_number(&self) -> usize {
        self.step + 1
    }

    pub fn current(&self) -> &Lesson {
        &self.course.lessons[self.lesson]
    }

    /// The language lessons are shown in.
    pub fn lang(&self) -> Lang {
        self.lang
    }

    /// Whether the learner has not chosen a language yet (the course's first start asks).
    pub fn lang_unchosen(&self) -> bool {
        !self.demo && self.progress.lang.is_none()
    }

    /// Show the course in `lang` from now on, and remember the choice with the progress. The
    /// step is not shown again; `:lang` does that.
    pub fn set_lang(&mut self, lang: Lang, out: &mut dyn Write, style: &Style) -> io::Result<()> {
        if lang != self.lang {
            self.lang = lang;
            self.course = self.source.in_lang(lang);
            self.queue.clear();
            self.offered = None;
            self.suggestion = None;
            self.pending_parts.clear();
        }
        if self.progress.lang.as_deref() != Some(lang.name()) {
            self.progress.lang = Some(lang.name().to_string());
            self.save(out, style)?;
        }
        Ok(())
    }

    /// For the prompt: `lesson 3.2`.
    pub fn label(&self) -> String {
        format!("lesson {}.{}", self.current().number, self.step + 1)
    }

    /// Whether something waits to be put in the editor (a command like `:next` put it there).
    pub fn has_suggestion(&self) -> bool {
        self.suggestion.is_some()
    }

    /// What the REPL should put in the editor now.
    pub fn take_suggestion(&mut self) -> Option<String> {
        self.suggestion.take()
    }

    pub fn take_question(&mut self) -> Option<Question> {
        self.question.take()
    }

    /// After every input the learner ran (`text`), before the next prompt:
    /// - a command that put something in the editor itself (`:next`, `:solution`) has its way;
    /// - any other `:` command of the learner's own puts the offered input back in the editor;
    /// - a statement, kernel, or the offered `:` command used the offer (as offered or changed),
    ///   so the next input is offered, and when there is none the step says it is done. An input
    ///   that failed keeps the step where it is (the learner fixes it from history), unless
    ///   failing was the point.
    ///
    /// `editor`: there is an editor to put anything in (not input from a pipe, as in
    /// `gridlab learn 1 < steps`).
    pub fn input_ran(
        &mut self,
        text: &str,
        failed: bool,
        editor: bool,
        out: &mut dyn Write,
        style: &Style,
    ) -> io::Result<()> {
        // Whatever it printed, the demo's end is no longer the last thing on screen.
        self.end_on_screen = false;
        if self.suggestion.is_some() {
            return Ok(());
        }
        let was_offered = self.offered.as_ref().is_some_and(|(offered, _)| offered.trim() == text.trim());
        if text.trim_start().starts_with(':') && !was_offered {
            self.suggestion = self.offered.as_ref().map(|(offered, _)| offered.clone());
            return Ok(());
        }
        // The learner's latest kernel, whether it compiled or not: after `:check` it is what goes
        // back in the editor, so an edit that did not compile is never replaced by an older one.
        if self.current().steps[self.step].exercise().is_some() && has_cuda(text) {
            self.draft = Some((self.lesson, self.step, text.trim_end().to_string()));
        }
        let refused = self.offered.as_ref().is_some_and(|(_, refused)| *refused);
        if failed && !refused {
            // The offer stays pending: Enter on an empty line brings it back. When the learner
            // had set it aside (Ctrl-C) to type something else, it comes back at once.
            let set_aside = std::mem::take(&mut self.set_aside);
            if text.trim_end().contains('\n') && has_cuda(text) && editor {
                // A kernel of several lines that did not compile goes back in the editor to be
                // fixed where it is, rather than fished out of history.
                self.suggestion = Some(text.trim_end().to_string());
                writeln!(
                    out,
                    "{}",
                    style.dim(&crate::diag::wrap(
                        "(your code is back in the editor: fix it and press Enter, or Ctrl-C clears it)",
                        style.width,
                        0
                    ))
                )?;
            } else if set_aside {
                self.suggestion = self.offered.as_ref().map(|(offered, _)| offered.clone());
            }
            return Ok(());
        }
        self.set_aside = false;
        if self.demo {
            // A presentation moves on with Enter on an empty line.
            self.offered = None;
            return Ok(());
        }
        // What the learner typed in place of the offered input stands for it when it is the same
        // kind of input (their own kernel for the offered kernel, their own launch for the offered
        // launch). Another kind, such as printing a buffer while a launch is offered, leaves the
        // offer pending, back in the editor, so no step of the lesson is skipped unseen.
        if let Some((offered, _)) = &self.offered
            && offered.trim() != text.trim()
            && (Shape::of(offered) != Shape::of(text) || defines_another(offered, text))
        {
            self.suggestion = Some(offered.clone());
            return Ok(());
        }
        // Only the step's own input can finish it: a statement of the learner's own, typed
        // when nothing was offered (after a solved exercise, say), is no step of the lesson.
        let had_offer = self.offered.is_some();
        self.offer_next();
        if had_offer && self.suggestion.is_none() && !self.said_done && !self.exercise_open() {
            self.said_done = true;
            writeln!(out, "{}", style.ok(&render::prose(&self.done_line(), style)))?;
            if !self.demo {
                let id = self.current().id.clone();
                self.progress.finish(&id, self.step);
                self.save(out, style)?;
            }
        }
        Ok(())
    }

    /// The learner cleared the offered input (Ctrl-C) to type something else: it is still the
    /// step's next input, offered again if what they type instead fails.
    pub fn set_offer_aside(&mut self) {
        self.set_aside = self.offered.is_some();
    }

    /// Enter on an empty line: put the step's pending input back in the editor, so an empty
    /// editor never leaves the learner without a way on.
    pub fn restore_offer(&mut self) {
        if self.suggestion.is_none() {
            self.suggestion = self.offered.as_ref().map(|(offered, _)| offered.clone());
        }
    }

    /// Put the queue's next input in the editor; its introduction, if it has one, to be said.
    fn offer_next(&mut self) -> Option<&'static str> {
        let offer = self.queue.pop_front();
        let intro = offer.as_ref().and_then(|o| o.intro);
        self.offered = offer.map(|o| (o.text, o.refused));
        self.suggestion = self.offered.as_ref().map(|(text, _)| text.clone());
        intro
    }

    /// The step has an exercise not solved yet: it is done when `:check` passes.
    fn exercise_open(&self) -> bool {
        self.current().steps[self.step].exercise().is_some() && !self.solved(self.step)
    }

    /// The step is done, and what `:next` does from here: "Step 2 of 4 is done: `:next` goes
    /// on to step 3 (Title)."
    fn done_line(&self) -> String {
        let lesson = self.current();
        let done = format!("Step {} of {} is done", self.step + 1, lesson.steps.len());
        if let Some(step) = lesson.steps.get(self.step + 1) {
            format!("{done}: `:next` goes on to step {} ({}).", self.step + 2, step.title)
        } else if let Some(next) = self.course.lessons.get(self.lesson + 1) {
            format!(
                "{done}, the last of lesson {}: `:next` opens lesson {} ({}).",
                lesson.number,
                next.number,
                next.title()
            )
        } else {
            format!("{done}, the last of the course: well done. `:lessons` shows the course.")
        }
    }

    fn save(&mut self, out: &mut dyn Write, style: &Style) -> io::Result<()> {
        if self.demo {
            return Ok(());
        }
        if let Err(e) = self.store.save(&self.progress)
            && !self.save_failed
        {
            self.save_failed = true;
            let place = self.store.path().map(|p| p.display().to_string()).unwrap_or_default();
            writeln!(
                out,
                "{}",
                style.warn(&format!("note: progress cannot be saved in {place}: {e}; it is kept for this session"))
            )?;
        }
        Ok(())
    }

    /// Show the current step (with the lesson's introduction on its first step) and queue its
    /// inputs for the editor. A step taller than the screen says how to see all of it.
    pub fn show(&mut self, out: &mut dyn Write, style: &Style) -> io::Result<()> {
        let mut text = Vec::new();
        self.show_into(&mut text, style)?;
        out.write_all(&text)?;
        if !self.demo && render::pager::taller_than_screen(&text, style.rows) {
            let note = "(this step is taller than your screen: scroll back, or `:step` shows it a page at a time)";
            writeln!(out, "{}", style.dim(&render::prose(note, style)))?;
        }
        Ok(())
    }

    /// `:step`: the current step again, in a pager when it is taller than the screen.
    pub fn show_again(&mut self, out: &mut dyn Write, style: &Style) -> io::Result<()> {
        let mut text = Vec::new();
        self.show_into(&mut text, style)?;
        render::pager::page_or_write(out, &text, style.rows)?;
        Ok(())
    }

    fn show_into(&mut self, out: &mut dyn Write, style: &Style) -> io::Result<()> {
        let lesson = self.current().clone();
        let step = &lesson.steps[self.step];
        self.progress.visit(&lesson.id, self.step);
        self.save(out, style)?;
        self.hints_shown = 0;
        self.check_advice = None;
        self.question = None;
        writeln!(out)?;
        if self.step == 0 || self.fresh {
            let title = format!("Lesson {} of {}: {}", lesson.number, self.course.lessons.len(), lesson.title());
            writeln!(out, "{}", style.bold(&style.accent(&render::prose(&title, style))))?;
            writeln!(out, "{}", style.dim(&render::prose(&lesson.meta.summary, style)))?;
            if self.step == 0 && !lesson.intro.trim().is_empty() {
                writeln!(out)?;
                write_markdown(out, &lesson.intro, style)?;
            }
            writeln!(out)?;
        }
        self.fresh = false;
        // A title too long for the line wraps at a space, never mid-word.
        let head =
            render::prose(&format!("── Step {} of {}: {}", self.step + 1, lesson.steps.len(), step.title), style);
        let last = head.lines().last().map_or(0, |l| l.chars().count());
        let fill = style.width.saturating_sub(last + 1).min(20);
        writeln!(out, "{}", style.bold(&format!("{head} {}", "─".repeat(fill))))?;
        self.queue.clear();
        self.at_end = false;
        self.end_on_screen = false;
        self.pending_parts = step.parts.iter().cloned().collect();
        if self.demo {
            writeln!(out, "{}", style.dim("(Enter on an empty line shows the next part)"))?;
            return self.advance(out, style);
        }
        while let Some(part) = self.pending_parts.pop_front() {
            self.show_part(&part, out, style)?;
        }
        self.offer_next();
        self.said_done = self.suggestion.is_none();
        // A step with nothing to run (prose, or an exercise's task) is done once read.
        if self.said_done && !self.demo && !self.exercise_open() {
            let id = self.current().id.clone();
            self.progress.finish(&id, self.step);
        }
        let note = if self.suggestion.is_some() {
            "(the next input is in your editor: Enter runs it; typing replaces it, the arrow keys edit it, Ctrl-C clears it)"
        } else {
            self.end_of_step_hint()
        };
        writeln!(out, "{}", style.dim(&render::prose(note, style)))?;
        Ok(())
    }

    fn end_of_step_hint(&self) -> &'static str {
        if self.demo {
            "(Enter goes on)"
        } else if self.step + 1 < self.current().steps.len() {
            "(:next goes on to the next step)"
        } else if self.lesson + 1 < self.course.lessons.len() {
            "(that was the last step: :next opens the next lesson)"
        } else {
            "(that was the last step of the course)"
        }
    }

    /// Show one part; its inputs join the queue for the editor.
    fn show_part(&mut self, part: &Part, out: &mut dyn Write, style: &Style) -> io::Result<()> {
        match part {
            Part::Prose(md) => {
                // In a demo each block runs before the prose after it is shown, so its `output`
                // block would print what is already on the screen a second time.
                let md = if self.demo { without_output_blocks(md) } else { md.clone() };
                if !md.trim().is_empty() {
                    write_markdown(out, &md, style)?;
                    writeln!(out)?;
                }
            }
            // In a demo the code appears in the editor, typed out, rather than twice.
            Part::Cuda(code) | Part::Python(code) => {
                if !self.demo {
                    let fence = if matches!(part, Part::Python(_)) { "python" } else { "cuda" };
                    write_markdown(out, &format!("```{fence}\n{}```", code.text), style)?;
                    writeln!(out)?;
                }
                self.queue.push_back(Offer::new(code.text.trim_end().to_string(), code.refused));
            }
            Part::Gridlab(code) => {
                if !self.demo {
                    write_markdown(out, &format!("```gridlab\n{}```", code.text), style)?;
                    writeln!(out)?;
                }
                if let Ok(inputs) = script::split_inputs(&code.text) {
                    self.queue.extend(inputs.into_iter().map(|i| Offer::new(i.text, code.refused)));
                }
            }
            Part::Exercise(ex) => {
                writeln!(out, "{}", style.bold(&style.warn("┌ exercise")))?;
                let mut task = Vec::new();
                write_markdown(&mut task, &ex.task, &Style { width: style.width.saturating_sub(2), ..style.clone() })?;
                for line in String::from_utf8_lossy(&task).lines() {
                    writeln!(out, "{} {line}", style.warn("│"))?;
                }
                // A demo presents the exercise from its starter every time.
                let solved = !self.demo && self.solved(self.step);
                let tail = if self.demo {
                    "next: the starter, why its check fails, then a solution".to_string()
                } else if solved {
                    "already solved: :check runs the check again, :next goes on".to_string()
                } else {
                    let hints = match ex.hints.len() {
                        0 => String::new(),
                        1 => ":hint for a hint, ".into(),
                        n => format!(":hint for a hint ({n}), "),
                    };
                    format!("{hints}:check when ready, :solution to see one")
                };
                writeln!(out, "{} {}", style.warn("└"), style.dim(&crate::diag::wrap(&tail, style.width, 2)))?;
                writeln!(out)?;
                // A solved exercise gets the learner's own answer back, never the starter that
                // would undo it; without one (solved before answers were kept), nothing.
                let code = if solved {
                    self.answer(self.step).map(str::to_string)
                } else {
                    ex.starter.as_ref().map(|s| s.text.trim_end().to_string())
                };
                if self.demo {
                    self.queue_demo_exercise(ex);
                } else if let Some(code) = code.filter(|c| !c.is_empty()) {
                    self.queue.push_back(Offer::new(code, false));
                }
            }
        }
        Ok(())
    }

    /// In a demo, an exercise is taught by its mistake and its fix: the starter (the wrong
    /// version) and `:check` saying why it fails, then a solution and `:check` passing.
    fn queue_demo_exercise(&mut self, ex: &super::Exercise) {
        let starter = ex.starter.as_ref().map(|s| s.text.trim_end().to_string()).filter(|s| !s.is_empty());
        if let Some(starter) = starter {
            self.queue.push_back(Offer::introduced(starter, "The starter, the wrong version a learner begins with:"));
            self.queue.push_back(Offer::introduced(":check".into(), "Its check says why it is wrong:"));
        }
        let solution = super::mutants::without_markers(&ex.solution.text);
        self.queue.push_back(Offer::introduced(solution.trim_end().to_string(), "A solution:"));
        self.queue.push_back(Offer::introduced(":check".into(), "And its check:"));
    }

    /// In a demo, Enter on an empty line: the next part of the step, the next statement, the
    /// next step, or at the end of the lesson a pause on its summary.
    pub fn advance(&mut self, out: &mut dyn Write, style: &Style) -> io::Result<()> {
        let intro = if !self.queue.is_empty() {
            self.offer_next()
        } else if let Some(part) = self.pending_parts.pop_front() {
            self.show_part(&part, out, style)?;
            self.offer_next()
        } else if self.step + 1 < self.current().steps.len() {
            return self.next(out, style);
        } else {
            return self.summarise(out, style);
        };
        if let Some(intro) = intro {
            writeln!(out, "{}", style.bold(&style.accent(intro)))?;
        }
        Ok(())
    }

    /// The end of a demo's lesson: what it covered (its step titles) and what comes next. It
    /// stays there: Enter says where it is, `:next` goes on.
    fn summarise(&mut self, out: &mut dyn Write, style: &Style) -> io::Result<()> {
        let lesson = self.current().clone();
        let next = match self.course.lessons.get(self.lesson + 1) {
            Some(next) => format!("`:next` opens lesson {} ({}), Ctrl-D leaves.", next.number, next.title()),
            None => "That was the last lesson of the course; Ctrl-D leaves.".to_string(),
        };
        if self.at_end {
            if std::mem::replace(&mut self.end_on_screen, true) {
                return Ok(());
            }
            return writeln!(out, "{}", style.accent(&render::prose(&format!("End of the lesson: {next}"), style)));
        }
        self.at_end = true;
        self.end_on_screen = true;
        writeln!(out)?;
        let head = render::prose(&format!("── End of lesson {}: {}", lesson.number, lesson.title()), style);
        let last = head.lines().last().map_or(0, |l| l.chars().count());
        writeln!(
            out,
            "{}",
            style.bold(&format!("{head} {}", "─".repeat(style.width.saturating_sub(last + 1).min(20))))
        )?;
        writeln!(out, "This lesson covered:")?;
        for (i, step) in lesson.steps.iter().enumerate() {
            writeln!(out, "  {}. {}", i + 1, render::prose(&step.title, style))?;
        }
        writeln!(out, "{}", style.accent(&render::prose(&next, style)))
    }

    fn solved(&self, step: usize) -> bool {
        self.progress.lesson(&self.current().id).is_some_and(|l| l.solved.contains(&step))
    }

    /// The learner's answer to the exercise of `step`, kept when its check passed.
    fn answer(&self, step: usize) -> Option<&str> {
        // An answer in the other language (solved before `:lang` switched) is not put back.
        let answer = self.progress.lesson(&self.current().id)?.answer(step)?;
        let python = answer.lines().find(|l| !l.trim().is_empty()).is_some_and(crate::python::parse::starts_python);
        (python == (self.lang == Lang::Python)).then_some(answer)
    }

    pub fn next(&mut self, out: &mut dyn Write, style: &Style) -> io::Result<()> {
        if self.step + 1 < self.current().steps.len() {
            self.step += 1;
        } else if self.lesson + 1 < self.course.lessons.len() {
            self.lesson += 1;
            self.step = 0;
        } else {
            writeln!(
                out,
                "{}",
                style.ok(&render::prose(
                    "That was the last step of the last lesson: well done. `:lessons` shows the course.",
                    style
                ))
            )?;
            return Ok(());
        }
        self.show(out, style)
    }

    pub fn back(&mut self, out: &mut dyn Write, style: &Style) -> io::Result<()> {
        if self.step > 0 {
            self.step -= 1;
        } else if self.lesson > 0 {
            self.lesson -= 1;
            self.step = self.current().steps.len() - 1;
        } else {
            writeln!(out, "{}", style.dim("This is the first step of the first lesson."))?;
            return Ok(());
        }
        self.show(out, style)
    }

    pub fn goto(&mut self, lesson: usize, out: &mut dyn Write, style: &Style) -> io::Result<()> {
        self.lesson = lesson;
        self.step = 0;
        self.show(out, style)
    }

    pub fn hint(&mut self, out: &mut dyn Write, style: &Style) -> io::Result<Status> {
        let Some(ex) = self.current().steps[self.step].exercise().cloned() else {
            writeln!(out, "{}", style.dim("This step has no exercise, so no hints: just run what it suggests."))?;
            return Ok(Status::Ok);
        };
        if let Some(advice) = self.check_advice.take() {
            writeln!(out, "{}", style.bold("From your last `:check`:"))?;
            writeln!(out, "{}", crate::diag::wrap(&advice, style.width, 0))?;
            if !ex.hints.is_empty() {
                writeln!(out, "{}", style.dim("(`:hint` again gives the exercise's hints)"))?;
            }
            return Ok(Status::Ok);
        }
        if ex.hints.is_empty() {
            writeln!(out, "{}", style.dim("This exercise has no hints; `:solution` shows a solution."))?;
            return Ok(Status::Ok);
        }
        let i = self.hints_shown.min(ex.hints.len() - 1);
        writeln!(out, "{}", style.bold(&format!("Hint {} of {}:", i + 1, ex.hints.len())))?;
        write_markdown(out, &ex.hints[i], style)?;
        self.hints_shown = (i + 1).min(ex.hints.len());
        if self.hints_shown == ex.hints.len() {
            writeln!(out, "{}", style.dim("(that was the last hint; `:solution` shows a solution)"))?;
        }
        Ok(Status::Ok)
    }

    /// `:solution`: ask first (the REPL does), unless `confirmed`.
    pub fn solution(&mut self, confirmed: bool, out: &mut dyn Write, style: &Style) -> io::Result<Status> {
        let Some(ex) = self.current().steps[self.step].exercise().cloned() else {
            writeln!(out, "{}", style.dim("This step has no exercise."))?;
            return Ok(Status::Ok);
        };
        if !confirmed {
            self.question = Some(Question {
                ask: "Show a solution? Trying first teaches more. [y/N] ".into(),
                then: ":solution yes".into(),
                otherwise: Some("Sure? Trying first teaches more. `:solution yes` shows one.".into()),
            });
            return Ok(Status::Ok);
        }
        writeln!(out, "{}", style.bold("A solution (it is in your editor: Enter defines it, then :check):"))?;
        let fence =
            if self.lang == Lang::Python && ex.solution.text.trim_start().starts_with('@') { "python" } else { "cuda" };
        let solution = super::mutants::without_markers(&ex.solution.text);
        write_markdown(out, &format!("```{fence}\n{solution}```"), style)?;
        self.offered = Some((solution.trim_end().to_string(), false));
        self.suggestion = self.offered.as_ref().map(|(text, _)| text.clone());
        Ok(Status::Ok)
    }

    /// Record a passed check.
    fn solved_now(&mut self, out: &mut dyn Write, style: &Style) -> io::Result<()> {
        let id = self.current().id.clone();
        let draft = self.draft.as_ref().filter(|(l, s, _)| (*l, *s) == (self.lesson, self.step));
        let answer = draft.map(|(_, _, code)| code.clone());
        self.progress.solve(&id, self.step, answer);
        // "Solved!" says where to go: no "Step N is done" after the learner's next input.
        self.said_done = true;
        self.save(out, style)
    }

    /// The course as a table: number, title, concepts, and how far the learner got.
    pub fn write_lessons(&self, out: &mut dyn Write, style: &Style) -> io::Result<()> {
        write_course(out, &self.course, &self.progress, Some(self.lesson), style)
    }
}

/// Whether `text` defines a kernel or function (an exercise's answer is CUDA).
/// Whether `text` defines a kernel, in CUDA C or in Python.
/// What kind of input a text is, to tell whether the learner's own input stands for the one a
/// step offered.
#[derive(PartialEq)]
enum Shape {
    Kernel,
    Launch,
    Other,
}

impl Shape {
    fn of(text: &str) -> Shape {
        if defines_function(text) {
            Shape::Kernel
        } else if script::is_launch(text) {
            Shape::Launch
        } else {
            Shape::Other
        }
    }
}

/// Code that defines a function for the GPU (a kernel or a device function), in CUDA C or
/// Python: what a step that offers a kernel waits for. An `import numpy as np`, a `#define`
/// or a plain Python `def` (host code) typed first is code too, but stands for no kernel.
fn defines_function(text: &str) -> bool {
    // The words are enough for CUDA C (a kernel the sketch cannot name still counts).
    !gpu_function_names(text).is_empty() || text.contains("__global__") || text.contains("__device__")
}

/// The kernels and device functions the text defines, in CUDA C or Python.
fn gpu_function_names(text: &str) -> Vec<String> {
    let Ok(inputs) = script::split_inputs(text) else { return Vec::new() };
    inputs
        .iter()
        .flat_map(|i| match i.kind {
            script::InputKind::Cuda => crate::cuda::sketch::sketch(&i.text)
                .into_iter()
                .filter(|s| matches!(s.kind, crate::cuda::ItemKind::Kernel | crate::cuda::ItemKind::DeviceFunction))
                .map(|s| s.name)
                .collect(),
            script::InputKind::Python => crate::python::parse::jit_function_names(&i.text),
            _ => Vec::new(),
        })
        .collect()
}

/// The learner's code defines functions, none of them the offered code's: their own kernel
/// of another name (`k` where the step defines `add_half_everywhere`) does not stand for the
/// step's, whose launch comes next.
fn defines_another(offered: &str, text: &str) -> bool {
    let (offered, typed) = (gpu_function_names(offered), gpu_function_names(text));
    !offered.is_empty() && !typed.is_empty() && !typed.iter().any(|n| offered.contains(n))
}

fn has_cuda(text: &str) -> bool {
    script::split_inputs(text).is_ok_and(|inputs| {
        inputs.iter().any(|i| matches!(i.kind, script::InputKind::Cuda | script::InputKind::Python))
    })
}

/// The course table of `:lessons` and `gridlab lessons`.
pub fn write_course(
    out: &mut dyn Write,
    course: &Course,
    progress: &Progress,
    current: Option<usize>,
    style: &Style,
) -> io::Result<()> {
    let mut t = Table::new();
    t.load_preset(UTF8_FULL_CONDENSED).set_content_arrangement(ContentArrangement::Dynamic);
    t.set_width(style.width.min(u16::MAX as usize) as u16);
    t.set_header(vec!["", "#", "lesson", "steps done", "exercises"]);
    for (i, l) in course.lessons.iter().enumerate() {
        let p = progress.lesson(&l.id);
        let seen = p.map_or(0, |p| p.seen.min(l.steps.len()));
        let exercises: Vec<usize> = l.exercises().map(|(s, _)| s).collect();
        let solved = p.map_or(0, |p| exercises.iter().filter(|s| p.solved.contains(s)).count());
        // A step is done when its inputs all ran (or its exercise was solved), not when `:next`
        // passed it by.
        let done = p.map_or(0, |p| {
            (0..l.steps.len()).filter(|s| p.done.contains(s) || (exercises.contains(s) && p.solved.contains(s))).count()
        });
        let mark = if done == l.steps.len() && solved == exercises.len() {
            "✓"
        } else if current == Some(i) {
            "▶"
        } else if seen > 0 {
            "◐"
        } else {
            " "
        };
        let mut what = l.meta.title.clone();
        if !l.meta.concepts.is_empty() {
            // Plain text: comfy-table measures cells by their characters, colour codes included.
            what.push_str(&format!("\n{}", l.meta.concepts.join(", ")));
        }
        if l.meta.needs_gpu {
            what.push_str(" (needs a GPU)");
        }
        t.add_row(vec![
            mark.to_string(),
            format!("{:>2}", l.number),
            what,
            format!("{done}/{}", l.steps.len()),
            if exercises.is_empty() { "-".into() } else { format!("{solved}/{}", exercises.len()) },
        ]);
    }
    writeln!(out, "{t}")?;
    writeln!(out, "{}", style.dim("✓ done  ▶ current  ◐ started   `gridlab learn N` or `:lesson N` opens one"))
}

// The `:` commands, added to the session through its extension point. Each borrows the guide and
// the session at once for the length of the command (a check runs launches in the session and
// records the result in the guide).

/// The lesson commands' state in a session: the guide, once a lesson is open.
#[derive(Default)]
pub struct Lessons {
    pub guide: Option<Guide>,
}

impl Extension for Lessons {
    fn commands(&self) -> &'static [CommandSpec] {
        COMMANDS
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }

    fn handout(&self, transcript: &[crate::render::handout::Ran]) -> Option<crate::render::handout::Document> {
        let g = self.guide.as_ref()?;
        // What ran in this lesson: a demo that went on from lesson 1 ran lesson 1's inputs too.
        let id = &g.current().id;
        let own: Vec<crate::render::handout::Ran> =
            transcript.iter().filter(|r| r.chapter.as_ref() == Some(id)).cloned().collect();
        Some(super::handout::document(g.current(), g.step, &own))
    }

    fn chapter(&self) -> Option<String> {
        self.guide.as_ref().map(|g| g.current().id.clone())
    }

    fn step(&self) -> Option<usize> {
        self.guide.as_ref().map(|g| g.step)
    }

    fn as_any_mut(&mut self) -> &mut dyn std::any::Any {
        self
    }

    fn prompt_label(&self) -> Option<String> {
        self.guide.as_ref().map(Guide::label)
    }

    fn lessons(&self) -> Vec<(String, String)> {
        let Some(g) = self.guide.as_ref() else { return Vec::new() };
        g.course.lessons.iter().map(|l| (l.id.clone(), l.meta.title.clone())).collect()
    }

    fn input_ran(
        &mut self,
        text: &str,
        failed: bool,
        editor: bool,
        out: &mut dyn Write,
        style: &Style,
    ) -> io::Result<()> {
        match self.guide.as_mut() {
            Some(g) => g.input_ran(text, failed, editor, out, style),
            None => Ok(()),
        }
    }

    fn take_suggestion(&mut self) -> Option<String> {
        self.guide.as_mut()?.take_suggestion()
    }

    fn has_suggestion(&self) -> bool {
        self.guide.as_ref().is_some_and(Guide::has_suggestion)
    }

    fn take_question(&mut self) -> Option<Question> {
        self.guide.as_mut()?.take_question()
    }

    fn empty_input(&mut self, out: &mut dyn Write, style: &Style) -> io::Result<()> {
        match self.guide.as_mut() {
            // In a demo, Enter on an empty line moves the presentation on. The empty prompt
            // line the Enter left is taken back: on a projector's few rows, every line counts.
            Some(g) if g.demo => {
                write!(out, "\x1b[1A\x1b[2K")?;
                g.advance(out, style)
            }
            Some(g) => {
                g.restore_offer();
                Ok(())
            }
            None => Ok(()),
        }
    }

    fn set_aside(&mut self) {
        if let Some(g) = self.guide.as_mut() {
            g.set_offer_aside();
        }
    }
}

/// A lesson's Markdown, drawn by `render::markdown` with the code blocks' `:` commands coloured
/// as at the prompt: the session's and the lesson commands.
fn write_markdown(out: &mut dyn Write, md: &str, style: &Style) -> io::Result<()> {
    let listing = super::commands();
    let is_command = |w: &str| crate::session::command::find(&listing, w).is_some();
    let known = script::highlight::Known { is_kernel: &|_| false, is_command: &is_command };
    render::markdown::write_markdown(out, md, style, &known)
}

/// `md` without its ` ```output ` blocks (what the block before them prints).
fn without_output_blocks(md: &str) -> String {
    let mut kept = String::with_capacity(md.len());
    let mut inside = false;
    for line in md.split_inclusive('\n') {
        let fence = line.trim_start();
        if !inside && fence.trim_end() == "```output" {
            inside = true;
        } else if inside && fence.trim_end() == "```" {
            inside = false;
        } else if !inside {
            kept.push_str(line);
        }
    }
    kept
}

/// The lesson commands, in the order `:help` lists them.
pub const COMMANDS: &[CommandSpec] = &[
    CommandSpec {
        name: "lesson",
        args: Args::Lesson,
        aliases: &[],
        summary: "open a lesson, or say which is open",
        help: "`:lesson 3` opens lesson 3 (by number, id like `03-one-thread-per-element`, or slug); `:lesson` alone opens where you left off, or names the open lesson. Lessons show their steps one at a time and put each suggested input in your editor.",
        run: cmd_lesson,
    },
    CommandSpec {
        name: "lessons",
        args: Args::None,
        aliases: &[],
        summary: "the course, with your progress",
        help: "Lists the lessons with what they teach and how far you got: steps seen and exercises solved. Progress is saved in your data folder; `gridlab lessons --reset` clears it.",
        run: cmd_lessons,
    },
    CommandSpec {
        name: "next",
        args: Args::None,
        aliases: &[],
        summary: "the lesson's next step",
        help: "Shows the next step of the lesson (after the last step, the next lesson).",
        run: cmd_next,
    },
    CommandSpec {
        name: "back",
        args: Args::None,
        aliases: &[],
        summary: "the lesson's previous step",
        help: "Shows the previous step again.",
        run: cmd_back,
    },
    CommandSpec {
        name: "step",
        args: Args::Choice { value: Some("N"), words: &[], what: "a step number" },
        aliases: &[],
        summary: "show the current step again, or step N of this lesson",
        help: "Shows the current step again and puts its first input back in your editor; `:step 3` goes to step 3 of the open lesson. A step taller than your screen is shown a page at a time, in your pager ($PAGER, else `less`; `q` leaves it).",
        run: cmd_step,
    },
    CommandSpec {
        name: "lang",
        args: Args::Choice { value: None, words: &["cuda", "python"], what: "a language gridlab teaches" },
        aliases: &[],
        summary: "the language lessons are in: CUDA C or Python (Numba)",
        help: "`:lang python` shows the lessons in Numba's Python (`@cuda.jit`, `kernel[blocks, threads](a)`), with each kernel's CUDA C beside it; `:lang cuda` in CUDA C. Exercises put their starter in that language and check your kernel in it. The choice is saved with your progress (`--lang` on the command line). At the prompt both languages always work.",
        run: cmd_lang,
    },
    CommandSpec {
        name: "hint",
        args: Args::None,
        aliases: &[],
        summary: "the exercise's next hint",
        help: "Shows the exercise's hints one at a time: each `:hint` gives one more.",
        run: cmd_hint,
    },
    CommandSpec {
        name: "check",
        args: Args::None,
        aliases: &[],
        summary: "check your solution to the exercise",
        help: "Runs the exercise's check against the kernels you defined: several sizes and launch shapes chosen to break wrong answers, each on the simulator with three seeds and in lockstep (and on the GPU when you use one). A race or an out-of-bounds access fails it even when the numbers come out right. A failure says which configuration broke and how.",
        run: cmd_check,
    },
    CommandSpec {
        name: "solution",
        args: Args::Choice { value: None, words: &["yes", "y"], what: "`yes`" },
        aliases: &[],
        summary: "show a solution (asks first)",
        help: "Shows a solution to the exercise and puts it in your editor, after asking whether you are sure: trying first teaches more.",
        run: cmd_solution,
    },
];

/// Lend the lesson state and the session to `f`; an error when the lesson commands are not
/// installed in this session.
fn with_lessons(
    session: &mut Session,
    out: &mut dyn Write,
    f: impl FnOnce(&mut Lessons, &mut Session, &mut dyn Write) -> io::Result<Status>,
) -> io::Result<Status> {
    match session.with_extension(|l: &mut Lessons, s| f(l, s, &mut *out)) {
        Some(status) => status,
        None => {
            writeln!(out, "{} lessons are not available in this session", session.style().error("error:"))?;
            Ok(Status::Error)
        }
    }
}

fn with_guide(
    session: &mut Session,
    out: &mut dyn Write,
    f: impl FnOnce(&mut Guide, &mut Session, &mut dyn Write, &Style) -> io::Result<Status>,
) -> io::Result<Status> {
    let style = session.style().clone();
    with_lessons(session, out, |lessons, session, out| {
        let Some(guide) = lessons.guide.as_mut() else {
            writeln!(
                out,
                "{} no lesson is open: `:lesson 1` opens the first, `:lessons` lists them",
                style.error("error:")
            )?;
            return Ok(Status::Error);
        };
        f(guide, session, out, &style)
    })
}

fn has_guide(session: &Session) -> bool {
    session.extension::<Lessons>().is_some_and(|l| l.guide.is_some())
}

/// `:lesson [ID]`: open a lesson (loading the course if needed), or say which one is open.
pub fn cmd_lesson(session: &mut Session, Call { args, .. }: Call<'_>, out: &mut dyn Write) -> io::Result<Status> {
    let style = session.style().clone();
    let id = args.trim();
    if !has_guide(session) {
        if let Err(s) = load_guide(session, out)? {
            return Ok(s);
        }
        if id.is_empty() {
            return with_guide(session, out, |g, _, out, style| g.show(out, style).map(|_| Status::Ok));
        }
    }
    if id.is_empty() {
        return with_guide(session, out, |g, _, out, style| {
            let l = g.current();
            writeln!(
                out,
                "{} {} (step {} of {}); `:lesson N` opens another",
                style.bold("lesson"),
                l.id,
                g.step + 1,
                l.steps.len()
            )?;
            Ok(Status::Ok)
        });
    }
    with_guide(session, out, |g, _, out, _| match g.course.find(id) {
        Ok(i) => g.goto(i, out, &style).map(|_| Status::Ok),
        Err(e) => {
            writeln!(out, "{} {e}", style.error("error:"))?;
            Ok(Status::Error)
        }
    })
}

/// Where the session keeps a course's progress: the learner's file, except in a replayed
/// script (its file access is confined), whose lesson commands leave saved progress alone.
fn store_for(session: &Session, course: &str) -> Store {
    match session.options().files {
        crate::session::FileAccess::Anywhere => Store::for_course(course),
        crate::session::FileAccess::Within(_) => Store::in_memory(),
    }
}

/// Load the session's course and open it where the learner left off.
fn load_guide(session: &mut Session, out: &mut dyn Write) -> io::Result<Result<(), Status>> {
    let style = session.style().clone();
    match Course::chosen(session.options().course.as_deref()) {
        Ok(course) => {
            let store = store_for(session, &course.name);
            let (mut guide, note) = Guide::resume(course, store);
            if let Some(note) = note {
                writeln!(out, "{}", style.warn(&format!("note: {note}")))?;
            }
            if let Some(lang) = session.options().lang {
                guide.set_lang(lang, out, &style)?;
            }
            match session.extension_mut::<Lessons>() {
                Some(lessons) => {
                    lessons.guide = Some(guide);
                    Ok(Ok(()))
                }
                None => {
                    writeln!(out, "{} lessons are not available in this session", style.error("error:"))?;
                    Ok(Err(Status::Error))
                }
            }
        }
        Err(errors) => {
            for e in errors {
                writeln!(out, "{} {e}", style.error("error:"))?;
            }
            Ok(Err(Status::Error))
        }
    }
}

/// `:lang [cuda|python]`: say which language lessons are in, or switch and show the step again.
pub fn cmd_lang(session: &mut Session, call: Call<'_>, out: &mut dyn Write) -> io::Result<Status> {
    let lang = match call.args.trim() {
        "" => None,
        w => match Lang::parse(w) {
            Some(l) => Some(l),
            None => return call.not_a_choice(session, out),
        },
    };
    if !has_guide(session) {
        // No lesson open: the choice waits for the next one.
        match lang {
            Some(l) => {
                session.set_lang(l);
                writeln!(out, "Lessons will be shown in {}. (At the prompt both languages always work.)", l.title())?;
            }
            None => {
                let l = session.options().lang.unwrap_or_default();
                writeln!(out, "Lessons are shown in {}; `:lang cuda` or `:lang python` switches.", l.title())?;
            }
        }
        return Ok(Status::Ok);
    }
    with_guide(session, out, |g, session, out, style| {
        let Some(lang) = lang else {
            let other = if g.lang() == Lang::Cuda { Lang::Python } else { Lang::Cuda };
            writeln!(
                out,
                "Lessons are shown in {}; `:lang {}` switches to {}.",
                g.lang().title(),
                other.name(),
                other.title()
            )?;
            return Ok(Status::Ok);
        };
        session.set_lang(lang);
        if lang == g.lang() {
            writeln!(out, "Lessons are already shown in {}.", lang.title())?;
            g.set_lang(lang, out, style)?;
            return Ok(Status::Ok);
        }
        g.set_lang(lang, out, style)?;
        let defined = g.define_earlier_kernels(session)?;
        let kernels = match defined {
            0 => String::new(),
            1 => " (the kernel of the steps before is defined in it too)".to_string(),
            _ => " (the kernels of the steps before are defined in it too)".to_string(),
        };
        writeln!(out, "{}", style.dim(&format!("Now in {}{kernels}: the step again, in it.", lang.title())))?;
        g.show(out, style)?;
        Ok(Status::Ok)
    })
}

pub fn cmd_next(session: &mut Session, _: Call<'_>, out: &mut dyn Write) -> io::Result<Status> {
    with_guide(session, out, |g, session, out, style| {
        let defined = g.fill_in_step(session)?;
        if !defined.is_empty() {
            let names: Vec<String> = defined.iter().map(|n| format!("`{n}`")).collect();
            let (are, them) = if names.len() == 1 { ("is", "it") } else { ("are", "them") };
            let note = format!(
                "(you moved past step {} without running all of it: its {} {are} defined for you, as the lesson writes {them}, for the steps that build on {them})",
                g.step_number(),
                crate::diag::text::list(&names),
            );
            writeln!(out, "{}", style.dim(&render::prose(&note, style)))?;
        }
        g.next(out, style).map(|_| Status::Ok)
    })
}

pub fn cmd_back(session: &mut Session, _: Call<'_>, out: &mut dyn Write) -> io::Result<Status> {
    with_guide(session, out, |g, _, out, style| g.back(out, style).map(|_| Status::Ok))
}

pub fn cmd_step(session: &mut Session, call: Call<'_>, out: &mut dyn Write) -> io::Result<Status> {
    let wanted = call.args.trim();
    if wanted.is_empty() {
        return with_guide(session, out, |g, _, out, style| g.show_again(out, style).map(|_| Status::Ok));
    }
    with_guide(session, out, |g, session, out, style| {
        let steps = g.current().steps.len();
        match wanted.parse::<usize>() {
            Ok(n) if (1..=steps).contains(&n) => {
                g.step = n - 1;
                g.show(out, style).map(|_| Status::Ok)
            }
            _ => call.usage(session, out, &format!("lesson {} has steps 1 to {steps}", g.current().number)),
        }
    })
}

pub fn cmd_hint(session: &mut Session, _: Call<'_>, out: &mut dyn Write) -> io::Result<Status> {
    with_guide(session, out, |g, _, out, style| g.hint(out, style))
}

pub fn cmd_solution(session: &mut Session, Call { args, .. }: Call<'_>, out: &mut dyn Write) -> io::Result<Status> {
    // `:solution yes` skips the question (scripts, and the REPL once the learner said yes).
    let confirmed = matches!(args.trim(), "yes" | "y");
    with_guide(session, out, |g, _, out, style| g.solution(confirmed, out, style))
}

pub fn cmd_lessons(session: &mut Session, _: Call<'_>, out: &mut dyn Write) -> io::Result<Status> {
    if !has_guide(session) {
        let style = session.style().clone();
        match Course::chosen(session.options().course.as_deref()) {
            Ok(course) => {
                let (progress, _) = store_for(session, &course.name).load();
                write_course(out, &course, &progress, None, &style)?;
                return Ok(Status::Ok);
            }
            Err(errors) => {
                for e in errors {
                    writeln!(out, "{} {e}", style.error("error:"))?;
                }
                return Ok(Status::Error);
            }
        }
    }
    with_guide(session, out, |g, _, out, style| g.write_lessons(out, style).map(|_| Status::Ok))
}

/// `:check`: run the current exercise's check against the learner's kernels.
pub fn cmd_check(session: &mut Session, _: Call<'_>, out: &mut dyn Write) -> io::Result<Status> {
    with_guide(session, out, |g, session, out, style| {
        let lesson = g.current().clone();
        let Some(ex) = lesson.steps[g.step].exercise() else {
            writeln!(out, "{}", style.dim("This step has no exercise to check; `:next` goes on."))?;
            return Ok(Status::Ok);
        };
        writeln!(out, "{}", style.dim(&format!("checking {} configuration(s) ...", ex.check.configs.len().max(1))))?;
        out.flush()?;
        let outcome = check::run(session, &lesson.path, &ex.check)?;
        check::write(out, &outcome, style)?;
        g.check_advice = outcome.failure.as_ref().and_then(|f| f.advice.clone());
        if outcome.passed() {
            g.solved_now(out, style)?;
            writeln!(out, "{}", style.ok(&format!("Solved! {}", g.end_of_step_hint())))?;
            Ok(Status::Ok)
        } else if g.demo {
            writeln!(out, "{}", style.dim("(Enter goes on)"))?;
            Ok(Status::ExpectFailed)
        } else {
            let hint = if ex.hints.is_empty() && g.check_advice.is_none() { "" } else { " `:hint` helps," };
            // The kernel to change goes back in the editor, rather than two Up presses away.
            let draft = g.draft.as_ref().filter(|(l, s, _)| (*l, *s) == (g.lesson, g.step));
            let back = match draft {
                Some((_, _, code)) => {
                    g.suggestion = Some(code.clone());
                    "Your kernel is back in the editor: change it, Enter redefines it, then `:check` again;"
                }
                None => "Change your kernel and `:check` again;",
            };
            writeln!(
                out,
                "{}",
                style.dim(&crate::diag::wrap(&format!("{back}{hint} `:solution` shows one."), style.width, 0))
            )?;
            Ok(Status::ExpectFailed)
        }
    })
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    /// The fixture course's lesson `lesson`, opened in a guide that keeps progress in `dir`.
    fn guide(dir: &Path, lesson: usize) -> (Guide, Style) {
        let course = Course::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/course")).unwrap();
        let (guide, _) = Guide::open(course, Store::at(dir.join("p.toml")), lesson, false);
        (guide, Style { color: false, width: 80, big: false, ..Style::plain() })
    }

    fn ran(g: &mut Guide, text: &str, failed: bool, style: &Style) -> String {
        let mut out = Vec::new();
        g.input_ran(text, failed, true, &mut out, style).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn the_next_input_follows_every_input() {
        let dir = tempfile::tempdir().unwrap();
        let (mut g, style) = guide(dir.path(), 1);
        g.show(&mut Vec::new(), &style).unwrap();
        let kernel = g.take_suggestion().unwrap();
        assert!(kernel.starts_with("__global__ void total("), "{kernel}");
        // A command of the learner's own: the kernel goes back in the editor.
        ran(&mut g, ":lesson", false, &style);
        assert_eq!(g.take_suggestion().as_deref(), Some(kernel.as_str()));
        ran(&mut g, &kernel, false, &style);
        // The step's own command is offered, and running it offers the statement after it.
        assert_eq!(g.take_suggestion().as_deref(), Some(":backend sim"));
        ran(&mut g, ":backend sim", false, &style);
        assert_eq!(g.take_suggestion().as_deref(), Some("let x = ones(64)"));
        // A statement that fails keeps the step where it is and leaves the editor to the
        // learner (the fix comes from history); the offer stays pending, so a command of theirs
        // or Enter on an empty line brings it back.
        ran(&mut g, "let x = ones(6", true, &style);
        assert_eq!(g.take_suggestion(), None);
        g.restore_offer();
        assert_eq!(g.take_suggestion().as_deref(), Some("let x = ones(64)"));
        ran(&mut g, ":buffers", false, &style);
        assert_eq!(g.take_suggestion().as_deref(), Some("let x = ones(64)"));
        ran(&mut g, "let x = ones(64)", false, &style);
        assert_eq!(g.take_suggestion().as_deref(), Some("let s = zeros(1)"));
        ran(&mut g, "let s = zeros(1)", false, &style);
        assert_eq!(g.take_suggestion().as_deref(), Some("total<<<2, 32>>>(x, s, len(x))"));
        ran(&mut g, "total<<<2, 32>>>(x, s, len(x))", false, &style);
        assert_eq!(g.take_suggestion().as_deref(), Some("expect finding race"));
        // The last input: the step says it is done, once.
        let said = ran(&mut g, "expect finding race", false, &style);
        assert_eq!(said, "Step 1 of 2 is done: `:next` goes on to step 2 (Make it atomic).\n");
        // And the progress says so: `:lessons` counts it as done.
        assert_eq!(g.progress.lesson(&g.current().id.clone()).unwrap().done, vec![0]);
        assert_eq!(g.take_suggestion(), None);
        assert_eq!(ran(&mut g, "x", false, &style), "");
        assert_eq!(ran(&mut g, ":buffers", false, &style), "");
        assert_eq!(g.take_suggestion(), None);
    }

    #[test]
    fn an_input_of_another_kind_does_not_stand_for_the_offered_one() {
        let dir = tempfile::tempdir().unwrap();
        let (mut g, style) = guide(dir.path(), 1);
        g.show(&mut Vec::new(), &style).unwrap();
        let kernel = g.take_suggestion().unwrap();
        // Code that defines no function for the GPU (an include, a `#define`, Python's imports,
        // which a Numba learner types first, or a plain Python function) does not stand for
        // the offered kernel.
        // Nor does a kernel of another name: the step's launch of `total` comes next.
        for code in [
            "#define N 64",
            "import numpy as np\nfrom numba import cuda",
            "def helper(x):\n    return x * 2\n",
            "__global__ void other(float *a) { a[0] = 1; }",
        ] {
            ran(&mut g, code, false, &style);
            assert_eq!(g.take_suggestion().as_deref(), Some(kernel.as_str()), "after {code}");
        }
        // The learner's own `total`, written differently, does.
        let own = kernel.replacen('{', "{\n    // mine\n", 1);
        for input in [own.as_str(), ":backend sim", "let x = ones(64)", "let s = zeros(1)"] {
            ran(&mut g, input, false, &style);
            g.take_suggestion();
        }
        ran(&mut g, ":buffers", false, &style);
        assert_eq!(g.take_suggestion().as_deref(), Some("total<<<2, 32>>>(x, s, len(x))"));
        // Looking at a buffer while the launch is offered: the launch is still the next input.
        assert_eq!(ran(&mut g, "x", false, &style), "");
        assert_eq!(g.take_suggestion().as_deref(), Some("total<<<2, 32>>>(x, s, len(x))"));
        // The learner's own launch stands for it.
        ran(&mut g, "total<<<4, 16>>>(x, s, len(x))", false, &style);
        assert_eq!(g.take_suggestion().as_deref(), Some("expect finding race"));
    }

    #[test]
    fn a_statement_typed_when_nothing_was_offered_does_not_finish_the_step() {
        let dir = tempfile::tempdir().unwrap();
        let (mut g, style) = guide(dir.path(), 0);
        let mut out = Vec::new();
        g.show(&mut out, &style).unwrap();
        // Step 1's inputs, as offered.
        while let Some(offer) = g.take_suggestion() {
            ran(&mut g, &offer, false, &style);
        }
        // Step 2, the exercise: nothing of it runs by statements, and nothing is offered once
        // the starter is taken; an unrelated statement says nothing about the step.
        g.next(&mut out, &style).unwrap();
        g.offered = None;
        g.suggestion = None;
        g.progress.solve(&g.current().id.clone(), g.step, None);
        assert_eq!(ran(&mut g, "let unrelated = 1", false, &style), "");
    }

    #[test]
    fn a_solved_exercise_offers_the_learners_answer_and_no_starter() {
        let dir = tempfile::tempdir().unwrap();
        let (mut g, style) = guide(dir.path(), 0);
        g.step = 1;
        g.show(&mut Vec::new(), &style).unwrap();
        let starter = g.take_suggestion().unwrap();
        assert!(starter.contains("int i = threadIdx.x;"), "{starter}");
        let answer = "__global__ void twice(float *a, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; \
                      if (i < n) a[i] += a[i]; }";
        ran(&mut g, answer, false, &style);
        ran(&mut g, "let a = arange(4)", false, &style);
        g.solved_now(&mut Vec::new(), &style).unwrap();
        // Shown again (`:back` then `:next`, or `:step`): the answer, not the starter.
        g.show(&mut Vec::new(), &style).unwrap();
        assert_eq!(g.take_suggestion().as_deref(), Some(answer));
        // And in a new session, from the saved progress.
        let (mut g, _) = guide(dir.path(), 0);
        g.step = 1;
        g.show(&mut Vec::new(), &style).unwrap();
        assert_eq!(g.take_suggestion().as_deref(), Some(answer));
        // Solved without a kept answer (progress from before answers were kept): nothing, as
        // the starter would undo the solution.
        let mut p = Progress::default();
        p.solve(&g.current().id.clone(), 1, None);
        Store::at(dir.path().join("p.toml")).save(&p).unwrap();
        let (mut g, _) = guide(dir.path(), 0);
        g.step = 1;
        g.show(&mut Vec::new(), &style).unwrap();
        assert_eq!(g.take_suggestion(), None);
    }

    /// Every lesson's prose at the widths a learner's terminal may have: no line runs past the
    /// width (the terminal would cut a word in two), none starts with punctuation. Code blocks
    /// are exempt: code is never wrapped.
    #[test]
    fn a_demo_leaves_out_output_blocks_which_its_run_already_printed() {
        let md = "It prints:\n\n```output\nn = 3\n```\n\nThen more.\n";
        assert_eq!(without_output_blocks(md), "It prints:\n\n\nThen more.\n");
        assert_eq!(without_output_blocks("```output\nx\n```\n").trim(), "");
        // Other blocks stay.
        assert_eq!(without_output_blocks("```text\nx\n```\n"), "```text\nx\n```\n");
    }

    #[test]
    fn the_lessons_prose_fits_every_width() {
        let course = crate::lesson::Course::builtin().unwrap();
        for width in [60, 72, 80, 100, 120] {
            let style = Style { color: false, width, big: false, ..Style::plain() };
            for lang in [Lang::Cuda, Lang::Python] {
                for lesson in &course.in_lang(lang).lessons {
                    let mut md = vec![lesson.intro.clone()];
                    for step in &lesson.steps {
                        for part in &step.parts {
                            match part {
                                crate::lesson::Part::Prose(p) => md.push(p.clone()),
                                crate::lesson::Part::Exercise(ex) => {
                                    md.push(ex.task.clone());
                                    md.extend(ex.hints.iter().cloned());
                                }
                                _ => {}
                            }
                        }
                    }
                    for md in md {
                        let mut out = Vec::new();
                        super::write_markdown(&mut out, &md, &style).unwrap();
                        let text = String::from_utf8(out).unwrap();
                        // Code is not wrapped: a line of a fenced block may pass the edge.
                        let code: Vec<&str> = md
                            .split("```")
                            .skip(1)
                            .step_by(2)
                            .flat_map(|block| block.lines().skip(1))
                            .map(|l| l.trim_start_matches(['>', ' ']).trim())
                            .filter(|l| !l.is_empty())
                            .collect();
                        for line in text.lines() {
                            let body = line.trim_start_matches("│ ");
                            if code.contains(&body.trim()) {
                                continue;
                            }
                            assert!(line.chars().count() <= width, "{} at {width}: {line:?}", lesson.id);
                            let start = body.trim_start_matches(['•', ' ']);
                            assert!(!start.starts_with(['.', ',', ';', ')']), "{} at {width}: {line:?}", lesson.id);
                        }
                    }
                }
            }
        }
    }
}
