//! Numba's types for kernel values, and its rules for combining them.
//!
//! A Python kernel is typed as Numba types it: integer literals are `int64`, float literals
//! `float64`, arithmetic on integers widens to at least 64 bits, `float32` meets a wide integer
//! as `float64`, `/` on integers is a float. The lowering writes C whose result types match
//! these, casting where C's usual arithmetic conversions would pick another type.

use crate::dtype::DType;

/// Where an array lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Space {
    /// A kernel argument: global memory, shape passed as extra parameters.
    Global,
    /// `cuda.shared.array`: a fixed shape, or `0` for the launch's dynamic shared memory.
    Shared,
    /// `cuda.local.array`: per thread.
    Local,
    /// `cuda.const.array_like`: a `__constant__` copy of a host array.
    Const,
    /// A module-level array the kernel reads, frozen into it as Numba freezes globals: a
    /// `__constant__` array with the values it had when the kernel was compiled.
    Frozen,
}

/// The type of a value in a kernel.
#[derive(Clone, Debug, PartialEq)]
pub enum Ty {
    Num(DType),
    /// An array: element type, number of dimensions, where it lives and, for shared and local
    /// arrays, its fixed shape (empty for dynamic shared memory).
    Array {
        dtype: DType,
        ndim: usize,
        space: Space,
        dims: Vec<i64>,
    },
    Tuple(Vec<Ty>),
    /// A function that returns nothing (a device function without `return value`).
    None,
}

impl Ty {
    pub const I64: Ty = Ty::Num(DType::I64);
    pub const F64: Ty = Ty::Num(DType::F64);
    pub const BOOL: Ty = Ty::Num(DType::Bool);

    pub fn num(&self) -> Option<DType> {
        match self {
            Ty::Num(d) => Some(*d),
            _ => None,
        }
    }

    /// Numba's name for the type, as its error messages write it.
    pub fn numba_name(&self) -> String {
        match self {
            Ty::Num(d) => numba_name(*d).to_string(),
            Ty::Array { dtype, ndim, .. } => format!("array({}, {}d)", numba_name(*dtype), ndim),
            Ty::Tuple(items) => {
                let inner: Vec<String> = items.iter().map(Ty::numba_name).collect();
                format!("UniTuple({})", inner.join(", "))
            }
            Ty::None => "none".to_string(),
        }
    }

    /// The C type of a scalar (arrays and tuples have none).
    pub fn c_name(&self) -> &'static str {
        match self {
            Ty::Num(d) => d.c_name(),
            _ => "void",
        }
    }
}

/// Numba's (and NumPy's) name of a scalar type.
pub fn numba_name(d: DType) -> &'static str {
    match d {
        DType::F32 => "float32",
        DType::F64 => "float64",
        DType::I32 => "int32",
        DType::U32 => "uint32",
        DType::I64 => "int64",
        DType::U64 => "uint64",
        DType::Bool => "bool",
        DType::I8 => "int8",
        DType::U8 => "uint8",
        DType::I16 => "int16",
        DType::U16 => "uint16",
    }
}

/// A scalar type named the way Python code names it: `float32`, `np.int64`, `int`, `float`.
pub fn from_name(name: &str) -> Option<DType> {
    let name = name.rsplit('.').next().unwrap_or(name);
    Some(match name {
        "float32" | "f4" | "single" => DType::F32,
        "float64" | "f8" | "double" | "float" | "float_" => DType::F64,
        "int8" | "i1" | "byte" => DType::I8,
        "int16" | "i2" | "short" => DType::I16,
        "int32" | "i4" | "intc" => DType::I32,
        "int64" | "i8" | "int" | "intp" | "int_" | "longlong" => DType::I64,
        "uint8" | "u1" | "ubyte" => DType::U8,
        "uint16" | "u2" | "ushort" => DType::U16,
        "uint32" | "u4" | "uintc" => DType::U32,
        "uint64" | "u8" | "uintp" | "ulonglong" => DType::U64,
        "bool_" | "bool" | "boolean" | "b1" => DType::Bool,
        _ => return None,
    })
}

fn bits(d: DType) -> usize {
    d.size() * 8
}

fn is_int(d: DType) -> bool {
    !d.is_float() && d != DType::Bool
}

/// The result of `+ - * // % & | ^ << >>` on two integers (booleans count as integers), as
/// Numba types it: at least 64 bits; unsigned only when both are; `uint64` with a signed
/// integer is `float64`, as in NumPy.
pub fn int_arith(a: DType, b: DType) -> DType {
    let ua = !a.is_signed() && a != DType::Bool;
    let ub = !b.is_signed() && b != DType::Bool;
    if ua && ub {
        DType::U64
    } else if (a == DType::U64 && !ub) || (b == DType::U64 && !ua) {
        DType::F64
    } else {
        DType::I64
    }
}

/// The float type of arithmetic where at least one side is a float: `float32` only with
/// `float32`, booleans and integers of 16 bits or fewer (NumPy's promotion, which Numba uses).
pub fn float_arith(a: DType, b: DType) -> DType {
    let small = |d: DType| d == DType::F32 || d == DType::Bool || (is_int(d) && bits(d) <= 16);
    if small(a) && small(b) { DType::F32 } else { DType::F64 }
}

/// The type of `a OP b` for the arithmetic operators other than `/` and `**`.
pub fn arith(a: DType, b: DType) -> DType {
    if a.is_float() || b.is_float() { float_arith(a, b) } else { int_arith(a, b) }
}

/// The type of `a / b`: always a float.
pub fn true_div(a: DType, b: DType) -> DType {
    if a.is_float() || b.is_float() { float_arith(a, b) } else { DType::F64 }
}

/// The type a variable gets when it is assigned values of two types (Numba's unification of
/// numbers): the wider kind wins, integers meeting floats become floats.
pub fn unify(a: DType, b: DType) -> DType {
    if a == b {
        return a;
    }
    if a.is_float() || b.is_float() {
        return float_arith(a, b);
    }
    if a == DType::Bool {
        return b;
    }
    if b == DType::Bool {
        return a;
    }
    let signed = a.is_signed() || b.is_signed();
    let width = bits(a).max(bits(b));
    if signed {
        // A signed integer that must hold an unsigned one of the same width needs one more size.
        let need =
            if !a.is_signed() && bits(a) == width || !b.is_signed() && bits(b) == width { width * 2 } else { width };
        match need {
            8 => DType::I8,
            16 => DType::I16,
            32 => DType::I32,
            64 => DType::I64,
            _ => DType::F64,
        }
    } else {
        match width {
            8 => DType::U8,
            16 => DType::U16,
            32 => DType::U32,
            _ => DType::U64,
        }
    }
}

/// The type C's usual arithmetic conversions give `a OP b` (integer promotion to `int` first).
pub fn c_usual(a: DType, b: DType) -> DType {
    if a == DType::F64 || b == DType::F64 {
        return DType::F64;
    }
    if a == DType::F32 || b == DType::F32 {
        return DType::F32;
    }
    let (a, b) = (c_promote(a), c_promote(b));
    if a == b {
        return a;
    }
    let rank = |d: DType| bits(d);
    let (hi, lo) = if rank(a) >= rank(b) { (a, b) } else { (b, a) };
    if rank(hi) > rank(lo) {
        // The wider type wins; a signed wider type holds every value of a narrower unsigned one.
        return hi;
    }
    // Same width, one unsigned: unsigned wins.
    if hi.is_signed() { lo } else { hi }
}

/// C's integer promotion: everything narrower than `int` becomes `int`.
pub fn c_promote(d: DType) -> DType {
    match d {
        DType::Bool | DType::I8 | DType::U8 | DType::I16 | DType::U16 => DType::I32,
        other => other,
    }
}
