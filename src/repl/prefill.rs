//! A lesson's input put in the editor before the learner types (a *pre-fill*), and the two
//! ways the editor treats it differently from typed text:
//! - what is typed before any other key replaces it, as typing over a selected field does: a
//!   learner who types their own launch gets it, not the pre-fill with theirs glued on
//!   (`add<<<1, 1>>>(a, n)add[1, 1](a)`), and a command is not glued to the statement
//!   (`expect a == [0, 1]:next`). Arrow keys, Home, End and Backspace edit the pre-fill instead;
//! - no history hint is drawn after it: greyed text behind a pre-fill made it look like
//!   another statement (`a` as `add_half_everywhere<<<1, 1>>>(a, len(a))`);
//! - Ctrl-D leaves, as it does at an empty prompt (the step's input is back in the editor
//!   after every input, so Ctrl-D would otherwise only delete a character of it).
//!
//! The REPL says what it pre-filled ([`Prefill::set`]) before each `read_line`; the edit mode
//! ([`PrefillEditMode`]) and the hinter ([`PrefillHinter`]) read it.

use std::sync::{Arc, Mutex};

use crossterm::event::{Event, KeyCode, KeyEvent, KeyModifiers};
use reedline::{
    DefaultHinter, EditCommand, EditMode, Hinter, History, PromptEditMode, ReedlineEvent, ReedlineRawEvent,
};

#[derive(Debug, Default)]
struct State {
    /// The text put in the editor, while this `read_line` lasts.
    text: Option<String>,
    /// No key has been pressed since the text was put there.
    untouched: bool,
    /// The text is the learner's own, given back (an unfinished kernel left by a command typed
    /// under it): no hint is drawn after it, but typing does not replace it and it is not
    /// complete for being there.
    own: bool,
}

/// What the editor was pre-filled with, shared by the REPL, the edit mode and the hinter.
#[derive(Clone, Debug, Default)]
pub struct Prefill(Arc<Mutex<State>>);

impl Prefill {
    /// The editor now holds `text` (or nothing the REPL put there), and no key was pressed yet.
    pub fn set(&self, text: Option<String>) {
        if let Ok(mut s) = self.0.lock() {
            s.untouched = text.is_some();
            s.text = text;
            s.own = false;
        }
    }

    /// The editor holds the learner's own `text`, given back to them.
    pub fn set_own(&self, text: String) {
        if let Ok(mut s) = self.0.lock() {
            s.untouched = false;
            s.text = Some(text);
            s.own = true;
        }
    }

    /// Whether `line` is a lesson's input as it was offered (not the learner's own text).
    pub fn is_offered(&self, line: &str) -> bool {
        self.0.lock().is_ok_and(|s| !s.own && s.text.as_deref() == Some(line))
    }

    /// A key was pressed: whether the pre-fill was untouched before it.
    fn touch(&self) -> bool {
        self.0.lock().map(|mut s| std::mem::replace(&mut s.untouched, false)).unwrap_or(false)
    }

    /// Whether `line` is the pre-filled text, as it was put there.
    pub fn is(&self, line: &str) -> bool {
        self.0.lock().is_ok_and(|s| s.text.as_deref() == Some(line))
    }
}

/// An edit mode (Emacs keys) in which `:` as the first key replaces an untouched pre-fill, and
/// Ctrl-D as the first key leaves.
/// (Emacs has no mode-specific events, the one thing not passed on: reedline does not export
/// their status type.)
pub struct PrefillEditMode<M: EditMode> {
    inner: M,
    prefill: Prefill,
}

impl<M: EditMode> PrefillEditMode<M> {
    pub fn new(inner: M, prefill: Prefill) -> PrefillEditMode<M> {
        PrefillEditMode { inner, prefill }
    }
}

/// The event `:` as the first key makes of an untouched pre-fill: clear it, then type `:`.
fn replace_with(text: &str) -> ReedlineEvent {
    ReedlineEvent::Edit(vec![EditCommand::Clear, EditCommand::InsertString(text.to_string())])
}

impl<M: EditMode> EditMode for PrefillEditMode<M> {
    fn parse_event(&mut self, event: ReedlineRawEvent) -> ReedlineEvent {
        let event: Event = event.into();
        match &event {
            Event::Key(KeyEvent { code: KeyCode::Char(c), modifiers, .. })
                if (*modifiers == KeyModifiers::NONE || *modifiers == KeyModifiers::SHIFT) && self.prefill.touch() =>
            {
                return replace_with(&c.to_string());
            }
            Event::Key(KeyEvent { code: KeyCode::Char('d'), modifiers: KeyModifiers::CONTROL, .. })
                if self.prefill.touch() =>
            {
                return ReedlineEvent::Multiple(vec![
                    ReedlineEvent::Edit(vec![EditCommand::Clear]),
                    ReedlineEvent::CtrlD,
                ]);
            }
            Event::Paste(text) if self.prefill.touch() => return replace_with(text),
            Event::Key(_) | Event::Paste(_) => {
                self.prefill.touch();
            }
            _ => {}
        }
        pass_on(&mut self.inner, event)
    }

    fn edit_mode(&self) -> PromptEditMode {
        self.inner.edit_mode()
    }
}

/// A key an edit-mode wrapper does not take itself, handed to the edit mode it wraps.
pub(super) fn pass_on(inner: &mut impl EditMode, event: Event) -> ReedlineEvent {
    match ReedlineRawEvent::try_from(event) {
        Ok(event) => inner.parse_event(event),
        Err(()) => ReedlineEvent::None,
    }
}

/// reedline's history hinter, silent while the line is the pre-fill as it was put there.
pub struct PrefillHinter {
    inner: DefaultHinter,
    prefill: Prefill,
    /// The last line was the pre-fill: there is no hint to complete.
    quiet: bool,
}

impl PrefillHinter {
    pub fn new(inner: DefaultHinter, prefill: Prefill) -> PrefillHinter {
        PrefillHinter { inner, prefill, quiet: false }
    }
}

impl Hinter for PrefillHinter {
    fn handle(&mut self, line: &str, pos: usize, history: &dyn History, use_ansi_coloring: bool, cwd: &str) -> String {
        self.quiet = self.prefill.is(line);
        if self.quiet {
            return String::new();
        }
        self.inner.handle(line, pos, history, use_ansi_coloring, cwd)
    }

    fn complete_hint(&self) -> String {
        if self.quiet { String::new() } else { self.inner.complete_hint() }
    }

    fn next_hint_token(&self) -> String {
        if self.quiet { String::new() } else { self.inner.next_hint_token() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use reedline::{Emacs, FileBackedHistory, HistoryItem, default_emacs_keybindings};

    fn key(c: char) -> ReedlineRawEvent {
        ReedlineRawEvent::try_from(Event::Key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE))).unwrap()
    }

    fn mode(prefill: &Prefill) -> PrefillEditMode<Emacs> {
        PrefillEditMode::new(Emacs::new(default_emacs_keybindings()), prefill.clone())
    }

    #[test]
    fn typing_first_replaces_the_prefill_and_editing_keys_keep_it() {
        let prefill = Prefill::default();
        let mut m = mode(&prefill);
        prefill.set(Some("add<<<1, 1>>>(a, len(a))".into()));
        assert_eq!(format!("{:?}", m.parse_event(key('a'))), format!("{:?}", replace_with("a")));
        assert_eq!(
            format!("{:?}", m.parse_event(key('d'))),
            format!("{:?}", ReedlineEvent::Edit(vec![EditCommand::InsertChar('d')]))
        );
        // An arrow key first: the learner edits the pre-fill, and typing goes into it.
        prefill.set(Some("add<<<1, 1>>>(a, len(a))".into()));
        let left = ReedlineRawEvent::try_from(Event::Key(KeyEvent::new(KeyCode::Left, KeyModifiers::NONE))).unwrap();
        m.parse_event(left);
        assert_eq!(
            format!("{:?}", m.parse_event(key('x'))),
            format!("{:?}", ReedlineEvent::Edit(vec![EditCommand::InsertChar('x')]))
        );
    }

    #[test]
    fn a_colon_first_replaces_the_prefill_and_only_then() {
        let prefill = Prefill::default();
        let mut m = mode(&prefill);
        prefill.set(Some("expect a == [0, 1]".into()));
        assert_eq!(format!("{:?}", m.parse_event(key(':'))), format!("{:?}", replace_with(":")));
        // The second `:` is typed as usual.
        assert_eq!(
            format!("{:?}", m.parse_event(key(':'))),
            format!("{:?}", ReedlineEvent::Edit(vec![EditCommand::InsertChar(':')]))
        );
        // Another key first: the pre-fill is the learner's now, and `:` is just a character.
        prefill.set(Some("a".into()));
        m.parse_event(key('b'));
        assert_eq!(
            format!("{:?}", m.parse_event(key(':'))),
            format!("{:?}", ReedlineEvent::Edit(vec![EditCommand::InsertChar(':')]))
        );
        // Nothing pre-filled: `:` is a character.
        prefill.set(None);
        assert_eq!(
            format!("{:?}", m.parse_event(key(':'))),
            format!("{:?}", ReedlineEvent::Edit(vec![EditCommand::InsertChar(':')]))
        );
    }

    #[test]
    fn ctrl_d_first_leaves_as_at_an_empty_prompt() {
        let prefill = Prefill::default();
        let mut m = mode(&prefill);
        let ctrl_d = || {
            ReedlineRawEvent::try_from(Event::Key(KeyEvent::new(KeyCode::Char('d'), KeyModifiers::CONTROL))).unwrap()
        };
        prefill.set(Some("let a = zeros(4)".into()));
        let leave = ReedlineEvent::Multiple(vec![ReedlineEvent::Edit(vec![EditCommand::Clear]), ReedlineEvent::CtrlD]);
        assert_eq!(format!("{:?}", m.parse_event(ctrl_d())), format!("{leave:?}"));
        // Once the line was edited, Ctrl-D is Emacs' own (delete, or leave when empty).
        assert_eq!(format!("{:?}", m.parse_event(ctrl_d())), format!("{:?}", ReedlineEvent::CtrlD));
    }

    #[test]
    fn no_hint_over_the_prefill() {
        let prefill = Prefill::default();
        let mut history = FileBackedHistory::new(10).unwrap();
        history.save(HistoryItem::from_command_line("add_half<<<1, 1>>>(a, len(a))")).unwrap();
        let mut h = PrefillHinter::new(DefaultHinter::default(), prefill.clone());
        assert_eq!(h.handle("a", 1, &history, false, ""), "dd_half<<<1, 1>>>(a, len(a))");
        prefill.set(Some("a".into()));
        assert_eq!(h.handle("a", 1, &history, false, ""), "");
        assert_eq!(h.complete_hint(), "");
        // Once the learner types on, hints come back.
        assert_eq!(h.handle("ad", 2, &history, false, ""), "d_half<<<1, 1>>>(a, len(a))");
    }
}
