//! Lessons, on the fixture course in `tests/fixtures/course` (never the real lessons, which
//! change as the course is written): replay with one JUnit case per step, `dev check`, lesson
//! errors, the guided mode fed through a pipe, progress kept between runs, and `:export`.

use super::harness::{Run, gridlab, root};

const COURSE: &str = "tests/fixtures/course";

/// `gridlab learn LESSON` of the real course (`lessons/`) in `lang`, typing `stdin`, with its
/// progress in a folder of its own: its output, and that output with its line breaks and runs
/// of spaces as single spaces (a why wraps with the terminal's width).
fn learn_real(lang: &str, lesson: &str, stdin: &str) -> (String, String) {
    let data = tempfile::tempdir().unwrap();
    let course = root().join("lessons").display().to_string();
    let run = gridlab()
        .env("XDG_DATA_HOME", &data.path().display().to_string())
        .args(["--course", &course, "--backend", "sim", "--lang", lang, "learn", lesson])
        .stdin(stdin)
        .run();
    let flat = run.stdout.split_whitespace().collect::<Vec<_>>().join(" ");
    (run.stdout, flat)
}

/// The fixture's second exercise's starter and solution, as a learner would type them.
const WRONG_TWICE: &str = "__global__ void twice(float *a, int n) {\n    int i = threadIdx.x;\n    a[i] *= 2;\n}\n";
const RIGHT_TWICE: &str = "__global__ void twice(float *a, int n) {\n    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i < n) a[i] *= 2;\n}\n";

/// `gridlab ARGS` with its progress in `data` (so nothing touches the real data folder).
fn in_home(data: &std::path::Path, args: &[&str], stdin: &str) -> Run {
    let data = data.display().to_string();
    let mut all = vec!["--course", COURSE, "--backend", "sim"];
    all.extend_from_slice(args);
    gridlab().env("XDG_DATA_HOME", &data).args(all).stdin(stdin).run()
}

#[test]
fn replaying_a_course_runs_every_step_and_reports_each_one() {
    let dir = tempfile::tempdir().unwrap();
    let junit = dir.path().join("report.xml");
    let run = gridlab().args(["replay", COURSE, "--backend", "sim", "--junit", junit.to_str().unwrap()]).run();
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert!(run.stdout.contains("-- 2. Your turn"), "{}", run.stdout);
    assert!(run.stdout.contains("exercise: Write `twice(float *a, int n)`"), "{}", run.stdout);
    assert!(run.stdout.contains("check: ✓ passed: 3 configurations"), "{}", run.stdout);
    assert!(run.stdout.ends_with("replayed 2 lessons\n2 passed, 0 failed\n"), "{}", run.stdout);
    let xml = std::fs::read_to_string(junit).unwrap();
    assert!(xml.contains("tests=\"4\" failures=\"0\""), "{xml}");
    for step in [
        "classname=\"01-fill\" name=\"step 1: A kernel\"",
        "classname=\"01-fill\" name=\"step 2: Your turn\"",
        "classname=\"02-guard\" name=\"step 2: Make it atomic\"",
    ] {
        assert!(xml.contains(step), "{step} in {xml}");
    }
}

#[test]
fn dev_check_passes_a_sound_course_and_catches_a_check_that_can_be_fooled() {
    let run = gridlab().args(["dev", "check", COURSE, "--backend", "sim"]).run();
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert!(run.stdout.contains(
        "✓ the starter fails its check with a race finding (with n = 100, blocks = 4, threads = 32, on sim seed 1"
    ));
    assert!(
        run.stdout.contains("checked 2 lessons (2 exercises) of tests/fixtures/course: 2 sound, 0 with problems in "),
        "{}",
        run.stdout
    );

    // A check with only one configuration, a multiple of the block size: the unguarded starter
    // passes it, and dev check says so.
    let dir = tempfile::tempdir().unwrap();
    let lesson = std::fs::read_to_string(root().join(COURSE).join("01-fill.md")).unwrap();
    let weak = lesson
        .replace("config n = 100, blocks = 4, threads = 32    # four blocks, ragged tail\n", "")
        .replace("config n = 5000, blocks = 157, threads = 32 # beyond 4096, not a power of two\n", "")
        .replace("config n = 1, blocks = 1, threads = 32", "config n = 32, blocks = 1, threads = 32");
    std::fs::write(dir.path().join("01-fill.md"), weak).unwrap();
    let run = gridlab().args(["dev", "check", dir.path().to_str().unwrap(), "--backend", "sim", "-q"]).run();
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert!(run.stdout.contains("01-fill.md:27: the starter passes its check"), "{}", run.stdout);
    assert!(run.stdout.contains("1 with problems"), "{}", run.stdout);
}

/// The fixture course's lesson 1 with its check cut down to one element in one block: every
/// starter still fails, but wrong solutions pass (one that mixes up `blockIdx.x` and
/// `threadIdx.x`, one that hard-codes `n`). `markers` end the solution's two lines. dev check
/// also finds its launches too small to cover sizes.
fn one_element_course(markers: [&str; 2]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let lesson = std::fs::read_to_string(root().join(COURSE).join("01-fill.md")).unwrap();
    let weak = lesson
        .replace("config n = 100, blocks = 4, threads = 32    # four blocks, ragged tail\n", "")
        .replace("config n = 5000, blocks = 157, threads = 32 # beyond 4096, not a power of two\n", "")
        .replace(
            "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i < n) a[i] *= 2;",
            &format!(
                "    int i = blockIdx.x * blockDim.x + threadIdx.x;{}\n    if (i < n) a[i] *= 2;{}",
                markers[0], markers[1]
            ),
        );
    assert!(weak.contains(markers[0]) && weak.contains("config n = 1, blocks = 1"));
    std::fs::write(dir.path().join("01-fill.md"), weak).unwrap();
    dir
}

#[test]
fn dev_check_mutants_kills_every_mutant_of_a_sound_course() {
    let run = gridlab().args(["dev", "check", COURSE, "--backend", "sim", "-q", "--mutants"]).run();
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    for lesson in ["01-fill.md", "02-guard.md"] {
        let line = run
            .stdout
            .lines()
            .find(|l| l.contains(&format!("mutants of {COURSE}/{lesson}")))
            .unwrap_or_else(|| panic!("{}", run.stdout));
        assert!(line.starts_with("✓ ") && line.contains(" 0 survived ("), "{line}");
    }
    assert!(run.stdout.contains("(2 exercises, with mutants)"), "{}", run.stdout);
}

#[test]
fn dev_check_mutants_shows_a_surviving_mutant_with_its_diff_and_fails() {
    let dir = one_element_course(["", ""]);
    let run =
        gridlab().args(["dev", "check", dir.path().to_str().unwrap(), "--backend", "sim", "-q", "--mutants"]).run();
    assert_eq!(run.code, 1, "{}", run.stdout);
    let diff = "@@ {dir}/01-fill.md:57 @@ swap\n-    int i = blockIdx.x * blockDim.x + threadIdx.x;\n+    int i = threadIdx.x * blockDim.x + threadIdx.x;\n";
    let diff = diff.replace("{dir}", dir.path().to_str().unwrap());
    assert!(run.stdout.contains(&diff), "{}", run.stdout);
    assert!(run.stdout.contains("01-fill.md:57: a mutant of the solution passes the check"), "{}", run.stdout);
    assert!(run.stdout.contains("`// gridlab: equivalent swap`"), "{}", run.stdout);
    assert!(run.stdout.contains("1 with problems"), "{}", run.stdout);
    // Without --mutants the coverage rules find the weak check too: its one launch is small.
    let run = gridlab().args(["dev", "check", dir.path().to_str().unwrap(), "--backend", "sim", "-q"]).run();
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert!(
        run.stdout.contains("01-fill.md:46: the check does not cover enough: no launch is larger than 1024"),
        "{}",
        run.stdout
    );
    assert!(!run.stdout.contains("a mutant of the solution"), "{}", run.stdout);
}

#[test]
fn dev_check_mutants_accepts_a_mutant_marked_equivalent_and_refuses_a_misspelt_marker() {
    let dir = one_element_course(["   // gridlab: equivalent swap", "  // gridlab: equivalent param, hard-size"]);
    let run =
        gridlab().args(["dev", "check", dir.path().to_str().unwrap(), "--backend", "sim", "-q", "--mutants"]).run();
    // Every mutant is killed or marked; what is left is the coverage of the one small launch.
    assert!(run.stdout.contains(" 4 equivalent, "), "{}", run.stdout);
    assert!(run.stdout.contains(" 0 survived ("), "{}", run.stdout);
    assert!(!run.stdout.contains("a mutant of the solution"), "{}", run.stdout);
    assert!(!run.stdout.contains("is not equivalent"), "{}", run.stdout);
    assert_eq!(run.stdout.matches("the check does not cover enough").count(), 2, "{}", run.stdout);

    let dir = one_element_course(["   // gridlab: equivalent swapped", ""]);
    let run =
        gridlab().args(["dev", "check", dir.path().to_str().unwrap(), "--backend", "sim", "-q", "--mutants"]).run();
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert!(run.stdout.contains("01-fill.md:57: `swapped` is no kind of mutant"), "{}", run.stdout);
}

#[test]
fn a_broken_lesson_names_its_file_line_and_fix() {
    let run = gridlab().args(["dev", "check", "tests/fixtures/broken-course"]).run();
    assert_eq!(run.code, 1);
    let expected = "tests/fixtures/broken-course/01-broken.md:8: a `solution` block belongs to an exercise: \
                    put an `exercise` block before it in this step";
    assert!(run.stderr.contains(expected), "{}", run.stderr);
    let run = gridlab().args(["replay", "tests/fixtures/broken-course/01-broken.md"]).run();
    assert_eq!(run.code, 1);
    assert!(run.stdout.contains(expected), "{}", run.stdout);
    let run = gridlab().args(["learn", "1", "--course", "tests/fixtures/broken-course"]).run();
    assert_eq!(run.code, 2);
    assert!(run.stdout.contains(expected) && run.stdout.contains("--no-lesson"), "{}", run.stdout);
    let run = gridlab().args(["learn", "9", "--course", COURSE]).run();
    assert_eq!(run.code, 2);
    assert!(run.stdout.contains("no lesson `9`"), "{}", run.stdout);
}

#[test]
fn a_failed_check_says_which_configuration_and_run_broke() {
    let data = tempfile::tempdir().unwrap();
    let run = in_home(data.path(), &["learn", "1"], &format!(":next\n{WRONG_TWICE}:check\n"));
    assert_eq!(run.code, 1, "a failed check fails a piped session:\n{}", run.stdout);
    let out = &run.stdout;
    assert!(out.contains("✗ not yet: with n = 100, blocks = 4, threads = 32, on sim seed 1:"), "{out}");
    assert!(out.contains("at tests/fixtures/course/01-fill.md:51"), "{out}");
    assert!(out.contains(">>> twice<<<blocks, threads>>>(a, n)"), "{out}");
    // The verdict wraps at words with the output it sits under.
    let flat = out.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(flat.contains("race finding: a kernel with one is wrong even when its numbers come out right"), "{out}");
    assert!(out.contains("`:hint` helps"), "{out}");
}

#[test]
fn the_guided_mode_shows_steps_hints_and_solutions_and_keeps_progress() {
    let data = tempfile::tempdir().unwrap();
    let run = in_home(data.path(), &["learn", "1"], ":hint\n:next\n:hint\n:hint\n:hint\n:solution\n:solution yes\n");
    let out = &run.stdout;
    assert!(out.contains("Lesson 1 of 2: Fill an array"), "{out}");
    assert!(out.contains("── Step 1 of 2: A kernel"), "{out}");
    assert!(out.contains("This step has no exercise, so no hints"), "{out}");
    assert!(out.contains("┌ exercise\n│ Write `twice(float *a, int n)`"), "{out}");
    assert!(out.contains("Hint 1 of 2:\nUse the global index"), "{out}");
    assert!(out.contains("Hint 2 of 2:\nGuard it"), "{out}");
    assert!(out.contains("(that was the last hint; `:solution` shows a solution)"), "{out}");
    assert!(out.contains("Sure? Trying first teaches more. `:solution yes` shows one."), "{out}");
    assert!(out.contains("A solution (it is in your editor"), "{out}");

    // Step 1 was passed by with `:next`, not done.
    let run = in_home(data.path(), &["lessons"], "");
    let row = run.stdout.lines().find(|l| l.contains("Fill an array")).unwrap();
    assert!(row.contains("0/2") && !row.contains('✓'), "{}", run.stdout);

    // Solve step 2: the progress is saved, and `gridlab lessons` shows it.
    let run = in_home(data.path(), &["learn", "1"], &format!(":next\n{RIGHT_TWICE}:check\n"));
    assert_eq!(run.code, 0, "{}", run.stdout);
    // The verdict wraps at a word with a hanging indent.
    assert!(
        run.stdout.contains(
            "✓ passed: 3 configurations, each on the simulator (seed 1, seed 2, seed 3,\n          lockstep)"
        ),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("Solved! (that was the last step: :next opens the next lesson)"), "{}", run.stdout);
    let progress = data.path().join("gridlab/progress");
    let file = std::fs::read_dir(&progress).unwrap().next().unwrap().unwrap().path();
    let saved = std::fs::read_to_string(&file).unwrap();
    assert!(saved.contains("current = \"01-fill\"") && saved.contains("solved = [1]"), "{saved}");
    let run = in_home(data.path(), &["lessons"], "");
    assert_eq!(run.code, 0);
    let row = run.stdout.lines().find(|l| l.contains("Fill an array")).unwrap();
    // The exercise's step is done; step 1, passed by with `:next`, is not, so the lesson is not.
    assert!(!row.contains('✓') && row.contains("1/2") && row.contains("1/1"), "{}", run.stdout);

    let run = in_home(data.path(), &["lessons", "--reset"], "");
    assert!(run.stdout.starts_with("progress cleared"), "{}", run.stdout);
    let run = in_home(data.path(), &["lessons"], "");
    assert!(!run.stdout.lines().any(|l| l.contains('✓') && l.contains("Fill")), "{}", run.stdout);
}

#[test]
fn a_corrupt_progress_file_is_set_aside_not_fatal() {
    let data = tempfile::tempdir().unwrap();
    let progress = data.path().join("gridlab/progress");
    std::fs::create_dir_all(&progress).unwrap();
    // The course's progress file name ends in a hash of its folder: write every plausible one by
    // letting gridlab make it first.
    in_home(data.path(), &["learn", "1"], "");
    let file = std::fs::read_dir(&progress).unwrap().next().unwrap().unwrap().path();
    std::fs::write(&file, "current = [").unwrap();
    let run = in_home(data.path(), &["learn", "2"], "");
    assert_eq!(run.code, 0, "{}", run.stdout);
    assert!(run.stdout.contains("could not be read") && run.stdout.contains(".toml.bak"), "{}", run.stdout);
    assert!(run.stdout.contains("Lesson 2 of 2: Guard the tail"), "{}", run.stdout);
}

#[test]
fn export_writes_the_session_as_markdown() {
    let dir = tempfile::tempdir().unwrap();
    let md = dir.path().join("session.md");
    let script = format!(
        "__global__ void k(float *a) {{ a[threadIdx.x] = 1; }}\nlet a = zeros(4)\nk<<<1, 4>>>(a)\na\n:export {}\n",
        md.display()
    );
    let run = gridlab().args(["--backend", "sim"]).stdin(&script).run();
    assert_eq!(run.code, 0, "{}", run.stdout);
    assert!(run.stdout.contains("wrote 4 inputs and their output to"), "{}", run.stdout);
    let text = std::fs::read_to_string(md).unwrap();
    assert!(text.starts_with("# A gridlab session\n"), "{text}");
    assert!(text.contains("```cuda\n__global__ void k(float *a) { a[threadIdx.x] = 1; }\n```"), "{text}");
    // Consecutive statements in one block, each followed by what it printed.
    assert!(
        text.contains("```text\n> let a = zeros(4)\n> k<<<1, 4>>>(a)\nk<<<1, 4>>>: 1 x 4 = 4 threads on sim"),
        "{text}"
    );
    assert!(!text.contains('\u{1b}'), "no colour codes: {text}");
}

/// An HTML page is well formed: every tag closed in order, `<` escaped outside tags, no raw
/// escape bytes.
fn assert_well_formed_html(html: &str) {
    assert!(!html.contains('\u{1b}'), "a raw escape byte:\n{html}");
    let mut stack: Vec<String> = Vec::new();
    let mut rest = html;
    while let Some(at) = rest.find('<') {
        let end = at + rest[at..].find('>').expect("every tag ends");
        let tag = &rest[at + 1..end];
        assert!(!tag.contains('<'), "a raw `<` in {tag:?}");
        let name: String = tag.trim_start_matches('/').chars().take_while(|c| c.is_ascii_alphanumeric()).collect();
        if tag.starts_with('!') || matches!(name.as_str(), "meta" | "br" | "hr") {
        } else if tag.starts_with('/') {
            assert_eq!(stack.pop().as_deref(), Some(name.as_str()), "</{name}> closes the wrong tag");
        } else {
            stack.push(name);
        }
        rest = &rest[end + 1..];
    }
    assert!(stack.is_empty(), "tags never closed: {stack:?}");
}

#[test]
fn export_after_a_lesson_writes_a_handout_in_markdown_and_html() {
    let data = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (md, html) = (dir.path().join("handout.md"), dir.path().join("handout.html"));
    let script = format!(
        "__global__ void fill(float *a, int n) {{\n    for (int i = 0; i < n; ++i) a[i] = i;\n}}\nlet a = zeros(4)\nfill<<<1, 1>>>(a, len(a))\nexpect a == [0, 1, 2, 3]\n:next\n{WRONG_TWICE}:check\n{RIGHT_TWICE}:check\n:export {}\n:export {}\n",
        md.display(),
        html.display()
    );
    let run = in_home(data.path(), &["learn", "1", "--color", "always"], &script);
    assert!(run.stdout.contains("to ") && html.exists(), "{}", run.stdout);
    let text = std::fs::read_to_string(&md).unwrap();
    // The lesson's headings and prose, in order, around what ran.
    let order = [
        "# Lesson 1: Fill an array",
        "A fixture lesson for gridlab's own tests",
        "## A kernel",
        "This kernel writes *every* element from one thread.",
        "```cuda\n__global__ void fill(",
        "> let a = zeros(4)\n> fill<<<1, 1>>>(a, len(a))\nfill<<<1, 1>>>: 1 x 1 = 1 thread",
        "## Your turn",
        "**Exercise**",
        "Write `twice(float *a, int n)`",
        "**The starter, the wrong version:**\n\n```cuda\n__global__ void twice(float *a, int n) {\n    int i = threadIdx.x;",
        "✗ not yet",
        "**A solution:**",
        "✓ passed",
    ];
    let mut from = 0;
    for what in order {
        let at = text[from..].find(what).unwrap_or_else(|| panic!("{what:?} is not after byte {from}:\n{text}"));
        from += at + what.len();
    }
    // Findings name the kernel and its line, not the input's number; navigation is left out.
    assert!(text.contains("--> kernel twice, line 3"), "{text}");
    assert!(text.contains("  3 |     a[i] *= 2;"), "{text}");
    assert!(!text.contains("<input") && !text.contains("<stdin>"), "{text}");
    assert!(!text.contains("> :next"), "{text}");
    assert!(!text.contains('\u{1b}'), "{text}");
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.starts_with("<!DOCTYPE html>"), "{page}");
    assert_well_formed_html(&page);
    assert!(page.contains("<h2>Your turn</h2>"), "{page}");
    assert!(page.contains("fill&lt;&lt;&lt;1, 1&gt;&gt;&gt;(a, len(a))"), "{page}");
    // The terminal's colours, as inline styles: the red of the failed check, the green of the passed.
    assert!(page.contains("<span style=\"color:#cd3131;font-weight:bold\">✗ not yet:</span>"), "{page}");
    assert!(page.contains("<span style=\"color:#0dbc79\">✓ passed:</span>"), "{page}");
}

#[test]
fn error_blocks_must_be_refused() {
    let dir = tempfile::tempdir().unwrap();
    let lesson = "+++\ntitle = \"Limits\"\nsummary = \"s\"\n+++\n## Too big\n\n```cuda\n__global__ void k(float *a) { a[0] = 1; }\n```\n\n```gridlab\nlet a = zeros(1)\n```\n\n```gridlab error\nk<<<1, 2048>>>(a)\n```\n";
    std::fs::write(dir.path().join("01-limits.md"), lesson).unwrap();
    let run = gridlab().args(["replay", dir.path().to_str().unwrap(), "--backend", "sim"]).run();
    assert_eq!(run.code, 0, "a refused launch in an error block passes:\n{}", run.stdout);
    assert!(run.stdout.contains("block size 2048 in x is above CUDA's limit of 1024"), "{}", run.stdout);

    std::fs::write(dir.path().join("01-limits.md"), lesson.replace("k<<<1, 2048>>>(a)", "k<<<1, 32>>>(a)")).unwrap();
    let run = gridlab().args(["replay", dir.path().to_str().unwrap(), "--backend", "sim"]).run();
    assert_eq!(run.code, 1, "a launch that runs in an error block fails:\n{}", run.stdout);
    assert!(
        run.stdout.contains("01-limits.md:16: expected an error: the block says `error`, but this input ran"),
        "{}",
        run.stdout
    );
}

#[test]
fn output_blocks_must_match_what_gridlab_prints() {
    let dir = tempfile::tempdir().unwrap();
    let lesson = "+++\ntitle = \"Division\"\nsummary = \"s\"\n+++\n## Divide\n\n```gridlab\nlet n = 1000\n(n + 255) / 256.0\n```\n\nA fraction:\n\n```output\n(n + 255) / 256.0 = 4.90...\n```\n";
    std::fs::write(dir.path().join("01-division.md"), lesson).unwrap();
    for command in [&["replay"][..], &["dev", "check"]] {
        let mut args = command.to_vec();
        args.extend([dir.path().to_str().unwrap(), "--backend", "sim"]);
        let run = gridlab().args(args).run();
        assert_eq!(run.code, 0, "{command:?}: the output block holds:\n{}", run.stdout);
    }

    // The text a lesson once had: gridlab prints 4.90234375, not 4.8...
    std::fs::write(dir.path().join("01-division.md"), lesson.replace("4.90...", "4.8...")).unwrap();
    for command in [&["replay"][..], &["dev", "check"]] {
        let mut args = command.to_vec();
        args.extend([dir.path().to_str().unwrap(), "--backend", "sim"]);
        let run = gridlab().args(args).run();
        assert_eq!(run.code, 1, "{command:?}: a wrong output block fails:\n{}", run.stdout);
        assert!(run.stdout.contains("01-division.md:15: the `output` block does not match"), "{}", run.stdout);
        assert!(run.stdout.contains("`(n + 255) / 256.0 = 4.8...` is not in it"), "{}", run.stdout);
        assert!(run.stdout.contains("(n + 255) / 256.0 = 4.90234375"), "{}", run.stdout);
    }

    // An output block shows what a block before it prints.
    let orphan = "+++\ntitle = \"t\"\nsummary = \"s\"\n+++\n## A\n\n```output\n4\n```\n";
    std::fs::write(dir.path().join("01-division.md"), orphan).unwrap();
    let run = gridlab().args(["replay", dir.path().to_str().unwrap(), "--backend", "sim"]).run();
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert!(
        run.stdout
            .contains("01-division.md:7: an `output` block shows what the `cuda` or `gridlab` block before it prints"),
        "{}",
        run.stdout
    );
}

#[test]
fn check_before_the_kernel_is_written_asks_for_the_exercises_own_signature() {
    let data = tempfile::tempdir().unwrap();
    let run = in_home(data.path(), &["learn", "1"], ":next\n:check\n");
    assert_eq!(run.code, 1, "{}", run.stdout);
    let out = &run.stdout;
    assert!(out.contains("✗ not yet: there is no kernel `twice` yet"), "{out}");
    assert!(out.contains("`__global__ void twice(float *a, int n) { ... }`"), "{out}");
    assert!(!out.contains("on sim seed"), "nothing ran: {out}");
}

/// The lesson `lessons/NN-*.md`, cut down to its front matter and the step of its exercise,
/// with `solution` in place of the exercise's own solution.
fn lesson_with_solution(number: &str, solution: &str) -> (String, String) {
    let dir = root().join("lessons");
    let name = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .find(|n| n.starts_with(&format!("{number}-")) && n.ends_with(".md"))
        .unwrap_or_else(|| panic!("no lesson {number}"));
    let text = std::fs::read_to_string(dir.join(&name)).unwrap();
    let body_at = text.match_indices("+++\n").nth(1).map(|(i, _)| i + 4).unwrap();
    let steps: Vec<&str> = text[body_at..].split("\n## ").skip(1).collect();
    let step = steps.iter().find(|s| s.contains("```exercise")).unwrap();
    let open = step.find("```solution\n").unwrap() + "```solution\n".len();
    let close = open + step[open..].find("\n```").unwrap() + 1;
    let step = format!("{}{}{}", &step[..open], solution, &step[close..]);
    (name, format!("{}\n## {step}", &text[..body_at]))
}

/// Every wrong answer in `tests/fixtures/wrong-solutions` (`NN-what.cu`, for lesson NN, its
/// first line saying what is wrong) fails its exercise's check: a check made weaker fails here.
#[test]
fn every_lessons_check_rejects_the_wrong_solutions_learners_write() {
    let fixtures = root().join("tests/fixtures/wrong-solutions");
    let mut files: Vec<_> = std::fs::read_dir(&fixtures).unwrap().map(|e| e.unwrap().path()).collect();
    files.sort();
    assert!(files.len() >= 13, "{files:?}");
    for file in files {
        let wrong = std::fs::read_to_string(&file).unwrap();
        let why = wrong.lines().next().and_then(|l| l.strip_prefix("// why: ")).expect("a `// why:` first line");
        let stem = file.file_stem().unwrap().to_str().unwrap().to_string();
        let (name, lesson) = lesson_with_solution(&stem[..2], &wrong);
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(&name), lesson).unwrap();
        let run = gridlab().args(["dev", "check", dir.path().to_str().unwrap(), "--backend", "sim", "-q"]).run();
        assert_eq!(run.code, 1, "{stem} ({why}) passes its check:\n{}", run.stdout);
        assert!(run.stdout.contains("check: ✗ not yet"), "{stem} ({why}):\n{}", run.stdout);
    }
}

#[test]
fn a_handout_takes_what_ran_in_its_own_lesson_only() {
    let data = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let md = dir.path().join("two.md");
    // Lesson 1's inputs, then lesson 2's, in one session: the handout of lesson 2 has only its own.
    let script = format!(
        "__global__ void fill(float *a, int n) {{\n    for (int i = 0; i < n; ++i) a[i] = i;\n}}\nlet a = zeros(4)\nfill<<<1, 1>>>(a, len(a))\n:lesson 2\nlet x = ones(64)\n:export {}\n",
        md.display()
    );
    let run = in_home(data.path(), &["learn", "1"], &script);
    let text = std::fs::read_to_string(&md).unwrap_or_else(|e| panic!("{e}: {}", run.stdout));
    assert!(text.starts_with("# Lesson 2"), "{text}");
    assert!(text.contains("> let x = ones(64)"), "{text}");
    assert!(!text.contains("fill<<<1, 1>>>") && !text.contains("let a = zeros(4)"), "{text}");
}

/// The fixture lesson with Numba twins of its kernel and exercise.
const BILINGUAL: &str = "tests/fixtures/bilingual";
const WRONG_TWICE_PY: &str = "@cuda.jit\ndef twice(a, n):\n    i = cuda.threadIdx.x\n    a[i] *= 2\n\n";
const RIGHT_TWICE_PY: &str = "@cuda.jit\ndef twice(a, n):\n    i = cuda.grid(1)\n    if i < n:\n        a[i] *= 2\n\n";

#[test]
fn a_lesson_with_python_twins_replays_and_checks_in_both_languages() {
    let run = gridlab().args(["replay", BILINGUAL, "--backend", "sim"]).run();
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    let out = &run.stdout;
    assert!(out.contains("== tests/fixtures/bilingual/01-fill.md: Fill an array\n"), "{out}");
    assert!(out.contains("== tests/fixtures/bilingual/01-fill.md: Fill an array (in Python)"), "{out}");
    assert!(out.contains(">>> fill[1, 1](a, len(a))"), "launches are in Numba's brackets:\n{out}");
    assert!(out.contains("exercise: Write `twice(a, n)`"), "{out}");
    let run = gridlab().args(["dev", "check", BILINGUAL, "--backend", "sim"]).run();
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert_eq!(run.stdout.matches("the starter fails its check").count(), 2, "{}", run.stdout);
    // `--lang` picks one.
    let run = gridlab().args(["replay", BILINGUAL, "--backend", "sim", "--lang", "python"]).run();
    assert_eq!(run.code, 0, "{}", run.stdout);
    assert!(!run.stdout.contains("__global__"), "{}", run.stdout);

    // A Python starter that passes its check is a problem of the course.
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(root().join(BILINGUAL).join("01-fill.md")).unwrap();
    let broken = text
        .replace("    i = cuda.threadIdx.x\n    a[i] *= 2", "    i = cuda.grid(1)\n    if i < n:\n        a[i] *= 2");
    std::fs::write(dir.path().join("01-fill.md"), broken).unwrap();
    let run = gridlab().args(["dev", "check", dir.path().to_str().unwrap(), "--backend", "sim"]).run();
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert!(run.stdout.contains("(in Python)"), "{}", run.stdout);
}

#[test]
fn a_learner_picks_python_and_the_exercise_is_checked_in_it() {
    let data = tempfile::tempdir().unwrap();
    let in_bilingual = |args: &[&str], stdin: &str| {
        let mut all = vec!["--course", BILINGUAL, "--backend", "sim"];
        all.extend_from_slice(args);
        gridlab().env("XDG_DATA_HOME", data.path().to_str().unwrap()).args(all).stdin(stdin).run()
    };
    let run = in_bilingual(&["--lang", "python", "learn", "1"], &format!(":next\n{WRONG_TWICE_PY}:check\n"));
    let out = &run.stdout;
    assert_eq!(run.code, 1, "{out}");
    assert!(out.contains("@cuda.jit\n    def fill(a, n):"), "the step shows the Python kernel:\n{out}");
    assert!(out.contains("In CUDA C"), "with its CUDA C beside it:\n{out}");
    assert!(out.contains("✗ not yet"), "{out}");
    let run = in_bilingual(&["learn", "1"], &format!(":next\n{RIGHT_TWICE_PY}:check\n:lang\n"));
    assert_eq!(run.code, 0, "the language was remembered:\n{}", run.stdout);
    assert!(run.stdout.contains("✓ passed"), "{}", run.stdout);
    assert!(run.stdout.contains("Lessons are shown in Python (Numba)"), "{}", run.stdout);
    let file = std::fs::read_dir(data.path().join("gridlab/progress")).unwrap().next().unwrap().unwrap().path();
    assert!(std::fs::read_to_string(file).unwrap().contains("lang = \"python\""));

    // `:lang cuda` switches back: the step again, in CUDA C, with its C starter.
    let run = in_bilingual(&["learn", "1"], ":lang cuda\n:lang klingon\n");
    assert!(run.stdout.contains("Now in CUDA C"), "{}", run.stdout);
    assert!(run.stdout.contains("__global__ void fill(float *a, int n)"), "{}", run.stdout);
    assert!(run.stdout.contains("`klingon` is not a language gridlab teaches"), "{}", run.stdout);
}

#[test]
fn a_lesson_fed_through_a_pipe_counts_the_steps_its_inputs_finish() {
    let data = tempfile::tempdir().unwrap();
    let steps = "__global__ void fill(float *a, int n) {\n    for (int i = 0; i < n; ++i) a[i] = i;\n}\nlet a = zeros(4)\nfill<<<1, 1>>>(a, len(a))\nexpect a == [0, 1, 2, 3]\n:lessons\n";
    let run = in_home(data.path(), &["--lang", "cuda", "learn", "1"], steps);
    assert!(run.stdout.contains("Step 1 of 2 is done"), "{}", run.stdout);
    assert!(run.stdout.contains("1/2"), "the step counts as done in :lessons:\n{}", run.stdout);
    assert!(!run.stdout.contains("in the editor"), "a pipe has no editor:\n{}", run.stdout);
}

/// A check whose grid is smaller than its data says why the results are wrong, and `:hint`
/// then gives that (and a finding's advice) before the exercise's own hints.
#[test]
fn a_failed_check_says_why_and_hint_gives_that_first() {
    let dir = tempfile::tempdir().unwrap();
    let lesson = std::fs::read_to_string(root().join(COURSE).join("01-fill.md")).unwrap();
    let small = lesson.replace(
        "config n = 100, blocks = 4, threads = 32    # four blocks, ragged tail\n",
        "config n = 10000, blocks = 4, threads = 128 # far fewer threads than elements\n",
    );
    assert!(small.contains("n = 10000"));
    std::fs::write(dir.path().join("01-fill.md"), small).unwrap();
    let data = tempfile::tempdir().unwrap();
    let course = dir.path().display().to_string();
    let run = gridlab()
        .env("XDG_DATA_HOME", &data.path().display().to_string())
        .args(["--course", &course, "--backend", "sim", "learn", "1"])
        .stdin(&format!(":next\n{RIGHT_TWICE}:check\n:hint\n:hint\n"))
        .run();
    let out = &run.stdout;
    let flat = out.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        flat.contains("this expect did not hold: the launch had 512 threads for 10,000 elements of `a`, and elements 512 to 9,999 were never written: add a grid-stride loop, or launch more blocks"),
        "{out}"
    );
    let hint = out.split(">>> :hint\n").nth(1).unwrap_or_default();
    assert!(hint.starts_with("From your last `:check`:\nthe launch had 512 threads"), "{out}");
    let second = out.split(">>> :hint\n").nth(2).unwrap_or_default();
    assert!(second.starts_with("Hint 1 of 2:"), "{out}");
    // A finding's advice, the same way.
    let run = gridlab()
        .env("XDG_DATA_HOME", &data.path().display().to_string())
        .args(["--course", COURSE, "--backend", "sim", "learn", "1"])
        .stdin(&format!(":next\n{}:check\n:hint\n", RIGHT_TWICE.replace("blockIdx.x * blockDim.x", "blockIdx.x")))
        .run();
    let hint = run.stdout.split(">>> :hint\n").nth(1).unwrap_or_default();
    assert!(hint.starts_with("From your last `:check`:\ndata race on `a`"), "{}", run.stdout);
    let flat = hint.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(flat.contains("each thread should own its element"), "{}", run.stdout);
}

#[test]
fn a_failed_check_on_a_matrix_names_the_columns_never_written_and_why() {
    let data = tempfile::tempdir().unwrap();
    let course = root().join("lessons").display().to_string();
    // Row and column taken from the wrong axes: the column index stops where y's threads end.
    let swapped = "__global__ void scale2d(float *m, int rows, int cols, float s) {\n\
                   int r = blockIdx.x * blockDim.x + threadIdx.x;\n\
                   int c = blockIdx.y * blockDim.y + threadIdx.y;\n\
                   if (r < rows && c < cols) m[r * cols + c] *= s;\n}\n";
    // The same mistake in Python first: the CUDA C kernel typed after it takes its name.
    let python = "@cuda.jit\ndef scale2d(m, rows, cols, s):\n    r, c = cuda.grid(2)\n    \
                  if r < rows and c < cols:\n        m[r, c] *= s\n\n";
    let run = gridlab()
        .env("XDG_DATA_HOME", &data.path().display().to_string())
        .args(["--course", &course, "--backend", "sim", "learn", "6"])
        .stdin(&format!(":next\n:next\n:next\n:next\n{python}:check\n{swapped}:check\n"))
        .run();
    let flat = run.stdout.split_whitespace().collect::<Vec<_>>().join(" ");
    let why = "columns 16 to 19 of `m` were never written: the column index stops at 15, where the grid's y threads end: it was taken from y, but x runs along the columns";
    assert_eq!(flat.matches(why).count(), 2, "{}", run.stdout);
    assert!(flat.contains("redefined kernel scale2d(float *m, int rows, int cols, float s)"), "{}", run.stdout);
}

/// A check that fails on a cost field says where the cost goes: the costliest line and what to
/// do, as `:profile` marks it.
#[test]
fn a_failed_cost_check_names_the_costliest_line() {
    let strided = "__global__ void brighten(float *img, int rows, int cols, float gain) {\n\
                   int i = blockIdx.x * blockDim.x + threadIdx.x;\n\
                   int r = i % rows;\n\
                   int c = i / rows;\n\
                   if (i < rows * cols) img[r * cols + c] *= gain;\n}\n";
    let (out, flat) = learn_real("cuda", "11", &format!(":next\n:next\n:next\n:next\n{strided}:check\n"));
    assert!(
        flat.contains("this expect did not hold: line 5 (`if (i < rows * cols) img[r * cols + c] *= gain;`): the lanes of a warp touch 32.0 sectors per request instead of 4.0"),
        "{out}"
    );
}

/// A check that counts one cost (`expect c.atomics <= blocks`) says why for that count, even
/// when the atomics are not what limits the launch, and `:hint` repeats it instead of the
/// exercise's hint about another mistake.
#[test]
fn a_failed_atomics_check_names_the_line_that_makes_them() {
    let per_element = "@cuda.jit\ndef sum_squares(x, total, n):\n    \
                       for i in range(cuda.grid(1), n, cuda.gridsize(1)):\n        \
                       cuda.atomic.add(total, 0, x[i] * x[i])\n\n";
    let (out, flat) = learn_real("python", "9", &format!(":step 4\n{per_element}:check\n:hint\n"));
    let why = "line 4 (`cuda.atomic.add(total, 0, x[i] * x[i])`): 1,000 atomics land on one address and run one \
               after another: combine first (a shared-memory or warp-shuffle reduction per block) and let one \
               thread per block do the atomic";
    assert!(flat.contains(&format!("this expect did not hold: {why}")), "{out}");
    assert!(flat.contains(&format!("From your last `:check`: {why}")), "{out}");
}

/// A reduction without the barrier after its shared array is filled reads elements another
/// thread writes later: the uninitialised read is said to be that missing barrier, with the
/// line that writes, not "write every element first".
#[test]
fn an_early_read_of_a_shared_array_is_a_missing_barrier_not_a_missing_initialisation() {
    let no_barrier = "@cuda.jit\ndef sum_squares(x, total, n):\n    s = cuda.shared.array(256, float32)\n    \
                      tid = cuda.threadIdx.x\n    acc = float32(0.0)\n    \
                      for i in range(cuda.grid(1), n, cuda.gridsize(1)):\n        acc += x[i] * x[i]\n    \
                      s[tid] = acc\n    half = cuda.blockDim.x // 2\n    while half > 0:\n        \
                      if tid < half:\n            s[tid] += s[tid + half]\n        cuda.syncthreads()\n        \
                      half //= 2\n    if tid == 0:\n        cuda.atomic.add(total, 0, s[0])\n\n";
    let (out, flat) = learn_real("python", "9", &format!(":step 4\n{no_barrier}:check\n:hint\n"));
    let why = "the kernel does write `s`, on line 8 (`s[tid] = acc`), but nothing makes the reading thread wait \
               for that write: put cuda.syncthreads() after line 8 and before line 12";
    // In the launch's findings, and again from `:hint`, as the check's advice.
    assert_eq!(flat.matches(why).count(), 2, "{out}");
    assert!(!flat.contains("write every element of `s` before any thread reads it"), "{out}");
}

/// A warp that diverges on the data its threads read is told to change which elements it
/// reads, not to branch on the warp's number (lesson 13's exercise).
#[test]
fn divergence_on_the_data_points_at_the_elements_a_warp_reads() {
    let interleaved = "__global__ void clamp_signs(float *x, int n) {\n\
                       int t = blockIdx.x * blockDim.x + threadIdx.x;\n\
                       int half = (n + 1) / 2;\n\
                       int i = t % 2 == 0 ? t / 2 : half + t / 2;\n\
                       if (t < n && i < n) {\n\
                           if (x[i] < 0.0f) {\n\
                               x[i] = x[i] * x[i];\n\
                           } else {\n\
                               x[i] = x[i] * 0.5f;\n\
                           }\n\
                       }\n}\n";
    let (out, flat) = learn_real("cuda", "13", &format!(":step 3\n{interleaved}:check\n"));
    assert!(
        flat.contains("the branch on line 6 (`x[i] < 0.0f`) goes by the data each thread reads, and the threads of a warp read elements that go different ways"),
        "{out}"
    );
    assert!(!flat.contains("branch on something the same for a whole warp"), "{out}");
}

/// A solution shown to a learner leaves out the author's notes to `dev check --mutants`.
#[test]
fn a_shown_solution_has_no_mutant_markers() {
    let marked = std::fs::read_to_string(root().join("lessons/08-shared-memory.md")).unwrap();
    assert!(marked.contains("gridlab: equivalent"), "lesson 8's solution is marked");
    let (out, _) = learn_real("cuda", "8", ":next\n:next\n:next\n:next\n:solution\n:solution\n");
    assert!(out.contains("if (tid == 0) out[blockIdx.x] = s[0];\n"), "{out}");
    assert!(!out.contains("gridlab: equivalent"), "{out}");
}

/// One thread that writes only its first element is told to loop, not to add a grid-stride
/// loop or blocks (lesson 1 launches one thread on purpose).
#[test]
fn a_failed_check_with_one_thread_says_that_thread_must_loop() {
    let starter = "__global__ void double_all(float *a, int n) {\n    a[0] = a[0] * 2.0f;\n}\n";
    let (out, flat) = learn_real("cuda", "1", &format!(":next\n:next\n:next\n{starter}:check\n"));
    assert!(
        flat.contains("the launch had 1 thread for 5 elements of `a`, and elements 1 to 4 were never written: that one thread must loop over all of them"),
        "{out}"
    );
}

/// A reduction that pads the missing elements with a value that wins (0 for a max of negative
/// numbers): the check says the wrong value is the kernel's own constant, on which line, and
/// what a stand-in must be, in the kernel's language.
#[test]
fn a_failed_check_traces_a_wrong_value_to_the_kernels_own_constant() {
    let c = "__global__ void block_max(const float *in, float *out, int n) {\n\
             __shared__ float s[256];\n\
             int tid = threadIdx.x;\n\
             int i = blockIdx.x * blockDim.x + tid;\n\
             s[tid] = i < n ? in[i] : 0.0f;\n\
             __syncthreads();\n\
             for (int k = blockDim.x / 2; k > 0; k /= 2) {\n\
             if (tid < k) s[tid] = fmaxf(s[tid], s[tid + k]);\n\
             __syncthreads();\n\
             }\n\
             if (tid == 0) out[blockIdx.x] = s[0];\n}\n";
    let python = "@cuda.jit\ndef block_max(x, out, n):\n    s = cuda.shared.array(256, float32)\n    \
                  tid = cuda.threadIdx.x\n    i = cuda.grid(1)\n    s[tid] = x[i] if i < n else 0\n    \
                  cuda.syncthreads()\n    k = cuda.blockDim.x // 2\n    while k > 0:\n        \
                  if tid < k:\n            s[tid] = max(s[tid], s[tid + k])\n        \
                  cuda.syncthreads()\n        k //= 2\n    if tid == 0:\n        \
                  out[cuda.blockIdx.x] = s[0]\n\n";
    for (lang, kernel, line, max) in [
        ("cuda", c, "at kernel block_max, line 5 (`s[tid] = i < n ? in[i] : 0.0f;`)", "-INFINITY for a max"),
        ("python", python, "at kernel block_max, line 6 (`s[tid] = x[i] if i < n else 0`)", "-math.inf for a max"),
    ] {
        let (out, flat) = learn_real(lang, "8", &format!(":next\n:next\n:next\n:next\n{kernel}:check\n"));
        let why = format!(
            "this expect did not hold: `out` got 0, a value none of the launch's inputs holds: it is the kernel's own constant, {line}"
        );
        assert!(flat.contains(&why), "{lang}: {out}");
        assert!(flat.contains(max), "{lang}: {out}");
    }
}

#[test]
fn figures_in_prose_must_be_what_the_lesson_printed() {
    let dir = tempfile::tempdir().unwrap();
    let lesson = "+++\ntitle = \"Steps\"\nsummary = \"s\"\n+++\n## Count\n\n```cuda\n__global__ void k(float *a) { a[threadIdx.x] = 1; }\n```\n\n```gridlab\nlet a = zeros(64)\nk<<<1, 64>>>(a)\n```\n\nThat launch took 10 warp steps. On an H100 it takes 3 us.\n";
    std::fs::write(dir.path().join("01-steps.md"), lesson).unwrap();
    let run = gridlab().args(["replay", dir.path().to_str().unwrap(), "--backend", "sim"]).run();
    assert_eq!(run.code, 0, "the figure holds, and the H100's is not the simulator's to check:\n{}", run.stdout);

    // Prose that drifted from what the simulator prints fails, at its line, in replay and dev check.
    std::fs::write(dir.path().join("01-steps.md"), lesson.replace("took 10 warp", "took 12 warp")).unwrap();
    for command in [&["replay"][..], &["dev", "check"]] {
        let mut args = command.to_vec();
        args.extend([dir.path().to_str().unwrap(), "--backend", "sim"]);
        let run = gridlab().args(args).run();
        assert_eq!(run.code, 1, "{command:?}: a figure the lesson never printed fails:\n{}", run.stdout);
        assert!(
            run.stdout
                .contains("01-steps.md:16: the prose quotes `12 warp steps`, which the lesson's blocks never printed"),
            "{}",
            run.stdout
        );
    }
}

#[test]
fn a_step_moved_past_defines_what_the_steps_ahead_build_on_and_keeps_the_learners_own() {
    let data = tempfile::tempdir().unwrap();
    // Step 1 skipped whole: its kernel and buffer are defined, so step 2's launch finds them.
    let run = in_home(data.path(), &["learn", "1"], ":next\nfill<<<1, 1>>>(a, len(a))\na\n");
    assert_eq!(run.code, 0, "{}", run.stdout);
    let flat = run.stdout.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(flat.contains("you moved past step 1 without running all of it: its `fill` and `a` are defined"), "{flat}");
    assert!(flat.contains("[0. 1. 2. 3.]"), "{flat}");
    // A kernel and a buffer of the learner's own under those names are kept as they are.
    let mine = "__global__ void fill(float *a, int n) { for (int i = 0; i < n; ++i) a[i] = 7; }\nlet a = zeros(2)\n";
    let run = in_home(data.path(), &["learn", "1"], &format!("{mine}:next\nfill<<<1, 1>>>(a, len(a))\na\n"));
    let flat = run.stdout.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(!flat.contains("you moved past"), "{flat}");
    assert!(flat.contains("[7. 7.]"), "{flat}");
}

#[test]
fn step_n_goes_to_a_step_and_a_command_that_takes_nothing_refuses_a_word() {
    let data = tempfile::tempdir().unwrap();
    let run = in_home(data.path(), &["learn", "1"], ":step 2\n:step 9\n:next 5\n");
    let out = &run.stdout;
    assert!(out.contains("Step 2 of 2: Your turn"), "{out}");
    assert!(out.contains("error: lesson 1 has steps 1 to 2"), "{out}");
    assert!(out.contains("usage: :step [N]"), "{out}");
    // `:next 5` does not quietly do what `:next` does.
    assert!(out.contains("error: `:next` takes nothing after its name (`5` was typed after it)"), "{out}");
}
