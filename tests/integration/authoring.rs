//! A course author's mistakes, each a fixture course under `tests/fixtures/mistakes`: every one
//! is named with its file and line, `replay` and `dev check` agree, and the exit codes are the
//! ones `--help` states (2 for no course, 1 for problems in it).

use super::harness::{Run, gridlab};

const M: &str = "tests/fixtures/mistakes";

fn dev_check(case: &str, more: &[&str]) -> Run {
    let mut args = vec!["dev".to_string(), "check".into(), format!("{M}/{case}"), "--backend".into(), "sim".into()];
    args.extend(more.iter().map(|s| s.to_string()));
    gridlab().args(args).run()
}

#[test]
fn duplicate_lesson_numbers_are_refused_by_replay_and_dev_check() {
    let said = "duplicate-numbers/01-guard.md: lesson number 01 is also used by";
    let run = dev_check("duplicate-numbers", &["-q"]);
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    assert!(run.stderr.contains(said), "{}", run.stderr);
    let run = gridlab().args(["replay", &format!("{M}/duplicate-numbers"), "--backend", "sim", "-q"]).run();
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    assert!(run.stdout.contains(said), "{}", run.stdout);
    assert!(run.stdout.ends_with("replayed 2 lessons\n2 passed, 1 failed\n"), "{}", run.stdout);
}

#[test]
fn a_starter_must_compile_and_fail_for_the_exercises_reason() {
    let run = dev_check("starter-does-not-compile", &["-q"]);
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert!(
        run.stdout.contains("starter-does-not-compile/01-fill.md:32: the starter does not compile"),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("expected `;`"), "{}", run.stdout);
    let run = dev_check("starter-fails-for-nothing", &["-q"]);
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert!(
        run.stdout.contains("01-fill.md:32: the starter fails its check only with no kernel to run"),
        "{}",
        run.stdout
    );
    let run = gridlab().args(["dev", "check", "tests/fixtures/course", "--backend", "sim"]).run();
    assert!(run.stdout.contains("✓ the starter fails its check with a race finding"), "{}", run.stdout);
}

#[test]
fn an_error_block_that_compiles_names_its_file_and_line() {
    let run = dev_check("error-block-runs", &[]);
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert!(
        run.stdout.contains(
            "error-block-runs/01-limits.md:8: expected an error: the block says `error`, but this input compiled"
        ),
        "{}",
        run.stdout
    );
}

#[test]
fn dev_check_reads_one_file_goes_on_after_an_unreadable_lesson_and_exits_as_help_says() {
    // One lesson file, as replay takes it.
    let run = gridlab().args(["dev", "check", "tests/fixtures/course/01-fill.md", "--backend", "sim", "-q"]).run();
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert!(run.stdout.contains("checked 1 lesson (1 exercise)"), "{}", run.stdout);
    // Every problem, not only the first.
    let run = dev_check("unreadable-lesson", &["-q"]);
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    assert!(run.stderr.contains("unreadable-lesson/02-broken.md:8: a `solution` block belongs"), "{}", run.stderr);
    assert!(run.stdout.contains("03-weak.md:32: the starter fails its check only"), "{}", run.stdout);
    assert!(run.stdout.contains("1 sound, 1 with problems, 1 problem reading the course"), "{}", run.stdout);
    // 2 for no course, the same for all three commands; 1 for problems in one.
    for case in ["empty", "nosuch"] {
        let dir = format!("{M}/{case}");
        let runs = [
            gridlab().args(["dev", "check", &dir]).run(),
            gridlab().args(["replay", &dir]).run(),
            gridlab().args(["lessons", "--course", &dir]).env("XDG_DATA_HOME", "/nonexistent").run(),
        ];
        for run in runs {
            assert_eq!(run.code, 2, "{case}: {}{}", run.stdout, run.stderr);
        }
    }
    let dir = format!("{M}/unreadable-lesson");
    let data = tempfile::tempdir().unwrap();
    let run = gridlab().args(["lessons", "--course", &dir]).env("XDG_DATA_HOME", data.path().to_str().unwrap()).run();
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    assert!(run.stdout.contains("Fill an array"), "the readable lessons are listed: {}", run.stdout);
    let run = gridlab().args(["replay", &dir, "--backend", "sim", "-q"]).run();
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    let run = gridlab().args(["dev", "check", "tests/fixtures/course", "--backend", "sim", "-q"]).run();
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
}

#[test]
fn check_after_an_attempt_that_does_not_compile_says_so() {
    let data = tempfile::tempdir().unwrap();
    let broken = "__global__ void twice(float *a, int n) {\n    int i = threadIdx.x\n    a[i] *= 2;\n}\n";
    let right = "__global__ void twice(float *a, int n) {\n    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i < n) a[i] *= 2;\n}\n";
    let run = gridlab()
        .env("XDG_DATA_HOME", data.path().to_str().unwrap())
        .args(["--course", "tests/fixtures/course", "--backend", "sim", "learn", "1"])
        .stdin(&format!(":next\n{right}{broken}:check\n"))
        .run();
    assert_eq!(run.code, 1, "{}", run.stdout);
    let out = run.stdout.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(out.contains("✗ not yet: your `twice` did not compile (at <stdin>:6:1)"), "{out}");
    assert!(out.contains("the check would run the `twice` you defined before it"), "{out}");
    assert!(!run.stdout.contains("✓ passed"), "the previous kernel is not checked: {}", run.stdout);
}

#[test]
fn junit_groups_steps_by_lesson_and_says_what_failed() {
    let dir = tempfile::tempdir().unwrap();
    let xml_path = dir.path().join("r.xml");
    let run = dev_check("unreadable-lesson", &["-q", "--junit", xml_path.to_str().unwrap()]);
    assert_eq!(run.code, 1);
    let xml = std::fs::read_to_string(&xml_path).unwrap();
    assert!(xml.starts_with("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites "), "{xml}");
    assert!(xml.trim_end().ends_with("</testsuites>"), "{xml}");
    // Balanced suites and cases; one suite per lesson, cases named by step.
    assert_eq!(xml.matches("<testsuite ").count(), xml.matches("</testsuite>").count(), "{xml}");
    assert!(xml.contains("<testsuite name=\"tests/fixtures/mistakes/unreadable-lesson/01-fill.md\""), "{xml}");
    assert!(xml.contains("<testcase classname=\"01-fill\" name=\"step 2: Your turn\""), "{xml}");
    assert!(xml.contains("<testcase classname=\"03-weak\" name=\"step 2: Your turn\""), "{xml}");
    assert!(xml.contains("failure message=\"tests/fixtures/mistakes/unreadable-lesson/03-weak.md:32: the starter fails its check only with no kernel to run"), "{xml}");
    assert!(
        xml.contains(
            "failure message=\"tests/fixtures/mistakes/unreadable-lesson/02-broken.md:8: a `solution` block belongs"
        ),
        "{xml}"
    );
    assert!(!xml.contains("failure(s)"), "{xml}");
    for tag in ["testsuites", "testsuite", "testcase", "failure"] {
        let open = xml.matches(&format!("<{tag} ")).count() + xml.matches(&format!("<{tag}>")).count();
        let closed = xml.matches(&format!("</{tag}>")).count() + count_self_closed(&xml, tag);
        assert_eq!(open, closed, "<{tag}> balanced in {xml}");
    }
}

fn count_self_closed(xml: &str, tag: &str) -> usize {
    xml.match_indices(&format!("<{tag} "))
        .filter(|(i, _)| xml[*i..].split('>').next().is_some_and(|t| t.ends_with('/')))
        .count()
}
