//! The extension point: how a layer above the session adds `:` commands with state of their own,
//! without the session knowing it exists, and the one channel between the two.
//!
//! The lesson guide is one: `lesson` implements [`Extension`] with its `:lesson`, `:next`,
//! `:check` ... rows and the guide they move, and `app`/`repl`/`replay` install it in the
//! sessions they make. The session lists the extension's commands in `:help`, completes and runs
//! them like its own; a command reaches the extension's state through [`Session::with_extension`],
//! which lends the extension and the session at once (a check runs launches in the session while
//! the guide records the result). evcxr's command context sits above its eval context the same way.
//!
//! The driver (the REPL, piped stdin) talks to the extension only through the session, after
//! each input: [`Session::input_ran`] reports what ran, [`Session::take_suggestion`] takes the
//! text the extension wants in the editor, [`Session::take_question`] a yes/no question (the
//! session's own or the extension's), and [`Session::prompt_label`] names where the learner is.

use std::any::Any;
use std::io::{self, Write};

use super::command::CommandSpec;
use super::{Session, Status};
use crate::render::Style;

/// A yes/no question for the learner, and the input to run on yes. The REPL asks it in the
/// editor; without one (piped input) it says `otherwise`, what to type instead, when there is
/// something to say beyond what the command printed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Question {
    /// As the editor shows it: `... [y/N] `.
    pub ask: String,
    /// The input run on yes.
    pub then: String,
    /// Said instead where no editor can ask.
    pub otherwise: Option<String>,
}

/// Commands and state a layer above the session adds to it.
pub trait Extension: Any {
    /// Its `:` commands, run like the session's own (each finds the extension's state with
    /// [`Session::with_extension`]).
    fn commands(&self) -> &'static [CommandSpec];

    fn as_any(&self) -> &dyn Any;

    /// The handout `:export` writes, when the extension knows better than a plain transcript
    /// (an open lesson: its headings and prose around what ran).
    fn handout(&self, _transcript: &[crate::render::handout::Ran]) -> Option<crate::render::handout::Document> {
        None
    }

    /// Where the session is (an open lesson's id), recorded with each input for the handout.
    fn chapter(&self) -> Option<String> {
        None
    }

    /// Where in the chapter the session is (an open lesson's step), recorded with each input.
    fn step(&self) -> Option<usize> {
        None
    }

    fn as_any_mut(&mut self) -> &mut dyn Any;

    /// For the prompt: where the learner is (`lesson 3.2`).
    fn prompt_label(&self) -> Option<String> {
        None
    }

    /// What a command's [`Args::Lesson`](super::command::Args::Lesson) argument may name, as
    /// `(id, title)`, for completion.
    fn lessons(&self) -> Vec<(String, String)> {
        Vec::new()
    }

    /// After every input the driver ran (`text`), before the next prompt; `editor`: the driver
    /// has an editor to put a suggestion in.
    fn input_ran(
        &mut self,
        _text: &str,
        _failed: bool,
        _editor: bool,
        _out: &mut dyn Write,
        _style: &Style,
    ) -> io::Result<()> {
        Ok(())
    }

    /// Text the extension wants in the editor next, taken.
    fn take_suggestion(&mut self) -> Option<String> {
        None
    }

    /// Whether text waits to go in the editor.
    fn has_suggestion(&self) -> bool {
        false
    }

    /// A question for the learner, taken (asked before the session's own).
    fn take_question(&mut self) -> Option<Question> {
        None
    }

    /// Enter on an empty line at the prompt.
    fn empty_input(&mut self, _out: &mut dyn Write, _style: &Style) -> io::Result<()> {
        Ok(())
    }

    /// The learner cleared the suggested input (Ctrl-C) to type something else.
    fn set_aside(&mut self) {}
}

impl Session {
    /// Add an extension's commands and state to this session (replacing any other).
    pub fn install(&mut self, extension: Box<dyn Extension>) {
        self.extension = Some(extension);
    }

    /// The installed extension, when it is a `T`.
    pub fn extension<T: Extension>(&self) -> Option<&T> {
        self.extension.as_deref()?.as_any().downcast_ref()
    }

    /// The installed extension, when it is a `T`, to change.
    pub fn extension_mut<T: Extension>(&mut self) -> Option<&mut T> {
        self.extension.as_deref_mut()?.as_any_mut().downcast_mut()
    }

    /// For the prompt: where the learner is, when an extension says.
    pub fn prompt_label(&self) -> Option<String> {
        self.extension.as_deref()?.prompt_label()
    }

    /// What a command's lesson argument may name, `(id, title)`, when an extension says.
    pub fn lessons(&self) -> Vec<(String, String)> {
        self.extension.as_deref().map(|e| e.lessons()).unwrap_or_default()
    }

    /// Tell the extension that the driver ran `text` (with `status`); `editor`: the driver has
    /// an editor to put a suggestion in.
    pub fn input_ran(&mut self, text: &str, status: Status, editor: bool, out: &mut dyn Write) -> io::Result<()> {
        let style = self.options.style.clone();
        match self.extension.as_deref_mut() {
            Some(ext) => ext.input_ran(text, status == Status::Error, editor, out, &style),
            None => Ok(()),
        }
    }

    /// What the extension wants in the editor next.
    pub fn take_suggestion(&mut self) -> Option<String> {
        self.extension.as_deref_mut()?.take_suggestion()
    }

    /// Whether the extension has something for the editor.
    pub fn has_suggestion(&self) -> bool {
        self.extension.as_deref().is_some_and(|e| e.has_suggestion())
    }

    /// Ask the learner `question`; on yes, the REPL runs `then`.
    pub(crate) fn ask(&mut self, question: String, then: String) {
        self.question = Some(Question { ask: question, then, otherwise: None });
    }

    /// The question an input left for the learner: the extension's first, then the session's.
    pub fn take_question(&mut self) -> Option<Question> {
        if let Some(q) = self.extension.as_deref_mut().and_then(|e| e.take_question()) {
            return Some(q);
        }
        self.question.take()
    }

    /// Enter on an empty line at the prompt: the extension may move on (a demo shows its next
    /// part).
    pub fn empty_input(&mut self, out: &mut dyn Write) -> io::Result<()> {
        let style = self.options.style.clone();
        match self.extension.as_deref_mut() {
            Some(ext) => ext.empty_input(out, &style),
            None => Ok(()),
        }
    }

    /// The learner cleared a suggested input (Ctrl-C).
    pub fn set_aside(&mut self) {
        if let Some(ext) = self.extension.as_deref_mut() {
            ext.set_aside();
        }
    }

    /// Run `f` with the extension `T` and the session both borrowed; `None` when no `T` is
    /// installed. The extension is out of the session meanwhile: inputs `f` evaluates see no
    /// extension commands (a check's inputs never need them).
    pub fn with_extension<T: Extension, R>(&mut self, f: impl FnOnce(&mut T, &mut Session) -> R) -> Option<R> {
        let mut ext = self.extension.take()?;
        let result = ext.as_any_mut().downcast_mut::<T>().map(|t| f(t, self));
        // `f` may have installed another extension; the one lent out is the session's.
        self.extension = Some(ext);
        result
    }
}
