//! The extension point: how a layer above the session adds `:` commands with state of their own,
//! without the session knowing it exists.
//!
//! The lesson guide is one: `lesson` implements [`Extension`] with its `:lesson`, `:next`,
//! `:check` ... rows and the guide they move, and `app`/`repl`/`replay` install it in the
//! sessions they make. The session lists the extension's commands in `:help`, completes and runs
//! them like its own; a command reaches the extension's state through [`Session::with_extension`],
//! which lends the extension and the session at once (a check runs launches in the session while
//! the guide records the result). evcxr's command context sits above its eval context the same way.

use std::any::Any;

use super::Session;
use super::command::CommandSpec;

/// Commands and state a layer above the session adds to it.
pub trait Extension: Any {
    /// Its `:` commands, run like the session's own (each finds the extension's state with
    /// [`Session::with_extension`]).
    fn commands(&self) -> &'static [CommandSpec];

    fn as_any(&self) -> &dyn Any;

    /// The handout `:export` writes, when the extension knows better than a plain transcript
    /// (an open lesson: its headings and prose around what ran).
    fn handout(&self, _transcript: &[crate::render::handout::Ran]) -> Option<crate::render::handout::Document> {
        None
    }

    /// Where the session is (an open lesson's id), recorded with each input for the handout.
    fn chapter(&self) -> Option<String> {
        None
    }

    /// Where in the chapter the session is (an open lesson's step), recorded with each input.
    fn step(&self) -> Option<usize> {
        None
    }

    fn as_any_mut(&mut self) -> &mut dyn Any;
}

impl Session {
    /// Add an extension's commands and state to this session (replacing any other).
    pub fn install(&mut self, extension: Box<dyn Extension>) {
        self.extension = Some(extension);
    }

    /// The installed extension, when it is a `T`.
    pub fn extension<T: Extension>(&self) -> Option<&T> {
        self.extension.as_deref()?.as_any().downcast_ref()
    }

    /// The installed extension, when it is a `T`, to change.
    pub fn extension_mut<T: Extension>(&mut self) -> Option<&mut T> {
        self.extension.as_deref_mut()?.as_any_mut().downcast_mut()
    }

    /// Run `f` with the extension `T` and the session both borrowed; `None` when no `T` is
    /// installed. The extension is out of the session meanwhile: inputs `f` evaluates see no
    /// extension commands (a check's inputs never need them).
    pub fn with_extension<T: Extension, R>(&mut self, f: impl FnOnce(&mut T, &mut Session) -> R) -> Option<R> {
        let mut ext = self.extension.take()?;
        let result = ext.as_any_mut().downcast_mut::<T>().map(|t| f(t, self));
        // `f` may have installed another extension; the one lent out is the session's.
        self.extension = Some(ext);
        result
    }
}
