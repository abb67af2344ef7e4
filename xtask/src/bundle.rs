//! `cargo xtask bundle`: everything a GPU host without Rust needs to run cuzk's GPU tests,
//! benchmarks and service, in `target/bundle/`: stripped release test binaries (one per crate
//! that has `gpu_` tests) and `cuzk-bench`, both xz-packed behind an unpacking wrapper of the
//! same name, the `cuzk-daemon` and `cuzk` binaries, the kernel
//! image once, and the `run-tests`, `run-bench`, `run-e2e`, `run-sweep`, `run-scale`,
//! `run-filecoin`, `run-soak`, `run-example`, `run-c2`, `run-ab`, `run-profile` and
//! `run-variants` scripts (with `--variant`, variant kernel images beside the default), and the
//! bellperson user's example
//! (`examples/bellperson-prove`, built as the outside project it is).

use crate::kernels::{self, target_dir, BuildKernelsArgs};
use crate::util::{project_root, step};
use anyhow::{bail, Context, Result};
use serde_json::Value;
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The bundle travels to the GPU host together with the working tree (a few MiB), 64 MiB in
/// all; its size is capped below that.
const MAX_BYTES: u64 = 56 << 20;

const RUN_TESTS: &str = include_str!("../bundle/run-tests");
const RUN_BENCH: &str = include_str!("../bundle/run-bench");
const RUN_E2E: &str = include_str!("../bundle/run-e2e");
const RUN_SWEEP: &str = include_str!("../bundle/run-sweep");
const RUN_SCALE: &str = include_str!("../bundle/run-scale");
const RUN_FILECOIN: &str = include_str!("../bundle/run-filecoin");
const RUN_SOAK: &str = include_str!("../bundle/run-soak");
const RUN_EXAMPLE: &str = include_str!("../bundle/run-example");
const RUN_C2: &str = include_str!("../bundle/run-c2");
const RUN_AB: &str = include_str!("../bundle/run-ab");
const RUN_PROFILE: &str = include_str!("../bundle/run-profile");
const RUN_VARIANTS: &str = include_str!("../bundle/run-variants");
/// The wrapper a packed binary ships behind (`@NAME@` is the binary's name).
const PACKED_WRAPPER: &str = include_str!("../bundle/packed");

/// Options of `cargo xtask bundle`.
#[derive(clap::Args, Debug)]
pub struct BundleArgs {
    /// Architectures of the shipped kernel image (SASS), comma-separated; the default image also
    /// carries the PTX, variant images do not.
    #[arg(long, value_delimiter = ',', default_value = "sm_90")]
    pub arch: Vec<String>,
    /// A variant kernel image to ship beside the default one (repeatable): its preprocessor
    /// definitions, comma-separated (`NAME[=VALUE]`, as `build-kernels --define`). Each goes
    /// xz-packed to `kernels-<definitions>/` (the architecture's cubin when the bundle has one
    /// architecture, else the image); `run-variants` compares them all.
    #[arg(long = "variant", value_name = "NAME[=VALUE],...")]
    pub variants: Vec<String>,
}

/// Builds `target/bundle/` and returns its path.
pub fn build(args: &BundleArgs) -> Result<PathBuf> {
    let image = kernels::build(&BuildKernelsArgs {
        arch: args.arch.clone(),
        force: false,
        defines: Vec::new(),
    })?;

    step("release GPU test binaries");
    let tests = gpu_test_binaries()?;
    step("release benchmark binary");
    let bench = bench_binary()?;
    step("release daemon and command line");
    let service = service_binaries()?;
    step("release bellperson-prove example");
    let example = example_binary()?;

    let dir = target_dir().join("bundle");
    step(&format!("assembling {}", dir.display()));
    if dir.exists() {
        fs::remove_dir_all(&dir).with_context(|| format!("clearing {}", dir.display()))?;
    }
    for sub in ["tests", "bin", "kernels"] {
        fs::create_dir_all(dir.join(sub))?;
    }
    fs::copy(&image, dir.join("kernels").join(kernels::IMAGE_FILE))?;
    for variant in &args.variants {
        let defines: Vec<String> = variant.split(',').map(str::to_string).collect();
        let image = kernels::build(&BuildKernelsArgs {
            arch: args.arch.clone(),
            force: false,
            defines,
        })?;
        let name = image
            .parent()
            .and_then(Path::file_name)
            .context("a variant image's folder")?;
        let out = dir.join(name);
        fs::create_dir_all(&out)?;
        // A variant runs on the bundle's GPU only, so with one architecture it ships that
        // architecture's cubin (the driver loads it as it loads the fatbin), a third of the
        // image: the image's PTX would be JIT-compiled only for other GPUs.
        match variant_cubin(&image, &args.arch)? {
            Some(cubin) => xz_into(&cubin, &out.join("cuzk.cubin.xz"))?,
            None => xz_into(&image, &out.join(format!("{}.xz", kernels::IMAGE_FILE)))?,
        }
    }
    for (name, exe) in &tests {
        install_packed(exe, &dir.join("tests").join(name))?;
    }
    install_packed(&bench, &dir.join("bin/cuzk-bench"))?;
    install_packed(&example, &dir.join("bin/bellperson-prove"))?;
    for (name, exe) in &service {
        install_binary(exe, &dir.join("bin").join(name))?;
    }
    write_script(&dir.join("run-tests"), RUN_TESTS)?;
    write_script(&dir.join("run-bench"), RUN_BENCH)?;
    write_script(&dir.join("run-e2e"), RUN_E2E)?;
    write_script(&dir.join("run-sweep"), RUN_SWEEP)?;
    write_script(&dir.join("run-scale"), RUN_SCALE)?;
    write_script(&dir.join("run-filecoin"), RUN_FILECOIN)?;
    write_script(&dir.join("run-soak"), RUN_SOAK)?;
    write_script(&dir.join("run-example"), RUN_EXAMPLE)?;
    write_script(&dir.join("run-c2"), RUN_C2)?;
    write_script(&dir.join("run-ab"), RUN_AB)?;
    write_script(&dir.join("run-profile"), RUN_PROFILE)?;
    write_script(&dir.join("run-variants"), RUN_VARIANTS)?;

    let total = dir_size(&dir)?;
    for (name, exe) in &tests {
        eprintln!("    tests/{name}  (from {})", exe.display());
    }
    eprintln!(
        "    bundle: {} test binaries, cuzk-bench, cuzk-daemon, cuzk, kernel image; {:.1} MiB of {} MiB allowed",
        tests.len(),
        total as f64 / (1u64 << 20) as f64,
        MAX_BYTES >> 20
    );
    if total > MAX_BYTES {
        bail!("the bundle is {total} bytes, over the {MAX_BYTES}-byte limit");
    }
    eprintln!(
        "    run there: {0}/run-tests OUT_DIR ; {0}/run-bench OUT_DIR ; {0}/run-e2e OUT_DIR ; {0}/run-sweep OUT_DIR ; {0}/run-scale OUT_DIR ; {0}/run-filecoin OUT_DIR [SIZES] ; {0}/run-soak OUT_DIR [--cpu] ; {0}/run-example OUT_DIR ; {0}/run-c2 OUT_DIR [SIZE] ; CUZK_BENCH_A=OTHER {0}/run-ab OUT_DIR ; {0}/run-profile OUT_DIR ; {0}/run-variants OUT_DIR [ARGS]",
        dir.display()
    );
    Ok(dir)
}

/// Runs cargo with JSON messages on stdout (diagnostics still rendered on stderr) and returns
/// the compiler-artifact messages.
fn cargo_artifacts(args: &[&str]) -> Result<Vec<Value>> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args(args)
        .arg("--message-format=json-render-diagnostics")
        .current_dir(project_root())
        .stderr(Stdio::inherit())
        .output()
        .context("running cargo")?;
    if !out.status.success() {
        bail!("cargo {} failed with {}", args.join(" "), out.status);
    }
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["reason"] == "compiler-artifact")
        .collect())
}

/// The package name in a cargo package id (`path+file:///…/cuzk-cuda#0.1.0`, or `…#name@1.0`).
fn package_name(id: &str) -> String {
    let (path, frag) = id.rsplit_once('#').unwrap_or((id, ""));
    match frag.split_once('@') {
        Some((name, _)) => name.to_owned(),
        None => path.rsplit('/').next().unwrap_or(path).to_owned(),
    }
}

/// Test names a test binary lists among its ignored tests.
fn ignored_tests(exe: &Path) -> Result<Vec<String>> {
    let out = Command::new(exe)
        .args(["--list", "--ignored", "--format=terse"])
        .output()
        .with_context(|| format!("listing tests of {}", exe.display()))?;
    if !out.status.success() {
        bail!(
            "{} --list failed: {}",
            exe.display(),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.strip_suffix(": test"))
        .map(str::to_owned)
        .collect())
}

/// Builds the workspace's tests in release mode and picks the binaries with `gpu_` tests,
/// named `<package>.<target>` in the bundle.
fn gpu_test_binaries() -> Result<Vec<(String, PathBuf)>> {
    let artifacts = cargo_artifacts(&["test", "--workspace", "--release", "--no-run"])?;
    let mut by_package: BTreeMap<String, Vec<(String, PathBuf)>> = BTreeMap::new();
    for a in artifacts {
        let (Some(exe), true) = (a["executable"].as_str(), a["profile"]["test"] == true) else {
            continue;
        };
        let exe = PathBuf::from(exe);
        let gpu_tests = ignored_tests(&exe)?
            .into_iter()
            .filter(|t| is_gpu_test(t))
            .count();
        if gpu_tests == 0 {
            continue;
        }
        let package = package_name(a["package_id"].as_str().unwrap_or("unknown"));
        let target = a["target"]["name"]
            .as_str()
            .unwrap_or("unknown")
            .replace('-', "_");
        eprintln!("    {package} ({target}): {gpu_tests} gpu_ tests");
        by_package
            .entry(package.clone())
            .or_default()
            .push((format!("{package}.{target}"), exe));
    }
    let mut out = Vec::new();
    for (package, bins) in by_package {
        if bins.len() > 1 {
            let names: Vec<_> = bins.iter().map(|(n, _)| n.as_str()).collect();
            bail!(
                "{package} has gpu_ tests in {} test binaries ({names:?}); keep them in one",
                bins.len()
            );
        }
        out.extend(bins);
    }
    if out.is_empty() {
        bail!("no test binary of the workspace has ignored gpu_ tests");
    }
    Ok(out)
}

/// libtest's `gpu_` filter matches anywhere in the path; the convention is a name starting so.
fn is_gpu_test(path: &str) -> bool {
    path.rsplit("::")
        .next()
        .is_some_and(|name| name.starts_with("gpu_"))
}

/// Builds `cuzk-bench` in release mode, with its GPU feature when it declares one.
fn bench_binary() -> Result<PathBuf> {
    let mut args = vec![
        "build",
        "--release",
        "--package",
        "cuzk-bench",
        "--bin",
        "cuzk-bench",
    ];
    let features = bench_features()?;
    let gpu_feature = ["cuda", "gpu"]
        .into_iter()
        .find(|f| features.iter().any(|x| x == f));
    if let Some(f) = gpu_feature {
        args.extend(["--features", f]);
    }
    let artifacts = cargo_artifacts(&args)?;
    artifacts
        .iter()
        .filter(|a| a["target"]["name"] == "cuzk-bench")
        .find_map(|a| a["executable"].as_str().map(PathBuf::from))
        .context("cargo built no cuzk-bench executable")
}

/// Builds `cuzk-daemon` and `cuzk` in release mode; returns them by name.
fn service_binaries() -> Result<Vec<(String, PathBuf)>> {
    let artifacts = cargo_artifacts(&[
        "build",
        "--release",
        "--package",
        "cuzk-daemon",
        "--package",
        "cuzk-cli",
        "--bins",
    ])?;
    ["cuzk-daemon", "cuzk"]
        .into_iter()
        .map(|name| {
            artifacts
                .iter()
                .filter(|a| a["target"]["name"] == name)
                .find_map(|a| a["executable"].as_str().map(PathBuf::from))
                .map(|exe| (name.to_string(), exe))
                .with_context(|| format!("cargo built no {name} executable"))
        })
        .collect()
}

/// Builds `examples/bellperson-prove` in release, on its own (outside the workspace, as a
/// user's project builds), in `target/examples`.
fn example_binary() -> Result<PathBuf> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let root = project_root();
    let target = root.join("target/examples");
    let status = Command::new(cargo)
        .args(["build", "--release", "--quiet"])
        .env("CARGO_TARGET_DIR", &target)
        .current_dir(root.join("examples/bellperson-prove"))
        .status()
        .context("running cargo for examples/bellperson-prove")?;
    if !status.success() {
        bail!("building examples/bellperson-prove failed with {status}");
    }
    Ok(target.join("release/bellperson-prove"))
}

fn bench_features() -> Result<Vec<String>> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args(["metadata", "--no-deps", "--format-version", "1"])
        .current_dir(project_root())
        .output()
        .context("running cargo metadata")?;
    let meta: Value = serde_json::from_slice(&out.stdout).context("reading cargo metadata")?;
    let bench = meta["packages"]
        .as_array()
        .and_then(|ps| ps.iter().find(|p| p["name"] == "cuzk-bench"))
        .context("no cuzk-bench package in the workspace")?;
    Ok(bench["features"]
        .as_object()
        .map(|f| f.keys().cloned().collect())
        .unwrap_or_default())
}

/// Installs a binary stripped and xz-packed, as `.<name>.xz` behind [`PACKED_WRAPPER`] under
/// its own name, which unpacks it on first use, so that scripts call it as before (unpacked
/// when this machine has no `xz`). The test binaries and `cuzk-bench` are packed: a quarter of
/// their size, and those linking filecoin-proofs are several MiB each. The service binaries,
/// which scripts start and signal by process id, are not.
fn install_packed(from: &Path, to: &Path) -> Result<()> {
    let name = to.file_name().and_then(|n| n.to_str()).unwrap_or_default();
    let dir = to.parent().context("a binary's folder")?;
    let real = dir.join(format!(".{name}"));
    let packed = dir.join(format!(".{name}.xz"));
    install_binary(from, &real)?;
    let xz = fs::File::create(&packed).and_then(|out| {
        Command::new("xz")
            .args(["-9", "-c"])
            .arg(&real)
            .stdout(out)
            .status()
    });
    match xz {
        Ok(s) if s.success() => {
            fs::remove_file(&real)?;
            write_script(to, &PACKED_WRAPPER.replace("@NAME@", name))
        }
        _ => {
            eprintln!("    warning: could not xz-pack {name}; shipping it unpacked");
            let _ = fs::remove_file(&packed);
            fs::rename(&real, to)?;
            Ok(())
        }
    }
}

/// The cached cubin of a variant image built for exactly one architecture (named by the key
/// in the image's stamp), if there is one.
fn variant_cubin(image: &Path, archs: &[String]) -> Result<Option<PathBuf>> {
    let [arch] = archs else {
        return Ok(None);
    };
    let dir = image.parent().context("a variant image's folder")?;
    let stamp = fs::read_to_string(dir.join(format!("{}.stamp", kernels::IMAGE_FILE)))?;
    let Some(key) = stamp.lines().find_map(|l| l.strip_prefix("key=")) else {
        return Ok(None);
    };
    let cubin = dir
        .join("cache")
        .join(format!("{}-{arch}.cubin", &key[..16.min(key.len())]));
    Ok(cubin.is_file().then_some(cubin))
}

/// Writes `from` xz-packed to `to` (variant kernel images: a fatbin packs to about 40%).
fn xz_into(from: &Path, to: &Path) -> Result<()> {
    let out = fs::File::create(to).with_context(|| format!("creating {}", to.display()))?;
    let status = Command::new("xz")
        .args(["-9", "-T0", "-c"])
        .arg(from)
        .stdout(out)
        .status()
        .context("running xz (variant images travel packed)")?;
    if !status.success() {
        bail!("xz failed on {}", from.display());
    }
    Ok(())
}

/// Copies a binary and strips its symbols (release builds already drop debug info).
fn install_binary(from: &Path, to: &Path) -> Result<()> {
    fs::copy(from, to).with_context(|| format!("copying {}", from.display()))?;
    match Command::new("strip").arg("--strip-all").arg(to).status() {
        Ok(s) if s.success() => {}
        _ => eprintln!(
            "    warning: could not strip {} (no binutils `strip`?)",
            to.display()
        ),
    }
    Ok(())
}

fn write_script(path: &Path, text: &str) -> Result<()> {
    fs::write(path, text)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(path, fs::Permissions::from_mode(0o755))?;
    }
    Ok(())
}

fn dir_size(dir: &Path) -> Result<u64> {
    let mut total = 0;
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        let meta = entry.metadata()?;
        total += if meta.is_dir() {
            dir_size(&entry.path())?
        } else {
            meta.len()
        };
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn package_names_come_from_ids() {
        assert_eq!(
            package_name("path+file:///work/main/crates/cuzk-cuda#0.1.0"),
            "cuzk-cuda"
        );
        assert_eq!(
            package_name("path+file:///work/main/benches#cuzk-bench@0.1.0"),
            "cuzk-bench"
        );
    }

    #[test]
    fn only_names_starting_gpu_count() {
        assert!(is_gpu_test("gpu_fr_ops"));
        assert!(is_gpu_test("field::gpu_fr_ops"));
        assert!(!is_gpu_test("cpu_vs_gpu_layout"));
    }

    #[test]
    fn scripts_are_bash() {
        for script in [
            RUN_TESTS,
            RUN_BENCH,
            RUN_E2E,
            RUN_SWEEP,
            RUN_SCALE,
            RUN_FILECOIN,
            RUN_SOAK,
            RUN_EXAMPLE,
            RUN_C2,
            RUN_AB,
            RUN_PROFILE,
            RUN_VARIANTS,
        ] {
            assert!(script.starts_with("#!/usr/bin/env bash\n"));
        }
        // The image comparison unpacks the variants, runs the MSM tests before each image's
        // figures, and stops what it started.
        assert!(
            RUN_VARIANTS.contains("cuzk.fatbin.xz") && RUN_VARIANTS.contains("tests/cuzk-msm.*")
        );
        assert!(RUN_VARIANTS.contains("CUZK_KERNEL_DIR") && RUN_VARIANTS.contains("trap "));
        // The A/B comparison needs the other build named, runs both pipelined and, where a
        // build offers it, serial, and pools the steady partitions.
        assert!(RUN_AB.contains("CUZK_BENCH_A must name"));
        assert!(RUN_AB.contains("--serial") && RUN_AB.contains("number < 3"));
        // The profile leaves the clocks alone and profiles the kernels that bound the prover.
        assert!(RUN_PROFILE.contains("--clock-control none"));
        for kernel in [
            "cuzk_ntt_dit_pass",
            "cuzk_ntt_dif_pass",
            "cuzk_msm_scatter",
            "cuzk_msm_g1_level_affine",
        ] {
            assert!(RUN_PROFILE.contains(kernel), "run-profile lacks {kernel}");
        }
        // The C2 run fabricates, records, preloads, proves and has filecoin-proofs verify,
        // stopping its daemon whatever happens; the 47 GB parameter file is not written.
        assert!(RUN_C2.contains("trap cleanup EXIT"));
        for step in [
            "fabricate-c1",
            " pce ",
            "preload",
            "prove --c1",
            "verify-c2",
        ] {
            assert!(RUN_C2.contains(step), "run-c2 lacks {step}");
        }
        assert!(RUN_C2.contains("write_generated = false"));
        assert!(RUN_TESTS.contains("--ignored gpu_ --test-threads=1"));
        // The service scripts stop what they start, whatever happens.
        for script in [RUN_E2E, RUN_SWEEP] {
            assert!(script.contains("trap cleanup EXIT"));
            assert!(script.contains("backend = \"cuda\""));
        }
        // The soak drives the daemon with `cuzk soak`, on the CUDA backend unless --cpu.
        assert!(RUN_SOAK.contains("trap cleanup EXIT"));
        assert!(RUN_SOAK.contains("BACKEND=cuda"));
        assert!(RUN_SOAK.contains("\" soak --jobs"));
        // Its PoRep inputs are made, and its PoRep proofs checked, by the bundled cuzk-bench.
        assert!(RUN_SOAK.contains("soak-c1 make") && RUN_SOAK.contains("soak-c1 verify"));
        assert!(RUN_SWEEP.contains("16777214"));
        // The example must have proved on the GPU.
        assert!(
            RUN_EXAMPLE.contains("bin/bellperson-prove") && RUN_EXAMPLE.contains("CUDA device")
        );
        // A packed binary's wrapper runs the unpacked binary with the same arguments.
        assert!(PACKED_WRAPPER.starts_with("#!/usr/bin/env bash\n"));
        assert!(PACKED_WRAPPER.contains("exec -a \"$0\" \"$REAL\" \"$@\""));
        assert!(PACKED_WRAPPER.contains("REAL=\"$HERE/.@NAME@\""));
        // The Filecoin script runs the bundled GPU test binary of cuzk-filecoin, then its bench.
        assert!(RUN_FILECOIN.contains("tests/cuzk-filecoin.gpu"));
        assert!(RUN_FILECOIN.contains("cuzk-bench\" filecoin"));
    }
}
