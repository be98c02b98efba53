//! Hostile and endless input: gridlab ends with a message and an exit status, never a crash,
//! an exhausted memory or a lost failure.

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::harness::{binary, gridlab, root, wait};

fn command() -> Command {
    let mut cmd = Command::new(binary());
    cmd.current_dir(root()).env("NO_COLOR", "1").env_remove("COLUMNS").stdout(Stdio::piped()).stderr(Stdio::null());
    cmd
}

#[test]
fn endless_input_on_stdin_is_refused_after_a_bounded_read() {
    let zero = std::fs::File::open("/dev/zero").unwrap();
    let child = command().args(["--no-lesson", "--backend", "sim"]).stdin(zero).spawn().unwrap();
    let (code, out) = wait(child, Duration::from_secs(30));
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("<stdin>:1: a line longer than 1 MiB; stopped reading"), "{out}");
}

/// Run gridlab with `args` and `input` on stdin (written from a thread, which may find the pipe
/// closed when gridlab stops reading early).
fn run_stdin(args: &[&str], input: Vec<u8>) -> (i32, String) {
    let mut child = command().args(args).stdin(Stdio::piped()).spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::Builder::new()
        .name("stdin".into())
        .spawn(move || {
            use std::io::Write;
            let _ = stdin.write_all(&input);
        })
        .unwrap();
    let out = wait(child, Duration::from_secs(60));
    writer.join().unwrap();
    out
}

#[test]
fn load_of_an_endless_or_binary_file_is_refused() {
    let (code, out) = run_stdin(&["--no-lesson", "--backend", "sim"], b":load /dev/zero\n".to_vec());
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("cannot read /dev/zero: it is larger than 16 MiB"), "{out}");
}

#[test]
fn a_script_that_loads_itself_is_an_error_not_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a.gridlab"), dir.path().join("b.gridlab"));
    // Names relative to the script's folder, as a replayed script may load.
    std::fs::write(&a, "let x = 1\n:load b.gridlab\n").unwrap();
    std::fs::write(&b, ":load a.gridlab\n").unwrap();
    let run = gridlab().args(["replay", "--backend", "sim"]).args([a.display().to_string()]).run();
    assert_eq!(run.code, 1, "{}\n{}", run.stdout, run.stderr);
    assert!(
        run.stdout.contains("is already being loaded") && run.stdout.contains("a script that loads itself"),
        "{}",
        run.stdout
    );
}

#[test]
fn one_input_larger_than_the_limit_is_refused_with_a_message() {
    // A kernel of 120,000 lines (about 1.3 MB): refused by size; 60,000 lines check and run.
    let big = format!("__global__ void k(int *a) {{\n{}}}\n", "a[0] += 1;\n".repeat(120_000));
    let (code, out) = run_stdin(&["--no-lesson", "--backend", "sim"], big.into_bytes());
    assert_eq!(code, 1);
    assert!(out.contains("longer than 1 MiB, the most gridlab takes in one input"), "{}", &out[..500.min(out.len())]);
}

#[test]
fn an_explicit_gpu_backend_that_cannot_be_had_is_an_error_not_a_pass_on_the_simulator() {
    // Device 99 exists on no machine, so this holds with a GPU or without.
    let script = "tests/scripts/01-first-kernel.gridlab";
    for command in [vec!["replay", script], vec!["dev", "check", "tests/fixtures/course"]] {
        let run = gridlab().args(command.clone()).args(["--backend", "gpu", "--device", "99"]).run();
        assert_eq!(run.code, 2, "{command:?}: {}\n{}", run.stdout, run.stderr);
        assert!(
            run.stderr.contains("--backend gpu was asked for, but the GPU backend is not usable"),
            "{}",
            run.stderr
        );
    }
    // `auto` falls back, and says so.
    let run = gridlab().args(["replay", script, "--backend", "auto", "--device", "99"]).run();
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert!(run.stdout.starts_with("backend: sim (auto: "), "{}", run.stdout);
}

#[test]
fn a_replayed_lesson_of_a_course_folder_opens_its_own_course() {
    let dir = tempfile::tempdir().unwrap();
    let course = dir.path().join("course");
    std::fs::create_dir(&course).unwrap();
    std::fs::copy(root().join("tests/fixtures/course/01-fill.md"), course.join("01-fill.md")).unwrap();
    let lesson = "+++\ntitle = \"Where am I\"\nsummary = \"Which course is this?\"\n+++\n\nA lesson that opens another.\n\n## Lessons\n\n```gridlab\n:lesson 1\n```\n";
    std::fs::write(course.join("02-where.md"), lesson).unwrap();
    let data = dir.path().join("data");
    for command in [
        vec!["replay".to_string(), course.display().to_string()],
        vec!["dev".into(), "check".into(), course.display().to_string()],
    ] {
        let run =
            gridlab().args(command).args(["--backend", "sim"]).env("XDG_DATA_HOME", &data.display().to_string()).run();
        assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
        assert!(run.stdout.contains("Lesson 1 of 2: Fill an array"), "{}", run.stdout);
        // Someone else's lesson does not move the learner's place in any course.
        assert!(!data.join("gridlab").exists(), "a replay wrote progress under {}", data.display());
    }
}

#[test]
fn a_replayed_script_leaves_saved_progress_alone() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("lessons.gridlab");
    std::fs::write(
        &script,
        ":lesson 2
:next
",
    )
    .unwrap();
    let data = dir.path().join("data");
    let run = gridlab()
        .args(["replay", &script.display().to_string(), "--backend", "sim"])
        .env("XDG_DATA_HOME", &data.display().to_string())
        .run();
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert!(run.stdout.contains("Lesson 2 of"), "{}", run.stdout);
    assert!(!data.join("gridlab").exists(), "a replayed script wrote progress under {}", data.display());
}

#[test]
fn a_closed_stdout_keeps_the_failure_status() {
    // `gridlab replay failing.gridlab | head -1`: far more output than a pipe holds, then a
    // failure; the reader goes away after one line.
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("failing.gridlab");
    std::fs::write(&script, format!("{}expect 1 == 2\n", ":help\n".repeat(200))).unwrap();
    for args in [vec!["replay".to_string(), script.display().to_string()], vec!["--no-lesson".to_string()]] {
        let mut cmd = command();
        cmd.args(&args).args(["--backend", "sim"]);
        if args[0] == "--no-lesson" {
            cmd.stdin(std::fs::File::open(&script).unwrap());
        }
        let mut child = cmd.spawn().unwrap();
        let mut stdout = child.stdout.take().unwrap();
        let mut first = [0u8; 16];
        stdout.read_exact(&mut first).unwrap();
        drop(stdout);
        let start = Instant::now();
        let status = loop {
            if let Some(s) = child.try_wait().unwrap() {
                break s;
            }
            assert!(start.elapsed() < Duration::from_secs(60), "gridlab did not finish");
            std::thread::sleep(Duration::from_millis(20));
        };
        assert_eq!(status.code(), Some(1), "{args:?}");
    }
}
