//! Splitting text (a script file, a lesson block, lines typed at the prompt) into inputs: CUDA
//! items, `:commands` and statements.
//!
//! Rules:
//! - Blank lines and `#` comments (a `#` not followed by a preprocessor word) produce no input.
//! - A line starting with `:` is a command, one line.
//! - A CUDA item starts with `__global__`, `__device__`, `__host__`, `__constant__`, `__shared__`,
//!   `__managed__`, `__forceinline__`, `struct`, `union`, `enum`, `typedef`, `template`,
//!   `extern`, `static`, `inline`, `namespace`, `using`, `__launch_bounds__`, `__noinline__`,
//!   `__inline__`, `const`, `constexpr`, `class` or a preprocessor line (`#define`,
//!   `#include`, `#pragma`, `#if`...). It runs until its braces and parentheses balance and its
//!   last line ends with `}` or `;` (so a prototype or `__constant__ float c[3] = {1, 2, 3};`
//!   ends at its semicolon, and `struct S {...}` may put its `;` on the next line). Braces in
//!   comments, strings and character literals don't count.
//! - Preprocessor lines (with `\` continuations) and `//` or `/* */` comment lines attach to the
//!   CUDA item *directly* below them: `#define N 256` followed by a kernel is one input. After a
//!   blank line or before a statement, a preprocessor line is an input of its own, and comment
//!   lines are dropped.
//! - A statement continues onto following lines while a `(`, `[` or `{` is open.
//!
//! Errors are [`Diagnostic`]s whose span indexes into the whole `text` with [`SourceId`] 0;
//! a caller that registered the text under another id re-targets the span (`span.source = id`).
//! The message also names the line, so it is readable without the span.
//!
//! [`SourceId`]: crate::diag::SourceId

use std::io::{self, Read};
use std::path::Path;

use crate::diag::{Diagnostic, Span};

/// A script (`:load`, `replay`, a lesson file) larger than this is refused, not read whole:
/// `/dev/zero` or a binary file is not a script.
pub const MAX_SCRIPT_BYTES: usize = 16 << 20;

/// One input (a kernel, a statement, a command) larger than this is refused with a message.
pub const MAX_INPUT_BYTES: usize = 1 << 20;

/// The text of a script file, refused with a reason when it is larger than
/// [`MAX_SCRIPT_BYTES`], holds NUL bytes or is not UTF-8: reads at most one byte more than the
/// limit, so an endless file (`/dev/zero`) costs no more than that.
pub fn read_script(path: &Path) -> io::Result<String> {
    let file = std::fs::File::open(path)?;
    let mut bytes = Vec::new();
    file.take(MAX_SCRIPT_BYTES as u64 + 1).read_to_end(&mut bytes)?;
    let refuse = |why: String| Err(io::Error::new(io::ErrorKind::InvalidData, why));
    if bytes.len() > MAX_SCRIPT_BYTES {
        return refuse(format!("it is larger than {} MiB, too large for a script", MAX_SCRIPT_BYTES >> 20));
    }
    if let Some(at) = bytes.iter().position(|&b| b == 0) {
        return refuse(format!("it holds a NUL byte (at byte {at}): a binary file, not a script"));
    }
    String::from_utf8(bytes).or_else(|e| {
        refuse(format!("it is not UTF-8 text (byte {} is not): not a script", e.utf8_error().valid_up_to()))
    })
}

/// The message for an input larger than [`MAX_INPUT_BYTES`], or `None` when it is not.
pub fn too_large(text: &str) -> Option<String> {
    (text.len() > MAX_INPUT_BYTES).then(|| {
        format!(
            "this input is longer than {} MiB, the most gridlab takes in one input: split it into several kernels or statements",
            MAX_INPUT_BYTES >> 20
        )
    })
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InputKind {
    Cuda,
    Command,
    Statement,
    /// Python: `@cuda.jit` functions and imports (see `crate::python`).
    Python,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Input {
    pub kind: InputKind,
    /// The input's lines, joined with `\n`, without a trailing newline.
    pub text: String,
    /// 1-based first line of the input within the text it was split from.
    pub line: u32,
    /// 1-based last line.
    pub end_line: u32,
}

const CUDA_WORDS: [&str; 23] = [
    "__global__",
    "__device__",
    "__host__",
    "__constant__",
    "__shared__",
    "__managed__",
    "__forceinline__",
    "struct",
    "union",
    "enum",
    "typedef",
    "template",
    "extern",
    "static",
    "inline",
    "namespace",
    "using",
    "__launch_bounds__",
    "__noinline__",
    "__inline__",
    "const",
    "constexpr",
    "class",
];

const PREPROCESSOR: [&str; 11] =
    ["define", "include", "pragma", "if", "ifdef", "ifndef", "else", "elif", "endif", "undef", "error"];

fn is_preprocessor(line: &str) -> bool {
    let Some(rest) = line.trim_start().strip_prefix('#') else { return false };
    let word: String = rest.trim_start().chars().take_while(|c| c.is_ascii_alphanumeric()).collect();
    PREPROCESSOR.contains(&word.as_str())
}

fn is_c_comment(line: &str) -> bool {
    let t = line.trim_start();
    t.starts_with("//") || t.starts_with("/*")
}

/// What kind of input a line starts, or `None` for a blank or comment line.
pub fn classify(first_line: &str) -> Option<InputKind> {
    let t = first_line.trim_start();
    if t.is_empty() || is_c_comment(t) {
        return None;
    }
    if t.starts_with('#') {
        return is_preprocessor(t).then_some(InputKind::Cuda);
    }
    if t.starts_with(':') {
        return Some(InputKind::Command);
    }
    if crate::python::starts_python(t) {
        return Some(InputKind::Python);
    }
    let word: String = t.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
    Some(if CUDA_WORDS.contains(&word.as_str()) { InputKind::Cuda } else { InputKind::Statement })
}

/// The state of brackets after scanning some text.
#[derive(Clone, Debug, Default)]
struct Scan {
    /// Open brackets with their byte offsets.
    open: Vec<(u8, usize)>,
    /// Inside a `/* */` comment at the end.
    in_comment: bool,
    /// The last character outside comments and whitespace.
    last: Option<u8>,
    /// Inside a string or character literal whose line ended in a `\` (C's line splice).
    in_str: Option<u8>,
}

impl Scan {
    /// Scan one more line of C text (without its newline) at byte offset `base`: brackets
    /// outside comments, strings and character literals. Fed line by line, it gives what
    /// scanning the whole text at once would, in time linear in the text.
    fn c_line(&mut self, line: &str, base: usize) {
        let b = line.as_bytes();
        let mut i = 0;
        if self.in_comment {
            match line.find("*/") {
                Some(end) => {
                    self.in_comment = false;
                    i = end + 2;
                }
                None => return,
            }
        }
        if let Some(q) = self.in_str.take() {
            i = self.string(b, i, q);
        }
        while i < b.len() {
            let c = b[i];
            if b[i..].starts_with(b"//") {
                return;
            }
            if b[i..].starts_with(b"/*") {
                match line[i + 2..].find("*/") {
                    Some(end) => i += end + 4,
                    None => {
                        self.in_comment = true;
                        return;
                    }
                }
                continue;
            }
            if c == b'"' || c == b'\'' {
                i = self.string(b, i + 1, c);
                continue;
            }
            bracket(self, c, base + i);
            i += 1;
        }
    }

    /// The rest of a literal quoted by `q` from `i`; returns where scanning goes on.
    fn string(&mut self, b: &[u8], mut i: usize, q: u8) -> usize {
        while i < b.len() && b[i] != q {
            i += if b[i] == b'\\' { 2 } else { 1 };
        }
        self.last = Some(q);
        if i > b.len() {
            // A `\` ended the line: the literal goes on on the next one.
            self.in_str = Some(q);
        }
        i + 1
    }

    /// Scan one more line of a statement: brackets outside `#` comments.
    fn statement_line(&mut self, line: &str, base: usize) {
        let code = line.find('#').map_or(line, |h| &line[..h]);
        for (j, c) in code.bytes().enumerate() {
            bracket(self, c, base + j);
        }
    }
}

fn bracket(s: &mut Scan, c: u8, at: usize) {
    match c {
        b'{' | b'(' | b'[' => s.open.push((c, at)),
        b'}' | b')' | b']' => {
            // A stray closer is the parser's to report; don't let it hide later openers.
            s.open.pop();
        }
        _ => {}
    }
    if !c.is_ascii_whitespace() {
        s.last = Some(c);
    }
}

/// Scan C text: brackets outside comments, strings and character literals.
fn scan_c(text: &str) -> Scan {
    let mut s = Scan::default();
    for (lo, hi) in line_offsets(text) {
        s.c_line(&text[lo..hi], lo);
    }
    s
}

/// Byte ranges of lines, without their `\n` (and `\r`).
fn line_offsets(text: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut start = 0;
    for (i, c) in text.char_indices() {
        if c == '\n' {
            out.push((start, if text[..i].ends_with('\r') { i - 1 } else { i }));
            start = i + 1;
        }
    }
    if start < text.len() {
        out.push((start, text.len()));
    }
    out
}

/// A CUDA item scanned line by line, to tell when it is finished (see the module docs).
#[derive(Clone, Debug, Default)]
struct CudaScan {
    scan: Scan,
    /// The last line that is not blank, trimmed at the end: whether it is a preprocessor line,
    /// and its last character.
    last_line: Option<(bool, char)>,
}

impl CudaScan {
    fn line(&mut self, line: &str, base: usize) {
        self.scan.c_line(line, base);
        let t = line.trim_end();
        if !t.trim_start().is_empty() {
            self.last_line = Some((is_preprocessor(t), t.chars().next_back().unwrap_or(' ')));
        }
    }

    /// Whether the item is finished: brackets closed, no open comment, and a last line that
    /// ends it (a preprocessor line without a `\` continuation, or `}` or `;`).
    fn complete(&self) -> bool {
        if self.scan.in_comment || !self.scan.open.is_empty() {
            return false;
        }
        match self.last_line {
            Some((pre, last)) if pre || last == '\\' => last != '\\',
            _ => matches!(self.scan.last, Some(b'}' | b';')),
        }
    }

    /// The last line that is not blank ends with `c`.
    fn ends_with(&self, c: char) -> bool {
        self.last_line.is_some_and(|(_, last)| last == c)
    }
}

/// Text typed so far for one input, fed a line at a time, that can say whether the input is
/// whole: [`is_complete`] without scanning the text again for every line, so that a long
/// multi-line input costs time linear in its length.
#[derive(Clone, Debug, Default)]
pub struct Pending {
    /// The kind of the first line that has one.
    first: Option<InputKind>,
    c: CudaScan,
    statement: Scan,
    /// A line of CUDA that is not a preprocessor line was seen: an item's body started.
    body_started: bool,
    /// Python: an indented line (a function's body) was seen, and the last line was blank.
    py_body: bool,
    py_blank: bool,
    /// Python whose first line is a simple statement (`import`, `assert`): one line.
    py_import: bool,
    /// Python whose first line holds its own body (`for i in range(3): print(i)`).
    py_inline: bool,
    /// Python with a line after the first that is not indented (the `def` under a decorator,
    /// or a body typed without its indentation): a blank line ends it, as Python's REPL ends
    /// it there (with an `IndentationError` for a body not indented).
    py_flat: bool,
    bytes: usize,
    lines: usize,
}

impl Pending {
    /// Add one line (without its newline).
    pub fn push_line(&mut self, line: &str) {
        let line = line.strip_suffix('\r').unwrap_or(line);
        let base = self.bytes;
        let kind = classify(line);
        if self.first.is_none() {
            self.first = kind;
            let t = line.trim_start();
            self.py_import = kind == Some(InputKind::Python) && crate::python::parse::is_simple_statement(t);
            let code = t.split_once('#').map_or(t, |(c, _)| c).trim_end();
            self.py_inline = kind == Some(InputKind::Python) && !t.starts_with('@') && !code.ends_with(':');
        }
        if kind == Some(InputKind::Cuda) && !is_preprocessor(line) {
            self.body_started = true;
        }
        if self.first == Some(InputKind::Python) && self.lines > 0 {
            self.py_blank = line.trim().is_empty();
            self.py_body |= line.starts_with([' ', '\t']) && !line.trim().is_empty();
            self.py_flat |= !line.starts_with([' ', '\t']) && !line.trim().is_empty();
        }
        self.c.line(line, base);
        self.statement.statement_line(line, base);
        self.bytes += line.len() + 1;
        self.lines += 1;
    }

    /// `false` while the text needs more lines (see [`is_complete`]).
    pub fn is_complete(&self) -> bool {
        match self.first {
            None => !self.c.scan.in_comment,
            Some(InputKind::Command) => true,
            Some(InputKind::Cuda) => {
                // Leading comments and preprocessor lines alone are complete; a started item is not.
                self.c.complete() || (!self.body_started && !self.c.ends_with('\\'))
            }
            Some(InputKind::Statement) => self.statement.open.is_empty(),
            // As in Python's REPL: an import is one line; a function ends at a blank line.
            Some(InputKind::Python) if self.py_import => self.statement.open.is_empty(),
            Some(InputKind::Python) => {
                (self.py_body || self.py_inline || self.py_flat) && self.py_blank && self.statement.open.is_empty()
            }
        }
    }

    /// Bytes fed so far, counting a newline after each line.
    pub fn len(&self) -> usize {
        self.bytes
    }

    pub fn is_empty(&self) -> bool {
        self.lines == 0
    }
}

/// For the REPL: `false` while the text typed so far needs more lines (an open bracket, an
/// unfinished `/* */` comment, a CUDA item not ended by `}` or `;`, a `\` continuation).
pub fn is_complete(text: &str) -> bool {
    let mut p = Pending::default();
    for line in text.split('\n') {
        p.push_line(line);
    }
    p.is_complete()
}

/// For the REPL: a `:` command typed on a line of its own under text that is not complete yet
/// (`__global__ void k() {` ... then `:next`): the command, and the unfinished text above it.
/// A command always runs, rather than becoming a line of a kernel that can never compile. A
/// line that starts with `:` and a space (`    : b;`, the end of a `?:`) is not a command.
pub fn trailing_command(text: &str) -> Option<(&str, &str)> {
    let trimmed = text.trim_end();
    let cut = trimmed.rfind('\n')?;
    let (rest, last) = (&trimmed[..cut], trimmed[cut + 1..].trim_start());
    let is_command = last.strip_prefix(':').is_some_and(|c| c.starts_with(|ch: char| ch.is_ascii_alphabetic()));
    (is_command && !rest.trim().is_empty() && !is_complete(rest)).then_some((last, rest))
}

/// Split a script into inputs; see the module docs for the rules and the error convention.
pub fn split_inputs(text: &str) -> Result<Vec<Input>, Box<SplitError>> {
    let lines = line_offsets(text);
    let mut inputs = Vec::new();
    let mut i = 0;
    // First line of comments directly above the current line, for attaching to CUDA.
    let mut pending: Option<usize> = None;
    let mut in_block_comment = false;
    let push = |inputs: &mut Vec<Input>, kind, from: usize, to: usize| {
        inputs.push(Input {
            kind,
            text: text[lines[from].0..lines[to].1].to_string(),
            line: from as u32 + 1,
            end_line: to as u32 + 1,
        });
    };
    while i < lines.len() {
        let line = &text[lines[i].0..lines[i].1];
        if in_block_comment {
            in_block_comment = !line.contains("*/");
            i += 1;
            continue;
        }
        match classify(line) {
            None => {
                if is_c_comment(line) {
                    pending.get_or_insert(i);
                    in_block_comment = scan_c(line).in_comment;
                } else {
                    pending = None;
                }
                i += 1;
            }
            Some(InputKind::Command) => {
                pending = None;
                push(&mut inputs, InputKind::Command, i, i);
                i += 1;
            }
            Some(InputKind::Statement) => {
                pending = None;
                let start = i;
                // A statement continues while a bracket is open, but never into a line that
                // plainly starts another input: an unclosed `(` then costs one statement (the
                // parser reports it) instead of swallowing the rest of the script.
                let mut s = Scan::default();
                loop {
                    s.statement_line(&text[lines[i].0..lines[i].1], lines[i].0);
                    if s.open.is_empty()
                        || i + 1 == lines.len()
                        || starts_new_input(&text[lines[i + 1].0..lines[i + 1].1])
                    {
                        break;
                    }
                    i += 1;
                }
                push(&mut inputs, InputKind::Statement, start, i);
                i += 1;
            }
            Some(InputKind::Python) => {
                pending = None;
                let start = i;
                let t = line.trim_start();
                if crate::python::parse::is_simple_statement(t) {
                    // One line, or more while a bracket is open: `from numba import (cuda,\n float32)`.
                    let mut s = Scan::default();
                    loop {
                        s.statement_line(&text[lines[i].0..lines[i].1], lines[i].0);
                        if s.open.is_empty() || i + 1 == lines.len() {
                            break;
                        }
                        i += 1;
                    }
                } else {
                    // Decorators, the `def` line, then every line that is indented, blank or a
                    // comment, up to the last indented one.
                    // A body typed without its indentation (the `def` line followed at once by
                    // one that is not indented) stays with its function up to the next blank
                    // line, so that it gets one message saying to indent it, not one per line.
                    let mut last = i;
                    let mut j = i + 1;
                    let mut flat = false;
                    while j < lines.len() {
                        let l = &text[lines[j].0..lines[j].1];
                        let t = l.trim_start();
                        if flat && t.is_empty() {
                            break;
                        }
                        if t.is_empty() || t.starts_with('#') {
                            j += 1;
                            continue;
                        }
                        let above = text[lines[last].0..lines[last].1].trim_start();
                        let opens = above.split_once('#').map_or(above, |(c, _)| c).trim_end().ends_with(':');
                        flat |= opens && j == last + 1 && !l.starts_with([' ', '\t']) && !t.starts_with('@');
                        let header = above.starts_with('@');
                        // A line right under the body that lost its indentation, whose block
                        // holds what only a kernel can (`return`, `cuda.grid(1)`): it stays with
                        // the function up to the next blank line, for one message saying so.
                        if j == last + 1 && !l.starts_with([' ', '\t']) && !t.starts_with('@') && !t.starts_with("def ")
                        {
                            let block = text[lines[j].0..].split("\n\n").next().unwrap_or("");
                            flat |= block.lines().any(crate::python::parse::holds_kernel_only_code);
                        }
                        if flat
                            || l.starts_with([' ', '\t'])
                            || (header && (t.starts_with('@') || t.starts_with("def ")))
                            || crate::python::parse::continues_compound(l)
                        {
                            last = j;
                            j += 1;
                            continue;
                        }
                        break;
                    }
                    i = last;
                }
                push(&mut inputs, InputKind::Python, start, i);
                i += 1;
            }
            Some(InputKind::Cuda) => {
                let start = pending.take().unwrap_or(i);
                // The item's lines so far, scanned once each as `i` moves on.
                let mut scan = CudaScan::default();
                let mut fed = start;
                loop {
                    let l = &text[lines[i].0..lines[i].1];
                    if is_preprocessor(l) {
                        while text[lines[i].0..lines[i].1].trim_end().ends_with('\\') && i + 1 < lines.len() {
                            i += 1;
                        }
                    } else {
                        loop {
                            while fed <= i {
                                scan.line(&text[lines[fed].0..lines[fed].1], lines[fed].0);
                                fed += 1;
                            }
                            let done = scan.complete()
                                && !(scan.ends_with('}')
                                    && lines.get(i + 1).is_some_and(|n| text[n.0..n.1].trim_start().starts_with(';')));
                            if done {
                                break;
                            }
                            if i + 1 == lines.len() {
                                let s = &scan.scan;
                                let diag = match s.open.last() {
                                    Some(&(c, at)) => unclosed(text, c, at),
                                    None if s.in_comment => Diagnostic::error(format!(
                                        "unfinished CUDA item starting on line {}: a `/*` comment is never closed",
                                        start + 1
                                    ))
                                    .at(Span::new(0, lines[start].0, lines[start].1))
                                    .help("close the comment with `*/`"),
                                    None => Diagnostic::error(format!(
                                        "unfinished CUDA item starting on line {}",
                                        start + 1
                                    ))
                                    .at(Span::new(0, lines[start].0, lines[start].1))
                                    .help("a kernel needs its body `{ ... }`; a declaration ends with `;`"),
                                };
                                return Err(Box::new(SplitError { inputs, diag }));
                            }
                            i += 1;
                        }
                    }
                    // Preprocessor lines and comments directly above an item belong to it.
                    let mut j = i + 1;
                    let l = &text[lines[i].0..lines[i].1];
                    if !is_preprocessor(l) {
                        break;
                    }
                    while j < lines.len() && is_c_comment(&text[lines[j].0..lines[j].1]) {
                        j += 1;
                    }
                    if j < lines.len() && classify(&text[lines[j].0..lines[j].1]) == Some(InputKind::Cuda) {
                        i = j;
                    } else {
                        break;
                    }
                }
                // An `#if` the item opens takes everything to its `#endif` (blank lines and
                // other items too: `#if __CUDA_ARCH__ >= 800` around a specialisation in the
                // CUDA samples), when the `#endif` is there; without one the front end says so.
                let depth = |l: &str| conditional_depth(l);
                let open: i32 = (start..=i).map(|k| depth(&text[lines[k].0..lines[k].1])).sum();
                if open > 0 {
                    let mut d = open;
                    for (k, line) in lines.iter().enumerate().skip(i + 1) {
                        d += depth(&text[line.0..line.1]);
                        if d <= 0 {
                            i = k;
                            break;
                        }
                    }
                }
                push(&mut inputs, InputKind::Cuda, start, i);
                i += 1;
            }
        }
    }
    Ok(inputs)
}

/// How a line changes the nesting of `#if`s: `#if`, `#ifdef` and `#ifndef` open one, `#endif`
/// closes one.
fn conditional_depth(line: &str) -> i32 {
    let Some(rest) = line.trim_start().strip_prefix('#') else { return 0 };
    let word: String = rest.trim_start().chars().take_while(|c| c.is_ascii_alphanumeric()).collect();
    match word.as_str() {
        "if" | "ifdef" | "ifndef" => 1,
        "endif" => -1,
        _ => 0,
    }
}

/// A script whose last CUDA item never ends: the inputs before it, and what is wrong with it.
#[derive(Clone, Debug)]
pub struct SplitError {
    /// Complete inputs before the unfinished item; they can still run.
    pub inputs: Vec<Input>,
    /// Points into the whole text with `SourceId` 0: callers re-point it at their own source.
    pub diag: Diagnostic,
}

/// Lines that can only begin a new input, never continue a statement.
fn starts_new_input(line: &str) -> bool {
    let t = line.trim_start();
    matches!(classify(line), Some(InputKind::Command | InputKind::Cuda | InputKind::Python))
        || ["let ", "expect "].iter().any(|k| t.starts_with(k))
}

fn unclosed(text: &str, c: u8, at: usize) -> Diagnostic {
    let line = text[..at].matches('\n').count() + 1;
    let close = match c {
        b'{' => '}',
        b'(' => ')',
        _ => ']',
    };
    Diagnostic::error(format!("unclosed `{}` opened on line {line}", c as char))
        .at(Span::new(0, at, at + 1))
        .label("never closed")
        .help(format!("add the matching `{close}`"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(text: &str) -> Vec<(InputKind, u32, u32)> {
        split_inputs(text).unwrap().into_iter().map(|i| (i.kind, i.line, i.end_line)).collect()
    }

    #[test]
    fn a_kernel_line_that_lost_its_indentation_stays_with_its_function() {
        use InputKind::*;
        // `if i >= n:` at the start of the line, with a `return` under it: one input, for one
        // message; a host line right under a kernel is still its own input.
        let text = "@cuda.jit\ndef k(a, n):\n    i = cuda.grid(1)\nif i >= n:\n    return\n\nn = 3\n";
        assert_eq!(kinds(text), vec![(Python, 1, 5), (Statement, 7, 7)]);
        let text = "@cuda.jit\ndef k(a, n):\n    a[0] = n\nn = 3\n";
        assert_eq!(kinds(text), vec![(Python, 1, 3), (Statement, 4, 4)]);
    }

    #[test]
    fn splits_a_script_with_line_numbers() {
        let script = "\
# a comment
#define N 256
// Adds one half.
__global__ void add_half(float *a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;  // } in a comment
    if (i < n) { a[i] += 0.5f; }
}

:backend sim
let a = zeros(N)   # trailing comment
let b = array([1,
               2])
add_half<<<1, 256>>>(a, 256)

#include <cstdio>

__constant__ float c[3] = {1, 2, 3};
struct P {
    float x;
}
;
__device__ float twice(float x);
expect all(a == 0.5)
";
        use InputKind::*;
        assert_eq!(
            kinds(script),
            vec![
                (Cuda, 2, 7),
                (Command, 9, 9),
                (Statement, 10, 10),
                (Statement, 11, 12),
                (Statement, 13, 13),
                (Cuda, 15, 15),
                (Cuda, 17, 17),
                (Cuda, 18, 21),
                (Cuda, 22, 22),
                (Statement, 23, 23),
            ]
        );
        let inputs = split_inputs(script).unwrap();
        assert!(inputs[0].text.starts_with("#define N 256\n// Adds one half.\n__global__"));
        assert!(inputs[0].text.ends_with('}'));
        assert_eq!(inputs[3].text, "let b = array([1,\n               2])");
    }

    #[test]
    fn an_if_keeps_everything_to_its_endif_when_there_is_one() {
        let script = "\
#if __CUDA_ARCH__ >= 800
// For int on newer GPUs.
template <>
__device__ int f<int>(int x) { return x; }

__device__ int g(int x) { return x; }
#endif
let a = zeros(4)
#ifdef NEVER_CLOSED
__device__ int h(int x) { return x; }
let b = zeros(4)
";
        use InputKind::*;
        assert_eq!(kinds(script), vec![(Cuda, 1, 7), (Statement, 8, 8), (Cuda, 9, 10), (Statement, 11, 11)]);
    }

    #[test]
    fn kernel_with_brace_on_the_next_line_and_template() {
        let script = "template <typename T>\n__global__ void k(T *a)\n{\n  a[0] = '{';\n}\nk<<<1,1>>>(a)";
        assert_eq!(kinds(script), vec![(InputKind::Cuda, 1, 5), (InputKind::Statement, 6, 6)]);
    }

    #[test]
    fn unclosed_brace_says_where_it_opened_and_keeps_what_came_before() {
        let text = "let a = zeros(4)\n__global__ void k(float *a) {\n  if (1) {\n}\n";
        let e = split_inputs(text).unwrap_err();
        assert_eq!(e.diag.message, "unclosed `{` opened on line 2");
        assert_eq!(e.diag.span.map(|s| &text[s.lo as usize..s.hi as usize]), Some("{"));
        assert_eq!(e.inputs.len(), 1);
    }

    #[test]
    fn an_unclosed_statement_costs_only_itself() {
        let text = "let a = zeros(4\nlet b = ones(2)\nx = [1,\n2]\n:help\n";
        assert_eq!(
            kinds(text),
            vec![
                (InputKind::Statement, 1, 1),
                (InputKind::Statement, 2, 2),
                (InputKind::Statement, 3, 4),
                (InputKind::Command, 5, 5)
            ]
        );
    }

    #[test]
    fn classifies_first_lines() {
        assert_eq!(classify("   "), None);
        assert_eq!(classify("# note"), None);
        assert_eq!(classify("// note"), None);
        assert_eq!(classify("#define N 4"), Some(InputKind::Cuda));
        assert_eq!(classify("  # include <x>"), Some(InputKind::Cuda));
        assert_eq!(classify(":help"), Some(InputKind::Command));
        assert_eq!(classify("extern \"C\" __global__ void k() {}"), Some(InputKind::Cuda));
        assert_eq!(classify("__launch_bounds__(256) __global__ void k() {}"), Some(InputKind::Cuda));
        assert_eq!(classify("const int N = 4;"), Some(InputKind::Cuda));
        assert_eq!(classify("int(x)"), Some(InputKind::Statement));
        assert_eq!(classify("static_val"), Some(InputKind::Statement));
    }

    #[test]
    fn a_long_input_splits_and_completes_in_linear_time() {
        let start = std::time::Instant::now();
        let lines = 200_000;
        let text = format!(
            "__global__ void k(int *a) {{\n{}}}\nlet a = (1 +\n{}2)\n",
            "a[0] += 1; // {\n".repeat(lines),
            "1 +\n".repeat(lines)
        );
        let end = lines as u32 + 2;
        assert_eq!(kinds(&text), vec![(InputKind::Cuda, 1, end), (InputKind::Statement, end + 1, 2 * end)]);
        let mut pending = Pending::default();
        for (i, line) in text.lines().enumerate().take(end as usize) {
            pending.push_line(line);
            assert_eq!(pending.is_complete(), i + 1 == end as usize, "line {}", i + 1);
        }
        assert!(start.elapsed() < std::time::Duration::from_secs(30), "{:?}", start.elapsed());
    }

    #[test]
    fn completeness_for_the_repl() {
        // C's line splice continues a string on the next line; a comment may span lines.
        assert!(is_complete("__global__ void k() { const char *s = \"a\\\n}\"; }"));
        assert!(!is_complete("__global__ void k() { const char *s = \"a\\\n\"; "));
        assert!(is_complete("__global__ void k() { /* {\n { */ }"));
        assert!(!is_complete("__global__ void k() { /* }\n } */"));
        assert!(is_complete("let a = zeros(4)"));
        assert!(!is_complete("let a = array([1,"));
        assert!(is_complete("let a = f(  # ( in a comment\n)"));
        assert!(!is_complete("__global__ void k(float *a)"));
        assert!(!is_complete("__global__ void k(float *a) {\n  a[0] = 1; // }"));
        assert!(is_complete("__global__ void k(float *a) {\n  a[0] = '}';\n}"));
        assert!(!is_complete("__global__ void k() { /* unfinished"));
        assert!(is_complete("#define N 4"));
        assert!(!is_complete("#define MAX(a, b) \\"));
        assert!(is_complete("__device__ float f(float);"));
        assert!(is_complete(":load x.gridlab"));
        assert!(is_complete(""));
    }
}
