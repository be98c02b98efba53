//! The GPU backend. Tests that need a GPU run only with `GRIDLAB_GPU=1` and say that they were
//! skipped otherwise; the rest (doctor without a GPU) run everywhere.

use super::harness::{gridlab, root};

fn gpu_enabled(test: &str) -> bool {
    let on = std::env::var("GRIDLAB_GPU").is_ok_and(|v| v == "1");
    if !on {
        eprintln!("skipped {test}: needs a GPU (run with GRIDLAB_GPU=1 on a machine with one)");
    }
    on
}

#[test]
fn doctor_without_a_gpu_says_what_to_install() {
    if std::env::var("GRIDLAB_GPU").is_ok_and(|v| v == "1") {
        eprintln!("skipped: this machine has a GPU");
        return;
    }
    let run = gridlab().args(["doctor"]).run();
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert!(run.stdout.contains("auto picks       sim"), "{}", run.stdout);
    assert!(run.stdout.contains("no usable GPU:"), "{}", run.stdout);
}

#[test]
fn doctor_finds_the_gpu() {
    if !gpu_enabled("doctor_finds_the_gpu") {
        return;
    }
    let run = gridlab().args(["doctor"]).run();
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert!(run.stdout.contains("auto picks       gpu"), "{}", run.stdout);
    let run = gridlab().args(["--backend", "gpu"]).stdin(":device\n").run();
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert!(run.stdout.contains("compute capability") && run.stdout.contains("SMs"), "{}", run.stdout);
}

#[test]
fn test_scripts_pass_on_the_gpu() {
    if !gpu_enabled("test_scripts_pass_on_the_gpu") {
        return;
    }
    let run = gridlab().args(["replay", "tests/scripts", "--backend", "gpu"]).run();
    assert_eq!(run.code, 0, "{}", run.stdout);
}

#[test]
fn the_cuda_corpus_passes_on_the_gpu() {
    if !gpu_enabled("the_cuda_corpus_passes_on_the_gpu") {
        return;
    }
    let run = gridlab().args(["replay", "tests/cuda-corpus", "--backend", "gpu"]).run();
    assert_eq!(run.code, 0, "{}", run.stdout);
}

#[test]
fn faults_are_survived_on_the_gpu() {
    if !gpu_enabled("faults_are_survived_on_the_gpu") {
        return;
    }
    for entry in std::fs::read_dir(root().join("tests/faults")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "gridlab") {
            continue;
        }
        let run = gridlab().args(["replay", path.to_str().unwrap(), "--backend", "gpu", "--timeout", "3"]).run();
        assert!(!run.stdout.contains("expect failed"), "{}:\n{}", path.display(), run.stdout);
        assert!(run.stdout.matches("\nok\n").count() >= 1, "{}:\n{}", path.display(), run.stdout);
    }
}

#[test]
fn compare_without_a_gpu_exits_2_and_says_why() {
    if std::env::var("GRIDLAB_GPU").is_ok_and(|v| v == "1") {
        eprintln!("skipped: this machine has a GPU");
        return;
    }
    let run = gridlab().args(["replay", "--compare", "sim,gpu", "tests/scripts/01-first-kernel.gridlab"]).run();
    assert_eq!(run.code, 2, "{}{}", run.stdout, run.stderr);
    assert!(run.stderr.contains("cannot compare with the GPU: the GPU backend is not usable: "), "{}", run.stderr);
}

#[test]
fn compare_takes_only_sim_and_gpu() {
    let run = gridlab().args(["replay", "--compare", "sim,sim", "tests/scripts"]).run();
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("only `sim,gpu` can be compared"), "{}", run.stderr);
}

#[test]
fn test_scripts_are_the_same_on_sim_and_gpu() {
    if !gpu_enabled("test_scripts_are_the_same_on_sim_and_gpu") {
        return;
    }
    let run = gridlab().args(["replay", "--compare", "sim,gpu", "tests/scripts"]).run();
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    let scripts = std::fs::read_dir(root().join("tests/scripts")).unwrap().count();
    let summary = format!("compared {scripts} scripts: {scripts} the same on sim and gpu");
    assert!(run.stdout.trim_end().ends_with(&summary), "{}", run.stdout);
}

#[test]
fn compare_runs_on_the_gpu() {
    if !gpu_enabled("compare_runs_on_the_gpu") {
        return;
    }
    let script = "__global__ void racy(float *a, int n) {\n    for (int i = 0; i < n; i++) a[i] += 0.5f;\n}\n__global__ void fixed(float *a, int n) {\n    for (int i = 0; i < n; i++) atomicAdd(&a[i], 0.5f);\n}\nlet a = [0, 1]\n:compare racy<<<64, 256>>>(a, len(a)) vs fixed<<<64, 256>>>(a, len(a)) x4\n";
    let run = gridlab().args(["--backend", "gpu"]).stdin(script).run();
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert_eq!(run.stdout.matches("│ gpu 4 ").count(), 2, "{}", run.stdout);
    assert_eq!(run.stdout.matches("│ sim seed 2 ").count(), 2, "{}", run.stdout);
    assert!(run.stdout.contains("4 runs on "), "{}", run.stdout);
    assert!(run.stdout.contains("all 4 runs on "), "the atomic kernel is right on the GPU:\n{}", run.stdout);
}

#[test]
fn cuda_outside_the_simulators_subset_runs_on_the_gpu() {
    if !gpu_enabled("cuda_outside_the_simulators_subset_runs_on_the_gpu") {
        return;
    }
    let run = gridlab().args(["replay", "tests/gpu/gpu_only.gridlab", "--backend", "gpu"]).run();
    assert_eq!(run.code, 0, "{}", run.stdout);
    let out = &run.stdout;
    // Structs and templates run on the simulator too now: only what deduces a template argument
    // is GPU-only.
    assert!(out.contains("defined type Particle"), "{out}");
    assert!(out.contains("defined device function twice"), "{out}");
    assert!(!out.contains("note: `twice`"), "{out}");
    assert!(out.contains("note: `step` uses "), "{out}");
    assert!(out.contains("which the simulator does not run; it runs on the GPU"), "{out}");
    assert!(
        out.contains("defined kernel step(float *out, const float *pos, const float * __restrict__ vel, int n)"),
        "{out}"
    );
    assert_eq!(out.matches("\nok\n").count() + usize::from(out.starts_with("ok\n")), 3, "{out}");
}

#[test]
fn gpu_only_kernels_across_backends_and_their_errors() {
    if !gpu_enabled("gpu_only_kernels_across_backends_and_their_errors") {
        return;
    }
    let script = std::fs::read_to_string(root().join("tests/gpu/gpu_only.gridlab")).unwrap();
    let more = "\
:kernels
# Arguments are checked as for any kernel.
step<<<4, 256>>>(out, pos, vel)
# A struct by value takes a list of its members; a template kernel's type is deduced from its
# arguments.
__global__ void by_value(float *a, Particle p) { a[0] = p.x; a[1] = p.v; }
by_value<<<1, 1>>>(out, 1)
by_value<<<1, 1>>>(out, [5, 6])
expect out[0:2] == [5, 6]
template <typename T> __global__ void scale(T *a, T s) { a[threadIdx.x] *= s; }
scale<<<1, 1>>>(out, 2)
# NVRTC's errors point at the learner's line.
__global__ void bad(const float *v, float *o) {
    o[0] = __ldg(v) + not_declared_anywhere;
}
# On the simulator: refused with the reason; the rest of the session keeps working.
:backend sim
step<<<4, 256>>>(out, pos, vel, len(out))
fill<<<4, 256>>>(out, len(out))
expect out[999] == 1
# Back on the GPU the GPU-only kernels are loaded again.
:backend gpu
step<<<4, 256>>>(out, pos, vel, len(out))
expect out[999] == 2998.5
";
    let run = gridlab().args(["--backend", "gpu"]).stdin(&format!("{script}{more}")).run();
    let out = &run.stdout;
    assert!(out.contains("__global__ (GPU only)"), "{out}");
    assert!(out.contains("`step` takes 4 arguments, but 3 were given"), "{out}");
    assert!(out.contains("parameter `p` is a `Particle`: pass its members as a list"), "{out}");
    assert!(out.contains("scale<float><<<1, 1>>>: 1 x 1 = 1 thread on"), "{out}");
    assert!(out.contains("not_declared_anywhere"), "{out}");
    let text = format!("{script}{more}");
    let line = text.lines().position(|l| l.contains("o[0] = __ldg(v) + not_declared_anywhere")).unwrap() + 1;
    assert!(out.contains(&format!("<stdin>:{line}:5")), "NVRTC's error is on the learner's line {line}:\n{out}");
    assert!(out.contains("the simulator cannot run `step`: it uses "), "{out}");
    assert!(out.contains("which runs on the GPU only"), "{out}");
    assert!(out.contains("`:backend gpu`"), "{out}");
    assert!(!out.contains("expect failed"), "{out}");
}

#[test]
fn constant_memory_set_from_statements_and_printf_checks_run_on_the_gpu() {
    if !gpu_enabled("constant_memory_set_from_statements_and_printf_checks_run_on_the_gpu") {
        return;
    }
    for backend in ["gpu", "sim"] {
        let run = gridlab().args(["replay", "tests/gpu/constant-memory.gridlab", "--backend", backend]).run();
        assert_eq!(run.code, 0, "{backend}: {}{}", run.stdout, run.stderr);
        assert!(run.stdout.contains("note: `coef` is declared anew"), "{backend}: {}", run.stdout);
    }
    // A failing check shows what the GPU printed.
    let script =
        "__global__ void hi() { printf(\"hi from %d\\n\", threadIdx.x); }\nhi<<<1, 2>>>()\nexpect printed \"bye\"\n";
    let run = gridlab().args(["--backend", "gpu"]).stdin(script).run();
    assert!(
        run.stdout.contains("expect failed: \"bye\" is not in what the last launch printed (2 lines):"),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("  | hi from "), "{}", run.stdout);
}

#[test]
fn pointers_into_buffers_launch_on_the_gpu() {
    if !gpu_enabled("pointers_into_buffers_launch_on_the_gpu") {
        return;
    }
    // The device pointer moved on by the view's bytes: writes land in the buffer, reads before
    // the view's start see the buffer's elements, and a write past the end is seen in the guard
    // and named by the buffer's own indices.
    let script = "\
__global__ void put(float *p, int n, float v) { if (threadIdx.x < n) p[threadIdx.x] = v; }
__global__ void back(double *p) { p[threadIdx.x] = p[(int)threadIdx.x - 2] + 1.0; }
let a = zeros(1024)
put<<<1, 32>>>(a + 4, 2, 1)
put<<<1, 32>>>(a[1000:], 3, 2)
put<<<1, 32>>>(len(a) / 2 + a, 1, 3)
expect a[4:6] == [1, 1]
expect a[1000:1003] == [2, 2, 2]
expect a[512] == 3
expect sum(a) == 2 + 6 + 3
let d = arange(8, f64)
back<<<1, 2>>>(d + 6)
expect d == [0, 1, 2, 3, 4, 5, 5, 6]
let m = zeros((4, 8), i32)
__global__ void row(int *r, int v) { r[threadIdx.x] = v; }
row<<<1, 8>>>(m[2], 7)
expect m[2] == full(8, 7, i32)
expect sum(m) == 56
:time put<<<1, 32>>>(a + 8, 1, 1)
:race put<<<1, 32>>>(a + 8, 1, 1)
put<<<1, 8>>>(a + 1020, 8, 9)
expect finding out_of_bounds
expect a[1020:] == full(4, 9)
";
    let run = gridlab().args(["--backend", "gpu"]).stdin(script).run();
    let out = &run.stdout;
    assert!(!out.contains("expect failed"), "{out}");
    assert!(!out.contains("error:"), "{out}");
    assert_eq!(out.matches("\nok\n").count() + usize::from(out.starts_with("ok\n")), 9, "{out}");
    // The finding wraps at words under its start; read it as one line.
    let flat = out.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(flat.contains("4 elements written past the end of `a` (length 1024): indices 1024..1027"), "{out}");
}
