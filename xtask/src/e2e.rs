//! `cargo xtask e2e`: builds the daemon and the e2e driver in the dev profile (the one
//! `cargo xtask test` builds, so CI reuses its artifacts), then runs the driver, which
//! starts the daemon, proves the sample mix over gRPC and stops it with SIGTERM.

use crate::util;
use anyhow::Result;
use std::path::PathBuf;
use std::process::Command;

/// Builds and runs the end-to-end check.
pub fn run() -> Result<()> {
    util::step("building cuzk-daemon and cuzk-e2e (dev profile)");
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
    let bin = target_dir().join("debug");
    util::step("running the end-to-end check against a fresh daemon");
    util::run(
        Command::new(bin.join("cuzk-e2e"))
            .arg("--daemon")
            .arg(bin.join("cuzk-daemon"))
            .current_dir(util::project_root()),
    )
}

/// Where cargo puts its output: `CARGO_TARGET_DIR` if set, else `target/` at the root.
fn target_dir() -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) => util::project_root().join(dir),
        None => util::project_root().join("target"),
    }
}
