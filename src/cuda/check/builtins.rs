//! The names CUDA C gives a kernel for free: built-in variables, functions, math functions
//! and fast-math intrinsics. One place, read by the checker and by the REPL's highlighter and
//! completer.

use crate::cuda::ast::MathFn;

pub(crate) const BUILTIN_VARS: &[&str] = &["threadIdx", "blockIdx", "blockDim", "gridDim", "warpSize"];

/// Every builtin function name, for "did you mean" suggestions.
pub(crate) const BUILTIN_FUNCS: &[&str] = &[
    "__syncthreads",
    "__syncthreads_count",
    "__syncthreads_and",
    "__syncthreads_or",
    "__syncwarp",
    "__threadfence",
    "__threadfence_block",
    "__threadfence_system",
    "atomicAdd",
    "atomicSub",
    "atomicExch",
    "atomicMin",
    "atomicMax",
    "atomicInc",
    "atomicDec",
    "atomicCAS",
    "atomicAnd",
    "atomicOr",
    "atomicXor",
    "__shfl_sync",
    "__shfl_up_sync",
    "__shfl_down_sync",
    "__shfl_xor_sync",
    "__ballot_sync",
    "__any_sync",
    "__all_sync",
    "min",
    "max",
    "abs",
    "fabs",
    "fabsf",
    "sqrtf",
    "sqrt",
    "expf",
    "exp",
    "logf",
    "log",
    "powf",
    "pow",
    "sinf",
    "cosf",
    "fminf",
    "fmaxf",
    "floorf",
    "ceilf",
    "rsqrtf",
    "__trap",
    "assert",
    "clock",
    "clock64",
    "printf",
    "__mul24",
    "__umul24",
    "__popc",
    "__popcll",
    "__clz",
    "__clzll",
    "__ffs",
    "__ffsll",
    "__brev",
    "__brevll",
    "__fdividef",
    "labs",
    "llabs",
];

/// Every name the checker accepts as a built-in: variables, functions, math functions and
/// fast-math intrinsics. The highlighter colours and the completer offers exactly these.
pub fn builtin_names() -> impl Iterator<Item = &'static str> {
    let math = MATH.iter().chain(FAST_MATH).map(|m| m.0);
    let mut seen = std::collections::HashSet::new();
    BUILTIN_VARS.iter().chain(BUILTIN_FUNCS).copied().chain(math).filter(move |n| seen.insert(*n))
}

/// The float-suffixed math functions and how many arguments each takes.
pub(crate) const MATH: &[(&str, MathFn, usize)] = &[
    ("sqrtf", MathFn::Sqrt, 1),
    ("rsqrtf", MathFn::Rsqrt, 1),
    ("cbrtf", MathFn::Cbrt, 1),
    ("expf", MathFn::Exp, 1),
    ("exp2f", MathFn::Exp2, 1),
    ("expm1f", MathFn::Expm1, 1),
    ("logf", MathFn::Log, 1),
    ("log2f", MathFn::Log2, 1),
    ("log10f", MathFn::Log10, 1),
    ("log1pf", MathFn::Log1p, 1),
    ("sinf", MathFn::Sin, 1),
    ("cosf", MathFn::Cos, 1),
    ("tanf", MathFn::Tan, 1),
    ("asinf", MathFn::Asin, 1),
    ("acosf", MathFn::Acos, 1),
    ("atanf", MathFn::Atan, 1),
    ("atan2f", MathFn::Atan2, 2),
    ("sinhf", MathFn::Sinh, 1),
    ("coshf", MathFn::Cosh, 1),
    ("tanhf", MathFn::Tanh, 1),
    ("powf", MathFn::Pow, 2),
    ("fabsf", MathFn::Fabs, 1),
    ("fminf", MathFn::Fmin, 2),
    ("fmaxf", MathFn::Fmax, 2),
    ("fmodf", MathFn::Fmod, 2),
    ("floorf", MathFn::Floor, 1),
    ("ceilf", MathFn::Ceil, 1),
    ("roundf", MathFn::Round, 1),
    ("truncf", MathFn::Trunc, 1),
    ("fmaf", MathFn::Fma, 3),
    ("hypotf", MathFn::Hypot, 2),
    ("erff", MathFn::Erf, 1),
    ("erfcf", MathFn::Erfc, 1),
    ("tgammaf", MathFn::Tgamma, 1),
    ("lgammaf", MathFn::Lgamma, 1),
    ("copysignf", MathFn::Copysign, 2),
];

/// Fast-math intrinsics that compute the same function in float.
pub(crate) const FAST_MATH: &[(&str, MathFn, usize)] = &[
    ("__expf", MathFn::Exp, 1),
    ("__exp2f", MathFn::Exp2, 1),
    ("__logf", MathFn::Log, 1),
    ("__log2f", MathFn::Log2, 1),
    ("__log10f", MathFn::Log10, 1),
    ("__sinf", MathFn::Sin, 1),
    ("__cosf", MathFn::Cos, 1),
    ("__tanf", MathFn::Tan, 1),
    ("__powf", MathFn::Pow, 2),
    ("__fsqrt_rn", MathFn::Sqrt, 1),
    ("__frsqrt_rn", MathFn::Rsqrt, 1),
    ("__fmaf_rn", MathFn::Fma, 3),
];
