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
    /// C's `bool`: one byte, 0 or 1.
    Bool,
    I8,
    U8,
    I16,
    U16,
}

impl DType {
    pub const ALL: [DType; 11] = [
        DType::F32,
        DType::F64,
        DType::I32,
        DType::U32,
        DType::I64,
        DType::U64,
        DType::Bool,
        DType::I8,
        DType::U8,
        DType::I16,
        DType::U16,
    ];

    /// The signed type twice as wide as an unsigned one, which holds it and any signed type of
    /// its size: numpy's promotion of mixed signedness (`u8` with `i8` gives `i16`).
    pub fn wider_signed(self) -> Option<DType> {
        match self.size() {
            1 => Some(DType::I16),
            2 => Some(DType::I32),
            4 => Some(DType::I64),
            _ => None,
        }
    }

    /// The smallest and largest value of an integer dtype; `None` for floats.
    pub fn int_range(self) -> Option<(i128, i128)> {
        Some(match self {
            DType::Bool => (0, 1),
            DType::I8 => (i8::MIN.into(), i8::MAX.into()),
            DType::U8 => (0, u8::MAX.into()),
            DType::I16 => (i16::MIN.into(), i16::MAX.into()),
            DType::U16 => (0, u16::MAX.into()),
            DType::I32 => (i32::MIN.into(), i32::MAX.into()),
            DType::U32 => (0, u32::MAX.into()),
            DType::I64 => (i64::MIN.into(), i64::MAX.into()),
            DType::U64 => (0, u64::MAX.into()),
            DType::F32 | DType::F64 => return None,
        })
    }

    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            DType::Bool | DType::I8 | DType::U8 => 1,
            DType::I16 | DType::U16 => 2,
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
            DType::Bool => "bool",
            DType::I8 => "i8",
            DType::U8 => "u8",
            DType::I16 => "i16",
            DType::U16 => "u16",
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
            DType::Bool => "bool",
            DType::I8 => "signed char",
            DType::U8 => "unsigned char",
            DType::I16 => "short",
            DType::U16 => "unsigned short",
        }
    }

    pub fn is_float(self) -> bool {
        matches!(self, DType::F32 | DType::F64)
    }

    pub fn is_signed(self) -> bool {
        matches!(self, DType::I8 | DType::I16 | DType::I32 | DType::I64 | DType::F32 | DType::F64)
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
            "bool" => DType::Bool,
            "i8" | "int8" | "char" => DType::I8,
            "u8" | "uint8" | "uchar" => DType::U8,
            "i16" | "int16" | "short" => DType::I16,
            "u16" | "uint16" | "ushort" => DType::U16,
            _ => return None,
        })
    }

    /// Names offered in completions and help.
    pub fn names() -> &'static [&'static str] {
        &[
            "f32", "f64", "i32", "u32", "i64", "u64", "bool", "i8", "u8", "i16", "u16", "float", "double", "int",
            "unsigned",
        ]
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
