//! The session's state as a whole: forgetting it (`:reset`), and taking it out and putting it
//! back around a lesson check, which runs in a scratch copy of the learner's session.

use crate::backend::BackendKind;
use crate::backend::sim::Schedule;
use crate::buffer::Buffer;
use crate::value::Value;

use super::Session;

/// What [`Session::save_state`] took out.
pub(crate) struct Saved {
    buffers: Vec<(String, Buffer)>,
    scalars: Vec<(String, Value)>,
    record: super::record::SetAside,
    seed: u64,
    schedule: Schedule,
    active: BackendKind,
    color: bool,
    width: usize,
    symbols: Vec<crate::launch::SymbolWrite>,
}

impl Session {
    /// Forget kernels, buffers, scalars and findings; keep the settings.
    pub fn reset(&mut self) {
        self.module.clear();
        self.python.clear();
        self.refused.clear();
        self.constants.clear();
        self.symbols.clear();
        self.buffers.clear();
        self.scalars.clear();
        self.record.forget();
    }

    /// Take what the learner made (buffers, scalars, the last launch, history) and the run
    /// settings out of the session, for a lesson check to run in a scratch copy; the module stays.
    pub(crate) fn save_state(&mut self) -> Saved {
        Saved {
            buffers: std::mem::take(&mut self.buffers),
            scalars: std::mem::take(&mut self.scalars),
            record: self.record.set_aside(),
            symbols: self.symbols.clone(),
            seed: self.options.sim.seed,
            schedule: self.options.sim.schedule,
            active: self.backends.active_kind(),
            color: self.options.style.color,
            width: self.options.style.width,
        }
    }

    /// Put back what [`Session::save_state`] took, dropping whatever a check made meanwhile.
    pub(crate) fn restore_state(&mut self, saved: Saved) {
        self.buffers = saved.buffers;
        self.scalars = saved.scalars;
        self.record.put_back(saved.record);
        self.symbols = saved.symbols;
        self.set_seed(saved.seed);
        self.set_schedule(saved.schedule);
        self.backends.set_active(saved.active);
        self.options.style.color = saved.color;
        self.options.style.width = saved.width;
    }

    /// Forget buffers, scalars and the last launch, keeping kernels and settings.
    pub(crate) fn clear_data(&mut self) {
        self.symbols.clear();
        self.buffers.clear();
        self.scalars.clear();
        self.record.forget_last();
    }
}
