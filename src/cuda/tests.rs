//! Tests of the front end through [`Module::add`]: the seed kernels' AST shapes, C's conversion
//! rules, error messages as the learner sees them, and robustness against garbage.

use super::ast::*;
use super::*;
use crate::diag::SourceMap;

/// Add `text` as one snippet to a fresh module; panic with the rendered errors if it fails.
fn module(text: &str) -> Module {
    let mut map = SourceMap::new();
    let id = map.add("<input 1>", text, 1);
    let mut m = Module::new();
    if let Err(errors) = m.add(id, text) {
        let rendered: Vec<String> = errors.iter().map(|e| e.to_plain(&map)).collect();
        panic!("expected the snippet to check:\n{}", rendered.join("\n"));
    }
    m
}

/// The rendered errors for a snippet that must fail.
fn errors(text: &str) -> String {
    let mut map = SourceMap::new();
    let id = map.add("<input 1>", text, 1);
    match Module::new().add(id, text) {
        Ok(_) => panic!("expected an error for:\n{text}"),
        Err(errors) => errors.iter().map(|e| e.to_plain(&map)).collect::<Vec<_>>().join("\n"),
    }
}

fn warnings(text: &str) -> Vec<String> {
    let mut map = SourceMap::new();
    let id = map.add("<input 1>", text, 1);
    let out = Module::new().add(id, text).expect("checks");
    out.warnings.iter().map(|w| w.to_plain(&map)).collect()
}

fn kernel<'a>(m: &'a Module, name: &str) -> &'a Function {
    m.kernel(name).unwrap_or_else(|| panic!("no kernel `{name}`"))
}

fn expr_of(s: &Stmt) -> &Expr {
    match &s.kind {
        StmtKind::Expr(e) => e,
        other => panic!("expected an expression statement, got {other:?}"),
    }
}

fn f32t() -> Type {
    Type::Scalar(Scalar::F32)
}

const SEEDS: &str = r#"
__global__ void add_half_everywhere(float *a, int n) {
    for (int i = 0; i < n; i++) {
        a[i] += 0.5f;
    }
}
__global__ void add_half(float *a) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    a[i] += 0.5;
}
__global__ void add_half_checked(float *a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) a[i] += 0.5f;
}
__global__ void grid_stride(float *a, int n) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) a[i] = 2.0f * a[i];
}
#define BLOCK 256
__global__ void block_sum(const float *in, float *out, int n) {
    __shared__ float s[BLOCK];
    unsigned tid = threadIdx.x;
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    s[tid] = i < n ? in[i] : 0.0f;
    __syncthreads();
    for (unsigned stride = blockDim.x / 2; stride > 0; stride >>= 1) {
        if (tid < stride) s[tid] += s[tid + stride];
        __syncthreads();
    }
    if (tid == 0) atomicAdd(out, s[0]);
}
__device__ float square(float x) { return x * x; }
__global__ void matmul(const float *A, const float *B, float *C, int N) {
    int row = blockIdx.y * blockDim.y + threadIdx.y, col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < N && col < N) { float acc = 0; for (int k = 0; k < N; ++k) acc += A[row * N + k] * B[k * N + col]; C[row * N + col] = acc; }
}
#define TILE 16
__global__ void tiled(const float *A, const float *B, float *C, int N) {
    __shared__ float As[TILE][TILE], Bs[TILE][TILE];
    int tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.y * TILE + ty, col = blockIdx.x * TILE + tx;
    float acc = 0.0f;
    for (int t = 0; t < (N + TILE - 1) / TILE; ++t) {
        As[ty][tx] = (row < N && t * TILE + tx < N) ? A[row * N + t * TILE + tx] : 0.0f;
        Bs[ty][tx] = (col < N && t * TILE + ty < N) ? B[(t * TILE + ty) * N + col] : 0.0f;
        __syncthreads();
        #pragma unroll
        for (int k = 0; k < TILE; ++k) acc += As[ty][k] * Bs[k][tx];
        __syncthreads();
    }
    if (row < N && col < N) C[row * N + col] = square(acc) / acc;
}
__global__ void warp_sum(const float *in, float *out) {
    float v = in[threadIdx.x];
    for (int o = 16; o > 0; o /= 2) v += __shfl_down_sync(0xffffffff, v, o);
    if ((threadIdx.x & 31) == 0) atomicAdd(out, v);
}
__global__ void dynamic(float *a, int n) {
    extern __shared__ float dyn[];  // sized by the launch
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    dyn[threadIdx.x] = i < n ? a[i] : 0.0f;
    __syncthreads();
    if (i < n) printf("block %d thread %d: %f\n", blockIdx.x, threadIdx.x, a[i]);
}
"#;

#[test]
fn every_seed_kernel_checks() {
    let m = module(SEEDS);
    let names: Vec<&str> = m.program().functions.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "add_half_everywhere",
            "add_half",
            "add_half_checked",
            "grid_stride",
            "block_sum",
            "square",
            "matmul",
            "tiled",
            "warp_sum",
            "dynamic"
        ]
    );
    assert_eq!(m.generation(), 1);
}

#[test]
fn float_plus_float_literal_stays_float() {
    let m = module(SEEDS);
    let k = kernel(&m, "add_half_everywhere");
    assert_eq!(k.params.len(), 2);
    assert_eq!(k.params[0].ty, Type::Ptr { pointee: Box::new(f32t()), is_const: false });
    let StmtKind::For { init: Some(init), cond: Some(cond), step: Some(step), body } = &k.body[0].kind else {
        panic!("expected a for loop: {:?}", k.body[0]);
    };
    assert!(matches!(init.kind, StmtKind::Decl { local: 2, init: Some(_) }));
    assert_eq!(cond.ty, Type::Scalar(Scalar::Bool));
    assert!(matches!(step.kind, ExprKind::IncDec { increment: true, prefix: false, .. }));
    let StmtKind::Block(stmts) = &body.kind else { panic!("block body") };
    let ExprKind::CompoundAssign { op, lhs, rhs, op_ty } = &expr_of(&stmts[0]).kind else { panic!("+=") };
    assert_eq!((*op, *op_ty), (BinaryOp::Add, Scalar::F32));
    assert!(matches!(rhs.kind, ExprKind::FloatConst(v) if v == 0.5));
    let ExprKind::Index { base, index } = &lhs.kind else { panic!("a[i]") };
    assert!(matches!(base.kind, ExprKind::Local(0)));
    assert_eq!(index.ty, Type::Scalar(Scalar::I64));
    assert!(matches!(&index.kind, ExprKind::Cast(i) if matches!(i.kind, ExprKind::Local(2))));
}

#[test]
fn float_plus_double_literal_computes_in_double() {
    let m = module(SEEDS);
    let k = kernel(&m, "add_half");
    let ExprKind::CompoundAssign { op_ty, rhs, lhs, .. } = &expr_of(&k.body[1]).kind else { panic!("+=") };
    assert_eq!(*op_ty, Scalar::F64);
    assert_eq!(rhs.ty, Type::Scalar(Scalar::F64));
    assert_eq!(lhs.ty, f32t());
    // int i = blockIdx.x * blockDim.x + threadIdx.x: unsigned arithmetic, then a cast to int.
    let StmtKind::Decl { init: Some(init), .. } = &k.body[0].kind else { panic!("decl") };
    assert_eq!(init.ty, Type::Scalar(Scalar::I32));
    let ExprKind::Cast(sum) = &init.kind else { panic!("cast to int") };
    assert_eq!(sum.ty, Type::Scalar(Scalar::U32));
    assert!(matches!(&sum.kind, ExprKind::Binary { op: BinaryOp::Add, .. }));
}

#[test]
fn shared_arrays_conditionals_and_atomics() {
    let m = module(SEEDS);
    let k = kernel(&m, "block_sum");
    assert_eq!(k.shared.len(), 1);
    assert_eq!(k.shared[0].ty, Type::Array { elem: Box::new(f32t()), len: 256 });
    // s[tid] = i < n ? in[i] : 0.0f
    let ExprKind::Assign { lhs, rhs } = &expr_of(&k.body[2]).kind else { panic!("assign") };
    let ExprKind::Index { base, .. } = &lhs.kind else { panic!("s[tid]") };
    assert!(matches!(&base.kind, ExprKind::Decay(inner) if matches!(inner.kind, ExprKind::Mem(MemId::Shared(0)))));
    assert!(matches!(rhs.kind, ExprKind::Cond { .. }));
    assert!(matches!(expr_of(&k.body[3]).kind, ExprKind::Intrinsic { which: Intrinsic::SyncThreads, .. }));
    let StmtKind::If { then, .. } = &k.body[5].kind else { panic!("if") };
    let ExprKind::Intrinsic { which, args } = &expr_of(then).kind else { panic!("atomicAdd") };
    assert_eq!(*which, Intrinsic::Atomic { op: AtomicOp::Add, ty: Scalar::F32 });
    assert!(args[0].ty.is_pointer());
    assert!(matches!(args[1].kind, ExprKind::Index { .. }));
}

#[test]
fn multi_dim_shared_arrays_and_device_calls() {
    let m = module(SEEDS);
    let k = kernel(&m, "tiled");
    let tile = Type::Array { elem: Box::new(f32t()), len: 16 };
    assert_eq!(k.shared[0].ty, Type::Array { elem: Box::new(tile), len: 16 });
    assert_eq!(k.shared[1].name, "Bs");
    let (square, _) = m.program().function("square").expect("square");
    assert_eq!(k.calls, vec![square]);
}

#[test]
fn shuffles_fill_in_the_width() {
    let m = module(SEEDS);
    let k = kernel(&m, "warp_sum");
    let StmtKind::For { body, .. } = &k.body[1].kind else { panic!("for") };
    let ExprKind::CompoundAssign { rhs, .. } = &expr_of(body).kind else { panic!("+=") };
    let ExprKind::Intrinsic { which, args } = &rhs.kind else { panic!("shfl") };
    assert_eq!(*which, Intrinsic::Shfl { kind: ShflKind::Down, ty: Scalar::F32 });
    assert_eq!(args.len(), 4);
    assert_eq!(args[2].ty, Type::Scalar(Scalar::U32));
    assert!(matches!(args[3].kind, ExprKind::IntConst(32)));
}

#[test]
fn extern_shared_and_printf() {
    let m = module(SEEDS);
    let k = kernel(&m, "dynamic");
    assert!(k.shared[0].is_extern);
    assert_eq!(k.shared[0].ty, Type::Array { elem: Box::new(f32t()), len: 0 });
    let StmtKind::If { then, .. } = &k.body[3].kind else { panic!("if") };
    let ExprKind::Printf { format, args } = &expr_of(then).kind else { panic!("printf") };
    assert_eq!(format, "block %d thread %d: %f\n");
    assert_eq!(args[2].ty, Type::Scalar(Scalar::F64), "float arguments are promoted to double");
}

#[test]
fn unsigned_from_negative_is_a_cast_of_a_constant() {
    let m = module("__global__ void k(unsigned *o) { unsigned u = -1; o[0] = u; }");
    let StmtKind::Decl { init: Some(init), .. } = &kernel(&m, "k").body[0].kind else { panic!("decl") };
    assert_eq!(init.ty, Type::Scalar(Scalar::U32));
    let ExprKind::Cast(neg) = &init.kind else { panic!("cast: {init:?}") };
    let ExprKind::Unary { op: UnaryOp::Neg, operand } = &neg.kind else { panic!("neg") };
    assert!(matches!(operand.kind, ExprKind::IntConst(1)));
}

#[test]
fn int_compared_with_unsigned_converts_both_to_unsigned() {
    let m = module("__global__ void k(float *a, unsigned n) { int i = threadIdx.x; if (i < n) a[i] = 0; }");
    let StmtKind::If { cond, .. } = &kernel(&m, "k").body[1].kind else { panic!("if") };
    let ExprKind::Binary { op: BinaryOp::Lt, lhs, rhs } = &cond.kind else { panic!("<") };
    assert_eq!(lhs.ty, Type::Scalar(Scalar::U32));
    assert!(matches!(lhs.kind, ExprKind::Cast(_)));
    assert_eq!(rhs.ty, Type::Scalar(Scalar::U32));
}

#[test]
fn comparisons_used_as_numbers_are_cast_to_int() {
    let m = module("__global__ void k(int *o, int x, int y) { int b = x < y; o[0] = b + (x == y); }");
    let StmtKind::Decl { init: Some(init), .. } = &kernel(&m, "k").body[0].kind else { panic!("decl") };
    assert_eq!(init.ty, Type::Scalar(Scalar::I32));
    assert!(matches!(&init.kind, ExprKind::Cast(c) if c.ty == Type::Scalar(Scalar::Bool)));
}

#[test]
fn literal_types_follow_c() {
    let m =
        module("__global__ void k(long long *o) { o[0] = 2147483648; o[1] = 0xffffffff; o[2] = 1ull; o[3] = 'a'; }");
    let tys: Vec<Type> = kernel(&m, "k")
        .body
        .iter()
        .map(|s| match &expr_of(s).kind {
            ExprKind::Assign { rhs, .. } => match &rhs.kind {
                ExprKind::Cast(inner) => inner.ty.clone(),
                _ => rhs.ty.clone(),
            },
            _ => panic!("assign"),
        })
        .collect();
    let s = |s| Type::Scalar(s);
    assert_eq!(tys, [s(Scalar::I64), s(Scalar::U32), s(Scalar::U64), s(Scalar::I8)]);
}

#[test]
fn pointer_arithmetic() {
    let m = module(
        "__global__ void k(float *a, int n) { float *p = a + n; float *q = p - 1; long long d = p - q; p++; p += 2; *p = 1.0f; }",
    );
    let k = kernel(&m, "k");
    let StmtKind::Decl { init: Some(e), .. } = &k.body[1].kind else { panic!() };
    let ExprKind::PtrOffset { offset, .. } = &e.kind else { panic!("ptr offset") };
    assert!(matches!(offset.kind, ExprKind::Unary { op: UnaryOp::Neg, .. }));
    let StmtKind::Decl { init: Some(e), .. } = &k.body[2].kind else { panic!() };
    assert!(matches!(e.kind, ExprKind::PtrDiff { .. }));
    let ExprKind::CompoundAssign { op_ty, .. } = &expr_of(&k.body[4]).kind else { panic!("+=") };
    assert_eq!(*op_ty, Scalar::I64);
}

#[test]
fn arrays_decay_when_passed_to_atomics_and_functions() {
    let m = module(
        "__device__ float first(const float *p) { return p[0]; }\n\
         __global__ void k(float *out) { __shared__ float sum[4]; atomicAdd(&sum[0], 1.0f); atomicAdd(sum, 2); out[0] = first(sum); }",
    );
    let k = kernel(&m, "k");
    let ExprKind::Intrinsic { args, .. } = &expr_of(&k.body[0]).kind else { panic!() };
    assert!(matches!(args[0].kind, ExprKind::AddrOf(_)));
    let ExprKind::Intrinsic { args, .. } = &expr_of(&k.body[1]).kind else { panic!() };
    assert!(matches!(args[0].kind, ExprKind::Decay(_)));
    assert!(matches!(&args[1].kind, ExprKind::Cast(_)), "2 converted to float");
}

#[test]
fn local_arrays_with_initialisers() {
    let m = module(
        "__global__ void k(float *o) { float w[2][3] = {{1, 2}, {4}}; int v[] = {1, 2, 3}; o[0] = w[1][0] + v[2]; }",
    );
    let k = kernel(&m, "k");
    assert_eq!(k.local_arrays[1].ty, Type::Array { elem: Box::new(Type::Scalar(Scalar::I32)), len: 3 });
    let StmtKind::ArrayDecl { init: Some(init), .. } = &k.body[0].kind else { panic!() };
    let values: Vec<f64> = init
        .iter()
        .map(|e| match &e.kind {
            ExprKind::Cast(c) => match c.kind {
                ExprKind::IntConst(v) => v as f64,
                _ => panic!(),
            },
            ExprKind::IntConst(v) => *v as f64,
            ExprKind::FloatConst(v) => *v,
            _ => panic!("{e:?}"),
        })
        .collect();
    assert_eq!(values, [1.0, 2.0, 0.0, 4.0, 0.0, 0.0]);
}

#[test]
fn globals_constants_typedefs_and_defines_persist() {
    let mut map = SourceMap::new();
    let mut m = Module::new();
    let a = "#define N 4\ntypedef float real;\n__constant__ real coeff[N] = {1.0f, 2.0f};\n__device__ int counter;\nconst int SCALE = 3;";
    let id = map.add("<input 1>", a, 1);
    let out = m.add(id, a).expect("first snippet");
    let kinds: Vec<(&str, ItemKind)> = out.defined.iter().map(|d| (d.name.as_str(), d.kind.clone())).collect();
    assert_eq!(
        kinds,
        [
            ("N", ItemKind::Define),
            ("real", ItemKind::Typedef),
            ("coeff", ItemKind::Global),
            ("counter", ItemKind::Global),
            ("SCALE", ItemKind::Global)
        ]
    );
    let g = &m.program().globals[0];
    assert!(g.is_constant);
    assert_eq!(g.init, vec![1.0f32.to_bits() as u64, 2.0f32.to_bits() as u64]);
    let b = "__global__ void k(real *o) { o[0] = coeff[N - 1] * SCALE; atomicAdd(&counter, 1); }";
    let id = map.add("<input 2>", b, 1);
    m.add(id, b).expect("second snippet sees the first's names");
    assert_eq!(m.generation(), 2);
    // Redefining a kernel replaces it.
    let c = "__global__ void k(real *o) { o[0] = 1; }";
    let id = map.add("<input 3>", c, 1);
    let out = m.add(id, c).expect("replace");
    assert!(out.defined[0].replaced);
    assert_eq!(m.program().kernels().count(), 1);
    assert_eq!(m.items().last().map(|i| i.text.as_str()), Some(c));
}

#[test]
fn a_function_defined_again_as_it_was_keeps_its_place_before_its_users() {
    // Two Python kernels' C both bring `py_floordiv`: the GPU's source lists items in order,
    // so the first kernel must still find it above itself.
    let helper = "__device__ long long floordiv(long long a, long long b) { return a / b; }\n";
    let mut m = Module::new();
    m.add(0, &format!("{helper}__global__ void k1(long long *a) {{ a[0] = floordiv(a[0], 2); }}")).unwrap();
    m.add(1, &format!("{helper}__global__ void k2(long long *a) {{ a[0] = floordiv(a[0], 3); }}")).unwrap();
    let at = |m: &Module, name: &str| m.items().iter().position(|i| i.name == name).unwrap();
    assert!(at(&m, "floordiv") < at(&m, "k1") && at(&m, "k1") < at(&m, "k2"));
    // Defined again with another body, it moves after what it may now use.
    m.add(2, "__device__ long long floordiv(long long a, long long b) { return (a - 1) / b; }").unwrap();
    assert!(at(&m, "floordiv") > at(&m, "k2"));
}

#[test]
fn failed_snippets_leave_the_module_unchanged() {
    let mut map = SourceMap::new();
    let mut m = Module::new();
    let a = "__device__ float sq(float x) { return x * x; }\n__global__ void k(float *a) { a[0] = sq(a[0]); }";
    let id = map.add("<input 1>", a, 1);
    m.add(id, a).unwrap();
    let before = m.program().clone();
    // Changing sq's signature breaks k, which is checked again.
    let b = "__device__ float sq(float x, float y) { return x * y; }";
    let id = map.add("<input 2>", b, 1);
    let errs = m.add(id, b).unwrap_err();
    assert!(errs[0].message.contains("takes 2 arguments"), "{errs:?}");
    assert_eq!(m.program(), &before);
    assert_eq!(m.generation(), 1);
}

#[test]
fn misspelt_type_suggests_the_right_one() {
    let text = errors("__global__ void k(float *a) {\n    flaot x = 1;\n}");
    assert!(text.contains("unknown type name `flaot`"), "{text}");
    assert!(text.contains("<input 1>:2:5"), "{text}");
    assert!(text.contains("help: did you mean `float`?"), "{text}");
}

#[test]
fn misspelt_names_suggest_names_in_scope() {
    let text = errors("__global__ void k(float *data, int n) {\n  int i = threadIdx.x;\n  if (i < n) dta[i] = 0;\n}");
    assert!(text.contains("use of undeclared identifier `dta`"), "{text}");
    assert!(text.contains("<input 1>:3:14"), "{text}");
    assert!(text.contains("did you mean `data`?"), "{text}");
    let text = errors("__global__ void k(float *a) { a[0] = threadIdz.x; }");
    assert!(text.contains("did you mean `threadIdx`?"), "{text}");
    let text = errors("__global__ void k(float *a) { __syncthread(); }");
    assert!(text.contains("did you mean `__syncthreads`?"), "{text}");
}

#[test]
fn a_pointer_has_no_length_and_says_how_to_pass_one() {
    let text = errors("__global__ void k(float *out) { if (threadIdx.x < out.size) out[0] = 1; }");
    assert!(text.contains("a pointer has no `.size` in CUDA C"), "{text}");
    assert!(text.contains("`int n`"), "{text}");
    let text = errors("__global__ void k(float *out) { if (threadIdx.x < len(out)) out[0] = 1; }");
    assert!(text.contains("`len(...)` is Python's"), "{text}");
    assert!(!text.contains("__device__"), "{text}");
    let w = warnings("__global__ void k(float *out) { int n = sizeof(out) / sizeof(float); out[0] = n; }");
    assert!(w.iter().any(|w| w.contains("`sizeof` of a pointer")), "{w:?}");
    // The size of a value is still a size.
    let w = warnings("__global__ void k(float *out) { out[0] = sizeof(out[0]); }");
    assert!(!w.iter().any(|w| w.contains("sizeof")), "{w:?}");
}

#[test]
fn a_lost_define_is_answered_with_a_define_not_a_variable() {
    // The starter's `#define SQ 256` was not typed again with the kernel.
    let text = errors("__global__ void k(float *a) {\n    __shared__ float s[SQ];\n    s[0] = a[0];\n}");
    assert!(text.contains("use of undeclared identifier `SQ`"), "{text}");
    assert!(text.contains("`#define SQ 256`"), "{text}");
    assert!(!text.contains("int SQ = 0"), "{text}");
    // A lower-case name is still a variable to declare.
    let text = errors("__global__ void k(float *a) { a[0] = total; }");
    assert!(text.contains("declare it first, e.g. `int total = 0;`"), "{text}");
}

#[test]
fn auto_takes_the_initialisers_type_and_constexpr_is_a_constant() {
    let m = module(
        "constexpr int N = 8;\n__global__ void k(float *a, unsigned u) { auto i = u * 2; auto x = a[0]; auto p = a; const auto c = N; p[i] = x + c; }",
    );
    let f = kernel(&m, "k");
    let types: Vec<(String, String)> = f.locals.iter().map(|l| (l.name.clone(), l.ty.c_name())).collect();
    let want = [("i", "unsigned int"), ("x", "float"), ("p", "float *"), ("c", "int")];
    for (name, ty) in want {
        assert!(types.contains(&(name.to_string(), ty.to_string())), "{name}: {ty} in {types:?}");
    }
}

#[test]
fn each_declarator_takes_its_own_stars() {
    // C: the `*` belongs to the declarator, so `q` is an `int` and `dst` a `float *`, while a
    // typedef's pointer is every declarator's.
    // Members too: were `y` a `float **` or `n` an `int *`, these assignments would not check.
    module(
        "struct Pair { float *x, *y; int n, *idx; };\n__global__ void k(float *a, int *b) { Pair p; p.x = a; p.y = a; \
         p.n = 1; p.idx = b; a[0] = *p.y + p.n + p.idx[0]; }",
    );
    assert!(
        errors("struct Pair { float *x, *y; };\n__global__ void k(float *a) { Pair p; p.y = &a; }").contains("float *")
    );
    let m = module(
        "typedef float *fptr;\n__global__ void k(float *a, float *b) { float *src = a, *dst = b; int *p = 0, q = 1; \
         const float *c = a, d = 2, **e = 0; fptr f = a, g = b; float *const h = a, *i = b; src[q] = dst[0] + d + *c + *f + *g + *h + *i; }",
    );
    let f = kernel(&m, "k");
    let types: Vec<(String, String)> = f.locals.iter().map(|l| (l.name.clone(), l.ty.c_name())).collect();
    let want = [
        ("src", "float *"),
        ("dst", "float *"),
        ("p", "int *"),
        ("q", "int"),
        ("c", "const float *"),
        ("d", "float"),
        ("e", "const float * *"),
        ("f", "float *"),
        ("g", "float *"),
        ("h", "float *"),
        ("i", "float *"),
    ];
    for (name, ty) in want {
        assert!(types.contains(&(name.to_string(), ty.to_string())), "{name}: {ty} in {types:?}");
    }
}

#[test]
fn enums_are_int_constants() {
    let m = module(
        "typedef enum { ADD, MUL = 4, TOP } Mode;\nenum Dir : unsigned char { LEFT = -1, STAY, RIGHT };\n\
         __global__ void k(int *a, Mode m) { enum Dir d = RIGHT; __shared__ int s[TOP + 1]; s[0] = d; a[0] = m == MUL ? STAY : s[0] + TOP; }",
    );
    let f = kernel(&m, "k");
    assert!(f.locals.iter().any(|l| l.name == "d" && l.ty == Type::Scalar(Scalar::I32)));
    assert!(f.shared.iter().any(|s| s.ty.c_name().contains("[6]")), "{:?}", f.shared);
    assert!(errors("enum class Color { Red, Green };").contains("scoped enums"));
    // The GPU compiles each enum's text once, however many items it made.
    let texts: Vec<&str> = m
        .items()
        .iter()
        .map(|i| i.text.as_str())
        .filter(|t| t.contains("enum {") || t.contains("enum Dir :"))
        .collect();
    assert_eq!(
        texts,
        ["typedef enum { ADD, MUL = 4, TOP } Mode;", "enum Dir : unsigned char { LEFT = -1, STAY, RIGHT };"]
    );
    let m = module("__device__ int hits, misses;");
    let texts: Vec<&str> = m.items().iter().map(|i| i.text.as_str()).filter(|t| !t.is_empty()).collect();
    assert_eq!(texts, ["__device__ int hits, misses;"]);
}

#[test]
fn integer_and_rounding_intrinsics_are_their_c_arithmetic() {
    let m = module(
        "__global__ void k(unsigned *u, float *f, double *d, int *i) { u[0] = umin(u[1], 3) + umax(1u, u[2]) + __umulhi(u[3], 4u); \
         f[0] = __saturatef(f[1]) + __fadd_rn(f[2], 1.0f) + __fmul_rn(f[3], 2.0f) + __frcp_rn(f[4]) + __int2float_rn(i[0]); \
         d[0] = __dadd_rn(d[1], 1.0) + __ddiv_rn(d[2], 3.0); i[1] = __float2int_rz(f[5]) + __mulhi(i[2], 7) + (int)llmax(1, 2); \
         ::atomicAdd(&i[3], ::max(i[4], 1)); i[5] = __float2int_rn(f[6]) + lrintf(f[7]) + __float2int_rd(f[8]) \
         + (int)std::rint(f[9]) + std::max(1, 2); }",
    );
    assert!(m.kernel("k").is_some());
    let m = module("__global__ void k(float *a, int *i) { i[0] = __float2int_rn(a[0]); }");
    let ExprKind::Assign { rhs, .. } = &expr_of(&kernel(&m, "k").body[0]).kind else { panic!() };
    let ExprKind::Cast(inner) = &rhs.kind else { panic!("{rhs:?}") };
    assert!(matches!(inner.kind, ExprKind::Intrinsic { which: Intrinsic::Math { f: MathFn::Rint, .. }, .. }));
    for (src, want) in [
        (
            "template <int N> __global__ void k(int *a) { static_assert(N % 32 == 0, \"a warp\"); }\n\
          __global__ void j(int *a) { k<16>(a); }",
            "static_assert failed: a warp",
        ),
        (
            "__global__ void k(int *a, int n) { static_assert(n > 0); }",
            "needs a condition known before the kernel runs",
        ),
    ] {
        let text = errors(src);
        assert!(text.contains(want), "for `{src}` expected `{want}` in:\n{text}");
    }
}

#[test]
fn classification_and_sincos_check_and_sincos_wants_a_plain_angle() {
    module(
        "__global__ void k(float *a, double *d, int *o) { o[0] = isnan(a[0]) + isinf(d[0]) + isfinite(a[1] * 2) + signbit(-d[1]); \
         float s, c; sincosf(a[2], &s, &c); sincos(d[2], &d[3], &d[4]); __sincosf(a[3], &a[4], &a[5]); a[6] = s + c; }",
    );
    module(
        "__global__ void k(float *a) { volatile float *p = (volatile float *)0; float *q = (float *)NULL; a[0] = (p == 0) + (q == 0); }",
    );
    assert!(
        errors("__global__ void k(float *a) { float *p = (float *)1; }").contains("cannot convert `int` to `float *`")
    );
    let text = errors("__global__ void k(float *a, int i) { float s, c; sincosf(a[i++], &s, &c); }");
    assert!(text.contains("reads `sincosf`'s angle twice"), "{text}");
    assert!(errors("__global__ void k(const float *a) { float s; sincosf(a[0], &s, &a[1]); }").contains("help:"));
}

#[test]
fn pragma_operator_and_std_names_are_read_as_their_plain_forms() {
    let m = module(
        "#define UNROLL _Pragma(\"unroll\")\n__global__ void k(float *a, std::size_t n) { float s = 0; \
         _Pragma(\"unroll 4\") for (int i = 0; i < 4; i++) s += std::sqrt(a[i]); UNROLL for (int i = 0; i < 2; i++) s += std::min(a[i], 1.0f); a[0] = s; }",
    );
    assert_eq!(kernel(&m, "k").params[1].ty, Type::Scalar(Scalar::U64));
}

#[test]
fn unsupported_constructs_say_what_they_are() {
    let cases = [
        ("template <typename T> union Box { T v; };", "this kind of template runs on the GPU backend only"),
        (
            "template <typename T> struct Box<T *> { T *p; };",
            "partial specialisations of a struct template run on the GPU backend only",
        ),
        ("struct P { float x; __device__ ~P() {} };", "destructors run on the GPU backend only"),
        ("#define LOG(fmt, ...) printf(fmt)", "variadic macros are not supported by the simulator"),
        ("#if N > 1\n#define M 1\n", "this `#if` has no `#endif`"),
        ("#endif", "`#endif` without an `#if` before it"),
        ("#if 1\n#error needs a GPU\n#endif", "#error needs a GPU"),
        (
            "#define SQ(x) ((x)*(x))\n__global__ void k(int *a) { a[0] = SQ(1, 2); }",
            "macro `SQ` takes 1 argument, but 2 were given",
        ),
        ("__global__ void k(int *a) { case 0: a[0] = 1; }", "`case` belongs inside a `switch`"),
        ("__global__ void k(int *a) { switch (a[0]) { case 1: case 1: break; } }", "`case 1` appears twice"),
        ("__global__ void k(int *a) { switch (a[0]) { case a[1]: break; } }", "must be a constant integer"),
        ("__global__ void k(int *a) { switch (a[0]) { case 0: continue; } }", "`continue` outside of a loop"),
        ("__global__ void k(int *a) { goto end; }", "there is no label `end` in this function"),
        (
            "__global__ void k(int *a) { again: a[0]++; if (a[0] < 3) goto again; }",
            "a backward `goto` is not supported",
        ),
        ("__global__ void k(int *a) { goto in; { in: a[0] = 1; } }", "a `goto` into a block is not supported"),
        (
            "__global__ void k(unsigned *a) { unsigned r; asm volatile(\"mov.u32 %0, %%laneid;\" : \"=r\"(r)); a[0] = r; }",
            "inline PTX (`asm`) is not supported by the simulator",
        ),
        ("__global__ void k(int *a) { enum E { A }; }", "enums are not supported by the simulator here"),
        ("__global__ void k(float *a) { auto f = [=](float x) { return x; }; }", "lambdas are not supported"),
        ("__global__ void k(float *a) { half2 v; }", "`half2` runs on the GPU backend only"),
        ("__global__ int k(float *a) { return 1; }", "kernels must return void"),
        ("__global__ void k(float x) { float *p = &x; }", "cannot take the address of the parameter `x`"),
        ("__global__ void k(const float *a) { a[0] = 1; }", "cannot assign here"),
        ("__global__ void k(float *a) { 1 = a[0]; }", "cannot apply `=`"),
        ("__global__ void k(float *a) { atomicAdd(a[0], 1.0f); }", "pass the address: atomicAdd(&a[i], v)"),
        ("__global__ void k(float *a) { a[0] = sqrtf(1, 2); }", "`sqrtf` takes 1 argument, but 2 were given"),
        ("__global__ void j(float *a) {}\n__device__ void f(float *a) { j(a); }", "cannot call the kernel `j`"),
        ("__device__ int f(int n) { return n ? n * f(n - 1) : 1; }", "recursive __device__ functions"),
        (
            "__device__ int f(int n);\n__device__ int g(int n) { return f(n); }\n__device__ int f(int n) { return g(n); }",
            "recursive",
        ),
        ("union U { int x; float f; };", "unions run on the GPU backend only"),
        ("__global__ void k(float &a) {}", "the kernel parameter `a` has a reference"),
        ("__global__ void k(float *a = 1) {}", "the kernel parameter `a` can default only to NULL"),
        (
            "__global__ void k(int *a, long long n = clock()) {}",
            "the default of the kernel parameter `n` is not a constant",
        ),
        ("__device__ void f(int a = 1, int b) {}", "the parameter `b` needs a default value"),
        ("__device__ void f(int &x) {}\n__global__ void k(int *a) { f(a[0] + 1); }", "takes `x` by reference"),
        ("__device__ void f(int &x) {}\n__global__ void k(float *a) { f(a[0]); }", "but this is a `float`"),
        ("__device__ void f(int &x, int y = 2) {}\n__global__ void k(int *a) { f(); }", "takes 1 to 2 arguments"),
        ("__device__ void f(float &&x) {}", "rvalue references"),
        ("__global__ void k(float *a) { auto x; }", "`auto x` needs a value"),
        ("__device__ auto f() { return 1; }", "`auto` cannot be a return type"),
        ("__global__ void k(float *a) { a[0] = clock(1); }", "`clock` takes 0 arguments"),
        ("__global__ void k(float *a) { a[0] = 1 }", "expected `;`"),
        ("__global__ void k(float *a) { a[0] = 1;", "unclosed `{`"),
    ];
    for (src, want) in cases {
        let text = errors(src);
        assert!(text.contains(want), "for `{src}` expected `{want}` in:\n{text}");
        assert!(text.contains("help:"), "no help for `{src}`:\n{text}");
    }
}

#[test]
fn reading_an_unassigned_local_warns_once() {
    let w = warnings("__global__ void k(float *a) { float x; a[0] = x; a[1] = x; }");
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(w[0].contains("`x` is read before it is assigned"));
    assert!(warnings("__global__ void k(float *a) { float x; x = 1; a[0] = x; float y = 0.1; a[1] = y; }").is_empty());
}

#[test]
fn a_kernel_accumulating_into_a_number_parameter_it_never_reads_warns() {
    let w = warnings("__global__ void k(const float *a, float total) { total += a[threadIdx.x]; total += a[0]; }");
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(w[0].contains("`total` is a number parameter"), "{w:?}");
    // Read afterwards, it is a local accumulator; in a device function, the caller's copy.
    assert!(warnings("__global__ void k(float *a, float acc) { acc += a[threadIdx.x]; a[0] = acc; }").is_empty());
    assert!(warnings("__device__ void f(float *a, float t) { t += a[0]; }").is_empty());
    assert!(warnings("__global__ void k(float *a, int n) { n -= 1; }").is_empty());
}

#[test]
fn predefined_limits_and_math() {
    let m = module(
        "__global__ void k(float *a, double *d) { float m = -INFINITY; m = fmaxf(m, FLT_MAX); int lo = INT_MIN; \
         d[0] = sqrt(2.0); a[0] = sqrt(a[1]) + __expf(m) + min(lo, 3) + __fdividef(1, 2); }",
    );
    let k = kernel(&m, "k");
    let ExprKind::Assign { rhs, .. } = &expr_of(&k.body[3]).kind else { panic!() };
    assert!(matches!(
        rhs.kind,
        ExprKind::Intrinsic { which: Intrinsic::Math { f: MathFn::Sqrt, ty: Scalar::F64, .. }, .. }
    ));
}

#[test]
fn else_if_and_conditional_chains_count_length_not_nesting() {
    // 300 branches: flat for a reader (they were "nested too deeply" past 128).
    let branches: String = (1..300).map(|i| format!("else if (a[0] == {i}) a[1] = {i}; ")).collect();
    module(&format!("__global__ void k(int *a) {{ if (a[0] == 0) a[1] = 0; {branches}}}"));
    let conds: String = (0..300).map(|i| format!("a[0] == {i} ? {i} : ")).collect();
    module(&format!("__global__ void k(int *a) {{ a[1] = {conds}0; }}"));
    // Far longer ones are refused for their length, with a message about the chain.
    let branches: String = (1..20_000).map(|i| format!("else if (a[0] == {i}) a[1] = {i}; ")).collect();
    let e = errors(&format!("__global__ void k(int *a) {{ if (a[0] == 0) a[1] = 0; {branches}}}"));
    assert!(e.contains("`else if` chain is too long"), "{e}");
    let conds: String = (0..20_000).map(|i| format!("a[0] == {i} ? {i} : ")).collect();
    assert!(errors(&format!("__global__ void k(int *a) {{ a[1] = {conds}0; }}")).contains("too long"));
}

#[test]
fn deep_nesting_is_an_error_not_a_crash() {
    let deep = format!("__global__ void k(int *a) {{ a[0] = {}1{}; }}", "(".repeat(10_000), ")".repeat(10_000));
    assert!(errors(&deep).contains("nested too deeply"));
    // A flat chain is one level deep for a reader: long ones are refused for their length, and a
    // 100,000-term sum is not mistaken for a macro.
    let chain = format!("__global__ void k(int *a) {{ a[0] = 1{}; }}", " + 1".repeat(100_000));
    let e = errors(&chain);
    assert!(e.contains("this expression is too long") && e.contains("1024 operators"), "{e}");
    module(&format!("__global__ void k(int *a) {{ a[0] = 1{}; }}", " + 1".repeat(128)));
    let blocks = format!("__global__ void k(int *a) {}{}", "{".repeat(10_000), "}".repeat(10_000));
    assert!(errors(&blocks).contains("nested too deeply"));
    let unary = format!("__global__ void k(int *a) {{ a[0] = {}1; }}", "-".repeat(10_000));
    assert!(errors(&unary).contains("nested too deeply"));
}

#[test]
fn the_deepest_allowed_nesting_checks_on_a_small_stack() {
    let parens = format!("__global__ void k(int *a) {{ a[0] = {}1{}; }}", "(".repeat(40), ")".repeat(40));
    let chain = format!("__global__ void k2(int *a) {{ a[0] = 1{}; }}", " + a[1]".repeat(1000));
    let ifs = format!("__global__ void k3(int *a) {{ {} a[0] = 1; }}", "if (a[0]) ".repeat(100));
    let text = format!("{parens}\n{chain}\n{ifs}");
    // Test threads have 2 MiB of stack; the REPL's main thread has more.
    std::thread::Builder::new()
        .stack_size(1 << 21)
        .spawn(move || {
            module(&text);
        })
        .unwrap()
        .join()
        .unwrap();
}

#[test]
fn self_referential_macros_terminate() {
    errors("#define A B B\n#define B A A\n__global__ void k(int *a) { a[0] = A; }");
    module("#define X X\n__device__ int X;");
}

#[test]
fn the_rest_of_the_subset_checks() {
    let m = module(
        r#"#include <cstdio>
/* a block comment
   over lines */
__device__ int hits = 5;
__device__ float table[2][2] = {1, 2, 3};
__host__ __device__ __forceinline__ float half(float x) { return x * .5f + 2.f - 1.0F; }
static __noinline__ __device__ unsigned long long wide(size_t a, long b) { return a + b; }
__global__ void __launch_bounds__(256) k(float *__restrict__ a, const int *flags, int n) {
    int i = 0;
    do {
        if (flags[i] == 0) { i++; continue; } else if (flags[i] < 0) break;
        a[i] = static_cast<float>(flags[i]) + (float)hits + half(a[i]) + table[1][0];
        a[i] *= i % 2 ? -1 : 1;
        i += 1;
    } while (i < n);
    while (true) { if (--n <= 0) break; }
    unsigned char c = 'x';
    bool ok = !(c > 3) || n != 0 && ~n & 1;
    int j = (ok, i), q[2] = {0};
    a[0] += wide(j, q[1]) + sizeof(float) + sizeof a[0] + warpSize;
    assert(i >= 0);
    if (i > n) __trap();
    __syncwarp();
    __threadfence();
    unsigned b = __ballot_sync(0xffffffff, a[0] > 0);
    atomicCAS((int *)flags + 0, 0, (int)b);
}
"#,
    );
    assert_eq!(m.program().globals[0].init, vec![5]);
    assert_eq!(
        m.program().globals[1].init,
        vec![1.0f32.to_bits() as u64, 2.0f32.to_bits() as u64, 3.0f32.to_bits() as u64]
    );
    assert_eq!(m.program().functions.len(), 3);
}

#[test]
fn casting_away_const_for_an_atomic_is_explicit() {
    let text = errors("__global__ void k(const int *flags) { atomicAdd(flags, 1); }");
    assert!(text.contains("points to const data"), "{text}");
}

#[test]
fn errors_point_at_the_right_line_and_column() {
    let text = errors("#define N 4\n__global__ void k(float *a) {\n  for (int i = 0; i < N; i++)\n    a[i] = b;\n}");
    assert!(text.contains("<input 1>:4:12"), "{text}");
    assert!(text.contains("4 |     a[i] = b;"), "{text}");
    let text = errors("__global__ void k(int *a) {\n  goto end;\n}");
    assert!(text.contains("<input 1>:2:3"), "{text}");
    assert!(text.contains("help: put `end:` before the statement the jump goes to"), "{text}");
}

/// Struct and function templates, specialisations and their uses, for the fuzzers: every
/// instance is made at each check, so a mutation reaches the instantiation code.
const TEMPLATE_SEEDS: &str = r#"
template <class T>
struct SharedMemory {
    __device__ inline operator T *() { extern __shared__ int __smem[]; return (T *)__smem; }
    __device__ inline operator const T *() const { extern __shared__ int __smem[]; return (T *)__smem; }
};
template <>
struct SharedMemory<double> {
    __device__ inline operator double *() { extern __shared__ double __smem_d[]; return (double *)__smem_d; }
};
template <typename T = float, int N = 2> struct Pair { T v[N]; __device__ T sum() const { return v[0] + v[N - 1]; } };
template <typename T> struct Max { __device__ T operator()(T a, T b) const { return a > b ? a : b; } };
template <class T> __device__ T twice(T x) { return x + x; }
template <> __device__ int twice<int>(int x) { return x << 1; }
__global__ void use(float *f, double *d, int *i) {
    float *s = SharedMemory<float>();
    double *t = SharedMemory<double>();
    Pair<> p;
    p.v[0] = 1.0f;
    p.v[1] = f[1];
    Max<int> m;
    s[threadIdx.x] = p.sum() + twice<float>(f[0]);
    t[threadIdx.x] = d[0];
    i[0] = m(twice<int>(i[1]), 3);
}
"#;

mod props {
    use proptest::prelude::*;

    use super::*;

    fn add(text: &str) {
        let mut map = SourceMap::new();
        let id = map.add("<fuzz>", text, 1);
        let mut m = Module::new();
        if let Err(errs) = m.add(id, text) {
            for e in errs {
                let _ = e.to_plain(&map);
            }
        }
    }

    /// The seed kernels cut into tokens (roughly: on whitespace and punctuation).
    fn seed_tokens() -> Vec<String> {
        let mut toks = Vec::new();
        let mut cur = String::new();
        for c in SEEDS.chars() {
            if c.is_alphanumeric() || c == '_' || c == '.' {
                cur.push(c);
            } else {
                if !cur.is_empty() {
                    toks.push(std::mem::take(&mut cur));
                }
                toks.push(c.to_string());
            }
        }
        toks
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

        #[test]
        fn arbitrary_text_never_panics(text in "\\PC{0,200}") {
            add(&text);
        }

        #[test]
        fn c_like_text_never_panics(text in "[a-z_(){}\\[\\];,=+*<>!&|^%~?:.0-9 \n#/\"'-]{0,200}") {
            add(&text);
        }

        #[test]
        fn mutated_seeds_never_panic(edits in proptest::collection::vec((0usize..4, any::<prop::sample::Index>(), any::<prop::sample::Index>()), 1..6)) {
            let mut toks = seed_tokens();
            for (kind, a, b) in edits {
                let (i, j) = (a.index(toks.len()), b.index(toks.len()));
                match kind {
                    0 => { toks.remove(i); }
                    1 => { let t = toks[i].clone(); toks.insert(j, t); }
                    2 => toks.swap(i, j),
                    _ => { let t = toks[i].clone(); toks[i] = t.chars().rev().collect(); }
                }
                if toks.is_empty() { break; }
            }
            add(&toks.concat());
        }

        #[test]
        fn mutated_template_seeds_never_panic(edits in proptest::collection::vec((any::<bool>(), any::<prop::sample::Index>(), any::<prop::sample::Index>()), 1..6)) {
            let mut toks: Vec<String> = TEMPLATE_SEEDS.split_inclusive(|c: char| !(c.is_alphanumeric() || c == '_')).map(String::from).collect();
            for (remove, a, b) in edits {
                let (i, j) = (a.index(toks.len()), b.index(toks.len()));
                if remove { toks.remove(i); } else { let t = toks[i].clone(); toks.insert(j, t); }
                if toks.is_empty() { break; }
            }
            add(&toks.concat());
        }

        /// Every pass that walks brackets meets them unbalanced, in every pairing, around the
        /// words that send tokens to it (cooperative groups, templates, macros, decorations):
        /// an error or a module, never a panic (debug builds check every subtraction).
        #[test]
        fn bracket_soup_around_every_pass_never_panics(picks in proptest::collection::vec(any::<prop::sample::Index>(), 0..40)) {
            const PIECES: &[&str] = &[
                "namespace cg = cooperative_groups;\n", "using namespace cooperative_groups;\n",
                "__global__ void k(int *a) ", "__device__ int f", "template ", "template <typename T> ",
                "struct ", "S ", "#define M(x) x\n", "M", "__attribute__", "extern \"C\" ", "__align__",
                "cg::sync", "cg::this_thread_block()", "cg::tiled_partition", "cg::thread_block b = ",
                "auto t = ", "b.sync", "t.shfl_down", "sync", "f<", "k<<<", ">>>", "(", ")", "[", "]",
                "[[", "]]", "{", "}", "<", ">", ">>", ";", ",", "=", "x", "1", "int ", "\n",
            ];
            let text: String = picks.iter().map(|i| PIECES[i.index(PIECES.len())]).collect();
            add(&text);
        }

        #[test]
        fn mutated_seed_characters_never_panic(edits in proptest::collection::vec((any::<bool>(), any::<prop::sample::Index>(), any::<char>()), 1..8)) {
            let mut chars: Vec<char> = SEEDS.chars().collect();
            for (delete, at, c) in edits {
                let i = at.index(chars.len());
                if delete { chars.remove(i); } else { chars.insert(i, c); }
            }
            add(&chars.into_iter().collect::<String>());
        }
    }
}

#[test]
fn the_template_seeds_check() {
    let m = module(TEMPLATE_SEEDS);
    assert!(m.kernel("use").is_some());
}

#[test]
fn many_definitions_one_at_a_time_are_bounded_with_a_message() {
    let mut map = SourceMap::new();
    let mut m = Module::new();
    let add = |m: &mut Module, map: &mut SourceMap, i: usize| {
        let text = format!("__device__ int f{i}(int x) {{ return x + {i}; }}");
        let id = map.add("<input>", &text, 1);
        m.add(id, &text).map_err(|e| e[0].to_plain(map))
    };
    for i in 0..MAX_ITEMS {
        add(&mut m, &mut map, i).expect("checks");
    }
    let e = add(&mut m, &mut map, MAX_ITEMS).expect_err("one too many");
    assert!(e.contains("more than 1000 kernels") && e.contains(":reset"), "{e}");
    // A refusal costs little: 6,000 definitions in a script end in seconds, not minutes.
    let start = std::time::Instant::now();
    for i in MAX_ITEMS..MAX_ITEMS + 5000 {
        add(&mut m, &mut map, i).expect_err("one too many");
    }
    assert!(start.elapsed() < std::time::Duration::from_secs(15), "{:?}", start.elapsed());
    // Redefining an existing name is still fine, and the module is as it was.
    add(&mut m, &mut map, 3).expect("redefinition");
    assert_eq!(m.items().len(), MAX_ITEMS);
}

#[test]
fn templates_are_instantiated_by_their_uses_and_launches() {
    let mut map = SourceMap::new();
    let text = "#define BS 128\n\
                template <typename T> __device__ T twice(T x) { return x + x; }\n\
                template <typename T, unsigned int B = BS> __global__ void k(T *a) { a[threadIdx.x] = twice<T>(a[threadIdx.x]) + B; }\n\
                __global__ void user(int *a) { a[0] = twice<int>(a[0]); }";
    let id = map.add("<input 1>", text, 1);
    let mut m = Module::new();
    m.add(id, text).expect("checks");
    assert!(m.program().function("twice<int>").is_some(), "the use in `user` made an instance");
    assert!(m.template("k").is_some() && m.kernel("k").is_none());
    let tok = |s: &str| lexer::lex(id, s).unwrap();
    // Value arguments are folded and defaults filled in, so these are one instance.
    let name = m.instantiate("k", vec![tok("float"), tok("2 * 64")], Span::default()).unwrap();
    assert_eq!(name, "k<float, 128>");
    assert_eq!(m.instantiate("k", vec![tok("float")], Span::default()).unwrap(), name);
    let k = m.kernel(&name).expect("launchable");
    assert_eq!(k.params[0].ty, Type::Ptr { pointee: Box::new(Type::Scalar(Scalar::F32)), is_const: false });
    assert!(m.program().function("twice<float>").is_some(), "instances that use templates make more");
    // A launch deduces `T` from the buffer passed as `T *`, and takes the default for `B`.
    let deduced = m.template("k").unwrap().deduce(&[Some("unsigned int")]).expect("deduced");
    assert_eq!(m.instantiate("k", deduced, Span::default()).unwrap(), "k<unsigned int, 128>");
    assert!(m.template("k").unwrap().deduce(&[None]).is_none(), "a scalar tells nothing");
    // Errors name the template and what it needs.
    let e = m.instantiate("k", vec![tok("float"), tok("n")], Span::default()).unwrap_err();
    assert!(e[0].message.contains("template parameter `B` of `k` needs a constant number"), "{}", e[0].message);
    let e = m.instantiate("user", vec![tok("float")], Span::default()).unwrap_err();
    assert_eq!(e[0].message, "`user` is not a template");
    // A template that instantiates itself forever is stopped.
    let runaway = "template <int N> __device__ int f(int x) { return f<N + 1>(x); }\n\
                   __global__ void r(int *a) { a[0] = f<0>(a[0]); }";
    assert!(errors(runaway).contains("more than 256 template instances"));
}

#[test]
fn function_like_macros_and_conditionals_expand_as_in_c() {
    let m = module(
        "#define MAX(a, b) ((a) > (b) ? (a) : (b))\n\
         #define TWICE(x) MAX(x, x) + MAX(x, x)\n\
         #define F (1)\n\
         #ifdef F\n#define G 2\n#else\n#define G 3\n#endif\n\
         #if !defined(H) && G == 2\n#define R 7\n#elif 1\n#define R 8\n#endif\n\
         __global__ void k(int *a) { a[0] = TWICE(a[1]) + R + F; int MAX = 1; a[1] = MAX; }",
    );
    let defines: Vec<&str> = m.items().iter().filter(|i| i.kind == ItemKind::Define).map(|i| i.name.as_str()).collect();
    assert_eq!(defines, ["MAX", "TWICE", "F", "G", "R"], "only the taken branches define");
    // `MAX` without `(` is an ordinary name.
    assert!(kernel(&m, "k").locals.iter().any(|l| l.name == "MAX"));
    // Macros persist: a later snippet uses them.
    let mut map = SourceMap::new();
    let mut m = Module::new();
    for text in ["#define SQ(x) ((x) * (x))", "__global__ void k(int *a) { a[0] = SQ(a[1] + 1); }"] {
        let id = map.add("<input>", text, 1);
        m.add(id, text).unwrap();
    }
    assert!(m.kernel("k").is_some());
}

#[test]
fn cooperative_groups_at_block_and_tile_level_read_as_built_ins() {
    let m = module(
        "namespace cg = cooperative_groups;\n\
         __global__ void k(int *a) {\n\
             cg::thread_block b = cg::this_thread_block();\n\
             auto t = cg::tiled_partition<16>(b);\n\
             a[b.thread_rank()] = t.thread_rank() + t.shfl_xor(a[0], 1);\n\
             cg::sync(b);\n\
             t.sync();\n\
         }",
    );
    assert!(m.kernel("k").is_some());
    assert!(m.items().iter().any(|i| i.name == "cg" && i.kind == ItemKind::Typedef), "the alias is kept");
    // What the simulator lacks says so, naming cooperative groups (not "expected `;`").
    for (src, want) in [
        ("__global__ void k(int *a) { cg::grid_group g = cg::this_grid(); }", "`cg::grid_group`"),
        ("__global__ void k(int *a) { auto g = cg::this_grid(); g.sync(); }", "`cg::this_grid()`"),
        (
            "__global__ void k(int *a) { auto t = cg::tiled_partition<8>(cg::this_thread_block()); a[0] = t.any(1); }",
            "`.any()` on this group",
        ),
        ("__global__ void k(int *a) { auto t = cg::tiled_partition<48>(cg::this_thread_block()); }", "not 48"),
    ] {
        let e = errors(src);
        assert!(e.contains(want), "for `{src}` expected `{want}` in:\n{e}");
    }
    let e = errors("__global__ void k(int *a) { cg::grid_group g = cg::this_grid(); }");
    assert!(e.contains("cooperative groups") && e.contains("`:backend gpu`"), "{e}");
}

#[test]
fn constexpr_locals_are_const() {
    module("__global__ void k(int *a) { constexpr int N = 4; a[0] = N; }");
    assert!(errors("__global__ void k(int *a) { constexpr int N = 4; N = 5; }").contains("error"));
}

/// gridlab reads no files: a quoted `#include`, an absolute path or `..` is refused on both
/// backends (the GPU's compiler would read the file and quote it in its errors); CUDA's and C's
/// own headers are fine.
#[test]
fn includes_that_would_read_a_file_are_refused() {
    for line in ["#include \"helpers.h\"", "#include </etc/passwd>", "#include <../../secret.h>", "#include HEADER"] {
        let e = errors(&format!("{line}\n__global__ void k(float *a) {{ a[0] = 1; }}\n"));
        assert!(e.contains("is refused"), "{line}: {e}");
    }
    module(
        "#include <cuda_fp16.h>\n#include <cstdio>\n#include <cooperative_groups.h>\n__global__ void k(float *a) { a[0] = 1; }\n",
    );
}

#[test]
fn short_and_fixed_width_integers_are_types() {
    let m = module(
        "typedef unsigned char uint8_t;\n__global__ void k(uint8_t *a, int16_t *b, unsigned short int *c, short *d, bool *e) { short int s = 2; a[0] = s; }",
    );
    let k = m.program().function("k").unwrap().1;
    let tys: Vec<String> = k.params.iter().map(|p| p.ty.c_name()).collect();
    assert_eq!(tys, ["unsigned char *", "short *", "unsigned short *", "short *", "bool *"]);
}

#[test]
fn vector_types_are_laid_out_as_vector_types_h_does() {
    let layout = |n: &str| {
        let d = StructDef::vector(n).unwrap_or_else(|| panic!("{n}"));
        (d.size, d.align)
    };
    assert_eq!(layout("float2"), (8, 8));
    assert_eq!(layout("float3"), (12, 4));
    assert_eq!(layout("float4"), (16, 16));
    assert_eq!(layout("double2"), (16, 16));
    assert_eq!(layout("double4"), (32, 16));
    assert_eq!(layout("uchar4"), (4, 4));
    assert_eq!(layout("char3"), (3, 1));
    assert_eq!(layout("short2"), (4, 4));
    assert!(StructDef::vector("float5").is_none() && StructDef::vector("bool2").is_none());
    assert_eq!(StructDef::vector("int4").unwrap().uniform(), Some((Scalar::I32, 4)));
}

#[test]
fn structs_are_padded_as_c_pads_them() {
    let m = module(
        "struct Mixed { char c; float f; double d; };\n\
         struct __align__(16) Wide { float x, y, z; };\n\
         typedef struct { Mixed m[2]; Wide w; } Outer;\n\
         __global__ void k(unsigned long long *a) { a[0] = sizeof(Mixed); a[1] = sizeof(Wide); a[2] = sizeof(Outer); }",
    );
    // Mixed: c at 0, f at 4, d at 8: 16 bytes. Wide: 12 bytes rounded up to 16. Outer: 2 * 16 + 16.
    let body = format!("{:?}", kernel(&m, "k").body);
    let sizes: Vec<&str> = body.match_indices("IntConst(").map(|(i, _)| &body[i + 9..i + 11]).collect();
    assert_eq!(sizes, ["0)", "16", "1)", "16", "2)", "48"], "{body}");
    let mixed = StructDef::new(
        "Mixed",
        vec![
            ("c".into(), Type::Scalar(Scalar::I8)),
            ("f".into(), Type::Scalar(Scalar::F32)),
            ("d".into(), Type::Scalar(Scalar::F64)),
        ],
        1,
    );
    assert_eq!(mixed.fields.iter().map(|f| f.offset).collect::<Vec<_>>(), [0, 4, 8]);
    assert_eq!((mixed.size, mixed.align), (16, 8));
    assert_eq!(mixed.uniform(), None, "mixed member types are no one dtype");
    let wide = StructDef::new("Wide", vec![("x".into(), Type::Scalar(Scalar::F32))], 16);
    assert_eq!((wide.size, wide.align), (16, 16));
    assert_eq!(wide.uniform(), None, "padding is no element");
    // ... but a buffer of it is a buffer of its one member type, padding included.
    assert_eq!(wide.buffer_layout(), Some((Scalar::F32, 4)));
    assert_eq!(mixed.buffer_layout(), None);
    let counters = StructDef::new(
        "Counters",
        vec![("a".into(), Type::Scalar(Scalar::U32)), ("b".into(), Type::Scalar(Scalar::U32))],
        64,
    );
    assert_eq!(counters.buffer_layout(), Some((Scalar::U32, 16)));
}

#[test]
fn attributes_and_c_linkage_change_nothing() {
    let m = module(
        "extern \"C\" {\n\
         __device__ __attribute__((always_inline)) int twice(int x) { return 2 * x; }\n\
         __global__ void k(int *a) { a[0] = twice(a[0]); }\n\
         }\n\
         extern \"C\" __global__ void __attribute__((noinline, used)) j([[maybe_unused]] int *a) {}\n\
         __shared__ float s[32];\n\
         extern __shared__ float d[];\n\
         __global__ void uses(float *a) { s[threadIdx.x] = d[0]; int x = 1; int *p = &x; a[0] = *p + s[0]; }",
    );
    for name in ["k", "j", "twice", "uses"] {
        assert!(m.program().functions.iter().any(|f| f.name == name), "{name}");
    }
    let shared: Vec<_> = m.program().globals.iter().filter(|g| g.is_shared).map(|g| g.var.name.as_str()).collect();
    assert_eq!(shared, ["s", "d"]);
    let e = errors("__shared__ float s[4] = {1, 2, 3, 4};");
    assert!(e.contains("`__shared__` variables cannot have an initialiser"), "{e}");
    let e = errors("extern __shared__ float d[4];");
    assert!(e.contains("`extern __shared__` declares an unsized array"), "{e}");
}

#[test]
fn struct_mistakes_say_what_to_write() {
    let e = errors("struct P { float x, y; };\n__global__ void k(P *p) { p.x = 1.0f; }");
    assert!(e.contains("`.x` needs a struct, but this is a pointer") && e.contains("`p->x`"), "{e}");
    let e = errors("__global__ void k(float *a) { float2 v = {1, 2}; float *p = &v.x; a[0] = *p; }");
    assert!(e.contains("cannot take the address of a member of the register variable `v`"), "{e}");
    let e = errors("__global__ void k(float *a) { float2 v = make_float2(1, 2, 3); a[0] = v.x; }");
    assert!(e.contains("`make_float2` takes 2 arguments, but 3 were given"), "{e}");
    let e = errors("__global__ void k(float *a) { float2 v = {1, 2}; float2 w = v + v; a[0] = w.x; }");
    assert!(e.contains("`+` needs a number, but this is a `float2`") && e.contains("GPU backend"), "{e}");
    let e = errors("struct N { N n; };");
    assert!(e.contains("`N` cannot contain itself"), "{e}");
    let e = errors("__global__ void k(float *a) { int4 v = {1, 2, 3, 4, 5}; a[0] = v.x; }");
    assert!(e.contains("too many values in this initialiser"), "{e}");
}

#[test]
fn member_functions_constructors_and_operators_check_like_calls() {
    let m = module(
        "struct C { float r, i;\n\
           __device__ C(float a, float b) : r(a), i(b) {}\n\
           __device__ C() : r(0), i(0) {}\n\
           __device__ float norm() const { return r * r + i * i; }\n\
           __device__ C operator*(const C &o) const { return C(r * o.r - i * o.i, r * o.i + i * o.r); }\n\
           __device__ C &operator+=(const C &o) { r += o.r; i += this->i; return *this; }\n\
         };\n\
         __device__ C operator+(C a, C b) { return C(a.r + b.r, a.i + b.i); }\n\
         __global__ void k(float *out) { C a(1, 2); C z; a += z; out[0] = (a * a + C(1.0f, 0)).norm() + z.norm(); }",
    );
    let names: Vec<&str> = m.program().functions.iter().map(|f| f.name.as_str()).collect();
    for n in ["C::C(float, float)", "C::C()", "C::norm()", "C::operator*(C)", "C::operator+=(C)", "operator+(C, C)"] {
        assert!(names.contains(&n), "{n} in {names:?}");
    }
    let e = errors(&format!("{}\n__global__ void k(float *o) {{ C a(1, 2); o[0] = a.nrom(); }}", STRUCT_C));
    assert!(e.contains("`C` has no member function `nrom`") && e.contains("did you mean `norm`?"), "{e}");
    let e = errors(&format!("{}\n__global__ void k(float *o) {{ C a(1, 2, 3); o[0] = a.r; }}", STRUCT_C));
    assert!(e.contains("no constructor of `C` takes (int, int, int)") && e.contains("`C::C(float, float)`"), "{e}");
    let e = errors(&format!("{}\n__global__ void k(float *o) {{ C a(1, 2); C b = a - a; o[0] = b.r; }}", STRUCT_C));
    assert!(e.contains("`-` needs a number, but this is a `C`"), "{e}");
    let e = errors(&format!("{}\n__global__ void k(float *o) {{ C z; o[0] = z.r; }}", STRUCT_C));
    assert!(e.contains("`C` has no constructor without arguments"), "{e}");
    let e = errors("struct D { float x; __device__ float f(); };");
    assert!(e.contains("defined elsewhere"), "{e}");
}

const STRUCT_C: &str = "struct C { float r, i; __device__ C(float a, float b) : r(a), i(b) {} __device__ float norm() { return r * r + i * i; } };";

#[test]
fn a_label_without_goto_changes_nothing() {
    let m = module("__global__ void k(float *a) {\n    start:\n    a[0] = 1.0f;\n    { done: }\n}");
    assert_eq!(kernel(&m, "k").body.len(), 2);
}

#[test]
fn a_forward_goto_is_a_flag_that_leaves_its_loops_and_skips_to_the_label() {
    let m = module(
        "__global__ void k(int *m, int *w) {
            int r, c;
            for (r = 0; r < 4; r++) { for (c = 0; c < 5; c++) { if (m[r * 5 + c] == 7) goto found; } }
            w[0] = -1;
            return;
        found:
            w[0] = r * 5 + c;
        }",
    );
    let k = kernel(&m, "k");
    assert_eq!(k.locals.iter().filter(|l| l.name == "__goto_found").count(), 1);
    // int flag = 0; int r, c; the loops; if (!flag) { w[0] = -1; return; } flag = 0; w[0] = ...
    let kinds: Vec<&str> = k
        .body
        .iter()
        .map(|s| match &s.kind {
            StmtKind::Decl { .. } => "decl",
            StmtKind::For { .. } => "for",
            StmtKind::If { .. } => "if",
            StmtKind::Expr(_) => "expr",
            _ => "other",
        })
        .collect();
    assert_eq!(kinds, ["decl", "decl", "decl", "for", "if", "expr", "expr"]);
    // A jump forward inside a loop, to a label in the loop's body, is cleared on every pass.
    module("__global__ void k(int *a) { for (int i = 0; i < 4; i++) { if (a[i] < 0) goto next; a[i] *= 2; next: ; } }");
}

/// Input whose brackets never close, close twice or stand alone: every pass that walks tokens
/// (the preprocessor, templates, cooperative groups, the parser) answers with an error at the
/// learner's own line, never a panic (debug builds check every subtraction).
#[test]
fn hostile_brackets_are_an_error_at_the_learners_line() {
    let cases: &[(&str, usize)] = &[
        ("namespace cg = cooperative_groups;\n__global__ void k(int *a) {\n cg::sync) ;\n}", 3),
        ("namespace cg = cooperative_groups;\n__global__ void k(int *a) {\n cg::sync ]\n}", 3),
        ("namespace cg = cooperative_groups;\n__global__ void k(int *a) {\n auto t = cg::tiled_partition<8>);\n}", 3),
        (
            "namespace cg = cooperative_groups;\n__global__ void k(int *a) {\n cg::thread_block b = cg::this_thread_block();\n b.sync) ;\n}",
            4,
        ),
        ("using namespace cooperative_groups;\n__global__ void k(int *a) {\n sync(\n}", 3),
        (">", 1),
        ("\n>>", 2),
        ("__global__ void k(int *a) {\n k<<<1, 1(a);\n}", 2),
        ("__global__ void k(int *a) {\n a[0] = 1;\n}\n>>>", 4),
        (
            "template <typename T>\n__device__ T f(T x) { return x; }\n__global__ void k(float *a) { a[0] = f<float(1.0f); }",
            3,
        ),
        (
            "template <typename T>\n__device__ T f(T x) { return x; }\n__global__ void k(float *a) { a[0] = f<float>>(1.0f); }",
            3,
        ),
        ("\ntemplate <typename T", 2),
        ("\ntemplate <int N> __global__ void k(int *a) { a[0] = N;", 2),
        ("\ntemplate <int N> __global__ void k(int *a) ) }", 2),
        ("\n\ntemplate <> __device__ int f<int>(int x { return x; }", 3),
        ("template <typename T>\n__device__ T f(T x) { return (x; }", 2),
        ("\ntemplate <typename T> struct Box<T { T v; };", 2),
        ("#define M(a) a\n__global__ void k(int *a) {\n a[0] = M(1;\n}", 3),
        ("#define M(a) a\n__global__ void k(int *a) {\n a[0] = M(1]);\n}", 3),
        ("__global__ void k(int *a) __attribute__((\n{ }", 1),
        ("extern \"C\" {\n__global__ void k(int *a) { }", 1),
        ("__global__ void k(int *a) {\n [[ a[0] = 1;\n}", 2),
        ("__global__ void k(int *a) {\n a[0] = (1;\n}", 2),
        ("__global__ void k(int *a) {\n a[0] = 1);\n}", 2),
        ("}\n", 1),
        (")", 1),
        ("(", 1),
        ("__global__ void k(int *a) { a[0] = 1; }\n}", 2),
        ("struct P {\n int v;\n __device__ int get(int x { return v; }\n};", 3),
        ("struct P {\n int v;\n __device__ int get()) { return v; }\n};", 3),
        ("\nstruct __align__(16 P { int x; };", 2),
        ("template <typename T> struct Box {\n T v;\n __device__ T get( { return v; }\n};", 3),
    ];
    for (text, line) in cases {
        let e = errors(text);
        assert!(e.contains(&format!("<input 1>:{line}:")), "for\n{text}\nexpected an error at line {line}, got:\n{e}");
    }
    // Nothing at all is nothing to check.
    module("");
    module("  \n ");
}

/// A template parameter's default may hold angle brackets of its own, closed by `>>` as C++11
/// reads it, and a comparison in parentheses.
#[test]
fn template_defaults_nest_brackets_as_cpp_reads_them() {
    let m = module(
        "template <typename T> struct Box { T v; };\n\
         template <typename T, typename B = Box<T>> __device__ T unbox(B b) { return b.v; }\n\
         template <int N = 4, bool Big = (N > 2)> __device__ int f() { return N + Big; }\n\
         __global__ void k(int *a) { Box<int> b; b.v = 3; a[0] = unbox<int>(b) + f<>() + f<1>(); }",
    );
    assert!(m.kernel("k").is_some());
}

/// Every expression of a statement list, depth first (statements' own expressions only).
fn all_exprs(stmts: &[Stmt]) -> Vec<&Expr> {
    fn expr<'a>(e: &'a Expr, out: &mut Vec<&'a Expr>) {
        out.push(e);
        match &e.kind {
            ExprKind::Deref(x) | ExprKind::Decay(x) | ExprKind::AddrOf(x) | ExprKind::Cast(x) => expr(x, out),
            ExprKind::Unary { operand, .. } => expr(operand, out),
            ExprKind::Member { base, .. } => expr(base, out),
            ExprKind::Index { base: a, index: b }
            | ExprKind::Binary { lhs: a, rhs: b, .. }
            | ExprKind::Assign { lhs: a, rhs: b }
            | ExprKind::CompoundAssign { lhs: a, rhs: b, .. }
            | ExprKind::Comma { lhs: a, rhs: b }
            | ExprKind::PtrOffset { ptr: a, offset: b } => {
                expr(a, out);
                expr(b, out);
            }
            ExprKind::Cond { cond, then, else_ } => [cond, then, else_].into_iter().for_each(|x| expr(x, out)),
            ExprKind::Call { args, .. } | ExprKind::Intrinsic { args, .. } | ExprKind::Printf { args, .. } => {
                args.iter().for_each(|x| expr(x, out))
            }
            ExprKind::StructLit(v) => v.iter().for_each(|x| expr(x, out)),
            _ => {}
        }
    }
    fn stmt<'a>(s: &'a Stmt, out: &mut Vec<&'a Expr>) {
        match &s.kind {
            StmtKind::Expr(e) | StmtKind::Return(Some(e)) | StmtKind::Decl { init: Some(e), .. } => expr(e, out),
            StmtKind::If { cond, then, else_ } => {
                expr(cond, out);
                stmt(then, out);
                else_.iter().for_each(|e| stmt(e, out));
            }
            StmtKind::While { cond, body } | StmtKind::DoWhile { body, cond } => {
                expr(cond, out);
                stmt(body, out);
            }
            StmtKind::Block(b) => b.iter().for_each(|s| stmt(s, out)),
            _ => {}
        }
    }
    let mut out = Vec::new();
    stmts.iter().for_each(|s| stmt(s, &mut out));
    out
}

#[test]
fn the_plain_read_of_a_cas_loop_is_an_atomic_read_and_other_accesses_stay_plain() {
    let m = module(
        "__device__ double add(double *address, double val) {
            unsigned long long *p = (unsigned long long *)address;
            unsigned long long old = *p, assumed;
            do { assumed = old; old = atomicCAS(p, assumed, __double_as_longlong(val + __longlong_as_double(assumed))); } while (assumed != old);
            return __longlong_as_double(old);
        }
        __global__ void k(double *t, int *c, int *other) { add(t, 1.0); int v = c[2]; int w = c[3]; atomicCAS(&c[2], v, v + 1); *c = w; other[0] = other[1]; }",
    );
    let f = m.program().functions.iter().find(|f| f.name == "add").expect("add");
    let atomics: Vec<_> = all_exprs(&f.body)
        .into_iter()
        .filter_map(|e| match &e.kind {
            ExprKind::Intrinsic { which: Intrinsic::Atomic { op, ty }, .. } => Some((*op, *ty)),
            _ => None,
        })
        .collect();
    assert_eq!(atomics, [(AtomicOp::Or, Scalar::U64), (AtomicOp::Cas, Scalar::U64)]);
    // In the kernel: the read of c[2] (the element it CASes) is atomic; c[3], the write
    // through `c` and the other buffer's accesses are not.
    let k = kernel(&m, "k");
    let ops: Vec<_> = all_exprs(&k.body)
        .into_iter()
        .filter_map(|e| match &e.kind {
            ExprKind::Intrinsic { which: Intrinsic::Atomic { op, .. }, .. } => Some(*op),
            _ => None,
        })
        .collect();
    assert_eq!(ops, [AtomicOp::Or, AtomicOp::Cas]);
    let plain_index_reads = all_exprs(&k.body).into_iter().filter(|e| matches!(e.kind, ExprKind::Index { .. })).count();
    assert_eq!(plain_index_reads, 5, "c[3], &c[2] in the atomic read and in the CAS, other[0], other[1]");
    // A float read of the element CASed as an int: an atomic read of the bits, taken as a float.
    let m = module(
        "__device__ float amin(float *addr, float v) { float old = *addr; while (v < old) { int prev = atomicCAS((int *)addr, __float_as_int(old), __float_as_int(v)); if (prev == __float_as_int(old)) break; old = __int_as_float(prev); } return old; }",
    );
    let f = m.program().functions.iter().find(|f| f.name == "amin").expect("amin");
    let Some(StmtKind::Decl { init: Some(init), .. }) = f.body.first().map(|s| &s.kind) else {
        panic!("a declaration")
    };
    let ExprKind::Unary { op: UnaryOp::Bits(Scalar::F32), operand } = &init.kind else { panic!("{init:?}") };
    assert!(matches!(
        operand.kind,
        ExprKind::Intrinsic { which: Intrinsic::Atomic { op: AtomicOp::Or, ty: Scalar::I32 }, .. }
    ));
}

#[test]
fn dim3_and_uint3_locals_take_the_index_variables_and_dim3_fills_missing_sizes_with_one() {
    let m = module(
        "__global__ void k(unsigned *out) { dim3 t = threadIdx; uint3 b = blockIdx; dim3 g(gridDim); dim3 s(4); dim3 d; uint3 u = dim3(2, 3);
         out[0] = t.x + b.y + g.z + s.y + s.z + d.x + u.z; }",
    );
    let k = kernel(&m, "k");
    let names: Vec<String> = k.locals.iter().map(|l| format!("{} {}", l.ty.c_name(), l.name)).collect();
    assert_eq!(names[1..7], ["dim3 t", "uint3 b", "dim3 g", "dim3 s", "dim3 d", "uint3 u"]);
    let e = errors("__global__ void k(unsigned *o) { dim3 d = make_dim3(1, 2, 3); o[0] = d.x; }");
    assert!(e.contains("unknown function `make_dim3`"), "{e}");
    let e = errors("__global__ void k(unsigned *o) { dim3 d(1, 2, 3, 4); o[0] = d.x; }");
    assert!(e.contains("`dim3` takes at most three sizes"), "{e}");
}

#[test]
fn string_literals_of_printf_are_spliced_into_its_format() {
    let m = module(r#"__global__ void k() { printf("%s=%d [%-4s|%3s|%.2s] 100%%\n", "x", 1, "ab", "c", "xyz"); }"#);
    let [StmtKind::Expr(Expr { kind: ExprKind::Printf { format, args }, .. })] =
        kernel(&m, "k").body.iter().map(|s| &s.kind).collect::<Vec<_>>()[..]
    else {
        panic!("one printf")
    };
    assert_eq!(format, "x=%d [ab  |  c|xy] 100%%\n");
    assert_eq!(args.len(), 1);
    // A choice of two literals is a choice of two printfs.
    let m = module(r#"__global__ void k() { printf("%d is %s\n", threadIdx.x, threadIdx.x % 2 ? "odd" : "even"); }"#);
    let formats: Vec<&str> = all_exprs(&kernel(&m, "k").body)
        .into_iter()
        .filter_map(|e| match &e.kind {
            ExprKind::Printf { format, .. } => Some(format.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(formats, ["%d is odd\n", "%d is even\n"]);
    let e = errors(r#"__global__ void k() { printf("%d\n", "x"); }"#);
    assert!(e.contains("a string literal prints with `%s`"), "{e}");
    let e = errors(r#"__device__ const char *name() { return "n"; }"#);
    assert!(e.contains("string literals only in printf"), "{e}");
}

#[test]
fn namespaces_are_read_flat_and_their_items_keep_them_for_the_gpu() {
    let m = module(
        "namespace mathx {\n__device__ float sq(float x) { return x * x; }\nnamespace detail { __device__ float two() { return 2.0f; } }\n}\n__global__ void k(float *a) { a[0] = mathx::sq(a[0]) + mathx::detail::two(); }",
    );
    let text = |name: &str| m.items().iter().find(|i| i.name == name).map(|i| i.text.clone()).expect("item");
    assert_eq!(text("sq"), "namespace mathx { __device__ float sq(float x) { return x * x; } }");
    assert_eq!(text("two"), "namespace mathx { namespace detail { __device__ float two() { return 2.0f; } } }");
    assert!(text("k").starts_with("__global__ void k(float *a) { a[0] = mathx::sq(a[0])"));
    let e = errors("namespace a { __global__ void k(float *p) { p[0] = 1; } }");
    assert!(e.contains("a kernel inside a namespace is not supported by the simulator"), "{e}");
}

#[test]
fn bit_and_warp_intrinsics_are_checked_with_their_types() {
    let m = module(
        "__global__ void k(unsigned *o, int *s) {
            o[0] = __sad(s[0], s[1], 0u) + __usad(o[1], 2u, 0u) + __byte_perm(o[2], o[3], 0x3210) + __funnelshift_lc(o[4], o[5], 40);
            s[2] = __reduce_add_sync(0xffffffff, s[3]); o[6] = __reduce_max_sync(0xffffffff, o[7]);
            int pred; o[8] = __match_all_sync(0xffffffff, s[4], &pred) + __match_any_sync(__activemask(), 1.5f); s[5] = pred;
        }",
    );
    let reduces: Vec<_> = all_exprs(&kernel(&m, "k").body)
        .into_iter()
        .filter_map(|e| match &e.kind {
            ExprKind::Intrinsic {
                which: w @ (Intrinsic::WarpReduce { .. } | Intrinsic::MatchAll | Intrinsic::MatchAny),
                ..
            } => Some(*w),
            _ => None,
        })
        .collect();
    assert_eq!(
        reduces,
        [
            Intrinsic::WarpReduce { op: WarpReduceOp::Add, ty: Scalar::I32 },
            Intrinsic::WarpReduce { op: WarpReduceOp::Max, ty: Scalar::U32 },
            Intrinsic::MatchAll,
            Intrinsic::MatchAny,
        ]
    );
    let e = errors("__global__ void k(unsigned *o) { o[0] = __match_all_sync(0xffffffff, 1, o[1]); }");
    assert!(e.contains("where it stores its predicate"), "{e}");
    let e = errors("__global__ void k(float *o) { o[0] = __reduce_add_sync(0xffffffff, o[1]); }");
    assert!(e.contains("needs an integer"), "{e}");
}
