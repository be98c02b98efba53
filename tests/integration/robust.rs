//! Hostile and endless input: gridlab ends with a message and an exit status, never a crash,
//! an exhausted memory or a lost failure.

use std::io::Read;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::harness::{binary, gridlab, root};

/// Wait for `child` at most `limit`, then kill it: a test that would hang fails instead.
fn wait(mut child: Child, limit: Duration) -> (i32, String) {
    let start = Instant::now();
    let mut stdout = child.stdout.take().expect("piped stdout");
    let reader = std::thread::Builder::new()
        .name("stdout".into())
        .spawn(move || {
            let mut text = String::new();
            let _ = stdout.read_to_string(&mut text);
            text
        })
        .unwrap();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return (status.code().unwrap_or(-1), reader.join().unwrap());
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("gridlab did not finish in {limit:?}: {}", reader.join().unwrap());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

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
    std::fs::write(&a, format!("let x = 1\n:load {}\n", b.display())).unwrap();
    std::fs::write(&b, format!(":load {}\n", a.display())).unwrap();
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
