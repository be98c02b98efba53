//! Output written out in batches by a thread of its own, for `replay` into a pipe or a file.
//!
//! Standard output writes each line as it ends, one system call a line, and a pipe's reader that
//! sleeps is woken by each: a script of thousands of quick GPU launches spent a few microseconds
//! a launch on its two lines (the echoed input and the launch's summary). [`Batched`] keeps what
//! is written and a thread writes it out, in one call, [`DELAY`] after the first of it: the lines
//! still appear in order and within that delay, also while a slow input runs (the thread does not
//! wait for the next write), and everything is out once the writer is flushed or dropped.
//!
//! Only for output that is not a terminal: at a terminal the learner types between inputs, and a
//! pager may take the screen.

use std::io::{self, Write};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How long written output may wait before it is written out.
pub const DELAY: Duration = Duration::from_millis(10);

/// A writer whose output a thread writes out at most [`DELAY`] after it was written.
pub struct Batched<W: Write + Send + 'static> {
    shared: Arc<Shared<W>>,
    /// `None` where no thread could be started: every write then goes straight through.
    writer: Option<JoinHandle<()>>,
}

struct Shared<W> {
    state: Mutex<State<W>>,
    wake: Condvar,
}

struct State<W> {
    inner: W,
    pending: Vec<u8>,
    /// When the oldest pending byte was written.
    since: Option<Instant>,
    /// The writer was dropped: write out what is left and stop.
    done: bool,
    /// What the last write out met, for the next write or flush to return.
    error: Option<io::Error>,
}

impl<W: Write> State<W> {
    fn write_out(&mut self) {
        if self.pending.is_empty() {
            return;
        }
        let written = self.inner.write_all(&self.pending).and_then(|()| self.inner.flush());
        self.pending.clear();
        self.since = None;
        if let Err(e) = written {
            self.error.get_or_insert(e);
        }
    }
}

impl<W: Write + Send + 'static> Shared<W> {
    /// The state, also after a panic elsewhere left the lock poisoned (its bytes are still bytes).
    fn lock(&self) -> MutexGuard<'_, State<W>> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The thread's loop: wait for output, then for [`DELAY`] after its first byte (or the
    /// writer's end), and write it out.
    fn run(&self) {
        let mut state = self.lock();
        loop {
            while state.pending.is_empty() && !state.done {
                state = self.wake.wait(state).unwrap_or_else(|e| e.into_inner());
            }
            if state.done {
                state.write_out();
                return;
            }
            let due = state.since.unwrap_or_else(Instant::now) + DELAY;
            loop {
                let now = Instant::now();
                if state.done || state.pending.is_empty() || now >= due {
                    break;
                }
                state = self.wake.wait_timeout(state, due - now).unwrap_or_else(|e| e.into_inner()).0;
            }
            state.write_out();
        }
    }
}

impl<W: Write + Send + 'static> Batched<W> {
    pub fn new(inner: W) -> Batched<W> {
        let shared = Arc::new(Shared {
            state: Mutex::new(State { inner, pending: Vec::new(), since: None, done: false, error: None }),
            wake: Condvar::new(),
        });
        let theirs = Arc::clone(&shared);
        let writer = std::thread::Builder::new().name("gridlab-output".into()).spawn(move || theirs.run()).ok();
        Batched { shared, writer }
    }
}

impl<W: Write + Send + 'static> Write for Batched<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let mut state = self.shared.lock();
        if let Some(e) = state.error.take() {
            return Err(e);
        }
        if self.writer.is_none() {
            return state.inner.write(buf);
        }
        if state.pending.is_empty() {
            state.since = Some(Instant::now());
            // The thread sleeps until there is something to write: one wake per batch.
            self.shared.wake.notify_one();
        }
        state.pending.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        let mut state = self.shared.lock();
        state.write_out();
        match state.error.take() {
            Some(e) => Err(e),
            None => state.inner.flush(),
        }
    }
}

impl<W: Write + Send + 'static> Drop for Batched<W> {
    fn drop(&mut self) {
        self.shared.lock().done = true;
        self.shared.wake.notify_one();
        if let Some(writer) = self.writer.take() {
            let _ = writer.join();
        }
        self.shared.lock().write_out();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A writer whose bytes the test can see from outside, and that fails once asked to.
    #[derive(Clone, Default)]
    struct Seen {
        bytes: Arc<Mutex<Vec<u8>>>,
        fail: Arc<Mutex<bool>>,
    }

    impl Write for Seen {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            if *self.fail.lock().unwrap() {
                return Err(io::Error::other("disk full"));
            }
            self.bytes.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    impl Seen {
        fn text(&self) -> String {
            String::from_utf8(self.bytes.lock().unwrap().clone()).unwrap()
        }
    }

    #[test]
    fn lines_come_out_in_order_on_flush_on_drop_and_without_either() {
        let seen = Seen::default();
        let mut out = Batched::new(seen.clone());
        for i in 0..1000 {
            writeln!(out, "line {i}").unwrap();
        }
        out.flush().unwrap();
        let expected: String = (0..1000).map(|i| format!("line {i}\n")).collect();
        assert_eq!(seen.text(), expected);
        // Nothing asks for it: the thread writes it out on its own (a slow input runs meanwhile).
        writeln!(out, "waiting").unwrap();
        let until = Instant::now() + Duration::from_secs(30);
        while !seen.text().ends_with("waiting\n") {
            assert!(Instant::now() < until, "the pending line was never written out");
            std::thread::sleep(Duration::from_millis(1));
        }
        write!(out, "last, without a newline").unwrap();
        drop(out);
        assert!(seen.text().ends_with("waiting\nlast, without a newline"), "{}", seen.text());
    }

    #[test]
    fn a_failed_write_out_is_the_next_writes_error() {
        let seen = Seen::default();
        let mut out = Batched::new(seen.clone());
        *seen.fail.lock().unwrap() = true;
        writeln!(out, "lost").unwrap();
        assert_eq!(out.flush().unwrap_err().to_string(), "disk full");
        *seen.fail.lock().unwrap() = false;
        writeln!(out, "kept").unwrap();
        out.flush().unwrap();
        assert_eq!(seen.text(), "kept\n");
    }
}
