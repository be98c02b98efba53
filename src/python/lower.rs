//! Lowering a Python kernel, for one set of argument types, to CUDA C.
//!
//! Numba specialises a kernel for the types of each launch's arguments; so does this: given
//! the types, every variable gets Numba's type (a fixpoint of its assignments, unified as
//! Numba unifies), and the kernel is written out as CUDA C with the learner's names, one
//! statement per line. The C goes through the CUDA front end like any typed kernel, so the
//! simulator, the cost model, the findings and NVRTC all see one language. A map from each
//! piece of C back to the Python that produced it lets every message point at the learner's
//! Python line.
//!
//! Where C's rules differ from Numba's, the C spells Numba's out: a cast where C's usual
//! arithmetic conversions would pick another type, helper functions for Python's `//`, `%`,
//! integer `**` and `round`, and negative indices counted from the end.

use std::collections::{BTreeSet, HashMap};
use std::fmt::Write as _;

use rustpython_parser::ast::{self, Ranged};

use super::parse::{Imports, PyFunction, dotted, span};
use super::types::{self, Space, Ty, arith, c_promote, c_usual, float_arith, numba_name, true_div, unify};
use crate::diag::{Diagnostic, Span};
use crate::dtype::DType;

/// The type of one launch argument, as the kernel sees it.
#[derive(Clone, Debug, PartialEq)]
pub enum ArgType {
    Array { dtype: DType, ndim: usize },
    Scalar(DType),
}

/// A module-level name a kernel reads: Numba freezes such globals into the kernel as constants.
#[derive(Clone, Debug, PartialEq)]
pub enum Global {
    Int(i64),
    Float(f64),
    Bool(bool),
    Dtype(DType),
    /// A small array (`WEIGHTS = np.array([...])`): its element type, shape and values.
    Array {
        dtype: DType,
        shape: Vec<i64>,
        values: Vec<f64>,
    },
    /// A plain Python function of the host program (`def helper(x):` with no `@cuda.jit`),
    /// which a kernel cannot call: named so that the error can say how to make it callable.
    HostFunction,
}

/// The most bytes of frozen global arrays a kernel may hold: CUDA's constant memory.
const CONSTANT_BYTES: usize = 64 * 1024;

/// Where the kernels and globals of a lowering come from.
pub struct Env<'a> {
    pub functions: &'a dyn Fn(&str) -> Option<PyFunction>,
    pub globals: &'a dyn Fn(&str) -> Option<Global>,
    pub imports: &'a Imports,
}

/// One C parameter of a lowered kernel, and the Python argument it comes from.
#[derive(Clone, Debug, PartialEq)]
pub enum CParam {
    /// The data pointer of array argument `arg`.
    Pointer { arg: usize },
    /// Extent `dim` of array argument `arg` (its `shape[dim]`), a `long long`.
    Extent { arg: usize, dim: usize },
    /// Scalar argument `arg`, as `dtype`.
    Scalar { arg: usize, dtype: DType },
}

/// A kernel lowered for one set of argument types.
#[derive(Clone, Debug)]
pub struct Instance {
    /// The C kernel's name (the Python name).
    pub kernel: String,
    /// CUDA C for the kernel, the device functions it calls and the helpers they use.
    pub text: String,
    /// `(lo, hi, span)`: C bytes `lo..hi` came from the Python at `span`.
    pub map: Vec<(u32, u32, Span)>,
    pub params: Vec<CParam>,
    /// The argument types it was lowered for.
    pub args: Vec<ArgType>,
    /// Things the learner should know (a variable unified from int and float, say).
    pub warnings: Vec<Diagnostic>,
}

/// Lower kernel `f` for arguments of types `args`.
pub fn lower(env: &Env, f: &PyFunction, args: &[ArgType]) -> Result<Instance, Vec<Diagnostic>> {
    if f.device {
        return Err(vec![
            Diagnostic::error(format!("`{}` is a device function: kernels call it, it is not launched", f.name))
                .at(f.span)
                .help("launch a function marked `@cuda.jit` without `device=True`"),
        ]);
    }
    if args.len() != f.params.len() {
        return Err(vec![
            Diagnostic::error(format!(
                "`{}` takes {} argument{}, the launch gives {}",
                f.name,
                f.params.len(),
                if f.params.len() == 1 { "" } else { "s" },
                args.len()
            ))
            .at(f.span),
        ]);
    }
    let mut module = ModuleOut::default();
    let tys: Vec<Ty> = args.iter().map(arg_ty).collect();
    let mut params = Vec::new();
    for (i, a) in args.iter().enumerate() {
        match a {
            ArgType::Array { ndim, .. } => {
                params.push(CParam::Pointer { arg: i });
                for d in 0..*ndim {
                    params.push(CParam::Extent { arg: i, dim: d });
                }
            }
            ArgType::Scalar(d) => params.push(CParam::Scalar { arg: i, dtype: *d }),
        }
    }
    let mut stack = vec![f.name.clone()];
    let func = lower_function(env, f, &tys, &mut module, &mut stack, true).map_err(|d| vec![d])?;
    let mut out = Out::default();
    for (_, decl) in &module.constants {
        out.text.push_str(decl);
    }
    for helper in &module.helpers {
        out.text.push_str(&helper_text(helper));
    }
    for dev in &module.device_fns {
        out.append(&dev.text, &dev.map);
    }
    out.append(&func.text, &func.map);
    Ok(Instance {
        kernel: func.c_name,
        text: out.text,
        map: out.map,
        params,
        args: args.to_vec(),
        warnings: module.warnings,
    })
}

fn arg_ty(a: &ArgType) -> Ty {
    match a {
        ArgType::Array { dtype, ndim } => {
            Ty::Array { dtype: *dtype, ndim: *ndim, space: Space::Global, dims: Vec::new() }
        }
        ArgType::Scalar(d) => Ty::Num(*d),
    }
}

/// Text with its map back to Python.
#[derive(Clone, Debug, Default)]
struct Out {
    text: String,
    map: Vec<(u32, u32, Span)>,
}

impl Out {
    fn append(&mut self, text: &str, map: &[(u32, u32, Span)]) {
        let base = self.text.len() as u32;
        self.text.push_str(text);
        self.map.extend(map.iter().map(|(lo, hi, s)| (lo + base, hi + base, *s)));
    }
}

#[derive(Default)]
struct ModuleOut {
    helpers: BTreeSet<Helper>,
    /// Global arrays frozen into the kernel: name and `__constant__` declaration.
    constants: Vec<(String, String)>,
    /// Their bytes together.
    constant_bytes: usize,
    device_fns: Vec<FnOut>,
    /// Device function instances made so far: (Python name, argument types) → C name, return type.
    instances: Vec<(String, Vec<Ty>, String, Ty)>,
    warnings: Vec<Diagnostic>,
}

struct FnOut {
    c_name: String,
    ret: Ty,
    text: String,
    map: Vec<(u32, u32, Span)>,
}

/// The C helper functions Python's semantics need.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Helper {
    FloorDiv,
    Mod,
    /// `//` and `%` by a divisor that cannot be 0 (a literal, `cuda.blockDim.x`, ...): no test.
    FloorDivConst,
    ModConst,
    /// `//` or `%` of operands known not to be negative, by a divisor that may be 0: C's
    /// operator, with Numba's 0 for a zero divisor.
    NonNeg {
        modulo: bool,
        unsigned: bool,
    },
    Fmod,
    IPow,
    PowiF32,
    PowiF64,
    /// `x ** exp` for a constant `exp` (2 to 8) of a float that is not a plain name, written
    /// out once so that `x` is computed once.
    PowConst {
        f32: bool,
        exp: u8,
    },
    Round,
    LaneId,
    AtomicMaxF32,
    AtomicMinF32,
    AtomicMaxF64,
    AtomicMinF64,
    // numba.cuda.random, in dependency order (the set writes them in this order).
    XoroNext,
    XoroUniformF32,
    XoroUniformF64,
    XoroNormalF32,
    XoroNormalF64,
}

fn helper_name(h: Helper) -> std::borrow::Cow<'static, str> {
    std::borrow::Cow::Borrowed(match h {
        Helper::PowConst { f32, exp } => {
            return std::borrow::Cow::Owned(format!("py_pow{exp}_{}", if f32 { "f32" } else { "f64" }));
        }
        Helper::NonNeg { modulo, unsigned } => {
            let op = if modulo { "mod" } else { "div" };
            let ty = if unsigned { "u64" } else { "i64" };
            return std::borrow::Cow::Owned(format!("py_{op}_{ty}"));
        }
        Helper::FloorDiv => "py_floordiv",
        Helper::Mod => "py_mod",
        Helper::FloorDivConst => "py_floordiv_const",
        Helper::ModConst => "py_mod_const",
        Helper::Fmod => "py_fmod",
        Helper::IPow => "py_ipow",
        Helper::PowiF32 => "py_powi_f32",
        Helper::PowiF64 => "py_powi_f64",
        Helper::Round => "py_round",
        Helper::LaneId => "py_laneid",
        Helper::AtomicMaxF32 => "py_atomic_max_f32",
        Helper::AtomicMinF32 => "py_atomic_min_f32",
        Helper::AtomicMaxF64 => "py_atomic_max_f64",
        Helper::AtomicMinF64 => "py_atomic_min_f64",
        Helper::XoroNext => "py_xoroshiro128p_next",
        Helper::XoroUniformF32 => "py_xoroshiro128p_uniform_float32",
        Helper::XoroUniformF64 => "py_xoroshiro128p_uniform_float64",
        Helper::XoroNormalF32 => "py_xoroshiro128p_normal_float32",
        Helper::XoroNormalF64 => "py_xoroshiro128p_normal_float64",
    })
}

fn helper_text(h: &Helper) -> std::borrow::Cow<'static, str> {
    std::borrow::Cow::Borrowed(match h {
        Helper::PowConst { f32, exp } => {
            let ty = if *f32 { "float" } else { "double" };
            return std::borrow::Cow::Owned(format!(
                "// x ** {exp} as Numba computes it: repeated squaring, in {ty}.\n__device__ {ty} {}({ty} x) {{\n    return {};\n}}\n",
                helper_name(*h),
                squaring("x", *exp as u64)
            ));
        }
        Helper::NonNeg { modulo, unsigned } => {
            let ty = if *unsigned { "unsigned long long" } else { "long long" };
            let (op, what) = if *modulo { ("%", "%") } else { ("/", "//") };
            return std::borrow::Cow::Owned(format!(
                "// {what} by 0 is 0 in a Numba kernel (NumPy's error model), not a fault.\n__device__ {ty} {}({ty} a, {ty} b) {{\n    return b == 0 ? 0 : a {op} b;\n}}\n",
                helper_name(*h)
            ));
        }
        Helper::FloorDiv | Helper::FloorDivConst | Helper::Mod | Helper::ModConst => {
            let modulo = matches!(h, Helper::Mod | Helper::ModConst);
            let (rule, body) = if modulo {
                (
                    "Python's % takes the sign of the divisor, C's that of the dividend",
                    "    long long r = a % b;\n    if (r != 0 && ((r < 0) != (b < 0))) r = r + b;\n    return r;\n",
                )
            } else {
                (
                    "Python's // rounds down, C's / rounds towards zero",
                    "    long long q = a / b;\n    if ((a % b != 0) && ((a < 0) != (b < 0))) q = q - 1;\n    return q;\n",
                )
            };
            // The `_const` versions have a divisor that cannot be 0, and no test for it.
            let (note, zero) = if matches!(h, Helper::FloorDiv | Helper::Mod) {
                (
                    format!("; {} by 0 is 0 in a Numba kernel", if modulo { "%" } else { "//" }),
                    "    if (b == 0) return 0;\n",
                )
            } else {
                (String::new(), "")
            };
            return std::borrow::Cow::Owned(format!(
                "// {rule}{note}.\n__device__ long long {}(long long a, long long b) {{\n{zero}{body}}}\n",
                helper_name(*h)
            ));
        }
        Helper::Fmod => {
            "// Python's % on floats takes the sign of the divisor.\n__device__ double py_fmod(double a, double b) {\n    double r = fmod(a, b);\n    if (r != 0.0 && ((r < 0.0) != (b < 0.0))) r = r + b;\n    return r;\n}\n"
        }
        Helper::IPow => {
            "// Integer ** integer, by repeated squaring. As in Numba, a negative power of an integer\n// is 0 unless the base is 1 or -1, and 0 to a negative power is the smallest long long.\n__device__ long long py_ipow(long long base, long long exp) {\n    if (exp < 0) {\n        if (base == 0) return -9223372036854775807LL - 1;\n        if (base == 1) return 1;\n        if (base == -1) return exp % 2 == 0 ? 1 : -1;\n        return 0;\n    }\n    long long result = 1;\n    while (exp > 0) {\n        if (exp % 2 == 1) result = result * base;\n        base = base * base;\n        exp = exp / 2;\n    }\n    return result;\n}\n"
        }
        Helper::PowiF32 => {
            "// float32 ** integer as Numba computes it: repeated squaring, in float32.\n__device__ float py_powi_f32(float base, long long exp) {\n    long long left = exp < 0 ? -exp : exp;\n    if (left > 65536) return (float)pow((double)base, (double)exp);\n    float result = 1.0f;\n    while (left != 0) {\n        if (left % 2 == 1) result = result * base;\n        left = left / 2;\n        base = base * base;\n    }\n    return exp < 0 ? 1.0f / result : result;\n}\n"
        }
        Helper::PowiF64 => {
            "// float ** integer as Numba computes it: repeated squaring.\n__device__ double py_powi_f64(double base, long long exp) {\n    long long left = exp < 0 ? -exp : exp;\n    if (left > 65536) return pow(base, (double)exp);\n    double result = 1.0;\n    while (left != 0) {\n        if (left % 2 == 1) result = result * base;\n        left = left / 2;\n        base = base * base;\n    }\n    return exp < 0 ? 1.0 / result : result;\n}\n"
        }
        Helper::Round => {
            "// Python's round() rounds halves to even.\n__device__ long long py_round(double x) {\n    double r = floor(x + 0.5);\n    if (r - x == 0.5 && fmod(r, 2.0) != 0.0) r = r - 1.0;\n    return (long long)r;\n}\n"
        }
        Helper::XoroNext => {
            "// numba.cuda.random's xoroshiro128+: thread i's state is states[i][0..2].\n__device__ unsigned long long py_xoroshiro128p_next(unsigned long long *states, long long i) {\n    unsigned long long s0 = states[i * 2];\n    unsigned long long s1 = states[i * 2 + 1];\n    unsigned long long result = s0 + s1;\n    s1 = s1 ^ s0;\n    states[i * 2] = ((s0 << 55) | (s0 >> 9)) ^ s1 ^ (s1 << 14);\n    states[i * 2 + 1] = (s1 << 36) | (s1 >> 28);\n    return result;\n}\n"
        }
        Helper::XoroUniformF32 => {
            "__device__ float py_xoroshiro128p_uniform_float32(unsigned long long *states, long long i) {\n    return (float)((double)(py_xoroshiro128p_next(states, i) >> 11) * (1.0 / 9007199254740992.0));\n}\n"
        }
        Helper::XoroUniformF64 => {
            "__device__ double py_xoroshiro128p_uniform_float64(unsigned long long *states, long long i) {\n    return (double)(py_xoroshiro128p_next(states, i) >> 11) * (1.0 / 9007199254740992.0);\n}\n"
        }
        Helper::XoroNormalF32 => {
            "__device__ float py_xoroshiro128p_normal_float32(unsigned long long *states, long long i) {\n    float u1 = py_xoroshiro128p_uniform_float32(states, i);\n    float u2 = py_xoroshiro128p_uniform_float32(states, i);\n    return sqrtf(-2.0f * logf(u1)) * cosf(6.2831855f * u2);\n}\n"
        }
        Helper::XoroNormalF64 => {
            "__device__ double py_xoroshiro128p_normal_float64(unsigned long long *states, long long i) {\n    double u1 = py_xoroshiro128p_uniform_float64(states, i);\n    double u2 = py_xoroshiro128p_uniform_float64(states, i);\n    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);\n}\n"
        }
        Helper::AtomicMaxF32 => {
            "// cuda.atomic.max on float32, as Numba does it: compare-and-swap on the float's bits.\n__device__ float py_atomic_max_f32(float *address, float value) {\n    int *bits = (int *)address;\n    int old = atomicOr(bits, 0);\n    while (__int_as_float(old) < value) {\n        int assumed = old;\n        old = atomicCAS(bits, assumed, __float_as_int(value));\n        if (old == assumed) break;\n    }\n    return __int_as_float(old);\n}\n"
        }
        Helper::AtomicMinF32 => {
            "// cuda.atomic.min on float32, as Numba does it: compare-and-swap on the float's bits.\n__device__ float py_atomic_min_f32(float *address, float value) {\n    int *bits = (int *)address;\n    int old = atomicOr(bits, 0);\n    while (__int_as_float(old) > value) {\n        int assumed = old;\n        old = atomicCAS(bits, assumed, __float_as_int(value));\n        if (old == assumed) break;\n    }\n    return __int_as_float(old);\n}\n"
        }
        Helper::AtomicMaxF64 => {
            "// cuda.atomic.max on float64, as Numba does it: compare-and-swap on the double's bits.\n__device__ double py_atomic_max_f64(double *address, double value) {\n    unsigned long long *bits = (unsigned long long *)address;\n    unsigned long long old = atomicOr(bits, 0ULL);\n    while (__longlong_as_double((long long)old) < value) {\n        unsigned long long assumed = old;\n        old = atomicCAS(bits, assumed, (unsigned long long)__double_as_longlong(value));\n        if (old == assumed) break;\n    }\n    return __longlong_as_double((long long)old);\n}\n"
        }
        Helper::AtomicMinF64 => {
            "// cuda.atomic.min on float64, as Numba does it: compare-and-swap on the double's bits.\n__device__ double py_atomic_min_f64(double *address, double value) {\n    unsigned long long *bits = (unsigned long long *)address;\n    unsigned long long old = atomicOr(bits, 0ULL);\n    while (__longlong_as_double((long long)old) > value) {\n        unsigned long long assumed = old;\n        old = atomicCAS(bits, assumed, (unsigned long long)__double_as_longlong(value));\n        if (old == assumed) break;\n    }\n    return __longlong_as_double((long long)old);\n}\n"
        }
        Helper::LaneId => {
            "// cuda.laneid: the thread's lane in its warp.\n__device__ int py_laneid() {\n    return ((threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x) % 32;\n}\n"
        }
    })
}

/// `x ** exp` as the multiplications of repeated squaring, in the order Numba's
/// `static_power_impl` makes them (`x * x * (x * x)` for 4), as C text.
fn squaring(x: &str, exp: u64) -> String {
    // Each value with whether it is a product, which needs parentheses on the right of `*`.
    let mul = |a: &(String, bool), b: &(String, bool)| {
        let right = if b.1 { format!("({})", b.0) } else { b.0.clone() };
        (format!("{} * {right}", a.0), true)
    };
    let (mut left, mut val, mut result) = (exp, (x.to_string(), false), None::<(String, bool)>);
    while left != 0 {
        if left & 1 == 1 {
            result = Some(match &result {
                None => val.clone(),
                Some(r) => mul(r, &val),
            });
        }
        left >>= 1;
        if left != 0 {
            val = mul(&val, &val);
        }
    }
    result.map_or_else(|| "1".to_string(), |r| r.0)
}

/// A divisor that cannot be 0 and so needs no test for it: an integer literal other than 0,
/// or a launch dimension (`cuda.blockDim.x`, `cuda.gridDim.y`, `cuda.warpsize`).
fn nonzero(e: &CExpr) -> bool {
    let launch_dim = |t: &str| {
        t == "warpSize"
            || t.strip_prefix("blockDim.")
                .or_else(|| t.strip_prefix("gridDim."))
                .is_some_and(|a| matches!(a, "x" | "y" | "z"))
    };
    e.prec == 100 && (e.text.trim_end_matches("LL").parse::<i64>().is_ok_and(|v| v != 0) || launch_dim(&e.text))
}

/// A C expression with its Numba type, the type C gives its text, and its map.
#[derive(Clone, Debug)]
struct CExpr {
    text: String,
    /// Numba's type of the value.
    ty: Ty,
    /// The type C gives the text (differs from `ty` for `threadIdx.x`, say: `unsigned int`
    /// in C, `int32` in Numba).
    cty: DType,
    /// C precedence of the outermost operator (higher binds tighter); 100 for atoms.
    prec: u8,
    map: Vec<(u32, u32, Span)>,
    /// A non-negative integer literal: fits any integer type, needs no cast.
    small_literal: bool,
    /// The value can be negative (for index wrap-around).
    maybe_negative: bool,
}

impl CExpr {
    fn atom(text: impl Into<String>, ty: Ty, cty: DType, at: Span) -> CExpr {
        let text = text.into();
        let len = text.len() as u32;
        CExpr { text, ty, cty, prec: 100, map: vec![(0, len, at)], small_literal: false, maybe_negative: true }
    }

    /// A value with no C text of its own: nothing (`None`), or a tuple (`cuda.grid(2)`,
    /// `a.shape`) that only unpacking and indexing read.
    fn valueless(ty: Ty) -> CExpr {
        CExpr {
            text: String::new(),
            ty,
            cty: DType::I64,
            prec: 100,
            map: Vec::new(),
            small_literal: false,
            maybe_negative: false,
        }
    }

    /// An `int64` literal (a Python int, or a global frozen into the kernel).
    fn int_literal(v: i64, at: Span) -> CExpr {
        let (text, cty) =
            if i32::try_from(v).is_ok() { (v.to_string(), DType::I32) } else { (format!("{v}LL"), DType::I64) };
        let mut x = CExpr::atom(text, Ty::I64, cty, at);
        x.small_literal = v >= 0;
        x.maybe_negative = v < 0;
        x
    }

    fn bool_literal(b: bool, at: Span) -> CExpr {
        let mut x = CExpr::atom(if b { "true" } else { "false" }, Ty::BOOL, DType::Bool, at);
        x.small_literal = true;
        x.maybe_negative = false;
        x
    }

    fn num(&self) -> DType {
        self.ty.num().unwrap_or(DType::I64)
    }

    /// The text, in parentheses when binding looser than `prec`.
    fn at_prec(mut self, prec: u8) -> CExpr {
        if self.prec < prec {
            self.text = format!("({})", self.text);
            shift(&mut self.map, 1);
            self.prec = 100;
        }
        self
    }

    /// Cast to C type `to` (keeping the Numba type).
    fn cast(self, to: DType) -> CExpr {
        if self.cty == to {
            return self;
        }
        let this = self.at_prec(14);
        let prefix = format!("({})", to.c_name());
        let mut map = this.map;
        shift(&mut map, prefix.len() as u32);
        CExpr { text: format!("{prefix}{}", this.text), cty: to, prec: 14, map, ..this }
    }

    /// Cast to `to` as a value: both the Numba and C types become `to`.
    fn convert(self, to: DType) -> CExpr {
        let mut e = self.cast(to);
        e.ty = Ty::Num(to);
        e
    }
}

fn shift(map: &mut [(u32, u32, Span)], by: u32) {
    for m in map {
        m.0 += by;
        m.1 += by;
    }
}

fn join(parts: Vec<(String, Option<CExpr>)>, ty: Ty, cty: DType, prec: u8, at: Span) -> CExpr {
    let mut text = String::new();
    let mut map = Vec::new();
    for (lit, e) in parts {
        text.push_str(&lit);
        if let Some(e) = e {
            let base = text.len() as u32;
            map.extend(e.map.iter().map(|(lo, hi, s)| (lo + base, hi + base, *s)));
            text.push_str(&e.text);
        }
    }
    map.push((0, text.len() as u32, at));
    CExpr { text, ty, cty, prec, map, small_literal: false, maybe_negative: true }
}

type R<T> = Result<T, Diagnostic>;

/// An array a kernel makes: where, its element type, its shape, and for a constant array the
/// array it copies.
type ArrayDecl = (Space, DType, Vec<i64>, Option<String>);

/// A variable of the function being lowered.
#[derive(Clone, Debug)]
struct Var {
    ty: Ty,
    /// The C name (the Python name unless it is a C keyword).
    c_name: String,
    /// Array variables refer to another array (a parameter, a shared array).
    alias: Option<String>,
    /// Where it was first assigned, for messages.
    first: Span,
    /// Declared at its first assignment rather than at the top of the function.
    inline: bool,
    declared: bool,
    /// A warning about it was given (an integer here and a float there, which Numba unifies
    /// to float; or, for a number parameter, updates the caller never sees): one is enough.
    warned: bool,
    /// Its values are never negative (from `cuda.grid`, thread indices, `range` from 0 up).
    nonneg: bool,
}

struct Lowerer<'a, 'e> {
    env: &'a Env<'e>,
    f: &'a PyFunction,
    module: &'a mut ModuleOut,
    stack: &'a mut Vec<String>,
    vars: HashMap<String, Var>,
    order: Vec<String>,
    /// Whether this pass writes text (the last) or only infers types.
    emit: bool,
    changed: bool,
    out: Out,
    indent: usize,
    ret: Option<Ty>,
    is_kernel: bool,
    /// Statement starts (byte offsets) whose target is declared there.
    inline_decls: BTreeSet<u32>,
    temp: usize,
    loop_depth: usize,
    /// For each loop the statement is in, innermost last: the flag its `break` sets when the
    /// loop has an `else`, which runs only if no `break` left the loop.
    break_flags: Vec<Option<String>>,
    /// The C name this function gets (a device function's tuple result is `{c_name}_ret`).
    c_name: String,
}

const C_RESERVED: &[&str] = &[
    "auto",
    "break",
    "case",
    "char",
    "const",
    "continue",
    "default",
    "do",
    "double",
    "else",
    "enum",
    "extern",
    "float",
    "for",
    "goto",
    "if",
    "inline",
    "int",
    "long",
    "register",
    "restrict",
    "return",
    "short",
    "signed",
    "sizeof",
    "static",
    "struct",
    "switch",
    "typedef",
    "union",
    "unsigned",
    "void",
    "volatile",
    "while",
    "bool",
    "true",
    "false",
    "class",
    "new",
    "delete",
    "this",
    "template",
    "namespace",
    "operator",
    "threadIdx",
    "blockIdx",
    "blockDim",
    "gridDim",
    "warpSize",
    "min",
    "max",
    "printf",
    "atomicAdd",
    "signed",
    "private",
    "public",
    "virtual",
    "friend",
    "using",
];

fn c_ident(name: &str) -> String {
    if C_RESERVED.contains(&name) || name.starts_with("py_") { format!("{name}_") } else { name.to_string() }
}

fn lower_function(
    env: &Env,
    f: &PyFunction,
    params: &[Ty],
    module: &mut ModuleOut,
    stack: &mut Vec<String>,
    is_kernel: bool,
) -> R<FnOut> {
    let c_name = if is_kernel {
        c_ident(&f.name)
    } else {
        let same = module.instances.iter().filter(|(n, ..)| n == &f.name).count();
        if same == 0 { c_ident(&f.name) } else { format!("{}_{}", c_ident(&f.name), same + 1) }
    };
    let mut lf = Lowerer {
        env,
        f,
        module,
        stack,
        vars: HashMap::new(),
        order: Vec::new(),
        emit: false,
        changed: false,
        out: Out::default(),
        indent: 1,
        ret: None,
        is_kernel,
        inline_decls: BTreeSet::new(),
        temp: 0,
        loop_depth: 0,
        break_flags: Vec::new(),
        c_name: c_name.clone(),
    };
    for ((name, at), ty) in f.params.iter().zip(params) {
        lf.vars.insert(
            name.clone(),
            Var {
                ty: ty.clone(),
                c_name: c_ident(name),
                alias: None,
                first: *at,
                inline: false,
                declared: true,
                warned: false,
                nonneg: false,
            },
        );
    }
    // Infer: run over the body until no variable's type changes (Numba's fixpoint).
    for round in 0.. {
        lf.changed = false;
        lf.block(&f.body)?;
        if !lf.changed {
            break;
        }
        if round > 20 {
            return Err(Diagnostic::error("the types of this function's variables do not settle").at(f.span));
        }
    }
    lf.plan_declarations();
    lf.emit = true;
    lf.block(&f.body)?;
    let ret = if is_kernel { Ty::None } else { lf.ret.clone().unwrap_or(Ty::None) };
    // The signature and the declarations of variables not declared where first assigned.
    let mut head = Out::default();
    let mut prefix = Out::default();
    let qualifier = if is_kernel { "__global__ void" } else { "__device__" };
    let ret_c = match &ret {
        Ty::Num(d) => d.c_name().to_string(),
        Ty::None => "void".to_string(),
        Ty::Tuple(items) => {
            // A tuple result is a struct of its items, made by a constructor function.
            let fields: Vec<&str> = items.iter().map(|t| t.c_name()).collect();
            let st = format!("{c_name}_ret");
            let mut decl = format!("// The tuple `{}` returns.\nstruct {st} {{", f.name);
            for (k, t) in fields.iter().enumerate() {
                let _ = write!(decl, " {t} f{k};");
            }
            decl.push_str(" };\n");
            let params: Vec<String> = fields.iter().enumerate().map(|(k, t)| format!("{t} f{k}")).collect();
            let _ = write!(decl, "__device__ {st} {st}_make({}) {{\n    {st} r;\n", params.join(", "));
            for k in 0..fields.len() {
                let _ = writeln!(decl, "    r.f{k} = f{k};");
            }
            decl.push_str("    return r;\n}\n");
            let len = decl.len() as u32;
            prefix.text.push_str(&decl);
            prefix.map.push((0, len - 1, f.span));
            st
        }
        _ => {
            return Err(Diagnostic::error("a device function can return a number or a tuple of numbers, not an array")
                .at(f.span)
                .help("write the array's values into an array argument"));
        }
    };
    let mut sig = if is_kernel { format!("{qualifier} {c_name}(") } else { format!("{qualifier} {ret_c} {c_name}(") };
    let mut first = true;
    for ((name, at), ty) in f.params.iter().zip(params) {
        let var = &lf.vars[name];
        let mut piece = |s: String| {
            if !first {
                sig.push_str(", ");
            }
            first = false;
            let lo = sig.len() as u32;
            sig.push_str(&s);
            head.map.push((lo, sig.len() as u32, *at));
        };
        match ty {
            Ty::Num(d) => piece(format!("{} {}", d.c_name(), var.c_name)),
            Ty::Array { dtype, ndim, .. } => {
                piece(format!("{} *{}", dtype.c_name(), var.c_name));
                for d in 0..*ndim {
                    piece(format!("long long {}", extent_name(&var.c_name, *ndim, d)));
                }
            }
            _ => return Err(Diagnostic::error("a function's parameter must be a number or an array").at(*at)),
        }
    }
    sig.push_str(") {\n");
    head.text = sig;
    let line_of_def = f.span;
    head.map.push((0, head.text.len() as u32 - 1, line_of_def));
    for name in &lf.order {
        let var = &lf.vars[name];
        if var.inline || var.alias.is_some() || f.params.iter().any(|(p, _)| p == name) {
            continue;
        }
        if let Ty::Num(d) = var.ty {
            let lo = head.text.len() as u32;
            let _ = writeln!(head.text, "    {} {};", d.c_name(), var.c_name);
            head.map.push((lo, head.text.len() as u32 - 1, var.first));
        }
    }
    let mut out = prefix;
    out.append(&head.text, &head.map);
    let body = std::mem::take(&mut lf.out);
    out.append(&body.text, &body.map);
    out.text.push_str("}\n");
    let instance_types = params.to_vec();
    lf.module.instances.push((f.name.clone(), instance_types, c_name.clone(), ret.clone()));
    Ok(FnOut { c_name, ret, text: out.text, map: out.map })
}

/// The C name of extent `d` of an `ndim`-dimensional array parameter.
fn extent_name(array: &str, ndim: usize, d: usize) -> String {
    match (ndim, d) {
        (1, _) => format!("{array}_size"),
        (2, 0) => format!("{array}_rows"),
        (2, _) => format!("{array}_cols"),
        _ => format!("{array}_shape{d}"),
    }
}

fn is_range_call<'x>(e: &'x ast::Expr, imports: &Imports) -> Option<&'x ast::ExprCall> {
    match e {
        ast::Expr::Call(c)
            if matches!(dotted(&c.func, imports).as_deref(), Some("range" | "numba.prange" | "prange")) =>
        {
            Some(c)
        }
        _ => None,
    }
}

impl Lowerer<'_, '_> {
    fn at(&self, range: rustpython_parser::text_size::TextRange) -> Span {
        span(self.f.source, range)
    }

    fn err(&self, range: rustpython_parser::text_size::TextRange, msg: impl Into<String>) -> Diagnostic {
        Diagnostic::error(msg).at(self.at(range))
    }

    /// Which top-level assignments declare their variable: the first mention of the name,
    /// at the function's top level. Others are declared at the top of the function.
    fn plan_declarations(&mut self) {
        let mut seen = BTreeSet::new();
        for stmt in &self.f.body {
            // `x, y = cuda.grid(2)`: each name declared there, where first mentioned.
            if let ast::Stmt::Assign(a) = stmt
                && a.targets.len() == 1
                && let ast::Expr::Tuple(t) = &a.targets[0]
            {
                let read = names_in_expr(&a.value);
                for e in &t.elts {
                    if let ast::Expr::Name(n) = e
                        && !seen.contains(n.id.as_str())
                        && !read.contains(n.id.as_str())
                        && self.vars.get(n.id.as_str()).is_some_and(|v| matches!(v.ty, Ty::Num(_)) && v.alias.is_none())
                        && !self.f.params.iter().any(|(p, _)| p == n.id.as_str())
                    {
                        self.inline_decls.insert(a.range.start().to_u32());
                        if let Some(v) = self.vars.get_mut(n.id.as_str()) {
                            v.inline = true;
                        }
                    }
                }
            }
            if let ast::Stmt::Assign(a) = stmt
                && a.targets.len() == 1
                && let ast::Expr::Name(n) = &a.targets[0]
                && !seen.contains(n.id.as_str())
                && !names_in_expr(&a.value).contains(n.id.as_str())
                && self.vars.get(n.id.as_str()).is_some_and(|v| matches!(v.ty, Ty::Num(_)) && v.alias.is_none())
                && !self.f.params.iter().any(|(p, _)| p == n.id.as_str())
            {
                self.inline_decls.insert(a.range.start().to_u32());
                if let Some(v) = self.vars.get_mut(n.id.as_str()) {
                    v.inline = true;
                }
            }
            seen.extend(names_in_stmt(stmt));
        }
    }

    fn line(&mut self, text: &str, at: Span) {
        if !self.emit {
            return;
        }
        let pad = "    ".repeat(self.indent);
        let lo = self.out.text.len() as u32;
        self.out.text.push_str(&pad);
        self.out.text.push_str(text);
        self.out.map.push((lo, self.out.text.len() as u32, at));
        self.out.text.push('\n');
    }

    /// A statement line made of an expression and literal text around it.
    fn line_with(&mut self, before: &str, e: &CExpr, after: &str, at: Span) {
        if !self.emit {
            return;
        }
        let pad = "    ".repeat(self.indent);
        let lo = self.out.text.len() as u32;
        self.out.text.push_str(&pad);
        self.out.text.push_str(before);
        let base = self.out.text.len() as u32;
        self.out.map.extend(e.map.iter().map(|(a, b, s)| (a + base, b + base, *s)));
        self.out.text.push_str(&e.text);
        self.out.text.push_str(after);
        self.out.map.push((lo, self.out.text.len() as u32, at));
        self.out.text.push('\n');
    }

    fn block(&mut self, body: &[ast::Stmt]) -> R<()> {
        for s in body {
            self.stmt(s)?;
        }
        Ok(())
    }

    fn stmt(&mut self, s: &ast::Stmt) -> R<()> {
        let at = self.at(s.range());
        match s {
            ast::Stmt::Expr(e) => {
                if let ast::Expr::Constant(_) = &*e.value {
                    return Ok(()); // a docstring
                }
                let c = self.expr(&e.value)?;
                if matches!(c.ty, Ty::None) && c.text.is_empty() {
                    return Ok(());
                }
                self.line_with("", &c, ";", at);
            }
            ast::Stmt::Pass(_) => {}
            ast::Stmt::Break(_) => {
                if self.loop_depth == 0 {
                    return Err(self.err(s.range(), "`break` outside a loop"));
                }
                if let Some(Some(flag)) = self.break_flags.last() {
                    let set = format!("{flag} = true;");
                    self.line(&set, at);
                }
                self.line("break;", at)
            }
            ast::Stmt::Continue(_) => {
                if self.loop_depth == 0 {
                    return Err(self.err(s.range(), "`continue` outside a loop"));
                }
                self.line("continue;", at)
            }
            ast::Stmt::Return(r) => {
                match (&r.value, self.is_kernel) {
                    (None, _) => self.line("return;", at),
                    (Some(v), true) if matches!(&**v, ast::Expr::Constant(c) if matches!(c.value, ast::Constant::None)) => {
                        self.line("return;", at)
                    }
                    (Some(_), true) => {
                        return Err(self
                            .err(s.range(), "a kernel cannot return a value")
                            .help("Numba kernels return nothing (`void`): write the result into an array argument"));
                    }
                    (Some(v), false) if matches!(&**v, ast::Expr::Tuple(_)) => {
                        let ast::Expr::Tuple(t) = &**v else { unreachable!("matched a tuple") };
                        let mut items = Vec::new();
                        for e in &t.elts {
                            let c = self.expr(e)?;
                            if !matches!(c.ty, Ty::Num(_)) {
                                return Err(self
                                    .err(
                                        e.range(),
                                        format!("a device function returns numbers, this is {}", c.ty.numba_name()),
                                    )
                                    .help("write arrays into an array argument instead"));
                            }
                            items.push(c);
                        }
                        self.return_tuple(items, v, at)?;
                    }
                    // `return f(x)` where `f` returns a tuple: its fields, returned as this function's tuple.
                    (Some(v), false)
                        if matches!(&**v, ast::Expr::Call(_)) && matches!(self.expr(v)?.ty, Ty::Tuple(_)) =>
                    {
                        let c = self.expr(v)?;
                        let Ty::Tuple(tys) = c.ty.clone() else { unreachable!("a tuple type") };
                        self.temp += 1;
                        let tmp = format!("py_ret{}", self.temp);
                        self.line_with(&format!("auto {tmp} = "), &c, ";", at);
                        let items = tys
                            .iter()
                            .enumerate()
                            .map(|(k, ty)| {
                                CExpr::atom(format!("{tmp}.f{k}"), ty.clone(), ty.num().unwrap_or(DType::F64), at)
                            })
                            .collect();
                        self.return_tuple(items, v, at)?;
                    }
                    (Some(v), false) => {
                        let c = self.expr(v)?;
                        let ty = match (&self.ret, &c.ty) {
                            (Some(Ty::Num(a)), Ty::Num(b)) => Ty::Num(unify(*a, *b)),
                            (None, t @ Ty::Num(_)) => t.clone(),
                            (_, other) => {
                                return Err(self.err(v.range(), format!("a device function here returns {}: gridlab's device functions return a number or a tuple of numbers", other.numba_name())));
                            }
                        };
                        if self.ret.as_ref() != Some(&ty) {
                            self.ret = Some(ty);
                            self.changed = true;
                        }
                        self.line_with("return ", &c, ";", at);
                    }
                }
            }
            ast::Stmt::Assign(a) => {
                if a.targets.len() > 1 {
                    for t in &a.targets {
                        self.assign(t, &a.value, at, s.range().start().to_u32())?;
                    }
                } else {
                    self.assign(&a.targets[0], &a.value, at, s.range().start().to_u32())?;
                }
            }
            ast::Stmt::AnnAssign(a) => {
                if let Some(v) = &a.value {
                    self.assign(&a.target, v, at, u32::MAX)?;
                }
            }
            ast::Stmt::AugAssign(a) => self.aug_assign(a, at)?,
            ast::Stmt::If(i) => {
                let test = self.truth(&i.test)?;
                self.line_with("if (", &test, ") {", self.at(i.test.range()));
                self.indent += 1;
                self.block(&i.body)?;
                self.indent -= 1;
                let mut orelse = &i.orelse;
                loop {
                    if orelse.is_empty() {
                        self.line("}", at);
                        break;
                    }
                    if let [ast::Stmt::If(elif)] = orelse.as_slice() {
                        let test = self.truth(&elif.test)?;
                        self.line_with("} else if (", &test, ") {", self.at(elif.test.range()));
                        self.indent += 1;
                        self.block(&elif.body)?;
                        self.indent -= 1;
                        orelse = &elif.orelse;
                    } else {
                        self.line("} else {", at);
                        self.indent += 1;
                        self.block(orelse)?;
                        self.indent -= 1;
                        self.line("}", at);
                        break;
                    }
                }
            }
            ast::Stmt::While(w) => {
                let flag = self.break_flag(&w.orelse, at);
                let test = self.truth(&w.test)?;
                self.line_with("while (", &test, ") {", self.at(w.test.range()));
                self.loop_body(&w.body, flag.clone(), None)?;
                self.line("}", at);
                self.loop_else(&w.orelse, flag, at)?;
            }
            ast::Stmt::For(f) => self.for_loop(f, at)?,
            ast::Stmt::FunctionDef(_) | ast::Stmt::AsyncFunctionDef(_) => {
                return Err(self
                    .err(s.range(), "a function defined inside a kernel is outside Numba's CUDA subset")
                    .help("define it at the top level under `@cuda.jit(device=True)` and call it"));
            }
            ast::Stmt::ClassDef(_) => {
                return Err(self
                    .err(s.range(), "classes are outside Numba's CUDA kernel subset")
                    .help("a kernel works on arrays and numbers; pass each field as its own array"));
            }
            ast::Stmt::Assert(_) => {
                // Numba compiles `assert` out of kernels unless `debug=True, opt=False`.
                self.line("// assert: Numba leaves it out of kernels compiled without debug=True", at);
            }
            ast::Stmt::With(_) | ast::Stmt::AsyncWith(_) => {
                return Err(self.err(s.range(), "`with` is outside Numba's CUDA kernel subset"));
            }
            ast::Stmt::Try(_) | ast::Stmt::TryStar(_) | ast::Stmt::Raise(_) => {
                return Err(self
                    .err(s.range(), "exceptions (`try`, `raise`) are outside what gridlab runs in a kernel")
                    .help("check the condition with `if` and return early, or write an error flag into an array"));
            }
            ast::Stmt::Import(_) | ast::Stmt::ImportFrom(_) => {
                return Err(self.err(s.range(), "imports go at the top of the file, outside the kernel"));
            }
            ast::Stmt::Global(_) | ast::Stmt::Nonlocal(_) | ast::Stmt::Delete(_) => {
                return Err(
                    self.err(s.range(), "`global`, `nonlocal` and `del` are outside Numba's CUDA kernel subset")
                );
            }
            _ => return Err(self.err(s.range(), "this statement is outside Numba's CUDA kernel subset")),
        }
        Ok(())
    }

    /// `return x, y` from a device function: unify with the other returns' tuples, and return
    /// the struct of the items.
    fn return_tuple(&mut self, items: Vec<CExpr>, v: &ast::Expr, at: Span) -> R<()> {
        let tys: Vec<DType> = items.iter().map(|c| c.ty.num().unwrap_or(DType::F64)).collect();
        let ty = match &self.ret {
            None => Ty::Tuple(tys.iter().map(|d| Ty::Num(*d)).collect()),
            Some(Ty::Tuple(old)) if old.len() == tys.len() => Ty::Tuple(
                old.iter()
                    .zip(&tys)
                    .map(|(o, d)| match o {
                        Ty::Num(o) => Ty::Num(unify(*o, *d)),
                        other => other.clone(),
                    })
                    .collect(),
            ),
            Some(other) => {
                return Err(self
                    .err(
                        v.range(),
                        format!(
                            "this returns a tuple of {}, another `return` of this function returns {}",
                            tys.len(),
                            other.numba_name()
                        ),
                    )
                    .help("return the same kind of value from every `return`"));
            }
        };
        if self.ret.as_ref() != Some(&ty) {
            self.ret = Some(ty.clone());
            self.changed = true;
        }
        let Ty::Tuple(want) = ty else { unreachable!("a tuple type") };
        let mut parts = Vec::new();
        for (k, (c, w)) in items.into_iter().zip(want).enumerate() {
            let c = match w {
                Ty::Num(d) => c.convert(d),
                _ => c,
            };
            let sep = if k == 0 { format!("{}_ret_make(", self.c_name) } else { ", ".into() };
            parts.push((sep, Some(c)));
        }
        parts.push((")".into(), None));
        let call = join(parts, Ty::None, DType::I32, 100, at);
        self.line_with("return ", &call, ";", at);
        Ok(())
    }

    /// A loop with an `else`: the flag its `break`s set, declared before it.
    fn break_flag(&mut self, orelse: &[ast::Stmt], at: Span) -> Option<String> {
        if orelse.is_empty() {
            return None;
        }
        self.temp += 1;
        let flag = format!("py_broke{}", self.temp);
        self.line(&format!("bool {flag} = false;"), at);
        Some(flag)
    }

    /// A loop's body, one level in; `first` is a line it starts with (a `for` over a tuple's
    /// item).
    fn loop_body(&mut self, body: &[ast::Stmt], flag: Option<String>, first: Option<(String, Span)>) -> R<()> {
        self.loop_depth += 1;
        self.break_flags.push(flag);
        self.indent += 1;
        if let Some((line, at)) = first {
            self.line(&line, at);
        }
        let done = self.block(body);
        self.indent -= 1;
        self.break_flags.pop();
        self.loop_depth -= 1;
        done
    }

    /// A loop's `else`: it runs when the loop ended without a `break`, as in Python.
    fn loop_else(&mut self, orelse: &[ast::Stmt], flag: Option<String>, at: Span) -> R<()> {
        let Some(flag) = flag else { return Ok(()) };
        self.line(&format!("if (!{flag}) {{"), at);
        self.indent += 1;
        self.block(orelse)?;
        self.indent -= 1;
        self.line("}", at);
        Ok(())
    }

    fn for_loop(&mut self, f: &ast::StmtFor, at: Span) -> R<()> {
        if let ast::Expr::Tuple(ast::ExprTuple { elts, .. }) | ast::Expr::List(ast::ExprList { elts, .. }) = &*f.iter
            && !elts.is_empty()
        {
            return self.for_items(f, elts, at);
        }
        let Some(call) = is_range_call(&f.iter, self.env.imports) else {
            return Err(self.err(f.iter.range(), "a kernel's `for` loops over `range(...)` or a tuple of numbers only")
                .help("loop over indices: `for i in range(len(a)):` and read `a[i]`; lists and iterators are outside Numba's CUDA subset"));
        };
        let ast::Expr::Name(target) = &*f.target else {
            return Err(self.err(f.target.range(), "the loop variable must be one name"));
        };
        if call.args.is_empty() || call.args.len() > 3 || !call.keywords.is_empty() {
            return Err(self.err(
                call.range,
                "`range` takes one to three arguments: `range(stop)`, `range(start, stop)`, `range(start, stop, step)`",
            ));
        }
        let mut parts = Vec::new();
        for a in &call.args {
            let c = self.expr(a)?;
            if !matches!(c.ty, Ty::Num(d) if !d.is_float()) {
                return Err(self.err(a.range(), format!("`range` takes integers, this is {}", c.ty.numba_name())));
            }
            parts.push(c);
        }
        let (start, stop, step) = match parts.len() {
            1 => (None, parts.remove(0), None),
            2 => {
                let stop = parts.remove(1);
                (Some(parts.remove(0)), stop, None)
            }
            _ => {
                let step = parts.remove(2);
                let stop = parts.remove(1);
                (Some(parts.remove(0)), stop, Some(step))
            }
        };
        let unsigned = [Some(&stop), start.as_ref(), step.as_ref()].iter().flatten().all(|e| e.num() == DType::U64);
        let ty = if unsigned { DType::U64 } else { DType::I64 };
        let nonneg = start.as_ref().is_none_or(|s| s.small_literal) && step.as_ref().is_none_or(|s| s.small_literal);
        let name = target.id.to_string();
        self.set_var(&name, Ty::Num(ty), self.at(target.range), nonneg)?;
        let var = self.vars[&name].c_name.clone();
        // A stop (or step) that is not a plain name or literal is evaluated once, as Python's
        // range does, into a variable of its own.
        let loop_at = self.at(f.range);
        let bound = |this: &mut Self, e: CExpr, what: &str| -> CExpr {
            if e.prec == 100 && e.text.chars().all(|c| c.is_alphanumeric() || c == '_') {
                return e;
            }
            this.temp += 1;
            let tmp = format!("{var}_{what}");
            this.line_with(&format!("{} {tmp} = ", ty.c_name()), &e, ";", loop_at);
            CExpr::atom(tmp, Ty::Num(ty), ty, loop_at)
        };
        let stop = bound(self, stop, "stop");
        let flag = self.break_flag(&f.orelse, loop_at);
        let step_neg = step.as_ref().is_some_and(|s| s.text.starts_with('-'));
        let step = step.map(|s| bound(self, s, "step"));
        let init = start.map_or_else(|| "0".to_string(), |s| s.text);
        let cmp = match &step {
            None => format!("{var} < {}", stop.text),
            Some(_) if step_neg => format!("{var} > {}", stop.text),
            Some(s) if s.small_literal => format!("{var} < {}", stop.text),
            Some(s) => format!("({} > 0 ? {var} < {} : {var} > {})", s.text, stop.text, stop.text),
        };
        let inc = match &step {
            None => format!("{var}++"),
            Some(s) => format!("{var} += {}", s.text),
        };
        self.line(&format!("for ({var} = {init}; {cmp}; {inc}) {{"), loop_at);
        self.loop_body(&f.body, flag.clone(), None)?;
        self.line("}", at);
        self.loop_else(&f.orelse, flag, at)
    }

    /// `for d in (-1, 0, 1):` (a tuple of numbers, as Numba unrolls it): the values go in a
    /// per-thread array, evaluated once before the loop as Python does, and the loop indexes it.
    fn for_items(&mut self, f: &ast::StmtFor, elts: &[ast::Expr], at: Span) -> R<()> {
        let ast::Expr::Name(target) = &*f.target else {
            return Err(self.err(f.target.range(), "the loop variable must be one name"));
        };
        let items: Vec<CExpr> = elts.iter().map(|e| self.expr(e)).collect::<R<_>>()?;
        let mut ty: Option<DType> = None;
        for (e, c) in elts.iter().zip(&items) {
            let Ty::Num(d) = c.ty else {
                return Err(self
                    .err(e.range(), format!("a kernel loops over a tuple of numbers, this is {}", c.ty.numba_name())));
            };
            ty = Some(ty.map_or(d, |t| unify(t, d)));
        }
        let ty = ty.unwrap_or(DType::I64);
        let name = target.id.to_string();
        let nonneg = items.iter().all(|c| !c.maybe_negative);
        self.set_var(&name, Ty::Num(ty), self.at(target.range), nonneg)?;
        let var = self.vars[&name].c_name.clone();
        let loop_at = self.at(f.range);
        self.temp += 1;
        let (arr, k) = (format!("{var}_items{}", self.temp), format!("{var}_k{}", self.temp));
        self.line(&format!("{} {arr}[{}];", ty.c_name(), items.len()), loop_at);
        for (i, c) in items.into_iter().enumerate() {
            self.line_with(&format!("{arr}[{i}] = "), &c.convert(ty), ";", loop_at);
        }
        let flag = self.break_flag(&f.orelse, loop_at);
        self.line(&format!("for (long long {k} = 0; {k} < {}; {k}++) {{", elts.len()), loop_at);
        self.loop_body(&f.body, flag.clone(), Some((format!("{var} = {arr}[{k}];"), self.at(target.range))))?;
        self.line("}", at);
        self.loop_else(&f.orelse, flag, at)
    }

    /// Record that variable `name` is assigned a value of type `ty`.
    fn set_var(&mut self, name: &str, ty: Ty, at: Span, nonneg: bool) -> R<()> {
        if self.f.params.iter().any(|(p, _)| p == name) && matches!(self.vars[name].ty, Ty::Array { .. }) {
            return Err(Diagnostic::error(format!("`{name}` is an array argument: it cannot be assigned"))
                .at(at)
                .help(format!("write its elements instead: `{name}[i] = ...`")));
        }
        match self.vars.get_mut(name) {
            None => {
                self.vars.insert(
                    name.to_string(),
                    Var {
                        ty,
                        c_name: c_ident(name),
                        alias: None,
                        first: at,
                        inline: false,
                        declared: false,
                        warned: false,
                        nonneg,
                    },
                );
                self.order.push(name.to_string());
                self.changed = true;
            }
            Some(var) => {
                if !nonneg && var.nonneg && !self.emit {
                    var.nonneg = false;
                    self.changed = true;
                }
                match (&var.ty, &ty) {
                    (Ty::Num(a), Ty::Num(b)) => {
                        let u = unify(*a, *b);
                        // A number parameter's type is the launch's (a guess when a kernel is
                        // defined): only the kernel's own variables are worth the warning.
                        let param = self.f.params.iter().any(|(p, _)| p == name);
                        if a.is_float() != b.is_float()
                            && !var.warned
                            && !param
                            && *a != DType::Bool
                            && *b != DType::Bool
                        {
                            var.warned = true;
                            self.module.warnings.push(
                                Diagnostic::warning(format!(
                                    "`{name}` is {} in one place and {} in another: Numba makes it {} everywhere",
                                    numba_name(*a),
                                    numba_name(*b),
                                    numba_name(u)
                                ))
                                .at(at)
                                .help("give it one type from the start (`x = 0.0` for a float) so the kernel does what it says"),
                            );
                        }
                        if u != *a {
                            var.ty = Ty::Num(u);
                            self.changed = true;
                        }
                    }
                    (a, b) if a == b => {}
                    (a, b) => {
                        return Err(Diagnostic::error(format!(
                            "Cannot unify {} and {} for '{name}': it is one kind of value in one place and another elsewhere",
                            a.numba_name(),
                            b.numba_name()
                        ))
                        .at(at)
                        .help("use a new name for the second value"));
                    }
                }
            }
        }
        Ok(())
    }

    fn assign(&mut self, target: &ast::Expr, value: &ast::Expr, at: Span, stmt_start: u32) -> R<()> {
        match target {
            ast::Expr::Name(n) => {
                let name = n.id.as_str();
                // Arrays made in the kernel: shared, local and constant arrays.
                if let Some(decl) = self.array_decl(value)? {
                    return self.declare_array(name, decl, at);
                }
                let c = self.expr(value)?;
                if let Ty::Array { .. } = &c.ty {
                    // Another name for an array.
                    if let Some(v) = self.vars.get(name)
                        && v.alias.is_none()
                        && v.ty != c.ty
                    {
                        return Err(self.err(value.range(), format!("`{name}` already holds {}", v.ty.numba_name())));
                    }
                    let alias = c.text.clone();
                    self.vars.entry(name.to_string()).or_insert(Var {
                        ty: c.ty.clone(),
                        c_name: alias.clone(),
                        alias: Some(alias),
                        first: at,
                        inline: false,
                        declared: true,
                        warned: false,
                        nonneg: false,
                    });
                    return Ok(());
                }
                if let Ty::Tuple(_) = &c.ty {
                    return Err(self
                        .err(value.range(), "a tuple in one name is outside what gridlab lowers")
                        .help(format!("unpack it: `x, y = {}`", expr_text(value))));
                }
                if matches!(c.ty, Ty::None) {
                    return Err(self.err(value.range(), "this returns nothing, so there is no value to assign"));
                }
                let nonneg = !c.maybe_negative;
                self.set_var(name, c.ty.clone(), at, nonneg)?;
                let var = self.vars[name].clone();
                if self.emit && self.inline_decls.contains(&stmt_start) && !var.declared {
                    if let Some(v) = self.vars.get_mut(name) {
                        v.declared = true;
                    }
                    self.line_with(&format!("{} {} = ", var.ty.c_name(), var.c_name), &c, ";", at);
                } else {
                    self.line_with(&format!("{} = ", var.c_name), &c, ";", at);
                }
                Ok(())
            }
            ast::Expr::Subscript(sub) => {
                let place = self.subscript(sub)?;
                let c = self.expr(value)?;
                if !matches!(c.ty, Ty::Num(_)) {
                    return Err(
                        self.err(value.range(), format!("an element takes a number, this is {}", c.ty.numba_name()))
                    );
                }
                let lhs = place.text.clone();
                let mut line = CExpr { text: String::new(), ..c.clone() };
                line.text = format!("{lhs} = ");
                line.map = place.map.clone();
                let base = line.text.len() as u32;
                line.map.extend(c.map.iter().map(|(a, b, s)| (a + base, b + base, *s)));
                line.text.push_str(&c.text);
                self.line_with("", &line, ";", at);
                Ok(())
            }
            ast::Expr::Tuple(t) => {
                let values: Vec<CExpr> = match value {
                    ast::Expr::Tuple(v) if v.elts.len() == t.elts.len() => {
                        v.elts.iter().map(|e| self.expr(e)).collect::<R<_>>()?
                    }
                    other => {
                        let c = self.expr(other)?;
                        match c.ty.clone() {
                            // A device function's tuple: held in a temporary, unpacked from its fields.
                            Ty::Tuple(items) if items.len() == t.elts.len() && !c.text.is_empty() => {
                                self.temp += 1;
                                let tmp = format!("py_ret{}", self.temp);
                                self.line_with(&format!("auto {tmp} = "), &c, ";", at);
                                items
                                    .iter()
                                    .enumerate()
                                    .map(|(k, ty)| {
                                        let d = ty.num().unwrap_or(DType::F64);
                                        CExpr::atom(format!("{tmp}.f{k}"), ty.clone(), d, at)
                                    })
                                    .collect()
                            }
                            Ty::Tuple(items) if items.len() == t.elts.len() => self.tuple_parts(other, items.len())?,
                            _ => {
                                return Err(self.err(
                                    value.range(),
                                    format!("{} names on the left need as many values on the right", t.elts.len()),
                                ));
                            }
                        }
                    }
                };
                if values.len() != t.elts.len() {
                    return Err(self.err(
                        value.range(),
                        format!("{} names on the left, {} values on the right", t.elts.len(), values.len()),
                    ));
                }
                // `a, b = b, a`: every value is computed before any name changes, as in Python.
                let read = names_in_expr(value);
                // An element on the left may be one the right reads (`a[i], a[j] = a[j], a[i]`).
                let swap = t.elts.len() > 1
                    && matches!(value, ast::Expr::Tuple(_))
                    && t.elts.iter().any(|e| match e {
                        ast::Expr::Name(n) => read.contains(n.id.as_str()),
                        ast::Expr::Subscript(_) => true,
                        _ => false,
                    });
                let mut temps = Vec::new();
                for v in values {
                    if swap {
                        self.temp += 1;
                        let tmp = format!("tmp{}", self.temp);
                        self.line_with(&format!("{} {tmp} = ", v.ty.c_name()), &v, ";", at);
                        temps.push(CExpr { text: tmp, ..v });
                    } else {
                        temps.push(v);
                    }
                }
                for (target, v) in t.elts.iter().zip(temps) {
                    match target {
                        ast::Expr::Name(n) => {
                            self.set_var(n.id.as_str(), v.ty.clone(), self.at(n.range), !v.maybe_negative)?;
                            let var = self.vars[n.id.as_str()].clone();
                            if self.emit && var.inline && !var.declared && self.inline_decls.contains(&stmt_start) {
                                if let Some(x) = self.vars.get_mut(n.id.as_str()) {
                                    x.declared = true;
                                }
                                self.line_with(&format!("{} {} = ", var.ty.c_name(), var.c_name), &v, ";", at);
                            } else {
                                self.line_with(&format!("{} = ", var.c_name), &v, ";", at);
                            }
                        }
                        ast::Expr::Subscript(sub) => {
                            let place = self.subscript(sub)?;
                            self.line_with(&format!("{} = ", place.text), &v, ";", at);
                        }
                        other => return Err(self.err(other.range(), "only names and elements can be assigned")),
                    }
                }
                Ok(())
            }
            ast::Expr::Attribute(_) => Err(self.err(target.range(), "attributes cannot be assigned in a kernel")),
            other => Err(self.err(other.range(), "only names, elements and tuples of them can be assigned")),
        }
    }

    /// The parts of a tuple-valued call (`cuda.grid(2)`), one expression each.
    fn tuple_parts(&mut self, e: &ast::Expr, n: usize) -> R<Vec<CExpr>> {
        let at = self.at(e.range());
        if let ast::Expr::Call(c) = e {
            let path = dotted(&c.func, self.env.imports).unwrap_or_default();
            if path == "cuda.grid" || path == "cuda.gridsize" {
                let axes = ["x", "y", "z"];
                return Ok((0..n).map(|k| self.grid_axis(&path, axes[k], at)).collect());
            }
        }
        if let ast::Expr::Attribute(a) = e
            && a.attr.as_str() == "shape"
        {
            let arr = self.expr(&a.value)?;
            return (0..n).map(|k| self.extent(&arr, k, at)).collect();
        }
        Err(self.err(e.range(), "gridlab unpacks tuples from `cuda.grid`, `cuda.gridsize` and `a.shape` only"))
    }

    fn grid_axis(&mut self, path: &str, axis: &str, at: Span) -> CExpr {
        let text = if path == "cuda.grid" {
            format!("blockIdx.{axis} * blockDim.{axis} + threadIdx.{axis}")
        } else {
            format!("blockDim.{axis} * gridDim.{axis}")
        };
        let mut e = CExpr::atom(text, Ty::I64, DType::U32, at);
        e.prec = 12;
        e.maybe_negative = false;
        e
    }

    fn aug_assign(&mut self, a: &ast::StmtAugAssign, at: Span) -> R<()> {
        let (place, place_ty) = match &*a.target {
            ast::Expr::Name(n) => {
                let Some(var) = self.vars.get(n.id.as_str()).cloned() else {
                    return Err(self.err(n.range, format!("`{}` is used before it has a value", n.id)));
                };
                (
                    CExpr::atom(
                        var.c_name.clone(),
                        var.ty.clone(),
                        var.ty.num().unwrap_or(DType::I64),
                        self.at(n.range),
                    ),
                    var.ty.clone(),
                )
            }
            ast::Expr::Subscript(s) => {
                let p = self.subscript(s)?;
                let t = p.ty.clone();
                (p, t)
            }
            other => return Err(self.err(other.range(), "only names and elements can be updated")),
        };
        let value = self.expr(&a.value)?;
        let Ty::Num(pt) = place_ty else {
            return Err(self.err(a.target.range(), "only numbers can be updated"));
        };
        let combined = self.binary(a.op, place.clone(), value.clone(), self.at(a.range))?;
        if let ast::Expr::Name(n) = &*a.target {
            let name = n.id.as_str();
            // `total += a[i]` on a number argument: the learner expects the caller to see the
            // sum, as a C++ reference would give; each thread adds to its own copy instead.
            if !self.f.device
                && matches!(a.op, ast::Operator::Add | ast::Operator::Sub | ast::Operator::Mult)
                && self.f.params.iter().any(|(p, _)| p == name)
                && reads_element(&a.value)
                && !reads_name(&self.f.body, name)
                && let Some(var) = self.vars.get_mut(name)
                && !var.warned
            {
                var.warned = true;
                self.module.warnings.push(
                    Diagnostic::warning(format!(
                        "`{name}` is a number argument: each thread updates its own copy, and the caller's `{name}` never changes"
                    ))
                    .at(self.at(a.range))
                    .help(format!(
                        "a kernel returns nothing: to hand back a result, pass an array and write into it (`out[0]`), with `cuda.atomic.add(out, 0, ...)` when many threads add to it; keep `{name}` for numbers the kernel reads"
                    )),
                );
            }
            self.set_var(name, combined.ty.clone(), self.at(n.range), false)?;
        }
        // C's compound assignment computes in the promoted type and converts back on store,
        // as Numba does, for the operators whose C meaning is Python's.
        let same_meaning = match a.op {
            ast::Operator::Add | ast::Operator::Sub | ast::Operator::Mult => {
                combined.num().is_float() || !value.num().is_float()
            }
            ast::Operator::BitAnd
            | ast::Operator::BitOr
            | ast::Operator::BitXor
            | ast::Operator::LShift
            | ast::Operator::RShift => true,
            ast::Operator::Div => pt.is_float() || value.num().is_float(),
            _ => false,
        };
        let op = match a.op {
            ast::Operator::Add => "+=",
            ast::Operator::Sub => "-=",
            ast::Operator::Mult => "*=",
            ast::Operator::Div => "/=",
            ast::Operator::BitAnd => "&=",
            ast::Operator::BitOr => "|=",
            ast::Operator::BitXor => "^=",
            ast::Operator::LShift => "<<=",
            ast::Operator::RShift => ">>=",
            _ => "",
        };
        if same_meaning && !op.is_empty() {
            let mut line = place.clone();
            line.text = format!("{} {op} ", place.text);
            let base = line.text.len() as u32;
            line.map.extend(value.map.iter().map(|(x, y, s)| (x + base, y + base, *s)));
            line.text.push_str(&value.text);
            self.line_with("", &line, ";", at);
        } else {
            let mut line = place.clone();
            line.text = format!("{} = ", place.text);
            let base = line.text.len() as u32;
            line.map.extend(combined.map.iter().map(|(x, y, s)| (x + base, y + base, *s)));
            line.text.push_str(&combined.text);
            self.line_with("", &line, ";", at);
        }
        Ok(())
    }

    /// `s = cuda.shared.array(shape, dtype)` and friends: the array's type and storage.
    fn array_decl(&mut self, value: &ast::Expr) -> R<Option<ArrayDecl>> {
        let ast::Expr::Call(c) = value else { return Ok(None) };
        let path = dotted(&c.func, self.env.imports).unwrap_or_default();
        let space = match path.as_str() {
            "cuda.shared.array" => Space::Shared,
            "cuda.local.array" => Space::Local,
            "cuda.const.array_like" => {
                let Some(arg) = c.args.first() else {
                    return Err(self.err(c.range, "`cuda.const.array_like` takes the array to copy"));
                };
                let a = self.expr(arg)?;
                let Ty::Array { dtype, ndim, space, dims } = a.ty else {
                    return Err(self.err(arg.range(), "`cuda.const.array_like` takes an array"));
                };
                // A module-level array is frozen into constant memory already: the same array.
                if space != Space::Global {
                    return Ok(Some((space, dtype, dims, Some(a.text))));
                }
                return Ok(Some((Space::Const, dtype, vec![ndim as i64], Some(a.text))));
            }
            "np.empty" | "np.zeros" | "np.array" | "np.ones" => {
                return Err(self.err(c.range, format!("`{path}` makes a host array: it cannot run in a kernel"))
                    .help("a kernel makes arrays with `cuda.local.array(shape, dtype)` (per thread) or `cuda.shared.array(shape, dtype)` (per block)"));
            }
            _ => return Ok(None),
        };
        let mut shape = c.args.first();
        let mut dtype = c.args.get(1);
        for kw in &c.keywords {
            match kw.arg.as_ref().map(|a| a.as_str()) {
                Some("shape") => shape = Some(&kw.value),
                Some("dtype") => dtype = Some(&kw.value),
                _ => return Err(self.err(kw.range, format!("`{path}` takes `shape` and `dtype`"))),
            }
        }
        let (Some(shape), Some(dtype)) = (shape, dtype) else {
            return Err(self.err(c.range, format!("`{path}` takes a shape and a dtype: `{path}(256, float32)`")));
        };
        let Some(dt) = self.dtype_of(dtype) else {
            return Err(self.err(dtype.range(), "the dtype must be a Numba type such as `float32` or `np.int32`"));
        };
        let dims = match shape {
            ast::Expr::Tuple(t) => t.elts.iter().map(|e| self.const_int(e)).collect::<R<Vec<_>>>()?,
            e => vec![self.const_int(e)?],
        };
        if dims.iter().any(|d| *d < 0) || dims.is_empty() || dims.len() > 3 {
            return Err(self.err(shape.range(), "a shape is one to three sizes, none negative"));
        }
        if dims.contains(&0) && (space != Space::Shared || dims.len() != 1) {
            return Err(self.err(
                shape.range(),
                "only `cuda.shared.array(0, dtype)` (the launch's dynamic shared memory) may have size 0",
            ));
        }
        Ok(Some((space, dt, dims, None)))
    }

    fn declare_array(&mut self, name: &str, (space, dtype, dims, alias): ArrayDecl, at: Span) -> R<()> {
        let ndim = if space == Space::Const { dims[0] as usize } else { dims.len() };
        let ty = Ty::Array { dtype, ndim, space, dims: if space == Space::Const { Vec::new() } else { dims.clone() } };
        if let Some(v) = self.vars.get(name)
            && v.ty != ty
        {
            return Err(Diagnostic::error(format!("`{name}` already holds {}", v.ty.numba_name())).at(at));
        }
        let c_name = alias.clone().unwrap_or_else(|| c_ident(name));
        let first = !self.vars.contains_key(name);
        self.vars.entry(name.to_string()).or_insert(Var {
            ty: ty.clone(),
            c_name: c_name.clone(),
            alias: alias.clone(),
            first: at,
            inline: true,
            declared: true,
            warned: false,
            nonneg: false,
        });
        if first {
            self.changed = true;
        }
        if alias.is_some() {
            return Ok(());
        }
        let sizes: String = dims.iter().map(|d| format!("[{d}]")).collect();
        let text = match space {
            Space::Shared if dims == [0] => format!("extern __shared__ {} {c_name}[];", dtype.c_name()),
            Space::Shared => format!("__shared__ {} {c_name}{sizes};", dtype.c_name()),
            _ => format!("{} {c_name}{sizes};", dtype.c_name()),
        };
        self.line(&text, at);
        Ok(())
    }

    fn dtype_of(&self, e: &ast::Expr) -> Option<DType> {
        if let ast::Expr::Constant(c) = e
            && let ast::Constant::Str(s) = &c.value
        {
            return types::from_name(s);
        }
        let path = dotted(e, self.env.imports)?;
        if let Some(Global::Dtype(d)) = (self.env.globals)(&path) {
            return Some(d);
        }
        let known =
            path.starts_with("np.") || path.starts_with("numba.") || path.starts_with("cuda.") || !path.contains('.');
        if !known || (!path.contains('.') && self.vars.contains_key(&path)) {
            return None;
        }
        types::from_name(&path)
    }

    /// An integer known when the kernel is compiled: a literal, a global constant, or
    /// arithmetic on them.
    fn const_int(&self, e: &ast::Expr) -> R<i64> {
        let bad = || {
            self.err(e.range(), "a shared or local array's size must be known when the kernel is compiled")
                .help("use a number or a global constant (`TPB = 16` at the top of the file), as Numba requires")
        };
        match e {
            ast::Expr::Constant(c) => match &c.value {
                ast::Constant::Int(i) => i64::try_from(i).map_err(|_| bad()),
                _ => Err(bad()),
            },
            ast::Expr::Name(n) => match (self.env.globals)(n.id.as_str()) {
                Some(Global::Int(i)) => Ok(i),
                _ => Err(bad()),
            },
            ast::Expr::UnaryOp(u) if u.op == ast::UnaryOp::USub => {
                self.const_int(&u.operand)?.checked_neg().ok_or_else(bad)
            }
            ast::Expr::BinOp(b) => {
                let (l, r) = (self.const_int(&b.left)?, self.const_int(&b.right)?);
                match b.op {
                    ast::Operator::Add => l.checked_add(r),
                    ast::Operator::Sub => l.checked_sub(r),
                    ast::Operator::Mult => l.checked_mul(r),
                    // Python's // rounds down (`div_euclid` does only for a positive divisor).
                    ast::Operator::FloorDiv if r != 0 => {
                        l.checked_div(r).map(|q| if l % r != 0 && (l < 0) != (r < 0) { q - 1 } else { q })
                    }
                    ast::Operator::Pow if (0..63).contains(&r) => l.checked_pow(r as u32),
                    _ => None,
                }
                .ok_or_else(bad)
            }
            _ => Err(bad()),
        }
    }

    /// A condition, as C's truth.
    fn truth(&mut self, e: &ast::Expr) -> R<CExpr> {
        let c = self.expr(e)?;
        match &c.ty {
            Ty::Num(_) => Ok(c),
            other => Err(self.err(e.range(), format!("{} has no truth value in a kernel", other.numba_name()))),
        }
    }

    fn expr(&mut self, e: &ast::Expr) -> R<CExpr> {
        let at = self.at(e.range());
        match e {
            ast::Expr::Constant(c) => self.constant(&c.value, at, e),
            ast::Expr::Name(n) => self.name(n.id.as_str(), at),
            ast::Expr::Attribute(a) => self.attribute(a, at),
            ast::Expr::Subscript(s) => self.subscript(s),
            ast::Expr::BinOp(b) => {
                let l = self.expr(&b.left)?;
                let r = self.expr(&b.right)?;
                if b.op == ast::Operator::Pow && l.num().is_float() && !r.num().is_float() {
                    let constant = self.const_int(&b.right).ok();
                    return Ok(self.float_to_int_power(l, r, constant, at));
                }
                self.binary(b.op, l, r, at)
            }
            ast::Expr::UnaryOp(u) => {
                let operand = self.expr(&u.operand)?;
                let Ty::Num(d) = operand.ty else {
                    return Err(self.err(u.operand.range(), format!("{} is not a number", operand.ty.numba_name())));
                };
                match u.op {
                    ast::UnaryOp::Not => {
                        Ok(join(vec![("!".into(), Some(operand.at_prec(14)))], Ty::BOOL, DType::Bool, 14, at))
                    }
                    ast::UnaryOp::USub | ast::UnaryOp::UAdd | ast::UnaryOp::Invert => {
                        // Numba: unary ops on small integers widen to int64, like binary ones.
                        let ty = if d.is_float() { d } else { types::int_arith(d, d) };
                        if u.op == ast::UnaryOp::Invert && d.is_float() {
                            return Err(self.err(e.range(), "`~` takes an integer"));
                        }
                        let sym = match u.op {
                            ast::UnaryOp::USub => "-",
                            ast::UnaryOp::UAdd => "+",
                            _ => "~",
                        };
                        let o = if c_promote(operand.cty) != c_promote(ty) || operand.cty != ty && !d.is_float() {
                            operand.cast(ty)
                        } else {
                            operand
                        };
                        let small = o.small_literal;
                        let mut r = join(vec![(sym.into(), Some(o.at_prec(14)))], Ty::Num(ty), c_promote(ty), 14, at);
                        r.maybe_negative = !(u.op == ast::UnaryOp::UAdd && small);
                        Ok(r)
                    }
                }
            }
            ast::Expr::BoolOp(b) => {
                let op = if b.op == ast::BoolOp::And { " && " } else { " || " };
                let prec = if b.op == ast::BoolOp::And { 5 } else { 4 };
                let mut parts = Vec::new();
                for (i, v) in b.values.iter().enumerate() {
                    let c = self.truth(v)?;
                    parts.push((if i == 0 { String::new() } else { op.to_string() }, Some(c.at_prec(prec + 1))));
                }
                Ok(join(parts, Ty::BOOL, DType::Bool, prec, at))
            }
            ast::Expr::Compare(c) => {
                let mut left = self.expr(&c.left)?;
                let mut pieces = Vec::new();
                for (op, right) in c.ops.iter().zip(&c.comparators) {
                    let r = self.expr(right)?;
                    pieces.push(self.compare(*op, left, r.clone(), at)?);
                    left = r;
                }
                if pieces.len() == 1 {
                    return Ok(pieces.remove(0));
                }
                let parts = pieces
                    .into_iter()
                    .enumerate()
                    .map(|(i, p)| (if i == 0 { String::new() } else { " && ".into() }, Some(p.at_prec(6))))
                    .collect();
                Ok(join(parts, Ty::BOOL, DType::Bool, 5, at))
            }
            ast::Expr::IfExp(i) => {
                let test = self.truth(&i.test)?;
                let a = self.expr(&i.body)?;
                let b = self.expr(&i.orelse)?;
                let (Ty::Num(x), Ty::Num(y)) = (&a.ty, &b.ty) else {
                    return Err(self.err(e.range(), "both sides of `a if c else b` must be numbers"));
                };
                let u = unify(*x, *y);
                let a = if a.cty != u { a.convert(u) } else { a };
                let b = if b.cty != u { b.convert(u) } else { b };
                Ok(join(
                    vec![
                        (String::new(), Some(test.at_prec(4))),
                        (" ? ".into(), Some(a.at_prec(4))),
                        (" : ".into(), Some(b.at_prec(3))),
                    ],
                    Ty::Num(u),
                    u,
                    3,
                    at,
                ))
            }
            ast::Expr::Call(c) => self.call(c, at),
            ast::Expr::Tuple(_) => Err(self
                .err(e.range(), "a tuple here is outside what gridlab lowers")
                .help("tuples work in `x, y = ...`, in shapes and in `a[i, j]`")),
            ast::Expr::List(_) | ast::Expr::ListComp(_) => Err(self
                .err(e.range(), "lists are outside Numba's CUDA kernel subset")
                .help("use `cuda.local.array(n, dtype)` for per-thread storage")),
            ast::Expr::Dict(_) | ast::Expr::DictComp(_) | ast::Expr::Set(_) | ast::Expr::SetComp(_) => {
                Err(self.err(e.range(), "dicts and sets are outside Numba's CUDA kernel subset"))
            }
            ast::Expr::Lambda(_) => Err(self
                .err(e.range(), "lambdas are outside what gridlab lowers in a kernel")
                .help("write a `@cuda.jit(device=True)` function")),
            ast::Expr::GeneratorExp(_) | ast::Expr::Yield(_) | ast::Expr::YieldFrom(_) => {
                Err(self.err(e.range(), "generators are outside Numba's CUDA kernel subset"))
            }
            ast::Expr::JoinedStr(_) => Err(self
                .err(e.range(), "f-strings are outside Numba's CUDA kernel subset")
                .help("pass the values to `print`: `print(\"i =\", i)`")),
            _ => Err(self.err(e.range(), "this expression is outside Numba's CUDA kernel subset")),
        }
    }

    fn constant(&mut self, c: &ast::Constant, at: Span, e: &ast::Expr) -> R<CExpr> {
        Ok(match c {
            ast::Constant::Bool(b) => CExpr::bool_literal(*b, at),
            ast::Constant::Int(i) => {
                let Ok(v) = i64::try_from(i) else {
                    return Err(self.err(e.range(), "this integer does not fit in 64 bits"));
                };
                CExpr::int_literal(v, at)
            }
            ast::Constant::Float(f) => CExpr::atom(float_literal(*f, false), Ty::F64, DType::F64, at),
            ast::Constant::Str(_) => {
                return Err(self.err(e.range(), "strings appear in a kernel only inside `print(...)`"));
            }
            ast::Constant::None => CExpr::valueless(Ty::None),
            ast::Constant::Complex { .. } => {
                return Err(complex_unsupported(self.err(e.range(), "complex numbers are not in gridlab's kernels")));
            }
            _ => return Err(self.err(e.range(), "this constant is outside Numba's CUDA kernel subset")),
        })
    }

    fn name(&mut self, name: &str, at: Span) -> R<CExpr> {
        if let Some(v) = self.vars.get(name) {
            let cty = v.ty.num().unwrap_or(DType::I64);
            let mut e = CExpr::atom(v.c_name.clone(), v.ty.clone(), cty, at);
            e.maybe_negative = !v.nonneg;
            return Ok(e);
        }
        match (self.env.globals)(name) {
            Some(Global::Int(i)) => return Ok(CExpr::int_literal(i, at)),
            Some(Global::Float(f)) => return Ok(CExpr::atom(float_literal(f, false), Ty::F64, DType::F64, at)),
            Some(Global::Bool(b)) => return Ok(CExpr::bool_literal(b, at)),
            Some(Global::Array { dtype, shape, values }) => return self.frozen(name, dtype, &shape, &values, at),
            Some(Global::Dtype(_) | Global::HostFunction) | None => {}
        }
        if self.emit || !self.assigned_later(name) {
            let mut d = Diagnostic::error(format!("NameError: name '{name}' is not defined")).at(at);
            if self.env.imports.resolve(name).is_some() {
                d = d.help(format!("`{name}` is a module; use one of its functions or attributes"));
            } else {
                d = d
                    .help("give it a value before this line, or define it as a global constant at the top of the file");
            }
            return Err(d);
        }
        // Used before the inference has reached its assignment: a placeholder for now.
        Ok(CExpr::atom(name.to_string(), Ty::I64, DType::I64, at))
    }

    /// A module-level array, frozen into the kernel as a `__constant__` array.
    fn frozen(&mut self, name: &str, dtype: DType, shape: &[i64], values: &[f64], at: Span) -> R<CExpr> {
        let c_name = c_ident(name);
        if !self.module.constants.iter().any(|(n, _)| n == &c_name) {
            let bytes = values.len() * dtype.size();
            if shape.is_empty() || shape.len() > 3 || self.module.constant_bytes + bytes > CONSTANT_BYTES {
                return Err(Diagnostic::error(format!(
                    "`{name}` is a global array of {bytes} bytes: Numba freezes it into the kernel, and constant memory holds {CONSTANT_BYTES}"
                ))
                .at(at)
                .help("pass it to the kernel as an argument instead"));
            }
            let items: Vec<String> = values
                .iter()
                .map(|v| match dtype {
                    DType::F32 => float_literal(*v, true),
                    DType::F64 => float_literal(*v, false),
                    DType::Bool => (if *v != 0.0 { "true" } else { "false" }).to_string(),
                    _ => format!("{}", *v as i64),
                })
                .collect();
            let sizes: String = shape.iter().map(|d| format!("[{d}]")).collect();
            let decl = format!(
                "// `{name}`, a global array, frozen into the kernel as Numba freezes globals.\n__constant__ {} {c_name}{sizes} = {{{}}};\n",
                dtype.c_name(),
                items.join(", ")
            );
            self.module.constants.push((c_name.clone(), decl));
            self.module.constant_bytes += bytes;
        }
        let ty = Ty::Array { dtype, ndim: shape.len(), space: Space::Frozen, dims: shape.to_vec() };
        Ok(CExpr::atom(c_name, ty, dtype, at))
    }

    fn assigned_later(&self, name: &str) -> bool {
        fn in_stmts(body: &[ast::Stmt], name: &str) -> bool {
            body.iter().any(|s| names_assigned(s).iter().any(|n| n == name))
        }
        in_stmts(&self.f.body, name)
    }

    fn attribute(&mut self, a: &ast::ExprAttribute, at: Span) -> R<CExpr> {
        let attr = a.attr.as_str();
        // `a.size`, `a.shape`, `a.ndim` on arrays.
        if let ast::Expr::Name(n) = &*a.value
            && let Some(v) = self.vars.get(n.id.as_str()).cloned()
        {
            let Ty::Array { ndim, .. } = v.ty else {
                return Err(self.err(a.range, format!("{} has no attribute `{attr}`", v.ty.numba_name())));
            };
            let arr = self.name(n.id.as_str(), self.at(n.range))?;
            return match attr {
                "size" => {
                    let mut parts = Vec::new();
                    for d in 0..ndim {
                        parts
                            .push((if d == 0 { String::new() } else { " * ".into() }, Some(self.extent(&arr, d, at)?)));
                    }
                    let mut e = join(parts, Ty::I64, DType::I64, if ndim == 1 { 100 } else { 13 }, at);
                    e.maybe_negative = false;
                    Ok(e)
                }
                "ndim" => Ok(CExpr::atom(ndim.to_string(), Ty::I64, DType::I32, at)),
                "shape" => Ok(CExpr::valueless(Ty::Tuple(vec![Ty::I64; ndim]))),
                _ => Err(self.err(
                    a.range,
                    format!("gridlab's kernels read `size`, `shape` and `ndim` of an array, not `{attr}`"),
                )),
            };
        }
        let Some(path) = dotted(&ast::Expr::Attribute(a.clone()), self.env.imports) else {
            return Err(self.err(a.range, "this attribute is outside what gridlab lowers"));
        };
        let dim = |base: &str, axis: &str| -> Option<String> {
            let c = match base {
                "cuda.threadIdx" => "threadIdx",
                "cuda.blockIdx" => "blockIdx",
                "cuda.blockDim" => "blockDim",
                "cuda.gridDim" => "gridDim",
                _ => return None,
            };
            matches!(axis, "x" | "y" | "z").then(|| format!("{c}.{axis}"))
        };
        if let Some((base, axis)) = path.rsplit_once('.')
            && let Some(c) = dim(base, axis)
        {
            let mut e = CExpr::atom(c, Ty::Num(DType::I32), DType::U32, at);
            e.maybe_negative = false;
            return Ok(e);
        }
        let float = |v: &str| CExpr::atom(v, Ty::F64, DType::F64, at);
        Ok(match path.as_str() {
            "cuda.warpsize" => {
                let mut e = CExpr::atom("warpSize", Ty::Num(DType::I32), DType::I32, at);
                e.maybe_negative = false;
                e
            }
            "cuda.laneid" => {
                self.module.helpers.insert(Helper::LaneId);
                let mut e = CExpr::atom("py_laneid()", Ty::Num(DType::I32), DType::I32, at);
                e.maybe_negative = false;
                e
            }
            "math.pi" | "np.pi" => float("3.141592653589793"),
            "math.e" | "np.e" => float("2.718281828459045"),
            "math.tau" => float("6.283185307179586"),
            "math.inf" | "np.inf" => float("INFINITY"),
            "math.nan" | "np.nan" => float("NAN"),
            "cuda.threadIdx" | "cuda.blockIdx" | "cuda.blockDim" | "cuda.gridDim" => {
                return Err(self.err(a.range, format!("`{path}` has three parts: use `{path}.x` (or `.y`, `.z`)")));
            }
            _ => {
                return Err(self.err(a.range, format!("gridlab does not know `{path}` in a kernel"))
                    .help("kernels use `cuda.*` (threadIdx, grid, shared.array, syncthreads, atomic, shfl_sync...), `math.*` and numpy's scalar functions; docs/python.md lists them"));
            }
        })
    }

    /// Extent `d` of array `arr`.
    fn extent(&mut self, arr: &CExpr, d: usize, at: Span) -> R<CExpr> {
        let Ty::Array { ndim, space, dims, .. } = &arr.ty else {
            return Err(Diagnostic::error("not an array").at(at));
        };
        if d >= *ndim {
            return Err(Diagnostic::error(format!(
                "the array has {ndim} dimension{}, so no shape[{d}]",
                if *ndim == 1 { "" } else { "s" }
            ))
            .at(at));
        }
        let mut e = match space {
            Space::Global | Space::Const => CExpr::atom(extent_name(&arr.text, *ndim, d), Ty::I64, DType::I64, at),
            Space::Shared | Space::Local | Space::Frozen => {
                if dims == &[0] {
                    return Err(Diagnostic::error("the size of dynamic shared memory is not known in the kernel")
                        .at(at)
                        .help("pass the size as an argument"));
                }
                CExpr::atom(dims[d].to_string(), Ty::I64, DType::I32, at)
            }
        };
        e.maybe_negative = false;
        e.small_literal = matches!(space, Space::Shared | Space::Local | Space::Frozen);
        Ok(e)
    }

    fn subscript(&mut self, s: &ast::ExprSubscript) -> R<CExpr> {
        let at = self.at(s.range);
        // `a.shape[k]`
        if let ast::Expr::Attribute(a) = &*s.value
            && a.attr.as_str() == "shape"
        {
            let arr = self.expr(&a.value)?;
            let k = self.const_int(&s.slice).map_err(|_| self.err(s.slice.range(), "`shape[k]` takes a number"))?;
            let Ty::Array { ndim, .. } = arr.ty else {
                return Err(self.err(a.value.range(), "`shape` belongs to arrays"));
            };
            let k = if k < 0 { k + ndim as i64 } else { k };
            return self.extent(&arr, k.max(0) as usize, at);
        }
        // `cuda.grid(2)[0]`
        let target = self.expr(&s.value)?;
        if let Ty::Tuple(items) = &target.ty {
            let k =
                self.const_int(&s.slice).map_err(|_| self.err(s.slice.range(), "a tuple's index must be a number"))?;
            let k = if k < 0 { k + items.len() as i64 } else { k };
            // A device function's tuple: one field of the struct it returns.
            if !target.text.is_empty() {
                let Some(ty) = items.get(k.max(0) as usize).cloned() else {
                    return Err(self.err(s.slice.range(), "this index is past the tuple's end"));
                };
                let d = ty.num().unwrap_or(DType::F64);
                return Ok(join(vec![(String::new(), Some(target.clone())), (format!(".f{k}"), None)], ty, d, 100, at));
            }
            let parts = self.tuple_parts(&s.value, items.len())?;
            return parts
                .into_iter()
                .nth(k.max(0) as usize)
                .ok_or_else(|| self.err(s.slice.range(), "this index is past the tuple's end"));
        }
        let Ty::Array { dtype, ndim, space, .. } = target.ty.clone() else {
            return Err(self.err(s.value.range(), format!("{} cannot be indexed", target.ty.numba_name())));
        };
        let indices: Vec<&ast::Expr> = match &*s.slice {
            ast::Expr::Tuple(t) => t.elts.iter().collect(),
            other => vec![other],
        };
        if indices.iter().any(|i| matches!(i, ast::Expr::Slice(_))) {
            return Err(self
                .err(s.slice.range(), "array slices in a kernel are outside what gridlab lowers")
                .help("index one element at a time: `a[i]`, `a[i, j]`"));
        }
        if indices.len() != ndim {
            return Err(self
                .err(
                    s.slice.range(),
                    format!(
                        "the array has {ndim} dimension{}, this index gives {}",
                        if ndim == 1 { "" } else { "s" },
                        indices.len()
                    ),
                )
                .help(if ndim == 2 { "index a 2-D array with `a[i, j]`" } else { "give one index per dimension" }));
        }
        let mut idx = Vec::new();
        for (d, i) in indices.iter().enumerate() {
            let c = self.expr(i)?;
            match c.ty {
                Ty::Num(t) if !t.is_float() => {}
                _ => {
                    return Err(self
                        .err(i.range(), format!("an index must be an integer, this is {}", c.ty.numba_name()))
                        .help("convert it: `int(x)`"));
                }
            }
            idx.push(self.wrap_index(c, &target, d, at)?);
        }
        let text_of = |e: &CExpr| e.clone();
        let el = Ty::Num(dtype);
        match space {
            Space::Global | Space::Const => {
                // Row-major, as numpy lays arrays out: a[i, j] is a[i * cols + j].
                let mut flat = text_of(&idx[0]);
                for (d, i) in idx.iter().enumerate().skip(1) {
                    let ext = self.extent(&target, d, at)?;
                    let prod = join(
                        vec![(String::new(), Some(flat.at_prec(13))), (" * ".into(), Some(ext))],
                        Ty::I64,
                        DType::I64,
                        13,
                        at,
                    );
                    flat = join(
                        vec![(String::new(), Some(prod)), (" + ".into(), Some(i.clone().at_prec(13)))],
                        Ty::I64,
                        DType::I64,
                        12,
                        at,
                    );
                }
                Ok(join(
                    vec![(String::new(), Some(target.clone())), ("[".into(), Some(flat)), ("]".into(), None)],
                    el,
                    dtype,
                    100,
                    at,
                ))
            }
            Space::Shared | Space::Local | Space::Frozen => {
                let mut parts = vec![(String::new(), Some(target.clone()))];
                for i in idx {
                    parts.push(("[".into(), Some(i)));
                    parts.push(("]".into(), None));
                }
                Ok(join(parts, el, dtype, 100, at))
            }
        }
    }

    /// A negative index counts from the end, as in Numba (which wraps negative indices).
    fn wrap_index(&mut self, c: CExpr, arr: &CExpr, d: usize, at: Span) -> R<CExpr> {
        let Ty::Array { space, dims, .. } = &arr.ty else { return Ok(c) };
        if !c.maybe_negative || (matches!(space, Space::Shared) && dims == &[0]) {
            return Ok(c);
        }
        let ext = self.extent(arr, d, at)?;
        if let Some(lit) = c.text.strip_prefix('-')
            && lit.chars().all(|ch| ch.is_ascii_digit())
        {
            return Ok(join(
                vec![(String::new(), Some(ext)), (format!(" - {lit}"), None)],
                Ty::I64,
                DType::I64,
                12,
                at,
            ));
        }
        // Only an index that can be negative pays for the test.
        let c2 = c.clone();
        Ok(join(
            vec![
                (String::new(), Some(c.at_prec(7))),
                (" < 0 ? ".into(), Some(c2.clone().at_prec(12))),
                (" + ".into(), Some(ext)),
                (" : ".into(), Some(c2.at_prec(3))),
            ],
            Ty::I64,
            DType::I64,
            3,
            at,
        ))
    }

    fn compare(&mut self, op: ast::CmpOp, l: CExpr, r: CExpr, at: Span) -> R<CExpr> {
        let sym = match op {
            ast::CmpOp::Lt => "<",
            ast::CmpOp::LtE => "<=",
            ast::CmpOp::Gt => ">",
            ast::CmpOp::GtE => ">=",
            ast::CmpOp::Eq | ast::CmpOp::Is => "==",
            ast::CmpOp::NotEq | ast::CmpOp::IsNot => "!=",
            ast::CmpOp::In | ast::CmpOp::NotIn => {
                return Err(Diagnostic::error("`in` is outside Numba's CUDA kernel subset").at(at));
            }
        };
        let (Ty::Num(a), Ty::Num(b)) = (&l.ty, &r.ty) else {
            return Err(Diagnostic::error("only numbers can be compared in a kernel").at(at));
        };
        let want = if a.is_float() || b.is_float() { float_arith(*a, *b) } else { types::int_arith(*a, *b) };
        let (l, r) = self.operands(l, r, want);
        let prec = if matches!(sym, "==" | "!=") { 8 } else { 9 };
        Ok(join(
            vec![(String::new(), Some(l.at_prec(prec + 1))), (format!(" {sym} "), Some(r.at_prec(prec + 1)))],
            Ty::BOOL,
            DType::Bool,
            prec,
            at,
        ))
    }

    /// Cast operands so C computes in `want`, as Numba does; a non-negative literal, or a
    /// value that is never negative, needs no cast where only signedness differs.
    fn operands(&self, l: CExpr, r: CExpr, want: DType) -> (CExpr, CExpr) {
        let c = c_usual(l.cty, r.cty);
        if c == want {
            return (l, r);
        }
        let harmless = |x: &CExpr, y: &CExpr| {
            !want.is_float()
                && !c.is_float()
                && (y.small_literal || !y.maybe_negative)
                && !x.maybe_negative
                && x.cty.size() <= want.size()
        };
        if harmless(&l, &r) && harmless(&r, &l) {
            return (l, r);
        }
        if c_usual(want, r.cty) == want {
            (l.cast(want), r)
        } else if c_usual(l.cty, want) == want {
            (l, r.cast(want))
        } else {
            (l.cast(want), r.cast(want))
        }
    }

    /// `base ** exp` for a float `base` and an integer `exp`, as Numba computes it: a constant
    /// power of a plain name is the multiplications of repeated squaring, written out (`x * x`),
    /// in the order Numba multiplies (so the rounding is the same); anything else calls the
    /// same loop as a helper. A negative power is 1 over the positive one. `constant` is the
    /// power's value where the kernel's text fixes it (`2`, `-1`, a global `P = 3`).
    fn float_to_int_power(&mut self, base: CExpr, exp: CExpr, constant: Option<i64>, at: Span) -> CExpr {
        let want = base.num();
        let f32 = want == DType::F32;
        let constant = constant.filter(|e| e.unsigned_abs() <= 8);
        let plain = !base.text.is_empty() && base.text.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        let one = CExpr::atom(float_literal(1.0, f32), Ty::Num(want), want, at);
        // A negative power is 1 over the positive one, as Numba inverts it.
        let over = |negative: bool, power: CExpr| {
            if !negative {
                return power;
            }
            join(
                vec![(String::new(), Some(one.clone())), (" / ".into(), Some(power.at_prec(14)))],
                Ty::Num(want),
                want,
                13,
                at,
            )
        };
        match constant {
            Some(0) => one.clone(),
            Some(e) if plain => {
                let text = squaring(&base.text, e.unsigned_abs());
                let mut power = CExpr::atom(text, Ty::Num(want), want, at);
                if e.unsigned_abs() > 1 {
                    power.prec = 13;
                }
                over(e < 0, power)
            }
            // Anything else to a constant power: the same multiplications in a helper, so that
            // the base is computed once (`(x - mu) ** 2`).
            Some(e) if e.unsigned_abs() >= 2 => {
                let h = Helper::PowConst { f32, exp: e.unsigned_abs() as u8 };
                self.module.helpers.insert(h);
                let power = join(
                    vec![(format!("{}(", helper_name(h)), Some(base.convert(want))), (")".into(), None)],
                    Ty::Num(want),
                    want,
                    100,
                    at,
                );
                over(e < 0, power)
            }
            _ => {
                let h = if f32 { Helper::PowiF32 } else { Helper::PowiF64 };
                self.module.helpers.insert(h);
                join(
                    vec![
                        (format!("{}(", helper_name(h)), Some(base.convert(want))),
                        (", ".into(), Some(exp)),
                        (")".into(), None),
                    ],
                    Ty::Num(want),
                    want,
                    100,
                    at,
                )
            }
        }
    }

    fn binary(&mut self, op: ast::Operator, l: CExpr, r: CExpr, at: Span) -> R<CExpr> {
        let (Ty::Num(a), Ty::Num(b)) = (&l.ty, &r.ty) else {
            let what = if matches!(l.ty, Ty::Num(_)) { &r.ty } else { &l.ty };
            return Err(Diagnostic::error(format!(
                "arithmetic on {} is outside Numba's CUDA kernel subset",
                what.numba_name()
            ))
            .at(at)
            .help("index the array: `a[i] + b[i]`"));
        };
        let (a, b) = (*a, *b);
        let floats = a.is_float() || b.is_float();
        let nonneg = !l.maybe_negative && !r.maybe_negative;
        let simple = |this: &Self, sym: &str, prec: u8, want: DType, l: CExpr, r: CExpr| -> CExpr {
            let (l, r) = this.operands(l, r, want);
            let mut e = join(
                vec![(String::new(), Some(l.at_prec(prec))), (format!(" {sym} "), Some(r.at_prec(prec + 1)))],
                Ty::Num(want),
                want,
                prec,
                at,
            );
            e.maybe_negative = !(nonneg && matches!(sym, "+" | "*" | "/" | "%" | "&" | ">>" | "<<"));
            e
        };
        let call = |this: &mut Self, h: Helper, want: DType, l: CExpr, r: CExpr| -> CExpr {
            this.module.helpers.insert(h);
            join(
                vec![(format!("{}(", helper_name(h)), Some(l)), (", ".into(), Some(r)), (")".into(), None)],
                Ty::Num(want),
                want,
                100,
                at,
            )
        };
        Ok(match op {
            ast::Operator::Add => simple(self, "+", 12, arith(a, b), l, r),
            ast::Operator::Sub => simple(self, "-", 12, arith(a, b), l, r),
            ast::Operator::Mult => simple(self, "*", 13, arith(a, b), l, r),
            ast::Operator::Div => simple(self, "/", 13, true_div(a, b), l, r),
            ast::Operator::FloorDiv if floats => {
                let want = float_arith(a, b);
                let q = simple(self, "/", 13, want, l, r);
                let f = if want == DType::F32 { "floorf(" } else { "floor(" };
                join(vec![(f.into(), Some(q)), (")".into(), None)], Ty::Num(want), want, 100, at)
            }
            ast::Operator::Mod if floats => {
                let want = float_arith(a, b);
                let e = call(self, Helper::Fmod, DType::F64, l, r);
                if want == DType::F32 { e.convert(DType::F32) } else { e }
            }
            ast::Operator::FloorDiv | ast::Operator::Mod => {
                let modulo = op == ast::Operator::Mod;
                let want = types::int_arith(a, b);
                let (unsigned, nonzero) = (want == DType::U64, nonzero(&r));
                if (unsigned || nonneg) && nonzero {
                    simple(self, if modulo { "%" } else { "/" }, 13, want, l, r)
                } else if unsigned || nonneg {
                    let mut e = call(self, Helper::NonNeg { modulo, unsigned }, want, l, r);
                    e.maybe_negative = false;
                    e
                } else {
                    let h = match (modulo, nonzero) {
                        (false, false) => Helper::FloorDiv,
                        (false, true) => Helper::FloorDivConst,
                        (true, false) => Helper::Mod,
                        (true, true) => Helper::ModConst,
                    };
                    call(self, h, want, l, r)
                }
            }
            // A float to an integer power keeps the float's type and is repeated squaring in
            // Numba, not `pow`: `x ** 2` of a float32 is `x * x` in float32.
            ast::Operator::Pow if a.is_float() && !b.is_float() => self.float_to_int_power(l, r, None, at),
            ast::Operator::Pow if floats => {
                let want = float_arith(a, b);
                let (l, r) = (l.convert(want), r.convert(want));
                let f = if want == DType::F32 { "powf(" } else { "pow(" };
                join(
                    vec![(f.into(), Some(l)), (", ".into(), Some(r)), (")".into(), None)],
                    Ty::Num(want),
                    want,
                    100,
                    at,
                )
            }
            ast::Operator::Pow => {
                let want = types::int_arith(a, b);
                call(self, Helper::IPow, want, l, r)
            }
            ast::Operator::LShift
            | ast::Operator::RShift
            | ast::Operator::BitAnd
            | ast::Operator::BitOr
            | ast::Operator::BitXor => {
                if floats {
                    return Err(Diagnostic::error("bitwise operators take integers").at(at));
                }
                let (sym, prec) = match op {
                    ast::Operator::LShift => ("<<", 11),
                    ast::Operator::RShift => (">>", 11),
                    ast::Operator::BitAnd => ("&", 7),
                    ast::Operator::BitOr => ("|", 5),
                    _ => ("^", 6),
                };
                let want = if a == DType::Bool && b == DType::Bool { DType::Bool } else { types::int_arith(a, b) };
                if matches!(sym, "<<" | ">>") {
                    let l = if c_promote(l.cty) != want { l.cast(want) } else { l };
                    let mut e = join(
                        vec![(String::new(), Some(l.at_prec(prec))), (format!(" {sym} "), Some(r.at_prec(prec + 1)))],
                        Ty::Num(want),
                        want,
                        prec,
                        at,
                    );
                    e.maybe_negative = !nonneg;
                    e
                } else {
                    simple(self, sym, prec, want, l, r)
                }
            }
            ast::Operator::MatMult => {
                return Err(Diagnostic::error("`@` (matrix multiply) is outside Numba's CUDA kernel subset")
                    .at(at)
                    .help("write the loop: each thread computes one element of the product"));
            }
        })
    }

    fn call(&mut self, c: &ast::ExprCall, at: Span) -> R<CExpr> {
        let Some(path) = dotted(&c.func, self.env.imports) else {
            return Err(self.err(c.func.range(), "gridlab calls functions by name in a kernel"));
        };
        let args = |this: &mut Self| -> R<Vec<CExpr>> { c.args.iter().map(|a| this.expr(a)).collect() };
        let nargs = |n: std::ops::RangeInclusive<usize>| -> R<()> {
            if n.contains(&c.args.len()) {
                Ok(())
            } else {
                let (lo, hi) = (n.start(), n.end());
                let want = if lo == hi { format!("{lo}") } else { format!("{lo} to {hi}") };
                Err(Diagnostic::error(format!(
                    "`{path}` takes {want} argument{}, not {}",
                    if *hi == 1 { "" } else { "s" },
                    c.args.len()
                ))
                .at(at))
            }
        };
        let stmt = |text: String| {
            let len = text.len() as u32;
            CExpr {
                text,
                ty: Ty::None,
                cty: DType::I32,
                prec: 100,
                map: vec![(0, len, at)],
                small_literal: false,
                maybe_negative: false,
            }
        };
        match path.as_str() {
            "cuda.grid" | "cuda.gridsize" => {
                nargs(1..=1)?;
                let n = self
                    .const_int(&c.args[0])
                    .map_err(|_| self.err(c.args[0].range(), format!("`{path}` takes 1, 2 or 3")))?;
                return match n {
                    1 => Ok(self.grid_axis(&path, "x", at)),
                    2 | 3 => Ok(CExpr::valueless(Ty::Tuple(vec![Ty::I64; n as usize]))),
                    _ => {
                        Err(self.err(c.args[0].range(), format!("`{path}` takes 1, 2 or 3 (the number of dimensions)")))
                    }
                };
            }
            "cuda.syncthreads" => {
                nargs(0..=0)?;
                return Ok(stmt("__syncthreads()".into()));
            }
            "cuda.syncwarp" => {
                nargs(0..=1)?;
                let mask = if c.args.is_empty() { "0xffffffff".to_string() } else { self.expr(&c.args[0])?.text };
                return Ok(stmt(format!("__syncwarp({mask})")));
            }
            "cuda.threadfence" => return Ok(stmt("__threadfence()".into())),
            "cuda.threadfence_block" => return Ok(stmt("__threadfence_block()".into())),
            "cuda.threadfence_system" => return Ok(stmt("__threadfence_system()".into())),
            "cuda.activemask" => {
                if !c.args.is_empty() {
                    return Err(self.err(c.range, "`cuda.activemask()` takes no arguments"));
                }
                return Ok(CExpr::atom("__activemask()", Ty::Num(DType::U32), DType::U32, at));
            }
            "print" => return self.print(c, at),
            "complex" | "np.complex64" | "np.complex128" | "numba.complex64" | "numba.complex128" | "complex64"
            | "complex128" => {
                return Err(complex_unsupported(
                    self.err(c.func.range(), "complex numbers are not in gridlab's kernels"),
                ));
            }
            // `len(a)` is the first extent of an array, as in Python.
            "len" => {
                nargs(1..=1)?;
                let arr = self.expr(&c.args[0])?;
                if !matches!(arr.ty, Ty::Array { .. }) {
                    return Err(
                        self.err(c.args[0].range(), format!("`len` takes an array, this is {}", arr.ty.numba_name()))
                    );
                }
                return self.extent(&arr, 0, at);
            }
            // `cuda.selp(p, a, b)`: CUDA's select, `p ? a : b`, in the type both values unify to.
            "cuda.selp" => {
                nargs(3..=3)?;
                let a = args(self)?;
                let (p, x, y) = (a[0].clone(), a[1].clone(), a[2].clone());
                let (Ty::Num(tx), Ty::Num(ty)) = (&x.ty, &y.ty) else {
                    return Err(self.err(c.range, "`cuda.selp` selects between two numbers"));
                };
                let t = unify(*tx, *ty);
                let parts = vec![
                    ("(".to_string(), Some(p.at_prec(4))),
                    (" ? ".into(), Some(x.convert(t).at_prec(4))),
                    (" : ".into(), Some(y.convert(t).at_prec(4))),
                    (")".into(), None),
                ];
                return Ok(join(parts, Ty::Num(t), t, 100, at));
            }
            _ => {}
        }
        if path.starts_with("cuda.cg.") {
            return Err(self
                .err(c.func.range(), format!("`{path}`: grid-wide synchronisation (a cooperative launch) is not in gridlab"))
                .help("end the kernel where the grid would sync, and launch a second kernel for the rest: a launch finishes before the next one starts"));
        }
        if let Some(which) = path.strip_prefix("cuda.random.") {
            return self.random(which, c, at);
        }
        if let Some(op) = path.strip_prefix("cuda.atomic.") {
            return self.atomic(op, c, at);
        }
        if let Some(shfl) = path.strip_prefix("cuda.") {
            let (cname, n) = match shfl {
                "shfl_sync" => ("__shfl_sync", 3),
                "shfl_up_sync" => ("__shfl_up_sync", 3),
                "shfl_down_sync" => ("__shfl_down_sync", 3),
                "shfl_xor_sync" => ("__shfl_xor_sync", 3),
                "all_sync" => ("__all_sync", 2),
                "any_sync" => ("__any_sync", 2),
                "ballot_sync" => ("__ballot_sync", 2),
                "popc" => ("__popc", 1),
                "clz" => ("__clz", 1),
                "ffs" => ("__ffs", 1),
                "brev" => ("__brev", 1),
                // A barrier that also counts (or ands, ors) a predicate over the block.
                "syncthreads_count" => ("__syncthreads_count", 1),
                "syncthreads_and" => ("__syncthreads_and", 1),
                "syncthreads_or" => ("__syncthreads_or", 1),
                _ => ("", 0),
            };
            if !cname.is_empty() {
                nargs(n..=n)?;
                let mut a = args(self)?;
                let ty = match cname {
                    "__all_sync" | "__any_sync" => Ty::Num(DType::I32),
                    "__ballot_sync" => Ty::Num(DType::U32),
                    "__popc" | "__clz" | "__ffs" => Ty::Num(DType::I32),
                    "__syncthreads_count" | "__syncthreads_and" | "__syncthreads_or" => Ty::Num(DType::I32),
                    "__brev" => Ty::Num(DType::U32),
                    _ => a[1].ty.clone(),
                };
                if n == 3 {
                    a[0] = a[0].clone().cast(DType::U32);
                    a[2] = a[2].clone().cast(DType::I32);
                } else if n == 2 {
                    a[0] = a[0].clone().cast(DType::U32);
                }
                let cty = ty.num().unwrap_or(DType::I32);
                let mut parts = Vec::new();
                for (i, x) in a.into_iter().enumerate() {
                    parts.push((if i == 0 { format!("{cname}(") } else { ", ".into() }, Some(x)));
                }
                parts.push((")".into(), None));
                return Ok(join(parts, ty, cty, 100, at));
            }
        }
        // dtype constructors: float32(x), np.int32(x), int(x), float(x), bool(x).
        let ctor = match path.as_str() {
            "int" => Some(DType::I64),
            "float" => Some(DType::F64),
            "bool" => Some(DType::Bool),
            p if (p.starts_with("np.") || p.starts_with("numba.") || !p.contains('.'))
                && !self.vars.contains_key(p)
                && (self.env.functions)(p).is_none() =>
            {
                types::from_name(p)
            }
            _ => None,
        };
        if let Some(d) = ctor {
            nargs(1..=1)?;
            let x = self.expr(&c.args[0])?;
            if !matches!(x.ty, Ty::Num(_)) {
                return Err(
                    self.err(c.args[0].range(), format!("`{path}` converts a number, this is {}", x.ty.numba_name()))
                );
            }
            // float32(0.5) is the float literal 0.5f.
            if d == DType::F32
                && let ast::Expr::Constant(k) = &c.args[0]
                && let ast::Constant::Float(f) = k.value
            {
                return Ok(CExpr::atom(float_literal(f, true), Ty::Num(DType::F32), DType::F32, at));
            }
            let x = if d == DType::Bool {
                let zero = if x.num().is_float() { "0.0" } else { "0" };
                join(
                    vec![(String::new(), Some(x.at_prec(9))), (format!(" != {zero}"), None)],
                    Ty::BOOL,
                    DType::Bool,
                    8,
                    at,
                )
            } else {
                x.convert(d)
            };
            return Ok(x);
        }
        if let Some(e) = self.math(&path, c, at)? {
            return Ok(e);
        }
        if let Some(f) = (self.env.functions)(&path) {
            return self.call_device(&f, c, at);
        }
        if let Some(Global::HostFunction) = (self.env.globals)(&path) {
            return Err(self
                .err(c.func.range(), format!("`{path}` is a plain Python function (host code): a kernel cannot call it"))
                .help(format!("write `@cuda.jit(device=True)` above `def {path}` to compile it for the GPU as well; the kernel can then call it (Numba stops here with \"Untyped global name '{path}'\")")));
        }
        Err(self.err(c.func.range(), format!("gridlab does not know `{path}` in a kernel"))
            .help("a kernel can call `@cuda.jit(device=True)` functions, `cuda.*`, `math.*` and numpy's scalar math; docs/python.md lists them"))
    }

    /// `xoroshiro128p_uniform_float32(states, i)` and its siblings from `numba.cuda.random`.
    fn random(&mut self, which: &str, c: &ast::ExprCall, at: Span) -> R<CExpr> {
        let (helpers, ty): (&[Helper], DType) = match which {
            "xoroshiro128p_next" => (&[Helper::XoroNext], DType::U64),
            "xoroshiro128p_uniform_float32" => (&[Helper::XoroNext, Helper::XoroUniformF32], DType::F32),
            "xoroshiro128p_uniform_float64" => (&[Helper::XoroNext, Helper::XoroUniformF64], DType::F64),
            "xoroshiro128p_normal_float32" => {
                (&[Helper::XoroNext, Helper::XoroUniformF32, Helper::XoroNormalF32], DType::F32)
            }
            "xoroshiro128p_normal_float64" => {
                (&[Helper::XoroNext, Helper::XoroUniformF64, Helper::XoroNormalF64], DType::F64)
            }
            _ => {
                return Err(self.err(c.func.range(), format!("`numba.cuda.random.{which}` is not in gridlab's kernels"))
                    .help("kernels draw numbers with xoroshiro128p_uniform_float32/64 and xoroshiro128p_normal_float32/64"));
            }
        };
        if c.args.len() != 2 {
            return Err(self
                .err(c.range, format!("`{which}` takes the states and the thread's index: `{which}(rng_states, i)`")));
        }
        let states = self.expr(&c.args[0])?;
        if !matches!(states.ty, Ty::Array { dtype: DType::U64, ndim: 2, space: Space::Global, .. }) {
            return Err(self.err(
                c.args[0].range(),
                "the first argument is the states from `create_xoroshiro128p_states(n, seed)`",
            ));
        }
        let index = self.expr(&c.args[1])?;
        if !matches!(index.ty, Ty::Num(d) if !d.is_float()) {
            return Err(self.err(c.args[1].range(), "the thread's index must be an integer"));
        }
        let last = helpers[helpers.len() - 1];
        for h in helpers {
            self.module.helpers.insert(*h);
        }
        let name = helper_name(last);
        Ok(join(
            vec![(format!("{name}("), Some(states)), (", ".into(), Some(index)), (")".into(), None)],
            Ty::Num(ty),
            ty,
            100,
            at,
        ))
    }

    fn print(&mut self, c: &ast::ExprCall, at: Span) -> R<CExpr> {
        let mut fmt = String::new();
        let mut values = Vec::new();
        for (i, a) in c.args.iter().enumerate() {
            if i > 0 {
                fmt.push(' ');
            }
            if let ast::Expr::Constant(k) = a
                && let ast::Constant::Str(s) = &k.value
            {
                fmt.push_str(&s.replace('\\', "\\\\").replace('%', "%%").replace('"', "\\\"").replace('\n', "\\n"));
                continue;
            }
            let v = self.expr(a)?;
            match v.ty {
                Ty::Num(d) if d.is_float() => {
                    fmt.push_str("%f");
                    values.push(v.cast(DType::F64));
                }
                Ty::Num(d) if !d.is_signed() && d != DType::Bool => {
                    fmt.push_str("%llu");
                    values.push(v.cast(DType::U64));
                }
                Ty::Num(_) => {
                    fmt.push_str("%lld");
                    values.push(v.cast(DType::I64));
                }
                _ => {
                    return Err(self
                        .err(a.range(), "`print` in a kernel takes strings and numbers")
                        .help("print one element: `print(a[i])`"));
                }
            }
        }
        if !c.keywords.is_empty() {
            return Err(self.err(c.range, "`print` in a kernel takes no `sep=` or `end=`"));
        }
        fmt.push_str("\\n");
        let mut parts = vec![(format!("printf(\"{fmt}\""), None)];
        for v in values {
            parts.push((", ".into(), Some(v)));
        }
        parts.push((")".into(), None));
        Ok(join(parts, Ty::None, DType::I32, 100, at))
    }

    fn atomic(&mut self, op: &str, c: &ast::ExprCall, at: Span) -> R<CExpr> {
        let usage = format!("`cuda.atomic.{op}(array, index, value)`");
        let Some(&(_, cname, n)) = super::words::ATOMICS.iter().find(|(name, ..)| *name == op) else {
            let known: Vec<&str> = super::words::ATOMICS.iter().map(|(name, ..)| *name).collect();
            return Err(self
                .err(c.func.range(), format!("`cuda.atomic.{op}` is not an atomic gridlab knows"))
                .help(known.join(", ")));
        };
        if c.args.len() != n {
            return Err(self.err(c.range, format!("`cuda.atomic.{op}` takes {n} arguments")).help(usage));
        }
        // `cuda.atomic.compare_and_swap(a[k:], old, new)`, Numba's way to reach element k of a
        // 1-D array: the array is `a`, and the index is moved on by `k`.
        let (array, from) = match &c.args[0] {
            ast::Expr::Subscript(s)
                if let ast::Expr::Slice(ast::ExprSlice { lower: Some(k), upper: None, step: None, .. }) = &*s.slice =>
            {
                (&*s.value, Some(&**k))
            }
            a => (a, None),
        };
        let arr = self.expr(array)?;
        let Ty::Array { dtype, ndim, .. } = arr.ty.clone() else {
            return Err(self.err(c.args[0].range(), "the first argument of an atomic is the array"));
        };
        if from.is_some() && ndim != 1 {
            return Err(self
                .err(c.args[0].range(), "an atomic takes a slice `a[k:]` of a 1-D array only")
                .help("pass the array itself and the element's indices: `cuda.atomic.add(a, (i, j), v)`"));
        }
        // `compare_and_swap(arr, old, new)` works on arr[0].
        let zero = ast::Expr::Constant(ast::ExprConstant {
            range: c.args[0].range(),
            value: ast::Constant::Int(0.into()),
            kind: None,
        });
        let (index, rest) = if op == "compare_and_swap" { (&zero, &c.args[1..]) } else { (&c.args[1], &c.args[2..]) };
        let index = match from {
            Some(k) => ast::Expr::BinOp(ast::ExprBinOp {
                range: c.args[0].range(),
                left: Box::new(k.clone()),
                op: ast::Operator::Add,
                right: Box::new(index.clone()),
            }),
            None => index.clone(),
        };
        let sub = ast::ExprSubscript {
            range: if op == "compare_and_swap" { c.args[0].range() } else { c.range },
            value: Box::new(array.clone()),
            slice: Box::new(index),
            ctx: ast::ExprContext::Load,
        };
        let place = self.subscript(&sub)?;
        let mut vals = Vec::new();
        for v in rest {
            let x = self.expr(v)?;
            if !matches!(x.ty, Ty::Num(_)) {
                return Err(self.err(v.range(), "an atomic's value must be a number"));
            }
            vals.push(x);
        }
        if dtype.is_float() && matches!(op, "inc" | "dec" | "and_" | "or_" | "xor" | "cas" | "compare_and_swap") {
            return Err(self
                .err(c.range, format!("`cuda.atomic.{op}` takes an integer array, not {}", numba_name(dtype)))
                .help("use an integer array (`np.int32`, `np.uint32`, `np.int64`)"));
        }
        // CUDA C has no float atomicMax/atomicMin: a helper loops on atomicCAS, as Numba does.
        let float_helper = match (dtype, op) {
            (DType::F32, "max") => Some(Helper::AtomicMaxF32),
            (DType::F32, "min") => Some(Helper::AtomicMinF32),
            (DType::F64, "max") => Some(Helper::AtomicMaxF64),
            (DType::F64, "min") => Some(Helper::AtomicMinF64),
            _ => None,
        };
        if let Some(h) = float_helper {
            self.module.helpers.insert(h);
            let mut parts = vec![(format!("{}(&", helper_name(h)), Some(place))];
            for v in vals {
                parts.push((", ".into(), Some(v.cast(dtype))));
            }
            parts.push((")".into(), None));
            return Ok(join(parts, Ty::Num(dtype), dtype, 100, at));
        }
        // Float subtraction is an atomic add of the negated value, as Numba lowers it.
        let (cname, vals) = if dtype.is_float() && op == "sub" {
            let negated: Vec<CExpr> = vals
                .into_iter()
                .map(|v| {
                    let t = v.num();
                    join(vec![("-".into(), Some(v.at_prec(14)))], Ty::Num(t), c_promote(t), 14, at)
                })
                .collect();
            ("atomicAdd", negated)
        } else {
            (cname, vals)
        };
        // CUDA's atomics on 64-bit integers take `unsigned long long`; same bits.
        let (ptr_cast, val_ty) = if dtype == DType::I64 && !matches!(op, "max" | "min") {
            ("(unsigned long long *)", DType::U64)
        } else {
            ("", dtype)
        };
        let mut parts = vec![(format!("{cname}({ptr_cast}&"), Some(place))];
        for v in vals {
            parts.push((", ".into(), Some(v.cast(val_ty))));
        }
        parts.push((")".into(), None));
        let mut e = join(parts, Ty::Num(dtype), val_ty, 100, at);
        if val_ty != dtype {
            e = e.convert(dtype);
        }
        Ok(e)
    }

    fn math(&mut self, path: &str, c: &ast::ExprCall, at: Span) -> R<Option<CExpr>> {
        let Some(name) = path
            .strip_prefix("math.")
            .or_else(|| path.strip_prefix("np."))
            .or_else(|| path.strip_prefix("cuda.").filter(|n| matches!(*n, "fma" | "cbrt")))
            .or(match path {
                "abs" | "min" | "max" | "round" => Some(path),
                _ => None,
            })
        else {
            return Ok(None);
        };
        let args: Vec<CExpr> = c.args.iter().map(|a| self.expr(a)).collect::<R<_>>()?;
        for (a, x) in c.args.iter().zip(&args) {
            if matches!(x.ty, Ty::Array { .. }) && path.starts_with("np.") {
                // NumPy's whole-array functions are host code; a kernel's thread works on elements.
                let elements = match a {
                    ast::Expr::Name(n) => n.id.as_str(),
                    _ => "a",
                };
                return Err(self
                    .err(a.range(), format!("`{path}` of a whole array is host code, not something a kernel calls"))
                    .help(format!(
                        "a thread works on single elements: loop over them (`for j in range({elements}.size):`), or let the threads share the work in a reduction (lesson 9); or call `{path}` on the host, after the launch"
                    )));
            }
            if !matches!(x.ty, Ty::Num(_)) {
                return Err(self.err(a.range(), format!("`{path}` takes numbers, this is {}", x.ty.numba_name())));
            }
        }
        let want_args = |n: usize| -> R<()> {
            if args.len() == n {
                Ok(())
            } else {
                Err(Diagnostic::error(format!("`{path}` takes {n} argument{}", if n == 1 { "" } else { "s" })).at(at))
            }
        };
        // The float type a math function computes in: float32 stays float32 (Numba has float32
        // versions), integers become float64.
        let fty =
            |xs: &[CExpr]| -> DType { if xs.iter().all(|x| x.num() == DType::F32) { DType::F32 } else { DType::F64 } };
        let call = |name: &str, xs: Vec<CExpr>, ty: DType| -> CExpr {
            let mut parts = Vec::new();
            for (i, x) in xs.into_iter().enumerate() {
                parts.push((if i == 0 { format!("{name}(") } else { ", ".into() }, Some(x)));
            }
            parts.push((")".into(), None));
            join(parts, Ty::Num(ty), ty, 100, at)
        };
        let unary = [
            ("sqrt", "sqrt"),
            ("exp", "exp"),
            ("log", "log"),
            ("log2", "log2"),
            ("log10", "log10"),
            ("log1p", "log1p"),
            ("expm1", "expm1"),
            ("sin", "sin"),
            ("cos", "cos"),
            ("tan", "tan"),
            ("asin", "asin"),
            ("acos", "acos"),
            ("atan", "atan"),
            ("sinh", "sinh"),
            ("cosh", "cosh"),
            ("tanh", "tanh"),
            ("fabs", "fabs"),
            ("cbrt", "cbrt"),
            ("exp2", "exp2"),
            ("arcsin", "asin"),
            ("arccos", "acos"),
            ("arctan", "atan"),
            ("erf", "erf"),
            ("erfc", "erfc"),
            ("gamma", "tgamma"),
            ("lgamma", "lgamma"),
        ];
        if let Some((_, cn)) = unary.iter().find(|(p, _)| *p == name) {
            want_args(1)?;
            let t = fty(&args);
            let x = args.into_iter().next().expect("one argument").convert(t);
            let f = if t == DType::F32 { format!("{cn}f") } else { cn.to_string() };
            let f = if self.f.fastmath
                && t == DType::F32
                && matches!(*cn, "exp" | "log" | "sin" | "cos" | "tan" | "log2" | "log10")
            {
                format!("__{cn}f")
            } else {
                f
            };
            return Ok(Some(call(&f, vec![x], t)));
        }
        let binary = [
            ("pow", "pow"),
            ("atan2", "atan2"),
            ("arctan2", "atan2"),
            ("hypot", "hypot"),
            ("fmod", "fmod"),
            ("power", "pow"),
            ("copysign", "copysign"),
        ];
        if name == "fma" {
            // `cuda.fma(a, b, c)`: a * b + c rounded once, as CUDA's fmaf/fma.
            want_args(3)?;
            let t = fty(&args);
            let xs: Vec<CExpr> = args.into_iter().map(|x| x.convert(t)).collect();
            return Ok(Some(call(if t == DType::F32 { "fmaf" } else { "fma" }, xs, t)));
        }
        if let Some((_, cn)) = binary.iter().find(|(p, _)| *p == name) {
            want_args(2)?;
            let t = fty(&args);
            let xs: Vec<CExpr> = args.into_iter().map(|x| x.convert(t)).collect();
            let f = if t == DType::F32 { format!("{cn}f") } else { cn.to_string() };
            return Ok(Some(call(&f, xs, t)));
        }
        Ok(Some(match name {
            "floor" | "ceil" | "trunc" => {
                want_args(1)?;
                let t = fty(&args);
                let x = args.into_iter().next().expect("one argument");
                if !x.num().is_float() {
                    return Ok(Some(x));
                }
                let f = if t == DType::F32 { format!("{name}f") } else { name.to_string() };
                let e = call(&f, vec![x.convert(t)], t);
                // math.floor returns an int in Python (and Numba); np.floor keeps the float.
                if path.starts_with("math.") { e.convert(DType::I64) } else { e }
            }
            "isnan" => {
                want_args(1)?;
                let x = args.into_iter().next().expect("one argument");
                join(
                    vec![(String::new(), Some(x.clone().at_prec(9))), (" != ".into(), Some(x.at_prec(9)))],
                    Ty::BOOL,
                    DType::Bool,
                    8,
                    at,
                )
            }
            "isinf" | "isfinite" => {
                want_args(1)?;
                let x = args.into_iter().next().expect("one argument");
                if !x.num().is_float() {
                    return Ok(Some(CExpr::atom(
                        if name == "isinf" { "false" } else { "true" },
                        Ty::BOOL,
                        DType::Bool,
                        at,
                    )));
                }
                let t = x.num();
                let abs = call(if t == DType::F32 { "fabsf" } else { "fabs" }, vec![x.clone()], t);
                if name == "isinf" {
                    join(vec![(String::new(), Some(abs)), (" == INFINITY".into(), None)], Ty::BOOL, DType::Bool, 8, at)
                } else {
                    join(vec![(String::new(), Some(abs)), (" < INFINITY".into(), None)], Ty::BOOL, DType::Bool, 9, at)
                }
            }
            "abs" | "absolute" => {
                want_args(1)?;
                let x = args.into_iter().next().expect("one argument");
                let t = x.num();
                if t.is_float() {
                    call(if t == DType::F32 { "fabsf" } else { "fabs" }, vec![x], t)
                } else {
                    let w = types::int_arith(t, t);
                    call("llabs", vec![x.convert(w)], w)
                }
            }
            "min" | "max" | "minimum" | "maximum" | "fmin" | "fmax" => {
                if args.len() < 2 {
                    return Err(Diagnostic::error(format!("`{path}` takes two or more numbers in a kernel")).at(at));
                }
                let cn = if name.contains("min") { "min" } else { "max" };
                let mut it = args.into_iter();
                let mut acc = it.next().expect("two arguments");
                for x in it {
                    let (a, b) = (acc.num(), x.num());
                    let t = if a.is_float() || b.is_float() { float_arith(a, b) } else { unify(a, b).max_int() };
                    acc = call(cn, vec![acc.convert(t), x.convert(t)], t);
                }
                acc
            }
            "round" | "rint" => {
                if args.len() != 1 {
                    return Err(Diagnostic::error(
                        "`round` with a number of digits is outside what gridlab lowers; `round(x)` works",
                    )
                    .at(at));
                }
                let x = args.into_iter().next().expect("one argument");
                if !x.num().is_float() {
                    return Ok(Some(x));
                }
                self.module.helpers.insert(Helper::Round);
                let e = call("py_round", vec![x.convert(DType::F64)], DType::I64);
                if path == "round" { e } else { e.convert(DType::F64) }
            }
            "degrees" | "radians" | "rad2deg" | "deg2rad" => {
                want_args(1)?;
                let t = fty(&args);
                let x = args.into_iter().next().expect("one argument").convert(t);
                let to_degrees = matches!(name, "degrees" | "rad2deg");
                let factor = if to_degrees { 180.0 / std::f64::consts::PI } else { std::f64::consts::PI / 180.0 };
                let k = CExpr::atom(float_literal(factor, t == DType::F32), Ty::Num(t), t, at);
                join(vec![(String::new(), Some(x.at_prec(13))), (" * ".into(), Some(k))], Ty::Num(t), t, 13, at)
            }
            "sign" => {
                // np.sign: -1, 0 or 1 in the argument's type; NaN stays NaN for floats.
                want_args(1)?;
                let x = args.into_iter().next().expect("one argument").at_prec(9);
                let t = x.num();
                let ct = t.c_name();
                let zero = if t.is_float() { "0.0" } else { "0" };
                let mut parts = Vec::new();
                if t.is_float() {
                    parts.push(("(".to_string(), Some(x.clone())));
                    parts.push((" != ".into(), Some(x.clone())));
                    parts.push((" ? ".into(), Some(x.clone())));
                    parts.push((format!(" : ({ct})("), Some(x.clone())));
                } else {
                    parts.push((format!("(({ct})("), Some(x.clone())));
                }
                parts.push((format!(" > {zero}) - ({ct})("), Some(x)));
                parts.push((format!(" < {zero}))"), None));
                join(parts, Ty::Num(t), t, 100, at)
            }
            _ => return Ok(None),
        }))
    }

    fn call_device(&mut self, f: &PyFunction, c: &ast::ExprCall, at: Span) -> R<CExpr> {
        if !f.device {
            return Err(self
                .err(c.func.range(), format!("`{}` is a kernel: a kernel cannot call another kernel", f.name))
                .help("mark it `@cuda.jit(device=True)` to call it from kernels"));
        }
        if self.stack.contains(&f.name) {
            return Err(self
                .err(c.range, format!("`{}` calls itself: recursion is outside what gridlab runs on the GPU", f.name))
                .help("write it as a loop"));
        }
        // Positional arguments, then keywords by name, then the defaults (`scale=1.0`).
        let takes =
            || format!("`{}` takes {} argument{}", f.name, f.params.len(), if f.params.len() == 1 { "" } else { "s" });
        if c.args.len() > f.params.len() {
            return Err(self.err(c.range, takes()));
        }
        let mut given: Vec<Option<&ast::Expr>> = c.args.iter().map(Some).collect();
        given.resize(f.params.len(), None);
        for kw in &c.keywords {
            let Some(name) = kw.arg.as_ref() else {
                return Err(self.err(kw.range, "`**` arguments are outside Numba's CUDA kernel subset"));
            };
            let Some(k) = f.params.iter().position(|(p, _)| p == name.as_str()) else {
                return Err(self.err(kw.range, format!("`{}` has no parameter `{name}`", f.name)));
            };
            if given[k].is_some() {
                return Err(self.err(kw.range, format!("`{name}` is given twice")));
            }
            given[k] = Some(&kw.value);
        }
        let mut args: Vec<CExpr> = Vec::new();
        for (k, g) in given.into_iter().enumerate() {
            if let Some(e) = g {
                args.push(self.expr(e)?);
                continue;
            }
            // A default is written in the device function's text, not here: a number is
            // taken as its value, at the call.
            let default = f.defaults.get(k).and_then(|d| d.as_ref());
            match default.and_then(|d| default_number(d, at)) {
                Some(v) => args.push(v),
                None if default.is_some() => {
                    return Err(self
                        .err(
                            c.range,
                            format!("`{}`'s default for `{}` is not a number gridlab reads", f.name, f.params[k].0),
                        )
                        .help(format!("pass `{}` at the call", f.params[k].0)));
                }
                None => {
                    return Err(self
                        .err(c.range, format!("`{}` needs its argument `{}`", f.name, f.params[k].0))
                        .help(takes()));
                }
            }
        }
        let tys: Vec<Ty> = args.iter().map(|a| a.ty.clone()).collect();
        let existing = self
            .module
            .instances
            .iter()
            .find(|(n, t, ..)| n == &f.name && t == &tys)
            .map(|(_, _, c, r)| (c.clone(), r.clone()));
        let (c_name, ret) = match existing {
            Some(found) => found,
            None => {
                self.stack.push(f.name.clone());
                let lowered = lower_function(self.env, f, &tys, self.module, self.stack, false);
                self.stack.pop();
                let out = lowered?;
                let r = (out.c_name.clone(), out.ret.clone());
                self.module.device_fns.push(out);
                r
            }
        };
        let mut parts = Vec::new();
        let mut first = true;
        for a in args {
            let sep = if first { format!("{c_name}(") } else { ", ".into() };
            first = false;
            match &a.ty {
                Ty::Array { ndim, space, dims, .. } => {
                    let exts: Vec<String> = (0..*ndim)
                        .map(|d| match space {
                            Space::Global | Space::Const => extent_name(&a.text, *ndim, d),
                            _ => dims.get(d).copied().unwrap_or(0).to_string(),
                        })
                        .collect();
                    parts.push((sep, Some(a.clone())));
                    for e in exts {
                        parts.push((format!(", {e}"), None));
                    }
                }
                _ => parts.push((sep, Some(a))),
            }
        }
        if first {
            parts.push((format!("{c_name}("), None));
        }
        parts.push((")".into(), None));
        let cty = ret.num().unwrap_or(DType::I32);
        Ok(join(parts, ret, cty, 100, at))
    }
}

trait MaxInt {
    fn max_int(self) -> DType;
}

impl MaxInt for DType {
    /// Numba's `min`/`max` of integers is an `int64` (or `uint64`).
    fn max_int(self) -> DType {
        types::int_arith(self, self)
    }
}

/// A float as C writes it; `f32` adds the `f` suffix.
fn float_literal(f: f64, f32: bool) -> String {
    if f.is_infinite() {
        return if f > 0.0 { "INFINITY".into() } else { "-INFINITY".into() };
    }
    if f.is_nan() {
        return "NAN".into();
    }
    let mut s = format!("{f:?}");
    if !s.contains('.') && !s.contains('e') && !s.contains("inf") {
        s.push_str(".0");
    }
    if f32 {
        s.push('f');
    }
    s
}

/// The Python text of an expression, for messages (a best effort: names and calls).
fn expr_text(e: &ast::Expr) -> String {
    match e {
        ast::Expr::Name(n) => n.id.to_string(),
        ast::Expr::Attribute(a) => format!("{}.{}", expr_text(&a.value), a.attr),
        ast::Expr::Call(c) => format!("{}(...)", expr_text(&c.func)),
        _ => "...".to_string(),
    }
}

/// The argument types a kernel most likely gets, read from how it uses each parameter, for
/// checking a kernel before any launch has typed it: a parameter indexed with k indices (or
/// asked its `size`, `shape` or `len`, or given to an atomic) is a float32 array of k
/// dimensions; one given to `xoroshiro128p_*` holds `numba.cuda.random`'s states (uint64, 2-D);
/// anything else is an int64.
pub fn guess_types(f: &PyFunction) -> Vec<ArgType> {
    guess_types_with(f, &|_| None)
}

/// [`guess_types`], reading the device functions the kernel calls too (`functions` finds them
/// by name): a parameter passed on to a device function that indexes it is an array there, so
/// it is one here.
pub fn guess_types_with(f: &PyFunction, functions: &dyn Fn(&str) -> Option<PyFunction>) -> Vec<ArgType> {
    guess_dims(f, functions, 0)
        .into_iter()
        .map(|d| match d {
            Some(0) => ArgType::Array { dtype: DType::U64, ndim: 2 },
            Some(k) => ArgType::Array { dtype: DType::F32, ndim: k.clamp(1, 3) },
            None => ArgType::Scalar(DType::I64),
        })
        .collect()
}

/// Dimensions per parameter of `f` as its body uses them; `Some(0)` marks random states.
fn guess_dims(f: &PyFunction, functions: &dyn Fn(&str) -> Option<PyFunction>, depth: usize) -> Vec<Option<usize>> {
    let mut dims: Vec<Option<usize>> = vec![None; f.params.len()];
    // Local names that stand for a parameter: `w = cuda.const.array_like(weights)`, `b = a`.
    let mut aliases: HashMap<String, usize> = HashMap::new();
    for s in &f.body {
        walk_stmt_all(s, &mut |st| {
            if let ast::Stmt::Assign(a) = st
                && let [ast::Expr::Name(target)] = a.targets.as_slice()
            {
                let source = match &*a.value {
                    ast::Expr::Call(c) if matches!(&*c.func, ast::Expr::Attribute(at) if at.attr.as_str() == "array_like") => {
                        c.args.first()
                    }
                    other => Some(other),
                };
                if let Some(ast::Expr::Name(n)) = source
                    && let Some(i) = f.params.iter().position(|(p, _)| p == n.id.as_str())
                {
                    aliases.insert(target.id.to_string(), i);
                }
            }
        });
    }
    let param = |e: &ast::Expr| match e {
        ast::Expr::Name(n) => {
            f.params.iter().position(|(p, _)| p == n.id.as_str()).or_else(|| aliases.get(n.id.as_str()).copied())
        }
        _ => None,
    };
    let indices = |e: Option<&ast::Expr>| match e {
        Some(ast::Expr::Tuple(t)) => t.elts.len(),
        _ => 1,
    };
    for s in &f.body {
        walk_stmt(s, &mut |e| match e {
            ast::Expr::Subscript(s) => {
                if let Some(i) = param(&s.value) {
                    let k = indices(Some(&s.slice));
                    dims[i] = Some(dims[i].map_or(k, |d| d.max(k)));
                }
            }
            ast::Expr::Attribute(a) if matches!(a.attr.as_str(), "size" | "shape" | "ndim") => {
                if let Some(i) = param(&a.value) {
                    dims[i].get_or_insert(1);
                }
            }
            ast::Expr::Call(c) => {
                let callee = match &*c.func {
                    ast::Expr::Name(n) => n.id.as_str(),
                    ast::Expr::Attribute(a) => a.attr.as_str(),
                    _ => "",
                };
                let atomic = matches!(&*c.func, ast::Expr::Attribute(a) if matches!(&*a.value, ast::Expr::Attribute(m) if m.attr.as_str() == "atomic"));
                if let Some(i) = c.args.first().and_then(param) {
                    if callee.starts_with("xoroshiro128p_") {
                        dims[i] = Some(0);
                    } else if atomic {
                        dims[i].get_or_insert(indices(c.args.get(1)));
                    } else if matches!(callee, "len" | "array_like") {
                        dims[i].get_or_insert(1);
                    }
                }
                // A device function's use of its parameters says what the arguments are.
                if depth < 8
                    && let ast::Expr::Name(n) = &*c.func
                    && let Some(g) = functions(n.id.as_str())
                    && g.device
                    && g.name != f.name
                {
                    let inner = guess_dims(&g, functions, depth + 1);
                    for (arg, d) in c.args.iter().zip(inner) {
                        if let (Some(i), Some(d)) = (param(arg), d) {
                            dims[i] = Some(dims[i].map_or(d, |old| if old == 0 || d == 0 { 0 } else { old.max(d) }));
                        }
                    }
                }
            }
            _ => {}
        });
    }
    dims
}

/// Every name an expression reads.
fn names_in_expr(e: &ast::Expr) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    walk_expr(e, &mut |x| {
        if let ast::Expr::Name(n) = x {
            out.insert(n.id.to_string());
        }
    });
    out
}

fn walk_expr(e: &ast::Expr, f: &mut dyn FnMut(&ast::Expr)) {
    f(e);
    match e {
        ast::Expr::BinOp(b) => {
            walk_expr(&b.left, f);
            walk_expr(&b.right, f);
        }
        ast::Expr::UnaryOp(u) => walk_expr(&u.operand, f),
        ast::Expr::BoolOp(b) => b.values.iter().for_each(|v| walk_expr(v, f)),
        ast::Expr::Compare(c) => {
            walk_expr(&c.left, f);
            c.comparators.iter().for_each(|v| walk_expr(v, f));
        }
        ast::Expr::IfExp(i) => {
            walk_expr(&i.test, f);
            walk_expr(&i.body, f);
            walk_expr(&i.orelse, f);
        }
        ast::Expr::Call(c) => {
            walk_expr(&c.func, f);
            c.args.iter().for_each(|v| walk_expr(v, f));
            c.keywords.iter().for_each(|k| walk_expr(&k.value, f));
        }
        ast::Expr::Attribute(a) => walk_expr(&a.value, f),
        ast::Expr::Subscript(s) => {
            walk_expr(&s.value, f);
            walk_expr(&s.slice, f);
        }
        ast::Expr::Tuple(t) => t.elts.iter().for_each(|v| walk_expr(v, f)),
        _ => {}
    }
}

/// Every name a statement mentions, nested statements included.
fn names_in_stmt(s: &ast::Stmt) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    walk_stmt(s, &mut |e| {
        if let ast::Expr::Name(n) = e {
            out.insert(n.id.to_string());
        }
    });
    out
}

/// The names a statement (or the statements nested in it) assigns.
fn names_assigned(s: &ast::Stmt) -> Vec<String> {
    let mut out = Vec::new();
    let mut add = |t: &ast::Expr| {
        walk_expr(t, &mut |e| {
            if let ast::Expr::Name(n) = e {
                out.push(n.id.to_string());
            }
        })
    };
    match s {
        ast::Stmt::Assign(a) => a.targets.iter().for_each(&mut add),
        ast::Stmt::AugAssign(a) => add(&a.target),
        ast::Stmt::AnnAssign(a) => add(&a.target),
        ast::Stmt::For(f) => {
            add(&f.target);
            out.extend(f.body.iter().chain(&f.orelse).flat_map(names_assigned));
        }
        ast::Stmt::While(w) => out.extend(w.body.iter().chain(&w.orelse).flat_map(names_assigned)),
        ast::Stmt::If(i) => {
            out.extend(i.body.iter().flat_map(names_assigned));
            out.extend(i.orelse.iter().flat_map(names_assigned));
        }
        _ => {}
    }
    out
}

fn walk_stmt(s: &ast::Stmt, f: &mut dyn FnMut(&ast::Expr)) {
    match s {
        ast::Stmt::Expr(e) => walk_expr(&e.value, f),
        ast::Stmt::Assign(a) => {
            a.targets.iter().for_each(|t| walk_expr(t, f));
            walk_expr(&a.value, f);
        }
        ast::Stmt::AugAssign(a) => {
            walk_expr(&a.target, f);
            walk_expr(&a.value, f);
        }
        ast::Stmt::AnnAssign(a) => {
            walk_expr(&a.target, f);
            if let Some(v) = &a.value {
                walk_expr(v, f);
            }
        }
        ast::Stmt::Return(r) => {
            if let Some(v) = &r.value {
                walk_expr(v, f);
            }
        }
        ast::Stmt::If(i) => {
            walk_expr(&i.test, f);
            i.body.iter().chain(&i.orelse).for_each(|s| walk_stmt(s, f));
        }
        ast::Stmt::While(w) => {
            walk_expr(&w.test, f);
            w.body.iter().chain(&w.orelse).for_each(|s| walk_stmt(s, f));
        }
        ast::Stmt::For(l) => {
            walk_expr(&l.target, f);
            walk_expr(&l.iter, f);
            l.body.iter().chain(&l.orelse).for_each(|s| walk_stmt(s, f));
        }
        _ => {}
    }
}

/// Whether the expression reads an array element (`a[i]`, `a[i] * 2`).
fn reads_element(e: &ast::Expr) -> bool {
    let mut found = false;
    walk_expr(e, &mut |x| found |= matches!(x, ast::Expr::Subscript(_)));
    found
}

/// Whether any statement of `body` reads the variable `name` (an update's target is no read).
fn reads_name(body: &[ast::Stmt], name: &str) -> bool {
    let mut found = false;
    for s in body {
        walk_stmt(s, &mut |e| {
            if let ast::Expr::Name(n) = e {
                found |= n.id.as_str() == name && n.ctx == ast::ExprContext::Load;
            }
        });
    }
    found
}

/// Call `f` on `s` and every statement nested in it.
fn walk_stmt_all(s: &ast::Stmt, f: &mut dyn FnMut(&ast::Stmt)) {
    f(s);
    match s {
        ast::Stmt::If(i) => i.body.iter().chain(&i.orelse).for_each(|s| walk_stmt_all(s, f)),
        ast::Stmt::While(w) => w.body.iter().chain(&w.orelse).for_each(|s| walk_stmt_all(s, f)),
        ast::Stmt::For(l) => l.body.iter().chain(&l.orelse).for_each(|s| walk_stmt_all(s, f)),
        _ => {}
    }
}

/// The help for a kernel that computes with complex numbers, which gridlab's C has no type for.
fn complex_unsupported(d: Diagnostic) -> Diagnostic {
    d.help("Numba compiles complex arithmetic; gridlab does not yet: keep the real and imaginary parts in two floats (`zr, zi = zr * zr - zi * zi + cr, 2 * zr * zi + ci`)")
}

/// A parameter's default that is a number literal (`1.0`, `-2`, `True`), as a value at `at`.
fn default_number(e: &ast::Expr, at: Span) -> Option<CExpr> {
    let (neg, k) = match e {
        ast::Expr::UnaryOp(u) if matches!(u.op, ast::UnaryOp::USub) => (true, &*u.operand),
        other => (false, other),
    };
    let ast::Expr::Constant(c) = k else { return None };
    let sign = if neg { "-" } else { "" };
    match &c.value {
        ast::Constant::Int(i) => {
            let v = i64::try_from(i).ok()?;
            let v = if neg { -v } else { v };
            let mut e = CExpr::int_literal(v, at);
            e.maybe_negative = v < 0;
            Some(e)
        }
        ast::Constant::Float(f) => {
            Some(CExpr::atom(format!("{sign}{}", float_literal(*f, false)), Ty::F64, DType::F64, at))
        }
        ast::Constant::Bool(b) if !neg => Some(CExpr::bool_literal(*b, at)),
        _ => None,
    }
}
