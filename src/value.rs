//! Values of the session language and their conversion to and from [`Buffer`]s.
//!
//! Arrays hold their numbers as a buffer does, in their dtype (so an `f32` array of `n` elements
//! takes `4 n` bytes, and a session's buffer is read in place, not copied). Arithmetic reads
//! each element into the wide type (`f64` or `i128`), computes, and rounds or wraps to the
//! result dtype, which gives exactly the `f32`/`i32` results (`f64` is wide enough that rounding
//! once more to `f32` after `+ - * / sqrt` never differs from computing in `f32`).

use std::borrow::Cow;

use crate::buffer::{Buffer, Num, Shape};
use crate::dtype::DType;

#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Int(i128),
    Float(f64),
    Bool(bool),
    Array(ArrayValue),
    /// A launch size, `dim3(16, 16)` (missing dimensions are 1), usable as a grid or a block.
    Dim3([u32; 3]),
}

impl Value {
    /// `int`, `float`, `bool`, `dim3`, `f32[1024]`, `bool[3, 4]`.
    pub fn type_name(&self) -> String {
        match self {
            Value::Int(_) => "int".into(),
            Value::Float(_) => "float".into(),
            Value::Bool(_) => "bool".into(),
            Value::Array(a) => a.type_name(),
            Value::Dim3(_) => "dim3".into(),
        }
    }
}

/// `dim3(16, 16, 1)`, as CUDA would print its three fields.
pub fn format_dim3(d: [u32; 3]) -> String {
    format!("dim3({}, {}, {})", d[0], d[1], d[2])
}

/// The elements of an array.
#[derive(Clone, Debug, PartialEq)]
pub enum Data<'a> {
    /// Numbers as a buffer holds them: in their dtype, little-endian, so an array takes no more
    /// memory than the buffer it becomes. Borrowed from a session's buffer while a statement
    /// reads it, owned once computed.
    Num(Cow<'a, Buffer>),
    /// The result of a comparison. Stored into a buffer as `i32` 0/1.
    Bool(Cow<'a, [bool]>),
}

/// An array: a buffer's contents (borrowed while a statement reads it), a comparison's result,
/// or an intermediate of arithmetic. [`ArrayValue`] is one that owns its elements.
#[derive(Clone, Debug, PartialEq)]
pub struct Array<'a> {
    shape: Shape,
    data: Data<'a>,
}

/// An array that owns its elements: what a statement's value holds.
pub type ArrayValue = Array<'static>;

impl<'a> Array<'a> {
    /// Numbers: `buffer`'s elements with its dtype and shape.
    pub fn numbers(buffer: Buffer) -> ArrayValue {
        Array { shape: buffer.shape(), data: Data::Num(Cow::Owned(buffer)) }
    }

    /// Booleans; `shape.len()` must be `bools.len()`.
    pub fn bools(shape: Shape, bools: Vec<bool>) -> ArrayValue {
        debug_assert_eq!(shape.len(), bools.len());
        Array { shape, data: Data::Bool(Cow::Owned(bools)) }
    }

    /// A buffer's elements, borrowed: nothing is copied.
    pub fn from_buffer(buf: &'a Buffer) -> Array<'a> {
        Array { shape: buf.shape(), data: Data::Num(Cow::Borrowed(buf)) }
    }

    /// The same elements, borrowed from this one.
    pub fn borrowed(&self) -> Array<'_> {
        let data = match &self.data {
            Data::Num(b) => Data::Num(Cow::Borrowed(&**b)),
            Data::Bool(v) => Data::Bool(Cow::Borrowed(&**v)),
        };
        Array { shape: self.shape, data }
    }

    /// An array that owns its elements (copied when they were borrowed).
    pub fn into_owned(self) -> ArrayValue {
        let data = match self.data {
            Data::Num(b) => Data::Num(Cow::Owned(b.into_owned())),
            Data::Bool(v) => Data::Bool(Cow::Owned(v.into_owned())),
        };
        Array { shape: self.shape, data }
    }

    /// Whether the elements are borrowed (from a session's buffer).
    pub fn is_borrowed(&self) -> bool {
        matches!(&self.data, Data::Num(Cow::Borrowed(_)) | Data::Bool(Cow::Borrowed(_)))
    }

    /// The bytes the elements take.
    pub fn size_bytes(&self) -> u64 {
        match &self.data {
            Data::Num(b) => b.size_bytes() as u64,
            Data::Bool(v) => v.len() as u64,
        }
    }

    pub fn shape(&self) -> Shape {
        self.shape
    }

    pub fn data(&self) -> &Data<'a> {
        &self.data
    }

    pub fn len(&self) -> usize {
        self.shape.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The element type, `None` for a boolean array.
    pub fn dtype(&self) -> Option<DType> {
        match &self.data {
            Data::Num(b) => Some(b.dtype()),
            Data::Bool(_) => None,
        }
    }

    /// `f32[1024]`, `i32[3, 4]`, `bool[10]`.
    pub fn type_name(&self) -> String {
        let elem = self.dtype().map_or("bool", DType::name);
        match self.shape {
            Shape::D1(n) => format!("{elem}[{n}]"),
            Shape::D2(r, c) => format!("{elem}[{r}, {c}]"),
        }
    }

    /// Element `i` as a number (booleans as 0 and 1). Panics when out of range.
    pub fn num(&self, i: usize) -> Num {
        match &self.data {
            Data::Num(b) => b.get(i),
            Data::Bool(v) => Num::Int(v[i] as i128),
        }
    }

    /// A buffer with this array's dtype and shape (booleans become `i32` 0 and 1), without a
    /// copy when the array owns its numbers.
    pub fn into_buffer(self) -> Buffer {
        match self.data {
            Data::Num(b) => {
                let mut b = b.into_owned();
                b.reshape(self.shape);
                b
            }
            Data::Bool(v) => Buffer::from_nums(DType::I32, self.shape, v.iter().map(|&x| Num::Int(x as i128))),
        }
    }

    /// [`Array::into_buffer`] of a copy.
    pub fn to_buffer(&self) -> Buffer {
        self.clone().into_buffer()
    }
}

/// Wrap an integer into `dtype`'s range the way C and numpy do (two's complement).
pub fn wrap(v: i128, dtype: DType) -> i128 {
    match dtype {
        DType::I32 => v as i32 as i128,
        DType::U32 => v as u32 as i128,
        DType::I64 => v as i64 as i128,
        DType::U64 => v as u64 as i128,
        DType::Bool => (v != 0) as i128,
        DType::I8 => v as i8 as i128,
        DType::U8 => v as u8 as i128,
        DType::I16 => v as i16 as i128,
        DType::U16 => v as u16 as i128,
        DType::F32 | DType::F64 => v,
    }
}

/// A float as learners expect to read it: shortest round-trip digits for its precision (`0.1`
/// for an `f32` 0.1, not `0.10000000149`), scientific beyond 1e16 and below 1e-4, `nan`, `inf`.
pub fn format_float(x: f64, dtype: DType) -> String {
    if x.is_nan() {
        return "nan".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf".into() } else { "-inf".into() };
    }
    let a = x.abs();
    let sci = a != 0.0 && !(1e-4..1e16).contains(&a);
    match (dtype, sci) {
        (DType::F32, false) => format!("{}", x as f32),
        (DType::F32, true) => format!("{:e}", x as f32),
        (_, false) => format!("{x}"),
        (_, true) => format!("{x:e}"),
    }
}

/// One element for messages: integers plainly, floats by [`format_float`].
pub fn format_num(n: Num, dtype: Option<DType>) -> String {
    match n {
        Num::Int(i) if dtype.is_none() => (i != 0).to_string(),
        Num::Int(i) => i.to_string(),
        Num::Float(f) => format_float(f, dtype.unwrap_or(DType::F64)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_round_trip_for_every_dtype() {
        for dtype in DType::ALL {
            let buf =
                Buffer::from_nums(dtype, Shape::D2(2, 2), [Num::Int(1), Num::Int(-2), Num::Float(3.5), Num::Int(7)]);
            let v = Array::from_buffer(&buf);
            assert_eq!(v.to_buffer(), buf, "{dtype}");
            assert_eq!(v.clone().into_owned().into_buffer(), buf, "{dtype}");
            assert_eq!(v.type_name(), format!("{dtype}[2, 2]"));
        }
    }

    #[test]
    fn floats_print_at_their_own_precision() {
        assert_eq!(format_float(0.1f32 as f64, DType::F32), "0.1");
        assert_eq!(format_float(0.1, DType::F64), "0.1");
        assert_eq!(format_float(1.0, DType::F32), "1");
        assert_eq!(format_float(1e-6, DType::F64), "1e-6");
        assert_eq!(format_float(f64::NEG_INFINITY, DType::F64), "-inf");
    }
}
