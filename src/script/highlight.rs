//! What each piece of typed text is: CUDA C (keywords, types, qualifiers, built-ins, numbers,
//! strings, comments), gridlab statements (`let`, `expect`, `<<< >>>`, constructors, dtypes) and
//! `:` commands (known ones or not). The REPL colours the line being typed with it
//! (`repl/highlighter.rs`), and lessons colour their code blocks with it (`render/markdown.rs`);
//! the colours themselves are `render::Style::token`, one layer up.
//!
//! The scanner is deliberately forgiving: the text is usually half-typed, so it never fails and
//! never needs the real lexers. Built-in names come from the checker's own tables
//! (`cuda::check::builtin_names`) and the statement language's (`script::builtins`), so what is
//! accepted is what is coloured.

use std::ops::Range;

use crate::dtype::DType;

/// What a piece of the input is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Token {
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

/// What the classifier cannot know by itself: the session's kernels and the `:` commands (both
/// live in layers above).
pub struct Known<'a> {
    pub is_kernel: &'a dyn Fn(&str) -> bool,
    pub is_command: &'a dyn Fn(&str) -> bool,
}

impl Known<'_> {
    /// No kernels and no commands known.
    pub const NOTHING: Known<'static> = Known { is_kernel: &|_| false, is_command: &|_| false };
}

pub const C_KEYWORDS: &[&str] = &[
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

pub const C_TYPES: &[&str] = &[
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

pub const QUALIFIERS: &[&str] = &[
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
pub const GRIDLAB_KEYWORDS: &[&str] = &["let", "expect", "clean", "finding", "cost"];

fn word_kind(word: &str, known: &Known<'_>) -> Token {
    if QUALIFIERS.contains(&word) {
        Token::Qualifier
    } else if C_KEYWORDS.contains(&word) || GRIDLAB_KEYWORDS.contains(&word) {
        Token::Keyword
    } else if C_TYPES.contains(&word) || DType::parse(word).is_some_and(|d| d.name() == word) {
        Token::Type
    } else if (known.is_kernel)(word) {
        Token::Kernel
    } else if crate::cuda::check::builtin_names().any(|b| b == word) || crate::script::builtins::find(word).is_some() {
        Token::Builtin
    } else {
        Token::Plain
    }
}

/// Split `text` into consecutive pieces covering all of it, each with what it is.
pub fn spans(text: &str, known: &Known<'_>) -> Vec<(Token, Range<usize>)> {
    let b = text.as_bytes();
    let mut out: Vec<(Token, Range<usize>)> = Vec::new();
    let mut push = |kind: Token, r: Range<usize>| {
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
            push(Token::Plain, i..i + 1);
            i += 1;
            line_start = true;
            continue;
        }
        if c == b' ' || c == b'\t' || c == b'\r' {
            push(Token::Plain, i..i + 1);
            i += 1;
            continue;
        }
        let at_line_start = std::mem::replace(&mut line_start, false);
        if at_line_start && c == b':' {
            let end = line_end(i);
            let word_end = text[i + 1..end].find(|ch: char| ch.is_whitespace()).map_or(end, |n| i + 1 + n);
            let is_command = (known.is_command)(&text[i + 1..word_end]);
            push(if is_command { Token::Command } else { Token::UnknownCommand }, i..word_end);
            push(Token::Plain, word_end..end);
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
            push(if pre.contains(&word.as_str()) { Token::Preprocessor } else { Token::Comment }, i..end);
            i = end;
            continue;
        }
        if c == b'#' && statement {
            // In a statement, `#` starts a comment anywhere on the line.
            let end = line_end(i);
            push(Token::Comment, i..end);
            i = end;
            continue;
        }
        if b[i..].starts_with(b"//") {
            let end = line_end(i);
            push(Token::Comment, i..end);
            i = end;
            continue;
        }
        if b[i..].starts_with(b"/*") {
            let end = text[i + 2..].find("*/").map_or(text.len(), |n| i + 2 + n + 2);
            push(Token::Comment, i..end);
            // A comment running over lines ends on a fresh line only if it ended with one.
            i = end;
            continue;
        }
        if b[i..].starts_with(b"<<<") || b[i..].starts_with(b">>>") {
            push(Token::Launch, i..i + 3);
            i += 3;
            continue;
        }
        if c == b'"' || c == b'\'' {
            let mut j = i + 1;
            while j < b.len() && b[j] != c && b[j] != b'\n' {
                j += if b[j] == b'\\' { 2 } else { 1 };
            }
            let end = (j + 1).min(b.len());
            push(Token::String, i..end);
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
            push(Token::Number, i..j);
            i = j;
            continue;
        }
        if c.is_ascii_alphabetic() || c == b'_' {
            let mut j = i + 1;
            while j < b.len() && (b[j].is_ascii_alphanumeric() || b[j] == b'_') {
                j += 1;
            }
            push(word_kind(&text[i..j], known), i..j);
            i = j;
            continue;
        }
        // Anything else (punctuation, non-ASCII): one character, plain.
        let len = text[i..].chars().next().map_or(1, char::len_utf8);
        push(Token::Plain, i..i + len);
        i += len;
    }
    out
}
