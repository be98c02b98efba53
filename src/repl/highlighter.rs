//! Colours for what is being typed: CUDA C (keywords, types, qualifiers, built-ins, numbers,
//! strings, comments), gridlab statements (`let`, `expect`, `<<< >>>`, constructors, dtypes) and
//! `:` commands (known ones in one colour, unknown ones in another).
//!
//! The scanner is deliberately forgiving: the text is usually half-typed, so it never fails and
//! never needs the real lexers. [`spans`] says what each piece of text is; [`InputHighlighter`]
//! turns that into reedline's styled text, or into plain text when colour is off.

use std::ops::Range;

use nu_ansi_term::{Color, Style};
use reedline::{Highlighter, StyledText};

use super::{Names, SharedNames};
use crate::dtype::DType;
use crate::session::command;

/// What a piece of the input is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Plain,
    /// Control flow and gridlab's own statement words: `if`, `for`, `return`, `let`, `expect`.
    Keyword,
    /// C types, `dim3` and dtype names (`f32`, `i64`).
    Type,
    /// CUDA qualifiers: `__global__`, `__shared__`, ...
    Qualifier,
    /// CUDA built-in variables and functions (`threadIdx`, `atomicAdd`) and gridlab functions
    /// (`zeros`, `arange`, `sum`).
    Builtin,
    /// A kernel or device function the session knows.
    Kernel,
    Number,
    String,
    Comment,
    Preprocessor,
    /// `<<<` and `>>>`.
    Launch,
    /// A known `:command`.
    Command,
    /// A `:word` that is not a command.
    UnknownCommand,
}

pub(crate) const C_KEYWORDS: &[&str] = &[
    "if",
    "else",
    "for",
    "while",
    "do",
    "return",
    "break",
    "continue",
    "switch",
    "case",
    "default",
    "goto",
    "sizeof",
    "struct",
    "union",
    "enum",
    "typedef",
    "template",
    "typename",
    "extern",
    "static",
    "inline",
    "namespace",
    "using",
    "true",
    "false",
    "nullptr",
    "NULL",
];

pub(crate) const C_TYPES: &[&str] = &[
    "void",
    "bool",
    "char",
    "short",
    "int",
    "long",
    "unsigned",
    "signed",
    "float",
    "double",
    "size_t",
    "const",
    "volatile",
    "auto",
    "__restrict__",
    "uint8_t",
    "int8_t",
    "uint32_t",
    "int32_t",
    "uint64_t",
    "int64_t",
    "dim3",
    "float2",
    "float4",
    "int2",
    "int4",
];

pub(crate) const QUALIFIERS: &[&str] = &[
    "__global__",
    "__device__",
    "__host__",
    "__shared__",
    "__constant__",
    "__managed__",
    "__forceinline__",
    "__noinline__",
    "__launch_bounds__",
];

/// gridlab's statement words (`clean` and `finding` follow `expect`).
pub(crate) const GRIDLAB_KEYWORDS: &[&str] = &["let", "expect", "clean", "finding", "cost"];

fn word_kind(word: &str, names: &Names) -> Kind {
    if QUALIFIERS.contains(&word) {
        Kind::Qualifier
    } else if C_KEYWORDS.contains(&word) || GRIDLAB_KEYWORDS.contains(&word) {
        Kind::Keyword
    } else if C_TYPES.contains(&word) || DType::parse(word).is_some_and(|d| d.name() == word) {
        Kind::Type
    } else if names.kernels.iter().chain(&names.device_functions).any(|k| k == word) {
        Kind::Kernel
    } else if crate::cuda::check::BUILTIN_VARS.contains(&word)
        || crate::cuda::check::BUILTIN_FUNCS.contains(&word)
        || crate::script::eval::FUNCTIONS.contains(&word)
    {
        Kind::Builtin
    } else {
        Kind::Plain
    }
}

/// Split `text` into consecutive pieces covering all of it, each with what it is.
pub fn spans(text: &str, names: &Names) -> Vec<(Kind, Range<usize>)> {
    let b = text.as_bytes();
    let mut out: Vec<(Kind, Range<usize>)> = Vec::new();
    let mut push = |kind: Kind, r: Range<usize>| {
        if r.is_empty() {
            return;
        }
        match out.last_mut() {
            Some((k, last)) if *k == kind && last.end == r.start => last.end = r.end,
            _ => out.push((kind, r)),
        }
    };
    let line_end = |i: usize| text[i..].find('\n').map_or(text.len(), |n| i + n);
    let statement =
        text.lines().find_map(crate::script::input::classify) == Some(crate::script::input::InputKind::Statement);
    let mut i = 0;
    let mut line_start = true;
    while i < b.len() {
        let c = b[i];
        if c == b'\n' {
            push(Kind::Plain, i..i + 1);
            i += 1;
            line_start = true;
            continue;
        }
        if c == b' ' || c == b'\t' || c == b'\r' {
            push(Kind::Plain, i..i + 1);
            i += 1;
            continue;
        }
        let at_line_start = std::mem::replace(&mut line_start, false);
        if at_line_start && c == b':' {
            let end = line_end(i);
            let word_end = text[i + 1..end].find(|ch: char| ch.is_whitespace()).map_or(end, |n| i + 1 + n);
            let known = command::find(&super::all_commands(), &text[i + 1..word_end]).is_some();
            push(if known { Kind::Command } else { Kind::UnknownCommand }, i..word_end);
            push(Kind::Plain, word_end..end);
            i = end;
            continue;
        }
        if at_line_start && c == b'#' {
            // A preprocessor line in CUDA source, otherwise a gridlab comment.
            let end = line_end(i);
            let word: String =
                text[i + 1..end].trim_start().chars().take_while(|ch| ch.is_ascii_alphanumeric()).collect();
            let pre =
                ["define", "include", "pragma", "if", "ifdef", "ifndef", "else", "elif", "endif", "undef", "error"];
            push(if pre.contains(&word.as_str()) { Kind::Preprocessor } else { Kind::Comment }, i..end);
            i = end;
            continue;
        }
        if c == b'#' && statement {
            // In a statement, `#` starts a comment anywhere on the line.
            let end = line_end(i);
            push(Kind::Comment, i..end);
            i = end;
            continue;
        }
        if b[i..].starts_with(b"//") {
            let end = line_end(i);
            push(Kind::Comment, i..end);
            i = end;
            continue;
        }
        if b[i..].starts_with(b"/*") {
            let end = text[i + 2..].find("*/").map_or(text.len(), |n| i + 2 + n + 2);
            push(Kind::Comment, i..end);
            // A comment running over lines ends on a fresh line only if it ended with one.
            i = end;
            continue;
        }
        if b[i..].starts_with(b"<<<") || b[i..].starts_with(b">>>") {
            push(Kind::Launch, i..i + 3);
            i += 3;
            continue;
        }
        if c == b'"' || c == b'\'' {
            let mut j = i + 1;
            while j < b.len() && b[j] != c && b[j] != b'\n' {
                j += if b[j] == b'\\' { 2 } else { 1 };
            }
            let end = (j + 1).min(b.len());
            push(Kind::String, i..end);
            i = end;
            continue;
        }
        if c.is_ascii_digit() || (c == b'.' && b.get(i + 1).is_some_and(u8::is_ascii_digit)) {
            let mut j = i + 1;
            while j < b.len() {
                let d = b[j];
                let exponent_sign =
                    (d == b'+' || d == b'-') && matches!(b[j - 1], b'e' | b'E') && !text[i..].starts_with("0x");
                if d.is_ascii_alphanumeric() || d == b'.' || d == b'_' || exponent_sign {
                    j += 1;
                } else {
                    break;
                }
            }
            push(Kind::Number, i..j);
            i = j;
            continue;
        }
        if c.is_ascii_alphabetic() || c == b'_' {
            let mut j = i + 1;
            while j < b.len() && (b[j].is_ascii_alphanumeric() || b[j] == b'_') {
                j += 1;
            }
            push(word_kind(&text[i..j], names), i..j);
            i = j;
            continue;
        }
        // Anything else (punctuation, non-ASCII): one character, plain.
        let len = text[i..].chars().next().map_or(1, char::len_utf8);
        push(Kind::Plain, i..i + len);
        i += len;
    }
    out
}

/// The colour of each kind.
pub fn style(kind: Kind) -> Style {
    match kind {
        Kind::Plain => Style::new(),
        Kind::Keyword => Color::Magenta.bold(),
        Kind::Type => Style::new().fg(Color::Yellow),
        Kind::Qualifier => Color::LightBlue.bold(),
        Kind::Builtin => Style::new().fg(Color::Cyan),
        Kind::Kernel => Style::new().bold(),
        Kind::Number => Style::new().fg(Color::LightMagenta),
        Kind::String => Style::new().fg(Color::Green),
        Kind::Comment => Style::new().fg(Color::DarkGray).italic(),
        Kind::Preprocessor => Style::new().fg(Color::Magenta),
        Kind::Launch => Color::Cyan.bold(),
        Kind::Command => Color::Green.bold(),
        Kind::UnknownCommand => Color::Red.bold(),
    }
}

/// reedline's highlighter: [`spans`] with the session's kernel names, in colour or not.
pub struct InputHighlighter {
    names: SharedNames,
    color: bool,
}

impl InputHighlighter {
    pub fn new(names: SharedNames, color: bool) -> InputHighlighter {
        InputHighlighter { names, color }
    }
}

impl Highlighter for InputHighlighter {
    fn highlight(&self, line: &str, _cursor: usize) -> StyledText {
        let mut styled = StyledText::new();
        if !self.color {
            styled.push((Style::new(), line.to_string()));
            return styled;
        }
        let names = self.names.lock().map(|n| n.clone()).unwrap_or_default();
        for (kind, r) in spans(line, &names) {
            styled.push((style(kind), line[r].to_string()));
        }
        styled
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The non-plain pieces, as (kind, text).
    fn marked<'a>(text: &'a str, names: &Names) -> Vec<(Kind, &'a str)> {
        let all = spans(text, names);
        let mut end = 0;
        for (_, r) in &all {
            assert_eq!(r.start, end, "spans are contiguous");
            end = r.end;
        }
        assert_eq!(end, text.len(), "spans cover the text");
        all.into_iter().filter(|(k, _)| *k != Kind::Plain).map(|(k, r)| (k, &text[r])).collect()
    }

    #[test]
    fn a_kernel_is_highlighted_as_cuda() {
        let text = "__global__ void add(float *a, int n) {\n  // one thread each\n  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) a[i] = 2.5f + \"s\"[0];\n  atomicAdd(&a[0], 1);\n}";
        let got = marked(text, &Names::default());
        use Kind::*;
        assert_eq!(
            got,
            vec![
                (Qualifier, "__global__"),
                (Type, "void"),
                (Type, "float"),
                (Type, "int"),
                (Comment, "// one thread each"),
                (Type, "int"),
                (Builtin, "blockIdx"),
                (Builtin, "blockDim"),
                (Builtin, "threadIdx"),
                (Keyword, "if"),
                (Number, "2.5f"),
                (String, "\"s\""),
                (Number, "0"),
                (Builtin, "atomicAdd"),
                (Number, "0"),
                (Number, "1"),
            ]
        );
    }

    #[test]
    fn statements_show_gridlab_words_and_known_kernels() {
        let names = Names { kernels: vec!["add".into()], ..Names::default() };
        use Kind::*;
        assert_eq!(
            marked("let a = arange(8, i32)", &names),
            vec![(Keyword, "let"), (Builtin, "arange"), (Number, "8"), (Type, "i32")]
        );
        assert_eq!(
            marked("add<<<(2, 1), 4>>>(a, 8)", &names),
            vec![
                (Kernel, "add"),
                (Launch, "<<<"),
                (Number, "2"),
                (Number, "1"),
                (Number, "4"),
                (Launch, ">>>"),
                (Number, "8")
            ]
        );
        assert_eq!(
            marked("expect sum(a) ~= 1e-3 # why", &names),
            vec![(Keyword, "expect"), (Builtin, "sum"), (Number, "1e-3"), (Comment, "# why")]
        );
    }

    #[test]
    fn commands_are_known_or_unknown() {
        use Kind::*;
        assert_eq!(marked(":help launch", &Names::default()), vec![(Command, ":help")]);
        assert_eq!(marked(":hlep", &Names::default()), vec![(UnknownCommand, ":hlep")]);
        assert_eq!(
            marked("#define N 4\n#note", &Names::default()),
            vec![(Preprocessor, "#define N 4"), (Comment, "#note")]
        );
    }

    #[test]
    fn colour_off_means_one_plain_piece() {
        let h = InputHighlighter::new(SharedNames::default(), false);
        let styled = h.highlight("let a = zeros(4)", 0);
        assert_eq!(styled.buffer, vec![(Style::new(), "let a = zeros(4)".to_string())]);
        let h = InputHighlighter::new(SharedNames::default(), true);
        let styled = h.highlight("let a = zeros(4)", 0);
        assert_eq!(styled.buffer[0], (style(Kind::Keyword), "let".to_string()));
    }
}
