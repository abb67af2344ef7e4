//! Where `unsafe` may be: the CUDA runtime's driver edge (`raw.rs`), its launch builder and
//! field-kernel, sparse-kernel and unpacking launches in cuzk-cuda, and the kernel-launch modules of cuzk-ntt and
//! cuzk-msm. Every other crate forbids it, the three that own kernels deny it outside those
//! modules, and every `unsafe` block there says why it is sound (`// SAFETY:` above it).

use std::path::{Path, PathBuf};

/// The files allowed to contain `unsafe` code, relative to the workspace root.
const ALLOWED: &[&str] = &[
    "crates/cuzk-cuda/src/raw.rs",
    "crates/cuzk-cuda/src/launch.rs",
    "crates/cuzk-cuda/src/field.rs",
    "crates/cuzk-cuda/src/packed.rs",
    "crates/cuzk-cuda/src/sparse.rs",
    "crates/cuzk-ntt/src/gpu/launch.rs",
    "crates/cuzk-msm/src/gpu/launch.rs",
    "crates/cuzk-msm/src/gpu/fixed.rs",
];

/// The crates that own kernels: `deny(unsafe_code)`, opted out per module.
const KERNEL_CRATES: &[&str] = &["cuzk-cuda", "cuzk-ntt", "cuzk-msm"];

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Lines that use `unsafe` as code (blocks, functions, impls), comments excluded.
fn unsafe_lines(text: &str) -> Vec<(usize, &str)> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| {
            let code = l.split("//").next().unwrap_or("");
            ["unsafe {", "unsafe fn", "unsafe impl", "unsafe extern"]
                .iter()
                .any(|k| code.contains(k))
        })
        .collect()
}

#[test]
fn unsafe_code_lives_in_the_fenced_modules_only_and_says_why() {
    let mut files = Vec::new();
    for krate in std::fs::read_dir(root().join("crates")).unwrap().flatten() {
        rust_files(&krate.path().join("src"), &mut files);
    }
    let mut seen = Vec::new();
    for file in &files {
        let rel = file
            .strip_prefix(root())
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        let text = std::fs::read_to_string(file).unwrap();
        let uses = unsafe_lines(&text);
        if uses.is_empty() {
            continue;
        }
        assert!(
            ALLOWED.contains(&rel.as_str()),
            "{rel}:{} uses unsafe outside the fenced modules",
            uses[0].0 + 1
        );
        seen.push(rel.clone());
        let lines: Vec<&str> = text.lines().collect();
        for (i, line) in uses {
            if !line.contains("unsafe {") {
                continue;
            }
            // The comment block right above the line (or the line itself) says why.
            let mut said = line.contains("SAFETY:");
            let mut j = i;
            while !said && j > 0 && lines[j - 1].trim_start().starts_with("//") {
                j -= 1;
                said = lines[j].contains("SAFETY:");
            }
            assert!(
                said,
                "{rel}:{}: an unsafe block without a `// SAFETY:` comment above it",
                i + 1
            );
        }
    }
    assert!(
        !seen.is_empty(),
        "no unsafe code found at all: the scan is broken"
    );
}

#[test]
fn every_crate_forbids_unsafe_or_fences_it() {
    for krate in std::fs::read_dir(root().join("crates")).unwrap().flatten() {
        let name = krate.file_name().to_string_lossy().to_string();
        let src = krate.path().join("src");
        for root_file in ["lib.rs", "main.rs"] {
            let path = src.join(root_file);
            let Ok(text) = std::fs::read_to_string(&path) else {
                continue;
            };
            let want = if KERNEL_CRATES.contains(&name.as_str()) && root_file == "lib.rs" {
                "#![deny(unsafe_code)]"
            } else {
                "#![forbid(unsafe_code)]"
            };
            assert!(
                text.lines().any(|l| l.trim_start().starts_with(want)),
                "{name}/src/{root_file} lacks {want}"
            );
        }
    }
}
