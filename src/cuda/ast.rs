//! The checked, typed AST of the CUDA C subset: what the checker (`check.rs`) produces and the
//! simulator compiles.
//!
//! Everything C leaves implicit is explicit here, so consumers never re-derive C's rules:
//! - every `Expr` carries its type, after integer promotion and the usual arithmetic conversions;
//! - implicit conversions are `Cast` nodes (`float x = 1;` has `Cast(IntConst)` of type `float`);
//! - arrays used as values are wrapped in `Decay` (giving a pointer to their first element);
//! - conditions (`if`, loops, `?:`, `&&`, `||`, `!`) have type `bool` (a `Cast` to `bool` is a
//!   test against zero);
//! - names are resolved: locals to `LocalId`s, memory variables to `MemId`s, calls to `FuncId`s.
//!
//! Spans point into the learner's snippet (see `diag::SourceMap`).

use std::sync::Arc;

use crate::diag::Span;

/// Arithmetic types of the subset. `char` is signed, as on every platform CUDA supports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Scalar {
    Bool,
    I8,
    U8,
    I16,
    U16,
    I32,
    U32,
    I64,
    U64,
    F32,
    F64,
}

impl Scalar {
    /// The type C's type words name: a base word (`int`, `float`, `char`, `size_t`, ... or none),
    /// whether `signed` or `unsigned` was written, and how many `long`s (LP64: `long` is 64-bit,
    /// as on Linux, where CUDA runs). `Some(None)` is `void`; `None` is no type
    /// (`unsigned float`, `long char`). The parser and the GPU-only signature reader share it.
    pub fn from_words(base: Option<&str>, signed: bool, unsigned: bool, longs: u32) -> Option<Option<Scalar>> {
        let sign = signed || unsigned;
        Some(match (base, sign, longs) {
            (Some("void"), false, 0) => None,
            (Some("bool"), false, 0) => Some(Scalar::Bool),
            (Some("float"), false, 0) => Some(Scalar::F32),
            (Some("double"), false, 0) => Some(Scalar::F64),
            (Some("size_t"), false, 0) => Some(Scalar::U64),
            (Some("char"), _, 0) => Some(if unsigned { Scalar::U8 } else { Scalar::I8 }),
            // `short` and `short int`: the parser gives the base `short` for both.
            (Some("short"), _, 0) => Some(if unsigned { Scalar::U16 } else { Scalar::I16 }),
            (None | Some("int"), _, 0) if base.is_some() || sign => {
                Some(if unsigned { Scalar::U32 } else { Scalar::I32 })
            }
            (None | Some("int"), _, 1 | 2) => Some(if unsigned { Scalar::U64 } else { Scalar::I64 }),
            _ => return None,
        })
    }

    pub fn size(self) -> u32 {
        match self {
            Scalar::Bool | Scalar::I8 | Scalar::U8 => 1,
            Scalar::I16 | Scalar::U16 => 2,
            Scalar::I32 | Scalar::U32 | Scalar::F32 => 4,
            Scalar::I64 | Scalar::U64 | Scalar::F64 => 8,
        }
    }

    pub fn is_float(self) -> bool {
        matches!(self, Scalar::F32 | Scalar::F64)
    }

    pub fn is_integer(self) -> bool {
        !self.is_float()
    }

    pub fn is_signed(self) -> bool {
        matches!(self, Scalar::I8 | Scalar::I16 | Scalar::I32 | Scalar::I64 | Scalar::F32 | Scalar::F64)
    }

    /// The C spelling, for messages: `float`, `unsigned int`, `long long`.
    pub fn c_name(self) -> &'static str {
        match self {
            Scalar::Bool => "bool",
            Scalar::I8 => "char",
            Scalar::U8 => "unsigned char",
            Scalar::I16 => "short",
            Scalar::U16 => "unsigned short",
            Scalar::I32 => "int",
            Scalar::U32 => "unsigned int",
            Scalar::I64 => "long long",
            Scalar::U64 => "unsigned long long",
            Scalar::F32 => "float",
            Scalar::F64 => "double",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Type {
    Void,
    Scalar(Scalar),
    /// A pointer. Address spaces are not part of the type: a pointer may point into global,
    /// shared, local or constant memory, as a CUDA generic pointer does.
    Ptr {
        pointee: Box<Type>,
        is_const: bool,
    },
    /// A fixed-size array, `len` elements. An `extern __shared__` array has `len == 0` and takes
    /// its size from the launch.
    Array {
        elem: Box<Type>,
        len: u32,
    },
    /// A struct or class, or a built-in vector type (`float4`). The layout travels with the
    /// type, so sizes and member offsets need no lookup.
    Struct(Arc<StructDef>),
}

/// One member of a struct: its type and byte offset.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Field {
    pub name: String,
    pub ty: Type,
    pub offset: u64,
}

/// A struct's members and layout, computed as C does: each member at the next multiple of its
/// alignment, the size rounded up to the struct's alignment (the largest member's, or more
/// with `__align__(n)`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct StructDef {
    pub name: String,
    pub fields: Vec<Field>,
    pub size: u64,
    pub align: u64,
    /// A CUDA vector type (`float2`, `int4`, ...): members `x`, `y`, `z`, `w`, and loaded or
    /// stored in one instruction when its size is 4, 8 or 16 bytes.
    pub vector: bool,
}

/// The component types of CUDA's vector types, by the stem of their names.
const VECTOR_STEMS: &[(&str, Scalar)] = &[
    ("char", Scalar::I8),
    ("uchar", Scalar::U8),
    ("short", Scalar::I16),
    ("ushort", Scalar::U16),
    ("int", Scalar::I32),
    ("uint", Scalar::U32),
    ("long", Scalar::I64),
    ("ulong", Scalar::U64),
    ("longlong", Scalar::I64),
    ("ulonglong", Scalar::U64),
    ("float", Scalar::F32),
    ("double", Scalar::F64),
];

impl StructDef {
    /// Lay out `fields` in order. `min_align` is `__align__(n)` when written.
    pub fn new(name: &str, fields: Vec<(String, Type)>, min_align: u64) -> StructDef {
        let mut offset = 0u64;
        let mut align = min_align.max(1);
        let mut out = Vec::with_capacity(fields.len());
        for (name, ty) in fields {
            let a = ty.align();
            offset = offset.next_multiple_of(a);
            align = align.max(a);
            let size = ty.size();
            out.push(Field { name, ty, offset });
            offset = offset.saturating_add(size);
        }
        StructDef { name: name.to_string(), fields: out, size: offset.next_multiple_of(align), align, vector: false }
    }

    /// The CUDA vector type `name` (`float4`, `uchar2`, `longlong3` ...), laid out as
    /// `vector_types.h` does: `n` components of 1, 2 or 4 aligned to their whole size (at most
    /// 16 bytes), 3 components to one component's.
    pub fn vector(name: &str) -> Option<Arc<StructDef>> {
        if name == "dim3" {
            // `dim3` is a `uint3` whose constructor fills missing sizes with 1 (the checker's
            // `construct`); the two convert to each other, as CUDA's do.
            let fields = ["x", "y", "z"].iter().map(|f| (f.to_string(), Type::Scalar(Scalar::U32))).collect();
            let mut def = StructDef::new(name, fields, 4);
            def.vector = true;
            return Some(Arc::new(def));
        }
        let n = name.chars().last()?.to_digit(10)? as usize;
        let stem = &name[..name.len() - 1];
        let &(_, s) = VECTOR_STEMS.iter().find(|(st, _)| *st == stem)?;
        if !(1..=4).contains(&n) {
            return None;
        }
        let fields = ["x", "y", "z", "w"][..n].iter().map(|f| (f.to_string(), Type::Scalar(s))).collect();
        let align = if n == 3 { s.size() as u64 } else { (n as u64 * s.size() as u64).min(16) };
        let mut def = StructDef::new(name, fields, align);
        def.vector = true;
        Some(Arc::new(def))
    }

    pub fn field(&self, name: &str) -> Option<(usize, &Field)> {
        self.fields.iter().enumerate().find(|(_, f)| f.name == name)
    }

    /// The one scalar type every member has, with no padding between or after them (`float4`,
    /// `struct { float re, im; }`): such a struct's buffer is a buffer of that scalar.
    pub fn uniform(&self) -> Option<(Scalar, u64)> {
        let mut leaves = Vec::new();
        self.fields.iter().for_each(|f| f.ty.leaves(f.offset, &mut leaves));
        let (_, s) = *leaves.first()?;
        let packed = leaves.iter().enumerate().all(|(i, &(off, t))| t == s && off == i as u64 * s.size() as u64);
        (packed && leaves.len() as u64 * s.size() as u64 == self.size).then_some((s, leaves.len() as u64))
    }

    /// How a buffer of this struct is laid out in one scalar type: the type every member has,
    /// and how many values of it one struct takes, padding included (`struct __align__(64) {
    /// unsigned a, b; }` is 16 `u32` values, 14 of them padding), as `cudaMalloc` memory holds
    /// whatever it is cast to. `None` when the members are of different types.
    pub fn buffer_layout(&self) -> Option<(Scalar, u64)> {
        let mut leaves = Vec::new();
        self.fields.iter().for_each(|f| f.ty.leaves(f.offset, &mut leaves));
        let (_, s) = *leaves.first()?;
        let size = s.size() as u64;
        let one_type = leaves.iter().all(|&(off, t)| t == s && off % size == 0);
        (one_type && self.size % size == 0).then_some((s, self.size / size))
    }
}

/// The CUDA vector type names, for the parser's list of type words.
pub fn is_vector_type(name: &str) -> bool {
    StructDef::vector(name).is_some()
}

impl Type {
    pub fn scalar(&self) -> Option<Scalar> {
        match self {
            Type::Scalar(s) => Some(*s),
            _ => None,
        }
    }

    pub fn is_pointer(&self) -> bool {
        matches!(self, Type::Ptr { .. })
    }

    pub fn pointee(&self) -> Option<&Type> {
        match self {
            Type::Ptr { pointee, .. } => Some(pointee),
            _ => None,
        }
    }

    /// Size in bytes (pointers are 8 bytes; `void` is 0).
    pub fn size(&self) -> u64 {
        match self {
            Type::Void => 0,
            Type::Scalar(s) => s.size() as u64,
            Type::Ptr { .. } => 8,
            Type::Array { elem, len } => elem.size() * *len as u64,
            Type::Struct(def) => def.size,
        }
    }

    /// Alignment in bytes, as C lays the type out in memory.
    pub fn align(&self) -> u64 {
        match self {
            Type::Void => 1,
            Type::Scalar(s) => s.size() as u64,
            Type::Ptr { .. } => 8,
            Type::Array { elem, .. } => elem.align(),
            Type::Struct(def) => def.align,
        }
    }

    pub fn as_struct(&self) -> Option<&Arc<StructDef>> {
        match self {
            Type::Struct(def) => Some(def),
            _ => None,
        }
    }

    /// The scalar pieces of a value of this type, in memory order: byte offset (from `base`)
    /// and register type (pointers as `U64`). A struct held in registers keeps one register per
    /// piece, in this order.
    pub fn leaves(&self, base: u64, out: &mut Vec<(u64, Scalar)>) {
        match self {
            Type::Void => {}
            Type::Scalar(s) => out.push((base, *s)),
            Type::Ptr { .. } => out.push((base, Scalar::U64)),
            Type::Array { elem, len } => {
                for i in 0..*len as u64 {
                    elem.leaves(base + i * elem.size(), out);
                }
            }
            Type::Struct(def) => def.fields.iter().for_each(|f| f.ty.leaves(base + f.offset, out)),
        }
    }

    /// How many registers a value of this type takes (1 for scalars and pointers).
    pub fn leaf_count(&self) -> u32 {
        match self {
            Type::Void => 0,
            Type::Scalar(_) | Type::Ptr { .. } => 1,
            Type::Array { elem, len } => elem.leaf_count().saturating_mul(*len),
            Type::Struct(def) => def.fields.iter().fold(0u32, |n, f| n.saturating_add(f.ty.leaf_count())),
        }
    }

    /// The lengths of a (possibly multi-dimensional) array, outermost first: `[16, 16]` for
    /// `float [16][16]`; empty for anything else.
    pub fn dims(&self) -> Vec<u64> {
        match self {
            Type::Array { elem, len } => std::iter::once(*len as u64).chain(elem.dims()).collect(),
            _ => Vec::new(),
        }
    }

    /// The innermost element type of a (possibly multi-dimensional) array, or the type itself.
    pub fn innermost(&self) -> &Type {
        match self {
            Type::Array { elem, .. } => elem.innermost(),
            t => t,
        }
    }

    /// C spelling for messages: `float *`, `const int *`, `float [16][16]`.
    pub fn c_name(&self) -> String {
        match self {
            Type::Void => "void".into(),
            Type::Scalar(s) => s.c_name().into(),
            Type::Ptr { pointee, is_const } => {
                format!("{}{} *", if *is_const { "const " } else { "" }, pointee.c_name())
            }
            Type::Array { .. } => {
                let mut dims = String::new();
                let mut t = self;
                while let Type::Array { elem, len } = t {
                    if *len == 0 {
                        dims.push_str("[]")
                    } else {
                        dims.push_str(&format!("[{len}]"))
                    }
                    t = elem;
                }
                format!("{} {dims}", t.c_name())
            }
            Type::Struct(def) => def.name.clone(),
        }
    }
}

/// The name a function is shown by: overloadable functions (operators, constructors, member
/// functions) are named with their parameter types to tell overloads apart,
/// `operator+(float2, float2)`; this is `operator+`.
pub fn display_name(name: &str) -> &str {
    match name.rfind('(') {
        Some(i) if name.ends_with(')') => &name[..i],
        _ => name,
    }
}

/// Index into `Function::locals`. Parameters are the first `params` locals, in order.
pub type LocalId = u32;
/// Index into `Program::functions`.
pub type FuncId = u32;

/// A variable that lives in memory rather than in a register: arrays, `__shared__` variables,
/// `__constant__` and `__device__` globals. Its address can be taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MemId {
    /// `Function::local_arrays[i]`: one copy per thread.
    Local(u32),
    /// `Function::shared[i]`: one copy per block.
    Shared(u32),
    /// `Program::globals[i]`: one copy per launch (`__constant__` is read-only in kernels).
    Global(u32),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Axis {
    X,
    Y,
    Z,
}

/// `threadIdx`, `blockIdx`, `blockDim`, `gridDim`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BuiltinVar {
    ThreadIdx,
    BlockIdx,
    BlockDim,
    GridDim,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UnaryOp {
    /// `-x`, in the (promoted) type of the expression.
    Neg,
    /// `~x`.
    BitNot,
    /// `!x`: operand is `bool`, result is `bool` (the checker wraps it in a `Cast` to `int` when
    /// used as a value).
    LogNot,
    /// The bit intrinsics `__popc`, `__clz`, `__ffs`, `__brev` (and their `ll` forms), in the
    /// operand's width (`U32` or `U64`); the result has the operand's type.
    Popc,
    Clz,
    Ffs,
    Brev,
    /// `__float_as_int`, `__int_as_float`, `__double_as_longlong` ...: the operand's bits read
    /// as the given type, of the same width.
    Bits(Scalar),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BinaryOp {
    Add,
    Sub,
    Mul,
    /// Integer division truncates towards zero; division by zero is reported, not a crash.
    Div,
    Rem,
    Shl,
    Shr,
    BitAnd,
    BitOr,
    BitXor,
    /// Comparisons: operands have the same (converted) type, the result is `bool`.
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    /// Short-circuit: both operands and the result are `bool`.
    LogAnd,
    LogOr,
}

impl BinaryOp {
    /// How C writes it: `+`, `<<`, `&&`.
    pub fn symbol(self) -> &'static str {
        match self {
            BinaryOp::Add => "+",
            BinaryOp::Sub => "-",
            BinaryOp::Mul => "*",
            BinaryOp::Div => "/",
            BinaryOp::Rem => "%",
            BinaryOp::Shl => "<<",
            BinaryOp::Shr => ">>",
            BinaryOp::BitAnd => "&",
            BinaryOp::BitOr => "|",
            BinaryOp::BitXor => "^",
            BinaryOp::Eq => "==",
            BinaryOp::Ne => "!=",
            BinaryOp::Lt => "<",
            BinaryOp::Le => "<=",
            BinaryOp::Gt => ">",
            BinaryOp::Ge => ">=",
            BinaryOp::LogAnd => "&&",
            BinaryOp::LogOr => "||",
        }
    }
}

/// `atomicAdd` and friends; `ty` is the element type operated on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AtomicOp {
    Add,
    Sub,
    Exch,
    Min,
    Max,
    /// `atomicInc(p, limit)`: `old >= limit ? 0 : old + 1`.
    Inc,
    /// `atomicDec(p, limit)`: `(old == 0 || old > limit) ? limit : old - 1`.
    Dec,
    /// `atomicCAS(p, compare, value)`.
    Cas,
    And,
    Or,
    Xor,
}

/// The operation of a warp reduction (`__reduce_add_sync` ...).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WarpReduceOp {
    Add,
    Min,
    Max,
    And,
    Or,
    Xor,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ShflKind {
    Idx,
    Up,
    Down,
    Xor,
}

/// Math functions. `ty` on `Intrinsic::Math` says float or double (`sqrtf` vs `sqrt`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MathFn {
    Sqrt,
    Rsqrt,
    Cbrt,
    Exp,
    Exp2,
    Expm1,
    Log,
    Log2,
    Log10,
    Log1p,
    Sin,
    Cos,
    Tan,
    Asin,
    Acos,
    Atan,
    Atan2,
    Sinh,
    Cosh,
    Tanh,
    Pow,
    Fabs,
    Fmin,
    Fmax,
    Fmod,
    Floor,
    Ceil,
    Round,
    /// To the nearest integer, halves to even (`rintf`, `__float2int_rn`): the rounding the
    /// GPU's conversions use by default.
    Rint,
    Trunc,
    Fma,
    Hypot,
    Erf,
    Erfc,
    Tgamma,
    Lgamma,
    Copysign,
}

/// How `__syncthreads_count`/`_and`/`_or` combine their predicate over the block.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BarrierReduce {
    /// How many threads passed a non-zero predicate.
    Count,
    /// 1 when every thread did.
    And,
    /// 1 when any thread did.
    Or,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Intrinsic {
    /// `__syncthreads()`.
    SyncThreads,
    /// `__syncthreads_count(p)`, `_and(p)`, `_or(p)`: a barrier that also combines an `int`
    /// predicate over the block. Result `int`.
    SyncThreadsReduce(BarrierReduce),
    /// `__syncwarp(mask)`: arg is the mask of lanes that synchronise.
    SyncWarp,
    /// `__threadfence()`, `__threadfence_block()`, `__threadfence_system()`: orders the thread's
    /// accesses before it ahead of its atomics after it (a release, for the race check).
    ThreadFence,
    /// Args: pointer, value (and for `Cas`: compare, value). Result: the old value, type `ty`.
    Atomic {
        op: AtomicOp,
        ty: Scalar,
    },
    /// Args: mask (`unsigned`), value (`ty`), lane or delta (`int`, `unsigned` for Up/Down),
    /// width (`int`, the checker fills in 32 when omitted). Result: `ty`.
    Shfl {
        kind: ShflKind,
        ty: Scalar,
    },
    /// Args: mask, predicate (`bool`). Result `unsigned int`.
    Ballot,
    /// `__reduce_add_sync(mask, v)` and the `min`, `max`, `and`, `or`, `xor` forms (compute
    /// capability 8.0): args mask, value of `ty` (`int` or `unsigned`); result `ty`, the same in
    /// every lane.
    WarpReduce {
        op: WarpReduceOp,
        ty: Scalar,
    },
    /// `__match_any_sync(mask, v)`: args mask, value (any integer or float type, compared bit
    /// for bit). Result `unsigned int`: the lanes holding the same value as this one.
    MatchAny,
    /// `__match_all_sync(mask, v, &pred)` less its predicate (the checker stores that): args
    /// mask, value. Result `unsigned int`: the lanes' mask when all hold one value, else 0.
    MatchAll,
    /// Args: mask, predicate (`bool`). Result `int` (0 or 1).
    Any,
    All,
    /// Args and result converted to `ty` (F32 or F64). `fast`: a fast-math intrinsic
    /// (`__sinf`), one special-function instruction on a GPU, where `sinf` is a longer routine:
    /// the same value here, a different cost.
    Math {
        f: MathFn,
        ty: Scalar,
        fast: bool,
    },
    /// `min`, `max`, `abs` on integers or floats; args and result of type `ty`.
    Min {
        ty: Scalar,
    },
    Max {
        ty: Scalar,
    },
    Abs {
        ty: Scalar,
    },
    /// `__trap()`: stops the launch.
    Trap,
    /// `assert(cond)`: arg is `bool`; a false condition stops the launch like `__trap()`.
    Assert,
    /// `clock()`, `clock64()`: result `long long`. On the simulator, the number of steps the
    /// calling warp has run so far: deterministic, and growing with the work done before it.
    Clock,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Expr {
    pub kind: ExprKind,
    pub ty: Type,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub enum ExprKind {
    /// Integer constant as a bit pattern of `ty` (sign-extended to 64 bits for signed types).
    IntConst(u64),
    /// Floating constant; `ty` says float or double.
    FloatConst(f64),
    /// A register variable (local or parameter). An lvalue.
    Local(LocalId),
    /// A memory variable (array, shared, constant, device global). An lvalue of its declared
    /// type; when that type is an array it is only used inside `Decay` or `AddrOf`.
    Mem(MemId),
    /// `*p`: an lvalue of the pointee type.
    Deref(Box<Expr>),
    /// `base[index]`: `base` is a pointer (arrays arrive wrapped in `Decay`), `index` is `i64`
    /// (converted by the checker). An lvalue of the pointee type. Kept apart from
    /// `Deref(PtrOffset)` so findings can say `a[i]`.
    Index {
        base: Box<Expr>,
        index: Box<Expr>,
    },
    /// An array lvalue used as a value: a pointer to its first element.
    Decay(Box<Expr>),
    /// `&lvalue` of a memory lvalue (`Deref`, `Index`, `Mem`). Taking the address of a register
    /// local is rejected by the checker.
    AddrOf(Box<Expr>),
    /// `threadIdx.x` etc.: type `unsigned int`.
    Builtin(BuiltinVar, Axis),
    /// `warpSize`: `int` 32.
    WarpSize,
    Unary {
        op: UnaryOp,
        operand: Box<Expr>,
    },
    /// Arithmetic and bitwise operands have type `ty` already; shifts: the right operand has the
    /// promoted type of its own (the checker casts it to `ty` too, so both sides match).
    Binary {
        op: BinaryOp,
        lhs: Box<Expr>,
        rhs: Box<Expr>,
    },
    /// `ptr + offset` and `ptr - offset` (offset negated by the checker): `offset` is `i64`,
    /// counted in elements of the pointee type.
    PtrOffset {
        ptr: Box<Expr>,
        offset: Box<Expr>,
    },
    /// `p - q`: the number of elements between them, `i64`.
    PtrDiff {
        lhs: Box<Expr>,
        rhs: Box<Expr>,
    },
    /// `lhs = rhs`; `rhs` already converted to the type of `lhs`. Value: the stored value.
    Assign {
        lhs: Box<Expr>,
        rhs: Box<Expr>,
    },
    /// `lhs op= rhs`: load `lhs`, convert it to `op_ty`, apply `op` with `rhs` (already of
    /// `op_ty`), convert back to the type of `lhs`, store. `float x; x += 0.5;` has `op_ty`
    /// double, as C says. For pointers (`p += n`) `op_ty` is `i64`, `op` is Add or Sub, and the
    /// step is in elements.
    CompoundAssign {
        op: BinaryOp,
        lhs: Box<Expr>,
        rhs: Box<Expr>,
        op_ty: Scalar,
    },
    /// `++x`, `x++`, `--x`, `x--` on integers, floats or pointers (pointers step by one element).
    IncDec {
        lhs: Box<Expr>,
        increment: bool,
        prefix: bool,
    },
    /// `c ? a : b`: `cond` is `bool`; `then` and `else_` have type `ty`. Only one side runs.
    Cond {
        cond: Box<Expr>,
        then: Box<Expr>,
        else_: Box<Expr>,
    },
    /// Convert `operand` to `ty`: between arithmetic types with C's rules (float to int
    /// truncates; to `bool` tests for non-zero), between pointer types, or pointer to `bool`.
    Cast(Box<Expr>),
    /// A call of a `__device__` function; args converted to the parameter types.
    Call {
        func: FuncId,
        args: Vec<Expr>,
    },
    Intrinsic {
        which: Intrinsic,
        args: Vec<Expr>,
    },
    /// `printf(format, args...)`. Args after C's default promotions (float to double, small
    /// integers to int). Type `int`.
    Printf {
        format: String,
        args: Vec<Expr>,
    },
    /// `s.field` (and `p->field`, which the checker writes as `(*p).field`): `field` indexes
    /// the base's struct type. An lvalue when the base is one.
    Member {
        base: Box<Expr>,
        field: u32,
    },
    /// A struct value built from one value per member, already converted to the members'
    /// types: `make_float2(x, y)`, `float2 v = {x, y};`, a constructor's result.
    StructLit(Vec<Expr>),
    /// `a, b`: evaluate `a`, then the value of `b`.
    Comma {
        lhs: Box<Expr>,
        rhs: Box<Expr>,
    },
}

#[derive(Clone, Debug, PartialEq)]
pub struct Stmt {
    pub kind: StmtKind,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub enum StmtKind {
    Expr(Expr),
    /// A register local's declaration; without an initialiser the simulator poisons it and
    /// reports a read before any assignment (the checker also warns where it can tell).
    Decl {
        local: LocalId,
        init: Option<Expr>,
    },
    /// A local array's declaration (`float v[4] = {1, 2};`): initialiser values in element
    /// order, already converted to the element type; missing ones are zero. No initialiser list
    /// means "uninitialised" (the simulator zero-fills, and with findings on reports a read of an
    /// element the thread has not written and gives it poison).
    ArrayDecl {
        array: u32,
        init: Option<Vec<Expr>>,
    },
    If {
        cond: Expr,
        then: Box<Stmt>,
        else_: Option<Box<Stmt>>,
    },
    While {
        cond: Expr,
        body: Box<Stmt>,
    },
    DoWhile {
        body: Box<Stmt>,
        cond: Expr,
    },
    /// `switch`: each case value (as the promoted value's bits) with the index in `body` where
    /// it starts; `default` likewise; no label matching means the end. `break` leaves it.
    Switch {
        value: Expr,
        cases: Vec<(u64, usize)>,
        default: Option<usize>,
        body: Vec<Stmt>,
    },
    /// `cond: None` loops until `break`.
    For {
        init: Option<Box<Stmt>>,
        cond: Option<Expr>,
        step: Option<Expr>,
        body: Box<Stmt>,
    },
    Break,
    Continue,
    Return(Option<Expr>),
    Block(Vec<Stmt>),
    Empty,
}

#[derive(Clone, Debug, PartialEq)]
pub struct LocalVar {
    pub name: String,
    /// A scalar or pointer type.
    pub ty: Type,
    pub span: Span,
}

/// An array or variable in memory: local arrays, `__shared__` and globals.
#[derive(Clone, Debug, PartialEq)]
pub struct MemVar {
    pub name: String,
    /// The declared type: `Array` for arrays, `Scalar` for `__shared__ float total;`.
    pub ty: Type,
    /// `extern __shared__ T name[];`: sized by the launch's dynamic shared memory.
    pub is_extern: bool,
    pub span: Span,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FuncKind {
    /// `__global__`: launchable, returns `void`.
    Kernel,
    /// `__device__`: callable from kernels and device functions.
    Device,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Param {
    pub name: String,
    pub ty: Type,
    /// `__restrict__` was written (informational).
    pub restrict: bool,
    /// A non-`const` reference (`float &x`): a call passes an lvalue of exactly `ty`, and the
    /// parameter names the caller's variable. (A `const` reference is passed by value: nothing
    /// can write through it.)
    pub by_ref: bool,
    /// A kernel parameter's default (`int *partial = NULL`, `int n = 4`), folded to an
    /// `IntConst` or `FloatConst` of the parameter's type (0 for a null pointer): a launch that
    /// leaves the parameter out passes it. `None` for other functions, whose calls check theirs.
    pub default: Option<Expr>,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Function {
    pub name: String,
    pub kind: FuncKind,
    pub ret: Type,
    pub params: Vec<Param>,
    /// Register variables: the parameters first (same order), then every declared local.
    pub locals: Vec<LocalVar>,
    pub local_arrays: Vec<MemVar>,
    pub shared: Vec<MemVar>,
    pub body: Vec<Stmt>,
    /// The whole definition.
    pub span: Span,
    /// The name in the signature (for "kernel defined here").
    pub name_span: Span,
    /// Direct callees, for the simulator's inlining and recursion check.
    pub calls: Vec<FuncId>,
    /// Pointer parameters that are numpy arrays of two or more dimensions (a Python kernel's),
    /// laid out row-major: set by `Module::set_row_major`, never by C source.
    pub row_major: Vec<RowMajor>,
}

/// A pointer parameter that points at a row-major array whose extents are other parameters
/// (`float *a, long long a_rows, long long a_cols` for a Python kernel's `a`), so that its
/// flat index `r * a_cols + c` can be checked column by column, as Numba's array has them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RowMajor {
    /// The pointer's parameter index.
    pub pointer: usize,
    /// The parameter index of each dimension's extent, outermost first.
    pub extents: Vec<usize>,
}

/// A `__constant__`, `__device__` or `__shared__` variable at file scope.
#[derive(Clone, Debug, PartialEq)]
pub struct Global {
    pub var: MemVar,
    pub is_constant: bool,
    /// `__shared__` (or `extern __shared__`, `var.is_extern`): one copy per block, shared by
    /// every function of a kernel, starting unwritten; not a symbol statements can set.
    pub is_shared: bool,
    /// Initial values in element order as bit patterns of the element type; missing ones are 0.
    pub init: Vec<u64>,
}

/// The whole checked module: every function and global defined in the session so far.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Program {
    pub functions: Vec<Function>,
    pub globals: Vec<Global>,
    /// File-scope named constants (`const int N = imin(32, M / 4);`) in definition order, each
    /// folded to an `IntConst` or `FloatConst` of its declared type, macros expanded: the
    /// session reads them as numbers at the prompt.
    pub constants: Vec<(String, Expr)>,
}

impl Program {
    pub fn function(&self, name: &str) -> Option<(FuncId, &Function)> {
        self.functions.iter().enumerate().find(|(_, f)| f.name == name).map(|(i, f)| (i as FuncId, f))
    }

    pub fn kernels(&self) -> impl Iterator<Item = &Function> {
        self.functions.iter().filter(|f| f.kind == FuncKind::Kernel)
    }
}
