//! numpy-style printing of arrays and scalars, deterministic and width-aware.
//!
//! ```text
//! a: f32[4]  [0.5 1.5 -1. 0.]
//! a: f32[1048576]  [0.5 0.5 0.5 ... 0.5 0.5 0.5]
//! m: i32[3, 4]
//! [[ 0  1  2  3]
//!  [ 4  5  6  7]
//!  [ 8  9 10 11]]
//! n = 1000
//! ```
//! Floats print with the shortest digits that round-trip in their own precision and a trailing
//! `.` when integral (`1.`), as numpy does; columns are right-aligned to the widest element shown.
//! More than 20 elements along a dimension elide to the first and last 3, with `...`.

use std::io::{self, Write};

use owo_colors::OwoColorize;

use crate::buffer::{Buffer, Num, Shape};
use crate::dtype::DType;
use crate::value::{ArrayValue, Value, format_float};

/// Elide a dimension longer than this.
pub const ELIDE_OVER: usize = 20;
/// Elements shown at each end of an elided dimension.
pub const EDGE: usize = 3;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArrayStyle {
    pub color: bool,
    /// Terminal width: 1-D arrays wrap to it, headers go on their own line when the body doesn't fit.
    pub width: usize,
    /// Elements changed by the last launch, highlighted when `color` is on.
    pub changed: Option<Vec<bool>>,
    /// The background the highlight must read on.
    pub theme: super::style::Theme,
}

impl Default for ArrayStyle {
    fn default() -> ArrayStyle {
        ArrayStyle { color: false, width: 80, changed: None, theme: super::style::Theme::Dark }
    }
}

impl super::Style {
    /// The options for printing an array, with elements the last launch changed (if known).
    /// Written here, beside [`ArrayStyle`], so `style.rs` need not know the array view.
    pub fn array(&self, changed: Option<Vec<bool>>) -> ArrayStyle {
        ArrayStyle { color: self.color, width: self.width, changed, theme: self.theme }
    }
}

/// A session buffer: `a: f32[4]  [0.5 1.5 -1. 0.]`.
/// Elements of a buffer made with `empty` that nothing wrote show as `?`, with a line saying so.
pub fn write_array<W: Write + ?Sized>(out: &mut W, name: &str, buf: &Buffer, opts: &ArrayStyle) -> io::Result<()> {
    let get = |i: usize| (!buf.is_unset(i)).then(|| buf.get(i));
    let head = Head::Named { label: name, type_name: &type_name(Some(buf.dtype()), buf.shape()) };
    write_elems(out, &head, buf.shape(), &get, Some(buf.dtype()), opts)?;
    write_unset_note(out, name, buf)
}

/// A buffer a Python program shaped in three dimensions, as numpy prints it: planes of rows,
/// a blank line between planes.
pub fn write_array_3d<W: Write + ?Sized>(
    out: &mut W,
    name: &str,
    buf: &Buffer,
    dims: [usize; 3],
    opts: &ArrayStyle,
) -> io::Result<()> {
    let [planes, rows, cols] = dims;
    let dtype = Some(buf.dtype());
    let cell = |i: usize| if buf.is_unset(i) { "?".to_string() } else { element(buf.get(i), dtype) };
    let (plane_pos, row_pos, col_pos) = (shown(planes), shown(rows), shown(cols));
    let mut width = 0;
    for p in plane_pos.iter().flatten() {
        for r in row_pos.iter().flatten() {
            for c in col_pos.iter().flatten() {
                width = width.max(cell((p * rows + r) * cols + c).len());
            }
        }
    }
    let elem = buf.dtype().name();
    let label = if opts.color { name.bold().to_string() } else { name.to_string() };
    writeln!(out, "{label}: {elem}[{planes}, {rows}, {cols}]")?;
    let style = super::Style { color: opts.color, theme: opts.theme, ..super::Style::plain() };
    for (pk, p) in plane_pos.iter().enumerate() {
        let last_plane = pk + 1 == plane_pos.len();
        let Some(p) = p else {
            writeln!(out, " ...")?;
            writeln!(out)?;
            continue;
        };
        for (rk, r) in row_pos.iter().enumerate() {
            let open = match (pk, rk) {
                (0, 0) => "[[[",
                (_, 0) => " [[",
                _ => "  [",
            };
            let Some(r) = r else {
                writeln!(out, "  ...")?;
                continue;
            };
            let items: Vec<String> = col_pos
                .iter()
                .map(|c| match c {
                    Some(c) => {
                        let i = (p * rows + r) * cols + c;
                        let s = format!("{:>width$}", cell(i));
                        let changed = opts.changed.as_ref().is_some_and(|ch| ch.get(i).copied().unwrap_or(false));
                        if changed { style.changed(&s) } else { s }
                    }
                    None => "...".to_string(),
                })
                .collect();
            let close = match (rk + 1 == row_pos.len(), last_plane) {
                (true, true) => "]]]",
                (true, false) => "]]",
                _ => "]",
            };
            writeln!(out, "{open}{}{close}", items.join(" "))?;
        }
        if !last_plane {
            writeln!(out)?;
        }
    }
    write_unset_note(out, name, buf)
}

/// `? = never written ...` under a buffer that has unwritten elements.
fn write_unset_note<W: Write + ?Sized>(out: &mut W, name: &str, buf: &Buffer) -> io::Result<()> {
    match buf.unset_count() {
        0 => Ok(()),
        n => writeln!(
            out,
            "  ? = never written ({n} of {} elements): `{name}` was made with `empty`, and reading one is an `uninit` finding in a kernel, an error in a statement",
            buf.len()
        ),
    }
}

/// An evaluated array, e.g. a slice labelled with the learner's text: `a[2:6]: f32[4]  [...]`.
pub fn write_array_value<W: Write + ?Sized>(
    out: &mut W,
    label: &str,
    a: &ArrayValue,
    opts: &ArrayStyle,
) -> io::Result<()> {
    let unset = match a.data() {
        crate::value::Data::Num(b) => Some(&**b),
        crate::value::Data::Bool(_) => None,
    };
    let get = |i: usize| (!unset.is_some_and(|b| b.is_unset(i))).then(|| a.num(i));
    write_elems(out, &Head::Named { label, type_name: &a.type_name() }, a.shape(), &get, a.dtype(), opts)?;
    match unset {
        Some(b) => write_unset_note(out, label, b),
        None => Ok(()),
    }
}

/// Any value: arrays as above, scalars as `n = 1000`, `x = 0.5`, `ok = true`.
pub fn write_value<W: Write + ?Sized>(out: &mut W, label: &str, v: &Value, opts: &ArrayStyle) -> io::Result<()> {
    match v {
        Value::Array(a) => write_array_value(out, label, a, opts),
        Value::Int(i) => writeln!(out, "{label} = {i}"),
        Value::Bool(b) => writeln!(out, "{label} = {b}"),
        Value::Float(f) => writeln!(out, "{label} = {}", scalar_float(*f)),
        Value::Dim3(d) => writeln!(out, "{label} = {}", crate::value::format_dim3(*d)),
    }
}

/// A value after a `print` label, as Python prints it: `Updated array: [0.5 1.5]`,
/// `total: 2.0`.
pub fn write_labelled<W: Write + ?Sized>(out: &mut W, label: &str, v: &Value, opts: &ArrayStyle) -> io::Result<()> {
    match v {
        Value::Array(a) => {
            let unset = match a.data() {
                crate::value::Data::Num(b) => Some(&**b),
                crate::value::Data::Bool(_) => None,
            };
            let get = |i: usize| (!unset.is_some_and(|b| b.is_unset(i))).then(|| a.num(i));
            write_elems(out, &Head::Print(label), a.shape(), &get, a.dtype(), opts)
        }
        Value::Int(i) => writeln!(out, "{label} {i}"),
        Value::Bool(b) => writeln!(out, "{label} {}", if *b { "True" } else { "False" }),
        Value::Float(f) => writeln!(out, "{label} {}", scalar_float(*f)),
        Value::Dim3(d) => writeln!(out, "{label} {}", crate::value::format_dim3(*d)),
    }
}

/// What stands before an array's elements.
enum Head<'a> {
    /// A value shown by name: `a: f32[4]  [...]`.
    Named { label: &'a str, type_name: &'a str },
    /// A value after a `print` label: `Updated array: [...]`, as Python prints it.
    Print(&'a str),
}

/// A float scalar, Python-style (`2.0`, `0.5`). A value that is exactly an `f32` (an element of
/// an `f32` array, most likely) and needs more digits than an `f32` holds prints with `f32`'s
/// shortest digits: `0.1`, not `0.10000000149011612`. One that is exact in a few digits keeps
/// them: `1255 / 256.0` is `4.90234375`, not the rounded `4.9023438`.
pub fn scalar_float(f: f64) -> String {
    // 9 significant digits tell any two f32 values apart; more than that is f64 noise.
    let exact = format_float(f, DType::F64);
    let digits = exact.trim_start_matches('-').split(['e', 'E']).next().unwrap_or("").trim_start_matches(['0', '.']);
    let significant = digits.bytes().filter(u8::is_ascii_digit).count();
    let as_f32 = f.is_finite() && (f as f32) as f64 == f && significant > 9;
    let s = if as_f32 { format_float(f, DType::F32) } else { exact };
    if s.bytes().all(|c| c.is_ascii_digit() || c == b'-') { format!("{s}.0") } else { s }
}

fn type_name(dtype: Option<DType>, shape: Shape) -> String {
    let elem = dtype.map_or("bool", DType::name);
    match shape {
        Shape::D1(n) => format!("{elem}[{n}]"),
        Shape::D2(r, c) => format!("{elem}[{r}, {c}]"),
    }
}

/// One element as numpy shows it inside an array.
pub(crate) fn element(n: Num, dtype: Option<DType>) -> String {
    match (n, dtype) {
        (Num::Int(i), None) => (i != 0).to_string(),
        (Num::Int(i), Some(_)) => i.to_string(),
        (Num::Float(f), d) => {
            let s = format_float(f, d.unwrap_or(DType::F64));
            if s.bytes().all(|c| c.is_ascii_digit() || c == b'-') { format!("{s}.") } else { s }
        }
    }
}

/// Positions shown along a dimension of `len`, with `None` for the `...`.
fn shown(len: usize) -> Vec<Option<usize>> {
    if len > ELIDE_OVER {
        (0..EDGE).map(Some).chain([None]).chain((len - EDGE..len).map(Some)).collect()
    } else {
        (0..len).map(Some).collect()
    }
}

fn write_elems<W: Write + ?Sized>(
    out: &mut W,
    head: &Head,
    shape: Shape,
    get: &dyn Fn(usize) -> Option<Num>,
    dtype: Option<DType>,
    opts: &ArrayStyle,
) -> io::Result<()> {
    let (rows, cols, matrix) = match shape {
        Shape::D1(n) => (1, n, false),
        Shape::D2(r, c) => (r, c, true),
    };
    let row_pos = if matrix { shown(rows) } else { vec![Some(0)] };
    let col_pos = shown(cols);
    // Format every shown element first, to align the columns.
    let cell = |r: usize, c: usize| get(r * cols + c).map_or_else(|| "?".to_string(), |n| element(n, dtype));
    let mut width = 0;
    for r in row_pos.iter().flatten() {
        for c in col_pos.iter().flatten() {
            width = width.max(cell(*r, *c).len());
        }
    }
    let paint = |i: usize, s: String| -> String {
        let changed = opts.changed.as_ref().is_some_and(|ch| ch.get(i).copied().unwrap_or(false));
        let style = super::Style { color: opts.color, theme: opts.theme, ..super::Style::plain() };
        if changed { style.changed(&s) } else { s }
    };
    let row_items = |r: usize| -> Vec<(String, usize)> {
        col_pos
            .iter()
            .map(|c| match c {
                Some(c) => {
                    let s = format!("{:>width$}", cell(r, *c));
                    let w = s.len();
                    (paint(r * cols + c, s), w)
                }
                None => ("...".to_string(), 3),
            })
            .collect()
    };
    let (header, header_w, gap) = match head {
        Head::Named { label, type_name } => {
            let header =
                if opts.color { format!("{}: {type_name}", label.bold()) } else { format!("{label}: {type_name}") };
            (header, label.len() + 2 + type_name.len(), "  ")
        }
        Head::Print(label) => (label.to_string(), label.chars().count(), " "),
    };

    if !matrix {
        let items = row_items(0);
        let body_w = items.iter().map(|(_, w)| w + 1).sum::<usize>() + 1;
        let body: Vec<&str> = items.iter().map(|(s, _)| s.as_str()).collect();
        if header_w + gap.len() + body_w <= opts.width || items.is_empty() {
            return writeln!(out, "{header}{gap}[{}]", body.join(" "));
        }
        writeln!(out, "{header}")?;
        // numpy-style wrapping: continuation lines indented by one to sit under the first element.
        let mut line_w = 1;
        write!(out, "[")?;
        for (k, (s, w)) in items.iter().enumerate() {
            if k > 0 {
                if line_w + 1 + w + 1 > opts.width.max(8) {
                    write!(out, "\n ")?;
                    line_w = 1;
                } else {
                    write!(out, " ")?;
                    line_w += 1;
                }
            }
            write!(out, "{s}")?;
            line_w += w;
        }
        return writeln!(out, "]");
    }

    writeln!(out, "{header}")?;
    if rows == 0 {
        return writeln!(out, "[]");
    }
    for (k, r) in row_pos.iter().enumerate() {
        let open = if k == 0 { "[[" } else { " [" };
        let close = if k + 1 == row_pos.len() { "]]" } else { "]" };
        match r {
            Some(r) => {
                let items: Vec<String> = row_items(*r).into_iter().map(|(s, _)| s).collect();
                writeln!(out, "{open}{}{close}", items.join(" "))?;
            }
            None => writeln!(out, " ...")?,
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scalar_floats_show_exact_short_values_and_hide_f32_noise() {
        assert_eq!(scalar_float(1255.0 / 256.0), "4.90234375");
        assert_eq!(scalar_float(0.1f32 as f64), "0.1");
        assert_eq!(scalar_float(1.0 / 3.0), "0.3333333333333333");
        assert_eq!(scalar_float(2.0), "2.0");
        assert_eq!(scalar_float(-0.5), "-0.5");
        assert_eq!(scalar_float(1e-30f32 as f64), "1e-30");
    }

    fn render(name: &str, buf: &Buffer, opts: &ArrayStyle) -> String {
        let mut out = Vec::new();
        write_array(&mut out, name, buf, opts).unwrap();
        String::from_utf8(out).unwrap()
    }

    fn f32s(v: &[f64]) -> Buffer {
        Buffer::from_nums(DType::F32, Shape::D1(v.len()), v.iter().map(|&x| Num::Float(x)))
    }

    #[test]
    fn short_f32() {
        insta::assert_snapshot!(render("a", &f32s(&[0.5, 1.5, -1.0, 0.1, 1e-7, 3e20]), &ArrayStyle::default()));
    }

    #[test]
    fn long_f32_elides() {
        let buf = Buffer::from_nums(DType::F32, Shape::D1(1 << 20), std::iter::repeat_n(Num::Float(0.5), 1 << 20));
        insta::assert_snapshot!(render("a", &buf, &ArrayStyle::default()));
    }

    #[test]
    fn i32_aligned() {
        let buf = Buffer::from_nums(DType::I32, Shape::D1(5), [-3, 7, 100, 0, 42].map(Num::Int));
        insta::assert_snapshot!(render("idx", &buf, &ArrayStyle::default()));
    }

    #[test]
    fn matrix() {
        let buf = Buffer::from_nums(DType::F32, Shape::D2(3, 4), (0..12).map(Num::Int));
        insta::assert_snapshot!(render("m", &buf, &ArrayStyle::default()));
    }

    #[test]
    fn big_matrix_elides_rows_and_columns() {
        let buf = Buffer::from_nums(DType::I32, Shape::D2(30, 25), (0..750).map(Num::Int));
        insta::assert_snapshot!(render("m", &buf, &ArrayStyle::default()));
    }

    #[test]
    fn narrow_terminal_wraps() {
        let buf = Buffer::from_nums(DType::F64, Shape::D1(12), (0..12).map(|i| Num::Float(i as f64 / 3.0)));
        insta::assert_snapshot!(render("x", &buf, &ArrayStyle { width: 40, ..ArrayStyle::default() }));
    }

    #[test]
    fn slice_and_scalars() {
        let a = crate::value::ArrayValue::numbers(f32s(&[2.0, 2.5, 3.0, 3.5]));
        let mut out = Vec::new();
        let opts = ArrayStyle::default();
        write_value(&mut out, "a[2:6]", &Value::Array(a), &opts).unwrap();
        write_value(&mut out, "n", &Value::Int(1000), &opts).unwrap();
        write_value(&mut out, "x", &Value::Float(0.5), &opts).unwrap();
        write_value(&mut out, "y", &Value::Float(2.0), &opts).unwrap();
        write_value(&mut out, "a[0]", &Value::Float(0.1f32 as f64), &opts).unwrap();
        write_value(&mut out, "ok", &Value::Bool(true), &opts).unwrap();
        insta::assert_snapshot!(String::from_utf8(out).unwrap());
    }

    #[test]
    fn changed_elements_are_highlighted_only_in_colour() {
        let buf = f32s(&[1.0, 2.0]);
        let changed = Some(vec![false, true]);
        let plain = render("a", &buf, &ArrayStyle { changed: changed.clone(), ..ArrayStyle::default() });
        assert_eq!(plain, "a: f32[2]  [1. 2.]\n");
        let coloured = render("a", &buf, &ArrayStyle { color: true, changed, ..ArrayStyle::default() });
        assert!(coloured.contains("\u{1b}[") && coloured.contains("1."), "{coloured:?}");
    }
}
