//! The interactive prompt, driven in a pseudo-terminal as a learner would: keys go in, the
//! screen is rendered with a terminal emulator (vt100) and checked as text.
#![cfg(unix)]

use std::io::Write;
use std::num::NonZeroU16;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use expectrl::session::OsSession;

const ROWS: u16 = 60;
const COLS: u16 = 100;
const DSR: &[u8] = b"\x1b[6n";

/// A running `gridlab` in a pseudo-terminal, with the screen it drew.
struct Terminal {
    session: OsSession,
    rows: u16,
    screen: vt100::Parser,
    /// Bytes not yet given to the emulator (a cursor-position query may be cut in two).
    pending: Vec<u8>,
}

impl Terminal {
    fn start(home: &Path, args: &[&str]) -> Terminal {
        Terminal::start_with(home, args, &[])
    }

    /// Start with environment changes: `(name, None)` removes a variable.
    fn start_with(home: &Path, args: &[&str], env: &[(&str, Option<&str>)]) -> Terminal {
        Terminal::start_sized(home, args, env, ROWS)
    }

    /// Start in a terminal of `rows` rows (a projector's 30, say).
    fn start_sized(home: &Path, args: &[&str], env: &[(&str, Option<&str>)], rows: u16) -> Terminal {
        // The pseudo-terminal is made at a default size and resized after the spawn; gridlab
        // reads its width when it starts, so under load it could read the default (80) and
        // wrap lines the tests look for. `stty` sizes it before gridlab starts.
        let mut cmd = Command::new("sh");
        cmd.arg("-c")
            .arg(format!("stty cols {COLS} rows {rows} 2>/dev/null; exec \"$0\" \"$@\""))
            .arg(env!("CARGO_BIN_EXE_gridlab"))
            .args(args)
            .current_dir(home)
            .env("GRIDLAB_NO_LESSON", "1")
            .env("GRIDLAB_LANG", "cuda")
            .env("HOME", home)
            .env("XDG_STATE_HOME", home.join("state"))
            .env("XDG_DATA_HOME", home.join("data"))
            .env("TERM", "xterm-256color")
            .env("COLUMNS", COLS.to_string())
            .env("LINES", rows.to_string())
            .env_remove("NO_COLOR");
        for (name, value) in env {
            match value {
                Some(v) => cmd.env(name, v),
                None => cmd.env_remove(name),
            };
        }
        let mut session = OsSession::spawn(cmd).expect("gridlab starts in a pseudo-terminal");
        session.get_process_mut().set_window_size(COLS, rows).expect("the window size can be set");
        Terminal {
            session,
            rows,
            screen: vt100::Parser::new(NonZeroU16::new(rows).unwrap(), NonZeroU16::new(COLS).unwrap(), 0),
            pending: Vec::new(),
        }
    }

    /// Read what the program wrote, answering its cursor-position queries as a terminal does.
    fn pump(&mut self) {
        let mut buf = [0u8; 8192];
        while let Ok(n @ 1..) = self.session.try_read(&mut buf) {
            self.pending.extend_from_slice(&buf[..n]);
        }
        while let Some(at) = self.pending.windows(DSR.len()).position(|w| w == DSR) {
            let chunk: Vec<u8> = self.pending.drain(..at + DSR.len()).collect();
            self.screen.process(&chunk);
            let (row, col) = self.screen.screen().cursor_position();
            write!(self.session, "\x1b[{};{}R", row + 1, col + 1).unwrap();
            self.session.flush().unwrap();
        }
        let keep = (1..DSR.len()).rev().find(|&k| self.pending.ends_with(&DSR[..k])).unwrap_or(0);
        let chunk: Vec<u8> = self.pending.drain(..self.pending.len() - keep).collect();
        self.screen.process(&chunk);
    }

    /// The colour and boldness of the first character of `what` on the screen.
    fn look_of(&self, what: &str) -> (vt100::Color, bool) {
        let screen = self.screen.screen();
        for (row, line) in screen.rows(0, COLS).enumerate() {
            if let Some(col) = line.find(what) {
                let cell = screen.cell(row as u16, col as u16).unwrap();
                return (cell.fgcolor(), cell.bold());
            }
        }
        panic!("{what:?} is not on the screen:\n{}", self.text());
    }

    /// Every piece of text on the screen that is dim or dark grey (the colours a projector
    /// washes out), with its row.
    fn faint(&self) -> Vec<(u16, String)> {
        let screen = self.screen.screen();
        let mut faint = Vec::new();
        for row in 0..self.rows {
            let mut text = String::new();
            for col in 0..COLS {
                let Some(cell) = screen.cell(row, col) else { continue };
                if cell.contents().trim().is_empty() {
                    continue;
                }
                if cell.dim() || cell.fgcolor() == vt100::Color::Idx(8) {
                    text.push_str(cell.contents());
                }
            }
            if !text.is_empty() {
                faint.push((row, text));
            }
        }
        faint
    }

    fn text(&self) -> String {
        self.screen.screen().contents()
    }

    /// Wait until the screen shows `what`.
    fn wait_for(&mut self, what: &str) {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            self.pump();
            if self.text().contains(what) {
                return;
            }
            assert!(Instant::now() < deadline, "the screen never showed {what:?}; it shows:\n{}", self.text());
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Wait until the editor shows a fresh, empty prompt on its last line: `count` of them in all.
    fn prompt(&mut self, count: usize) {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            self.pump();
            let text = self.text();
            let last = text.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("");
            if last.trim_end() == "sim>" && text.matches("sim>").count() >= count {
                return;
            }
            assert!(Instant::now() < deadline, "no prompt number {count}; the screen shows:\n{text}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Wait until `ready` holds of the screen's text (`what` says what it waits for).
    fn wait_until(&mut self, what: &str, ready: impl Fn(&str) -> bool) {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            self.pump();
            if ready(&self.text()) {
                return;
            }
            assert!(Instant::now() < deadline, "the screen never showed {what}; it shows:\n{}", self.text());
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Wait until the last line on the screen is `line` (an empty prompt, say).
    /// Ctrl-C to clear the editor, then Ctrl-D on the empty prompt once the editor reads again:
    /// typed between two reads, the terminal's own line discipline (not the editor) would take
    /// the Ctrl-D, and the session would not end.
    fn clear_and_leave(&mut self) {
        self.keys("\x03");
        self.leave();
    }

    /// Ctrl-D once the editor reads again on an empty prompt (see `clear_and_leave`): output
    /// can reach the screen before the editor is back, and a Ctrl-D typed then is lost.
    fn leave(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            self.pump();
            let text = self.text();
            if text.lines().rev().find(|l| !l.trim().is_empty()).is_some_and(|l| l.trim_end().ends_with('>')) {
                break;
            }
            assert!(Instant::now() < deadline, "the prompt never came back empty; the screen shows:\n{text}");
            std::thread::sleep(Duration::from_millis(20));
        }
        self.keys("\x04");
    }

    fn wait_for_last_line(&mut self, line: &str) {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            self.pump();
            let text = self.text();
            if text.lines().rev().find(|l| !l.trim().is_empty()).is_some_and(|l| l.trim_end() == line) {
                return;
            }
            assert!(Instant::now() < deadline, "the last line never became {line:?}; the screen shows:\n{text}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Type keys, a little at a time as a person would (and as the editor expects).
    fn keys(&mut self, keys: &str) {
        self.session.write_all(keys.as_bytes()).unwrap();
        self.session.flush().unwrap();
        std::thread::sleep(Duration::from_millis(50));
        self.pump();
    }

    /// Wait until the program exits and return its exit code.
    fn exit_code(&mut self) -> i32 {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            self.pump();
            match self.session.get_process().status() {
                Ok(expectrl::process::unix::WaitStatus::Exited(_, code)) => return code,
                Ok(expectrl::process::unix::WaitStatus::StillAlive) | Err(_) => {}
                Ok(other) => panic!("gridlab ended with {other:?}"),
            }
            assert!(Instant::now() < deadline, "gridlab did not exit; the screen shows:\n{}", self.text());
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

#[test]
fn a_learner_types_launches_completes_and_leaves() {
    let home = tempfile::tempdir().unwrap();
    let mut t = Terminal::start(home.path(), &[]);
    t.wait_for("sim> ");
    assert!(!t.text().contains("Lesson 1"), "GRIDLAB_NO_LESSON starts without a lesson:\n{}", t.text());

    // A kernel over several lines: the editor keeps reading while the braces are open.
    t.keys("__global__ void scale(float *a, float s, int n) {\r");
    t.wait_for("...  ");
    // Coloured as typed: the qualifier is bold, the type is not.
    assert_ne!(t.look_of("__global__"), (vt100::Color::Default, false), "{}", t.text());
    assert_ne!(t.look_of("float *a").0, vt100::Color::Default);
    t.keys("int i = blockIdx.x * blockDim.x + threadIdx.x;\r");
    t.keys("if (i < n) a[i] = a[i] * s;\r");
    t.keys("}\r");
    t.wait_for("defined kernel scale(");

    t.keys("let a = arange(8)\r");
    // Tab completes the kernel's name.
    t.keys("sc\t");
    t.wait_for("sim> scale");
    t.keys("<<<2, 4>>>(a, 2.0, len(a))\r");
    t.wait_for("scale<<<2, 4>>>");
    t.keys("a\r");
    t.wait_for("14");

    // Ctrl-C drops a half-typed line: no `b` is made.
    t.prompt(5);
    t.keys("let b = zer");
    t.keys("\x03");
    t.prompt(6);
    t.keys(":buf\t");
    t.wait_for("sim> :buffers");
    t.keys("\r");
    t.wait_for("bytes");
    let screen = t.text();
    let table = &screen[screen.rfind(":buffers").unwrap()..];
    assert!(table.contains(" a ") && !table.contains(" b "), "only `a` exists:\n{screen}");

    // Ctrl-D leaves and says where history is.
    t.keys("\x04");
    t.wait_for("history is saved in");
    assert_eq!(t.exit_code(), 0);
    let history = std::fs::read_to_string(home.path().join("state/gridlab/history")).unwrap();
    assert!(history.contains("let a = arange(8)"), "{history}");
    assert!(!history.contains("let b = zer"), "{history}");
}

#[test]
fn exit_quit_and_colon_q_leave_as_ctrl_d_does() {
    for leave in ["exit", "quit()", ":q", ":quit"] {
        let home = tempfile::tempdir().unwrap();
        let mut t = Terminal::start(home.path(), &[]);
        t.wait_for("sim> ");
        t.keys("let a = arange(4)\r");
        t.prompt(2);
        t.keys(&format!("{leave}\r"));
        t.wait_for("history is saved in");
        assert_eq!(t.exit_code(), 0, "{leave}");
    }
}

#[test]
fn ctrl_c_stops_a_running_launch_and_keeps_the_buffers() {
    let home = tempfile::tempdir().unwrap();
    let mut t = Terminal::start(home.path(), &["--max-steps", "1000000000000"]);
    t.wait_for("sim> ");
    t.keys("__global__ void spin(int *a) { a[0] = 7; while (a[1] == 0) {} }\r");
    t.wait_for("defined kernel spin(");
    t.keys("let a = zeros(2, i32)\r");
    t.prompt(3);
    t.keys("spin<<<1, 1>>>(a)\r");
    std::thread::sleep(Duration::from_millis(500));
    t.keys("\x03");
    t.wait_for("stopped by Ctrl-C; buffers are as they were before the launch");
    t.prompt(4);
    t.keys("expect a[0] == 0\r");
    t.wait_for("ok");
    t.leave();
    assert_eq!(t.exit_code(), 0);
}

#[test]
fn without_a_usable_state_folder_history_stays_in_memory() {
    let home = tempfile::tempdir().unwrap();
    // A file where the state folder should be: `gridlab/history` cannot be made under it.
    std::fs::write(home.path().join("state"), "").unwrap();
    let mut t =
        Terminal::start_with(home.path(), &["--no-lesson"], &[("GRIDLAB_NO_LESSON", None), ("NO_COLOR", Some("1"))]);
    t.wait_for("history is kept for this session only");
    t.prompt(1);
    assert!(!t.text().contains("Lesson 1"), "--no-lesson starts without a lesson:\n{}", t.text());
    t.keys("let x = 1 # no colours with NO_COLOR\r");
    t.prompt(2);
    assert_eq!(t.look_of("let x"), (vt100::Color::Default, false));
    // History still works within the session: Up brings the last input back.
    t.keys("\x1b[A");
    t.wait_for("sim> let x = 1 # no colours");
    t.clear_and_leave();
    t.wait_for("history was kept in memory only");
    assert_eq!(t.exit_code(), 0);
}

/// Up recalls a kernel with the cursor at its end, so the next Up moves into it (as in a code
/// editor) rather than on to an older input; past its first line, Up goes on through history.
#[test]
fn up_on_a_recalled_kernel_moves_into_its_lines() {
    let home = tempfile::tempdir().unwrap();
    let mut t = Terminal::start(home.path(), &[]);
    t.wait_for("sim> ");
    t.keys("let b = 1\r");
    t.prompt(2);
    t.keys("__global__ void k(float *a) {\r");
    t.keys("a[0] = 1;\r");
    t.keys("}\r");
    t.wait_for("defined kernel k(");
    t.keys("let a = zeros(4)\r");
    t.prompt(4);
    // Up: `let a`; Up: the kernel, cursor after its `}`; Up: its second line.
    for _ in 0..3 {
        t.keys("\x1b[A");
        std::thread::sleep(Duration::from_millis(150));
    }
    t.keys("\x1b[F a[1] = 2;\r");
    t.wait_for("redefined kernel k(");
    t.prompt(5);
    t.keys("k<<<1, 1>>>(a)\r");
    t.prompt(6);
    t.keys("expect a[1] == 2\r");
    t.wait_for("ok");
    // Alt-Up goes to the older input at once, from any line.
    t.keys("\x1b[1;3A");
    t.wait_for("sim> expect a[1] == 2");
    t.clear_and_leave();
    assert_eq!(t.exit_code(), 0);
}

#[test]
fn race_and_map_draw_their_views_on_the_screen() {
    let home = tempfile::tempdir().unwrap();
    let mut t = Terminal::start(home.path(), &[]);
    t.wait_for("sim> ");
    t.keys("__global__ void add_half_everywhere(float *a, int n) { for (int i = 0; i < n; i++) a[i] += 0.5f; }\r");
    t.wait_for("defined kernel add_half_everywhere(");
    t.keys("let a = [0, 1]\r");
    t.prompt(3);
    t.keys(":race add_half_everywhere<<<8, 64>>>(a, len(a)) x4\r");
    // The verdict under the table and the histogram, and the sequential answer in the table.
    t.wait_for("different results in 4 runs: the result depends on timing");
    let screen = t.text();
    assert!(screen.contains("│ sequential ┆ A"), "{screen}");
    assert!(screen.contains("│ seed 3 "), "{screen}");
    t.prompt(4);

    t.keys("__global__ void add_half(float *a, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) a[i] += 0.5f; }\r");
    t.wait_for("defined kernel add_half(");
    t.keys("let b = zeros(100)\r");
    t.prompt(6);
    t.keys(":map add_half<<<4, 32>>>(b, len(b))\r");
    // The map's legend: in a colour terminal, a colour per block.
    t.wait_for("blocks: 0█ 1█ 2█ 3█");
    let screen = t.text();
    assert!(screen.contains("character and colour = block, lighter = lower thread index"), "{screen}");
    assert!(screen.contains("· nobody wrote it;") && screen.contains("! written twice or more"), "{screen}");
    assert!(screen.contains("who wrote each element (grid 4, block 32"), "{screen}");
    // The cells are the blocks' digits, as the lessons describe the map, and coloured as well.
    let strip = format!("     0 {}{}{}", "0".repeat(32), "1".repeat(32), "2".repeat(28));
    assert!(screen.lines().any(|l| l == strip), "{screen}");
    let vt = t.screen.screen();
    let row = vt.rows(0, COLS).position(|l| l == strip).unwrap() as u16;
    let (zero, one) = (vt.cell(row, 7).unwrap(), vt.cell(row, 7 + 32).unwrap());
    assert_eq!((zero.contents(), one.contents()), ("0", "1"));
    assert_ne!(format!("{:?}", zero.fgcolor()), format!("{:?}", one.fgcolor()));
    // `blocks: 0█ 1█ 2█ 3█`: the squares (columns 9, 12, 15, 18) have four different colours.
    let vt = t.screen.screen();
    let row = vt.rows(0, COLS).position(|l| l.starts_with("blocks: ")).unwrap() as u16;
    let mut colours: Vec<String> =
        [9, 12, 15, 18].iter().map(|&c| format!("{:?}", vt.cell(row, c).unwrap().fgcolor())).collect();
    colours.sort();
    colours.dedup();
    assert_eq!(colours.len(), 4, "{colours:?}");
    assert!(screen.contains("b[100]: 100 of 100 written"), "{screen}");
    t.prompt(7);
    // The views ran on copies: the session's buffers are as they were.
    t.keys("expect a == [0, 1]\r");
    t.prompt(8);
    assert!(t.text().lines().any(|l| l.trim_end() == "ok"), "{}", t.text());
    t.keys("\x04");
    assert_eq!(t.exit_code(), 0);
}

#[test]
fn the_first_start_asks_for_a_language_once_and_lessons_come_in_it() {
    let home = tempfile::tempdir().unwrap();
    let course = super::harness::root().join("tests/fixtures/bilingual");
    let course = course.to_str().unwrap();
    let unset = [("GRIDLAB_NO_LESSON", None), ("GRIDLAB_LANG", None)];
    let mut t = Terminal::start_with(home.path(), &["--course", course], &unset);
    t.wait_for("Which language do you want to write kernels in?");
    t.keys("2\r");
    t.wait_for("Lessons will be in Python (Numba).");
    t.wait_for("sim lesson 1.1> @cuda.jit");
    t.wait_for("In CUDA C");
    t.keys("\r");
    t.wait_for("defined Python kernel fill(a, n)");
    t.wait_for("sim lesson 1.1> let a = zeros(4)");
    t.keys("\x04");
    assert_eq!(t.exit_code(), 0);
    // Asked once: the next start goes straight to the lesson, in Python.
    let mut t = Terminal::start_with(home.path(), &["--course", course], &unset);
    t.wait_for("sim lesson 1.1> @cuda.jit");
    assert!(!t.text().contains("Which language"), "{}", t.text());
    t.keys("\x04");
    assert_eq!(t.exit_code(), 0);
}

#[test]
fn a_lesson_puts_each_input_in_the_editor_asks_before_a_solution_and_resumes() {
    let home = tempfile::tempdir().unwrap();
    let course = super::harness::root().join("tests/fixtures/course");
    let course = course.to_str().unwrap();
    // No arguments: the course opens at its first lesson, with the kernel in the editor.
    let mut t = Terminal::start_with(home.path(), &["--course", course], &[("GRIDLAB_NO_LESSON", None)]);
    t.wait_for("Lesson 1 of 2: Fill an array");
    t.wait_for("sim lesson 1.1> __global__ void fill(float *a, int n) {");
    t.keys("\r");
    t.wait_for("defined kernel fill(float *a, int n)");
    t.wait_for("sim lesson 1.1> let a = zeros(4)");
    // Ctrl-C clears the suggestion; a command does not use it up.
    t.keys("\x03");
    t.keys(":next\r");
    t.wait_for("── Step 2 of 2: Your turn");
    t.wait_for("sim lesson 1.2> __global__ void twice(float *a, int n) {");
    t.keys("\x03");
    t.keys(":solution\r");
    t.wait_for("Show a solution? Trying first teaches more. [y/N]");
    t.keys("y\r");
    t.wait_for("A solution (it is in your editor");
    t.wait_for("if (i < n) a[i] *= 2;");
    t.keys("\r");
    t.wait_for("defined kernel twice(float *a, int n)");
    t.keys(":check\r");
    t.wait_for("Solved!");
    t.keys("\x04");
    assert_eq!(t.exit_code(), 0);

    // Back again: gridlab resumes at step 2 and has run step 1's kernel and statements.
    let mut t = Terminal::start_with(home.path(), &["--course", course], &[("GRIDLAB_NO_LESSON", None)]);
    t.wait_for("Welcome back. (Ran the kernels and statements of step 1 again");
    t.wait_for("Lesson 1 of 2: Fill an array");
    t.wait_for("── Step 2 of 2: Your turn");
    t.wait_for("already solved");
    t.keys("\x03");
    t.keys(":kernels\r");
    t.wait_for("fill(float *a, int n)");
    t.keys("\x04");
    assert_eq!(t.exit_code(), 0);
}

#[test]
fn a_demo_moves_on_with_each_enter() {
    let home = tempfile::tempdir().unwrap();
    let course = super::harness::root().join("tests/fixtures/course");
    let mut t = Terminal::start(home.path(), &["demo", "1", "--course", course.to_str().unwrap()]);
    t.wait_for("(Enter on an empty line shows the next part)");
    t.wait_for("This kernel writes every element from one thread.");
    assert!(!t.text().contains("__global__ void fill"), "the code comes later, typed in:\n{}", t.text());
    // Enter: the kernel is typed into the editor; Enter again runs it.
    t.keys("\r");
    t.wait_for("sim lesson 1.1> __global__ void fill(float *a, int n) {");
    t.keys("\r");
    t.wait_for("defined kernel fill(float *a, int n)");
    // The next Enter (at the empty prompt) types the first statement of the next block.
    t.wait_for_last_line("sim lesson 1.1>");
    t.keys("\r");
    t.wait_for("sim lesson 1.1> let a = zeros(4)");
    t.clear_and_leave();
    assert_eq!(t.exit_code(), 0);
    // A demo leaves the presenter's own progress alone.
    assert!(!home.path().join("data/gridlab/progress").exists());
}

#[test]
fn a_demo_teaches_an_exercise_by_its_starter_and_a_solution_then_pauses_at_the_lessons_end() {
    let home = tempfile::tempdir().unwrap();
    let course = fixture_course();
    let mut t = Terminal::start(home.path(), &["demo", "1", "--course", &course]);
    // The banner does not promise to keep a place a demo never saves.
    t.wait_for("Progress is not saved.");
    assert!(!t.text().contains("your place is saved"), "{}", t.text());
    t.wait_for_last_line("sim lesson 1.1>");
    t.keys(":next\r");
    t.wait_for("┌ exercise");
    t.wait_for("│ Write twice(float *a, int n)");
    // With the task, the starter, labelled as the wrong version, is typed into the editor;
    // Enter defines it.
    t.wait_for("The starter, the wrong version a learner begins with:");
    t.wait_for("int i = threadIdx.x;");
    t.keys("\r");
    t.wait_for("defined kernel twice(float *a, int n)");
    t.wait_for_last_line("sim lesson 1.2>");
    // Its check, as `:check` prints it: why the starter is wrong.
    t.keys("\r");
    t.wait_for("Its check says why it is wrong:");
    t.wait_for_last_line("sim lesson 1.2> :check");
    t.keys("\r");
    t.wait_for("✗ not yet: with n = 100, blocks = 4, threads = 32");
    t.wait_for("data race on `a`");
    assert!(
        !t.text().contains(":solution shows one"),
        "a demo does not tell the audience to ask for it:\n{}",
        t.text()
    );
    t.wait_for_last_line("sim lesson 1.2>");
    // Then a solution, and its check passing.
    t.keys("\r");
    t.wait_for("A solution:");
    t.wait_for("int i = blockIdx.x * blockDim.x + threadIdx.x;");
    t.keys("\r");
    t.wait_for("redefined kernel twice(float *a, int n)");
    t.wait_for_last_line("sim lesson 1.2>");
    t.keys("\r");
    t.wait_for("And its check:");
    t.wait_for_last_line("sim lesson 1.2> :check");
    t.keys("\r");
    t.wait_for("✓ passed: 3 configurations");
    t.wait_for("Solved! (Enter goes on)");
    t.wait_for_last_line("sim lesson 1.2>");
    // The end of the lesson: a summary of its steps, and a pause rather than lesson 2.
    t.keys("\r");
    t.wait_for("── End of lesson 1: Fill an array");
    t.wait_for("This lesson covered:");
    t.wait_for("  1. A kernel");
    t.wait_for("  2. Your turn");
    t.wait_for("`:next` opens lesson 2 (Guard the tail), Ctrl-D leaves.");
    t.wait_for_last_line("sim lesson 1.2>");
    // The summary is on screen: more Enters leave it as it is, with no copy of its last line.
    t.keys("\r");
    t.keys("\r");
    std::thread::sleep(Duration::from_millis(300));
    t.pump();
    assert_eq!(t.text().matches("End of the lesson:").count(), 0, "{}", t.text());
    // Once something else has run, an Enter says where the demo is, once.
    t.keys(":kernels\r");
    t.wait_for("twice(float *a, int n)");
    t.wait_for_last_line("sim lesson 1.2>");
    t.keys("\r");
    t.wait_for("End of the lesson: `:next` opens lesson 2");
    t.wait_for_last_line("sim lesson 1.2>");
    t.keys("\r");
    t.keys("\r");
    std::thread::sleep(Duration::from_millis(300));
    t.pump();
    assert_eq!(t.text().matches("End of the lesson:").count(), 1, "{}", t.text());
    assert!(!t.text().contains("Lesson 2 of 2"), "the demo ran into the next lesson:\n{}", t.text());
    // `:next` goes on when the presenter asks.
    t.keys(":next\r");
    t.wait_for("Lesson 2 of 2: Guard the tail");
    t.keys("\x04");
    assert_eq!(t.exit_code(), 0);
    assert!(!home.path().join("data/gridlab/progress").exists());
}

/// `:race` in a demo sized for a projector, at 100x30: the command and the verdict on one
/// screen, nothing dim or dark grey, and the colours of the chosen background.
fn race_on_a_projector(theme: &str) -> Terminal {
    let home = tempfile::tempdir().unwrap();
    let course = fixture_course();
    let mut t = Terminal::start_sized(
        home.path(),
        &["demo", "1", "--big", "--theme", theme, "--course", &course],
        &[("GRIDLAB_THEME", None)],
        30,
    );
    t.wait_for_last_line("sim lesson 1.1>");
    t.keys("__global__ void k(float *a, int n) { for (int i = 0; i < n; i++) a[i] += 0.5f; }\r");
    t.wait_for("defined kernel k(float *a, int n)");
    t.keys("let a = [0, 1]\r");
    t.wait_for_last_line("sim lesson 1.1>");
    t.keys(":race k<<<8, 64>>>(a, len(a))\r");
    t.wait_for("10 different results in 10 runs: the result depends on timing");
    t.wait_for_last_line("sim lesson 1.1>");
    t
}

#[test]
fn race_in_a_big_demo_fits_a_projectors_screen_with_nothing_faint() {
    let t = race_on_a_projector("dark");
    let text = t.text();
    let lines: Vec<&str> = text.lines().map(str::trim_end).collect();
    let command = lines.iter().position(|l| l.ends_with(":race k<<<8, 64>>>(a, len(a))"));
    assert!(command.is_some(), "the command scrolled off:\n{text}");
    assert!(lines.iter().any(|l| l.contains("sequential") && l.contains("256.")), "no answer row:\n{text}");
    // Condensed: no rule between the rows, as it would push the command off the screen.
    assert!(!text.contains("├"), "{text}");
    // The verdict is the last thing before the prompt: no trailing blank lines.
    let last = lines.iter().rposition(|l| !l.is_empty()).unwrap();
    assert!(lines[last - 1].contains("10 different results"), "{text}");
    assert_eq!(t.faint(), Vec::<(u16, String)>::new(), "faint text on a projector:\n{text}");
    // Yellow warnings on a dark screen ...
    assert_eq!(t.look_of("10 different results").0, vt100::Color::Idx(3));
}

#[test]
fn a_light_theme_trades_yellow_and_cyan_for_colours_that_read_on_white() {
    let t = race_on_a_projector("light");
    assert_eq!(t.look_of("10 different results").0, vt100::Color::Idx(5), "{}", t.text());
    assert_eq!(t.faint(), Vec::<(u16, String)>::new(), "{}", t.text());
}

/// The fixture course, for `--course`.
fn fixture_course() -> String {
    super::harness::root().join("tests/fixtures/course").to_str().unwrap().to_string()
}

#[test]
fn the_steps_next_input_follows_every_input_and_a_colon_replaces_it() {
    let home = tempfile::tempdir().unwrap();
    let course = fixture_course();
    let mut t = Terminal::start_with(home.path(), &["learn", "2", "--course", &course], &[("GRIDLAB_NO_LESSON", None)]);
    t.wait_for("sim lesson 2.1> __global__ void total(const float *x, float *sum, int n) {");
    // `:` as the first key replaces the untouched kernel: no `}:lesson` in a continuation.
    t.keys(":lesson");
    t.wait_for_last_line("sim lesson 2.1> :lesson");
    t.keys("\r");
    t.wait_for("lesson 02-guard (step 1 of 2)");
    // After a command of the learner's own, the kernel is back in the editor.
    t.wait_for_last_line("...             }");
    assert!(!t.text().contains("}:lesson"), "{}", t.text());
    t.keys("\r");
    t.wait_for("defined kernel total(");
    // The step's own `:` command is offered like a statement, and the statement after it follows.
    t.wait_for_last_line("sim lesson 2.1> :backend sim");
    t.keys("\r");
    t.wait_for_last_line("sim lesson 2.1> let x = ones(64)");
    // A command typed over the statement replaces it, and the statement comes back after it.
    t.keys(":kernels\r");
    t.wait_for("┆ defined at");
    t.wait_for_last_line("sim lesson 2.1> let x = ones(64)");
    assert!(!t.text().contains("ones(64):kernels"), "{}", t.text());
    t.keys("\r");
    t.wait_for_last_line("sim lesson 2.1> let s = zeros(1)");
    t.keys("\r");
    t.wait_for_last_line("sim lesson 2.1> total<<<2, 32>>>(x, s, len(x))");
    t.keys("\r");
    t.wait_for_last_line("sim lesson 2.1> expect finding race");
    t.keys("\r");
    // The last input of the step: it says so, and what `:next` does.
    t.wait_for("Step 1 of 2 is done: `:next` goes on to step 2 (Make it atomic).");
    t.wait_for_last_line("sim lesson 2.1>");
    t.keys("\x04");
    assert_eq!(t.exit_code(), 0);
}

#[test]
fn no_history_hint_is_drawn_over_a_prefilled_input() {
    let home = tempfile::tempdir().unwrap();
    let course = fixture_course();
    // An earlier session ran a longer statement that starts as the step's does.
    std::fs::create_dir_all(home.path().join("state/gridlab")).unwrap();
    std::fs::write(home.path().join("state/gridlab/history"), "let a = zeros(4) + 100\n").unwrap();
    let mut t = Terminal::start_with(home.path(), &["learn", "1", "--course", &course], &[("GRIDLAB_NO_LESSON", None)]);
    t.wait_for("sim lesson 1.1> __global__ void fill(float *a, int n) {");
    t.keys("\r");
    t.wait_for("defined kernel fill(");
    t.wait_for_last_line("sim lesson 1.1> let a = zeros(4)");
    std::thread::sleep(Duration::from_millis(200));
    t.pump();
    assert!(!t.text().contains("+ 100"), "a hint over the pre-fill:\n{}", t.text());
    // Once the learner edits it (an arrow key, then typing), history hints are back.
    t.keys("\x1b[C");
    t.keys(" ");
    t.wait_for("sim lesson 1.1> let a = zeros(4) + 100");
    t.clear_and_leave();
    assert_eq!(t.exit_code(), 0);
}

#[test]
fn back_then_next_to_a_solved_exercise_offers_the_learners_own_answer() {
    let home = tempfile::tempdir().unwrap();
    let course = fixture_course();
    let env = [("GRIDLAB_NO_LESSON", None)];
    let mut t = Terminal::start_with(home.path(), &["learn", "1", "--course", &course], &env);
    t.wait_for("sim lesson 1.1> __global__ void fill(float *a, int n) {");
    t.keys(":next\r");
    t.wait_for("sim lesson 1.2> __global__ void twice(float *a, int n) {");
    t.keys("\x03");
    let answer = "__global__ void twice(float *a, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; \
                  if (i < n) a[i] = a[i] + a[i]; }";
    t.keys(answer);
    t.keys("\r");
    t.wait_for("defined kernel twice(float *a, int n)");
    t.keys(":check\r");
    t.wait_for("Solved!");
    t.keys(":back\r");
    t.wait_for("sim lesson 1.1> __global__ void fill(float *a, int n) {");
    t.keys(":next\r");
    // The editor after the step shown again holds the learner's kernel, not the starter.
    let offered = |screen: &str| {
        let step = screen.rfind("already solved")?;
        let editor = screen[step..].find("sim lesson 1.2> ")? + step;
        Some(screen[editor..].to_string())
    };
    t.wait_until("the step again with a kernel in the editor", |s| offered(s).is_some_and(|e| e.contains("twice(")));
    let editor = offered(&t.text()).unwrap();
    assert!(editor.contains("a[i] + a[i]") && !editor.contains("int i = threadIdx.x;"), "{}", t.text());
    t.clear_and_leave();
    assert_eq!(t.exit_code(), 0);

    // The answer is kept with the progress: back at the step in a new session, it is offered again.
    let mut t = Terminal::start_with(home.path(), &["--course", &course], &env);
    t.wait_for("already solved");
    t.wait_for("a[i] + a[i]");
    let screen = t.text();
    assert!(!screen.contains("int i = threadIdx.x;"), "{screen}");
    t.clear_and_leave();
    assert_eq!(t.exit_code(), 0);
}

#[test]
fn sigterm_and_sighup_restore_the_terminal_and_keep_the_history() {
    use expectrl::process::unix::Signal;
    for signal in [Signal::SIGTERM, Signal::SIGHUP] {
        let home = tempfile::tempdir().unwrap();
        let mut t = Terminal::start(home.path(), &[]);
        t.wait_for("sim> ");
        t.keys("let a = arange(8)\r");
        t.prompt(2);
        // History is written as it is made, not only when gridlab leaves.
        let history = std::fs::read_to_string(home.path().join("state/gridlab/history")).unwrap_or_default();
        assert!(history.contains("let a = arange(8)"), "{signal}: {history:?}");
        assert!(!canonical(&t), "the editor has the terminal raw");
        t.session.get_process_mut().signal(signal).unwrap();
        assert_eq!(t.exit_code(), 128 + signal as i32, "{signal}");
        assert!(canonical(&t), "{signal}: the terminal is restored");
    }
    // During a launch that would run for minutes: it stops, and gridlab leaves at once.
    let home = tempfile::tempdir().unwrap();
    let mut t = Terminal::start(home.path(), &["--max-steps", "1000000000000"]);
    t.wait_for("sim> ");
    t.keys("__global__ void spin(int *a) { while (a[1] == 0) {} }\r");
    t.wait_for("defined kernel spin(");
    t.keys("let a = zeros(2, i32)\r");
    t.prompt(3);
    t.keys("spin<<<1, 1>>>(a)\r");
    std::thread::sleep(Duration::from_millis(500));
    t.session.get_process_mut().signal(Signal::SIGTERM).unwrap();
    assert_eq!(t.exit_code(), 128 + Signal::SIGTERM as i32);
    assert!(canonical(&t));
    let history = std::fs::read_to_string(home.path().join("state/gridlab/history")).unwrap();
    assert!(history.contains("spin<<<1, 1>>>(a)"), "{history}");
}

/// Whether the terminal is in canonical (cooked) mode, as a shell expects it back; an editor
/// holds it raw.
fn canonical(t: &Terminal) -> bool {
    use std::os::fd::AsRawFd;
    let file = t.session.get_process().get_raw_handle().unwrap();
    let mut termios: libc::termios = unsafe { std::mem::zeroed() };
    assert_eq!(unsafe { libc::tcgetattr(file.as_raw_fd(), &mut termios) }, 0);
    termios.c_lflag & libc::ICANON != 0
}

#[test]
fn a_long_launch_shows_its_progress_and_stops_at_ctrl_c() {
    let home = tempfile::tempdir().unwrap();
    let mut t = Terminal::start(home.path(), &["--timeout", "600"]);
    t.wait_for("sim> ");
    t.keys("__global__ void e(int *a) { }\r");
    t.wait_for("defined kernel e(");
    t.keys("let a = zeros(1, i32)\r");
    t.prompt(3);
    t.keys("e<<<6000000, 1024>>>(a)\r");
    t.wait_for("running: block ");
    assert!(t.text().contains("of 6,000,000"), "{}", t.text());
    t.keys("\x03");
    t.wait_for("stopped by Ctrl-C");
    t.prompt(4);
    assert!(!t.text().contains("running: block "), "the progress line is cleared:\n{}", t.text());
    t.keys("\x04");
    assert_eq!(t.exit_code(), 0);
}

#[test]
fn ctrl_c_stops_a_long_statement() {
    let home = tempfile::tempdir().unwrap();
    let mut t = Terminal::start(home.path(), &[]);
    t.wait_for("sim> ");
    t.keys("let z = zeros(1 << 26)\r");
    t.prompt(2);
    t.keys("expect z + z + z + z + z + z + z + z == 0\r");
    std::thread::sleep(Duration::from_millis(300));
    t.keys("\x03");
    t.wait_for("was stopped (Ctrl-C)");
    t.prompt(3);
    t.keys("\x04");
    assert_eq!(t.exit_code(), 0);
}

#[test]
fn a_cleared_step_input_comes_back_and_a_kernel_that_failed_stays_in_the_editor() {
    let home = tempfile::tempdir().unwrap();
    let course = fixture_course();
    let mut t = Terminal::start_with(home.path(), &["learn", "2", "--course", &course], &[("GRIDLAB_NO_LESSON", None)]);
    t.wait_for("sim lesson 2.1> __global__ void total(const float *x, float *sum, int n) {");
    // Ctrl-C clears the offered kernel; a kernel of the learner's own that does not compile
    // goes back into the editor to be fixed, not into history.
    t.keys("\x03");
    t.wait_for_last_line("sim lesson 2.1>");
    t.keys("__global__ void bad(float *a) {\r");
    t.keys("a[0] = undefined_name;\r");
    t.keys("}\r");
    t.wait_for("your code is back in the editor");
    t.wait_for_last_line("...             }");
    assert!(t.text().contains("sim lesson 2.1> __global__ void bad(float *a) {"), "{}", t.text());
    // Ctrl-C clears it; Enter on the empty line brings the step's own input back.
    t.keys("\x03");
    t.wait_for_last_line("sim lesson 2.1>");
    t.keys("\r");
    t.wait_for_last_line("...             }");
    t.keys("\r");
    t.wait_for("defined kernel total(");
    t.wait_for_last_line("sim lesson 2.1> :backend sim");
    t.keys("\r");
    t.wait_for_last_line("sim lesson 2.1> let x = ones(64)");
    // Set aside with Ctrl-C, an input of the learner's own that fails brings the offer back.
    t.keys("\x03");
    t.wait_for_last_line("sim lesson 2.1>");
    t.keys("let y = no_such_function(3)\r");
    t.wait_for("no_such_function");
    t.wait_for_last_line("sim lesson 2.1> let x = ones(64)");
    t.clear_and_leave();
    assert_eq!(t.exit_code(), 0);
}

#[test]
fn a_failed_check_puts_the_learners_kernel_back_in_the_editor() {
    let home = tempfile::tempdir().unwrap();
    let course = fixture_course();
    let mut t = Terminal::start_with(home.path(), &["learn", "1", "--course", &course], &[("GRIDLAB_NO_LESSON", None)]);
    t.wait_for("sim lesson 1.1> __global__ void fill(float *a, int n) {");
    t.keys(":next\r");
    t.wait_for("sim lesson 1.2> __global__ void twice(float *a, int n) {");
    t.keys("\x03");
    // A wrong answer of the learner's own (no guard, threadIdx only), then :check.
    t.keys("__global__ void twice(float *a, int n) { a[threadIdx.x] *= 3.0f; }\r");
    t.wait_for("defined kernel twice(float *a, int n)");
    t.keys(":check\r");
    t.wait_for("Your kernel is back in the editor");
    t.wait_for_last_line("sim lesson 1.2> __global__ void twice(float *a, int n) { a[threadIdx.x] *= 3.0f; }");
    t.clear_and_leave();
    assert_eq!(t.exit_code(), 0);
}

#[test]
fn typing_replaces_a_prefilled_input_and_a_kernel_that_did_not_compile_is_the_one_check_gives_back() {
    let home = tempfile::tempdir().unwrap();
    let course = fixture_course();
    let mut t = Terminal::start_with(home.path(), &["learn", "1", "--course", &course], &[("GRIDLAB_NO_LESSON", None)]);
    t.wait_for("sim lesson 1.1> __global__ void fill(float *a, int n) {");
    t.keys("\r");
    t.wait_for("sim lesson 1.1> let a = zeros(4)");
    // Typed over the pre-fill: the learner's own statement runs, nothing glued to it.
    t.keys("let a = zeros(8)\r");
    t.keys("a\r");
    t.wait_for("a: f32[8]");
    t.keys(":next\r");
    t.wait_for("sim lesson 1.2> __global__ void twice(float *a, int n) {");
    // A kernel that compiles, then an edit of it that does not: `:check` gives back the edit.
    t.keys("__global__ void twice(float *a, int n) { a[threadIdx.x] *= 3.0f; }\r");
    t.wait_for("defined kernel twice(float *a, int n)");
    t.keys("__global__ void twice(float *a, int n) { a[threadIdx.x] *= 2.0f }\r");
    t.wait_for("error:");
    t.keys(":check\r");
    t.wait_for("Your kernel is back in the editor");
    t.wait_for_last_line("sim lesson 1.2> __global__ void twice(float *a, int n) { a[threadIdx.x] *= 2.0f }");
    t.keys("\x03");
    // A command on its own line under an unfinished kernel runs, and the kernel stays.
    t.keys("__global__ void twice(float *a, int n) {\r");
    t.keys(":lesson\r");
    t.wait_for("(step 2 of 2)");
    t.wait_for_last_line("sim lesson 1.2> __global__ void twice(float *a, int n) {");
    t.clear_and_leave();
    assert_eq!(t.exit_code(), 0);
}

#[test]
fn closing_the_terminal_window_ends_gridlab() {
    use std::os::fd::{FromRawFd, OwnedFd};
    use std::os::unix::process::CommandExt;
    let home = tempfile::tempdir().unwrap();
    let (mut master, mut slave) = (0, 0);
    // SAFETY: openpty fills in two new descriptors, owned from here on.
    let opened =
        unsafe { libc::openpty(&mut master, &mut slave, std::ptr::null_mut(), std::ptr::null(), std::ptr::null()) };
    assert_eq!(opened, 0, "a pseudo-terminal can be opened");
    // The master end must not leak into gridlab, or closing it here would not hang up.
    // SAFETY: fcntl on a descriptor this test owns.
    unsafe { libc::fcntl(master, libc::F_SETFD, libc::FD_CLOEXEC) };
    let (master, slave) = unsafe { (OwnedFd::from_raw_fd(master), OwnedFd::from_raw_fd(slave)) };
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_gridlab"));
    cmd.arg("--no-lesson")
        .env("HOME", home.path())
        .env("XDG_STATE_HOME", home.path().join("state"))
        .env("TERM", "xterm-256color")
        .stdin(slave.try_clone().unwrap())
        .stdout(slave.try_clone().unwrap())
        .stderr(slave.try_clone().unwrap());
    // SAFETY: only async-signal-safe calls between fork and exec: a new session whose
    // controlling terminal is the pty, as a terminal window's shell has.
    unsafe {
        cmd.pre_exec(|| {
            libc::setsid();
            libc::ioctl(0, libc::TIOCSCTTY as _, 0);
            Ok(())
        });
    }
    let mut child = cmd.spawn().unwrap();
    drop(slave);
    // Be the terminal until the prompt is up: answer the editor's cursor-position queries.
    let mut term = std::fs::File::from(master);
    let mut seen = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    // The prompt is drawn, in colour, and the cursor shown again.
    while !String::from_utf8_lossy(&seen).contains("sim\x1b") || !String::from_utf8_lossy(&seen).ends_with("\x1b[?25h")
    {
        assert!(Instant::now() < deadline, "no prompt: {}", String::from_utf8_lossy(&seen));
        let mut fd = libc::pollfd { fd: std::os::fd::AsRawFd::as_raw_fd(&term), events: libc::POLLIN, revents: 0 };
        // SAFETY: one valid pollfd.
        if unsafe { libc::poll(&mut fd, 1, 100) } <= 0 {
            continue;
        }
        let mut buf = [0u8; 4096];
        let n = std::io::Read::read(&mut term, &mut buf).unwrap();
        seen.extend_from_slice(&buf[..n]);
        if buf[..n].windows(DSR.len()).any(|w| w == DSR) {
            term.write_all(b"\x1b[1;1R").unwrap();
        }
    }
    std::thread::sleep(Duration::from_millis(300));
    // The window closes: the terminal hangs up.
    let master = term;
    drop(master);
    let deadline = Instant::now() + Duration::from_secs(15);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            child.kill().unwrap();
            panic!("gridlab was still running 15 s after its terminal closed");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    use std::os::unix::process::ExitStatusExt;
    assert!(status.code() == Some(129) || status.signal() == Some(libc::SIGHUP), "{status:?}");
}

/// A course of one lesson whose one step, after `prose`, runs a 16-line kernel: taller than a
/// terminal of 12 rows.
fn tall_course(prose: &str) -> tempfile::TempDir {
    let course = tempfile::tempdir().unwrap();
    let body: String = (0..14).map(|k| format!("    a[{k}] = {k}.0f;\n")).collect();
    std::fs::write(
        course.path().join("01-tall.md"),
        format!(
            "+++\ntitle = \"Tall\"\nsummary = \"A kernel taller than a small terminal.\"\n+++\n\nIntro.\n\n## The kernel\n\n{prose}\n\n```cuda\n__global__ void tall(float *a) {{\n{body}}}\n```\n"
        ),
    )
    .unwrap();
    course
}

#[test]
fn a_tall_input_offered_again_after_a_command_is_named_not_printed_over_its_output() {
    let home = tempfile::tempdir().unwrap();
    let course = tall_course("Run it.");
    let mut t =
        Terminal::start_sized(home.path(), &["learn", "1", "--course", course.path().to_str().unwrap()], &[], 12);
    t.wait_for("taller than this terminal");
    t.wait_for_last_line("sim lesson 1.1>");
    t.keys(":step 9\r");
    t.wait_for("has steps 1 to");
    t.wait_for("still runs the 16-line input shown further up");
    // The command's answer is still on the 12-row screen, not scrolled off by the kernel again.
    assert!(t.text().contains("has steps 1 to"), "{}", t.text());
    t.keys("\r");
    t.wait_for("defined kernel tall(float *a)");
    t.leave();
    assert_eq!(t.exit_code(), 0);
}

#[test]
fn an_input_taller_than_the_terminal_is_shown_not_prefilled_and_enter_runs_it() {
    // reedline repaints a buffer taller than the screen from its top, over the prose above it:
    // such an input is shown instead, and Enter on the empty line runs it.
    let home = tempfile::tempdir().unwrap();
    let course = tall_course("The prose above the kernel stays.");
    let mut t =
        Terminal::start_sized(home.path(), &["demo", "1", "--course", course.path().to_str().unwrap()], &[], 12);
    t.wait_for("The prose above the kernel stays.");
    t.keys("\r");
    t.wait_for("taller than this terminal");
    t.wait_for_last_line("sim lesson 1.1>");
    assert!(!t.text().contains("sim lesson 1.1> __global__"), "nothing was put in the editor:\n{}", t.text());
    t.keys("\r");
    t.wait_for("defined kernel tall(float *a)");
    t.leave();
    assert_eq!(t.exit_code(), 0);
}
