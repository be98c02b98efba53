//! The session language (being written).
