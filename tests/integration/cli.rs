//! The executable's own behaviour: help, piped input, no arguments.

use super::harness::gridlab;

#[test]
fn piped_statements_run_like_a_script() {
    let run = gridlab().stdin("let a = arange(4)\na\nexpect a[3] == 3\n").run();
    assert_eq!(run.code, 0, "{}", run.stdout);
    assert!(run.stdout.contains(">>> let a = arange(4)"), "{}", run.stdout);
    assert!(run.stdout.contains("[0. 1. 2. 3.]"), "{}", run.stdout);
}

#[test]
fn piped_input_with_an_error_exits_1() {
    let run = gridlab().stdin("let a = zeros(\n").run();
    assert_eq!(run.code, 1, "{}", run.stdout);
}

#[test]
fn no_arguments_and_no_input_exits_cleanly() {
    let run = gridlab().run();
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
}

#[test]
fn help_lists_replay() {
    let run = gridlab().args(["--help"]).run();
    assert_eq!(run.code, 0);
    assert!(run.stdout.contains("replay"));
}

#[test]
fn piped_exit_and_quit_stop_reading() {
    for leave in ["exit", "quit()", ":q", ":quit"] {
        let run = gridlab().stdin(&format!("let a = arange(4)\n{leave}\nexpect a[3] == 99\nlet b = 1\n")).run();
        // The failing `expect` after it never ran: piped input stops at the first `exit`.
        assert_eq!(run.code, 0, "{leave}:\n{}", run.stdout);
        assert!(run.stdout.contains(&format!(">>> {leave}")), "{leave}:\n{}", run.stdout);
        assert!(!run.stdout.contains("expect a[3]"), "{leave}:\n{}", run.stdout);
    }
}

#[test]
fn exit_in_a_loaded_script_does_not_leave_the_prompt() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("with-exit.gridlab");
    std::fs::write(&script, "let a = arange(4)\nexit\nlet b = 2\n").unwrap();
    let run = gridlab().stdin(&format!(":load {}\nexpect b == 2\n", script.display())).run();
    assert_eq!(run.code, 0, "{}", run.stdout);
    assert!(run.stdout.contains("`exit` leaves the prompt; a script runs to its end"), "{}", run.stdout);
    assert!(run.stdout.contains(">>> expect b == 2\nok"), "{}", run.stdout);
}
