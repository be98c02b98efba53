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
