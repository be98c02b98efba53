//! Element types of buffers, with their gridlab names (`f32`) and C names (`float`).

use std::fmt;

/// The element type of a buffer. `f32` is the default for arrays, as in the tutorials.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DType {
    F32,
    F64,
    I32,
    U32,
    I64,
    U64,
}

impl DType {
    pub const ALL: [DType; 6] = [DType::F32, DType::F64, DType::I32, DType::U32, DType::I64, DType::U64];

    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            DType::F32 | DType::I32 | DType::U32 => 4,
            DType::F64 | DType::I64 | DType::U64 => 8,
        }
    }

    /// The gridlab name: `f32`, `i64`, ...
    pub fn name(self) -> &'static str {
        match self {
            DType::F32 => "f32",
            DType::F64 => "f64",
            DType::I32 => "i32",
            DType::U32 => "u32",
            DType::I64 => "i64",
            DType::U64 => "u64",
        }
    }

    /// The C type a kernel parameter should point to for this buffer.
    pub fn c_name(self) -> &'static str {
        match self {
            DType::F32 => "float",
            DType::F64 => "double",
            DType::I32 => "int",
            DType::U32 => "unsigned int",
            DType::I64 => "long long",
            DType::U64 => "unsigned long long",
        }
    }

    pub fn is_float(self) -> bool {
        matches!(self, DType::F32 | DType::F64)
    }

    pub fn is_signed(self) -> bool {
        matches!(self, DType::I32 | DType::I64 | DType::F32 | DType::F64)
    }

    /// Parse a dtype name as the language accepts it: gridlab names and the common C names.
    pub fn parse(name: &str) -> Option<DType> {
        Some(match name {
            "f32" | "float" | "float32" => DType::F32,
            "f64" | "double" | "float64" => DType::F64,
            "i32" | "int" | "int32" => DType::I32,
            "u32" | "unsigned" | "uint" | "uint32" => DType::U32,
            "i64" | "long" | "int64" => DType::I64,
            "u64" | "uint64" | "size_t" => DType::U64,
            _ => return None,
        })
    }

    /// Names offered in completions and help.
    pub fn names() -> &'static [&'static str] {
        &["f32", "f64", "i32", "u32", "i64", "u64", "float", "double", "int", "unsigned"]
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
