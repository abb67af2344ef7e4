//! `cargo xtask e2e`: builds the daemon and the e2e driver in the dev profile (the one
//! `cargo xtask test` builds, so CI reuses its artifacts), then runs the driver, which
//! starts the daemon, proves the sample mix over gRPC and stops it with SIGTERM.

use crate::{kernels, util};
use anyhow::Result;
use std::path::PathBuf;
use std::process::Command;

/// Builds and runs the end-to-end check.
pub fn run() -> Result<()> {
    let bin = build_test_programs("cuzk-e2e")?;
    util::step("running the end-to-end check against a fresh daemon");
    util::run(
        Command::new(bin.join("cuzk-e2e"))
            .arg("--daemon")
            .arg(bin.join("cuzk-daemon"))
            .current_dir(util::project_root()),
    )
}

/// Builds `cuzk-daemon` and the test programs of `cuzk-tests` (dev profile, one build for
/// `e2e` and `balancer`); returns the folder holding them. `what` names the program for the
/// step line.
pub fn build_test_programs(what: &str) -> Result<PathBuf> {
    util::step(&format!("building cuzk-daemon and {what} (dev profile)"));
    util::cargo(
        &[
            "build",
            "--package",
            "cuzk-daemon",
            "--package",
            "cuzk-tests",
            "--bins",
        ],
        &[],
    )?;
    Ok(kernels::target_dir().join("debug"))
}
