//! The crate boundary: the scheduler links no GPU code, on any target.

use std::process::Command;

#[test]
fn no_gpu_crate_in_the_dependency_tree() {
    let output = Command::new(env!("CARGO"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args([
            "tree",
            "--package",
            "cuzk-sched",
            "--edges",
            "normal,build",
            "--target",
            "all",
            "--prefix",
            "none",
            "--format",
            "{p}",
        ])
        .output()
        .expect("cargo runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "cargo tree failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let packages: Vec<&str> = stdout
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert!(
        packages.contains(&"cuzk-groth16"),
        "the tree was read: {stdout}"
    );
    for gpu in ["cudarc", "cuzk-cuda"] {
        assert!(
            !packages.contains(&gpu),
            "{gpu} is a dependency of cuzk-sched"
        );
    }
}
