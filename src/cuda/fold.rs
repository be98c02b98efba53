//! Folding a constant integer expression written as tokens, before there is a tree: an `#if`
//! condition (`preprocess.rs`) and a template's value argument (`template.rs`, so `256` and
//! `2 * 128` name one instance). Expressions in parsed code are folded by `check/consteval.rs`.

use super::cursor::Cursor;
use super::lexer::{Tok, Token};

/// Fold a constant integer expression: numbers, `true`/`false`, parentheses, unary `-`/`+`/`~`/`!`
/// and the binary arithmetic, shift, bitwise and comparison operators.
pub fn fold(tokens: &[Token]) -> Option<i128> {
    let mut cur = Cursor::at(tokens, 0);
    let v = fold_bin(&mut cur, 0, 0)?;
    cur.done().then_some(v)
}

fn prec(p: &str) -> Option<usize> {
    Some(match p {
        "||" => 1,
        "&&" => 2,
        "|" => 3,
        "^" => 4,
        "&" => 5,
        "==" | "!=" => 6,
        "<" | "<=" | ">" | ">=" => 7,
        "<<" | ">>" => 8,
        "+" | "-" => 9,
        "*" | "/" | "%" => 10,
        _ => return None,
    })
}

fn fold_bin(cur: &mut Cursor<'_>, min: usize, depth: usize) -> Option<i128> {
    if depth > 64 {
        return None;
    }
    let mut lhs = fold_un(cur, depth + 1)?;
    while let Some(Tok::Punct(p)) = cur.peek() {
        let Some(pr) = prec(p).filter(|&pr| pr > min) else { break };
        cur.advance(1);
        let rhs = fold_bin(cur, pr, depth + 1)?;
        lhs = match *p {
            "+" => lhs.checked_add(rhs)?,
            "-" => lhs.checked_sub(rhs)?,
            "*" => lhs.checked_mul(rhs)?,
            "/" => lhs.checked_div(rhs)?,
            "%" => lhs.checked_rem(rhs)?,
            "<<" => lhs.checked_shl(u32::try_from(rhs).ok().filter(|&s| s < 64)?)?,
            ">>" => lhs.checked_shr(u32::try_from(rhs).ok().filter(|&s| s < 64)?)?,
            "&" => lhs & rhs,
            "|" => lhs | rhs,
            "^" => lhs ^ rhs,
            "&&" => (lhs != 0 && rhs != 0) as i128,
            "||" => (lhs != 0 || rhs != 0) as i128,
            "==" => (lhs == rhs) as i128,
            "!=" => (lhs != rhs) as i128,
            "<" => (lhs < rhs) as i128,
            "<=" => (lhs <= rhs) as i128,
            ">" => (lhs > rhs) as i128,
            ">=" => (lhs >= rhs) as i128,
            _ => return None,
        };
        if lhs.unsigned_abs() > u64::MAX as u128 {
            return None;
        }
    }
    Some(lhs)
}

fn fold_un(cur: &mut Cursor<'_>, depth: usize) -> Option<i128> {
    if depth > 64 {
        return None;
    }
    let tok = cur.peek()?;
    cur.advance(1);
    match tok {
        Tok::Int(v, _) => Some(*v as i128),
        Tok::Char(c) => Some(*c as i128),
        Tok::Ident(w) if w == "true" => Some(1),
        Tok::Ident(w) if w == "false" => Some(0),
        Tok::Punct("-") => fold_un(cur, depth + 1)?.checked_neg(),
        Tok::Punct("+") => fold_un(cur, depth + 1),
        Tok::Punct("~") => Some(!fold_un(cur, depth + 1)?),
        Tok::Punct("!") => Some((fold_un(cur, depth + 1)? == 0) as i128),
        Tok::Punct("(") => {
            let v = fold_bin(cur, 0, depth + 1)?;
            cur.eat(")").then_some(v)
        }
        _ => None,
    }
}
