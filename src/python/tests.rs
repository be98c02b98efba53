//! Lowering Python kernels: the C they become, Numba's typing, and the errors at the Python line.

use super::*;
use crate::cuda::Module;
use crate::diag::SourceMap;
use crate::dtype::DType;

/// Lower the first kernel in `src` for `args`, with no globals.
fn lower_src(src: &str, args: &[ArgType]) -> Result<Instance, Vec<crate::diag::Diagnostic>> {
    lower_with(src, args, &|_| None)
}

fn lower_with(
    src: &str,
    args: &[ArgType],
    globals: &dyn Fn(&str) -> Option<Global>,
) -> Result<Instance, Vec<crate::diag::Diagnostic>> {
    let snippet = read_snippet(0, src)?;
    let funcs = snippet.functions.clone();
    let find = move |n: &str| funcs.iter().find(|f| f.name == n).cloned();
    let env = Env { functions: &find, globals, imports: &snippet.imports };
    let kernel = snippet.functions.iter().find(|f| !f.device).expect("a kernel");
    lower(&env, kernel, args)
}

fn f32_1d() -> ArgType {
    ArgType::Array { dtype: DType::F32, ndim: 1 }
}

/// The C must pass gridlab's own CUDA front end.
fn compiles(c: &str) {
    let mut sources = SourceMap::new();
    let id = sources.add("<gen>", c, 1);
    let mut m = Module::new();
    if let Err(e) = m.add(id, c) {
        panic!("generated C does not compile:\n{c}\n{e:?}");
    }
}

#[test]
fn the_first_tutorial_kernel_lowers_to_readable_c() {
    let src = "from numba import cuda\n\n@cuda.jit\ndef add_half(array):\n    i = cuda.grid(1)\n    if i < array.size:\n        array[i] += 0.5\n";
    let inst = lower_src(src, &[f32_1d()]).unwrap();
    assert!(inst.text.contains("__global__ void add_half(float *array, long long array_size) {"), "{}", inst.text);
    assert!(inst.text.contains("long long i = blockIdx.x * blockDim.x + threadIdx.x;"), "{}", inst.text);
    assert!(inst.text.contains("if (i < array_size) {"), "{}", inst.text);
    assert!(inst.text.contains("array[i] += 0.5;"), "{}", inst.text);
    assert_eq!(inst.params, vec![CParam::Pointer { arg: 0 }, CParam::Extent { arg: 0, dim: 0 }]);
    compiles(&inst.text);
}

#[test]
fn every_piece_of_c_maps_back_to_the_python_line_it_came_from() {
    let src = "@cuda.jit\ndef k(a):\n    i = cuda.grid(1)\n    a[i] = 2 * i\n";
    let inst = lower_src(src, &[f32_1d()]).unwrap();
    let at = inst.text.find("a[i] = ").unwrap() as u32;
    let best = inst.map.iter().filter(|(lo, hi, _)| *lo <= at && at < *hi).min_by_key(|(lo, hi, _)| hi - lo).unwrap();
    let line_no = src[..best.2.lo as usize].matches('\n').count() + 1;
    assert_eq!(line_no, 4, "{best:?}");
    let rhs = inst.text.find("2 * i").unwrap() as u32 + 2;
    let best = inst.map.iter().filter(|(lo, hi, _)| *lo <= rhs && rhs < *hi).min_by_key(|(lo, hi, _)| hi - lo).unwrap();
    assert_eq!(&src[best.2.lo as usize..best.2.hi as usize], "2 * i");
}

#[test]
fn float32_times_an_int_is_float64_as_in_numba() {
    let src = "@cuda.jit\ndef k(a, out):\n    i = cuda.grid(1)\n    x = a[i] * 2\n    out[i] = x\n";
    let inst = lower_src(src, &[f32_1d(), f32_1d()]).unwrap();
    assert!(inst.text.contains("double x = (double)a[i] * 2;"), "{}", inst.text);
    compiles(&inst.text);
}

#[test]
fn python_floor_division_and_modulo_keep_their_signs() {
    let src = "@cuda.jit\ndef k(a, n):\n    i = cuda.grid(1)\n    a[i] = (i - n) // 3 + (i - n) % 3\n";
    let inst = lower_src(src, &[ArgType::Array { dtype: DType::I64, ndim: 1 }, ArgType::Scalar(DType::I64)]).unwrap();
    assert!(inst.text.contains("py_floordiv_const(i - n, 3)"), "{}", inst.text);
    assert!(inst.text.contains("py_mod_const(i - n, 3)"), "{}", inst.text);
    compiles(&inst.text);
}

#[test]
fn a_divisor_that_may_be_zero_gets_numbas_zero_and_one_that_cannot_gets_no_test() {
    let src = "@cuda.jit\ndef k(a, n, u):\n    i = cuda.grid(1)\n    a[i] = (i - n) // n + i % n + i // cuda.blockDim.x + u[i] // u[0] + i % 32 + (-7) // 2\n";
    let u64_1d = ArgType::Array { dtype: DType::U64, ndim: 1 };
    let inst =
        lower_src(src, &[ArgType::Array { dtype: DType::I64, ndim: 1 }, ArgType::Scalar(DType::I64), u64_1d]).unwrap();
    let t = &inst.text;
    assert!(t.contains("py_floordiv(i - n, n)") && t.contains("if (b == 0) return 0;"), "{t}");
    // `i` cannot be negative, `n` can: Python's % needs its sign rule and the test for zero.
    assert!(t.contains("py_mod(i, n)"), "{t}");
    // A launch dimension, a literal: C's own operators.
    assert!(t.contains("i / blockDim.x") && t.contains("i % 32"), "{t}");
    assert!(t.contains("py_div_u64(u[i], u[0])"), "{t}");
    assert!(t.contains("py_floordiv_const(-(long long)7, 2)"), "{t}");
    compiles(t);
    // A constant size is folded as Python rounds: -9 // -2 is 4 (Euclid's division gives 5).
    let src = "@cuda.jit\ndef k(a):\n    s = cuda.shared.array(-9 // -2, float32)\n    s[0] = 1.0\n    a[0] = s[0]\n";
    let inst = lower_src(src, &[f32_1d()]).unwrap();
    assert!(inst.text.contains("s[4]"), "{}", inst.text);
}

#[test]
fn two_d_arrays_index_row_major_and_shared_arrays_keep_their_shape() {
    let src = "TPB = 16\n@cuda.jit\ndef mm(A, B, C):\n    sA = cuda.shared.array((TPB, TPB), dtype=float32)\n    x, y = cuda.grid(2)\n    tx = cuda.threadIdx.x\n    ty = cuda.threadIdx.y\n    acc = 0.0\n    for k in range(A.shape[1]):\n        acc += A[x, k] * B[k, y]\n    sA[ty, tx] = acc\n    cuda.syncthreads()\n    if x < C.shape[0] and y < C.shape[1]:\n        C[x, y] = sA[ty, tx]\n";
    let globals = |n: &str| (n == "TPB").then_some(Global::Int(16));
    let a2 = ArgType::Array { dtype: DType::F32, ndim: 2 };
    let snippet_err = read_snippet(0, src);
    assert!(snippet_err.is_err(), "a top-level assignment is host code at the prompt");
    let src = src.replacen("TPB = 16\n", "", 1);
    let inst = lower_with(&src, &[a2.clone(), a2.clone(), a2], &globals).unwrap();
    assert!(inst.text.contains("__shared__ float sA[16][16];"), "{}", inst.text);
    assert!(inst.text.contains("A[x * A_cols + k] * B[k * B_cols + y]"), "{}", inst.text);
    assert!(inst.text.contains("sA[ty][tx] = acc;"), "{}", inst.text);
    assert!(inst.text.contains("__syncthreads();"), "{}", inst.text);
    compiles(&inst.text);
}

#[test]
fn device_functions_atomics_and_math_lower() {
    let src = "import math\n@cuda.jit(device=True)\ndef sq(x):\n    return x * x\n\n@cuda.jit\ndef k(a, hist):\n    i = cuda.grid(1)\n    if i < a.size:\n        v = math.sqrt(sq(a[i]))\n        cuda.atomic.add(hist, int(v) % 4, 1)\n";
    let inst = lower_src(src, &[f32_1d(), ArgType::Array { dtype: DType::I32, ndim: 1 }]).unwrap();
    assert!(inst.text.contains("__device__ float sq(float x) {"), "{}", inst.text);
    assert!(inst.text.contains("sqrtf(sq(a[i]))"), "{}", inst.text);
    assert!(inst.text.contains("atomicAdd(&hist["), "{}", inst.text);
    compiles(&inst.text);
}

#[test]
fn erf_gamma_and_copysign_lower_to_cuda_math() {
    let src = "import math\n@cuda.jit\ndef gelu(a, out):\n    i = cuda.grid(1)\n    if i < a.size:\n        x = a[i]\n        out[i] = 0.5 * x * (1 + math.erf(x / math.sqrt(2.0))) + math.gamma(1.0) + math.lgamma(1.0) + math.erfc(x) * 0 + math.copysign(0.0, x)\n";
    let inst = lower_src(src, &[f32_1d(), f32_1d()]).unwrap();
    for f in ["erf(", "tgamma(", "lgamma(", "erfcf(x)", "copysign("] {
        assert!(inst.text.contains(f), "{f} in {}", inst.text);
    }
    compiles(&inst.text);
}

#[test]
fn outside_the_subset_is_one_error_at_the_python_line() {
    for (src, want) in [
        ("@cuda.jit\ndef k(a):\n    xs = [1, 2]\n", "lists"),
        ("@cuda.jit\ndef k(a):\n    class P:\n        pass\n", "classes"),
        ("@cuda.jit\ndef k(a):\n    return 1\n", "cannot return a value"),
        (
            "@cuda.jit(device=True)\ndef f(x):\n    return f(x - 1)\n@cuda.jit\ndef k(a):\n    a[0] = f(1)\n",
            "recursion",
        ),
        ("@cuda.jit\ndef k(a):\n    a[0] = undefined_name\n", "not defined"),
        ("@cuda.jit\ndef k(a):\n    g = (x for x in range(3))\n", "generators"),
    ] {
        let err = lower_src(src, &[f32_1d()]).unwrap_err();
        assert_eq!(err.len(), 1, "{src}");
        assert!(
            err[0].message.contains(want) || err[0].help.as_deref().unwrap_or("").contains(want),
            "{src}: {:?}",
            err[0]
        );
        assert!(err[0].span.is_some(), "{src}");
    }
}

#[test]
fn an_int_and_a_float_in_one_variable_become_float64_with_a_warning() {
    let src = "@cuda.jit\ndef k(a):\n    x = 0\n    if a[0] > 1:\n        x = 1.5\n    a[0] = x\n";
    let inst = lower_src(src, &[f32_1d()]).unwrap();
    assert!(inst.text.contains("double x = 0;"), "{}", inst.text);
    assert_eq!(inst.warnings.len(), 1);
    assert!(inst.warnings[0].message.contains("float64"));
}

#[test]
fn accumulating_into_a_number_argument_warns_that_the_caller_never_sees_it() {
    let f64_scalar = ArgType::Scalar(DType::F64);
    let lost = "@cuda.jit\ndef k(a, total):\n    i = cuda.grid(1)\n    total += a[i]\n";
    let inst = lower_src(lost, &[f32_1d(), f64_scalar.clone()]).unwrap();
    assert_eq!(inst.warnings.len(), 1, "{:?}", inst.warnings);
    assert!(inst.warnings[0].message.contains("`total` is a number argument"), "{:?}", inst.warnings);
    // Read afterwards, the parameter is a local accumulator: no warning, nor one for a
    // parameter's type meeting a float (its type is the launch's).
    let kept = "@cuda.jit\ndef k(a, acc):\n    i = cuda.grid(1)\n    acc += a[i]\n    a[i] = acc\n";
    assert!(lower_src(kept, &[f32_1d(), ArgType::Scalar(DType::I64)]).unwrap().warnings.is_empty());
    let counted = "@cuda.jit\ndef k(a, n):\n    n -= 1\n    a[0] = n\n";
    assert!(lower_src(counted, &[f32_1d(), f64_scalar]).unwrap().warnings.is_empty());
}

#[test]
fn numba_typing_rules() {
    use types::*;
    assert_eq!(int_arith(DType::I32, DType::I32), DType::I64);
    assert_eq!(int_arith(DType::U32, DType::U32), DType::U64);
    assert_eq!(int_arith(DType::U64, DType::I64), DType::F64);
    assert_eq!(arith(DType::F32, DType::I64), DType::F64);
    assert_eq!(arith(DType::F32, DType::I16), DType::F32);
    assert_eq!(arith(DType::F32, DType::F32), DType::F32);
    assert_eq!(true_div(DType::I64, DType::I64), DType::F64);
    assert_eq!(unify(DType::I64, DType::F64), DType::F64);
    assert_eq!(unify(DType::I32, DType::I64), DType::I64);
    assert_eq!(c_usual(DType::U32, DType::I32), DType::U32);
    assert_eq!(c_usual(DType::U32, DType::I64), DType::I64);
}

#[test]
fn a_global_array_is_frozen_into_the_kernel_as_constant_memory() {
    let src = "@cuda.jit\ndef k(a):\n    i = cuda.grid(1)\n    a[i] = W[i % 3] + W[2]\n";
    let globals =
        |n: &str| (n == "W").then(|| Global::Array { dtype: DType::F32, shape: vec![3], values: vec![1.0, 2.5, -3.0] });
    let inst = lower_with(src, &[f32_1d()], &globals).unwrap();
    assert!(inst.text.contains("__constant__ float W[3] = {1.0f, 2.5f, -3.0f};"), "{}", inst.text);
    assert!(inst.text.contains("a[i] = W[i % 3] + W[2];"), "{}", inst.text);
    compiles(&inst.text);
    let big = |n: &str| {
        (n == "W").then(|| Global::Array { dtype: DType::F64, shape: vec![10_000], values: vec![0.0; 10_000] })
    };
    let err = lower_with(src, &[f32_1d()], &big).unwrap_err();
    assert!(err[0].message.contains("constant memory"), "{:?}", err[0]);
}

#[test]
fn numba_names_in_a_cuda_c_kernel_get_the_c_spelling() {
    let c = "__global__ void k(float *a) {\n    int i = cuda.grid(1);\n    a[i] = 1.0f;\n}\n";
    let mut sources = SourceMap::new();
    let id = sources.add("<c>", c, 1);
    let err = Module::new().add(id, c).unwrap_err();
    assert!(err[0].help.as_deref().unwrap_or("").contains("`blockIdx.x * blockDim.x + threadIdx.x`"), "{:?}", err[0]);
}

#[test]
fn float_atomic_sub_is_an_add_of_the_negation_and_float_max_min_loop_on_compare_and_swap() {
    let src = "@cuda.jit\ndef k(a, v):\n    cuda.atomic.sub(a, 0, v[0])\n";
    let inst = lower_src(src, &[f32_1d(), f32_1d()]).unwrap();
    assert!(inst.text.contains("atomicAdd(&a[0], -v[0])"), "{}", inst.text);
    compiles(&inst.text);
    let src = "@cuda.jit\ndef k(a, v):\n    cuda.atomic.max(a, 0, v[0])\n    cuda.atomic.min(a, 1, v[0])\n";
    let inst = lower_src(src, &[f32_1d(), f32_1d()]).unwrap();
    assert!(inst.text.contains("py_atomic_max_f32(&a[0], v[0])"), "{}", inst.text);
    assert!(inst.text.contains("atomicCAS(bits, assumed, __float_as_int(value))"), "{}", inst.text);
    compiles(&inst.text);
    let f64_1d = ArgType::Array { dtype: DType::F64, ndim: 1 };
    let inst = lower_src(src, &[f64_1d.clone(), f64_1d]).unwrap();
    assert!(inst.text.contains("py_atomic_min_f64(&a[1], v[0])"), "{}", inst.text);
    compiles(&inst.text);
    let ints = ArgType::Array { dtype: DType::I32, ndim: 1 };
    assert!(lower_src(src, &[ints.clone(), ints]).is_ok());
}

#[test]
fn a_kernels_likely_argument_types_are_read_from_how_it_uses_them() {
    let src = "@cuda.jit\ndef k(m, v, n, states, hist):\n    x = xoroshiro128p_uniform_float32(states, 0)\n    cuda.atomic.add(hist, 0, 1)\n    if n < v.size:\n        m[0, n] = x\n";
    let snippet = read_snippet(0, src).unwrap();
    let a = |dtype, ndim| ArgType::Array { dtype, ndim };
    assert_eq!(
        guess_types(&snippet.functions[0]),
        vec![a(DType::F32, 2), a(DType::F32, 1), ArgType::Scalar(DType::I64), a(DType::U64, 2), a(DType::F32, 1)]
    );
}

#[test]
fn a_block_typed_without_indentation_is_named_at_its_first_line_with_the_indented_line() {
    let src = "@cuda.jit\ndef add_half(a, n):\ni = cuda.grid(1)\nif i <= n:\na[i] += 0.5\n";
    let errs = read_snippet(0, src).expect_err("refused");
    assert_eq!(errs[0].message, "the block under `def add_half(a, n):` is not indented");
    let at = errs[0].span.expect("placed").lo as usize;
    assert_eq!(&src[at..at + 16], "i = cuda.grid(1)");
    assert!(errs[0].help.as_deref().unwrap().contains("write `    i = cuda.grid(1)` (4 spaces)"), "{errs:?}");
    // One level down: the `if`'s body.
    let src = "@cuda.jit\ndef k(a, n):\n    i = cuda.grid(1)\n    if i < n:\n    a[i] = 1\n";
    let errs = read_snippet(0, src).expect_err("refused");
    assert_eq!(errs[0].message, "the block under `if i < n:` is not indented");
    assert!(errs[0].help.as_deref().unwrap().contains("write `        a[i] = 1` (8 spaces)"), "{errs:?}");
    // Indented as Python wants, with a comment and a blank line: no complaint.
    let ok = "@cuda.jit\ndef k(a, n):  # a kernel\n\n    i = cuda.grid(1)\n    if i < n:\n        a[i] = 1\n    else:\n        pass\n";
    assert!(read_snippet(0, ok).is_ok());
    // A line that ends in `:` inside brackets opens no block: Python takes it, and so does this.
    let sliced = "@cuda.jit\ndef k(a, b):\n    b[0] = a[1:\n][0]\n";
    assert!(read_snippet(0, sliced).is_ok());
}

#[test]
fn a_function_with_nothing_under_it_says_where_its_lines_go() {
    let errs = read_snippet(0, "@cuda.jit\ndef k(a):\n").expect_err("refused");
    assert_eq!(errs[0].message, "the block under `def k(a):` is empty");
}

#[test]
fn a_device_function_returning_a_tuple_returns_a_struct_the_caller_unpacks() {
    let src = "import math\nfrom numba import cuda\n\n@cuda.jit(device=True)\ndef polar(r, t):\n    if r < 0:\n        return 0, 0\n    return r * math.cos(t), r * math.sin(t)\n\n@cuda.jit\ndef k(r, t, x, y):\n    i = cuda.grid(1)\n    x[i], y[i] = polar(r[i], t[i])\n";
    let inst = lower_src(src, &[f32_1d(), f32_1d(), f32_1d(), f32_1d()]).unwrap();
    // The two returns unify: (int64, int64) and (float32, float32) make (float64, float64).
    assert!(inst.text.contains("struct polar_ret { double f0; double f1; };"), "{}", inst.text);
    assert!(inst.text.contains("__device__ polar_ret polar(float r, float t) {"), "{}", inst.text);
    assert!(inst.text.contains("auto py_ret"), "{}", inst.text);
    assert!(inst.text.contains(".f1;"), "{}", inst.text);
    compiles(&inst.text);
}

#[test]
fn a_loop_over_a_tuple_of_numbers_indexes_a_per_thread_array_and_len_is_the_first_extent() {
    let src = "@cuda.jit\ndef k(a, out):\n    i = cuda.grid(1)\n    if 0 < i < len(a) - 1:\n        s = 0.0\n        for d in (-1, 1):\n            s += a[i + d]\n        out[i] = s\n";
    let inst = lower_src(src, &[f32_1d(), f32_1d()]).unwrap();
    let decl = inst.text.find("long long d_items").expect("the values' array");
    assert!(inst.text[decl..].starts_with("long long d_items") && inst.text[decl..].contains("[2];"), "{}", inst.text);
    assert!(inst.text.contains("d = d_items"), "{}", inst.text);
    assert!(inst.text.contains("= -(long long)1;"), "{}", inst.text);
    assert!(inst.text.contains("i < a_size - 1"), "{}", inst.text);
    compiles(&inst.text);
}

#[test]
fn swapping_two_elements_reads_both_before_writing_either() {
    let src = "@cuda.jit\ndef k(a):\n    i = cuda.grid(1) * 2\n    a[i], a[i + 1] = a[i + 1], a[i]\n";
    let inst = lower_src(src, &[f32_1d()]).unwrap();
    let first_write = inst.text.find("a[i] = ").unwrap();
    let second_read = inst.text.find("= a[i];").unwrap();
    assert!(second_read < first_write, "{}", inst.text);
    compiles(&inst.text);
}

#[test]
fn complex_numbers_and_grid_sync_are_refused_with_what_to_write_instead() {
    let src = "@cuda.jit\ndef k(a):\n    c = complex(a[0], a[1])\n";
    let e = lower_src(src, &[f32_1d()]).unwrap_err();
    assert!(e[0].message.contains("complex numbers are not in gridlab's kernels"), "{e:?}");
    assert!(e[0].help.iter().any(|h| h.contains("two floats")), "{e:?}");
    let src = "@cuda.jit\ndef k(a):\n    g = cuda.cg.this_grid()\n    g.sync()\n";
    let e = lower_src(src, &[f32_1d()]).unwrap_err();
    assert!(e[0].message.contains("grid-wide synchronisation"), "{e:?}");
}

#[test]
fn the_guess_at_definition_follows_arrays_into_device_functions_and_const_copies() {
    let src = "@cuda.jit(device=True)\ndef dot3(a, b, i):\n    return a[i, 0] * b[i, 0]\n\n@cuda.jit\ndef k(a, b, w, out):\n    c = cuda.const.array_like(w)\n    i = cuda.grid(1)\n    out[i] = dot3(a, b, i) * c[0]\n";
    let snippet = read_snippet(0, src).unwrap();
    let funcs = snippet.functions.clone();
    let find = move |n: &str| funcs.iter().find(|f| f.name == n).cloned();
    let kernel = snippet.functions.iter().find(|f| !f.device).unwrap();
    let guess = guess_types_with(kernel, &find);
    assert_eq!(guess[0], ArgType::Array { dtype: DType::F32, ndim: 2 });
    assert_eq!(guess[1], ArgType::Array { dtype: DType::F32, ndim: 2 });
    assert_eq!(guess[2], ArgType::Array { dtype: DType::F32, ndim: 1 });
}

#[test]
fn powers_follow_numba_a_float_to_an_integer_keeps_its_type_and_multiplies() {
    let src = "@cuda.jit\ndef k(x, n, out):\n    i = cuda.grid(1)\n    v = x[i]\n    out[0] = v ** 2\n    out[1] = v ** 4\n    out[2] = v ** -2\n    out[3] = x[i] ** 3\n    out[4] = v ** n\n    out[5] = v ** 0.5\n    out[6] = n ** -1\n";
    let i64s = ArgType::Scalar(DType::I64);
    let inst = lower_src(src, &[f32_1d(), i64s, f32_1d()]).unwrap();
    let c = &inst.text;
    // In float32, in the order Numba multiplies: x^4 is (x * x) * (x * x).
    assert!(c.contains("out[0] = v * v;"), "{c}");
    assert!(c.contains("out[1] = v * v * (v * v);"), "{c}");
    assert!(c.contains("out[2] = 1.0f / (v * v);"), "{c}");
    // An element read once, through a helper with the same multiplications; a power known
    // only at run time goes through the loop.
    assert!(c.contains("out[3] = py_pow3_f32(x[i]);"), "{c}");
    assert!(c.contains("__device__ float py_pow3_f32(float x) {\n    return x * (x * x);\n}"), "{c}");
    assert!(c.contains("out[4] = py_powi_f32(v, n);"), "{c}");
    assert!(!c.contains("powf(v, 2"), "{c}");
    // A float power is `pow` (float32 ** float64 is a float64 in Numba).
    assert!(c.contains("pow((double)v, 0.5)"), "{c}");
    // An integer to a negative power stays an integer: the helper says what it is.
    assert!(c.contains("py_ipow(n, -(long long)1)"), "{c}");
    assert!(c.contains("if (base == -1) return exp % 2 == 0 ? 1 : -1;"), "{c}");
    compiles(c);
}

#[test]
fn numpy_of_a_whole_array_in_a_kernel_says_it_is_host_code() {
    let src = "@cuda.jit\ndef k(a):\n    i = cuda.grid(1)\n    a[i] = np.sum(a)\n";
    let errors = lower_src(src, &[f32_1d()]).unwrap_err();
    let text = format!("{errors:?}");
    assert!(text.contains("`np.sum` of a whole array is host code"), "{text}");
    assert!(text.contains("for j in range(a.size):"), "{text}");
}
