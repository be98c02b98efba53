//! Python programs as Numba's tutorials write them, run by `gridlab replay program.py`: the
//! host code in Python with gridlab's stand-in for `numba`, the kernels lowered to CUDA C and
//! run on the simulator. Skipped, with a message, where no `python3` with numpy is installed
//! (`.ci/run` installs numpy, so CI always runs them).

use super::harness::gridlab;

fn have_numpy() -> bool {
    let ok =
        std::process::Command::new("python3").args(["-c", "import numpy"]).output().is_ok_and(|o| o.status.success());
    if !ok {
        eprintln!("skipped: these tests need python3 with numpy (`python3 -m pip install numpy`)");
    }
    ok
}

fn replay(path: &str) -> super::harness::Run {
    gridlab().args(["replay", path, "--backend", "sim"]).run()
}

/// Replay `program`, written to a file `name` in a temporary folder, on the simulator.
fn replay_program(name: &str, program: &str) -> super::harness::Run {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(name);
    std::fs::write(&path, program).unwrap();
    replay(path.to_str().unwrap())
}

#[test]
fn the_first_tutorial_prints_what_it_prints_with_numba() {
    if !have_numpy() {
        return;
    }
    let run = replay("tests/python/10-seed-first-kernels.py");
    assert_eq!(run.code, 0, "{}", run.stdout);
    for line in [
        "Initial array: [0. 1.]",
        "Kernel launch: cudakernel0[1, 1](array)",
        "Updated array: [0.5 1.5]",
        "Initial array: [0. 0. 0. ... 0. 0. 0.]",
        "Updated array: [0.5 0.5 0.5 ... 0.5 0.5 0.5]",
        "The result is correct: True",
    ] {
        assert!(run.stdout.contains(line), "missing {line:?} in\n{}", run.stdout);
    }
    let run = replay("tests/python/11-seed-add-arrays.py");
    assert_eq!(run.code, 0, "{}", run.stdout);
    assert!(run.stdout.contains("[ 0.  3.  6.  9. 12. 15. 18. 21. 24. 27.]"), "{}", run.stdout);
}

#[test]
fn the_racy_tutorial_launch_reports_the_race_at_its_python_line() {
    if !have_numpy() {
        return;
    }
    let run = replay("tests/python/12-seed-race.py");
    assert_eq!(run.code, 0, "acknowledged by `# expect: race`:\n{}", run.stdout);
    assert!(run.stdout.contains("finding: data race on `array`"), "{}", run.stdout);
    assert!(
        run.stdout.contains("tests/python/12-seed-race.py:9:9"),
        "the Python line of `array[i] += 0.5`:\n{}",
        run.stdout
    );
    assert!(run.stdout.contains("        array[i] += 0.5"), "{}", run.stdout);
}

#[test]
fn an_unacknowledged_finding_a_failed_assert_and_an_exception_fail_the_program_at_their_lines() {
    if !have_numpy() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("broken.py");
    std::fs::write(
        &path,
        "from numba import cuda\nimport numpy as np\n\n@cuda.jit\ndef k(a):\n    for i in range(a.size):\n        a[i] += 1\n\na = np.zeros(4, np.float32)\nk[2, 32](a)\nassert a[0] == 1, 'one add'\n",
    )
    .unwrap();
    let run = replay(path.to_str().unwrap());
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert!(run.stdout.contains("end the launch's line with `# expect: race`"), "{}", run.stdout);
    assert!(
        run.stdout.contains("broken.py:11: assertion failed: `assert a[0] == 1, 'one add'` (one add)"),
        "{}",
        run.stdout
    );

    std::fs::write(&path, "import numpy as np\nx = np.zeros(3)\nprint(x[7])\n").unwrap();
    let run = replay(path.to_str().unwrap());
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert!(run.stdout.contains("broken.py:3: IndexError"), "{}", run.stdout);
}

#[test]
fn kernel_python_outside_numbas_subset_is_refused_at_its_line_and_the_program_stops() {
    if !have_numpy() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("lists.py");
    std::fs::write(
        &path,
        "from numba import cuda\nimport numpy as np\n\n@cuda.jit\ndef k(a):\n    xs = [1, 2, 3]\n    a[0] = xs[0]\n\na = np.zeros(4, np.float32)\nk[1, 1](a)\nprint('not reached')\n",
    )
    .unwrap();
    let run = replay(path.to_str().unwrap());
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert!(run.stdout.contains("lists are outside Numba's CUDA kernel subset"), "{}", run.stdout);
    assert!(run.stdout.contains("lists.py:6:10"), "{}", run.stdout);
    assert!(!run.stdout.contains("not reached"), "{}", run.stdout);
}

#[test]
fn a_plain_python_function_called_in_a_kernel_is_named_as_host_code_with_the_decorator_to_add() {
    if !have_numpy() {
        return;
    }
    let kernel = "@cuda.jit\ndef k(a):\n    i = cuda.grid(1)\n    if i < a.size:\n        a[i] = helper(a[i])\n";
    let said = "`helper` is a plain Python function (host code): a kernel cannot call it";
    // In a program, and at the prompt (a script), where the host function is typed first.
    let program = format!(
        "from numba import cuda\nimport numpy as np\n\ndef helper(x):\n    return x * 2\n\n{kernel}\na = np.ones(4, np.float32)\nk[1, 4](a)\n"
    );
    let run = replay_program("host_helper.py", &program);
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert!(run.stdout.contains(said), "{}", run.stdout);
    assert!(run.stdout.contains("host_helper.py:11:16"), "{}", run.stdout);
    assert!(run.stdout.contains("write `@cuda.jit(device=True)` above `def helper`"), "{}", run.stdout);
    let run = replay_text(&format!("from numba import cuda\n\ndef helper(x):\n    return x * 2\n\n{kernel}"), None);
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert!(run.stdout.contains(said), "{}", run.stdout);
    // Made a device function, the same kernel compiles.
    let run = replay_text(
        &format!(
            "from numba import cuda\n\n@cuda.jit(device=True)\ndef helper(x):\n    return x * 2\n\n{kernel}\nlet a = ones(4)\nk[1, 4](a)\nexpect a == 2\n"
        ),
        None,
    );
    assert_eq!(run.code, 0, "{}", run.stdout);
}

#[test]
fn without_python_the_program_gets_one_message_saying_what_to_install() {
    let run = gridlab()
        .args(["replay", "tests/python/01-vector-add.py", "--backend", "sim"])
        .env("GRIDLAB_PYTHON", "/nonexistent/python3")
        .run();
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert!(run.stdout.contains("install Python 3 and `pip install numpy`"), "{}", run.stdout);
}

#[test]
fn the_corpus_of_numba_programs_replays_on_the_simulator() {
    if !have_numpy() {
        return;
    }
    let run = gridlab().args(["replay", "tests/python", "--backend", "sim", "--quiet"]).run();
    assert_eq!(run.code, 0, "{}", run.stdout);
}

/// Run `script` as a `.gridlab` script in a temporary folder.
fn replay_text(script: &str, python: Option<&str>) -> super::harness::Run {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("host.gridlab");
    std::fs::write(&path, script).unwrap();
    let mut g = gridlab().args(["replay", path.to_str().unwrap(), "--backend", "sim", "--lang", "python"]);
    if let Some(p) = python {
        g = g.env("GRIDLAB_PYTHON", p);
    }
    g.run()
}

#[test]
fn host_python_at_the_prompt_shares_the_workspace_with_statements_and_launches() {
    if !have_numpy() {
        return;
    }
    let run = gridlab().args(["replay", "tests/python/20-host-python-at-the-prompt.gridlab", "--backend", "sim"]).run();
    assert_eq!(run.code, 0, "{}", run.stdout);
    // The launches in a Python loop run through gridlab, each reported.
    assert_eq!(run.stdout.matches("add_half[1, 8]: 1 x 8 = 8 threads on sim").count(), 6, "{}", run.stdout);
    assert!(run.stdout.contains("after three launches: [1.5 1.5 1.5 1.5 1.5 1.5 1.5 1.5]"), "{}", run.stdout);
}

#[test]
fn a_failed_assert_at_the_prompt_is_a_failed_expectation_and_an_exception_an_error_at_its_line() {
    if !have_numpy() {
        return;
    }
    let run = replay_text(
        "a = np.arange(4, dtype=np.float32)\nassert a.sum() == 7, 'it is 6'\nfor i in range(2):\n    print(a[i] / missing)\n\nprint('still here')\n",
        None,
    );
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert!(
        run.stdout.contains("expect failed: ")
            && run.stdout.contains("host.gridlab:2: `assert a.sum() == 7, 'it is 6'` did not hold: it is 6"),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("error: NameError: name 'missing' is not defined"), "{}", run.stdout);
    assert!(run.stdout.contains("host.gridlab:4:"), "the error points at the loop's body line:\n{}", run.stdout);
    assert!(run.stdout.contains("still here"), "a failed input does not end the session:\n{}", run.stdout);
    assert!(run.stdout.contains("1 expect(s) failed, 1 error(s)"), "{}", run.stdout);
}

#[test]
fn host_python_without_python_says_what_to_install_and_statements_still_work() {
    let run = replay_text(
        "a = np.zeros(4, np.float32)\nsquares = [x * x for x in range(4)]\na[1] = 2\nexpect a[1] == 2\n",
        Some("/nonexistent/python3"),
    );
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert!(run.stdout.contains("this is host Python, and gridlab has no Python to run it"), "{}", run.stdout);
    assert!(run.stdout.contains("python3 -m pip install numpy"), "{}", run.stdout);
    assert!(run.stdout.contains("1 error(s)"), "only the comprehension fails:\n{}", run.stdout);
}

#[test]
fn a_python_block_typed_at_the_prompt_ends_at_a_blank_line_and_runs() {
    if !have_numpy() {
        return;
    }
    let run = gridlab()
        .args(["--backend", "sim", "--lang", "python", "--no-lesson"])
        .stdin("total = 0\nfor v in range(5):\n    total += v\n\nif total > 5:\n    print('big', total)\nelse:\n    print('small')\n\nexpect total == 10\n")
        .run();
    assert!(run.stdout.contains("big 10"), "{}", run.stdout);
    assert!(!run.stdout.contains("error"), "{}", run.stdout);
}

/// The advice that names the cause (a guard off by one, an index that gives two threads one
/// element) reads a Python kernel as it reads CUDA C, and says it at the learner's Python lines
/// and in Python's words.
#[test]
fn advice_that_names_the_cause_reads_python_kernels_too() {
    let script = "from numba import cuda\n\
                  @cuda.jit\n\
                  def add(a, n):\n\
                  \x20   i = cuda.grid(1)\n\
                  \x20   if i > n:\n\
                  \x20       return\n\
                  \x20   a[i] += 1.0\n\
                  \n\
                  a = np.zeros(1000, np.float32)\n\
                  add[4, 256](a, 1000)\n\
                  expect finding out_of_bounds\n\
                  @cuda.jit\n\
                  def setone(a, n):\n\
                  \x20   i = cuda.blockIdx.x + cuda.threadIdx.x\n\
                  \x20   if i < n:\n\
                  \x20       a[i] = 1.0\n\
                  \n\
                  setone[4, 256](a, 1000)\n\
                  expect finding race\n";
    let run = replay_text(script, None);
    assert_eq!(run.code, 0, "{}", run.stdout);
    let text = run.stdout.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(text.contains("off by one: `i > n` on line 5 lets the index reach 1000"), "{text}");
    assert!(text.contains("write `i >= n`"), "{text}");
    assert!(
        text.contains("(`i = cuda.blockIdx.x + cuda.threadIdx.x` on line 14) gives two threads the same one"),
        "{text}"
    );
    assert!(text.contains("it is `cuda.grid(1)`"), "{text}");
    assert!(!text.contains("if (i"), "C syntax in advice for Python: {text}");
}

/// Beyond the first tutorials: `@vectorize(target='cuda')` runs a gridlab kernel per call,
/// device functions return tuples, a swap of two elements swaps them, and a notebook turned
/// into a script runs with its magics. Each prints what it prints under Numba.
#[test]
fn numba_programs_from_docs_and_course_notebooks_print_what_they_print_with_numba() {
    if !have_numpy() {
        return;
    }
    let run = replay("tests/python/16-vectorize-cuda.py");
    assert_eq!(run.code, 0, "{}", run.stdout);
    for line in [
        "gaussian_pdf_ufunc[4, 128]",
        "a + b: [11 22 33 44]",
        "c + 100: [112 113 114 115]",
        "on the device: [2 4 6 8]",
        "CPU ufunc: [-0.66666667  0.        ]",
    ] {
        assert!(run.stdout.contains(line), "missing {line:?} in\n{}", run.stdout);
    }
    let run = replay("tests/python/18-tuple-loops-and-swaps.py");
    assert_eq!(run.code, 0, "{}", run.stdout);
    assert!(run.stdout.contains("[1 0 3 2 5 4 7 6 9 8]"), "{}", run.stdout);
    let run = replay("tests/python/21-notebook-as-script.py");
    assert_eq!(run.code, 0, "{}", run.stdout);
    assert!(run.stdout.contains("[ 0.  3.  6.  9. 12.]"), "{}", run.stdout);
    assert!(run.stdout.contains("`!nvidia-smi` skipped"), "{}", run.stdout);
    assert!(run.stdout.contains("block maxima:"), "{}", run.stdout);
}

#[test]
fn complex_arithmetic_in_a_kernel_is_refused_at_its_line_with_what_to_write() {
    if !have_numpy() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mandel.py");
    std::fs::write(
        &path,
        "from numba import cuda\nimport numpy as np\n\n@cuda.jit\ndef k(out):\n    i = cuda.grid(1)\n    z = complex(0.5, i)\n    out[i] = z.real\n\nout = np.zeros(4)\nk[1, 4](out)\n",
    )
    .unwrap();
    let run = replay(path.to_str().unwrap());
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert!(run.stdout.contains("complex numbers are not in gridlab's kernels"), "{}", run.stdout);
    assert!(run.stdout.contains("mandel.py:7:9"), "{}", run.stdout);
    assert!(run.stdout.contains("two floats"), "{}", run.stdout);
}

#[test]
fn profile_of_a_python_kernel_keeps_gridlabs_helpers_off_the_learners_lines() {
    // `//` and `%` run through C helpers gridlab writes; their costs are theirs, on a row of
    // their own, not on lines 3 to 5 of the learner's file with the helper's C as the source.
    let script = "import numpy as np\n\
                  from numba import cuda\n\
                  @cuda.jit\n\
                  def by_cols(out, m, rows, cols):\n\
                  \x20   i = cuda.grid(1)\n\
                  \x20   r = i % rows\n\
                  \x20   c = i // rows\n\
                  \x20   if i < rows * cols:\n\
                  \x20       out[r, c] = m[r, c]\n\
                  \n\
                  m = np.ones((64, 32), np.float32)\n\
                  o = np.zeros((64, 32), np.float32)\n\
                  :profile by_cols[8, 256](o, m, 64, 32)\n";
    let run = replay_text(script, None);
    assert_eq!(run.code, 0, "{}", run.stdout);
    assert!(!run.stdout.contains("long long"), "gridlab's C on the learner's lines:\n{}", run.stdout);
    let helper = run.stdout.lines().find(|l| l.contains("py_floordiv")).expect("a row for the helper");
    assert!(helper.starts_with("│ -"), "{helper}");
    assert!(run.stdout.contains("▶ 9"), "the costliest line is the learner's access:\n{}", run.stdout);
}

/// A 16 x 16 shared tile filled by blocks of 32 x 8 threads: every index stays inside the
/// tile, but `tx` runs past each row into the next. Numba's compiled kernel does that silently;
/// gridlab says which index, how far, where it comes from, and that the race it causes is the
/// same mistake, in the learner's Python, and in C for the same kernel in C.
#[test]
fn an_index_past_a_row_of_a_shared_tile_is_named_with_the_thread_axis_it_comes_from() {
    if !have_numpy() {
        return;
    }
    let program = "import numpy as np\nfrom numba import cuda, float32\n\n@cuda.jit\ndef twice(out, a):\n    \
                   tile = cuda.shared.array((16, 16), dtype=float32)\n    tx = cuda.threadIdx.x\n    \
                   ty = cuda.threadIdx.y\n    tile[ty, tx] = a[ty, tx]\n    cuda.syncthreads()\n    \
                   out[ty, tx] = tile[ty, tx] * 2\n\na = np.ones((8, 32), dtype=np.float32)\n\
                   out = np.zeros_like(a)\ntwice[1, (32, 8)](out, a)\n";
    let run = replay_program("tile.py", program);
    let flat = run.stdout.split_whitespace().collect::<Vec<_>>().join(" ");
    assert_eq!(run.code, 1, "an unacknowledged finding fails the program:\n{}", run.stdout);
    for want in [
        "indexed shared array `tile` (16 x 16) past the end of its row: its last index (`tx`) was 16 to 31, where a row has 16 elements",
        "Numba's compiled kernel checks no index (its CPU simulator would raise IndexError)",
        "the index comes from `cuda.threadIdx.x`, and the block has more threads along x than a row of `tile` has elements (16): launch blocks of 16 threads along x",
        "this race comes from the index past a row of `tile` on line 9",
    ] {
        assert!(flat.contains(want), "{want}\n{}", run.stdout);
    }

    let acknowledged =
        program.replace("twice[1, (32, 8)](out, a)\n", "twice[1, (32, 8)](out, a)  # expect: out_of_bounds, race\n");
    let run = replay_program("tile.py", &acknowledged);
    assert_eq!(run.code, 0, "`out_of_bounds` acknowledges it:\n{}", run.stdout);

    let c = "__global__ void twice(float *out, const float *a) {\n    __shared__ float tile[16][16];\n    \
             int tx = threadIdx.x, ty = threadIdx.y;\n    tile[ty][tx] = a[ty * 32 + tx];\n    __syncthreads();\n    \
             out[ty * 32 + tx] = tile[ty][tx] * 2.0f;\n}\nlet a = ones((8, 32))\nlet out = zeros((8, 32))\n\
             twice<<<1, (32, 8)>>>(out, a)\nexpect finding out_of_bounds\nexpect finding race\n";
    let run = replay_program("tile.gridlab", c);
    let flat = run.stdout.split_whitespace().collect::<Vec<_>>().join(" ");
    assert_eq!(run.code, 0, "{}", run.stdout);
    for want in [
        "its last index (`tx`) was 16 to 31, where a row has 16 elements",
        "C does not check an index against its own dimension, and the element landed on is inside `tile`",
        "the index comes from `threadIdx.x`",
    ] {
        assert!(flat.contains(want), "{want}\n{}", run.stdout);
    }
}

/// A guard that compares each index of a 2-D array with the other dimension (`x < a.shape[1]`
/// for the row): the column runs past its row and lands on the next one, inside the array.
/// Numba's compiled kernel does that silently; gridlab names the column index, its range
/// against `a.shape[1]`, and the race it causes as the same mistake. The same kernel with a
/// right guard is clean, and its output and steps do not change for the check.
#[test]
fn a_column_past_a_row_of_a_2d_array_argument_is_found_and_explains_the_race() {
    if !have_numpy() {
        return;
    }
    let program = "import numpy as np\nfrom numba import cuda\n\n@cuda.jit\ndef fill(a):\n    \
                   x, y = cuda.grid(2)\n    if x < a.shape[1] and y < a.shape[0]:\n        \
                   a[x, y] = x * 1000 + y\n\na = np.zeros((40, 30), dtype=np.float32)\n\
                   fill[(4, 4), (16, 16)](a)\n";
    let run = replay_program("fill.py", program);
    let flat = run.stdout.split_whitespace().collect::<Vec<_>>().join(" ");
    assert_eq!(run.code, 1, "an unacknowledged finding fails the program:\n{}", run.stdout);
    for want in [
        "300 threads indexed `a` (40 x 30) past the end of its row: its last index (`y`) was 30 to 39, where a row has 30 elements",
        "8 | a[x, y] = x * 1000 + y",
        "keep `y` below `a.shape[1]` (30), the length of a row: guard it with `y < a.shape[1]`",
        "this race comes from the index past a row of `a` on line 8",
    ] {
        assert!(flat.contains(want), "{want}\n{}", run.stdout);
    }

    let fixed = program.replace("x < a.shape[1] and y < a.shape[0]", "x < a.shape[0] and y < a.shape[1]");
    let run = replay_program("fill.py", &fixed);
    assert_eq!(run.code, 0, "{}", run.stdout);
    assert!(run.stdout.contains("clean"), "{}", run.stdout);
}
