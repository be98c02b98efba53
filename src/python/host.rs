//! The channel to a real Python that runs host code: a Numba program's (`gridlab run
//! program.py`) and the host Python a learner types at the prompt.
//!
//! Host code is ordinary Python and numpy; re-implementing it would never be complete, so a
//! real `python3` (or `$GRIDLAB_PYTHON`) runs it, with gridlab's stand-in for `numba` first on
//! its path (`assets/python/`, built into the binary and written to a temporary folder).
//! Kernels stay gridlab's: the stand-in sends their source and their launches here.
//!
//! A message is a frame: an 8-byte little-endian length, a JSON header of that length, then
//! the raw bytes the header's `payload` announces (arrays travel as their bytes).

use std::io::{self, BufReader, Read, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use serde_json::{Value as Json, json};

/// The stand-in `numba` package and the host scripts.
const FILES: &[(&str, &str)] = &[
    ("_gridlab.py", include_str!("../../assets/python/_gridlab.py")),
    ("gridlab_host.py", include_str!("../../assets/python/gridlab_host.py")),
    ("gridlab_prompt.py", include_str!("../../assets/python/gridlab_prompt.py")),
    ("numba/__init__.py", include_str!("../../assets/python/numba/__init__.py")),
    ("numba/types.py", include_str!("../../assets/python/numba/types.py")),
    ("numba/cuda/__init__.py", include_str!("../../assets/python/numba/cuda/__init__.py")),
    ("numba/cuda/random.py", include_str!("../../assets/python/numba/cuda/random.py")),
];

/// The largest message Python may send (its arrays' bytes included).
const MAX_MESSAGE: u64 = 1 << 32;

/// The interpreter gridlab runs host code with.
pub fn interpreter() -> String {
    std::env::var("GRIDLAB_PYTHON").unwrap_or_else(|_| "python3".to_string())
}

/// A running interpreter on one of the host scripts, and the folder its files are in.
pub struct Host {
    pub child: Child,
    pub to: ChildStdin,
    pub from: BufReader<ChildStdout>,
    _dir: HostDir,
}

impl Host {
    /// Start the interpreter on `script` (`gridlab_host.py`, `gridlab_prompt.py`) with `args`.
    /// The error says what could not start, for a message that says what to install.
    pub fn start(script: &str, args: &[&std::ffi::OsStr]) -> io::Result<Host> {
        let dir = HostDir::create()?;
        let mut child = Command::new(interpreter())
            .arg("-u")
            .arg(dir.path.join(script))
            .args(args)
            .env("PYTHONPATH", &dir.path)
            .env("PYTHONDONTWRITEBYTECODE", "1")
            .env("PYTHONIOENCODING", "utf-8")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()?;
        let to = child.stdin.take().ok_or_else(|| io::Error::other("no pipe to Python"))?;
        let from = BufReader::new(child.stdout.take().ok_or_else(|| io::Error::other("no pipe from Python"))?);
        Ok(Host { child, to, from, _dir: dir })
    }

    pub fn send(&mut self, header: &Json, payload: &[u8]) -> io::Result<()> {
        send(&mut self.to, header, payload)
    }

    /// The next message, `None` when the interpreter has ended.
    pub fn receive(&mut self) -> io::Result<Option<(Json, Vec<u8>)>> {
        receive(&mut self.from)
    }

    /// What the interpreter wrote to its standard error (after it ended).
    pub fn stderr(&mut self) -> String {
        let mut text = String::new();
        if let Some(mut e) = self.child.stderr.take() {
            let _ = e.read_to_string(&mut text);
        }
        text
    }

    /// Stop it and say how it ended (`exit status 1`, `a signal`).
    pub fn stop(&mut self) -> String {
        let _ = self.child.kill();
        let status = self.child.wait();
        status.ok().and_then(|s| s.code()).map_or("a signal".to_string(), |c| format!("exit status {c}"))
    }
}

impl Drop for Host {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Read one message; `None` at the end of the stream.
pub fn receive(from: &mut impl Read) -> io::Result<Option<(Json, Vec<u8>)>> {
    let mut len = [0u8; 8];
    match from.read_exact(&mut len) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e),
    }
    let n = u64::from_le_bytes(len);
    if n > MAX_MESSAGE {
        return Err(io::Error::new(io::ErrorKind::InvalidData, "a message from Python larger than gridlab takes"));
    }
    let mut head = vec![0u8; n as usize];
    from.read_exact(&mut head)?;
    let header: Json = serde_json::from_slice(&head).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
    let size = header["payload"].as_u64().unwrap_or(0);
    if size > MAX_MESSAGE {
        return Err(io::Error::new(io::ErrorKind::InvalidData, "arrays larger than gridlab takes from Python"));
    }
    let mut payload = vec![0u8; size as usize];
    from.read_exact(&mut payload)?;
    Ok(Some((header, payload)))
}

/// Write one message.
pub fn send(to: &mut impl Write, header: &Json, payload: &[u8]) -> io::Result<()> {
    let mut header = header.clone();
    header["payload"] = json!(payload.len());
    let head = serde_json::to_vec(&header).map_err(io::Error::other)?;
    to.write_all(&(head.len() as u64).to_le_bytes())?;
    to.write_all(&head)?;
    to.write_all(payload)?;
    to.flush()
}

/// A temporary folder holding the stand-in `numba` and the host scripts, removed when dropped.
struct HostDir {
    path: PathBuf,
}

impl HostDir {
    fn create() -> io::Result<HostDir> {
        use std::sync::atomic::{AtomicU32, Ordering};
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!("gridlab-python-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        for (file, text) in FILES {
            let p = path.join(file);
            if let Some(parent) = p.parent() {
                std::fs::create_dir_all(parent)?;
            }
            std::fs::write(p, text)?;
        }
        Ok(HostDir { path })
    }
}

impl Drop for HostDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}
