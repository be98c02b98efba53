//! The session's side of the worker: spawning it, talking to it with a time limit, noticing
//! when it died, and letting it go. A dead pipe, an answer that is not a response, or a missed
//! deadline becomes a typed [`WorkerError`]; restarting is the backend's decision (`gpu.rs`).
//!
//! The lifecycle follows evcxr's child process: dropping a [`Worker`] closes its stdin, which
//! ends the worker's loop, and waits up to [`CLOSE_GRACE`] for it to leave on its own (so CUDA
//! tears its context down in order); only a worker that stays, stuck in a kernel say, is killed.
//! Either way the process is reaped, so no zombie is left behind.
//!
//! [`WorkerCommand`] says which program to start: the real worker (`gridlab worker`, `worker.rs`)
//! or, in gridlab's own tests, the fake one (`gridlab worker --fake`, `fake.rs`), so that crashes,
//! hangs and garbage are tested on machines without a GPU.

use std::ffi::OsString;
use std::io::{self, Read};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, ChildStderr, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use super::libs::Libraries;
use super::protocol::{self, FrameReader, Next, Request, Response};
use super::transport;

/// How long a worker whose stdin was closed may take to exit before it is killed.
pub const CLOSE_GRACE: Duration = Duration::from_millis(500);

/// How long the session asks the pipe for an answer without sleeping (`FrameReader`): a small
/// launch is answered well within it, and waking a sleeping process costs about as much again.
const ANSWER_SPIN: Duration = Duration::from_millis(1);

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

/// Which worker to start.
#[derive(Clone, Debug)]
pub enum WorkerCommand {
    /// `gridlab worker --device N` (this executable), with the CUDA libraries first on its library
    /// path. Both are worked out at each spawn, so a restarted worker finds its library links
    /// even if the temporary folder was cleaned in between.
    Gpu { libs: Libraries, device: usize },
    /// A program and its arguments as given: the fake worker in tests (see [`WorkerCommand::fake`]).
    Program { program: PathBuf, args: Vec<OsString> },
}

impl WorkerCommand {
    /// The fake worker of the `gridlab` executable at `program` (`gridlab worker --fake`): it
    /// speaks the protocol without CUDA and crashes, hangs or writes garbage when asked to
    /// launch a kernel named for it (`fake.rs`).
    pub fn fake(program: impl Into<PathBuf>) -> WorkerCommand {
        WorkerCommand::Program { program: program.into(), args: vec!["worker".into(), "--fake".into()] }
    }

    fn command(&self) -> Result<Command, WorkerError> {
        match self {
            WorkerCommand::Gpu { libs, device } => {
                let exe = std::env::current_exe().map_err(|e| WorkerError::Spawn(e.to_string()))?;
                let path = libs.worker_library_path().map_err(|e| WorkerError::Spawn(e.to_string()))?;
                let mut cmd = Command::new(exe);
                cmd.args(["worker", "--device", &device.to_string()]).env("LD_LIBRARY_PATH", path);
                Ok(cmd)
            }
            WorkerCommand::Program { program, args } => {
                let mut cmd = Command::new(program);
                cmd.args(args);
                Ok(cmd)
            }
        }
    }
}

pub struct Worker {
    child: Child,
    /// `None` once closed: dropping the pipe is how the worker learns that the session is done.
    stdin: Option<ChildStdin>,
    /// How many bytes the pipe to the worker holds (64 KiB, unless the system is short of pipe
    /// memory): what the session may write ahead of the worker's reading without waiting.
    request_room: usize,
    /// The session's end of the socket that carries shared regions' descriptors (`transport.rs`).
    socket: OwnedFd,
    /// The worker's stdout, read directly: waiting for an answer spins a little, then sleeps in
    /// `poll` with a deadline.
    responses: FrameReader,
    stderr: Arc<Mutex<String>>,
    /// Finishes when the worker's stderr closes, that is when the worker has gone: waited for
    /// (briefly) before reading the tail, so the reason a worker died is not lost to a race.
    stderr_reader: Option<JoinHandle<()>>,
}

impl Worker {
    /// Start a worker with its stdin, stdout and stderr on pipes.
    pub fn spawn(how: &WorkerCommand) -> Result<Worker, WorkerError> {
        let (socket, theirs) =
            transport::pair().map_err(|e| WorkerError::Spawn(format!("no socket for buffers: {e}")))?;
        let their_fd = theirs.as_raw_fd();
        let mut command = how.command()?;
        command.env(transport::SOCKET_ENV, transport::SOCKET_FD.to_string());
        // SAFETY: between fork and exec only `dup2` and `fcntl`, which are async-signal-safe:
        // they put the worker's end of the socket where the worker looks for it, without
        // close-on-exec (which `dup2` onto itself would keep, hence `fcntl` then).
        unsafe {
            command.pre_exec(move || {
                let r = if their_fd == transport::SOCKET_FD {
                    libc::fcntl(their_fd, libc::F_SETFD, 0)
                } else {
                    libc::dup2(their_fd, transport::SOCKET_FD)
                };
                if r < 0 {
                    return Err(io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let spawned = command.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn();
        // The worker has its copy; this process keeps only its own end.
        drop(theirs);
        let mut child = spawned.map_err(|e| WorkerError::Spawn(e.to_string()))?;
        let readers = match (child.stdin.take(), child.stdout.take(), child.stderr.take()) {
            (Some(stdin), Some(stdout), Some(err_pipe)) => FrameReader::new(stdout.into())
                .map_err(|e| format!("could not read the worker's pipe: {e}"))
                .and_then(|responses| {
                    let stderr = read_stderr(err_pipe)
                        .map_err(|e| format!("could not start a thread to read the worker's stderr: {e}"))?;
                    Ok((stdin, responses, stderr))
                }),
            _ => Err("the worker's pipes were not set up".to_string()),
        };
        match readers {
            Ok((stdin, responses, (stderr, stderr_reader))) => {
                // A page is what any pipe holds, should the system not say.
                let request_room = rustix::pipe::fcntl_getpipe_size(&stdin).unwrap_or(4096);
                Ok(Worker {
                    child,
                    stdin: Some(stdin),
                    request_room,
                    socket,
                    responses,
                    stderr,
                    stderr_reader: Some(stderr_reader),
                })
            }
            Err(e) => {
                // A worker nobody listens to is of no use: do not leave it running.
                let _ = child.kill();
                let _ = child.wait();
                Err(WorkerError::Spawn(e))
            }
        }
    }

    /// Give the worker shared region `id` (its descriptor `fd`), before the first request that
    /// names it. A worker that cannot take it has died.
    pub fn send_region(&mut self, id: u64, fd: BorrowedFd<'_>) -> Result<(), WorkerError> {
        match transport::send_region(self.socket.as_fd(), id, fd) {
            Ok(()) => Ok(()),
            Err(_) => Err(self.died()),
        }
    }

    /// Send a request and wait for its response, at most `timeout`. On a timeout the worker is
    /// killed (a kernel in an endless loop cannot be stopped any other way).
    pub fn request(
        &mut self,
        req: &Request,
        timeout: Duration,
        cancel: Option<&AtomicBool>,
    ) -> Result<Response, WorkerError> {
        self.send(req)?;
        self.answer(timeout, cancel)
    }

    /// Send a request without waiting for its answer: the caller does other work meanwhile, may
    /// send more, and takes the answers with [`Worker::answer`] in the order it sent the requests
    /// (the worker answers one request at a time, in order).
    pub fn send(&mut self, req: &Request) -> Result<(), WorkerError> {
        let sent = match self.stdin.as_mut() {
            Some(stdin) => protocol::send(stdin, req).is_ok(),
            None => false,
        };
        if !sent {
            return Err(self.died());
        }
        Ok(())
    }

    /// How many bytes the pipe to the worker holds.
    pub fn request_room(&self) -> usize {
        self.request_room
    }

    /// [`Worker::send`], only when the request's frame is at most `limit` bytes: its length, or
    /// `None` (nothing sent) when it is longer (see [`protocol::send_within`]).
    pub fn send_within(&mut self, req: &Request, limit: usize) -> Result<Option<usize>, WorkerError> {
        let sent = match self.stdin.as_mut() {
            Some(stdin) => protocol::send_within(stdin, req, limit).ok(),
            None => None,
        };
        sent.ok_or_else(|| self.died())
    }

    /// Wait for the answer to the oldest request not answered yet, at most `timeout` from now.
    /// On a timeout the worker is killed (a kernel in an endless loop cannot be stopped any other
    /// way).
    pub fn answer(&mut self, timeout: Duration, cancel: Option<&AtomicBool>) -> Result<Response, WorkerError> {
        let deadline = Instant::now() + timeout;
        let mut spin = ANSWER_SPIN;
        loop {
            // Wake up now and then to notice Ctrl-C.
            let slice = (Instant::now() + Duration::from_millis(50)).min(deadline);
            match self.responses.next::<Response>(Some(slice), std::mem::take(&mut spin)) {
                Ok(Next::Message(resp)) => return Ok(resp),
                // After a message that is not a response, nothing later on the pipe can be
                // trusted to start at a frame.
                Ok(Next::Closed) | Err(_) => return Err(self.died()),
                Ok(Next::Waiting) => {
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

    /// The pipe broke or carried something that is not a response: whatever the worker is doing
    /// now is of no use, so it is killed (a no-op when it has exited) and reaped, and its last
    /// words on stderr become the error.
    fn died(&mut self) -> WorkerError {
        self.kill();
        if let Some(reader) = self.stderr_reader.take() {
            // The worker is gone, so its stderr is closed and the reader about to finish.
            let until = Instant::now() + CLOSE_GRACE;
            while !reader.is_finished() && Instant::now() < until {
                thread::sleep(Duration::from_millis(5));
            }
        }
        let stderr = self.stderr.lock().map(|s| s.clone()).unwrap_or_default();
        WorkerError::Died { stderr }
    }

    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// The worker's process id.
    pub fn id(&self) -> u32 {
        self.child.id()
    }

    /// How the worker ended, or `None` while it runs.
    pub fn exit_status(&mut self) -> Option<ExitStatus> {
        self.child.try_wait().ok().flatten()
    }

    /// Close the worker's stdin and let it go, as dropping it does, and say how it ended: its own
    /// exit status, or that of `SIGKILL` when it was still there after [`CLOSE_GRACE`].
    pub fn close(mut self) -> Option<ExitStatus> {
        self.shut_down()
    }

    fn shut_down(&mut self) -> Option<ExitStatus> {
        // Closing stdin ends the worker's loop: it leaves on its own and CUDA cleans up in order.
        drop(self.stdin.take());
        let until = Instant::now() + CLOSE_GRACE;
        loop {
            match self.child.try_wait() {
                Ok(Some(status)) => return Some(status),
                Ok(None) if Instant::now() < until => thread::sleep(Duration::from_millis(10)),
                // Still there (stuck in a kernel, say), or it cannot be asked: kill it.
                _ => {
                    let _ = self.child.kill();
                    return self.child.wait().ok();
                }
            }
        }
    }
}

/// A thread that keeps the end of what the worker writes to stderr; it finishes when the worker
/// has gone and its stderr closes.
fn read_stderr(mut err_pipe: ChildStderr) -> io::Result<(Arc<Mutex<String>>, JoinHandle<()>)> {
    let stderr = Arc::new(Mutex::new(String::new()));
    let sink = Arc::clone(&stderr);
    let reader = thread::Builder::new().name("gridlab-worker-stderr".into()).spawn(move || {
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
    })?;
    Ok((stderr, reader))
}

impl Drop for Worker {
    fn drop(&mut self) {
        self.shut_down();
    }
}
