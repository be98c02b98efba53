//! Evaluation of expressions, numpy-style, against the session's buffers and scalars.
//!
//! Semantics follow numpy with NEP 50 promotion: Python-like literals and `let` scalars are
//! "weak" and take the array's dtype (`f32` array `+ 0.5` stays `f32`, and `a == 0.1` compares
//! against `0.1` rounded to `f32`); an integer array with a float scalar becomes `f64`. An
//! element of an array (`a[3]`) or a reduction (`sum(a)`) is a typed scalar, like `np.float32`.
//! Integer arrays wrap on overflow like C and numpy; integer *scalars* are checked, and integer
//! division or modulo by zero is an error everywhere.
//!
//! One departure from numpy, for CUDA's sake: `/` between two integers (scalars, elements or
//! integer arrays) is C's division, truncated toward zero, so `(n + 255) / 256` is a grid size
//! as in the host code beside the kernel; with a float on either side it divides as floats.
//! The result's dtype is what `+` would give (`i32` array `/ 2` stays `i32`). `//` floors and
//! `%` takes the divisor's sign, as in Python. Comparisons don't broadcast beyond a scalar
//! and an array: two arrays must have the same length. `and`/`or`/`not` work elementwise on
//! arrays (numpy would refuse), so `all(a > 0 and a < 1)` reads as written.

use std::cell::Cell;

use rand_core::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

use crate::buffer::{Buffer, Num, Shape};
use crate::diag::{Diagnostic, Span};
use crate::dtype::DType;

use super::ast::{BinOp, Expr, ExprKind, Index, Kwarg, UnOp};
use crate::value::{Array, Data, Value, format_float, format_num, wrap};

mod expect;

pub use expect::{ExpectOutcome, eval_expect};

/// What expressions can see of the session.
pub trait Env {
    fn buffer(&self, name: &str) -> Option<&Buffer>;
    fn scalar(&self, name: &str) -> Option<&Value>;
    /// Constructors refuse to build arrays larger than this many bytes, before allocating.
    fn max_alloc_bytes(&self) -> u64;
    /// Every bound name, for "did you mean" hints. Optional.
    fn names(&self) -> Vec<String> {
        Vec::new()
    }
    /// `__constant__` or `__device__` when `name` is such a variable of the CUDA module: no value
    /// here, but a name the learner may well type. Optional.
    fn module_variable(&self, _name: &str) -> Option<&'static str> {
        None
    }
    /// The dimensions of buffer `name` where its own shape cannot say them: a Python
    /// program's three-dimensional array. Optional.
    fn dims(&self, _name: &str) -> Option<Vec<usize>> {
        None
    }
    /// Whether the learner asked to stop (Ctrl-C): a long statement checks now and then.
    fn cancelled(&self) -> bool {
        false
    }
}

/// Absolute and relative tolerance of `~=`: `|a - b| <= 1e-6` or `|a - b| <= 1e-5 * |b|`.
pub const APPROX_ABS: f64 = 1e-6;
pub const APPROX_REL: f64 = 1e-5;

pub fn approx_eq(a: f64, b: f64) -> bool {
    let d = (a - b).abs();
    d <= APPROX_ABS || d <= APPROX_REL * b.abs() || a == b
}

/// Evaluate `expr`, whose spans index into `src` (the statement's text). The arrays it makes,
/// the result and every temporary on the way, count against [`Env::max_alloc_bytes`].
pub fn eval(expr: &Expr, env: &dyn Env, src: &str) -> Result<Value, Diagnostic> {
    let cx = Cx::new(env, src);
    let v = cx.eval(expr)?;
    if let V::Arr(a) = &v
        && a.is_borrowed()
    {
        // The value is a session's buffer as it is (`let b = a`): it becomes a copy.
        cx.charge(expr, a.size_bytes())?;
    }
    Ok(v.into_value())
}

/// Whether `text`, an expression that advice would have the learner type, evaluates against
/// `env` as it stands: advice that fails when followed is worse than none.
fn suggestion_runs(text: &str, env: &dyn Env) -> bool {
    let src = format!("let __suggestion = {text}");
    match super::parse_statement(0, &src) {
        Ok(super::ast::Stmt { kind: super::ast::StmtKind::Let { value, .. }, .. }) => eval(&value, env, &src).is_ok(),
        _ => false,
    }
}

/// What `a[i] = v` (`StmtKind::Assign`) changes: elements of one buffer.
#[derive(Clone, Debug, PartialEq)]
pub struct Assignment {
    /// The buffer.
    pub name: String,
    /// Flat positions, row after row for a 2-D buffer.
    pub positions: Vec<usize>,
    /// The value for each position, already in the buffer's dtype (exact: checked to fit); one
    /// value when a scalar goes to every position (`a[:] = 0` makes no list of copies).
    pub values: Vec<Num>,
}

/// Evaluate `TARGET = VALUE` for a buffer's elements; the caller stores the result.
pub fn eval_assign(target: &Expr, value: &Expr, env: &dyn Env, src: &str) -> Result<Assignment, Diagnostic> {
    Cx::new(env, src).assign(target, value)
}

/// A `__constant__` or `__device__` variable that a statement gives values to (`coef = [...]`).
#[derive(Clone, Copy, Debug)]
pub struct SymbolTarget<'t> {
    pub name: &'t str,
    /// The element's C type, for messages: `float`.
    pub c_type: &'t str,
    pub dtype: DType,
    /// Elements: 1 for a scalar variable, all of them (row after row) for an array.
    pub len: usize,
}

/// The values `value` gives `target`, in its element type: a list (each element checked to fit,
/// as `array([...], dtype)` checks), a buffer of exactly that dtype, or for a one-element
/// variable a number. Fewer values than the variable holds set its first elements.
pub fn eval_symbol(value: &Expr, env: &dyn Env, src: &str, target: SymbolTarget<'_>) -> Result<Vec<Num>, Diagnostic> {
    let cx = Cx::new(env, src);
    let SymbolTarget { name, c_type, dtype, len } = target;
    let holds = format!("`{name}` holds {len} {c_type}{}", if len == 1 { "" } else { "s" });
    let arr = match &value.kind {
        ExprKind::List(items) => cx.list(items, value.span, dtype)?,
        _ => match cx.eval(value)? {
            V::Arr(a) => {
                if a.dtype() != Some(dtype) {
                    return Err(Diagnostic::error(format!(
                        "`{}` is {}, but `{name}` holds {c_type} ({dtype})",
                        cx.text(value),
                        a.type_name()
                    ))
                    .at(value.span)
                    .help(format!(
                        "convert it as the copy would need: `{name} = array({}, {dtype})`",
                        cx.text(value)
                    )));
                }
                a
            }
            V::Dim3(_) => return Err(cx.dim3_misused(value)),
            scalar if len == 1 => {
                let n = match scalar {
                    V::Int(i) => Num::Int(i),
                    V::Bool(b) => Num::Int(b as i128),
                    V::Float(f) => Num::Float(f),
                    V::Elem(n, _) => n,
                    V::Arr(_) | V::Dim3(_) => unreachable!("matched above"),
                };
                return Ok(vec![cx.fit(n, dtype, value)?]);
            }
            scalar => {
                return Err(Diagnostic::error(format!("{holds}, but `{}` is {}", cx.text(value), scalar.type_name()))
                    .at(value.span)
                    .help(format!(
                        "give a list of up to {len} values, `{name} = [...]`, or fill it: `{name} = full({len}, {}, {dtype})`",
                        cx.text(value)
                    )));
            }
        },
    };
    if arr.len() > len {
        return Err(Diagnostic::error(format!("too many values: {holds}, and `{}` has {}", cx.text(value), arr.len()))
            .at(value.span)
            .help(format!("give at most {len}; fewer set only the first elements")));
    }
    Ok((0..arr.len()).map(|i| arr.num(i)).collect())
}

/// A value during evaluation: Python-like "weak" scalars, typed scalars and arrays.
#[derive(Clone, Debug)]
pub(crate) enum V<'a> {
    Int(i128),
    Float(f64),
    Bool(bool),
    /// A scalar with a dtype: an element or a reduction of an array.
    Elem(Num, DType),
    /// An array: a session's buffer (borrowed) or one computed.
    Arr(Array<'a>),
    /// `dim3(16, 16)`: only a launch size; its fields are `b.x`, `b.y`, `b.z`.
    Dim3([u32; 3]),
}

impl<'a> V<'a> {
    fn from_value(v: &'a Value) -> V<'a> {
        match v {
            Value::Int(i) => V::Int(*i),
            Value::Float(f) => V::Float(*f),
            Value::Bool(b) => V::Bool(*b),
            Value::Array(a) => V::Arr(a.borrowed()),
            Value::Dim3(d) => V::Dim3(*d),
        }
    }

    pub(crate) fn into_value(self) -> Value {
        match self {
            V::Int(i) => Value::Int(i),
            V::Float(f) => Value::Float(f),
            V::Bool(b) => Value::Bool(b),
            V::Elem(Num::Int(i), _) => Value::Int(i),
            V::Elem(Num::Float(f), _) => Value::Float(f),
            V::Arr(a) => Value::Array(a.into_owned()),
            V::Dim3(d) => Value::Dim3(d),
        }
    }

    fn type_name(&self) -> String {
        match self {
            V::Int(_) => "an int".into(),
            V::Float(_) => "a float".into(),
            V::Bool(_) => "a bool".into(),
            V::Elem(_, d) => format!("a {d} scalar"),
            V::Arr(a) => format!("an array ({})", a.type_name()),
            V::Dim3(_) => "a dim3".into(),
        }
    }

    /// How the value takes part in promotion.
    fn kind(&self) -> Kind {
        match self {
            V::Int(_) | V::Bool(_) => Kind::WeakInt,
            V::Float(_) => Kind::WeakFloat,
            V::Elem(_, d) => Kind::Typed(*d),
            V::Arr(a) => a.dtype().map_or(Kind::BoolArr, Kind::Typed),
            // Refused before promotion (see `Cx::not_dim3`); counted as an int if it got here.
            V::Dim3(_) => Kind::WeakInt,
        }
    }

    fn array(&self) -> Option<&Array<'a>> {
        if let V::Arr(a) = self { Some(a) } else { None }
    }

    /// `Some(truth)` for a scalar.
    fn truth(&self) -> Option<bool> {
        match self {
            V::Int(i) => Some(*i != 0),
            V::Float(f) => Some(*f != 0.0),
            V::Bool(b) => Some(*b),
            V::Elem(n, _) => Some(n.as_f64() != 0.0),
            V::Arr(_) | V::Dim3(_) => None,
        }
    }

    /// For messages: `3`, `0.5`, `true`, or the array's type.
    pub(crate) fn show(&self) -> String {
        match self {
            V::Int(i) => i.to_string(),
            V::Float(f) => format_float(*f, DType::F64),
            V::Bool(b) => b.to_string(),
            V::Elem(n, d) => format_num(*n, Some(*d)),
            V::Arr(a) => a.type_name(),
            V::Dim3(d) => crate::value::format_dim3(*d),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    WeakInt,
    WeakFloat,
    Typed(DType),
    BoolArr,
}

impl Kind {
    fn is_int(self) -> bool {
        match self {
            Kind::WeakInt | Kind::BoolArr => true,
            Kind::WeakFloat => false,
            Kind::Typed(d) => !d.is_float(),
        }
    }
}

/// numpy's promotion of two array dtypes.
fn promote(a: DType, b: DType) -> DType {
    use DType::*;
    if a == b {
        return a;
    }
    match (a.is_float(), b.is_float()) {
        (true, true) => F64,
        // numpy: any 32- or 64-bit integer with f32 gives f64.
        (true, false) | (false, true) => F64,
        (false, false) => match (a.is_signed(), b.is_signed()) {
            (true, true) | (false, false) => {
                if a.size() >= b.size() {
                    a
                } else {
                    b
                }
            }
            _ => {
                let (s, u) = if a.is_signed() { (a, b) } else { (b, a) };
                if s.size() > u.size() {
                    s
                } else {
                    // numpy: the signed type twice as wide as the unsigned one holds both
                    // (`u8` with `i8` is `i16`); nothing holds `u64` with a signed type.
                    u.wider_signed().unwrap_or(F64)
                }
            }
        },
    }
}

/// The dtype of an arithmetic result, or `None` when both sides are weak scalars.
fn result_dtype(a: Kind, b: Kind) -> Option<DType> {
    use Kind::*;
    Some(match (a, b) {
        (WeakInt | WeakFloat, WeakInt | WeakFloat) => return None,
        (Typed(x), Typed(y)) => promote(x, y),
        (Typed(x), WeakInt) | (WeakInt, Typed(x)) => x,
        (Typed(x), WeakFloat) | (WeakFloat, Typed(x)) => {
            if x.is_float() {
                x
            } else {
                DType::F64
            }
        }
        (BoolArr, Typed(x)) | (Typed(x), BoolArr) => x,
        (BoolArr, WeakFloat) | (WeakFloat, BoolArr) => DType::F64,
        (BoolArr, BoolArr | WeakInt) | (WeakInt, BoolArr) => DType::I64,
    })
}

/// One side of an elementwise operation: a broadcast scalar or an array's elements, read one
/// at a time in the type the operation computes in (nothing is converted ahead, so an operand
/// costs no memory of its own). The element type is the variant, so reading is one branch that
/// the processor predicts and a load.
enum Lane<'v, T> {
    One(T),
    F32(&'v [u8]),
    F64(&'v [u8]),
    I32(&'v [u8]),
    U32(&'v [u8]),
    I64(&'v [u8]),
    U64(&'v [u8]),
    I8(&'v [u8]),
    U8(&'v [u8]),
    I16(&'v [u8]),
    U16(&'v [u8]),
    /// A `bool` buffer's bytes (0 or 1, any nonzero byte read as true as C does).
    ByteBools(&'v [u8]),
    Bools(&'v [bool]),
}

/// What a lane reads its elements as: `f64`, `i128` or `bool`.
trait LaneValue: Copy {
    fn of_f64(x: f64) -> Self;
    fn of_i64(x: i64) -> Self;
    fn of_u64(x: u64) -> Self;
    fn of_bool(b: bool) -> Self;
}

impl LaneValue for f64 {
    fn of_f64(x: f64) -> f64 {
        x
    }
    fn of_i64(x: i64) -> f64 {
        x as f64
    }
    fn of_u64(x: u64) -> f64 {
        x as f64
    }
    fn of_bool(b: bool) -> f64 {
        b as u8 as f64
    }
}

impl LaneValue for i128 {
    fn of_f64(x: f64) -> i128 {
        x as i128
    }
    fn of_i64(x: i64) -> i128 {
        x as i128
    }
    fn of_u64(x: u64) -> i128 {
        x as i128
    }
    fn of_bool(b: bool) -> i128 {
        b as i128
    }
}

impl LaneValue for bool {
    fn of_f64(x: f64) -> bool {
        x != 0.0
    }
    fn of_i64(x: i64) -> bool {
        x != 0
    }
    fn of_u64(x: u64) -> bool {
        x != 0
    }
    fn of_bool(b: bool) -> bool {
        b
    }
}

impl<T: LaneValue> Lane<'_, T> {
    #[inline]
    fn at(&self, i: usize) -> T {
        fn four(b: &[u8], i: usize) -> [u8; 4] {
            b[4 * i..4 * i + 4].try_into().expect("4 bytes")
        }
        fn eight(b: &[u8], i: usize) -> [u8; 8] {
            b[8 * i..8 * i + 8].try_into().expect("8 bytes")
        }
        match self {
            Lane::One(x) => *x,
            Lane::F32(b) => T::of_f64(f32::from_le_bytes(four(b, i)) as f64),
            Lane::F64(b) => T::of_f64(f64::from_le_bytes(eight(b, i))),
            Lane::I32(b) => T::of_i64(i32::from_le_bytes(four(b, i)) as i64),
            Lane::U32(b) => T::of_u64(u32::from_le_bytes(four(b, i)) as u64),
            Lane::I64(b) => T::of_i64(i64::from_le_bytes(eight(b, i))),
            Lane::U64(b) => T::of_u64(u64::from_le_bytes(eight(b, i))),
            Lane::I8(b) => T::of_i64(b[i] as i8 as i64),
            Lane::U8(b) => T::of_u64(b[i] as u64),
            Lane::I16(b) => T::of_i64(i16::from_le_bytes([b[2 * i], b[2 * i + 1]]) as i64),
            Lane::U16(b) => T::of_u64(u16::from_le_bytes([b[2 * i], b[2 * i + 1]]) as u64),
            Lane::ByteBools(b) => T::of_bool(b[i] != 0),
            Lane::Bools(v) => T::of_bool(v[i]),
        }
    }
}

/// An array's elements as a lane.
fn elems<'v, T>(a: &'v Array<'_>) -> Lane<'v, T> {
    match a.data() {
        Data::Num(b) => match b.dtype() {
            DType::F32 => Lane::F32(b.bytes()),
            DType::F64 => Lane::F64(b.bytes()),
            DType::I32 => Lane::I32(b.bytes()),
            DType::U32 => Lane::U32(b.bytes()),
            DType::I64 => Lane::I64(b.bytes()),
            DType::U64 => Lane::U64(b.bytes()),
            DType::I8 => Lane::I8(b.bytes()),
            DType::U8 => Lane::U8(b.bytes()),
            DType::I16 => Lane::I16(b.bytes()),
            DType::U16 => Lane::U16(b.bytes()),
            DType::Bool => Lane::ByteBools(b.bytes()),
        },
        Data::Bool(v) => Lane::Bools(v),
    }
}

fn f_lane<'v>(v: &'v V<'_>, round_to_f32: bool) -> Lane<'v, f64> {
    match v {
        V::Int(i) => Lane::One(*i as f64),
        V::Bool(b) => Lane::One(*b as u8 as f64),
        V::Float(f) if round_to_f32 => Lane::One(*f as f32 as f64),
        V::Float(f) => Lane::One(*f),
        V::Elem(n, _) => Lane::One(n.as_f64()),
        V::Dim3(_) => Lane::One(f64::NAN),
        V::Arr(a) => elems(a),
    }
}

/// Only for integer kinds (see [`Kind::is_int`]).
fn i_lane<'v>(v: &'v V<'_>) -> Lane<'v, i128> {
    match v {
        V::Int(i) => Lane::One(*i),
        V::Bool(b) => Lane::One(*b as i128),
        V::Float(f) => Lane::One(*f as i128),
        V::Dim3(_) => Lane::One(0),
        V::Elem(Num::Int(i), _) => Lane::One(*i),
        V::Elem(Num::Float(f), _) => Lane::One(*f as i128),
        V::Arr(a) => elems(a),
    }
}

fn b_lane<'v>(v: &'v V<'_>) -> Lane<'v, bool> {
    match v {
        V::Arr(a) => elems(a),
        other => Lane::One(other.truth().unwrap_or(false)),
    }
}

fn float_op(op: BinOp, x: f64, y: f64) -> f64 {
    match op {
        BinOp::Add => x + y,
        BinOp::Sub => x - y,
        BinOp::Mul => x * y,
        BinOp::Div => x / y,
        BinOp::FloorDiv => (x / y).floor(),
        // Python's modulo: the result has the sign of the divisor.
        BinOp::Mod => {
            let r = x % y;
            if r != 0.0 && (r < 0.0) != (y < 0.0) { r + y } else { r }
        }
        BinOp::Pow => x.powf(y),
        _ => f64::NAN,
    }
}

enum IntErr {
    DivZero,
    NegativePow,
    NegativeShift,
}

/// Integer arithmetic in `i128`, wrapping; the caller wraps to the result dtype.
fn int_op(op: BinOp, x: i128, y: i128) -> Result<i128, IntErr> {
    Ok(match op {
        BinOp::Add => x.wrapping_add(y),
        BinOp::Sub => x.wrapping_sub(y),
        BinOp::Mul => x.wrapping_mul(y),
        BinOp::Div | BinOp::FloorDiv | BinOp::Mod if y == 0 => return Err(IntErr::DivZero),
        // C's division: the quotient truncated toward zero (`-7 / 2` is -3).
        BinOp::Div => x.wrapping_div(y),
        BinOp::FloorDiv => x.wrapping_div_euclid(y) - if y < 0 && x.wrapping_rem_euclid(y) != 0 { 1 } else { 0 },
        BinOp::Mod => {
            let r = x.wrapping_rem(y);
            if r != 0 && (r < 0) != (y < 0) { r + y } else { r }
        }
        BinOp::Pow if y < 0 => return Err(IntErr::NegativePow),
        BinOp::Pow => x.wrapping_pow(y.min(u32::MAX as i128) as u32),
        BinOp::Shl | BinOp::Shr if y < 0 => return Err(IntErr::NegativeShift),
        BinOp::Shl => {
            if y >= 128 {
                0
            } else {
                x.wrapping_shl(y as u32)
            }
        }
        BinOp::Shr => x >> y.min(127),
        BinOp::BitAnd => x & y,
        BinOp::BitOr => x | y,
        BinOp::BitXor => x ^ y,
        _ => 0,
    })
}

fn compare_f(op: BinOp, x: f64, y: f64) -> bool {
    match op {
        BinOp::Eq => x == y,
        BinOp::Ne => x != y,
        BinOp::Lt => x < y,
        BinOp::Le => x <= y,
        BinOp::Gt => x > y,
        BinOp::Ge => x >= y,
        BinOp::Approx => approx_eq(x, y),
        _ => false,
    }
}

fn compare_i(op: BinOp, x: i128, y: i128) -> bool {
    match op {
        BinOp::Eq | BinOp::Approx if x == y => true,
        BinOp::Approx => approx_eq(x as f64, y as f64),
        BinOp::Eq => false,
        BinOp::Ne => x != y,
        BinOp::Lt => x < y,
        BinOp::Le => x <= y,
        BinOp::Gt => x > y,
        BinOp::Ge => x >= y,
        _ => false,
    }
}

/// The elements of `src` at `idx`, as an array of `shape`: bytes copied as they are.
fn gather(src: &Array<'_>, idx: &[usize], shape: Shape) -> Array<'static> {
    match src.data() {
        Data::Bool(v) => Array::bools(shape, idx.iter().map(|&i| v[i]).collect()),
        Data::Num(b) => {
            let size = b.dtype().size();
            let mut out = Buffer::zeros(b.dtype(), shape);
            let (from, to) = (b.bytes(), out.bytes_mut());
            for (k, &i) in idx.iter().enumerate() {
                to[k * size..(k + 1) * size].copy_from_slice(&from[i * size..(i + 1) * size]);
            }
            Array::numbers(out)
        }
    }
}

/// The elements a slice selects, Python's `slice.indices` rules.
pub(crate) fn slice_positions(len: usize, start: Option<i128>, stop: Option<i128>, step: i128) -> Vec<usize> {
    let n = len as i128;
    let norm = |v: i128, lo: i128, hi: i128| if v < 0 { (v + n).max(lo) } else { v.min(hi) };
    let mut out = Vec::with_capacity(slice_count(len, start, stop, step));
    if step > 0 {
        let (mut i, stop) = (start.map_or(0, |s| norm(s, 0, n)), stop.map_or(n, |s| norm(s, 0, n)));
        while i < stop {
            out.push(i as usize);
            i = i.saturating_add(step);
        }
    } else {
        let mut i = start.map_or(n - 1, |s| norm(s, -1, n - 1));
        let stop = stop.map_or(-1, |s| norm(s, -1, n - 1));
        while i > stop {
            out.push(i as usize);
            i = i.saturating_add(step);
        }
    }
    out
}

/// How many elements [`slice_positions`] selects, without making them.
pub(crate) fn slice_count(len: usize, start: Option<i128>, stop: Option<i128>, step: i128) -> usize {
    let n = len as i128;
    let norm = |v: i128, lo: i128, hi: i128| if v < 0 { (v + n).max(lo) } else { v.min(hi) };
    let (from, to, step) = if step > 0 {
        (start.map_or(0, |s| norm(s, 0, n)), stop.map_or(n, |s| norm(s, 0, n)), step)
    } else {
        // Walking down from `from` to just above `to` is walking up the same distance.
        let from = start.map_or(n - 1, |s| norm(s, -1, n - 1));
        let to = stop.map_or(-1, |s| norm(s, -1, n - 1));
        (to, from, step.saturating_neg())
    };
    if to <= from { 0 } else { ((to - from - 1) / step + 1) as usize }
}

pub(crate) struct Cx<'a> {
    pub(crate) env: &'a dyn Env,
    pub(crate) src: &'a str,
    /// Bytes the statement may still allocate for arrays: the buffer limit less the session's
    /// buffers, less the arrays made so far that are still alive.
    left: Cell<u64>,
}

/// How often (in elements) a long loop over an array checks for Ctrl-C.
const CHECK_EVERY: usize = 1 << 20;

impl<'a> Cx<'a> {
    pub(crate) fn new(env: &'a dyn Env, src: &'a str) -> Cx<'a> {
        Cx { env, src, left: Cell::new(env.max_alloc_bytes()) }
    }

    pub(crate) fn text(&self, e: &Expr) -> &str {
        e.text(self.src)
    }

    /// Count `bytes` of a new array made for `e` against the limit, or say why it cannot be.
    fn charge(&self, e: &Expr, bytes: u64) -> Result<(), Diagnostic> {
        self.charge_span(e.span, bytes)
    }

    fn charge_span(&self, span: Span, bytes: u64) -> Result<(), Diagnostic> {
        let left = self.left.get();
        if bytes > left {
            let text = self.text_span(span);
            let total = self.env.max_alloc_bytes();
            let what = if left == total {
                format!("{text} needs {}, but only {} of the buffer limit is left", human(bytes), human(left))
            } else {
                format!(
                    "{text} needs {} more, but only {} of the buffer limit is left after the arrays this statement made on the way",
                    human(bytes),
                    human(left)
                )
            };
            return Err(Diagnostic::error(what).at(span).help(format!("{LIMIT_HELP}, or work on a slice")));
        }
        self.left.set(left - bytes);
        Ok(())
    }

    /// An operand that is no longer needed gives back what it was charged.
    fn release(&self, v: &V<'_>) {
        if let V::Arr(a) = v
            && !a.is_borrowed()
        {
            self.left.set(self.left.get().saturating_add(a.size_bytes()));
        }
    }

    /// A zeroed buffer for the result of `e`, charged against the limit.
    fn new_buffer(&self, e: &Expr, dtype: DType, shape: Shape) -> Result<Buffer, Diagnostic> {
        self.charge(e, shape.len() as u64 * dtype.size() as u64)?;
        Ok(Buffer::zeros(dtype, shape))
    }

    /// Room for `n` booleans for the result of `e`, charged against the limit.
    fn new_bools(&self, e: &Expr, n: usize) -> Result<Vec<bool>, Diagnostic> {
        self.charge(e, n as u64)?;
        Ok(Vec::with_capacity(n))
    }

    /// Called with each element index of a long loop: every [`CHECK_EVERY`] elements, stop
    /// when the learner pressed Ctrl-C.
    #[inline]
    fn tick(&self, i: usize, e: &Expr) -> Result<(), Diagnostic> {
        if i % CHECK_EVERY == CHECK_EVERY - 1 && self.env.cancelled() {
            return Err(Diagnostic::error(format!("`{}` was stopped (Ctrl-C)", self.text(e))).at(e.span));
        }
        Ok(())
    }

    /// [`build`], checking for Ctrl-C on the way (the constructor checked the limit).
    fn build(
        &self,
        e: &Expr,
        dtype: DType,
        shape: Shape,
        nums: impl IntoIterator<Item = Num>,
    ) -> Result<Array<'static>, Diagnostic> {
        let mut out = Buffer::zeros(dtype, shape);
        for (i, v) in nums.into_iter().enumerate().take(shape.len()) {
            self.tick(i, e)?;
            out.set(i, v);
        }
        Ok(Array::numbers(out))
    }

    fn text_span(&self, span: Span) -> &str {
        self.src.get(span.lo as usize..span.hi as usize).unwrap_or("?")
    }

    pub(crate) fn eval(&self, e: &Expr) -> Result<V<'a>, Diagnostic> {
        match &e.kind {
            ExprKind::Int(i) => Ok(V::Int(*i)),
            ExprKind::Float(f) => Ok(V::Float(*f)),
            ExprKind::Bool(b) => Ok(V::Bool(*b)),
            ExprKind::Name(n) => {
                let v = self.name(n, e.span)?;
                self.check_written(&v, n, e.span, None)?;
                Ok(v)
            }
            ExprKind::List(items) => {
                let arr = self.list(items, e.span, DType::F32)?;
                Ok(V::Arr(arr))
            }
            ExprKind::Str(_) => Err(Diagnostic::error("text can't be used here")
                .at(e.span)
                .help("text labels a `print`: `print(\"sum:\", sum(a))`")),
            ExprKind::Tuple(_) => Err(Diagnostic::error("a tuple is only a shape here")
                .at(e.span)
                .help("tuples give 2-D shapes to constructors, e.g. `zeros((3, 4))`, or grid sizes in launches; to keep a launch size, `let block = dim3(16, 16)`")),
            ExprKind::Call { func, func_span, args, kwargs } => self.call(func, *func_span, args, kwargs, e),
            ExprKind::Index { target, indices } => self.index(target, indices, e),
            ExprKind::Unary { op, op_span, operand } => {
                let v = self.eval(operand)?;
                self.unary(*op, *op_span, v, e)
            }
            ExprKind::Binary { op, op_span, lhs, rhs } => {
                // Deep expressions recurse through here: the list case keeps to its own frame.
                let (l, r) = if matches!(lhs.kind, ExprKind::List(_)) || matches!(rhs.kind, ExprKind::List(_)) {
                    self.eval_pair(lhs, rhs)?
                } else {
                    (self.eval(lhs)?, self.eval(rhs)?)
                };
                let out = self.binary(*op, *op_span, &l, &r, lhs, rhs, e);
                self.release(&l);
                self.release(&r);
                out
            }
        }
    }

    /// The two sides of a binary operation. A bare list beside an array takes the array's
    /// dtype (`u == [4294967295, 1]` on a `u32` buffer compares u32s exactly, where an f32
    /// list would have rounded it to 4294967300); a value that dtype cannot hold is an error
    /// that says so.
    #[inline(never)]
    pub(crate) fn eval_pair(&self, lhs: &Expr, rhs: &Expr) -> Result<(V<'a>, V<'a>), Diagnostic> {
        let typed = |list: &Expr, other: &V<'a>| -> Result<Option<V<'a>>, Diagnostic> {
            let (ExprKind::List(items), V::Arr(a)) = (&list.kind, other) else { return Ok(None) };
            let Some(dtype) = a.dtype() else { return Ok(None) };
            let arr = self.list(items, list.span, dtype).map_err(|d| {
                d.note(format!("a list beside a {dtype} array takes its dtype, so that it compares exactly"))
            })?;
            Ok(Some(V::Arr(arr)))
        };
        if matches!(lhs.kind, ExprKind::List(_)) {
            let r = self.eval(rhs)?;
            let l = match typed(lhs, &r)? {
                Some(l) => l,
                None => self.eval(lhs)?,
            };
            return Ok((l, r));
        }
        let l = self.eval(lhs)?;
        let r = match typed(rhs, &l)? {
            Some(r) => r,
            None => self.eval(rhs)?,
        };
        Ok((l, r))
    }

    /// `e` read for its shape or to be copied, not for its values: a buffer's unwritten
    /// elements are no error here (see [`Cx::check_written`]).
    fn eval_unread(&self, e: &Expr) -> Result<V<'a>, Diagnostic> {
        match &e.kind {
            ExprKind::Name(n) => self.name(n, e.span),
            _ => self.eval(e),
        }
    }

    /// A statement that reads the values of a buffer made with `empty` (all of them, or those
    /// at `positions`) must not read one that nothing wrote: there is no value to give.
    fn check_written(&self, v: &V<'_>, name: &str, span: Span, positions: Option<&[usize]>) -> Result<(), Diagnostic> {
        let V::Arr(a) = v else { return Ok(()) };
        let Data::Num(b) = a.data() else { return Ok(()) };
        let Some(unset) = b.unset() else { return Ok(()) };
        let first = match positions {
            Some(p) => p.iter().copied().find(|&i| unset.get(i) == Some(&true)),
            None => unset.iter().position(|x| *x),
        };
        let Some(i) = first else { return Ok(()) };
        let n = unset.iter().filter(|x| **x).count();
        let size = b.shape();
        let mut d = Diagnostic::error(format!(
            "`{name}` was made with `empty({size})` and element {i} was never written: it has no value to read"
        ))
        .at(span);
        if n > 1 {
            d = d.note(format!("{n} of its {} elements have not been written", b.len()));
        }
        Err(d
        .help(format!(
            "write it first (`{name}[:] = 0`, or with a kernel), or make `{name}` with `zeros` if it should start at 0; `{name}` alone shows which elements are unwritten (`?`)"
        )))
    }

    fn name(&self, n: &str, span: Span) -> Result<V<'a>, Diagnostic> {
        let env: &'a dyn Env = self.env;
        if let Some(b) = env.buffer(n) {
            return Ok(V::Arr(Array::from_buffer(b)));
        }
        if let Some(v) = env.scalar(n) {
            return Ok(V::from_value(v));
        }
        // `block.x`: a field of a dim3, as in CUDA.
        if let Some((record, field)) = n.split_once('.')
            && let Some(Value::Dim3(d)) = env.scalar(record)
        {
            return match field {
                "x" => Ok(V::Int(d[0] as i128)),
                "y" => Ok(V::Int(d[1] as i128)),
                "z" => Ok(V::Int(d[2] as i128)),
                _ => Err(Diagnostic::error(format!("a dim3 has no field `{field}`"))
                    .at(span)
                    .help(format!("its fields are `{record}.x`, `{record}.y` and `{record}.z`"))),
            };
        }
        Err(self.unknown_name(n, span))
    }

    /// `sizeof(float)`: the bytes of a C type (or a dtype), as on every CUDA platform (LP64).
    fn size_of(&self, arg: &Expr) -> Result<V<'a>, Diagnostic> {
        let ExprKind::Name(ty) = &arg.kind else {
            return Err(Diagnostic::error("`sizeof` takes a type here")
                .at(arg.span)
                .help("e.g. `sizeof(float)` is 4; gridlab counts a buffer's elements with `len(a)`"));
        };
        if self.env.buffer(ty).is_some() {
            return Err(Diagnostic::error(format!("`sizeof({ty})` of a buffer"))
                .at(arg.span)
                .help(format!(
                    "in C it would be a pointer's size; gridlab counts elements: `len({ty})`, and bytes are `len({ty}) * sizeof(float)`"
                )));
        }
        match super::habits::c_type_size(ty) {
            Some(n) => Ok(V::Int(n as i128)),
            None => Err(Diagnostic::error(format!("`{ty}` is not a type `sizeof` knows"))
                .at(arg.span)
                .help("the types are `float`, `double`, `int`, `unsigned int`, `long long`, `size_t`, `char`, `short`, `bool`, pointers (`float *`) and the dtypes `f32`, `i64`, ...")),
        }
    }

    fn unknown_name(&self, n: &str, span: Span) -> Diagnostic {
        if let Some(kind) = self.env.module_variable(n) {
            return Diagnostic::error(format!("`{n}` is a `{kind}` variable of the module, not a buffer"))
                .at(span)
                .label("kernels read it")
                .help(format!(
                    "a statement sets it whole, `{n} = [...]`, as cudaMemcpyToSymbol does, and cannot read it back; a kernel can copy it into a buffer"
                ));
        }
        let names = self.env.names();
        // `c.field`: a field of a record (`let c = cost ...`), or a method call from Python.
        if let Some((record, field)) = n.split_once('.') {
            if self.env.buffer(record).is_some() {
                let instead = match field {
                    "size" | "shape" | "len" => format!("write `len({record})`"),
                    "dtype" | "ndim" => "`:buffers` shows each buffer's dtype and shape".to_string(),
                    _ => format!("functions take the buffer, e.g. `sum({record})`, `len({record})`"),
                };
                return Diagnostic::error(format!("buffers have no fields: {instead}"))
                    .at(span)
                    .label(format!("`{record}` is a buffer"))
                    .help(format!(
                        "only `cost` records have fields: `let c = cost k<<<4, 256>>>({record}, len({record}))`, then `c.time_us`"
                    ));
            }
            let prefix = format!("{record}.");
            let fields: Vec<String> =
                names.iter().filter_map(|m| m.strip_prefix(&prefix)).map(|f| format!("`{f}`")).collect();
            if fields.is_empty() && !names.iter().any(|m| m == record) {
                // `c0.time_us` before any `let c0 = cost ...`: the record is what is missing.
                let d = Diagnostic::error(format!("`{record}` is not defined")).at(span).label("unknown name");
                let records = names.iter().filter_map(|m| m.split_once('.').map(|(r, _)| r));
                return match crate::diag::suggest::closest(record, records) {
                    Some(s) => d.help(format!("did you mean `{s}.{field}`?")),
                    None => d.help(format!(
                        "a record's fields come from a `cost` launch: `let {record} = cost k<<<4, 256>>>(a, len(a))`, then `{record}.{field}`"
                    )),
                };
            }
            return if fields.is_empty() {
                Diagnostic::error(format!("`{record}` has no field `{field}`")).at(span).label("not a record").help(
                    format!(
                        "only records have fields, e.g. `let {record} = cost k<<<4, 256>>>(a, len(a))` then `{record}.time_us`; \
                         there are no methods: write `len(a)`, not `a.len()`"
                    ),
                )
            } else {
                Diagnostic::error(format!("`{record}` has no field `{field}`"))
                    .at(span)
                    .label("unknown field")
                    .help(format!("its fields are {}", fields.join(", ")))
            };
        }
        let d = Diagnostic::error(format!("`{n}` is not defined")).at(span).label("unknown name");
        if let Some(s) = crate::diag::suggest::closest(n, names.iter().map(String::as_str)) {
            d.help(format!("did you mean `{s}`?"))
        } else if DType::parse(n).is_some() {
            d.help(format!("`{n}` is a dtype: pass it to a constructor, e.g. `zeros(1024, {n})`"))
        } else if super::builtins::find(n).is_some() {
            d.help(format!("`{n}` is a function: call it, e.g. `{n}(...)`"))
        } else {
            d.help(format!("define it first, e.g. `let {n} = zeros(1024)` or `let {n} = 1024`"))
        }
    }

    fn list(&self, items: &[Expr], span: Span, dtype: DType) -> Result<Array<'static>, Diagnostic> {
        let mut nums = Vec::new();
        let mut cols = None;
        let mut rows = 0;
        for item in items {
            if let ExprKind::List(row) = &item.kind {
                if cols.is_some_and(|c| c != row.len()) || (cols.is_none() && !nums.is_empty()) {
                    return Err(Diagnostic::error("rows of a matrix must have the same length")
                        .at(item.span)
                        .help("every inner list needs as many elements as the first one"));
                }
                cols = Some(row.len());
                rows += 1;
                for x in row {
                    nums.push(self.fit(self.scalar_num(x, "a list element")?, dtype, x)?);
                }
            } else {
                if cols.is_some() {
                    return Err(Diagnostic::error("mixing numbers and lists").at(item.span));
                }
                nums.push(self.fit(self.scalar_num(item, "a list element")?, dtype, item)?);
            }
        }
        let shape = match cols {
            Some(c) => Shape::D2(rows, c),
            None => Shape::D1(nums.len()),
        };
        self.check_alloc(span, dtype, shape.len())?;
        Ok(build(dtype, shape, nums))
    }

    /// A value written for a `dtype` element (a list's, a fill value): it must be exactly what
    /// the element holds. `array([300], u8)` and `array([1.5], i32)` are errors naming the value,
    /// where a C cast would wrap or truncate it without a word (`array(a, u8)` of a whole buffer
    /// is that cast, and wraps).
    fn fit(&self, n: Num, dtype: DType, e: &Expr) -> Result<Num, Diagnostic> {
        let text = self.text(e);
        if dtype.is_float() {
            let x = n.as_f64();
            if dtype == DType::F32 && x.is_finite() && x.abs() > f32::MAX as f64 {
                return Err(Diagnostic::error(format!("`{text}` is too large for f32"))
                    .at(e.span)
                    .help("f32 goes up to about 3.4e38; f64 holds more, e.g. `array([...], f64)`"));
            }
            return Ok(n);
        }
        if dtype == DType::Bool {
            // C's conversion to `bool` is a truth test, not a narrowing: `bool b = 2;` is true.
            return Ok(n);
        }
        let (lo, hi) = dtype.int_range().unwrap_or((0, u64::MAX as i128));
        let i = match n {
            Num::Int(i) => i,
            Num::Float(f) if f.is_finite() && f.fract() == 0.0 => f as i128,
            Num::Float(_) => {
                return Err(Diagnostic::error(format!("`{text}` is not a whole number, and {dtype} holds integers"))
                    .at(e.span)
                    .help(format!("{dtype} holds whole numbers from {lo} to {hi}")));
            }
        };
        if i < lo || i > hi {
            let d = Diagnostic::error(format!("`{text}` is out of range for {dtype}"))
                .at(e.span)
                .label(format!("{dtype} holds {lo} to {hi}"));
            return Err(if dtype.size() < 8 { d.help("a wider dtype holds more, e.g. i64") } else { d });
        }
        Ok(Num::Int(i))
    }

    fn scalar_num(&self, e: &Expr, what: &str) -> Result<Num, Diagnostic> {
        match self.eval(e)? {
            V::Int(i) => Ok(Num::Int(i)),
            V::Bool(b) => Ok(Num::Int(b as i128)),
            V::Float(f) => Ok(Num::Float(f)),
            V::Elem(n, _) => Ok(n),
            v @ (V::Arr(_) | V::Dim3(_)) => {
                Err(Diagnostic::error(format!("{what} must be a number, not {}", v.type_name())).at(e.span))
            }
        }
    }

    /// An integer argument: counts, indices, seeds.
    fn int_arg(&self, e: &Expr, what: &str) -> Result<i128, Diagnostic> {
        match self.eval(e)? {
            V::Int(i) | V::Elem(Num::Int(i), _) => Ok(i),
            V::Bool(b) => Ok(b as i128),
            v => {
                let d = Diagnostic::error(format!("{what} must be an integer, not {}", v.type_name())).at(e.span);
                Err(if matches!(v, V::Float(_) | V::Elem(..)) {
                    d.help(format!("convert it with `int({})`", self.text(e)))
                } else {
                    d
                })
            }
        }
    }

    /// A constructor's `n` elements of `dtype`, counted against the limit before anything is
    /// allocated (the array is all that is made: it becomes the buffer without a copy).
    fn check_alloc(&self, span: Span, dtype: DType, n: usize) -> Result<(), Diagnostic> {
        let bytes = n as u128 * dtype.size() as u128;
        let limit = self.left.get();
        if bytes > limit as u128 {
            return Err(Diagnostic::error(format!(
                "{} asks for {}, but only {} of the buffer limit is left",
                self.text_span(span),
                crate::diag::text::human_bytes(bytes),
                crate::diag::text::human_bytes(limit)
            ))
            .at(span)
            .help(LIMIT_HELP));
        }
        self.left.set(limit - bytes as u64);
        Ok(())
    }

    fn shape_arg(&self, e: &Expr) -> Result<Shape, Diagnostic> {
        let count = |x: &Expr| -> Result<usize, Diagnostic> {
            let n = self.int_arg(x, "a size")?;
            count_of(n, "a size", x.span, self.env.max_alloc_bytes())
        };
        match &e.kind {
            ExprKind::Tuple(items) if items.len() == 2 => Ok(Shape::D2(count(&items[0])?, count(&items[1])?)),
            ExprKind::Tuple(items) => {
                Err(Diagnostic::error(format!("arrays have 1 or 2 dimensions, not {}", items.len()))
                    .at(e.span)
                    .help("use a length `n` or a shape `(rows, cols)`"))
            }
            _ => Ok(Shape::D1(count(e)?)),
        }
    }

    /// Split a constructor's arguments: an optional dtype (last positional name or `dtype=`).
    fn dtype_arg<'e>(
        &self,
        args: &'e [Expr],
        kwargs: &'e [Kwarg],
        default: DType,
    ) -> Result<(&'e [Expr], DType), Diagnostic> {
        let as_dtype = |e: &Expr| match &e.kind {
            ExprKind::Name(n) if self.env.buffer(n).is_none() && self.env.scalar(n).is_none() => DType::parse(n),
            _ => None,
        };
        if let Some(k) = kwargs.iter().find(|k| k.name == "dtype") {
            let d = as_dtype(&k.value).ok_or_else(|| {
                Diagnostic::error(format!("`{}` is not a dtype", self.text(&k.value)))
                    .at(k.value.span)
                    .help(format!("dtypes are {}", DType::names().join(", ")))
            })?;
            return Ok((args, d));
        }
        match args.split_last() {
            Some((last, rest)) if as_dtype(last).is_some() => Ok((rest, as_dtype(last).unwrap_or(default))),
            _ => Ok((args, default)),
        }
    }

    fn arity(
        &self,
        func: &str,
        span: Span,
        args: &[Expr],
        range: (usize, usize),
        usage: &str,
    ) -> Result<(), Diagnostic> {
        if args.len() < range.0 || args.len() > range.1 {
            let want = if range.0 == range.1 { range.0.to_string() } else { format!("{} to {}", range.0, range.1) };
            return Err(Diagnostic::error(format!("`{func}` takes {want} arguments, {} given", args.len()))
                .at(span)
                .help(format!("usage: {usage}")));
        }
        Ok(())
    }

    fn no_kwargs(&self, func: &str, kwargs: &[Kwarg], allowed: &[&str]) -> Result<(), Diagnostic> {
        if let Some(k) = kwargs.iter().find(|k| !allowed.contains(&k.name.as_str())) {
            let help = if allowed.is_empty() {
                format!("`{func}` takes no keyword arguments")
            } else {
                format!("`{func}` accepts {}", allowed.iter().map(|a| format!("`{a}=`")).collect::<Vec<_>>().join(", "))
            };
            return Err(Diagnostic::error(format!("unknown keyword argument `{}`", k.name)).at(k.name_span).help(help));
        }
        Ok(())
    }

    fn call(
        &self,
        func: &str,
        func_span: Span,
        args: &[Expr],
        kwargs: &[Kwarg],
        e: &Expr,
    ) -> Result<V<'a>, Diagnostic> {
        let span = e.span;
        match func {
            "zeros" | "empty" | "ones" | "full" | "arange" | "linspace" | "random" | "randint" | "array" => {
                self.constructor(func, func_span, args, kwargs, e)
            }
            "copy" => {
                self.no_kwargs(func, kwargs, &[])?;
                self.arity(func, span, args, (1, 1), "copy(a)")?;
                // A copy keeps which elements are unwritten.
                match self.eval_unread(&args[0])? {
                    v @ V::Arr(_) => Ok(v),
                    v => {
                        Err(Diagnostic::error(format!("`copy` takes an array, not {}", v.type_name())).at(args[0].span))
                    }
                }
            }
            "dim3" => {
                self.no_kwargs(func, kwargs, &[])?;
                self.arity(func, span, args, (0, 3), "dim3(x), dim3(x, y) or dim3(x, y, z); missing sizes are 1")?;
                let mut d = [1u32; 3];
                for (slot, a) in d.iter_mut().zip(args) {
                    let n = self.int_arg(a, "a dim3 size")?;
                    *slot = u32::try_from(n).map_err(|_| {
                        Diagnostic::error(format!("a dim3 size is between 0 and {}, not {n}", u32::MAX))
                            .at(a.span)
                            .help("it counts blocks or threads along one axis")
                    })?;
                }
                Ok(V::Dim3(d))
            }
            "sizeof" => {
                self.no_kwargs(func, kwargs, &[])?;
                self.arity(func, span, args, (1, 1), "sizeof(float), sizeof(int), sizeof(double)")?;
                self.size_of(&args[0])
            }
            "print" => Err(Diagnostic::error("`print` shows values on a line of its own")
                .at(func_span)
                .help("write `print(x)` alone, or just `x`; inside an expression use the value itself")),
            _ if func.contains('.') => Err(super::habits::dotted_call(
                func,
                func_span,
                e,
                self.src,
                &|n| self.env.buffer(n).is_some() || self.env.scalar(n).is_some(),
                &|text| suggestion_runs(text, self.env),
            )),
            _ if super::builtins::find(func).is_some() => {
                self.no_kwargs(func, kwargs, &[])?;
                let usage = format!("{func}(x)");
                if matches!(func, "min" | "max") && args.len() >= 2 {
                    return self.min_max_scalars(func, args);
                }
                self.arity(func, span, args, (1, 1), &usage)?;
                let v = if func == "len" { self.eval_unread(&args[0])? } else { self.eval(&args[0])? };
                if matches!(v, V::Dim3(_)) {
                    return Err(self.dim3_misused(&args[0]));
                }
                self.function(func, v, &args[0], e)
            }
            _ => {
                let d = Diagnostic::error(format!("unknown function `{func}`")).at(func_span).label("not a function");
                Err(match crate::diag::suggest::closest(func, super::builtins::names()) {
                    Some(s) => d.help(format!("did you mean `{s}`?")),
                    None => d.help(format!(
                        "the functions are {} (`:help functions` says what each does)",
                        super::builtins::names().collect::<Vec<_>>().join(", ")
                    )),
                })
            }
        }
    }

    fn min_max_scalars(&self, func: &str, args: &[Expr]) -> Result<V<'a>, Diagnostic> {
        let mut best: Option<(f64, V)> = None;
        for a in args {
            let v = self.eval(a)?;
            let Some(x) = (match &v {
                V::Int(i) => Some(*i as f64),
                V::Float(f) => Some(*f),
                V::Elem(n, _) => Some(n.as_f64()),
                _ => None,
            }) else {
                return Err(Diagnostic::error(format!(
                    "`{func}` of several values needs numbers, not {}",
                    v.type_name()
                ))
                .at(a.span)
                .help(format!("`{func}(a)` reduces one array")));
            };
            let better = best.as_ref().is_none_or(|(b, _)| if func == "min" { x < *b } else { x > *b });
            if better {
                best = Some((x, v));
            }
        }
        Ok(best.map(|(_, v)| v).unwrap_or(V::Int(0)))
    }

    fn function(&self, func: &str, v: V<'a>, arg: &Expr, e: &Expr) -> Result<V<'a>, Diagnostic> {
        let arr_needed = |v: &V| {
            Diagnostic::error(format!("`{func}` needs an array, not {}", v.type_name()))
                .at(arg.span)
                .help(format!("e.g. `{func}(a)` where `a` is an array"))
        };
        match func {
            "len" => match &v {
                V::Arr(a) => Ok(V::Int(a.len() as i128)),
                _ => Err(arr_needed(&v)),
            },
            "all" | "any" | "count" => {
                let (n_true, n) = match &v {
                    V::Arr(a) => {
                        let lane = b_lane(&v);
                        let mut n_true = 0;
                        for i in 0..a.len() {
                            self.tick(i, e)?;
                            n_true += lane.at(i) as usize;
                        }
                        (n_true, a.len())
                    }
                    s => (s.truth().unwrap_or(false) as usize, 1),
                };
                Ok(match func {
                    "all" => V::Bool(n_true == n),
                    "any" => V::Bool(n_true > 0),
                    _ => V::Int(n_true as i128),
                })
            }
            "sum" | "mean" | "min" | "max" => {
                let V::Arr(a) = &v else {
                    return Ok(if func == "mean" {
                        V::Float(v.truth().map_or(0.0, |_| f_lane(&v, false).at(0)))
                    } else {
                        v
                    });
                };
                if a.is_empty() && func != "sum" {
                    return Err(Diagnostic::error(format!("`{func}` of an empty array")).at(arg.span));
                }
                let n = a.len();
                Ok(match (a.dtype(), func) {
                    (Some(d), _) if d.is_float() => {
                        let x = f_lane(&v, false);
                        // Sums start from 0.0 (Rust's from -0.0, so an empty sum would be -0).
                        let mut acc = match func {
                            "min" => f64::INFINITY,
                            "max" => f64::NEG_INFINITY,
                            _ => 0.0,
                        };
                        for i in 0..n {
                            self.tick(i, e)?;
                            acc = match func {
                                "min" => nan_min(acc, x.at(i)),
                                "max" => nan_max(acc, x.at(i)),
                                _ => acc + x.at(i),
                            };
                        }
                        if func == "mean" {
                            acc /= n as f64;
                        }
                        V::Elem(Num::Float(round_to(acc, d)), d)
                    }
                    (Some(_), "mean") => {
                        let x = f_lane(&v, false);
                        let mut acc = 0.0;
                        for i in 0..n {
                            self.tick(i, e)?;
                            acc += x.at(i);
                        }
                        V::Elem(Num::Float(acc / n as f64), DType::F64)
                    }
                    (Some(d), _) => {
                        let x = i_lane(&v);
                        let mut acc: Option<i128> = None;
                        for i in 0..n {
                            self.tick(i, e)?;
                            let y = x.at(i);
                            acc = Some(match (acc, func) {
                                (None, "sum") => y,
                                (None, _) => y,
                                (Some(s), "sum") => s.wrapping_add(y),
                                (Some(s), "min") => s.min(y),
                                (Some(s), _) => s.max(y),
                            });
                        }
                        let acc = acc.unwrap_or(0);
                        if func == "sum" {
                            V::Elem(Num::Int(wrap(acc, sum_dtype(d))), sum_dtype(d))
                        } else {
                            V::Elem(Num::Int(acc), d)
                        }
                    }
                    (None, _) => {
                        let x = b_lane(&v);
                        let mut trues = 0usize;
                        for i in 0..n {
                            self.tick(i, e)?;
                            trues += x.at(i) as usize;
                        }
                        match func {
                            "sum" => V::Elem(Num::Int(trues as i128), DType::I64),
                            "mean" => V::Float(trues as f64 / n as f64),
                            "min" => V::Bool(trues == n),
                            _ => V::Bool(trues > 0),
                        }
                    }
                })
            }
            "abs" => self.unary_map(&v, e, |x| x.abs(), |i| i.checked_abs()),
            "round" => self.unary_map(&v, e, f64::round_ties_even, Some),
            "floor" => self.unary_map(&v, e, f64::floor, Some),
            "ceil" => self.unary_map(&v, e, f64::ceil, Some),
            "sqrt" | "exp" | "log" => {
                let f: fn(f64) -> f64 = match func {
                    "sqrt" => f64::sqrt,
                    "exp" => f64::exp,
                    _ => f64::ln,
                };
                match &v {
                    V::Int(i) => self.unary_map(&V::Float(*i as f64), e, f, Some),
                    V::Bool(b) => self.unary_map(&V::Float(*b as u8 as f64), e, f, Some),
                    V::Elem(Num::Int(i), _) => self.unary_map(&V::Elem(Num::Float(*i as f64), DType::F64), e, f, Some),
                    V::Arr(a) if a.dtype().is_none_or(|d| !d.is_float()) => {
                        // Integers and booleans give `f64`, as in numpy.
                        let x = f_lane(&v, false);
                        let mut out = self.new_buffer(e, DType::F64, a.shape())?;
                        for i in 0..a.len() {
                            self.tick(i, e)?;
                            out.set_f64(i, f(x.at(i)));
                        }
                        Ok(V::Arr(Array::numbers(out)))
                    }
                    v => self.unary_map(v, e, f, Some),
                }
            }
            "float" => match v {
                V::Int(i) | V::Elem(Num::Int(i), _) => Ok(V::Float(i as f64)),
                V::Bool(b) => Ok(V::Float(b as u8 as f64)),
                V::Float(f) | V::Elem(Num::Float(f), _) => Ok(V::Float(f)),
                V::Dim3(_) => Err(self.dim3_misused(arg)),
                V::Arr(_) => Err(Diagnostic::error("`float` converts a scalar, not an array")
                    .at(arg.span)
                    .help(format!("to convert an array, write `array({}, f64)`", self.text(arg)))),
            },
            "int" => match v {
                V::Int(i) | V::Elem(Num::Int(i), _) => Ok(V::Int(i)),
                V::Bool(b) => Ok(V::Int(b as i128)),
                V::Float(f) | V::Elem(Num::Float(f), _) if f.is_finite() => Ok(V::Int(f.trunc() as i128)),
                V::Float(_) | V::Elem(..) => {
                    Err(Diagnostic::error("can't convert nan or inf to an integer").at(arg.span))
                }
                V::Dim3(_) => Err(self.dim3_misused(arg)),
                V::Arr(_) => Err(Diagnostic::error("`int` converts a scalar, not an array")
                    .at(arg.span)
                    .help(format!("to convert an array, write `array({}, i32)`", self.text(arg)))),
            },
            _ => unreachable!("`{func}` is handled in `call`"),
        }
    }

    /// Apply a function elementwise, keeping the dtype (booleans become `i64` 0 and 1).
    fn unary_map(
        &self,
        v: &V<'_>,
        e: &Expr,
        f: fn(f64) -> f64,
        g: fn(i128) -> Option<i128>,
    ) -> Result<V<'a>, Diagnostic> {
        let overflow = || Diagnostic::error("integer overflow").at(e.span);
        Ok(match v {
            V::Int(i) => V::Int(g(*i).ok_or_else(overflow)?),
            V::Bool(b) => V::Int(*b as i128),
            V::Float(x) => V::Float(f(*x)),
            V::Elem(Num::Int(i), d) => V::Elem(Num::Int(wrap(g(*i).ok_or_else(overflow)?, *d)), *d),
            V::Elem(Num::Float(x), d) => V::Elem(Num::Float(round_to(f(*x), *d)), *d),
            V::Dim3(_) => return Err(self.dim3_misused(e)),
            V::Arr(a) => {
                let dtype = a.dtype().unwrap_or(DType::I64);
                let mut out = self.new_buffer(e, dtype, a.shape())?;
                if dtype.is_float() {
                    let x = f_lane(v, false);
                    for i in 0..a.len() {
                        self.tick(i, e)?;
                        out.set_f64(i, f(x.at(i)));
                    }
                } else {
                    let x = i_lane(v);
                    for i in 0..a.len() {
                        self.tick(i, e)?;
                        let y = x.at(i);
                        out.set_int(i, wrap(g(y).unwrap_or(y), dtype));
                    }
                }
                V::Arr(Array::numbers(out))
            }
        })
    }

    fn constructor(
        &self,
        func: &str,
        func_span: Span,
        args: &[Expr],
        kwargs: &[Kwarg],
        e: &Expr,
    ) -> Result<V<'a>, Diagnostic> {
        let default = if func == "randint" { DType::I32 } else { DType::F32 };
        let allowed: &[&str] = match func {
            "random" => &["dtype", "seed"],
            "randint" => &["dtype", "seed"],
            _ => &["dtype"],
        };
        self.no_kwargs(func, kwargs, allowed)?;
        let (args, dtype) = self.dtype_arg(args, kwargs, default)?;
        let (range, usage) = match func {
            "zeros" | "empty" | "ones" => {
                ((1, 1), format!("{func}(n) or {func}((rows, cols)), optionally with a dtype: {func}(n, i32)"))
            }
            "full" => ((2, 2), "full(n, value[, dtype])".to_string()),
            "arange" => ((1, 3), "arange(stop) or arange(start, stop[, step]), optionally with a dtype".to_string()),
            "linspace" => ((3, 3), "linspace(start, stop, n[, dtype]), including stop".to_string()),
            "random" => ((1, 1), "random(n, seed=S[, dtype]): uniform in [0, 1)".to_string()),
            "randint" => ((3, 3), "randint(n, lo, hi, seed=S[, dtype]): integers in [lo, hi)".to_string()),
            _ => ((1, 1), "array([1, 2, 3], i32) or array(a, f64)".to_string()),
        };
        self.arity(func, e.span, args, range, &usage)?;
        let seed = match kwargs.iter().find(|k| k.name == "seed") {
            Some(k) => {
                let s = self.int_arg(&k.value, "a seed")?;
                u64::try_from(s).map_err(|_| {
                    Diagnostic::error(format!("a seed is between 0 and 2^64 - 1, not {s}")).at(k.value.span)
                })?
            }
            None => 0,
        };
        let sized = |shape: Shape| self.check_alloc(e.span, dtype, shape.len()).map(|()| shape);
        let arr = match func {
            "empty" => Array::numbers(Buffer::empty(dtype, sized(self.shape_arg(&args[0])?)?)),
            "zeros" | "ones" | "full" => {
                let shape = sized(self.shape_arg(&args[0])?)?;
                let v = match func {
                    "zeros" => Num::Int(0),
                    "ones" => Num::Int(1),
                    _ => self.fit(self.scalar_num(&args[1], "the fill value")?, dtype, &args[1])?,
                };
                // Zeroed memory, which the system gives without writing it; or one element's
                // bytes, copied.
                let mut b = Buffer::zeros(dtype, shape);
                if func != "zeros" {
                    b.fill(v);
                }
                Array::numbers(b)
            }
            "arange" => {
                let nums: Vec<Num> =
                    args.iter().map(|a| self.scalar_num(a, "an `arange` bound")).collect::<Result<_, _>>()?;
                let (start, stop, step) = match nums[..] {
                    [stop] => (Num::Int(0), stop, Num::Int(1)),
                    [start, stop] => (start, stop, Num::Int(1)),
                    [start, stop, step] => (start, stop, step),
                    _ => unreachable!("arity checked"),
                };
                if step.as_f64() == 0.0 {
                    return Err(Diagnostic::error("`arange` step can't be zero").at(args[2].span));
                }
                let count = ((stop.as_f64() - start.as_f64()) / step.as_f64()).ceil().max(0.0);
                if !count.is_finite() {
                    return Err(Diagnostic::error("`arange` bounds must be finite").at(e.span));
                }
                let shape = sized(Shape::D1(count.min(u64::MAX as f64) as usize))?;
                match (start, step) {
                    (Num::Int(a), Num::Int(s)) => self.build(
                        e,
                        dtype,
                        shape,
                        (0..shape.len()).map(|i| Num::Int(a.wrapping_add(s.wrapping_mul(i as i128)))),
                    )?,
                    _ => self.build(
                        e,
                        dtype,
                        shape,
                        (0..shape.len()).map(|i| Num::Float(start.as_f64() + step.as_f64() * i as f64)),
                    )?,
                }
            }
            "linspace" => {
                let a = self.scalar_num(&args[0], "`linspace` start")?.as_f64();
                let b = self.scalar_num(&args[1], "`linspace` stop")?.as_f64();
                let n = self.int_arg(&args[2], "`linspace` count")?;
                let n = count_of(n, "a count", args[2].span, self.env.max_alloc_bytes())?;
                let shape = sized(Shape::D1(n))?;
                let step = if n > 1 { (b - a) / (n - 1) as f64 } else { 0.0 };
                self.build(
                    e,
                    dtype,
                    shape,
                    (0..n).map(|i| Num::Float(if i + 1 == n && n > 1 { b } else { a + step * i as f64 })),
                )?
            }
            "random" => {
                if !dtype.is_float() {
                    return Err(Diagnostic::error(format!("`random` makes floats, not {dtype}"))
                        .at(func_span)
                        .help("for integers use `randint(n, lo, hi, seed=S)`"));
                }
                let shape = sized(self.shape_arg(&args[0])?)?;
                let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
                self.build(e, dtype, shape, (0..shape.len()).map(|_| Num::Float(uniform(&mut rng, dtype))))?
            }
            "randint" => {
                if dtype.is_float() {
                    return Err(Diagnostic::error(format!("`randint` makes integers, not {dtype}"))
                        .at(func_span)
                        .help("for floats use `random(n, seed=S)`"));
                }
                let shape = sized(self.shape_arg(&args[0])?)?;
                let lo = self.int_arg(&args[1], "`randint`'s low bound")?;
                let hi = self.int_arg(&args[2], "`randint`'s high bound")?;
                let range = hi.checked_sub(lo).filter(|r| *r > 0 && *r <= u64::MAX as i128 + 1).ok_or_else(|| {
                    Diagnostic::error(format!("`randint` needs lo < hi, got [{lo}, {hi})"))
                        .at(args[1].span.to(args[2].span))
                        .help("the range is half-open: `randint(n, 0, 10)` gives 0 to 9")
                })?;
                let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
                self.build(
                    e,
                    dtype,
                    shape,
                    (0..shape.len()).map(|_| Num::Int(lo + below(&mut rng, range as u128) as i128)),
                )?
            }
            _ => match &args[0].kind {
                ExprKind::List(items) => self.list(items, e.span, dtype)?,
                _ => match self.eval(&args[0])? {
                    V::Arr(a) => {
                        self.check_alloc(e.span, dtype, a.len())?;
                        self.build(e, dtype, a.shape(), (0..a.len()).map(|i| a.num(i)))?
                    }
                    v => {
                        return Err(Diagnostic::error(format!(
                            "`array` takes a list or an array, not {}",
                            v.type_name()
                        ))
                        .at(args[0].span)
                        .help("e.g. `array([1, 2, 3], i32)`"));
                    }
                },
            },
        };
        Ok(V::Arr(arr))
    }

    fn index(&self, target: &Expr, indices: &[Index], e: &Expr) -> Result<V<'a>, Diagnostic> {
        // A session's buffer is read in place (borrowed), a computed array as it is.
        let target_v = self.eval_unread(target)?;
        let V::Arr(src) = &target_v else {
            return Err(Diagnostic::error(format!(
                "`{}` is {}, not an array",
                self.text(target),
                target_v.type_name()
            ))
            .at(target.span)
            .help("only arrays can be indexed"));
        };
        let (flat, kept, held) = self.select(src, self.text(target), indices, e)?;
        if let Err(d) = self.check_written(&target_v, self.text(target), e.span, Some(&flat)) {
            self.left.set(self.left.get() + held);
            return Err(d);
        }
        let element_bytes = src.dtype().map_or(1, |d| d.size() as u64);
        let out = match kept[..] {
            [] => {
                let n = src.num(flat[0]);
                match src.dtype() {
                    Some(d) => V::Elem(n, d),
                    None => V::Bool(n.as_f64() != 0.0),
                }
            }
            [n] => {
                self.charge(e, n as u64 * element_bytes)?;
                V::Arr(gather(src, &flat, Shape::D1(n)))
            }
            [r, c] => {
                self.charge(e, (r * c) as u64 * element_bytes)?;
                V::Arr(gather(src, &flat, Shape::D2(r, c)))
            }
            _ => {
                self.left.set(self.left.get() + held);
                return Err(Diagnostic::error("this selects three dimensions; statements show at most two")
                    .at(e.span)
                    .help(format!("fix one index (`{}[0]`), or show the whole array by its name", self.text(target))));
            }
        };
        // The positions are gone.
        self.left.set(self.left.get() + held);
        self.release(&target_v);
        Ok(out)
    }

    /// The elements `name[indices]` selects, as flat positions, and the lengths of the
    /// dimensions the result keeps (none for one element). Shared by reading (`a[3]`) and
    /// assigning (`a[3] = 5`), so both check indices alike. The positions count against the
    /// limit before they are made; the caller gives back the bytes returned last once it no
    /// longer holds them.
    fn select(
        &self,
        src: &Array<'_>,
        name: &str,
        indices: &[Index],
        e: &Expr,
    ) -> Result<(Vec<usize>, Vec<usize>, u64), Diagnostic> {
        let held = Cell::new(0u64);
        let hold = |n: usize| -> Result<(), Diagnostic> {
            let bytes = n as u64 * std::mem::size_of::<usize>() as u64;
            self.charge(e, bytes)?;
            held.set(held.get() + bytes);
            Ok(())
        };
        let out = self.select_held(src, name, indices, e, &hold);
        if out.is_err() {
            self.left.set(self.left.get() + held.get());
        }
        out.map(|(flat, kept)| (flat, kept, held.get()))
    }

    fn select_held(
        &self,
        src: &Array<'_>,
        name: &str,
        indices: &[Index],
        e: &Expr,
        hold: &dyn Fn(usize) -> Result<(), Diagnostic>,
    ) -> Result<(Vec<usize>, Vec<usize>), Diagnostic> {
        let shape = src.shape();
        // A boolean mask selects elements: `a[a > 0]`.
        if let [Index::At(ie)] = indices
            && let V::Arr(m) = self.eval(ie)?
        {
            let Data::Bool(mask) = m.data() else {
                return Err(Diagnostic::error("an array index must be a comparison (a mask)")
                    .at(ie.span)
                    .help("e.g. `a[a > 0]`; integer array indices aren't supported"));
            };
            if mask.len() != shape.len() {
                return Err(Diagnostic::error(format!(
                    "the mask has {} elements but `{name}` has {}",
                    mask.len(),
                    shape.len()
                ))
                .at(ie.span));
            }
            hold(mask.iter().filter(|&&m| m).count())?;
            let idx: Vec<usize> = (0..mask.len()).filter(|&i| mask[i]).collect();
            let n = idx.len();
            self.release(&V::Arr(m));
            return Ok((idx, vec![n]));
        }
        let dims: Vec<usize> = match (self.env.dims(name), shape) {
            // A Python program's three-dimensional array: its buffer is flat.
            (Some(d), Shape::D1(n)) if d.len() == 3 && d.iter().product::<usize>() == n => d,
            (_, Shape::D1(n)) => vec![n],
            (_, Shape::D2(r, c)) => vec![r, c],
        };
        if indices.len() > dims.len() {
            return Err(Diagnostic::error(format!(
                "`{name}` has {} dimension{} but {} indices were given",
                dims.len(),
                if dims.len() == 1 { "" } else { "s" },
                indices.len()
            ))
            .at(e.span)
            .help(format!("`{name}` is {}", src.type_name())));
        }
        // Positions along each dimension, and whether the dimension is kept.
        let mut per_dim: Vec<(Vec<usize>, bool)> = Vec::new();
        for (d, &len) in dims.iter().enumerate() {
            let Some(ix) = indices.get(d) else {
                hold(len)?;
                per_dim.push(((0..len).collect(), true));
                continue;
            };
            match ix {
                Index::At(ie) => {
                    let i = self.int_arg(ie, "an index")?;
                    let what = match (dims.len(), d) {
                        (1, _) => "index",
                        (3, _) => ["first index", "second index", "third index"][d],
                        (_, 0) => "row index",
                        _ => "column index",
                    };
                    let n = len as i128;
                    if i >= n || i < -n {
                        let valid = if len == 0 {
                            format!("`{name}` is empty")
                        } else {
                            format!("valid 0..={} or -{len}..=-1", len - 1)
                        };
                        let unit = match what {
                            "index" => format!("length {len}"),
                            "row index" => format!("{len} rows"),
                            "column index" => format!("{len} columns"),
                            _ => format!("{len} along that dimension"),
                        };
                        return Err(Diagnostic::error(format!(
                            "{what} {i} is out of range for `{name}` ({unit}, {valid})"
                        ))
                        .at(ie.span)
                        .help("negative indices count from the end: `a[-1]` is the last element"));
                    }
                    per_dim.push((vec![if i < 0 { (i + n) as usize } else { i as usize }], false));
                }
                Index::Slice { start, stop, step, .. } => {
                    let bound =
                        |b: &Option<Box<Expr>>| b.as_ref().map(|x| self.int_arg(x, "a slice bound")).transpose();
                    let step_v = bound(step)?.unwrap_or(1);
                    if step_v == 0 {
                        let s = step.as_ref().map_or(e.span, |x| x.span);
                        return Err(Diagnostic::error("a slice step can't be zero")
                            .at(s)
                            .help("e.g. `a[::2]` takes every other element"));
                    }
                    let (start, stop) = (bound(start)?, bound(stop)?);
                    hold(slice_count(len, start, stop, step_v))?;
                    per_dim.push((slice_positions(len, start, stop, step_v), true));
                }
            }
        }
        hold(per_dim.iter().map(|(p, _)| p.len()).product())?;
        // Row-major: each position along a dimension stands for `stride` flat elements.
        let mut flat = vec![0usize];
        for (d, (positions, _)) in per_dim.iter().enumerate() {
            let stride: usize = dims[d + 1..].iter().product();
            flat = flat.iter().flat_map(|&base| positions.iter().map(move |&p| base + p * stride)).collect();
        }
        let kept: Vec<usize> = per_dim.iter().filter(|(_, k)| *k).map(|(p, _)| p.len()).collect();
        Ok((flat, kept))
    }

    /// `NAME[INDICES] = VALUE`: where the new values go and what they are, checked against the
    /// buffer's dtype. Nothing is changed here: the session stores the result.
    fn assign(&self, target: &Expr, value: &Expr) -> Result<Assignment, Diagnostic> {
        let ExprKind::Index { target: base, indices } = &target.kind else {
            return Err(Diagnostic::error("only elements of a buffer can be assigned")
                .at(target.span)
                .help("write `a[3] = 5`, `a[2:6] = 0` or `a[a < 0] = 0`; a name gets a new value with `let`"));
        };
        let ExprKind::Name(name) = &base.kind else {
            return Err(Diagnostic::error(format!("`{}` is not a buffer's name", self.text(base)))
                .at(base.span)
                .help("assign to a buffer's elements by its name: `a[3] = 5`"));
        };
        let Some(buf) = self.env.buffer(name) else {
            return Err(match self.env.scalar(name) {
                Some(v) => Diagnostic::error(format!("`{name}` is {}, not a buffer", v.type_name()))
                    .at(base.span)
                    .help(format!("only buffers have elements; give `{name}` a new value with `let {name} = ...`")),
                None => self.unknown_name(name, base.span),
            });
        };
        // The positions and values are held until the session stores them: they count against
        // the limit (a position is a word, a value a `Num`; one value for a scalar).
        let (positions, kept, _) = self.select(&Array::from_buffer(buf), name, indices, target)?;
        let dtype = buf.dtype();
        let one = |n: Num, at: Option<usize>| self.store_num(n, dtype, name, value, at);
        // A list's numbers go to the buffer as written (checked to fit its dtype), so
        // `u[0:2] = [4294967295, 1]` stores what it says: an f32 list would have rounded it.
        if let ExprKind::List(items) = &value.kind
            && !items.iter().any(|i| matches!(i.kind, ExprKind::List(_)))
            && items.len() == positions.len()
        {
            let mut values = Vec::with_capacity(items.len());
            for (i, item) in items.iter().enumerate() {
                values.push(one(self.scalar_num(item, "a list element")?, Some(i))?);
            }
            return Ok(Assignment { name: name.clone(), positions, values });
        }
        let v = self.eval(value)?;
        let values = match &v {
            V::Arr(a) => {
                if a.len() != positions.len() {
                    let what = if kept.is_empty() {
                        "one element".to_string()
                    } else {
                        format!("{} elements", positions.len())
                    };
                    return Err(Diagnostic::error(format!(
                        "`{}` selects {what}, but the value has {}",
                        self.text(target),
                        a.len()
                    ))
                    .at(value.span)
                    .help("give one number for every selected element, or as many values as there are elements"));
                }
                self.charge(value, a.len() as u64 * std::mem::size_of::<Num>() as u64)?;
                let mut values = Vec::with_capacity(a.len());
                for i in 0..a.len() {
                    self.tick(i, value)?;
                    values.push(one(a.num(i), Some(i))?);
                }
                values
            }
            V::Dim3(_) => return Err(self.dim3_misused(value)),
            scalar => {
                let n = match scalar {
                    V::Int(i) => Num::Int(*i),
                    V::Bool(b) => Num::Int(*b as i128),
                    V::Float(f) => Num::Float(*f),
                    V::Elem(n, _) => *n,
                    V::Arr(_) | V::Dim3(_) => unreachable!("matched above"),
                };
                // One value for every position (see `Assignment::values`).
                vec![one(n, None)?]
            }
        };
        Ok(Assignment { name: name.clone(), positions, values })
    }

    /// One value stored into a `dtype` element: a float into an integer buffer must be whole,
    /// and every value must fit, so nothing is silently wrapped or rounded away.
    fn store_num(&self, n: Num, dtype: DType, name: &str, value: &Expr, at: Option<usize>) -> Result<Num, Diagnostic> {
        let which = at.map_or(String::new(), |i| format!(" (element {i} of the value)"));
        let shown = format_num(n, Some(if matches!(n, Num::Float(_)) { DType::F64 } else { DType::I64 }));
        if dtype.is_float() {
            let x = n.as_f64();
            if dtype == DType::F32 && x.is_finite() && x.abs() > f32::MAX as f64 {
                return Err(Diagnostic::error(format!("{shown} is too large for `{name}`, which holds f32{which}"))
                    .at(value.span)
                    .help(format!(
                        "f32 goes up to about 3.4e38; an f64 buffer holds more: `let {name} = array({name}, f64)`"
                    )));
            }
            return Ok(Num::Float(round_to(x, dtype)));
        }
        let i = match n {
            Num::Int(i) => i,
            Num::Float(f) if f.is_finite() && f.fract() == 0.0 => f as i128,
            Num::Float(_) => {
                return Err(Diagnostic::error(format!(
                    "`{name}` holds {dtype}, but {shown} is not a whole number{which}"
                ))
                .at(value.span)
                .help(format!("drop the fraction with `int({})`, or use a float buffer", self.text(value))));
            }
        };
        if wrap(i, dtype) != i {
            let (lo, hi) = dtype.int_range().unwrap_or((0, u64::MAX as i128));
            return Err(Diagnostic::error(format!("{i} does not fit in `{name}`'s {dtype} elements{which}"))
                .at(value.span)
                .help(if dtype.size() < 8 {
                    format!("{dtype} holds {lo} to {hi}; a wider buffer holds more: `let {name} = array({name}, i64)`")
                } else {
                    format!("{dtype} holds {lo} to {hi}")
                }));
        }
        Ok(Num::Int(i))
    }

    fn unary(&self, op: UnOp, op_span: Span, v: V<'a>, e: &Expr) -> Result<V<'a>, Diagnostic> {
        if let (V::Dim3(_), ExprKind::Unary { operand, .. }) = (&v, &e.kind) {
            return Err(self.dim3_misused(operand));
        }
        let float_err = |what: &str| {
            Diagnostic::error(format!("`~` needs integers or booleans, not {what}"))
                .at(op_span)
                .help("for logical not, use `not`")
        };
        if let V::Arr(a) = &v
            && op != UnOp::Plus
        {
            let out = match (op, a.dtype()) {
                (UnOp::Not, _) | (UnOp::Invert, None) => {
                    let lane = b_lane(&v);
                    let mut out = self.new_bools(e, a.len())?;
                    for i in 0..a.len() {
                        self.tick(i, e)?;
                        out.push(!lane.at(i));
                    }
                    V::Arr(Array::bools(a.shape(), out))
                }
                (UnOp::Invert, Some(d)) if d.is_float() => return Err(float_err(&format!("{d} elements"))),
                (UnOp::Invert, Some(d)) => {
                    let lane = i_lane(&v);
                    let mut out = self.new_buffer(e, d, a.shape())?;
                    for i in 0..a.len() {
                        self.tick(i, e)?;
                        out.set_int(i, wrap(!lane.at(i), d));
                    }
                    V::Arr(Array::numbers(out))
                }
                _ => self.unary_map(&v, e, |x| -x, |i| Some(i.wrapping_neg()))?,
            };
            self.release(&v);
            return Ok(out);
        }
        Ok(match (op, v) {
            (UnOp::Not, s) => V::Bool(!s.truth().unwrap_or(false)),
            (UnOp::Plus, V::Bool(b)) => V::Int(b as i128),
            (UnOp::Plus, v) => v,
            (UnOp::Neg, V::Int(i)) => {
                V::Int(i.checked_neg().ok_or_else(|| Diagnostic::error("integer overflow").at(e.span))?)
            }
            (UnOp::Neg, V::Bool(b)) => V::Int(-(b as i128)),
            (UnOp::Neg, v) => self.unary_map(&v, e, |x| -x, |i| Some(i.wrapping_neg()))?,
            (UnOp::Invert, V::Bool(b)) => V::Bool(!b),
            (UnOp::Invert, V::Int(i)) => V::Int(!i),
            (UnOp::Invert, V::Elem(Num::Int(i), d)) => V::Elem(Num::Int(wrap(!i, d)), d),
            (UnOp::Invert, v) => return Err(float_err(&v.type_name())),
        })
    }

    /// `l op r` for the expression `e` (whose operands are `le` and `re`).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn binary(
        &self,
        op: BinOp,
        op_span: Span,
        l: &V<'_>,
        r: &V<'_>,
        le: &Expr,
        re: &Expr,
        e: &Expr,
    ) -> Result<V<'a>, Diagnostic> {
        if let (V::Dim3(x), V::Dim3(y)) = (l, r)
            && matches!(op, BinOp::Eq | BinOp::Ne)
        {
            return Ok(V::Bool((x == y) == (op == BinOp::Eq)));
        }
        if matches!(l, V::Dim3(_)) {
            return Err(self.dim3_misused(le));
        }
        if matches!(r, V::Dim3(_)) {
            return Err(self.dim3_misused(re));
        }
        // Lengths: two arrays must agree; a scalar goes with every element.
        let (la, ra) = (l.array(), r.array());
        if let (Some(a), Some(b)) = (la, ra)
            && a.len() != b.len()
        {
            return Err(Diagnostic::error(format!(
                "length mismatch: `{}` has {} elements, `{}` has {}",
                self.text(le),
                a.len(),
                self.text(re),
                b.len()
            ))
            .at(op_span)
            .label(format!("`{}` needs equal lengths", op.symbol()))
            .help("slice one of them to the other's length, e.g. `a[0:n]`"));
        }
        let shape = la.map(Array::shape).or(ra.map(Array::shape));
        let (lk, rk) = (l.kind(), r.kind());

        if matches!(op, BinOp::And | BinOp::Or) {
            let (x, y) = (b_lane(l), b_lane(r));
            return self.bools_of(shape, e, |i| if op == BinOp::And { x.at(i) && y.at(i) } else { x.at(i) || y.at(i) });
        }

        if op.is_comparison() {
            return if lk.is_int() && rk.is_int() {
                let (x, y) = (i_lane(l), i_lane(r));
                self.bools_of(shape, e, |i| compare_i(op, x.at(i), y.at(i)))
            } else {
                // NEP 50: a Python float compared with f32 values is first rounded to f32.
                let f32_side = |k: Kind| k == Kind::Typed(DType::F32);
                let (x, y) = (f_lane(l, f32_side(rk)), f_lane(r, f32_side(lk)));
                self.bools_of(shape, e, |i| compare_f(op, x.at(i), y.at(i)))
            };
        }

        let bitwise = matches!(op, BinOp::BitAnd | BinOp::BitOr | BinOp::BitXor | BinOp::Shl | BinOp::Shr);
        let is_boolish = |v: &V, k: Kind| matches!(v, V::Bool(_)) || k == Kind::BoolArr;
        if matches!(op, BinOp::BitAnd | BinOp::BitOr | BinOp::BitXor) && is_boolish(l, lk) && is_boolish(r, rk) {
            let (x, y) = (b_lane(l), b_lane(r));
            return self.bools_of(shape, e, |i| match op {
                BinOp::BitAnd => x.at(i) & y.at(i),
                BinOp::BitOr => x.at(i) | y.at(i),
                _ => x.at(i) ^ y.at(i),
            });
        }
        if bitwise && (!lk.is_int() || !rk.is_int()) {
            let (bad, k) = if !lk.is_int() { (le, l) } else { (re, r) };
            return Err(Diagnostic::error(format!(
                "`{}` needs integers, but `{}` is {}",
                op.symbol(),
                self.text(bad),
                k.type_name()
            ))
            .at(op_span)
            .help("bitwise operators and shifts work on integers only"));
        }

        let Some(dtype) = result_dtype(lk, rk) else {
            return self.scalar_arith(op, op_span, l, r, le, re);
        };
        if dtype.is_float() {
            let (x, y) = (f_lane(l, dtype == DType::F32), f_lane(r, dtype == DType::F32));
            let Some(shape) = shape else {
                return Ok(V::Elem(Num::Float(round_to(float_op(op, x.at(0), y.at(0)), dtype)), dtype));
            };
            let mut out = self.new_buffer(e, dtype, shape)?;
            for i in 0..shape.len() {
                self.tick(i, e)?;
                out.set_f64(i, float_op(op, x.at(i), y.at(i)));
            }
            Ok(V::Arr(Array::numbers(out)))
        } else {
            let (x, y) = (i_lane(l), i_lane(r));
            let at = |i: usize| {
                int_op(op, x.at(i), y.at(i))
                    .map(|z| wrap(z, dtype))
                    .map_err(|err| self.int_error(err, op, op_span, re, shape.map(|_| i)))
            };
            let Some(shape) = shape else {
                return Ok(V::Elem(Num::Int(at(0)?), dtype));
            };
            let mut out = self.new_buffer(e, dtype, shape)?;
            for i in 0..shape.len() {
                self.tick(i, e)?;
                out.set_int(i, at(i)?);
            }
            Ok(V::Arr(Array::numbers(out)))
        }
    }

    /// A boolean per element (`f(i)`), as an array of `shape`, or one boolean for scalars.
    fn bools_of(&self, shape: Option<Shape>, e: &Expr, f: impl Fn(usize) -> bool) -> Result<V<'a>, Diagnostic> {
        let Some(shape) = shape else { return Ok(V::Bool(f(0))) };
        let mut out = self.new_bools(e, shape.len())?;
        for i in 0..shape.len() {
            self.tick(i, e)?;
            out.push(f(i));
        }
        Ok(V::Arr(Array::bools(shape, out)))
    }

    /// A dim3 where a number or an array was needed.
    fn dim3_misused(&self, e: &Expr) -> Diagnostic {
        let t = self.text(e);
        let field = if matches!(e.kind, ExprKind::Name(_)) { format!("`{t}.x`") } else { "`b.x`".to_string() };
        Diagnostic::error(format!("`{t}` is a dim3, a launch size, not a number")).at(e.span).help(format!(
            "use one of its fields, {field}, `.y` or `.z`, or pass it in a launch: `k<<<grid, {t}>>>(...)`"
        ))
    }

    fn int_error(&self, err: IntErr, op: BinOp, op_span: Span, re: &Expr, at: Option<usize>) -> Diagnostic {
        let place = at.map_or(String::new(), |i| format!(" (at element {i})"));
        match err {
            IntErr::DivZero => Diagnostic::error(format!("integer division by zero{place}"))
                .at(op_span)
                .label(format!("`{}` divides by `{}`", op.symbol(), self.text(re)))
                .help("with a float on either side, `/` divides as floats and gives inf or nan: `1.0 * x / y`"),
            IntErr::NegativePow => Diagnostic::error(format!("integers can't be raised to negative powers{place}"))
                .at(op_span)
                .help("make the base a float: `2.0 ** -1`"),
            IntErr::NegativeShift => Diagnostic::error(format!("negative shift count{place}")).at(op_span),
        }
    }

    /// Python arithmetic on weak scalars: exact integers (errors on overflow), float otherwise.
    fn scalar_arith(&self, op: BinOp, op_span: Span, l: &V, r: &V, le: &Expr, re: &Expr) -> Result<V<'a>, Diagnostic> {
        let as_int = |v: &V| match v {
            V::Int(i) => Some(*i),
            V::Bool(b) => Some(*b as i128),
            _ => None,
        };
        let overflow = || {
            Diagnostic::error(format!("integer overflow in `{} {} {}`", self.text(le), op.symbol(), self.text(re)))
                .at(op_span)
                .help("scalars are 128-bit integers; use a float (`2.0 ** 200`) for huge values")
        };
        if let (Some(x), Some(y)) = (as_int(l), as_int(r)) {
            let v = match op {
                BinOp::Add => x.checked_add(y),
                BinOp::Sub => x.checked_sub(y),
                BinOp::Mul => x.checked_mul(y),
                BinOp::Div | BinOp::FloorDiv if x == i128::MIN && y == -1 => None,
                BinOp::Pow if y < 0 => return Ok(V::Float((x as f64).powf(y as f64))),
                BinOp::Pow => u32::try_from(y).ok().and_then(|y| x.checked_pow(y)),
                BinOp::Shl if y >= 0 => {
                    u32::try_from(y).ok().filter(|&s| s < 127).and_then(|s| x.checked_shl(s)).filter(|z| z >> y == x)
                }
                _ => Some(int_op(op, x, y).map_err(|e| self.int_error(e, op, op_span, re, None))?),
            };
            return v.map(V::Int).ok_or_else(overflow);
        }
        let (x, y) = (f_lane(l, false).at(0), f_lane(r, false).at(0));
        Ok(V::Float(float_op(op, x, y)))
    }
}

/// A number of elements: not negative, and not beyond what any buffer could hold (the limit
/// says the rest).
fn count_of(n: i128, what: &str, span: Span, limit: u64) -> Result<usize, Diagnostic> {
    if n < 0 {
        return Err(Diagnostic::error(format!("{what} can't be negative (it is {n})"))
            .at(span)
            .help("sizes count elements"));
    }
    usize::try_from(n).ok().filter(|&n| n as u64 <= u64::MAX / 8).ok_or_else(|| {
        Diagnostic::error(format!("{what} of {n} elements is more than any buffer can hold")).at(span).help(format!(
            "buffers may use {} here (--max-alloc changes it)",
            crate::diag::text::human_bytes(u128::from(limit))
        ))
    })
}

fn human(bytes: u64) -> String {
    crate::diag::text::human_bytes(bytes)
}

fn round_to(x: f64, d: DType) -> f64 {
    if d == DType::F32 { x as f32 as f64 } else { x }
}

fn nan_min(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() { f64::NAN } else { a.min(b) }
}

fn nan_max(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() { f64::NAN } else { a.max(b) }
}

/// numpy sums small integer types in 64 bits.
fn sum_dtype(d: DType) -> DType {
    match d {
        DType::I32 | DType::I16 | DType::I8 | DType::Bool => DType::I64,
        DType::U32 | DType::U16 | DType::U8 => DType::U64,
        d => d,
    }
}

/// Build an array of `dtype`, converting each value like a C cast (floats truncate into
/// integers, integers wrap), as `Buffer::from_nums` does.
fn build(dtype: DType, shape: Shape, nums: impl IntoIterator<Item = Num>) -> Array<'static> {
    Array::numbers(Buffer::from_nums(dtype, shape, nums))
}

/// `random`'s formula, stable forever: xoshiro256++ seeded by `seed_from_u64(seed)`, one
/// `next_u64()` per element; f32 takes the top 24 bits times 2^-24, f64 the top 53 bits times
/// 2^-53. Both are exact and lie in [0, 1).
pub fn uniform(rng: &mut Xoshiro256PlusPlus, dtype: DType) -> f64 {
    let bits = rng.next_u64();
    if dtype == DType::F32 {
        (bits >> 40) as f64 * (1.0 / (1u64 << 24) as f64)
    } else {
        (bits >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }
}

/// `randint`'s formula, stable forever: one `next_u64()` per element mapped to [0, range) by
/// the widening multiply `(x * range) >> 64` (Lemire's method without rejection: its bias is
/// below 2^-32 for ranges under 2^32).
pub fn below(rng: &mut Xoshiro256PlusPlus, range: u128) -> u128 {
    (rng.next_u64() as u128 * range) >> 64
}

/// What a learner who hit the buffer limit can do, said the same way for buffers and for a
/// statement's temporaries (the limit is one: `--max-alloc`, whether set or by default).
const LIMIT_HELP: &str = "buffers and the arrays a statement makes on the way share one limit, --max-alloc (half of this machine's memory unless set): start gridlab with a larger one (e.g. --max-alloc 16G)";
