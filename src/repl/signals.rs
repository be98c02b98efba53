//! SIGTERM and SIGHUP (closing the terminal) at the prompt: instead of dying mid-session with the
//! terminal in raw mode, gridlab stops what runs (as Ctrl-C does), leaves the editor so that it
//! restores the terminal, keeps the history and exits with the signal's status (128 + signal).
//!
//! The handler only stores to atomics, which is what a signal handler may do: the signal's
//! number, and `true` into the flags given to [`install`] (the editor's break signal, the
//! launch's cancel flag).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicPtr, Ordering};

static RECEIVED: AtomicI32 = AtomicI32::new(0);
static FLAGS: [AtomicPtr<AtomicBool>; 2] = [AtomicPtr::new(std::ptr::null_mut()), AtomicPtr::new(std::ptr::null_mut())];

extern "C" fn on_signal(signal: libc::c_int) {
    RECEIVED.store(signal, Ordering::SeqCst);
    for flag in &FLAGS {
        let p = flag.load(Ordering::SeqCst);
        if !p.is_null() {
            // SAFETY: the pointers come from `Arc::into_raw` in `install` and are never freed.
            unsafe { (*p).store(true, Ordering::SeqCst) };
        }
    }
}

/// Catch SIGTERM and SIGHUP, setting `flags` (at most two) when one comes. Returns whether the
/// handlers could be installed.
pub fn install(flags: &[&Arc<AtomicBool>]) -> bool {
    for (slot, flag) in FLAGS.iter().zip(flags) {
        // Leaked on purpose: the handler may run at any time until the process ends.
        slot.store(Arc::into_raw(Arc::clone(flag)).cast_mut(), Ordering::SeqCst);
    }
    [libc::SIGTERM, libc::SIGHUP].iter().all(|&signal| {
        // SAFETY: a zeroed sigaction with a handler that only touches atomics; SA_RESTART keeps
        // the terminal's reads going (the editor notices the flag at its next poll).
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
            action.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(signal, &action, std::ptr::null_mut()) == 0
        }
    })
}

/// The signal that came (SIGTERM or SIGHUP), if one did.
pub fn received() -> Option<i32> {
    Some(RECEIVED.load(Ordering::SeqCst)).filter(|&s| s != 0)
}

/// How long the prompt has to leave on its own after a signal or a hang-up before the watchdog
/// ends the process.
const GRACE: std::time::Duration = std::time::Duration::from_millis(1500);

/// Make sure a signal, or a terminal that went away, ends gridlab. The editor notices the break
/// flag only between key reads, and on a hung-up terminal the terminal library's read loop sees
/// end-of-file forever without returning: without this, closing the terminal window would leave
/// gridlab spinning on a CPU. A thread checks every quarter second; history is appended as it is
/// made, so exiting from here loses nothing.
pub fn watch(flags: &[&Arc<AtomicBool>]) {
    let flags: Vec<Arc<AtomicBool>> = flags.iter().map(|f| Arc::clone(f)).collect();
    let _ = std::thread::Builder::new().name("gridlab-hangup".into()).spawn(move || {
        loop {
            std::thread::sleep(std::time::Duration::from_millis(250));
            if received().is_none() && hung_up() {
                RECEIVED.store(libc::SIGHUP, Ordering::SeqCst);
                flags.iter().for_each(|f| f.store(true, Ordering::SeqCst));
            }
            if let Some(signal) = received() {
                std::thread::sleep(GRACE);
                std::process::exit(128 + signal);
            }
        }
    });
}

/// Whether standard input is a terminal that has hung up (its window closed).
fn hung_up() -> bool {
    let mut fd = libc::pollfd { fd: 0, events: 0, revents: 0 };
    // SAFETY: one valid pollfd, a zero timeout.
    let n = unsafe { libc::poll(&mut fd, 1, 0) };
    n > 0 && fd.revents & (libc::POLLHUP | libc::POLLNVAL) != 0
}
