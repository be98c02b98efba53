//! The worker's request loop, shared by the real worker (`worker.rs`) and the fake (`fake.rs`),
//! so that gridlab's CI runs the very loop the GPU runs.
//!
//! Requests are answered one at a time and in order, but a launch need not be finished before
//! the next request is read: a launch is *begun* (its work queued on the device) and *finished*
//! (waited for and answered) in two steps. While a launch runs, the loop looks at the pipe
//! without waiting; a launch found there that may go behind the one in flight is begun at once,
//! so the device goes from one to the next without waiting for the host, and the host's work for
//! the next launch (reading it, queueing it) overlaps the device's for the one ahead. At most
//! [`IN_FLIGHT`] launches are begun and not yet answered.
//!
//! What keeps this safe is the order of answers: a launch is answered only after every launch
//! ahead of it, and a failure is the answer of the launch that failed. A launch begun behind one
//! that then takes the worker down is never answered (the session sends it again to the next
//! worker), and a launch that could not be begun (the driver refused it, say) is answered in its
//! turn, after the launches ahead.

use std::collections::VecDeque;
use std::io::Write;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use super::profile::{self, Phase};
use super::protocol::{self, FrameReader, LaunchRequest, Next, Request, Response};

/// At most this many launches are begun and not yet answered: the one the device runs and one
/// queued behind it. The session may send more (a replayed script's run of launches); they wait
/// on the pipe, read one as each launch ahead is answered, so the device always has the next.
pub const IN_FLIGHT: usize = 2;

/// A launch begun: queued on the device (`Queued`), or already answered (it failed to start, or
/// it does not overlap and ran to the end at once).
pub enum Begun<P> {
    Queued(P),
    Answered(Response),
}

/// What a worker does with each request, in the two steps a launch takes.
pub trait Launcher {
    /// A launch queued on the device and not yet answered.
    type Pending;

    /// Answer any request but a launch.
    fn handle(&mut self, request: Request) -> Response;

    /// Begin a launch: check it and queue its work on the device, without waiting for it.
    fn begin(&mut self, launch: LaunchRequest) -> Begun<Self::Pending>;

    /// Whether another launch may be begun behind `ahead` while the device still runs it.
    fn overlaps(&self, ahead: &Self::Pending) -> bool;

    /// Whether `next` may be begun behind a launch the device still runs.
    fn may_follow(&self, next: &LaunchRequest) -> bool;

    /// Whether the device is done with `pending`, or failed on it, without waiting: [`finish`]
    /// then answers at once. A launch that lets nothing go behind it may say `true` at once.
    ///
    /// [`finish`]: Launcher::finish
    fn is_done(&mut self, pending: &Self::Pending) -> bool;

    /// Wait for `pending` and answer it; `behind` says whether a launch was begun behind it (and
    /// so ran on what it left). `None` when nothing is to be sent (the fake's garbage).
    fn finish(&mut self, pending: Self::Pending, behind: bool) -> Option<Response>;

    /// The session closed the pipe and every launch was answered: how the worker leaves.
    fn closed(&mut self) -> ExitCode {
        ExitCode::SUCCESS
    }
}

/// Exit status after a sticky error or a trap: the context cannot be used again.
pub const STICKY_STATUS: u8 = 4;

/// Serve requests from `input` until the session closes the pipe, answering on `out`.
/// With `GRIDLAB_WORKER_PROFILE` set, the time of each phase goes to that file as the worker
/// leaves (`profile.rs`).
pub fn serve<L: Launcher>(worker: &mut L, input: &mut FrameReader, out: &mut impl Write) -> ExitCode {
    let code = serve_until_closed(worker, input, out);
    profile::report();
    code
}

fn serve_until_closed<L: Launcher>(worker: &mut L, input: &mut FrameReader, out: &mut impl Write) -> ExitCode {
    let mut queue: VecDeque<Begun<L::Pending>> = VecDeque::new();
    loop {
        // Answers ready at the front go at once, in order.
        while let Some(Begun::Answered(_)) = queue.front() {
            let Some(Begun::Answered(answer)) = queue.pop_front() else { break };
            if let Some(code) = send(out, &answer) {
                return code;
            }
        }
        let next = if queue.is_empty() {
            let _idle = profile::time(Phase::Idle);
            match input.request() {
                Ok(Some(request)) => Some(request),
                Ok(None) => return worker.closed(),
                Err(e) => {
                    eprintln!("gridlab worker: bad request: {e}");
                    return ExitCode::from(3);
                }
            }
        } else if may_read_ahead(worker, &queue) {
            let look = profile::time(Phase::ReadAheadEmpty);
            match input.next::<Request>(Some(Instant::now()), Duration::ZERO) {
                Ok(Next::Message(request)) => {
                    drop(look.as_phase(Phase::ReadAhead));
                    Some(request)
                }
                Ok(Next::Waiting) => None,
                // The session has gone or spoke nonsense: answer what was begun, then leave.
                Ok(Next::Closed) => return drain(worker, &mut queue, out).unwrap_or_else(|| worker.closed()),
                Err(e) => {
                    eprintln!("gridlab worker: bad request: {e}");
                    return drain(worker, &mut queue, out).unwrap_or(ExitCode::from(3));
                }
            }
        } else {
            None
        };
        match next {
            Some(Request::Launch(launch)) => {
                let follows = match queue.back() {
                    None => true,
                    Some(Begun::Queued(ahead)) => worker.overlaps(ahead) && worker.may_follow(&launch),
                    Some(Begun::Answered(_)) => false,
                };
                if !follows && let Some(code) = drain(worker, &mut queue, out) {
                    return code;
                }
                let _begin = profile::time(Phase::Begin);
                queue.push_back(worker.begin(launch));
            }
            Some(request) => {
                if let Some(code) = drain(worker, &mut queue, out) {
                    return code;
                }
                let answer = {
                    let _other = profile::time(Phase::Other);
                    worker.handle(request)
                };
                if let Some(code) = send(out, &answer) {
                    return code;
                }
            }
            None => {
                // The launch ahead, once the device is done with it; or at once where nothing
                // more can be read meanwhile.
                let done = match queue.front() {
                    Some(Begun::Queued(p)) => {
                        let _poll = profile::time(Phase::Poll);
                        !may_read_ahead(worker, &queue) || worker.is_done(p)
                    }
                    _ => true,
                };
                if done {
                    if let Some(code) = finish_front(worker, &mut queue, out) {
                        return code;
                    }
                } else {
                    let _yield = profile::time(Phase::Yield);
                    std::thread::yield_now();
                }
            }
        }
    }
}

/// Whether the loop may look for another launch to begin behind those in flight.
fn may_read_ahead<L: Launcher>(worker: &L, queue: &VecDeque<Begun<L::Pending>>) -> bool {
    // Only a launch still on the device lets one go behind it.
    queue.len() < IN_FLIGHT && matches!(queue.back(), Some(Begun::Queued(p)) if worker.overlaps(p))
}

/// Finish and answer the launch at the front; `Some` when the worker must leave.
fn finish_front<L: Launcher>(
    worker: &mut L,
    queue: &mut VecDeque<Begun<L::Pending>>,
    out: &mut impl Write,
) -> Option<ExitCode> {
    let answer = match queue.pop_front()? {
        Begun::Answered(answer) => Some(answer),
        Begun::Queued(p) => {
            let behind = queue.iter().any(|b| matches!(b, Begun::Queued(_)));
            let _finish = profile::time(Phase::Finish);
            worker.finish(p, behind)
        }
    };
    answer.and_then(|a| send(out, &a))
}

/// Answer every launch begun, in order; `Some` when the worker must leave.
fn drain<L: Launcher>(
    worker: &mut L,
    queue: &mut VecDeque<Begun<L::Pending>>,
    out: &mut impl Write,
) -> Option<ExitCode> {
    while !queue.is_empty() {
        if let Some(code) = finish_front(worker, queue, out) {
            return Some(code);
        }
    }
    None
}

/// Send an answer; `Some` when the worker must leave: the pipe is gone, or the answer is a sticky
/// error or a trap, after which the context cannot be used (the session starts a new worker, and
/// sends again any launch begun behind this one, which is never answered).
fn send(out: &mut impl Write, answer: &Response) -> Option<ExitCode> {
    let _send = profile::time(Phase::Send);
    if protocol::send(out, answer).is_err() {
        return Some(ExitCode::from(3));
    }
    matches!(answer, Response::Failed { sticky: true, .. } | Response::Trapped { .. })
        .then(|| ExitCode::from(STICKY_STATUS))
}
