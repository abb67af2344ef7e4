//! The dependency rules of docs/ARCHITECTURE.md, checked on `cargo tree`: which workspace
//! crates may depend on prost and tonic (the lists are read from the document), and what
//! the CLI and the scheduler must not link.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

fn cargo_tree(args: &[&str]) -> String {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .arg("tree")
        .args(["--offline", "--prefix", "none"])
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("running cargo tree");
    assert!(
        out.status.success(),
        "cargo tree {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Workspace crates that depend directly on `dep` (normal and build dependencies).
fn direct_dependents(dep: &str) -> BTreeSet<String> {
    cargo_tree(&[
        "--workspace",
        "-e",
        "normal,build",
        "--depth",
        "1",
        "-i",
        dep,
    ])
    .lines()
    .filter(|l| l.contains("(/"))
    .filter_map(|l| l.split_whitespace().next().map(String::from))
    .filter(|name| name != dep)
    .collect()
}

/// Every package `krate` links (normal dependencies, its default features), by name.
fn links(krate: &str) -> BTreeSet<String> {
    cargo_tree(&["-p", krate, "-e", "normal"])
        .lines()
        .filter_map(|l| l.split_whitespace().next().map(String::from))
        .collect()
}

/// The crates a "Crates that depend on `dep`: a, b." line of the document names.
fn documented(dep: &str) -> BTreeSet<String> {
    let doc = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/ARCHITECTURE.md");
    let text = std::fs::read_to_string(&doc).expect("reading docs/ARCHITECTURE.md");
    let key = format!("- Crates that depend on `{dep}`:");
    let line = text
        .lines()
        .find_map(|l| l.strip_prefix(&key))
        .unwrap_or_else(|| panic!("docs/ARCHITECTURE.md has no line {key:?}"));
    line.trim()
        .trim_end_matches('.')
        .split(',')
        .map(|c| c.trim().to_string())
        .collect()
}

#[test]
fn only_the_documented_crates_depend_on_prost_and_tonic() {
    for dep in ["prost", "tonic"] {
        assert_eq!(
            direct_dependents(dep),
            documented(dep),
            "the crates depending on {dep} differ from docs/ARCHITECTURE.md's list"
        );
    }
}

#[test]
fn the_cli_is_a_grpc_client_only() {
    let linked = links("cuzk-cli");
    assert!(
        linked.contains("cuzk-proto"),
        "the CLI talks through cuzk-proto"
    );
    for banned in [
        "cudarc",
        "cuzk-cuda",
        "filecoin-proofs",
        "cuzk-daemon",
        "cuzk-gpu",
    ] {
        assert!(!linked.contains(banned), "the cuzk CLI links {banned}");
    }
}

#[test]
fn the_reference_prover_is_a_math_crate() {
    // The CPU halves of cuzk-ntt and cuzk-msm are its transforms and MSMs; their GPU
    // halves (and everything CUDA) stay out.
    let linked = links("cuzk-groth16");
    for banned in ["cudarc", "cuzk-cuda", "cuzk-mem"] {
        assert!(!linked.contains(banned), "cuzk-groth16 links {banned}");
    }
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("../crates/cuzk-groth16/Cargo.toml");
    let text = std::fs::read_to_string(manifest).expect("reading cuzk-groth16's manifest");
    assert!(
        !text.lines().any(|l| l.trim() == "[features]"),
        "cuzk-groth16 has features again: the GPU prover belongs in cuzk-prover"
    );
}

#[test]
fn backends_and_kinds_implement_the_plugin_crate_not_the_scheduler() {
    for krate in ["cuzk-gpu", "cuzk-filecoin"] {
        let linked = links(krate);
        assert!(
            linked.contains("cuzk-plugin"),
            "{krate} implements cuzk-plugin"
        );
        assert!(
            !linked.contains("cuzk-sched"),
            "{krate} links the scheduler"
        );
    }
}

#[test]
fn the_scheduler_links_no_cuda_code() {
    let linked = links("cuzk-sched");
    for banned in ["cudarc", "cuzk-cuda"] {
        assert!(!linked.contains(banned), "cuzk-sched links {banned}");
    }
}

#[test]
fn the_filecoin_crate_is_domain_code_without_gpu_code() {
    let linked = links("cuzk-filecoin");
    for banned in ["cudarc", "cuzk-cuda", "cuzk-prover", "cuzk-gpu"] {
        assert!(!linked.contains(banned), "cuzk-filecoin links {banned}");
    }
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("../crates/cuzk-filecoin/Cargo.toml");
    let text = std::fs::read_to_string(manifest).expect("reading cuzk-filecoin's manifest");
    assert!(
        !text.lines().any(|l| l.trim() == "[features]"),
        "cuzk-filecoin has features again: GPU proving goes through the scheduler"
    );
}
