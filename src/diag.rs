//! Diagnostics that point at the learner's own text.
//!
//! Every piece of text gridlab reads (a line typed at the prompt, a kernel pasted over several
//! lines, a script file, a lesson block) is registered in a [`SourceMap`] with the name and line
//! number it has *for the learner*. Spans index into that text, so an error is always drawn
//! under the line the learner wrote, never under generated code.

pub mod suggest;

use std::io::{self, Write};

use owo_colors::OwoColorize;

/// Index of a [`SourceFile`] in a [`SourceMap`].
pub type SourceId = u32;

/// A byte range in one registered source text.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Span {
    pub source: SourceId,
    pub lo: u32,
    pub hi: u32,
}

impl Span {
    pub fn new(source: SourceId, lo: usize, hi: usize) -> Span {
        Span { source, lo: lo as u32, hi: hi.max(lo) as u32 }
    }

    /// The smallest span covering both (they must be in the same source).
    pub fn to(self, other: Span) -> Span {
        Span { source: self.source, lo: self.lo.min(other.lo), hi: self.hi.max(other.hi) }
    }
}

/// A text the learner wrote, with the name and first line it has for them.
#[derive(Clone, Debug)]
pub struct SourceFile {
    /// `<input 3>` for typed input, a path for scripts and lessons.
    pub name: String,
    pub text: String,
    /// 1-based line number of `text`'s first line within `name`.
    pub first_line: u32,
    /// For typed input that defined a kernel (or function): `kernel add_one`. Locations in
    /// it read `kernel add_one, line 3`, which means something after the session is over (in a
    /// handout), where `<input 11>` does not.
    pub item: Option<String>,
}

/// Every source text of a session, so spans stay resolvable for as long as findings refer to them.
#[derive(Clone, Debug, Default)]
pub struct SourceMap {
    files: Vec<SourceFile>,
}

/// A resolved position: 1-based line (in the learner's file) and column (in characters).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LineCol {
    pub line: u32,
    pub col: u32,
}

impl SourceMap {
    pub fn new() -> SourceMap {
        SourceMap::default()
    }

    pub fn add(&mut self, name: impl Into<String>, text: impl Into<String>, first_line: u32) -> SourceId {
        self.files.push(SourceFile { name: name.into(), text: text.into(), first_line: first_line.max(1), item: None });
        (self.files.len() - 1) as SourceId
    }

    /// Name typed input `id` by what it defined (`kernel add_one`); a file keeps its name.
    pub fn name_item(&mut self, id: SourceId, item: String) {
        if let Some(file) = self.files.get_mut(id as usize)
            && file.name.starts_with('<')
        {
            // Lines count from the definition's first, where "line 3" means something.
            file.item = Some(item);
            file.first_line = 1;
        }
    }

    pub fn get(&self, id: SourceId) -> Option<&SourceFile> {
        self.files.get(id as usize)
    }

    /// Line and column of a byte offset, in the learner's numbering.
    pub fn line_col(&self, span: Span) -> Option<LineCol> {
        let file = self.get(span.source)?;
        let lo = (span.lo as usize).min(file.text.len());
        let before = file.text.get(..lo)?;
        let line_idx = before.matches('\n').count() as u32;
        let line_start = before.rfind('\n').map_or(0, |p| p + 1);
        let col = before[line_start..].chars().count() as u32 + 1;
        Some(LineCol { line: file.first_line + line_idx, col })
    }

    /// The text of the line a span starts on, without its newline.
    pub fn line_text(&self, span: Span) -> Option<&str> {
        let file = self.get(span.source)?;
        let lo = (span.lo as usize).min(file.text.len());
        let start = file.text[..lo].rfind('\n').map_or(0, |p| p + 1);
        let end = file.text[lo..].find('\n').map_or(file.text.len(), |p| lo + p);
        Some(file.text[start..end].trim_end_matches('\r'))
    }

    /// `name:line:col` for a span, e.g. `<input 3>:2:5`.
    pub fn location(&self, span: Span) -> String {
        match (self.get(span.source), self.line_col(span)) {
            (Some(SourceFile { item: Some(item), .. }), Some(lc)) => format!("{item}, line {}", lc.line),
            (Some(f), Some(lc)) => format!("{}:{}:{}", f.name, lc.line, lc.col),
            _ => "<unknown>".to_string(),
        }
    }

    /// The 1-based line number of a span, for one-line summaries ("line 3").
    pub fn line_of(&self, span: Span) -> u32 {
        self.line_col(span).map_or(0, |lc| lc.line)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Severity {
    Error,
    Warning,
    /// Something a launch did wrong (a race, an out-of-bounds access): the launch ran, but the
    /// kernel has a bug.
    Finding,
}

/// An error or warning with an optional place, a short label under the caret, and a hint.
#[derive(Clone, Debug, PartialEq)]
pub struct Diagnostic {
    pub severity: Severity,
    pub message: String,
    pub span: Option<Span>,
    /// Text drawn next to the carets.
    /// (A boxed `str`, so that the rare `cause` costs no room: diagnostics travel in `Result`s.)
    pub label: Option<Box<str>>,
    /// How to fix it, shown as `help: ...`.
    pub help: Option<String>,
    pub notes: Vec<String>,
    /// Set by the CUDA front end when the error is about the simulator's subset of CUDA rather
    /// than a mistake, so the GPU backend can take the code instead (see `cuda::Module`).
    pub cause: Option<Box<Cause>>,
}

/// Why the CUDA front end refused code that NVRTC may well compile.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Cause {
    /// A construct outside the simulator's subset, as messages name it: `` `float4` ``,
    /// `templates`, `` `switch` ``.
    OutsideSubset(String),
    /// A name the front end does not know (a type, function or variable): a GPU-only item may
    /// declare it.
    UnknownName(String),
}

impl Diagnostic {
    pub fn error(message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            severity: Severity::Error,
            message: message.into(),
            span: None,
            label: None,
            help: None,
            notes: Vec::new(),
            cause: None,
        }
    }

    pub fn warning(message: impl Into<String>) -> Diagnostic {
        Diagnostic { severity: Severity::Warning, ..Diagnostic::error(message) }
    }

    pub fn finding(message: impl Into<String>) -> Diagnostic {
        Diagnostic { severity: Severity::Finding, ..Diagnostic::error(message) }
    }

    pub fn at(mut self, span: Span) -> Diagnostic {
        self.span = Some(span);
        self
    }

    pub fn label(mut self, label: impl Into<String>) -> Diagnostic {
        self.label = Some(label.into().into_boxed_str());
        self
    }

    pub fn help(mut self, help: impl Into<String>) -> Diagnostic {
        self.help = Some(help.into());
        self
    }

    pub fn note(mut self, note: impl Into<String>) -> Diagnostic {
        self.notes.push(note.into());
        self
    }

    /// Mark the error as about `construct`, which the simulator's subset lacks.
    pub fn outside_subset(mut self, construct: impl Into<String>) -> Diagnostic {
        self.cause = Some(Box::new(Cause::OutsideSubset(construct.into())));
        self
    }

    /// Mark the error as about `name`, which the front end does not know.
    pub fn unknown_name(mut self, name: impl Into<String>) -> Diagnostic {
        self.cause = Some(Box::new(Cause::UnknownName(name.into())));
        self
    }

    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }

    /// Draw the diagnostic, rustc-style, with the learner's line and a caret under the span.
    /// Notes and hints are wrapped to `width` columns, continuation lines indented under the text.
    pub fn render<W: Write + ?Sized>(
        &self,
        sources: &SourceMap,
        out: &mut W,
        color: bool,
        width: usize,
    ) -> io::Result<()> {
        let (word, paint): (&str, fn(&str) -> String) = match self.severity {
            Severity::Error => ("error", |s| s.red().bold().to_string()),
            Severity::Warning => ("warning", |s| s.yellow().bold().to_string()),
            Severity::Finding => ("finding", |s| s.magenta().bold().to_string()),
        };
        let style = |s: &str, f: fn(&str) -> String| if color { f(s) } else { s.to_string() };
        let blue = |s: &str| style(s, |s| s.blue().bold().to_string());
        let message = printable(&self.message);
        // A one-line message wraps at words under its own start, as notes do; one with lines of
        // its own (a compiler's log) keeps them.
        let message = if message.contains('\n') { message.into_owned() } else { wrap(&message, width, word.len() + 2) };
        writeln!(out, "{}: {}", style(word, paint), style(&message, |s| s.bold().to_string()))?;
        if let Some(span) = self.span
            && let (Some(lc), Some(line)) = (sources.line_col(span), sources.line_text(span))
        {
            let num = lc.line.to_string();
            let pad = " ".repeat(num.len());
            writeln!(out, "{pad}{} {}", blue("-->"), sources.location(span))?;
            writeln!(out, "{pad} {}", blue("|"))?;
            let col = lc.col as usize - 1;
            let expanded: Vec<char> = line.replace('\t', "    ").chars().collect();
            let start: usize = line.chars().take(col).map(|c| if c == '\t' { 4 } else { 1 }).sum();
            let rest = expanded.len().saturating_sub(start).max(1);
            let span_width = (span.hi.saturating_sub(span.lo) as usize).clamp(1, rest);
            // A line wider than the terminal (a kernel typed on one line) shows a window around
            // the span, `...` marking what is cut, so the carets stay under their text.
            let room = width.saturating_sub(num.len() + 3).max(40);
            let (from, to) = if expanded.len() <= room {
                (0, expanded.len())
            } else {
                // A third of the room before the span, or all of it when the line ends soon.
                let from = start.saturating_sub(room / 3).min(expanded.len() - (room - 3));
                let from = if from <= 3 { 0 } else { from };
                let lead = if from > 0 { 3 } else { 0 };
                let to = (from + room - lead).min(expanded.len());
                let to = if to < expanded.len() { to - 3 } else { to };
                (from, to.max(from + 1))
            };
            let shown: String = expanded[from..to].iter().collect();
            let lead = if from > 0 { "..." } else { "" };
            let tail = if to < expanded.len() { "..." } else { "" };
            writeln!(out, "{} {} {lead}{}{tail}", blue(&num), blue("|"), printable(&shown))?;
            let indent = " ".repeat(start.saturating_sub(from) + lead.len());
            let width = span_width.min(to.saturating_sub(start).max(1));
            let carets = "^".repeat(width);
            let gutter = num.len() + 3;
            match &self.label {
                // A label that would run past the edge goes on the next line: under the carets
                // when it fits there, else as far right as it fits.
                Some(l) if gutter + indent.len() + width + 1 + l.chars().count() > room + gutter => {
                    writeln!(out, "{pad} {} {indent}{}", blue("|"), style(&carets, paint))?;
                    let at = indent.len().min(room.saturating_sub(l.chars().count()));
                    writeln!(out, "{pad} {} {}{}", blue("|"), " ".repeat(at), style(l, paint))?;
                }
                Some(l) => writeln!(out, "{pad} {} {indent}{}", blue("|"), style(&format!("{carets} {l}"), paint))?,
                None => writeln!(out, "{pad} {} {indent}{}", blue("|"), style(&carets, paint))?,
            }
        }
        for note in &self.notes {
            writeln!(out, "  = note: {}", wrap(&printable(note), width, "  = note: ".len()))?;
        }
        if let Some(help) = &self.help {
            writeln!(
                out,
                "  = {}: {}",
                style("help", |s| s.cyan().bold().to_string()),
                wrap(&printable(help), width, "  = help: ".len())
            )?;
        }
        Ok(())
    }

    /// The rendering without colour, for messages stored in reports (JUnit, test failures).
    pub fn to_plain(&self, sources: &SourceMap) -> String {
        let mut buf = Vec::new();
        let _ = self.render(sources, &mut buf, false, 80);
        String::from_utf8_lossy(&buf).into_owned()
    }
}

/// `text` safe to print on a terminal: control characters (an escape sequence hidden in a
/// script, a lesson or a kernel's printf) are shown escaped (`\x1b`), never sent raw, so text
/// from a course can neither recolour nor move nor retitle the learner's terminal. Newlines and
/// tabs stay; a carriage return before a newline (a file saved on Windows) is dropped.
pub fn printable(text: &str) -> std::borrow::Cow<'_, str> {
    let bad = |c: char| c.is_control() && c != '\n' && c != '\t';
    if !text.chars().any(bad) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\r' if chars.peek() == Some(&'\n') => {}
            c if bad(c) && (c as u32) < 0x100 => out.push_str(&format!("\\x{:02x}", c as u32)),
            c if bad(c) => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => out.push(c),
        }
    }
    std::borrow::Cow::Owned(out)
}

/// The first control character in `text` that [`printable`] would escape, with its byte offset.
pub fn first_control(text: &str) -> Option<(usize, char)> {
    let mut chars = text.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        let crlf = c == '\r' && chars.peek().is_some_and(|(_, n)| *n == '\n');
        if c.is_control() && c != '\n' && c != '\t' && !crlf {
            return Some((i, c));
        }
    }
    None
}

/// Word-wrap `text` to `width` columns, where the first line starts at column `indent`, and
/// continuation lines are indented to the same column. Words (and inline code) longer than a
/// line stay whole.
pub(crate) fn wrap(text: &str, width: usize, indent: usize) -> String {
    let room = width.saturating_sub(indent).max(20);
    let mut out = String::with_capacity(text.len());
    let mut col = 0;
    // Split at spaces outside backticks, so inline code like `if (i < n)` stays on one line.
    let mut words = Vec::new();
    let (mut start, mut in_code) = (0, false);
    for (i, c) in text.char_indices() {
        match c {
            '`' => in_code = !in_code,
            ' ' if !in_code => {
                words.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    words.push(&text[start..]);
    for word in words {
        let len = word.chars().count();
        if col > 0 && col + 1 + len > room {
            out.push('\n');
            out.push_str(&" ".repeat(indent));
            col = 0;
        } else if col > 0 {
            out.push(' ');
            col += 1;
        }
        out.push_str(word);
        col += len;
    }
    out
}

impl std::fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_shown_escaped() {
        assert_eq!(printable("plain\ttext\n"), "plain\ttext\n");
        assert_eq!(printable("\u{1b}[2J\u{1b}]0;pwned\u{7}"), "\\x1b[2J\\x1b]0;pwned\\x07");
        assert_eq!(printable("crlf\r\nlone\rcr"), "crlf\nlone\\x0dcr");
        assert_eq!(printable("c1 \u{9b}31m"), "c1 \\x9b31m");
        assert_eq!(first_control("ok\r\nfine"), None);
        assert_eq!(first_control("a\u{1b}b"), Some((1, '\u{1b}')));
    }

    #[test]
    fn caret_points_at_the_learners_line_in_the_file() {
        let mut map = SourceMap::new();
        let id = map.add("lesson.gridlab", "__global__ void k(float *a) {\n    flaot x = 1;\n}", 7);
        let lo = map.get(id).unwrap().text.find("flaot").unwrap();
        let d = Diagnostic::error("unknown type `flaot`")
            .at(Span::new(id, lo, lo + 5))
            .label("not a type")
            .help("did you mean `float`?");
        let text = d.to_plain(&map);
        assert_eq!(
            text,
            "error: unknown type `flaot`\n --> lesson.gridlab:8:5\n  |\n8 |     flaot x = 1;\n  |     ^^^^^ not a type\n  = help: did you mean `float`?\n"
        );
    }

    #[test]
    fn a_line_wider_than_the_terminal_shows_a_window_around_the_span() {
        let mut map = SourceMap::new();
        let line = "__global__ void add_half(float *a, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i <= n) a[i] += 0.5f; }";
        let id = map.add("<input 3>", line, 0);
        let lo = line.find("a[i]").unwrap();
        let d = Diagnostic::finding("1 thread wrote past the end of `a`")
            .at(Span::new(id, lo, lo + 4))
            .label("a[i] wrote past the end of `a` here");
        let text = d.to_plain(&map);
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines.iter().all(|l| l.chars().count() <= 80), "{text}");
        assert!(lines[3].starts_with("1 | ...") && lines[3].ends_with("if (i <= n) a[i] += 0.5f; }"), "{text}");
        assert_eq!(lines[3].chars().count(), 80, "the window uses the room there is: {text}");
        let caret = lines[4].find('^').unwrap();
        assert_eq!(&lines[3][caret..caret + 4], "a[i]", "{text}");
        // The label does not fit after the carets: it goes on the next line, within the width.
        assert_eq!(lines[4].trim_end(), format!("  |{}^^^^", " ".repeat(caret - 3)), "{text}");
        assert!(lines[5].starts_with("  | ") && lines[5].ends_with("a[i] wrote past the end of `a` here"), "{text}");
        assert!(lines[5].chars().count() <= 80, "{text}");
    }
}
