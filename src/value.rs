//! Values of the session language and their conversion to and from [`Buffer`]s.
//!
//! Arrays are held decoded (floats as `f64`, integers as `i128`) so arithmetic needs no per-dtype
//! code: every operation computes in the wide type and then rounds or wraps to the result dtype,
//! which gives exactly the `f32`/`i32` results (`f64` is wide enough that rounding once more to
//! `f32` after `+ - * / sqrt` never differs from computing in `f32`).

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

/// The elements of an array, decoded.
#[derive(Clone, Debug, PartialEq)]
pub enum Data {
    /// `f32` or `f64`; `f32` values are exactly representable as `f32`.
    Float(DType, Vec<f64>),
    /// Integer dtypes; values are within their dtype's range.
    Int(DType, Vec<i128>),
    /// The result of a comparison. Stored into a buffer as `i32` 0/1.
    Bool(Vec<bool>),
}

/// An array value: a buffer's contents, a comparison's result, or an intermediate of arithmetic.
#[derive(Clone, Debug, PartialEq)]
pub struct ArrayValue {
    shape: Shape,
    data: Data,
}

impl ArrayValue {
    /// `data`'s length must equal `shape.len()`.
    pub fn new(shape: Shape, data: Data) -> ArrayValue {
        debug_assert_eq!(data_len(&data), shape.len());
        ArrayValue { shape, data }
    }

    pub fn shape(&self) -> Shape {
        self.shape
    }

    pub fn data(&self) -> &Data {
        &self.data
    }

    pub fn into_data(self) -> Data {
        self.data
    }

    pub fn len(&self) -> usize {
        data_len(&self.data)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The element type, `None` for a boolean array.
    pub fn dtype(&self) -> Option<DType> {
        match &self.data {
            Data::Float(d, _) | Data::Int(d, _) => Some(*d),
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
            Data::Float(_, v) => Num::Float(v[i]),
            Data::Int(_, v) => Num::Int(v[i]),
            Data::Bool(v) => Num::Int(v[i] as i128),
        }
    }

    /// Decode a buffer. Linear in its length, with no per-element dispatch on the dtype.
    pub fn from_buffer(buf: &Buffer) -> ArrayValue {
        let b = buf.bytes();
        let data = match buf.dtype() {
            DType::F32 => Data::Float(
                DType::F32,
                b.chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap()) as f64).collect(),
            ),
            DType::F64 => {
                Data::Float(DType::F64, b.chunks_exact(8).map(|c| f64::from_le_bytes(c.try_into().unwrap())).collect())
            }
            DType::I32 => Data::Int(
                DType::I32,
                b.chunks_exact(4).map(|c| i32::from_le_bytes(c.try_into().unwrap()) as i128).collect(),
            ),
            DType::U32 => Data::Int(
                DType::U32,
                b.chunks_exact(4).map(|c| u32::from_le_bytes(c.try_into().unwrap()) as i128).collect(),
            ),
            DType::I64 => Data::Int(
                DType::I64,
                b.chunks_exact(8).map(|c| i64::from_le_bytes(c.try_into().unwrap()) as i128).collect(),
            ),
            DType::U64 => Data::Int(
                DType::U64,
                b.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().unwrap()) as i128).collect(),
            ),
        };
        ArrayValue { shape: buf.shape(), data }
    }

    /// Encode as a buffer with this array's dtype and shape (booleans become `i32` 0 and 1).
    pub fn to_buffer(&self) -> Buffer {
        let dtype = self.dtype().unwrap_or(DType::I32);
        let mut buf = Buffer::zeros(dtype, self.shape);
        let out = buf.bytes_mut();
        match (&self.data, dtype) {
            (Data::Float(_, v), DType::F32) => {
                out.chunks_exact_mut(4).zip(v).for_each(|(c, x)| c.copy_from_slice(&(*x as f32).to_le_bytes()))
            }
            (Data::Float(_, v), _) => {
                out.chunks_exact_mut(8).zip(v).for_each(|(c, x)| c.copy_from_slice(&x.to_le_bytes()))
            }
            (Data::Int(_, v), DType::I32 | DType::U32) => {
                out.chunks_exact_mut(4).zip(v).for_each(|(c, x)| c.copy_from_slice(&(*x as u32).to_le_bytes()))
            }
            (Data::Int(_, v), _) => {
                out.chunks_exact_mut(8).zip(v).for_each(|(c, x)| c.copy_from_slice(&(*x as u64).to_le_bytes()))
            }
            (Data::Bool(v), _) => {
                out.chunks_exact_mut(4).zip(v).for_each(|(c, x)| c.copy_from_slice(&(*x as u32).to_le_bytes()))
            }
        }
        buf
    }
}

fn data_len(d: &Data) -> usize {
    match d {
        Data::Float(_, v) => v.len(),
        Data::Int(_, v) => v.len(),
        Data::Bool(v) => v.len(),
    }
}

/// Wrap an integer into `dtype`'s range the way C and numpy do (two's complement).
pub fn wrap(v: i128, dtype: DType) -> i128 {
    match dtype {
        DType::I32 => v as i32 as i128,
        DType::U32 => v as u32 as i128,
        DType::I64 => v as i64 as i128,
        DType::U64 => v as u64 as i128,
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
            let v = ArrayValue::from_buffer(&buf);
            assert_eq!(v.to_buffer(), buf, "{dtype}");
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
