//! Rendering: arrays and values, written to any `impl Write` with a colour choice.

pub mod array;
