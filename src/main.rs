//! The `gridlab` executable: parse the command line, hand over to the library.

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    gridlab::app::run(gridlab::cli::Cli::parse())
}
