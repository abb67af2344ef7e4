//! `cargo xtask balancer`: builds the daemon and the balancer check in the dev profile (the
//! build `cargo xtask e2e` makes, so CI builds nothing new), then runs the check: two CPU
//! daemons behind nginx configured as docs/operations.md says, one SIGKILLed mid-run.

use crate::{e2e, kernels, util};
use anyhow::{bail, Result};
use std::path::PathBuf;
use std::process::Command;

/// Options of `cargo xtask balancer`.
#[derive(clap::Args, Debug)]
pub struct BalancerArgs {
    /// Prove calls to send through nginx.
    #[arg(long, default_value_t = 40)]
    requests: usize,
    /// Calls in flight at once.
    #[arg(long, default_value_t = 4)]
    concurrency: usize,
    /// The nginx binary (default: `nginx` on PATH, else /usr/sbin/nginx).
    #[arg(long)]
    nginx: Option<PathBuf>,
}

/// Builds and runs the balancer check; its files (nginx's configuration and logs, the
/// daemons' logs) stay in target/balancer.
pub fn run(args: &BalancerArgs) -> Result<()> {
    let nginx = match &args.nginx {
        Some(path) => path.clone(),
        None => find_nginx()?,
    };
    let bin = e2e::build_test_programs("cuzk-balancer")?;
    util::step("two daemons behind nginx, one killed mid-run");
    util::run(
        Command::new(bin.join("cuzk-balancer"))
            .arg("--daemon")
            .arg(bin.join("cuzk-daemon"))
            .arg("--nginx")
            .arg(&nginx)
            .arg("--doc")
            .arg(util::project_root().join("docs/operations.md"))
            .arg("--dir")
            .arg(kernels::target_dir().join("balancer"))
            .args(["--requests", &args.requests.to_string()])
            .args(["--concurrency", &args.concurrency.to_string()])
            .current_dir(util::project_root()),
    )
}

/// `nginx` on PATH, else where Debian installs it (/usr/sbin is not on every user's PATH).
fn find_nginx() -> Result<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let found = std::env::split_paths(&path)
        .chain([PathBuf::from("/usr/sbin")])
        .map(|dir| dir.join("nginx"))
        .find(|p| p.is_file());
    match found {
        Some(p) => Ok(p),
        None => bail!(
            "no nginx on PATH or in /usr/sbin (Debian: apt-get install -y nginx), or pass --nginx"
        ),
    }
}
