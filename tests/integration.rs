//! The one integration-test binary: runs the real `gridlab` executable on scripts and checks
//! exit codes, transcripts (snapshots) and reports; and starts it as a fake GPU worker to test
//! the worker's lifecycle without a GPU (`worker.rs`).

mod integration {
    pub mod authoring;
    pub mod cli;
    pub mod errors;
    pub mod gpu;
    pub mod harness;
    pub mod lessons;
    pub mod python;
    pub mod repl;
    pub mod replay;
    pub mod robust;
    pub mod worker;
}
