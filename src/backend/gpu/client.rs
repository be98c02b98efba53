//! The session's side of the worker: spawning it, talking to it with a time limit, and noticing
//! when it died. A dead pipe or a missed deadline becomes a typed [`WorkerError`]; restarting is
//! the backend's decision (`gpu.rs`).

use std::io::{BufReader, Read};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::libs::Libraries;
use super::protocol::{self, Request, Response};

#[derive(Debug, thiserror::Error)]
pub enum WorkerError {
    #[error("could not start the GPU worker: {0}")]
    Spawn(String),
    #[error("the GPU worker stopped{}", tail(.stderr))]
    Died { stderr: String },
    #[error("the kernel ran longer than {secs} s", secs = .0.as_secs_f64())]
    TimedOut(Duration),
    #[error("stopped by Ctrl-C")]
    Interrupted,
}

fn tail(stderr: &str) -> String {
    let t = stderr.trim();
    if t.is_empty() { String::new() } else { format!(": {}", t.lines().last().unwrap_or(t)) }
}

pub struct Worker {
    child: Child,
    stdin: ChildStdin,
    responses: Receiver<Option<Response>>,
    stderr: Arc<Mutex<String>>,
}

impl Worker {
    /// Start `gridlab worker --device N` with the CUDA libraries on its library path.
    pub fn spawn(libs: &Libraries, device: usize) -> Result<Worker, WorkerError> {
        let exe = std::env::current_exe().map_err(|e| WorkerError::Spawn(e.to_string()))?;
        let path = libs.worker_library_path().map_err(|e| WorkerError::Spawn(e.to_string()))?;
        let mut child = Command::new(exe)
            .args(["worker", "--device", &device.to_string()])
            .env("LD_LIBRARY_PATH", path)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| WorkerError::Spawn(e.to_string()))?;
        let stdin = child.stdin.take().expect("stdin is piped");
        let stdout = child.stdout.take().expect("stdout is piped");
        let mut err_pipe = child.stderr.take().expect("stderr is piped");
        let (tx, responses) = mpsc::channel();
        // A reader thread turns the blocking pipe into a channel we can wait on with a deadline.
        std::thread::spawn(move || {
            let mut r = BufReader::new(stdout);
            loop {
                match protocol::recv::<Response>(&mut r) {
                    Ok(Some(resp)) => {
                        if tx.send(Some(resp)).is_err() {
                            return;
                        }
                    }
                    _ => {
                        let _ = tx.send(None);
                        return;
                    }
                }
            }
        });
        let stderr = Arc::new(Mutex::new(String::new()));
        let sink = Arc::clone(&stderr);
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = err_pipe.read(&mut buf) {
                if n == 0 {
                    break;
                }
                let mut s = sink.lock().unwrap_or_else(|e| e.into_inner());
                // Keep the end: that is where the reason is.
                s.push_str(&String::from_utf8_lossy(&buf[..n]));
                if s.len() > 16 * 1024 {
                    let mut at = s.len() - 8 * 1024;
                    while !s.is_char_boundary(at) {
                        at += 1;
                    }
                    s.drain(..at);
                }
            }
        });
        Ok(Worker { child, stdin, responses, stderr })
    }

    /// Send a request and wait for its response, at most `timeout`. On a timeout the worker is
    /// killed (a kernel in an endless loop cannot be stopped any other way).
    pub fn request(
        &mut self,
        req: &Request,
        timeout: Duration,
        cancel: Option<&AtomicBool>,
    ) -> Result<Response, WorkerError> {
        if protocol::send(&mut self.stdin, req).is_err() {
            return Err(self.died());
        }
        let deadline = Instant::now() + timeout;
        loop {
            // Wake up now and then to notice Ctrl-C.
            let slice = deadline.saturating_duration_since(Instant::now()).min(Duration::from_millis(50));
            match self.responses.recv_timeout(slice) {
                Ok(Some(resp)) => return Ok(resp),
                Ok(None) | Err(RecvTimeoutError::Disconnected) => return Err(self.died()),
                Err(RecvTimeoutError::Timeout) => {
                    if cancel.is_some_and(|c| c.load(Ordering::SeqCst)) {
                        self.kill();
                        return Err(WorkerError::Interrupted);
                    }
                    if Instant::now() >= deadline {
                        self.kill();
                        return Err(WorkerError::TimedOut(timeout));
                    }
                }
            }
        }
    }

    fn died(&mut self) -> WorkerError {
        let _ = self.child.wait();
        let stderr = self.stderr.lock().map(|s| s.clone()).unwrap_or_default();
        WorkerError::Died { stderr }
    }

    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        // Closing stdin ends the worker's loop; kill it if it is stuck in a kernel.
        self.kill();
    }
}
