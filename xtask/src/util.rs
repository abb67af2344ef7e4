//! Small helpers shared by the xtask commands: project root, running cargo, progress lines.

use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The workspace root (xtask lives one level below it).
pub fn project_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask sits inside the workspace")
        .to_path_buf()
}

/// Prints a progress line for a step of a longer command.
pub fn step(what: &str) {
    eprintln!("==> {what}");
}

/// Runs `cargo <args>` in the project root with extra environment, failing on a non-zero exit.
pub fn cargo(args: &[&str], env: &[(&str, &str)]) -> Result<()> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.args(args).current_dir(project_root());
    for (k, v) in env {
        cmd.env(k, v);
    }
    run(&mut cmd)
}

/// Runs a command, failing with its command line when it exits non-zero.
pub fn run(cmd: &mut Command) -> Result<()> {
    let status = cmd
        .status()
        .with_context(|| format!("failed to start {cmd:?}"))?;
    if !status.success() {
        bail!("{cmd:?} failed with {status}");
    }
    Ok(())
}
