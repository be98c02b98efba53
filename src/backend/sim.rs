//! The CPU simulator backend (being written).
