//! Where the worker's time goes, phase by phase: off unless `GRIDLAB_WORKER_PROFILE` names a
//! file, and then the worker adds to it, as it leaves, one line per phase it timed (how many
//! times, the total and the mean in microseconds). Both the real worker and the fake one time
//! their request loop (`serve.rs`) this way, and the real worker its launch's steps, so a
//! launch's cost can be taken apart on the machine that has the GPU without another tool.
//!
//! Off, a phase costs one load of a flag set once; on, two reads of the clock.

use std::io::Write;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// The phases timed, in the order the summary lists them.
#[derive(Clone, Copy, Debug)]
pub enum Phase {
    /// Waiting for a request with nothing in flight (the session is what the worker waits for).
    Idle,
    /// A look at the pipe while launches are in flight that found a request.
    ReadAhead,
    /// A look at the pipe while launches are in flight that found nothing.
    ReadAheadEmpty,
    /// Asking whether the device is done with the launch at the front.
    Poll,
    /// Letting another thread have the core while the device runs.
    Yield,
    /// Beginning a launch: everything up to its work queued on the device.
    Begin,
    /// Finishing a launch: waiting for it and making its answer.
    Finish,
    /// Encoding and writing an answer.
    Send,
    /// Any other request, answered whole.
    Other,
    /// Within [`Phase::Begin`]: the request's checks, its buffers found or allocated.
    BeginPrepare,
    /// Within [`Phase::Begin`]: small buffers' uploads and the guards' fill, queued.
    BeginUpload,
    /// Within [`Phase::Begin`]: the kernel's launch between its timing events.
    BeginKernel,
    /// Within [`Phase::Begin`]: the guard check kernel queued.
    BeginCheck,
    /// Within [`Phase::Begin`]: the event after it all, and the results kept.
    BeginDone,
    /// Within [`Phase::Finish`]: waiting for the launch's last event and reading the kernel's time.
    FinishWait,
    /// Within [`Phase::Finish`]: the results taken from the staging memory, the guards' flags read.
    FinishResults,
}

const PHASES: [Phase; 16] = [
    Phase::Idle,
    Phase::ReadAhead,
    Phase::ReadAheadEmpty,
    Phase::Poll,
    Phase::Yield,
    Phase::Begin,
    Phase::Finish,
    Phase::Send,
    Phase::Other,
    Phase::BeginPrepare,
    Phase::BeginUpload,
    Phase::BeginKernel,
    Phase::BeginCheck,
    Phase::BeginDone,
    Phase::FinishWait,
    Phase::FinishResults,
];

static COUNT: [AtomicU64; PHASES.len()] = [const { AtomicU64::new(0) }; PHASES.len()];
static NANOS: [AtomicU64; PHASES.len()] = [const { AtomicU64::new(0) }; PHASES.len()];

/// The file the summary goes to, where profiling is on.
fn target() -> Option<&'static str> {
    static TARGET: OnceLock<Option<String>> = OnceLock::new();
    TARGET.get_or_init(|| std::env::var("GRIDLAB_WORKER_PROFILE").ok().filter(|p| !p.is_empty())).as_deref()
}

/// A phase being timed: its time is added when this goes out of scope.
pub struct Timer {
    phase: Phase,
    start: Option<Instant>,
}

impl Timer {
    /// Count the phase as another one (a look at the pipe found something after all).
    pub fn as_phase(mut self, phase: Phase) -> Timer {
        self.phase = phase;
        self
    }
}

impl Drop for Timer {
    fn drop(&mut self) {
        if let Some(start) = self.start {
            let k = self.phase as usize;
            COUNT[k].fetch_add(1, Ordering::Relaxed);
            NANOS[k].fetch_add(start.elapsed().as_nanos() as u64, Ordering::Relaxed);
        }
    }
}

/// Time `phase` until the value returned goes out of scope.
pub fn time(phase: Phase) -> Timer {
    Timer { phase, start: target().map(|_| Instant::now()) }
}

/// The summary: one line per phase timed at least once.
pub fn summary() -> String {
    let mut text = format!("gridlab worker {} phases (count, total us, mean us)\n", std::process::id());
    for phase in PHASES {
        let k = phase as usize;
        let count = COUNT[k].load(Ordering::Relaxed);
        if count == 0 {
            continue;
        }
        let us = NANOS[k].load(Ordering::Relaxed) as f64 / 1e3;
        text += &format!("{:<16} {count:>9} {us:>12.0} {:>9.2}\n", format!("{phase:?}"), us / count as f64);
    }
    text
}

/// Add the summary to the file `GRIDLAB_WORKER_PROFILE` names, where profiling is on.
pub fn report() {
    let Some(path) = target() else { return };
    if let Ok(mut f) = std::fs::OpenOptions::new().create(true).append(true).open(path) {
        let _ = f.write_all(summary().as_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_summary_lists_each_phase_timed_with_its_count() {
        // Off here (the variable is unset in tests), a timer adds nothing, so add by hand.
        COUNT[Phase::Send as usize].fetch_add(2, Ordering::Relaxed);
        NANOS[Phase::Send as usize].fetch_add(3_000, Ordering::Relaxed);
        let text = summary();
        let line = text.lines().find(|l| l.starts_with("Send")).expect("a line for Send");
        let fields: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(fields[1], "2");
        assert!(fields[2].parse::<f64>().unwrap() >= 3.0);
        assert!(!text.contains("FinishResults"), "{text}");
    }
}
