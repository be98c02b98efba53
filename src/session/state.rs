//! The session's state as a whole: forgetting it (`:reset`), and taking it out and putting it
//! back around a lesson check, which runs in a scratch copy of the learner's session.

use crate::backend::BackendKind;
use crate::backend::sim::Schedule;

use super::Session;

/// What [`Session::save_state`] took out.
pub(crate) struct Saved {
    data: super::workspace::Data,
    record: super::record::SetAside,
    seed: u64,
    schedule: Schedule,
    active: BackendKind,
    color: bool,
    width: usize,
}

impl Session {
    /// Forget kernels, buffers, scalars and findings; keep the settings.
    pub fn reset(&mut self) {
        self.work.reset();
        self.record.forget();
    }

    /// Take what the learner made (buffers, scalars, the last launch, history) and the run
    /// settings out of the session, for a lesson check to run in a scratch copy; the module stays.
    pub(crate) fn save_state(&mut self) -> Saved {
        Saved {
            data: self.work.set_aside(),
            record: self.record.set_aside(),
            seed: self.options.sim.seed,
            schedule: self.options.sim.schedule,
            active: self.backends.active_kind(),
            color: self.options.style.color,
            width: self.options.style.width,
        }
    }

    /// Put back what [`Session::save_state`] took, dropping whatever a check made meanwhile.
    pub(crate) fn restore_state(&mut self, saved: Saved) {
        self.work.put_back(saved.data);
        self.record.put_back(saved.record);
        self.set_seed(saved.seed);
        self.set_schedule(saved.schedule);
        self.backends.set_active(saved.active);
        self.options.style.color = saved.color;
        self.options.style.width = saved.width;
    }

    /// Forget buffers, scalars and the last launch, keeping kernels and settings.
    pub(crate) fn clear_data(&mut self) {
        self.work.clear_data();
        self.record.forget_last();
    }
}
