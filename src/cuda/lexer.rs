//! The front end's first pass: turns a snippet into tokens. Preprocessor lines (`#define`,
//! `#if`, `#include`, `#pragma` ...) are read here, where line boundaries are still visible,
//! into [`Directive`] tokens; `preprocess.rs` then applies them and expands macros at token
//! level. The questions every later pass asks of a token (is it this punctuation, this word,
//! which word) are answered here once, on [`Tok`] and [`Token`]; of a position among tokens
//! (what is there or ahead, where a bracket closes), by `cursor.rs`.

use super::ast::Scalar;
use crate::diag::{Diagnostic, SourceId, Span};

#[derive(Clone, Debug, PartialEq)]
pub enum Tok {
    Ident(String),
    /// An integer literal with the type C gives it (after its suffix and magnitude).
    Int(u64, Scalar),
    /// A floating literal: `F32` with an `f` suffix, otherwise `F64`.
    Float(f64, Scalar),
    Char(u8),
    Str(String),
    Punct(&'static str),
    /// A preprocessor line, already interpreted.
    Directive(Directive),
}

#[derive(Clone, Debug, PartialEq)]
pub enum Directive {
    /// `#define NAME tokens` or `#define NAME(a, b) tokens`: the body is lexed but not yet
    /// expanded.
    Define {
        name: String,
        name_span: Span,
        params: Option<Vec<String>>,
        body: Vec<Token>,
    },
    /// `#undef NAME`.
    Undef(String),
    /// `#if EXPR` and `#elif EXPR`, with the expression's tokens.
    If(Vec<Token>),
    Elif(Vec<Token>),
    /// `#ifdef NAME` (`true`) and `#ifndef NAME` (`false`).
    IfDef(String, bool),
    Else,
    Endif,
    /// `#error text`: an error where it is not skipped.
    Error(String),
    /// `#include`, `#pragma`: accepted and ignored.
    Ignored,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Token {
    pub tok: Tok,
    pub span: Span,
}

impl Tok {
    /// Whether this is the punctuation `p`.
    pub fn is_punct(&self, p: &str) -> bool {
        matches!(self, Tok::Punct(q) if *q == p)
    }

    /// Whether this is the word `w` (a keyword or a name).
    pub fn is_word(&self, w: &str) -> bool {
        matches!(self, Tok::Ident(s) if s == w)
    }

    /// The word this is, if it is one.
    pub fn word(&self) -> Option<&str> {
        match self {
            Tok::Ident(s) => Some(s),
            _ => None,
        }
    }
}

impl Token {
    /// Whether this is the punctuation `p`.
    pub fn is_punct(&self, p: &str) -> bool {
        self.tok.is_punct(p)
    }

    /// Whether this is the word `w` (a keyword or a name).
    pub fn is_word(&self, w: &str) -> bool {
        self.tok.is_word(w)
    }

    /// The word this is, if it is one.
    pub fn word(&self) -> Option<&str> {
        self.tok.word()
    }
}

/// Longest first, so `<<=` wins over `<<` and `<`.
const PUNCTS: &[&str] = &[
    "<<=", ">>=", "...", "->", "++", "--", "<<", ">>", "<=", ">=", "==", "!=", "&&", "||", "+=", "-=", "*=", "/=",
    "%=", "&=", "|=", "^=", "::", "+", "-", "*", "/", "%", "<", ">", "=", "!", "~", "&", "|", "^", "?", ":", ";", ",",
    ".", "(", ")", "[", "]", "{", "}",
];

pub fn describe(tok: &Tok) -> String {
    match tok {
        Tok::Ident(s) => format!("`{s}`"),
        Tok::Int(..) | Tok::Float(..) => "a number".into(),
        Tok::Char(_) => "a character literal".into(),
        Tok::Str(_) => "a string literal".into(),
        Tok::Punct(p) => format!("`{p}`"),
        Tok::Directive(_) => "a preprocessor line".into(),
    }
}

struct Lexer<'a> {
    src: &'a [u8],
    text: &'a str,
    pos: usize,
    source: SourceId,
}

/// Lex a whole snippet. Stops at the first error: later errors in a garbled snippet are noise.
pub fn lex(source: SourceId, text: &str) -> Result<Vec<Token>, Diagnostic> {
    let mut lx = Lexer { src: text.as_bytes(), text, pos: 0, source };
    let mut out = Vec::new();
    let mut at_line_start = true;
    loop {
        let newline = lx.skip_space()?;
        at_line_start |= newline;
        if lx.pos >= lx.src.len() {
            return Ok(out);
        }
        if lx.src[lx.pos] == b'#' {
            if !at_line_start {
                return Err(lx.err(lx.pos, lx.pos + 1, "stray `#`").help("preprocessor lines start with `#`"));
            }
            out.push(lx.directive()?);
            at_line_start = true;
            continue;
        }
        at_line_start = false;
        out.push(lx.token()?);
    }
}

/// Why gridlab refuses an `#include` (given what follows the word), or `None` for a header of
/// CUDA's or C's (`<cuda_fp16.h>`, `<cstdio>`), which resolve in CUDA's include folder only. A
/// quoted name, an absolute path or `..` would make the GPU's compiler read a file of the
/// learner's machine (and show it in its errors): a course must never reach those.
pub fn include_refusal(rest: &str) -> Option<&'static str> {
    let rest = rest.split("//").next().unwrap_or("").trim();
    if rest.starts_with('"') {
        return Some("a quoted name is a file of yours, and gridlab reads no files");
    }
    let Some(name) = rest.strip_prefix('<').and_then(|r| r.strip_suffix('>')) else {
        return Some("write a header's name as `<name.h>`");
    };
    let name = name.trim();
    if name.is_empty() || name.starts_with('/') || name.contains("..") || name.contains('\\') || name.contains(':') {
        return Some("only CUDA's and C's own headers may be included, by name");
    }
    None
}

impl Lexer<'_> {
    fn span(&self, lo: usize, hi: usize) -> Span {
        Span::new(self.source, lo, hi)
    }

    fn err(&self, lo: usize, hi: usize, msg: impl Into<String>) -> Diagnostic {
        Diagnostic::error(msg).at(self.span(lo, hi))
    }

    fn peek(&self, ahead: usize) -> u8 {
        self.src.get(self.pos + ahead).copied().unwrap_or(0)
    }

    /// Skip blanks and comments; true when a newline was crossed. A backslash-newline is a
    /// blank (line continuation).
    fn skip_space(&mut self) -> Result<bool, Diagnostic> {
        let mut newline = false;
        while self.pos < self.src.len() {
            match (self.peek(0), self.peek(1)) {
                (b'\n', _) => {
                    newline = true;
                    self.pos += 1;
                }
                (b' ' | b'\t' | b'\r' | 0x0c | 0x0b, _) => self.pos += 1,
                (b'\\', b'\n') => self.pos += 2,
                (b'\\', b'\r') if self.peek(2) == b'\n' => self.pos += 3,
                (b'/', b'/') => {
                    while self.pos < self.src.len() && self.src[self.pos] != b'\n' {
                        self.pos += 1;
                    }
                }
                (b'/', b'*') => {
                    let start = self.pos;
                    match self.text[self.pos + 2..].find("*/") {
                        Some(end) => {
                            newline |= self.text[self.pos..self.pos + 2 + end].contains('\n');
                            self.pos += 2 + end + 2;
                        }
                        None => {
                            return Err(self
                                .err(start, start + 2, "unterminated comment")
                                .label("this `/*` is never closed")
                                .help("close the comment with `*/`"));
                        }
                    }
                }
                _ => break,
            }
        }
        Ok(newline)
    }

    /// Skip blanks and comments within one preprocessor line; true at its end.
    fn skip_line_space(&mut self) -> Result<bool, Diagnostic> {
        loop {
            match (self.peek(0), self.peek(1)) {
                (b' ' | b'\t' | b'\r' | 0x0b | 0x0c, _) => self.pos += 1,
                (b'\\', b'\n') => self.pos += 2,
                (b'\\', b'\r') if self.peek(2) == b'\n' => self.pos += 3,
                (b'/', b'/') => {
                    while self.pos < self.src.len() && self.src[self.pos] != b'\n' {
                        self.pos += 1;
                    }
                }
                (b'/', b'*') => match self.text[self.pos + 2..].find("*/") {
                    Some(end) => self.pos += 2 + end + 2,
                    None => {
                        return Err(self
                            .err(self.pos, self.pos + 2, "unterminated comment")
                            .label("this `/*` is never closed")
                            .help("close the comment with `*/`"));
                    }
                },
                _ => break,
            }
        }
        Ok(self.pos >= self.src.len() || self.src[self.pos] == b'\n')
    }

    fn directive(&mut self) -> Result<Token, Diagnostic> {
        let start = self.pos;
        self.pos += 1;
        self.skip_line_space()?;
        let name_lo = self.pos;
        while self.peek(0).is_ascii_alphanumeric() || self.peek(0) == b'_' {
            self.pos += 1;
        }
        let word = self.text[name_lo..self.pos].to_string();
        match word.as_str() {
            "include" => {
                let rest_lo = self.pos;
                self.skip_rest_of_line();
                let rest = self.text[rest_lo..self.pos].trim();
                if let Some(why) = include_refusal(rest) {
                    return Err(Diagnostic::error(format!("`#include {rest}` is refused: {why}"))
                        .at(self.span(start, self.pos))
                        .label("gridlab reads no files")
                        .help("paste the code you need into the prompt; CUDA's own headers (`#include <cuda_fp16.h>`) are fine"));
                }
                // CUDA's and C's headers: what they declare, the simulator knows; the GPU's
                // compiler reads them from CUDA's include folder.
                Ok(Token { tok: Tok::Directive(Directive::Ignored), span: self.span(start, self.pos) })
            }
            "pragma" => {
                self.skip_rest_of_line();
                Ok(Token { tok: Tok::Directive(Directive::Ignored), span: self.span(start, self.pos) })
            }
            "define" => self.define(start),
            "undef" | "ifdef" | "ifndef" => {
                self.skip_line_space()?;
                let name = match self.token()? {
                    Token { tok: Tok::Ident(name), .. } => name,
                    t => {
                        return Err(Diagnostic::error(format!("`#{word}` needs a macro name"))
                            .at(t.span)
                            .help(format!("write `#{word} NAME`")));
                    }
                };
                self.skip_rest_of_line();
                let d = match word.as_str() {
                    "undef" => Directive::Undef(name),
                    w => Directive::IfDef(name, w == "ifdef"),
                };
                Ok(Token { tok: Tok::Directive(d), span: self.span(start, self.pos) })
            }
            "if" | "elif" => {
                let mut cond = Vec::new();
                while !self.skip_line_space()? {
                    cond.push(self.token()?);
                }
                if cond.is_empty() {
                    return Err(self.err(start, self.pos, format!("`#{word}` needs a condition")).help("e.g. `#if BLOCK >= 64`"));
                }
                let d = if word == "if" { Directive::If(cond) } else { Directive::Elif(cond) };
                Ok(Token { tok: Tok::Directive(d), span: self.span(start, self.pos) })
            }
            "else" | "endif" => {
                self.skip_rest_of_line();
                let d = if word == "else" { Directive::Else } else { Directive::Endif };
                Ok(Token { tok: Tok::Directive(d), span: self.span(start, self.pos) })
            }
            "error" => {
                let lo = self.pos;
                self.skip_rest_of_line();
                let text = self.text[lo..self.pos].trim().to_string();
                Ok(Token { tok: Tok::Directive(Directive::Error(text)), span: self.span(start, self.pos) })
            }
            "" => {
                self.skip_rest_of_line();
                Ok(Token { tok: Tok::Directive(Directive::Ignored), span: self.span(start, self.pos) })
            }
            _ => Err(self
                .err(start, self.pos, format!("`#{word}` is not supported by the simulator"))
                .label("unsupported preprocessor line")
                .help("the simulator takes `#define`, `#undef`, `#if`/`#ifdef`/`#ifndef`/`#elif`/`#else`/`#endif`, `#error`, `#include` and `#pragma`")
                .outside_subset(format!("`#{word}`"))),
        }
    }

    fn skip_rest_of_line(&mut self) {
        while self.pos < self.src.len() && self.src[self.pos] != b'\n' {
            if self.peek(0) == b'\\' && self.peek(1) == b'\n' {
                self.pos += 1;
            }
            self.pos += 1;
        }
    }

    fn define(&mut self, start: usize) -> Result<Token, Diagnostic> {
        if self.skip_line_space()? {
            return Err(self
                .err(start, self.pos, "`#define` needs a name")
                .help("write `#define NAME value`, e.g. `#define BLOCK 256`"));
        }
        let name_lo = self.pos;
        let name = match self.token()? {
            Token { tok: Tok::Ident(name), .. } => name,
            t => {
                return Err(Diagnostic::error(format!("expected a macro name, found {}", describe(&t.tok)))
                    .at(t.span)
                    .help("write `#define NAME value`, e.g. `#define BLOCK 256`"));
            }
        };
        let name_span = self.span(name_lo, self.pos);
        // `NAME(` with no space is a function-like macro; `NAME (` is an object-like one.
        let params = if self.peek(0) == b'(' {
            self.pos += 1;
            let mut params = Vec::new();
            loop {
                self.skip_line_space()?;
                let t = self.token()?;
                match &t.tok {
                    Tok::Punct(")") if params.is_empty() => break,
                    Tok::Ident(p) => params.push(p.clone()),
                    Tok::Punct("...") => {
                        return Err(Diagnostic::error("variadic macros are not supported by the simulator")
                            .at(t.span)
                            .help("give the macro a fixed number of parameters")
                            .outside_subset("variadic macros"));
                    }
                    other => {
                        return Err(Diagnostic::error(format!("expected a parameter name, found {}", describe(other)))
                            .at(t.span)
                            .help("write `#define NAME(a, b) body`"));
                    }
                }
                self.skip_line_space()?;
                match self.token()?.tok {
                    Tok::Punct(",") => {}
                    Tok::Punct(")") => break,
                    other => {
                        return Err(self
                            .err(name_lo, self.pos, format!("expected `,` or `)`, found {}", describe(&other)))
                            .help("write `#define NAME(a, b) body`"));
                    }
                }
            }
            Some(params)
        } else {
            None
        };
        let mut body = Vec::new();
        while !self.skip_line_space()? {
            body.push(self.token()?);
        }
        Ok(Token {
            tok: Tok::Directive(Directive::Define { name, name_span, params, body }),
            span: self.span(start, self.pos),
        })
    }

    fn token(&mut self) -> Result<Token, Diagnostic> {
        let lo = self.pos;
        let c = self.peek(0);
        let tok = if c.is_ascii_alphabetic() || c == b'_' {
            while self.peek(0).is_ascii_alphanumeric() || self.peek(0) == b'_' {
                self.pos += 1;
            }
            Tok::Ident(self.text[lo..self.pos].to_string())
        } else if c.is_ascii_digit() || (c == b'.' && self.peek(1).is_ascii_digit()) {
            self.number()?
        } else if c == b'\'' {
            self.char_lit()?
        } else if c == b'"' {
            self.string_lit()?
        } else if let Some(p) = PUNCTS.iter().find(|p| self.src[self.pos..].starts_with(p.as_bytes())) {
            self.pos += p.len();
            Tok::Punct(p)
        } else {
            let ch = self.text[lo..].chars().next().unwrap_or('?');
            return Err(self
                .err(lo, lo + ch.len_utf8(), format!("unexpected character `{}`", ch.escape_default()))
                .label("not part of CUDA C")
                .help("remove it; CUDA C code is plain ASCII outside strings and comments"));
        };
        Ok(Token { tok, span: self.span(lo, self.pos) })
    }

    fn number(&mut self) -> Result<Tok, Diagnostic> {
        let lo = self.pos;
        // Take the longest run that can belong to a number (a pp-number), then interpret it.
        while self.pos < self.src.len() {
            let c = self.peek(0);
            if (c == b'+' || c == b'-') && matches!(self.src[self.pos - 1], b'e' | b'E' | b'p' | b'P') {
                let is_hex = self.text[lo..].starts_with("0x") || self.text[lo..].starts_with("0X");
                let exp_letter = self.src[self.pos - 1].to_ascii_lowercase();
                if (exp_letter == b'e' && !is_hex) || exp_letter == b'p' {
                    self.pos += 1;
                    continue;
                }
                break;
            }
            if c.is_ascii_alphanumeric() || c == b'.' || c == b'_' {
                self.pos += 1;
            } else {
                break;
            }
        }
        let text = &self.text[lo..self.pos];
        let bad = |this: &Self, what: &str| {
            this.err(lo, this.pos, format!("invalid number `{text}`"))
                .label(what.to_string())
                .help("write integers like `42`, `0xff`, `10u`, and floats like `0.5f`, `1e-6`")
        };
        let lower = text.to_ascii_lowercase();
        let is_hex = lower.starts_with("0x");
        let is_float = !is_hex && (lower.contains('.') || lower.contains('e'));
        if is_float {
            let (digits, ty) = match lower.strip_suffix('f') {
                Some(d) => (d, Scalar::F32),
                None => (lower.strip_suffix('l').unwrap_or(&lower), Scalar::F64),
            };
            return match digits.parse::<f64>() {
                Ok(v) if !digits.contains(|c: char| c.is_ascii_alphabetic() && c != 'e') => Ok(Tok::Float(v, ty)),
                _ => Err(bad(self, "not a valid floating-point literal")),
            };
        }
        let suffix_at = if is_hex {
            2 + lower[2..].find(|c: char| !c.is_ascii_hexdigit()).unwrap_or(lower.len() - 2)
        } else {
            lower.find(|c: char| !c.is_ascii_digit()).unwrap_or(lower.len())
        };
        let (digits, suffix) = lower.split_at(suffix_at);
        let (unsigned, long) = match suffix {
            "" => (false, false),
            "u" => (true, false),
            "l" | "ll" => (false, true),
            "ul" | "ull" | "lu" | "llu" => (true, true),
            "f" if !is_hex => return Err(bad(self, "an integer cannot have an `f` suffix; write `1.0f`")),
            _ => return Err(bad(self, "unknown suffix")),
        };
        let (radix, body) = if is_hex {
            (16, &digits[2..])
        } else if digits.len() > 1 && digits.starts_with('0') {
            (8, &digits[1..])
        } else {
            (10, digits)
        };
        if body.is_empty() {
            return Err(bad(self, "no digits"));
        }
        let value = u64::from_str_radix(body, radix).map_err(|_| {
            if radix == 8 && body.contains(['8', '9']) {
                bad(self, "a leading 0 makes an octal number, which has no digits 8 or 9")
            } else {
                bad(self, "too large for any integer type")
            }
        })?;
        Ok(Tok::Int(value, literal_type(value, radix == 10, unsigned, long)))
    }

    fn char_lit(&mut self) -> Result<Tok, Diagnostic> {
        let lo = self.pos;
        self.pos += 1;
        let value = self.escaped_char(lo)?;
        if self.peek(0) != b'\'' {
            return Err(self
                .err(lo, self.pos, "unterminated character literal")
                .help("a character literal holds one character, like 'a' or '\\n'"));
        }
        self.pos += 1;
        Ok(Tok::Char(value))
    }

    fn string_lit(&mut self) -> Result<Tok, Diagnostic> {
        let lo = self.pos;
        self.pos += 1;
        let mut bytes = Vec::new();
        loop {
            match self.peek(0) {
                b'"' => {
                    self.pos += 1;
                    return Ok(Tok::Str(String::from_utf8_lossy(&bytes).into_owned()));
                }
                0 | b'\n' if self.pos >= self.src.len() || self.peek(0) == b'\n' => {
                    return Err(self
                        .err(lo, self.pos, "unterminated string literal")
                        .help("close the string with `\"` on the same line"));
                }
                _ => bytes.push(self.escaped_char(lo)?),
            }
        }
    }

    fn escaped_char(&mut self, lo: usize) -> Result<u8, Diagnostic> {
        let c = self.peek(0);
        if self.pos >= self.src.len() || c == b'\n' {
            return Err(self.err(lo, self.pos, "unterminated literal").help("close the literal on the same line"));
        }
        self.pos += 1;
        if c != b'\\' {
            return Ok(c);
        }
        let e = self.peek(0);
        self.pos += 1;
        Ok(match e {
            b'n' => b'\n',
            b't' => b'\t',
            b'r' => b'\r',
            b'0' => 0,
            b'a' => 7,
            b'b' => 8,
            b'f' => 12,
            b'v' => 11,
            b'\\' | b'\'' | b'"' | b'?' => e,
            _ => {
                return Err(self
                    .err(self.pos - 2, self.pos.min(self.src.len()), "unknown escape sequence")
                    .help("use one of \\n \\t \\r \\0 \\\\ \\' \\\""));
            }
        })
    }
}

/// C's rule for the type of an integer literal: the first of a list of types that can hold it.
fn literal_type(value: u64, decimal: bool, unsigned: bool, long: bool) -> Scalar {
    let fits_i32 = value <= i32::MAX as u64;
    let fits_u32 = value <= u32::MAX as u64;
    let fits_i64 = value <= i64::MAX as u64;
    match (unsigned, long) {
        (false, false) if fits_i32 => Scalar::I32,
        (false, false) if !decimal && fits_u32 => Scalar::U32,
        (false, _) if fits_i64 => Scalar::I64,
        (true, false) if fits_u32 => Scalar::U32,
        _ => Scalar::U64,
    }
}
