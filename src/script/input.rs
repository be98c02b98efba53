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

use crate::diag::{Diagnostic, Span};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InputKind {
    Cuda,
    Command,
    Statement,
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
    let word: String = t.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
    Some(if CUDA_WORDS.contains(&word.as_str()) { InputKind::Cuda } else { InputKind::Statement })
}

/// The state of brackets after scanning some text.
#[derive(Default)]
struct Scan {
    /// Open brackets with their byte offsets.
    open: Vec<(u8, usize)>,
    /// Inside a `/* */` comment at the end.
    in_comment: bool,
    /// The last character outside comments and whitespace.
    last: Option<u8>,
}

/// Scan C text: brackets outside comments, strings and character literals.
fn scan_c(text: &str) -> Scan {
    let b = text.as_bytes();
    let mut s = Scan::default();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if b[i..].starts_with(b"//") {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
            continue;
        }
        if b[i..].starts_with(b"/*") {
            match text[i + 2..].find("*/") {
                Some(end) => i += end + 4,
                None => {
                    s.in_comment = true;
                    return s;
                }
            }
            continue;
        }
        if c == b'"' || c == b'\'' {
            i += 1;
            while i < b.len() && b[i] != c && b[i] != b'\n' {
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            s.last = Some(c);
            i += 1;
            continue;
        }
        bracket(&mut s, c, i);
        i += 1;
    }
    s
}

/// Scan a statement: brackets outside `#` comments.
fn scan_statement(text: &str) -> Scan {
    let mut s = Scan::default();
    for line in line_offsets(text) {
        let l = &text[line.0..line.1];
        let code = l.find('#').map_or(l, |h| &l[..h]);
        for (j, c) in code.bytes().enumerate() {
            bracket(&mut s, c, line.0 + j);
        }
    }
    s
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

/// Whether a CUDA item's text is finished (see the module docs).
fn cuda_complete(text: &str) -> bool {
    let s = scan_c(text);
    if s.in_comment || !s.open.is_empty() {
        return false;
    }
    let last_line = text.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("");
    if is_preprocessor(last_line) || last_line.trim_end().ends_with('\\') {
        return !last_line.trim_end().ends_with('\\');
    }
    matches!(s.last, Some(b'}' | b';'))
}

/// For the REPL: `false` while the text typed so far needs more lines (an open bracket, an
/// unfinished `/* */` comment, a CUDA item not ended by `}` or `;`, a `\` continuation).
pub fn is_complete(text: &str) -> bool {
    let first = text.lines().find_map(|l| classify(l).map(|k| (k, l)));
    match first {
        None => !scan_c(text).in_comment,
        Some((InputKind::Command, _)) => true,
        Some((InputKind::Cuda, _)) => {
            // Leading comments and preprocessor lines alone are complete; a started item is not.
            let body_started = text.lines().any(|l| classify(l) == Some(InputKind::Cuda) && !is_preprocessor(l));
            if body_started { cuda_complete(text) } else { cuda_complete(text) || !text.trim_end().ends_with('\\') }
        }
        Some((InputKind::Statement, _)) => scan_statement(text).open.is_empty(),
    }
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
                loop {
                    let s = scan_statement(&text[lines[start].0..lines[i].1]);
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
            Some(InputKind::Cuda) => {
                let start = pending.take().unwrap_or(i);
                loop {
                    let l = &text[lines[i].0..lines[i].1];
                    if is_preprocessor(l) {
                        while text[lines[i].0..lines[i].1].trim_end().ends_with('\\') && i + 1 < lines.len() {
                            i += 1;
                        }
                    } else {
                        loop {
                            let chunk = &text[lines[start].0..lines[i].1];
                            let done = cuda_complete(chunk)
                                && !(chunk.trim_end().ends_with('}')
                                    && lines.get(i + 1).is_some_and(|n| text[n.0..n.1].trim_start().starts_with(';')));
                            if done {
                                break;
                            }
                            if i + 1 == lines.len() {
                                let s = scan_c(chunk);
                                let diag = match s.open.last() {
                                    Some(&(c, at)) => unclosed(text, c, lines[start].0 + at),
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
                push(&mut inputs, InputKind::Cuda, start, i);
                i += 1;
            }
        }
    }
    Ok(inputs)
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
    matches!(classify(line), Some(InputKind::Command | InputKind::Cuda))
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
    fn completeness_for_the_repl() {
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
