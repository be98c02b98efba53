//! Text taller than the terminal, a page at a time: a long lesson step shown again with `:step`.
//!
//! The learner's own pager (`$PAGER`, else `less -R -X -F`) shows it, as git does; `-F` leaves
//! at once when the text fits after all, `-X` keeps it on the screen after the pager quits, so
//! the step stays above the prompt. Where no pager starts, or standard output is not a
//! terminal, the text is written as it is.

use std::io::{self, IsTerminal, Write};
use std::process::{Command, Stdio};

/// Whether `text` needs more rows than a screen of `rows` (0: not a terminal) leaves above the
/// prompt and its pre-filled input.
pub fn taller_than_screen(text: &[u8], rows: usize) -> bool {
    rows > 0 && text.iter().filter(|&&b| b == b'\n').count() + 3 > rows
}

/// Show `text` in a pager when it is taller than the screen and the terminal is ours; write it
/// to `out` otherwise. `Ok(true)` when a pager showed it.
pub fn page_or_write(out: &mut dyn Write, text: &[u8], rows: usize) -> io::Result<bool> {
    if !taller_than_screen(text, rows) || !io::stdout().is_terminal() {
        out.write_all(text)?;
        return Ok(false);
    }
    let (program, args) = match std::env::var("PAGER").ok().filter(|p| !p.trim().is_empty()) {
        Some(p) => {
            let mut words = p.split_whitespace().map(str::to_string);
            let program = words.next().unwrap_or_default();
            (program, words.collect::<Vec<_>>())
        }
        None => ("less".to_string(), vec!["-R".to_string(), "-X".to_string(), "-F".to_string()]),
    };
    out.flush()?;
    let child = Command::new(&program).args(&args).stdin(Stdio::piped()).spawn();
    let Ok(mut child) = child else {
        out.write_all(text)?;
        return Ok(false);
    };
    if let Some(mut stdin) = child.stdin.take() {
        // A pager quit early (`q` on the first page) closes its end: that is no error.
        let _ = stdin.write_all(text);
    }
    match child.wait() {
        Ok(status) if status.success() => Ok(true),
        _ => {
            out.write_all(text)?;
            Ok(false)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_step_is_paged_only_when_taller_than_a_known_screen() {
        let text = "line\n".repeat(40);
        assert!(taller_than_screen(text.as_bytes(), 30));
        assert!(!taller_than_screen(text.as_bytes(), 60));
        assert!(!taller_than_screen(text.as_bytes(), 0), "no terminal: no paging");
        // Not a terminal here (tests): written as it is.
        let mut out = Vec::new();
        assert!(!page_or_write(&mut out, text.as_bytes(), 30).unwrap());
        assert_eq!(out, text.as_bytes());
    }
}
