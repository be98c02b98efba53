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
    assert_eq!(run.code, 0, "{}", run.stdout);
    assert!(run.stdout.contains("auto picks       gpu"), "{}", run.stdout);
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
