//! Bad input of every kind: each script under tests/errors/ is replayed and its transcript
//! snapshotted, so every message (place, problem, hint) is reviewed like code.

use super::harness::{gridlab, root};

fn transcript(name: &str) -> String {
    // A fixed allocation limit, so messages do not depend on this machine's memory.
    let run = gridlab()
        .args(["replay", &format!("tests/errors/{name}.gridlab"), "--max-alloc", "1G", "--backend", "sim"])
        .run();
    assert_eq!(run.code, 1, "tests/errors/{name}.gridlab should fail:\n{}", run.stdout);
    run.stdout
}

macro_rules! error_transcripts {
    ($($name:ident),* $(,)?) => {
        $(
            #[test]
            fn $name() {
                let file = stringify!($name).replace('_', "-");
                insta::assert_snapshot!(stringify!($name), transcript(&file));
            }
        )*

        #[test]
        fn every_error_script_has_a_test() {
            let known = [$(stringify!($name).replace('_', "-")),*];
            for entry in std::fs::read_dir(root().join("tests/errors")).unwrap() {
                let path = entry.unwrap().path();
                let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
                assert!(known.contains(&stem), "tests/errors/{stem}.gridlab has no test in errors.rs");
            }
        }
    };
}

error_transcripts!(
    kernel_errors,
    launch_errors,
    argument_errors,
    statement_errors,
    allocation_errors,
    cost_errors,
    habit_errors,
    finding_advice,
    extreme_errors,
    symbol_errors,
    view_errors,
    template_errors,
    python_errors,
);
