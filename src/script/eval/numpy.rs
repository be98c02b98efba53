//! The numpy value model: what a value is during evaluation ([`V`]: Python-like weak scalars,
//! typed scalars, arrays, `dim3`), NEP 50 promotion ([`result_dtype`]), the lanes an
//! elementwise operation reads its operands through, the arithmetic and comparisons on one
//! element, `~=`'s tolerance, and the positions a slice selects. Nothing here evaluates or
//! knows the session: it says what a value is and how two combine.

use crate::buffer::{Buffer, Num, Shape};
use crate::dtype::DType;
use crate::script::ast::BinOp;
use crate::value::{Array, Data, Value, format_float, format_num};

/// Absolute and relative tolerance of `~=`: `|a - b| <= 1e-6` or `|a - b| <= 1e-5 * |b|`.
pub const APPROX_ABS: f64 = 1e-6;
pub const APPROX_REL: f64 = 1e-5;

pub fn approx_eq(a: f64, b: f64) -> bool {
    let d = (a - b).abs();
    d <= APPROX_ABS || d <= APPROX_REL * b.abs() || a == b
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
    pub(super) fn from_value(v: &'a Value) -> V<'a> {
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

    pub(super) fn type_name(&self) -> String {
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
    pub(super) fn kind(&self) -> Kind {
        match self {
            V::Int(_) | V::Bool(_) => Kind::WeakInt,
            V::Float(_) => Kind::WeakFloat,
            V::Elem(_, d) => Kind::Typed(*d),
            V::Arr(a) => a.dtype().map_or(Kind::BoolArr, Kind::Typed),
            // Refused before promotion (see `Cx::dim3_misused`); counted as an int if it got here.
            V::Dim3(_) => Kind::WeakInt,
        }
    }

    pub(super) fn array(&self) -> Option<&Array<'a>> {
        if let V::Arr(a) = self { Some(a) } else { None }
    }

    /// `Some(truth)` for a scalar.
    pub(super) fn truth(&self) -> Option<bool> {
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
pub(super) enum Kind {
    WeakInt,
    WeakFloat,
    Typed(DType),
    BoolArr,
}

impl Kind {
    pub(super) fn is_int(self) -> bool {
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
pub(super) fn result_dtype(a: Kind, b: Kind) -> Option<DType> {
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
pub(super) enum Lane<'v, T> {
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
pub(super) trait LaneValue: Copy {
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
    pub(super) fn at(&self, i: usize) -> T {
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

pub(super) fn f_lane<'v>(v: &'v V<'_>, round_to_f32: bool) -> Lane<'v, f64> {
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
pub(super) fn i_lane<'v>(v: &'v V<'_>) -> Lane<'v, i128> {
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

pub(super) fn b_lane<'v>(v: &'v V<'_>) -> Lane<'v, bool> {
    match v {
        V::Arr(a) => elems(a),
        other => Lane::One(other.truth().unwrap_or(false)),
    }
}

pub(super) fn float_op(op: BinOp, x: f64, y: f64) -> f64 {
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

pub(super) enum IntErr {
    DivZero,
    NegativePow,
    NegativeShift,
}

/// Integer arithmetic in `i128`, wrapping; the caller wraps to the result dtype.
pub(super) fn int_op(op: BinOp, x: i128, y: i128) -> Result<i128, IntErr> {
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

pub(super) fn compare_f(op: BinOp, x: f64, y: f64) -> bool {
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

pub(super) fn compare_i(op: BinOp, x: i128, y: i128) -> bool {
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
pub(super) fn gather(src: &Array<'_>, idx: &[usize], shape: Shape) -> Array<'static> {
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

pub(super) fn round_to(x: f64, d: DType) -> f64 {
    if d == DType::F32 { x as f32 as f64 } else { x }
}

/// numpy sums small integer types in 64 bits.
pub(super) fn sum_dtype(d: DType) -> DType {
    match d {
        DType::I32 | DType::I16 | DType::I8 | DType::Bool => DType::I64,
        DType::U32 | DType::U16 | DType::U8 => DType::U64,
        d => d,
    }
}

/// Build an array of `dtype`, converting each value like a C cast (floats truncate into
/// integers, integers wrap), as `Buffer::from_nums` does.
pub(super) fn build(dtype: DType, shape: Shape, nums: impl IntoIterator<Item = Num>) -> Array<'static> {
    Array::numbers(Buffer::from_nums(dtype, shape, nums))
}
