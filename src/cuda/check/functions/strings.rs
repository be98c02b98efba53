//! String literals as `printf` arguments: `printf("%s: %d\n", "sum", s)` and
//! `printf("%s\n", odd ? "odd" : "even")`. Kernels have no strings to keep, so a literal passed
//! to a `%s` becomes part of the format, padded and cut as its width and precision say; a choice
//! between two literals becomes a choice between two `printf` calls. What reaches the simulator
//! is a `printf` without string arguments.

use super::*;

/// One conversion of a format: where it is, its letter, and what `%s` needs of it.
struct Directive {
    lo: usize,
    hi: usize,
    conv: char,
    left: bool,
    width: Option<usize>,
    precision: Option<usize>,
    /// `*` widths and precisions: each takes an argument before the value's.
    stars: usize,
}

/// The conversions of `format`, in order (`%%` is text, not one).
fn directives(format: &str) -> Vec<Directive> {
    let b = format.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'%' {
            i += 1;
            continue;
        }
        if b.get(i + 1) == Some(&b'%') {
            i += 2;
            continue;
        }
        let lo = i;
        i += 1;
        let mut d = Directive { lo, hi: lo, conv: '\0', left: false, width: None, precision: None, stars: 0 };
        while i < b.len() && b"-+ #0".contains(&b[i]) {
            d.left |= b[i] == b'-';
            i += 1;
        }
        let number = |i: &mut usize, stars: &mut usize| -> Option<usize> {
            if b.get(*i) == Some(&b'*') {
                *i += 1;
                *stars += 1;
                return None;
            }
            let start = *i;
            while *i < b.len() && b[*i].is_ascii_digit() {
                *i += 1;
            }
            format[start..*i].parse().ok()
        };
        d.width = number(&mut i, &mut d.stars);
        if b.get(i) == Some(&b'.') {
            i += 1;
            d.precision = Some(number(&mut i, &mut d.stars).unwrap_or(0));
        }
        while i < b.len() && b"hlzjtL".contains(&b[i]) {
            i += 1;
        }
        let Some(c) = format[i..].chars().next() else { break };
        d.conv = c;
        i += c.len_utf8();
        d.hi = i;
        out.push(d);
    }
    out
}

/// A string literal, or a choice between two (`c ? "a" : "b"`, nested as deep as written).
fn is_string(e: &syntax::Expr) -> bool {
    match &e.kind {
        syntax::ExprKind::Str(_) => true,
        syntax::ExprKind::Cond(_, a, b) => is_string(a) && is_string(b),
        _ => false,
    }
}

impl Fx<'_> {
    /// `printf` whose arguments include string literals (`None` when none do).
    pub(super) fn printf_strings(&mut self, args: &[syntax::Expr], span: Span) -> CResult<Option<Expr>> {
        let Some(syntax::Expr { kind: syntax::ExprKind::Str(format), span: format_span }) = args.first() else {
            return Ok(None);
        };
        let Some(k) = args[1..].iter().position(is_string) else { return Ok(None) };
        // The directive that takes argument k.
        let mut taken = 0;
        let found = directives(format).into_iter().find(|d| {
            taken += d.stars + 1;
            taken > k
        });
        let d = match found {
            Some(d) if d.conv == 's' && taken == k + 1 => d,
            _ => {
                return Err(err(args[k + 1].span, "a string literal prints with `%s`")
                    .label("this is a string")
                    .help("give it a `%s` in the format, or print a number here"));
            }
        };
        let call = |format: String, arg: Option<syntax::Expr>| {
            let mut all = args.to_vec();
            all[0] = syntax::Expr { kind: syntax::ExprKind::Str(format), span: *format_span };
            match arg {
                Some(a) => all[k + 1] = a,
                None => {
                    all.remove(k + 1);
                }
            }
            syntax::Expr { kind: syntax::ExprKind::Call { name: "printf".into(), name_span: span, args: all }, span }
        };
        let spliced = match &args[k + 1].kind {
            syntax::ExprKind::Str(text) => {
                let mut text: String = match d.precision {
                    Some(p) => text.chars().take(p).collect(),
                    None => text.clone(),
                };
                let pad = d.width.unwrap_or(0).saturating_sub(text.chars().count());
                if d.left {
                    text.push_str(&" ".repeat(pad));
                } else {
                    text.insert_str(0, &" ".repeat(pad));
                }
                let text = text.replace('%', "%%");
                call(format!("{}{text}{}", &format[..d.lo], &format[d.hi..]), None)
            }
            // `c ? "a" : "b"`: one printf for each side, each with its literal.
            syntax::ExprKind::Cond(c, a, b) => syntax::Expr {
                kind: syntax::ExprKind::Cond(
                    c.clone(),
                    Box::new(call(format.clone(), Some((**a).clone()))),
                    Box::new(call(format.clone(), Some((**b).clone()))),
                ),
                span,
            },
            _ => unreachable!("is_string said so"),
        };
        self.value_expr(&spliced).map(Some)
    }
}
