//! `gridlab replay`: the scripts in tests/scripts pass, output is deterministic, reports work.

use super::harness::{gridlab, root};

#[test]
fn every_script_in_tests_scripts_passes_on_the_simulator() {
    let run = gridlab().args(["replay", "tests/scripts", "--backend", "sim"]).run();
    assert_eq!(run.code, 0, "replay failed:\n{}\n{}", run.stdout, run.stderr);
    let scripts = std::fs::read_dir(root().join("tests/scripts")).unwrap().count();
    assert!(run.stdout.contains(&format!("{scripts} passed, 0 failed")), "{}", run.stdout);
}

#[test]
fn every_kernel_of_the_cuda_corpus_passes_on_the_simulator() {
    let run = gridlab().args(["replay", "tests/cuda-corpus", "--backend", "sim"]).run();
    assert_eq!(run.code, 0, "replay failed:\n{}\n{}", run.stdout, run.stderr);
    let scripts = std::fs::read_dir(root().join("tests/cuda-corpus")).unwrap().count();
    assert!(scripts >= 30, "the corpus has {scripts} scripts");
    assert!(run.stdout.contains(&format!("{scripts} passed, 0 failed")), "{}", run.stdout);
}

#[test]
fn the_same_seed_gives_byte_identical_output() {
    let once = gridlab().args(["replay", "tests/scripts/02-race.gridlab", "--seed", "5"]).run();
    let twice = gridlab().args(["replay", "tests/scripts/02-race.gridlab", "--seed", "5"]).run();
    assert_eq!(once.code, 0, "{}", once.stdout);
    assert_eq!(once.stdout, twice.stdout);
}

#[test]
fn the_racy_kernel_transcript() {
    let run = gridlab().args(["replay", "tests/scripts/01-first-kernel.gridlab", "--backend", "sim"]).run();
    assert_eq!(run.code, 0);
    insta::assert_snapshot!(run.stdout);
}

#[test]
fn a_failed_expect_exits_1_and_names_the_elements() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("fail.gridlab");
    std::fs::write(&script, "let a = arange(10)\nexpect a == 0\nexpect sum(a) == 45\n").unwrap();
    let run = gridlab().args(["replay", script.to_str().unwrap()]).run();
    assert_eq!(run.code, 1);
    assert!(run.stdout.contains("expect failed"), "{}", run.stdout);
    assert!(run.stdout.contains("a[1]"), "{}", run.stdout);
    assert!(run.stdout.contains("0 passed, 1 failed"), "{}", run.stdout);
}

#[test]
fn junit_report_has_one_case_per_script() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("good.gridlab"), "let a = ones(3)\nexpect sum(a) == 3\n").unwrap();
    std::fs::write(dir.path().join("bad.gridlab"), "let a = ones(3)\nexpect sum(a) == 4\n").unwrap();
    let report = dir.path().join("report.xml");
    let run = gridlab().args(["replay", dir.path().to_str().unwrap(), "--junit", report.to_str().unwrap()]).run();
    assert_eq!(run.code, 1);
    let xml = std::fs::read_to_string(report).unwrap();
    assert!(xml.contains("tests=\"2\" failures=\"1\""), "{xml}");
    assert_eq!(xml.matches("<testcase ").count(), 2);
    assert!(xml.contains("expect sum(a) == 4"), "{xml}");
}

#[test]
fn usage_errors_exit_2() {
    let missing = gridlab().args(["replay", "no/such/file.gridlab"]).run();
    assert_eq!(missing.code, 2);
    assert!(missing.stderr.contains("no such file or folder"), "{}", missing.stderr);
    let empty = tempfile::tempdir().unwrap();
    let run = gridlab().args(["replay", empty.path().to_str().unwrap()]).run();
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("no .gridlab scripts"), "{}", run.stderr);
    let bad_flag = gridlab().args(["replay", "tests/scripts", "--backend", "tpu"]).run();
    assert_eq!(bad_flag.code, 2);
}

#[test]
fn save_then_load_replays_the_session() {
    let dir = tempfile::tempdir().unwrap();
    let saved = dir.path().join("saved.gridlab");
    let script = format!(
        "__global__ void k(float *a) {{ a[threadIdx.x] = threadIdx.x; }}\nlet a = zeros(4)\nk<<<1, 4>>>(a)\n:seed 9\n:save {}\n",
        saved.display()
    );
    let first = gridlab().stdin(&script).run();
    assert_eq!(first.code, 0, "{}", first.stdout);
    let text = std::fs::read_to_string(&saved).unwrap();
    assert!(text.contains("k<<<1, 4>>>(a)") && text.contains(":seed 9"), "{text}");
    let again = gridlab().stdin(&format!(":load {}\nexpect a == arange(4)\n", saved.display())).run();
    assert_eq!(again.code, 0, "{}", again.stdout);
}

/// The tour in the README is what gridlab prints: `assets/tour.txt` is the replay of
/// `assets/tour.gridlab` on the simulator (deterministic, so compared byte for byte), and the
/// README's excerpt is taken from it.
#[test]
fn the_tour_transcript_is_what_gridlab_prints() {
    let run = gridlab().args(["replay", "assets/tour.gridlab", "--backend", "sim", "--color", "never"]).run();
    assert_eq!(run.code, 0, "the tour failed:\n{}\n{}", run.stdout, run.stderr);
    let recorded = std::fs::read_to_string(root().join("assets/tour.txt")).unwrap();
    for (k, (now, then)) in run.stdout.lines().zip(recorded.lines()).enumerate() {
        assert_eq!(
            now,
            then,
            "assets/tour.txt differs at line {}: record it again with\n  cargo run --release -- replay assets/tour.gridlab --backend sim --color never > assets/tour.txt",
            k + 1
        );
    }
    assert_eq!(run.stdout, recorded, "assets/tour.txt has a different length: record it again");

    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let tour = readme.split("## A tour").nth(1).expect("the README has a tour");
    let excerpt = tour.split("```text\n").nth(1).and_then(|t| t.split("```").next()).expect("with a text block");
    // Every line of the excerpt comes from the transcript, in order.
    let mut lines = recorded.lines();
    for line in excerpt.lines().filter(|l| !l.trim().is_empty()) {
        assert!(
            lines.any(|l| l == line),
            "the README's tour shows {line:?}, which assets/tour.txt does not (in that order)"
        );
    }
}

const RACY: &str = "__global__ void racy(float *a) { a[0] += 1.0f; }\nlet a = zeros(1)\n";
const PAST_END: &str = "__global__ void over(float *a, int n) { a[threadIdx.x] = 1.0f; }\nlet b = zeros(4)\n";

/// A launch whose finding nothing acknowledges fails the script, as compute-sanitizer's
/// `--error-exitcode` fails a test run: at the next launch, and at the end of the script.
#[test]
fn a_finding_nothing_acknowledges_fails_the_script() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        ("end.gridlab", format!("{RACY}racy<<<1, 64>>>(a)\n"), 1, "`racy<<<1, 64>>>(a)` had a race finding"),
        (
            "next.gridlab",
            format!("{RACY}{PAST_END}racy<<<1, 64>>>(a)\nover<<<1, 8>>>(b, 4)\nexpect finding out_of_bounds\n"),
            1,
            "add `expect finding race` after the launch",
        ),
        (
            "acknowledged.gridlab",
            format!(
                "{RACY}{PAST_END}racy<<<1, 64>>>(a)\nexpect finding race\nover<<<1, 8>>>(b, 4)\nexpect finding out_of_bounds\n"
            ),
            0,
            "PASS",
        ),
        ("clean.gridlab", format!("{PAST_END}over<<<1, 4>>>(b, 4)\n"), 0, "PASS"),
    ];
    for (name, text, code, want) in cases {
        let script = dir.path().join(name);
        std::fs::write(&script, text).unwrap();
        let run = gridlab().args(["replay", script.to_str().unwrap(), "--backend", "sim"]).run();
        assert_eq!(run.code, code, "{name}:\n{}", run.stdout);
        if code == 0 {
            assert!(run.stdout.contains("PASS"), "{name}:\n{}", run.stdout);
        } else {
            assert!(run.stdout.contains(want), "{name}: wanted {want:?}:\n{}", run.stdout);
            assert!(
                run.stdout.contains(&format!("{name}:3")) || run.stdout.contains(&format!("{name}:5")),
                "{name}: names the launch's line:\n{}",
                run.stdout
            );
        }
    }
    // Piped stdin is a script too.
    let run = gridlab().args(["--no-lesson", "--backend", "sim"]).stdin(&format!("{RACY}racy<<<1, 64>>>(a)\n")).run();
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert!(run.stdout.contains("nothing acknowledged"), "{}", run.stdout);
}

/// A replayed script is someone else's: its `:load`, `:save` and `:export` reach only its own
/// folder, and nothing writes over an existing file without `--force`.
#[test]
fn a_replayed_script_touches_only_files_in_its_own_folder() {
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().join("planted.gridlab");
    let script = dir.path().join("hostile.gridlab");
    let text = format!(
        "let a = ones(2)\n:save {}\n:save ../escaped.gridlab\n:load /etc/hostname\n:export {}\n:save kept.gridlab\n:save kept.gridlab\n",
        target.display(),
        outside.path().join("out.md").display()
    );
    std::fs::write(&script, text).unwrap();
    let run =
        gridlab().current_dir(outside.path()).args(["replay", script.to_str().unwrap(), "--backend", "sim"]).run();
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert_eq!(run.stdout.matches("a replayed script may only").count(), 4, "{}", run.stdout);
    assert!(!target.exists() && !outside.path().join("out.md").exists());
    assert!(!dir.path().parent().unwrap().join("escaped.gridlab").exists());
    // A relative name lands beside the script, not in the folder replay was started from.
    assert!(dir.path().join("kept.gridlab").exists(), "{}", run.stdout);
    assert!(run.stdout.contains("exists: `:save --force kept.gridlab` writes over it"), "{}", run.stdout);
    let forced = dir.path().join("forced.gridlab");
    std::fs::write(&forced, ":save --force kept.gridlab\n").unwrap();
    let run = gridlab().args(["replay", forced.to_str().unwrap(), "--backend", "sim"]).run();
    assert_eq!(run.code, 0, "{}", run.stdout);
    assert!(run.stdout.contains("saved 0 inputs to"), "{}", run.stdout);
}

/// What the learner types may name any file, but still never writes over one silently.
#[test]
fn save_at_the_prompt_does_not_write_over_a_file_without_force() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("mine.gridlab");
    std::fs::write(&file, "# my work\n").unwrap();
    let run = gridlab().args(["--no-lesson"]).stdin(&format!("let a = ones(2)\n:save {}\n", file.display())).run();
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert!(run.stdout.contains("writes over it"), "{}", run.stdout);
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "# my work\n");
    let run =
        gridlab().args(["--no-lesson"]).stdin(&format!("let a = ones(2)\n:save --force {}\n", file.display())).run();
    assert_eq!(run.code, 0, "{}", run.stdout);
    assert!(std::fs::read_to_string(&file).unwrap().contains("let a = ones(2)"));
}

/// Escape sequences from a script (in an input, in a kernel's printf) reach the terminal
/// escaped, never raw: a course cannot clear, recolour or retitle the learner's terminal.
#[test]
fn control_characters_from_a_script_are_shown_escaped() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("escapes.gridlab");
    let text = "let a = ones(2)\nlet b\u{1b}]0;pwned\u{7} = ones(2)\n\
                __global__ void k(int *a) { printf(\"%c[2J%c]0;title%c\\n\", 27, 27, 7); }\n\
                let c = zeros(1, i32)\nk<<<1, 1>>>(c)\n";
    std::fs::write(&script, text).unwrap();
    let run = gridlab().args(["replay", script.to_str().unwrap(), "--backend", "sim"]).run();
    assert_eq!(run.code, 1, "the input with a control character is refused:\n{}", run.stdout);
    assert!(
        !run.stdout.contains('\u{1b}') && !run.stdout.contains('\u{7}'),
        "raw control characters:\n{:?}",
        run.stdout
    );
    assert!(run.stdout.contains("this input holds a control character (\\x1b)"), "{}", run.stdout);
    assert!(run.stdout.contains("\\x1b[2J\\x1b]0;title\\x07"), "printf output is escaped:\n{}", run.stdout);
}
