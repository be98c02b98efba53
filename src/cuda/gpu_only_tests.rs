//! GPU-only items: what [`Module::add_for_gpu`] keeps for NVRTC, what it still refuses, and
//! how the launch checks and the simulator see such kernels.

use super::*;
use crate::diag::SourceMap;

/// A module and its sources, snippet by snippet.
struct Session {
    map: SourceMap,
    m: Module,
}

impl Session {
    fn new() -> Session {
        Session { map: SourceMap::new(), m: Module::new() }
    }

    fn add(&mut self, text: &str, gpu: bool) -> Result<AddOutcome, String> {
        let id = self.map.add(format!("<input {}>", self.map.get(0).map_or(1, |_| 2)), text, 1);
        let r = if gpu { self.m.add_for_gpu(id, text) } else { self.m.add(id, text) };
        r.map_err(|errors| errors.iter().map(|e| e.to_plain(&self.map)).collect::<Vec<_>>().join("\n"))
    }

    fn gpu(&mut self, text: &str) -> AddOutcome {
        self.add(text, true).unwrap_or_else(|e| panic!("expected the GPU to take it:\n{e}"))
    }

    fn gpu_only(&self, name: &str) -> Option<&GpuOnly> {
        self.m.items().iter().find(|i| i.name == name)?.gpu_only()
    }
}

const HALF: &str = "__global__ void k(__half *v, int n) {\n    int i = threadIdx.x;\n    if (i < n) v[i] = v[i];\n}";

#[test]
fn the_simulator_refuses_what_the_gpu_takes() {
    let mut s = Session::new();
    let err = s.add(HALF, false).unwrap_err();
    assert!(err.contains("`__half` runs on the GPU backend only"), "{err}");
    assert!(s.m.items().is_empty());
    assert!(s.m.is_empty());

    let out = s.gpu(HALF);
    assert_eq!(out.defined[0].name, "k");
    assert_eq!(
        out.gpu_note().unwrap(),
        "note: `k` uses `__half`, which the simulator does not run; it runs on the GPU"
    );
    let g = s.gpu_only("k").expect("GPU-only");
    assert_eq!(g.construct, "`__half`");
    assert!(s.m.kernel("k").is_none(), "not the simulator's");
    assert!(s.m.gpu_only_kernel("k").is_some());
    assert_eq!(s.m.kernel_names(), ["k"]);
    assert!(!s.m.is_empty(), "switching back to the GPU must load it again");
    assert_eq!(s.m.gpu_only_signature("k").unwrap(), "k(__half *v, int n)");
}

#[test]
fn code_within_the_subset_stays_the_simulators() {
    let mut s = Session::new();
    let out = s.gpu("__global__ void k(float *a) { a[0] = 1.0f; }");
    assert!(out.gpu_note().is_none());
    assert!(s.m.kernel("k").is_some());
    assert!(s.gpu_only("k").is_none());
}

#[test]
fn genuine_errors_are_still_errors_on_the_gpu() {
    let mut s = Session::new();
    let err = s.add("__global__ void k(float *a) { a[0] = b; }", true).unwrap_err();
    assert!(err.contains("use of undeclared identifier `b`"), "{err}");
    let err = s.add("__global__ void k(float *a) { flaot x = 1; }", true).unwrap_err();
    assert!(err.contains("did you mean `float`?"), "{err}");
    assert!(s.m.items().is_empty());
}

#[test]
fn a_snippet_is_taken_item_by_item() {
    let mut s = Session::new();
    let text = "union P { float x, y; };\n\
                template <typename T> __device__ T sq(T x) { return x * x; }\n\
                __global__ void k(float4 *v, const P *p, int n) { v[0].x = sq(p[0].x); }\n\
                __device__ float twice(float x) { return 2.0f * x; }\n\
                __global__ void plain(float *a) { a[0] = twice(a[0]); }";
    let out = s.gpu(text);
    let gpu: Vec<(&str, &str)> = out.gpu_only.iter().map(|(n, c)| (n.as_str(), c.as_str())).collect();
    // The template is the simulator's; `k` calls it without its arguments (deduced on the GPU).
    assert_eq!(gpu, [("P", "unions"), ("k", "template argument deduction")]);
    assert_eq!(
        out.gpu_note().unwrap(),
        "note: `P` uses unions, which the simulator does not run; `P` and `k` run on the GPU only"
    );
    assert!(s.m.template("sq").is_some());
    // What is within the subset is checked and runs on the simulator as before.
    assert!(s.m.kernel("plain").is_some());
    assert!(s.m.program().function("twice").is_some());
    let kinds: Vec<(&str, ItemKind)> = s.m.items().iter().map(|i| (i.name.as_str(), i.kind.clone())).collect();
    assert_eq!(
        kinds,
        [
            ("P", ItemKind::Typedef),
            ("sq", ItemKind::DeviceFunction),
            ("k", ItemKind::Kernel),
            ("twice", ItemKind::DeviceFunction),
            ("plain", ItemKind::Kernel)
        ]
    );
    assert_eq!(s.m.items()[2].text, "__global__ void k(float4 *v, const P *p, int n) { v[0].x = sq(p[0].x); }");
}

#[test]
fn code_that_uses_a_gpu_only_item_is_gpu_only_too() {
    let mut s = Session::new();
    s.gpu("template <typename T> __device__ T sq(T x) { return x * x; }\nunion P { float x; int i; };");
    // A kernel within the subset that calls the template, or declares a `P`.
    let call = "__global__ void k(float *a) { a[0] = sq(a[0]); }";
    let err = s.add(call, false).unwrap_err();
    assert!(err.contains("`sq` is a template: the simulator needs its arguments written out"), "{err}");
    assert!(err.contains("`sq<float>(...)`") && err.contains("`:backend gpu`"), "{err}");
    let out = s.gpu(call);
    assert_eq!(out.gpu_only, [("k".to_string(), "template argument deduction".to_string())]);
    // Calling the struct's user is GPU-only through the struct.
    let declare = "__global__ void k2(float *a) { P p; p.x = a[0]; a[0] = p.x; }";
    assert!(s.add(declare, false).unwrap_err().contains("`P` runs on the GPU only"));
    s.gpu(declare);
    let out = s.gpu("__global__ void k2(float *a) { P p; p.x = sq<float>(a[0]); a[0] = p.x; }");
    assert_eq!(out.gpu_only[0].0, "k2");
    assert_eq!(s.m.kernel_names(), ["k", "k2"]);
}

#[test]
fn a_gpu_only_replacement_takes_its_callers_along() {
    let mut s = Session::new();
    s.gpu("__device__ float sq(float x) { return x * x; }\n__global__ void k(float *a) { a[0] = sq(a[0]); }");
    assert!(s.m.kernel("k").is_some());
    let out = s.gpu("template <typename T> __device__ T sq(T x) { return x * x; }");
    assert!(out.defined[0].replaced);
    // The template is the simulator's, but `k` calls it without its arguments: the GPU's.
    assert_eq!(out.gpu_only, [("k".to_string(), "`sq`".to_string())]);
    assert!(s.m.kernel("k").is_none());
    assert!(s.m.gpu_only_kernel("k").is_some());
    // ... and code within the subset replaces a GPU-only item again.
    s.gpu("__global__ void k(float *a) { a[0] = 2.0f; }");
    assert!(s.m.kernel("k").is_some());
    assert!(s.m.gpu_only_kernel("k").is_none());
}

#[test]
fn gpu_only_overloads_live_side_by_side() {
    let mut s = Session::new();
    s.gpu("__device__ float4 operator+(float4 a, float4 b) { return a; }");
    s.gpu("__device__ float2 operator+(float2 a, float2 b) { return a; }");
    assert_eq!(s.m.items().len(), 2);
    let out = s.gpu("__device__ float2 operator+(float2 a, float2 b) { return b; }");
    assert!(out.defined[0].replaced);
    assert_eq!(s.m.items().len(), 2);
}

#[test]
fn launching_needs_parameters_gridlab_can_pass() {
    let mut s = Session::new();
    s.gpu("union P { float x; int i; };\n__global__ void by_value(float *a, P p) { a[0] = p.x; }");
    let err = s.m.gpu_only_kernel("by_value").unwrap().launchable("by_value").unwrap_err();
    assert_eq!(err.message, "gridlab cannot pass parameter `p` of `by_value`: its type is `P`");
    // A template kernel is the front end's, launched as `scale<float><<<...>>>`.
    s.gpu("template <typename T> __global__ void scale(T *a, T s) { a[0] *= s; }");
    assert!(s.m.template("scale").is_some() && s.m.gpu_only_kernel("scale").is_none());
    assert_eq!(
        s.m.instantiate("scale", vec![], Span::default()).unwrap_err()[0].message,
        "`scale` needs a value for its template parameter `T`"
    );
    s.gpu(HALF);
    let err = s.m.gpu_only_kernel("k").unwrap().launchable("k").unwrap_err();
    assert!(err.message.contains("parameter `v` of `k`: its type is `__half *`"), "{}", err.message);
    s.gpu("__global__ void ok(const float *__restrict__ a, double *b, unsigned n) { __nanosleep(n); }");
    let f = s.m.gpu_only_kernel("ok").unwrap().launchable("ok").unwrap();
    let params: Vec<String> = f.params.iter().map(|p| format!("{} {}", p.ty.c_name(), p.name)).collect();
    assert_eq!(params, ["const float * a", "double * b", "unsigned int n"]);
    assert_eq!(s.gpu_only("ok").unwrap().construct, "`__nanosleep`");
}

#[test]
fn the_simulators_refusal_names_the_construct_and_its_line() {
    let mut s = Session::new();
    s.gpu(HALF);
    let d = s.m.gpu_only_kernel("k").unwrap().sim_refusal("k");
    // The message wraps at words under its start; read it as one line.
    let text = d.to_plain(&s.map).replace("\n       ", " ");
    assert!(
        text.starts_with("error: the simulator cannot run `k`: it uses `__half`, which runs on the GPU only"),
        "{text}"
    );
    assert!(text.contains("<input 1>:1:19"), "{text}");
    assert!(text.contains("`:backend gpu`"), "{text}");
}

#[test]
fn other_constructs_outside_the_subset() {
    for (text, construct) in [
        ("__global__ void k(int *a) {\n again: a[0]++;\n if (a[0] < 3) goto again;\n}", "a backward `goto`"),
        ("#define LOG(...) printf(__VA_ARGS__)", "variadic macros"),
        ("__global__ void k(unsigned *a) { a[0] = __vabsdiff4(a[0], a[1]); }", "`__vabsdiff4`"),
        ("namespace a { __global__ void k(float *p) { p[0] = 1; } }", "a kernel inside a namespace"),
        ("__device__ const char *name(int i) { return i ? \"odd\" : \"even\"; }", "string literals outside printf"),
        ("__device__ int fact(int n) { return n <= 1 ? 1 : n * fact(n - 1); }", "recursion"),
        ("__global__ void k(float *a) { half2 p; a[0] = 1.0f; }", "`half2`"),
        ("union U { float f; unsigned u; };", "unions"),
    ] {
        let mut s = Session::new();
        let out = s.gpu(text);
        assert_eq!(out.gpu_only.first().map(|g| g.1.as_str()), Some(construct), "{text}");
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 128, ..Default::default() })]

    /// The GPU's path never panics either, whatever is typed: mutations of a GPU-only snippet.
    #[test]
    fn the_gpu_path_survives_mangled_code(
        cut in 0usize..400,
        junk in "[ -~\n]{0,12}",
    ) {
        let base = "struct P { float x; };\ntemplate <typename T> __device__ T sq(T x) { return x * x; }\n\
                    template <class T> struct S { __device__ operator T *() { extern __shared__ int m[]; return (T *)m; } };\n\
                    template <> struct S<double> { __device__ operator double *() { extern __shared__ double d[]; return d; } };\n\
                    __global__ void k(float4 *v, P p, int n) { switch (n) { case 0: v[0].x = sq(p.x); } }\n\
                    __global__ void plain(float *a) { float *s = S<float>(); s[0] = a[0]; a[0] = s[0] + 1.0f; }";
        let cut = cut.min(base.len());
        let text = format!("{}{junk}{}", &base[..cut], &base[cut..]);
        let mut s = Session::new();
        let _ = s.add(&text, true);
        let _ = s.add("__global__ void k2(float *a) { a[0] = sq(a[0]); }", true);
    }
}

/// The CUDA samples' reduction: a struct template (`SharedMemory<T>`, with a `template <>`
/// specialisation) used by a template kernel. On the GPU too, a launch with explicit arguments,
/// `reduce0<int><<<...>>>`, makes the instance as the simulator's kernel, which either backend
/// runs.
#[test]
fn a_template_kernel_using_a_struct_template_is_instantiated_for_both_backends() {
    let mut s = Session::new();
    s.gpu(
        "template <class T>\nstruct SharedMemory {\n  __device__ inline operator T *() {\n    extern __shared__ int __smem[];\n    return (T *)__smem;\n  }\n};\n\ntemplate <>\nstruct SharedMemory<double> {\n  __device__ inline operator double *() {\n    extern __shared__ double __smem_d[];\n    return (double *)__smem_d;\n  }\n};",
    );
    s.gpu("template <class T>\n__global__ void reduce0(T *g_idata, T *g_odata, unsigned int n) {\n  T *sdata = SharedMemory<T>();\n  unsigned int tid = threadIdx.x;\n  unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;\n  sdata[tid] = (i < n) ? g_idata[i] : 0;\n  __syncthreads();\n  if (tid == 0) g_odata[blockIdx.x] = sdata[0];\n}");
    for (arg, name) in [("int", "reduce0<int>"), ("double", "reduce0<double>")] {
        let toks = crate::cuda::lexer::lex(0, arg).unwrap();
        assert_eq!(s.m.instantiate("reduce0", vec![toks], Span::default()).expect("made"), name);
        assert!(s.m.kernel(name).is_some() && s.m.gpu_only_kernel(name).is_none(), "{name}");
        assert!(s.m.launched_instances().any(|i| i.name == name));
    }
    // The struct template and its specialisation reach NVRTC as written.
    let texts: Vec<&str> = s.m.items().iter().map(|i| i.text.as_str()).collect();
    assert!(texts.iter().any(|t| t.starts_with("template <class T>\nstruct SharedMemory {")), "{texts:?}");
    assert!(texts.iter().any(|t| t.starts_with("template <>\nstruct SharedMemory<double> {")), "{texts:?}");
}

/// A struct template with something only the GPU compiles (a member template): a launch with
/// explicit arguments gets the instance as a GPU-only kernel that NVRTC makes by name, with the
/// signature the launch checks need, instead of an error.
#[test]
fn a_template_kernel_using_a_gpu_only_struct_template_is_instantiated_for_the_gpu() {
    let mut s = Session::new();
    s.gpu(
        "template <class T>\nstruct SharedMemory {\n  template <class U> __device__ U *as() { extern __shared__ int __smem[]; return (U *)__smem; }\n  __device__ inline operator T *() {\n    extern __shared__ int __smem[];\n    return (T *)__smem;\n  }\n};",
    );
    s.gpu("template <class T>\n__global__ void reduce0(T *g_idata, T *g_odata, unsigned int n) {\n  T *sdata = SharedMemory<T>();\n  unsigned int tid = threadIdx.x;\n  sdata[tid] = g_idata[tid];\n  __syncthreads();\n  if (tid == 0) g_odata[blockIdx.x] = sdata[0];\n}");
    let int = crate::cuda::lexer::lex(0, "int").unwrap();
    let name = s.m.instantiate("reduce0", vec![int], Span::default()).expect("the GPU makes the instance");
    assert_eq!(name, "reduce0<int>");
    let g = s.m.gpu_only_kernel("reduce0<int>").expect("a GPU-only instance");
    assert_eq!(g.construct, "templates");
    let f = g.launchable("reduce0<int>").expect("its parameters can be passed");
    let params: Vec<String> = f.params.iter().map(|p| format!("{} {}", p.ty.c_name(), p.name)).collect();
    assert_eq!(params, ["int * g_idata", "int * g_odata", "unsigned int n"]);
    assert!(s.m.launched_instances().any(|i| i.name == "reduce0<int>"));
    // The simulator, asked to launch it, names what it lacks.
    let refusal = g.sim_refusal("reduce0<int>").to_plain(&s.map).replace("\n       ", " ");
    assert!(refusal.contains("it uses templates, which runs on the GPU only"), "{refusal}");
}
