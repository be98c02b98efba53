//! Tokens of the session language. `#` starts a comment that runs to the end of the line.
//! Strings (`"Hello"`) exist for `expect printed` alone.
//!
//! Numbers may carry C's suffixes, as in host code pasted from a CUDA program: `2.5f`, `1.f`,
//! `1e-3F`, `256u`, `1ull`, `10L`. They are read and dropped: a number takes the dtype of the
//! array it meets (see `eval`), so `f` changes nothing but a `u` never makes a float.

use crate::diag::{Diagnostic, SourceId, Span};

#[derive(Clone, Debug, PartialEq)]
pub enum Tok {
    Int(i128),
    Float(f64),
    Ident(String),
    /// Operators and punctuation, longest match first (`<<<` before `<<` before `<`).
    Punct(&'static str),
    /// `"text"`, with C's escapes `\"`, `\\`, `\n` and `\t` read. Only `expect printed` takes one;
    /// anywhere else the parser says so.
    Str(String),
}

#[derive(Clone, Debug, PartialEq)]
pub struct Token {
    pub tok: Tok,
    pub span: Span,
}

const PUNCTS: [&str; 39] = [
    "<<<", ">>>", "**", "//", "<<", ">>", "<=", ">=", "==", "!=", "~=", "&&", "||", "+=", "-=", "*=", "/=", "+", "-",
    "*", "/", "%", "&", "|", "^", "~", "!", "<", ">", "=", "(", ")", "[", "]", "{", "}", ",", ":", ";",
];

pub fn lex(source: SourceId, text: &str) -> Result<Vec<Token>, Diagnostic> {
    let bytes = text.as_bytes();
    // About a token per three bytes in a launch's line: room made once, not grown step by step.
    let mut toks = Vec::with_capacity(text.len() / 3 + 1);
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        if c == b'#' {
            while i < bytes.len() && bytes[i] != b'\n' {
                i += 1;
            }
            continue;
        }
        let start = i;
        if c.is_ascii_digit() || (c == b'.' && bytes.get(i + 1).is_some_and(u8::is_ascii_digit)) {
            let (tok, end) = number(source, text, i)?;
            toks.push(Token { tok, span: Span::new(source, start, end) });
            i = end;
            continue;
        }
        if c.is_ascii_alphabetic() || c == b'_' {
            let word = |i: &mut usize| {
                while *i < bytes.len() && (bytes[*i].is_ascii_alphanumeric() || bytes[*i] == b'_') {
                    *i += 1;
                }
            };
            word(&mut i);
            // A record's field, `c.time_us`, is one name: the language has no methods, so a dot
            // between two names can mean nothing else.
            if bytes.get(i) == Some(&b'.') && bytes.get(i + 1).is_some_and(|b| b.is_ascii_alphabetic() || *b == b'_') {
                i += 1;
                word(&mut i);
            }
            toks.push(Token { tok: Tok::Ident(text[start..i].to_string()), span: Span::new(source, start, i) });
            continue;
        }
        if c == b'"' || c == b'\'' {
            let (s, end) = string(source, text, i)?;
            toks.push(Token { tok: Tok::Str(s), span: Span::new(source, start, end) });
            i = end;
            continue;
        }
        // The first byte rules out most operators before any comparison of the rest: a launch's
        // line has a dozen of them, and each input at the prompt is lexed anew.
        if let Some(p) = PUNCTS.iter().find(|p| p.as_bytes()[0] == c && bytes[i..].starts_with(p.as_bytes())) {
            i += p.len();
            toks.push(Token { tok: Tok::Punct(p), span: Span::new(source, start, i) });
            continue;
        }
        let ch = text[i..].chars().next().unwrap_or('?');
        let mut d = Diagnostic::error(format!("unexpected character `{ch}`"))
            .at(Span::new(source, i, i + ch.len_utf8()))
            .label("not part of the session language");
        d = match ch {
            '\'' => {
                d.help("text goes in double quotes, as in `expect printed \"Hello\"`; names and numbers need no quotes")
            }
            '.' => d.help("there are no methods here: write `len(a)`, not `a.len()`"),
            _ => d.help(
                "statements are `let NAME = EXPR`, launches `k<<<grid, block>>>(args)`, `expect COND` or an expression",
            ),
        };
        return Err(d);
    }
    Ok(toks)
}

/// A string from the `"` at `start`: its text with escapes read, and where it ends.
fn string(source: SourceId, text: &str, start: usize) -> Result<(String, usize), Diagnostic> {
    let mut out = String::new();
    // Python's single quotes close only their own kind, as double quotes do.
    let quote = text[start..].chars().next().unwrap_or('"');
    let mut chars = text[start + 1..].char_indices();
    while let Some((k, ch)) = chars.next() {
        let at = start + 1 + k;
        match ch {
            c if c == quote => return Ok((out, at + 1)),
            '\\' => match chars.next() {
                Some((_, 'n')) => out.push('\n'),
                Some((_, 't')) => out.push('\t'),
                Some((_, c @ ('"' | '\'' | '\\'))) => out.push(c),
                Some((j, c)) => {
                    let end = start + 1 + j + c.len_utf8();
                    return Err(Diagnostic::error(format!("unknown escape `\\{c}` in a string"))
                        .at(Span::new(source, at, end))
                        .help("the escapes are `\\n`, `\\t`, `\\\"` and `\\\\`"));
                }
                None => break,
            },
            '\n' => break,
            c => out.push(c),
        }
    }
    let end = text[start..].find('\n').map_or(text.len(), |k| start + k);
    Err(Diagnostic::error("this string has no closing `\"`")
        .at(Span::new(source, start, end))
        .help("end the text with `\"` on the same line"))
}

/// C's literal suffixes: `f`, `F`, `l`, `L` on a float; `u`, `l`, `ll` in either case and
/// order (`ul`, `ull`, `lu`, `llu`) on an integer.
fn c_suffix(suffix: &str, is_float: bool) -> bool {
    let s = suffix.to_ascii_lowercase();
    if is_float {
        return s == "f" || s == "l";
    }
    matches!(s.as_str(), "u" | "l" | "ll" | "ul" | "lu" | "ull" | "llu")
}

/// Lex a number starting at `start`: decimal, `0x`, `0b`, `0o` integers with `_` separators, or a
/// float (`0.5`, `.5`, `2.`, `1e-6`).
fn number(source: SourceId, text: &str, start: usize) -> Result<(Tok, usize), Diagnostic> {
    let bytes = text.as_bytes();
    let word_end = |mut j: usize| {
        while j < bytes.len() && (bytes[j].is_ascii_alphanumeric() || bytes[j] == b'_') {
            j += 1;
        }
        j
    };
    let radix = match (bytes[start], bytes.get(start + 1)) {
        (b'0', Some(b'x' | b'X')) => Some(16),
        (b'0', Some(b'b' | b'B')) => Some(2),
        (b'0', Some(b'o' | b'O')) => Some(8),
        _ => None,
    };
    if let Some(radix) = radix {
        let end = word_end(start + 2);
        // `u` and `l` are never digits in these bases: C's suffixes (`0xffu`).
        let body = text[start + 2..end].trim_end_matches(['u', 'U', 'l', 'L']);
        let body = if c_suffix(&text[start + 2 + body.len()..end], false) { body } else { &text[start + 2..end] };
        let digits: String = body.chars().filter(|&c| c != '_').collect();
        return match i128::from_str_radix(&digits, radix) {
            Ok(v) if !digits.starts_with(['+', '-']) => Ok((Tok::Int(v), end)),
            _ => Err(Diagnostic::error(format!("invalid base-{radix} integer `{}`", &text[start..end]))
                .at(Span::new(source, start, end))
                .help(match radix {
                    16 => "hexadecimal digits are 0-9 and a-f, e.g. `0xff`",
                    2 => "binary digits are 0 and 1, e.g. `0b1010`",
                    _ => "octal digits are 0-7, e.g. `0o17`",
                })),
        };
    }
    let mut j = start;
    let digits = |j: &mut usize| {
        while *j < bytes.len() && (bytes[*j].is_ascii_digit() || bytes[*j] == b'_') {
            *j += 1;
        }
    };
    digits(&mut j);
    let mut is_float = false;
    // `2.` is a float, but not when a name follows: nothing in the language has methods, so
    // `2.x` is reported below as a bad suffix.
    if j < bytes.len() && bytes[j] == b'.' {
        is_float = true;
        j += 1;
        digits(&mut j);
    }
    if j < bytes.len() && (bytes[j] == b'e' || bytes[j] == b'E') {
        let mut k = j + 1;
        if k < bytes.len() && (bytes[k] == b'+' || bytes[k] == b'-') {
            k += 1;
        }
        if k < bytes.len() && bytes[k].is_ascii_digit() {
            is_float = true;
            j = k;
            digits(&mut j);
        }
    }
    let end = word_end(j);
    if end > j && !c_suffix(&text[j..end], is_float) {
        let suffix = &text[j..end];
        let help = if !is_float && suffix.eq_ignore_ascii_case("f") {
            format!("a float needs a point in C too: `{}.0f` or `{}.0`", &text[start..j], &text[start..j])
        } else {
            "put an operator or a space between a number and a name".to_string()
        };
        return Err(Diagnostic::error(format!("invalid suffix `{suffix}` on a number"))
            .at(Span::new(source, j, end))
            .help(help));
    }
    // Separators (`1_000_000`) are dropped; a number without them is read where it stands.
    let written = &text[start..j];
    let lit: std::borrow::Cow<str> = if written.contains('_') {
        written.chars().filter(|&c| c != '_').collect::<String>().into()
    } else {
        written.into()
    };
    let err = || {
        Diagnostic::error(format!("invalid number `{}`", &text[start..end]))
            .at(Span::new(source, start, end))
            .help("integers must fit in 128 bits; floats look like `0.5`, `.5`, `2.` or `1e-6`")
    };
    if is_float {
        lit.parse::<f64>().map(|f| (Tok::Float(f), end)).map_err(|_| err())
    } else {
        lit.parse::<i128>().map(|v| (Tok::Int(v), end)).map_err(|_| err())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(text: &str) -> Vec<Tok> {
        lex(0, text).unwrap().into_iter().map(|t| t.tok).collect()
    }

    #[test]
    fn operators_take_the_longest_match_and_numbers_drop_their_separators() {
        assert_eq!(
            toks("k<<<(n + 255) // 256, 1_024>>>(a, n)"),
            vec![
                Tok::Ident("k".into()),
                Tok::Punct("<<<"),
                Tok::Punct("("),
                Tok::Ident("n".into()),
                Tok::Punct("+"),
                Tok::Int(255),
                Tok::Punct(")"),
                Tok::Punct("//"),
                Tok::Int(256),
                Tok::Punct(","),
                Tok::Int(1024),
                Tok::Punct(">>>"),
                Tok::Punct("("),
                Tok::Ident("a".into()),
                Tok::Punct(","),
                Tok::Ident("n".into()),
                Tok::Punct(")"),
            ]
        );
        assert_eq!(
            toks("a<<=b ~= c"),
            vec![
                Tok::Ident("a".into()),
                Tok::Punct("<<"),
                Tok::Punct("="),
                Tok::Ident("b".into()),
                Tok::Punct("~="),
                Tok::Ident("c".into()),
            ]
        );
        assert_eq!(toks("1_000.5 2e1_0"), vec![Tok::Float(1000.5), Tok::Float(2e10)]);
    }
}
