//! `cargo xtask test --gpu`: runs exactly the workspace's ignored `gpu_` tests on this machine's
//! GPU, and fails when there is no GPU, when a test fails, or when no test ran at all.

use crate::kernels::{self, BuildKernelsArgs};
use crate::util::{project_root, step};
use anyhow::{bail, Context, Result};
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

/// Totals over the libtest summary lines (`test result: ok. 3 passed; 0 failed; ...`).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Summary {
    /// Tests that passed.
    pub passed: u64,
    /// Tests that failed.
    pub failed: u64,
    /// Summary lines seen (one per test binary or doc-test run).
    pub runs: u64,
}

impl Summary {
    /// Adds one line of test output; lines other than summaries are ignored.
    pub fn add_line(&mut self, line: &str) {
        let Some(rest) = line.trim().strip_prefix("test result: ") else {
            return;
        };
        self.runs += 1;
        for part in rest.split(';') {
            let mut words = part.split_whitespace().rev();
            let (Some(what), Some(count)) = (words.next(), words.next()) else {
                continue;
            };
            let Ok(n) = count.parse::<u64>() else {
                continue;
            };
            match what {
                "passed" => self.passed += n,
                "failed" => self.failed += n,
                _ => {}
            }
        }
    }

    /// Fails on any failure, or when nothing ran (a filter that matches nothing passes silently).
    pub fn verdict(&self, what: &str) -> Result<()> {
        if self.failed > 0 {
            bail!("{what}: {} failed, {} passed", self.failed, self.passed);
        }
        if self.passed == 0 {
            bail!(
                "{what}: zero tests ran ({} test binaries reported)",
                self.runs
            );
        }
        eprintln!(
            "{what}: {} passed in {} test binaries",
            self.passed, self.runs
        );
        Ok(())
    }
}

/// Runs the GPU tests of the whole workspace against a freshly checked kernel image.
pub fn run(arch: &[String]) -> Result<()> {
    step("GPU probe");
    if !cuzk_cuda::cuda_available() {
        bail!("no CUDA GPU on this machine (no driver, or the driver reports no device); `test --gpu` needs one");
    }
    for d in cuzk_cuda::Device::all()? {
        eprintln!("    {}", d.info());
    }
    kernels::build(&BuildKernelsArgs {
        arch: arch.to_vec(),
        force: false,
        defines: Vec::new(),
    })?;

    step("workspace GPU tests (ignored tests named gpu_)");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut child = Command::new(cargo)
        .args(["test", "--workspace", "--", "--ignored", "gpu_"])
        .current_dir(project_root())
        // Tests find the image through this too, whatever the target folder is.
        .env(
            cuzk_cuda::KERNEL_DIR_ENV,
            kernels::image_path().parent().expect("has a folder"),
        )
        .stdout(Stdio::piped())
        .spawn()
        .context("starting cargo test")?;
    let mut summary = Summary::default();
    for line in BufReader::new(child.stdout.take().expect("piped")).lines() {
        let line = line?;
        println!("{line}");
        summary.add_line(&line);
    }
    let status = child.wait()?;
    summary.verdict("GPU tests")?;
    if !status.success() {
        bail!("cargo test exited with {status}");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::Summary;

    #[test]
    fn summaries_are_totalled() {
        let mut s = Summary::default();
        s.add_line("test result: ok. 3 passed; 0 failed; 12 ignored; 0 measured; 5 filtered out; finished in 0.12s");
        s.add_line("test gpu_fr_ops ... ok");
        s.add_line("test result: FAILED. 1 passed; 2 failed; 0 ignored; 0 measured; 0 filtered out; finished in 1.00s");
        assert_eq!(
            s,
            Summary {
                passed: 4,
                failed: 2,
                runs: 2
            }
        );
        assert!(s.verdict("t").is_err());
    }

    #[test]
    fn nothing_run_is_a_failure() {
        let mut s = Summary::default();
        s.add_line("test result: ok. 0 passed; 0 failed; 0 ignored; 0 measured; 9 filtered out; finished in 0.00s");
        assert!(s
            .verdict("t")
            .unwrap_err()
            .to_string()
            .contains("zero tests ran"));
        s.add_line("test result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s");
        assert!(s.verdict("t").is_ok());
    }
}
