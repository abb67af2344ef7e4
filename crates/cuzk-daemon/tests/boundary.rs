//! The protobuf boundary: among workspace crates only the daemon depends on prost, and
//! only the daemon and its clients (the CLI, the e2e driver) on tonic. The scheduler and
//! everything below it stay free of RPC code.

use std::process::Command;

/// Workspace crates that depend directly on `dep` (normal and build dependencies).
fn direct_dependents(dep: &str) -> Vec<String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args([
            "tree",
            "--workspace",
            "--offline",
            "-e",
            "normal,build",
            "--depth",
            "1",
            "--prefix",
            "none",
            "-i",
            dep,
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("running cargo tree");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.contains("(/"))
        .filter_map(|l| l.split_whitespace().next().map(String::from))
        .collect()
}

#[test]
fn only_the_daemon_knows_protobuf() {
    assert_eq!(direct_dependents("prost"), ["cuzk-daemon"]);
    let tonic = direct_dependents("tonic");
    for krate in &tonic {
        assert!(
            ["cuzk-daemon", "cuzk-cli", "cuzk-tests"].contains(&krate.as_str()),
            "{krate} depends on tonic"
        );
    }
    assert!(tonic.contains(&"cuzk-daemon".to_string()));
}
