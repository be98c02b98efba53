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
