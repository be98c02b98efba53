//! A small builder around the real binary: arguments, stdin, and the captured result.

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

pub struct Gridlab {
    args: Vec<String>,
    stdin: Option<String>,
    env: Vec<(String, String)>,
    dir: Option<PathBuf>,
}

/// The repository root, where `tests/scripts` lives. `GRIDLAB_TEST_ROOT` and `GRIDLAB_TEST_BIN`
/// move the tests to a machine without Rust (the GPU machine): the test binary is built here and
/// run there against a copy of the tree and the release binary.
pub fn root() -> PathBuf {
    std::env::var_os("GRIDLAB_TEST_ROOT").map_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")), PathBuf::from)
}

/// The gridlab binary under test.
pub fn binary() -> PathBuf {
    std::env::var_os("GRIDLAB_TEST_BIN").map_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_gridlab")), PathBuf::from)
}

pub fn gridlab() -> Gridlab {
    Gridlab { args: Vec::new(), stdin: None, env: Vec::new(), dir: None }
}

impl Gridlab {
    pub fn args<I: IntoIterator<Item = S>, S: Into<String>>(mut self, args: I) -> Gridlab {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    pub fn env(mut self, name: &str, value: &str) -> Gridlab {
        self.env.push((name.to_string(), value.to_string()));
        self
    }

    /// Run in `dir` instead of the repository root.
    pub fn current_dir(mut self, dir: &std::path::Path) -> Gridlab {
        self.dir = Some(dir.to_path_buf());
        self
    }

    pub fn stdin(mut self, text: &str) -> Gridlab {
        self.stdin = Some(text.to_string());
        self
    }

    pub fn run(self) -> Run {
        let mut cmd = Command::new(binary());
        cmd.args(&self.args)
            .current_dir(self.dir.clone().unwrap_or_else(root))
            .env("NO_COLOR", "1")
            .env_remove("COLUMNS")
            .stdin(if self.stdin.is_some() { Stdio::piped() } else { Stdio::null() })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (name, value) in &self.env {
            cmd.env(name, value);
        }
        let mut child = cmd.spawn().expect("the gridlab binary runs");
        if let Some(text) = &self.stdin {
            child.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
        }
        let out = child.wait_with_output().unwrap();
        Run {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }
}

/// Wait for `child` at most `limit`, then kill it: a test that would hang fails instead.
pub fn wait(mut child: Child, limit: Duration) -> (i32, String) {
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
