//! Up and Down in a kernel of several lines, as in a code editor.
//!
//! reedline recalls an older input with the cursor at the end of its *first* line, so the next
//! Up leaves a recalled kernel for an even older input before the learner could move into it.
//! Here a recalled input opens with the cursor at its end, the way a shell like zsh does it:
//! - Up moves to the line above; on the first line it recalls the input before, cursor at its
//!   end, so pressing Up walks back through each line of a kernel and then on to older inputs;
//! - Down moves to the line below; on the last line it recalls the newer input (back to what
//!   was being typed), as reedline does;
//! - Alt-Up and Alt-Down (or Ctrl-Up and Ctrl-Down) go to the older or newer input at once,
//!   from any line.
//!
//! The edit mode decides before reedline moves the cursor, so it needs to know which line the
//! cursor is on: [`CaretHighlighter`] notes it at every repaint, where reedline hands the
//! highlighter the buffer and the cursor, and [`LineArrows`] reads it.

use std::sync::{Arc, Mutex};

use crossterm::event::{Event, KeyCode, KeyEvent, KeyModifiers};
use reedline::{EditMode, Highlighter, PromptEditMode, ReedlineEvent, ReedlineRawEvent, StyledText};

/// Where the cursor was at the last repaint: on the buffer's first line, on its last line (both
/// when the buffer is one line).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Lines {
    first: bool,
    last: bool,
}

/// Which line the cursor is on, shared by the highlighter that sees it and the edit mode that
/// needs it.
#[derive(Clone, Debug)]
pub struct Caret(Arc<Mutex<Lines>>);

impl Default for Caret {
    fn default() -> Caret {
        Caret(Arc::new(Mutex::new(Lines { first: true, last: true })))
    }
}

impl Caret {
    fn note(&self, buffer: &str, cursor: usize) {
        let cursor = cursor.min(buffer.len());
        let (before, after) = (buffer.get(..cursor).unwrap_or(buffer), buffer.get(cursor..).unwrap_or(""));
        if let Ok(mut lines) = self.0.lock() {
            *lines = Lines { first: !before.contains('\n'), last: !after.contains('\n') };
        }
    }

    fn lines(&self) -> Lines {
        self.0.lock().map(|l| *l).unwrap_or(Lines { first: true, last: true })
    }
}

/// A highlighter that notes where the cursor is, then colours as `inner` does.
pub struct CaretHighlighter<H: Highlighter> {
    inner: H,
    caret: Caret,
}

impl<H: Highlighter> CaretHighlighter<H> {
    pub fn new(inner: H, caret: Caret) -> CaretHighlighter<H> {
        CaretHighlighter { inner, caret }
    }
}

impl<H: Highlighter> Highlighter for CaretHighlighter<H> {
    fn highlight(&self, line: &str, cursor: usize) -> StyledText {
        self.caret.note(line, cursor);
        self.inner.highlight(line, cursor)
    }
}

/// An edit mode whose Up and Down keep a recalled input's lines within reach (see the module).
pub struct LineArrows<M: EditMode> {
    inner: M,
    caret: Caret,
}

impl<M: EditMode> LineArrows<M> {
    pub fn new(inner: M, caret: Caret) -> LineArrows<M> {
        LineArrows { inner, caret }
    }
}

/// The older input, cursor at its end. An open completion menu takes Up first; in a Ctrl-R
/// search (where reedline leaves a `Multiple` unhandled) Up is the previous match.
fn older() -> ReedlineEvent {
    ReedlineEvent::UntilFound(vec![
        ReedlineEvent::MenuUp,
        // `ToEnd`, not an edit command: an edit would end the walk through history, and the
        // next Up would search for inputs that start with this one.
        ReedlineEvent::Multiple(vec![ReedlineEvent::PreviousHistory, ReedlineEvent::ToEnd]),
        ReedlineEvent::PreviousHistory,
    ])
}

/// The newer input, from any line (reedline puts the cursor at its end, as Down does).
fn newer() -> ReedlineEvent {
    ReedlineEvent::UntilFound(vec![ReedlineEvent::MenuDown, ReedlineEvent::NextHistory])
}

impl<M: EditMode> EditMode for LineArrows<M> {
    fn parse_event(&mut self, event: ReedlineRawEvent) -> ReedlineEvent {
        let raw: Event = event.into();
        if let Event::Key(KeyEvent { code: code @ (KeyCode::Up | KeyCode::Down), modifiers, .. }) = &raw {
            let lines = self.caret.lines();
            let jump = modifiers.intersects(KeyModifiers::ALT | KeyModifiers::CONTROL);
            match code {
                KeyCode::Up if jump || (lines.first && modifiers.is_empty()) => return older(),
                KeyCode::Down if jump => return newer(),
                _ => {}
            }
        }
        super::prefill::pass_on(&mut self.inner, raw)
    }

    fn edit_mode(&self) -> PromptEditMode {
        self.inner.edit_mode()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use reedline::{Emacs, default_emacs_keybindings};

    fn key(code: KeyCode, modifiers: KeyModifiers) -> ReedlineRawEvent {
        ReedlineRawEvent::try_from(Event::Key(KeyEvent::new(code, modifiers))).unwrap()
    }

    fn arrows(buffer: &str, cursor: usize) -> LineArrows<Emacs> {
        let caret = Caret::default();
        caret.note(buffer, cursor);
        LineArrows::new(Emacs::new(default_emacs_keybindings()), caret)
    }

    const KERNEL: &str = "__global__ void k(float *a) {\n    a[0] = 1;\n}";

    #[test]
    fn up_on_a_lower_line_moves_up_and_on_the_first_recalls_with_the_cursor_at_the_end() {
        let inner = Emacs::new(default_emacs_keybindings()).parse_event(key(KeyCode::Up, KeyModifiers::NONE));
        assert_eq!(arrows(KERNEL, KERNEL.len()).parse_event(key(KeyCode::Up, KeyModifiers::NONE)), inner);
        assert_eq!(arrows(KERNEL, 3).parse_event(key(KeyCode::Up, KeyModifiers::NONE)), older());
        assert_eq!(arrows("", 0).parse_event(key(KeyCode::Up, KeyModifiers::NONE)), older());
    }

    #[test]
    fn down_is_reedlines_own_on_every_line() {
        let inner = Emacs::new(default_emacs_keybindings()).parse_event(key(KeyCode::Down, KeyModifiers::NONE));
        assert_eq!(arrows(KERNEL, 3).parse_event(key(KeyCode::Down, KeyModifiers::NONE)), inner);
        assert_eq!(arrows(KERNEL, KERNEL.len()).parse_event(key(KeyCode::Down, KeyModifiers::NONE)), inner);
    }

    #[test]
    fn alt_or_ctrl_arrows_go_through_inputs_from_any_line() {
        let middle = KERNEL.find("a[0]").unwrap();
        for m in [KeyModifiers::ALT, KeyModifiers::CONTROL] {
            assert_eq!(arrows(KERNEL, middle).parse_event(key(KeyCode::Up, m)), older());
            assert_eq!(arrows(KERNEL, middle).parse_event(key(KeyCode::Down, m)), newer());
        }
    }

    #[test]
    fn the_caret_reads_the_line_at_any_offset() {
        let caret = Caret::default();
        caret.note(KERNEL, KERNEL.len() + 10);
        assert_eq!(caret.lines(), Lines { first: false, last: true });
        caret.note("one line", 3);
        assert_eq!(caret.lines(), Lines { first: true, last: true });
    }
}
