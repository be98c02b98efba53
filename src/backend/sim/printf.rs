//! `printf` with C's format semantics: conversions `d i u x X o c s f F e E g G p %`, flags
//! `- + space # 0`, width and precision (also `*`), and the `h hh l ll z` length modifiers.
//!
//! The format string is parsed once at compile time; arguments arrive as register patterns with
//! their (default-promoted) types.

use crate::cuda::ast::Scalar;

#[derive(Clone, Debug, PartialEq)]
pub enum Piece {
    Text(String),
    Conv(Spec),
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Spec {
    pub left: bool,
    pub plus: bool,
    pub space: bool,
    pub alt: bool,
    pub zero: bool,
    /// `None`: none given; `Some(None)`: `*` (taken from the arguments).
    pub width: Option<Option<usize>>,
    pub precision: Option<Option<usize>>,
    /// `h` (1), `hh` (2), or none (0); `l`/`ll` need nothing: registers are 64-bit.
    pub short: u8,
    pub conv: char,
}

pub fn parse(format: &str) -> Vec<Piece> {
    let mut out = Vec::new();
    let mut text = String::new();
    let mut chars = format.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '%' {
            text.push(c);
            continue;
        }
        if chars.peek() == Some(&'%') {
            chars.next();
            text.push('%');
            continue;
        }
        let mut spec = Spec::default();
        while let Some(&f) = chars.peek() {
            match f {
                '-' => spec.left = true,
                '+' => spec.plus = true,
                ' ' => spec.space = true,
                '#' => spec.alt = true,
                '0' => spec.zero = true,
                _ => break,
            }
            chars.next();
        }
        let number = |chars: &mut std::iter::Peekable<std::str::Chars>| -> Option<Option<usize>> {
            if chars.peek() == Some(&'*') {
                chars.next();
                return Some(None);
            }
            let mut n: Option<usize> = None;
            while let Some(d) = chars.peek().and_then(|c| c.to_digit(10)) {
                n = Some(n.unwrap_or(0).saturating_mul(10).saturating_add(d as usize).min(4096));
                chars.next();
            }
            n.map(Some)
        };
        spec.width = number(&mut chars);
        if chars.peek() == Some(&'.') {
            chars.next();
            spec.precision = Some(number(&mut chars).unwrap_or(Some(0)));
        }
        while let Some(&m) = chars.peek() {
            match m {
                'h' => spec.short += 1,
                'l' | 'z' | 'j' | 't' | 'L' => {}
                _ => break,
            }
            chars.next();
        }
        match chars.next() {
            Some(conv) => {
                spec.conv = conv;
                if !text.is_empty() {
                    out.push(Piece::Text(std::mem::take(&mut text)));
                }
                out.push(Piece::Conv(spec));
            }
            None => text.push('%'),
        }
    }
    if !text.is_empty() {
        out.push(Piece::Text(text));
    }
    out
}

/// An argument as the formatter sees it.
#[derive(Clone, Debug)]
pub enum Value {
    Int { bits: u64, ty: Scalar },
    Float(f64),
}

impl Value {
    fn as_i64(&self) -> i64 {
        match self {
            Value::Int { bits, .. } => *bits as i64,
            Value::Float(f) => *f as i64,
        }
    }

    fn as_f64(&self) -> f64 {
        match self {
            Value::Float(f) => *f,
            Value::Int { bits, ty } if ty.is_signed() => *bits as i64 as f64,
            Value::Int { bits, .. } => *bits as f64,
        }
    }
}

/// Format `pieces` with `args` (missing arguments format as 0); `%s` reads its string through
/// `read_str`.
pub fn format(pieces: &[Piece], args: &[Value], read_str: &mut dyn FnMut(u64) -> String) -> String {
    let mut out = String::new();
    let mut args = args.iter();
    for p in pieces {
        match p {
            Piece::Text(t) => out.push_str(t),
            Piece::Conv(spec) => {
                let mut spec = spec.clone();
                if spec.width == Some(None) {
                    let w = args.next().map_or(0, Value::as_i64);
                    if w < 0 {
                        spec.left = true;
                    }
                    spec.width = Some(Some(w.unsigned_abs().min(4096) as usize));
                }
                if spec.precision == Some(None) {
                    let p = args.next().map_or(0, Value::as_i64);
                    spec.precision = if p < 0 { None } else { Some(Some(p.min(4096) as usize)) };
                }
                let zero = Value::Int { bits: 0, ty: Scalar::I32 };
                let v = args.next().unwrap_or(&zero);
                conv(&mut out, &spec, v, read_str);
            }
        }
    }
    out
}

fn conv(out: &mut String, spec: &Spec, v: &Value, read_str: &mut dyn FnMut(u64) -> String) {
    let prec = spec.precision.flatten();
    let width = spec.width.flatten().unwrap_or(0);
    let (sign, body, numeric) = match spec.conv {
        'd' | 'i' => {
            let mut n = v.as_i64();
            if spec.short == 1 {
                n = n as i16 as i64;
            } else if spec.short >= 2 {
                n = n as i8 as i64;
            }
            let digits = int_digits(n.unsigned_abs().to_string(), prec);
            (sign_of(n < 0, spec), digits, true)
        }
        'u' | 'x' | 'X' | 'o' => {
            let mut n = match v {
                Value::Int { bits, ty: Scalar::I32 | Scalar::U32 } => *bits as u32 as u64,
                _ => v.as_i64() as u64,
            };
            if spec.short == 1 {
                n = n as u16 as u64;
            } else if spec.short >= 2 {
                n = n as u8 as u64;
            }
            let s = match spec.conv {
                'u' => n.to_string(),
                'x' => format!("{n:x}"),
                'X' => format!("{n:X}"),
                _ => format!("{n:o}"),
            };
            let mut s = int_digits(s, prec);
            if spec.alt && n != 0 {
                match spec.conv {
                    'x' => s.insert_str(0, "0x"),
                    'X' => s.insert_str(0, "0X"),
                    'o' if !s.starts_with('0') => s.insert(0, '0'),
                    _ => {}
                }
            }
            (String::new(), s, true)
        }
        'c' => (String::new(), ((v.as_i64() as u8) as char).to_string(), false),
        's' => {
            let s = match v {
                Value::Int { bits: 0, .. } => "(null)".to_string(),
                Value::Int { bits, .. } => read_str(*bits),
                Value::Float(_) => "(null)".to_string(),
            };
            let s = match prec {
                Some(p) => s.chars().take(p).collect(),
                None => s,
            };
            (String::new(), s, false)
        }
        'p' => {
            let bits = match v {
                Value::Int { bits, .. } => *bits,
                Value::Float(_) => 0,
            };
            (String::new(), format!("0x{bits:x}"), false)
        }
        'f' | 'F' | 'e' | 'E' | 'g' | 'G' | 'a' | 'A' => {
            let f = v.as_f64();
            let body = float(f.abs(), spec.conv, prec.unwrap_or(6), spec.alt);
            (sign_of(f.is_sign_negative() && !f.is_nan(), spec), body, f.is_finite())
        }
        other => (String::new(), format!("%{other}"), false),
    };
    let len = sign.chars().count() + body.chars().count();
    let pad = width.saturating_sub(len);
    if spec.left {
        out.push_str(&sign);
        out.push_str(&body);
        out.extend(std::iter::repeat_n(' ', pad));
    } else if spec.zero && numeric && (prec.is_none() || !matches!(spec.conv, 'd' | 'i' | 'u' | 'x' | 'X' | 'o')) {
        out.push_str(&sign);
        // Zero padding goes after a `0x` prefix.
        let (prefix, rest) =
            if body.starts_with("0x") || body.starts_with("0X") { body.split_at(2) } else { ("", &*body) };
        out.push_str(prefix);
        out.extend(std::iter::repeat_n('0', pad));
        out.push_str(rest);
    } else {
        out.extend(std::iter::repeat_n(' ', pad));
        out.push_str(&sign);
        out.push_str(&body);
    }
}

fn sign_of(negative: bool, spec: &Spec) -> String {
    if negative {
        "-".into()
    } else if spec.plus {
        "+".into()
    } else if spec.space {
        " ".into()
    } else {
        String::new()
    }
}

fn int_digits(s: String, prec: Option<usize>) -> String {
    match prec {
        Some(0) if s == "0" => String::new(),
        Some(p) if s.len() < p => format!("{}{s}", "0".repeat(p - s.len())),
        _ => s,
    }
}

/// A non-negative float in `%f`, `%e` or `%g` style.
fn float(f: f64, conv: char, prec: usize, alt: bool) -> String {
    let upper = conv.is_ascii_uppercase();
    if f.is_nan() {
        return if upper { "NAN" } else { "nan" }.into();
    }
    if f.is_infinite() {
        return if upper { "INF" } else { "inf" }.into();
    }
    let s = match conv.to_ascii_lowercase() {
        'f' => {
            let s = format!("{f:.prec$}");
            if alt && prec == 0 { s + "." } else { s }
        }
        'e' | 'a' => exp_style(f, prec, alt),
        _ => {
            let p = prec.max(1);
            let e = exp_style(f, p - 1, false);
            let x: i32 = e.rsplit('e').next().and_then(|x| x.parse().ok()).unwrap_or(0);
            let s = if (p as i32) > x && x >= -4 {
                let fp = (p as i32 - 1 - x) as usize;
                format!("{f:.fp$}")
            } else {
                exp_style(f, p - 1, false)
            };
            if alt { s } else { strip_zeros(&s) }
        }
    };
    if upper { s.to_uppercase() } else { s }
}

/// `1.500000e+00`: Rust's `{:e}` with C's exponent (sign and at least two digits).
fn exp_style(f: f64, prec: usize, alt: bool) -> String {
    let s = format!("{f:.prec$e}");
    let (mant, exp) = s.split_once('e').unwrap_or((&s, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let dot = if alt && prec == 0 { "." } else { "" };
    format!("{mant}{dot}e{}{:02}", if exp < 0 { '-' } else { '+' }, exp.unsigned_abs())
}

fn strip_zeros(s: &str) -> String {
    let (mant, exp) = match s.find('e') {
        Some(i) => s.split_at(i),
        None => (s, ""),
    };
    let mant = if mant.contains('.') { mant.trim_end_matches('0').trim_end_matches('.') } else { mant };
    format!("{mant}{exp}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(fmt: &str, args: &[Value]) -> String {
        format(&parse(fmt), args, &mut |p| if p == 1 { "bc".into() } else { String::new() })
    }

    fn int(v: i64) -> Value {
        Value::Int { bits: v as u64, ty: Scalar::I32 }
    }

    #[test]
    fn formats_like_c() {
        assert_eq!(
            f("%d|%5d|%-5d|%05d|%+d", &[int(-3), int(42), int(42), int(-42), int(7)]),
            "-3|   42|42   |-0042|+7"
        );
        assert_eq!(f("%u %x %X %#x %o", &[int(-1), int(255), int(255), int(255), int(8)]), "4294967295 ff FF 0xff 10");
        assert_eq!(
            f("%f %.2f %8.3f", &[Value::Float(1.5), Value::Float(1.23456), Value::Float(-2.5)]),
            "1.500000 1.23   -2.500"
        );
        assert_eq!(f("%e %E", &[Value::Float(12345.678), Value::Float(0.0)]), "1.234568e+04 0.000000E+00");
        assert_eq!(
            f("%g %g %g %g", &[Value::Float(0.5), Value::Float(100000.0), Value::Float(1e6), Value::Float(1e-5)]),
            "0.5 100000 1e+06 1e-05"
        );
        assert_eq!(f("%c%s%%", &[int(65), Value::Int { bits: 1, ty: Scalar::U64 }]), "Abc%");
        assert_eq!(f("%*d|%.3d", &[int(4), int(7), int(7)]), "   7|007");
        assert_eq!(f("%lld %hhd", &[Value::Int { bits: 1 << 40, ty: Scalar::I64 }, int(300)]), "1099511627776 44");
    }
}
