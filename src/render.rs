//! Rendering (being written).
