//! Finding nvcc (PATH, CUDA_HOME, CUDA_PATH), or installing the pinned CUDA 13.0 compiler
//! wheels from PyPI into `target/cuda-toolchain` when the machine has none.

use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The compiler wheels, pinned together: an unpinned `nvidia-nvvm` pulls a newer NVVM whose
/// PTX the 13.0 ptxas rejects (`Unsupported .version`).
const WHEELS: &[&str] = &[
    "nvidia-cuda-nvcc==13.0.88",
    "nvidia-cuda-runtime==13.0.96",
    "nvidia-cuda-crt==13.0.88",
    "nvidia-nvvm==13.0.88",
    "nvidia-cuda-cccl==13.0.85",
];

/// A usable nvcc and what it can do.
#[derive(Debug)]
pub struct Nvcc {
    /// The executable.
    pub path: PathBuf,
    /// Its full `--version` text, part of the kernel cache key.
    pub version_text: String,
    /// Major and minor release, such as (13, 0).
    pub release: (u32, u32),
    /// The real architectures it can generate code for (`sm_90`, ...).
    pub gpu_codes: Vec<String>,
}

impl Nvcc {
    fn probe(path: PathBuf) -> Result<Nvcc> {
        let version_text = output(Command::new(&path).arg("--version"))?;
        let release = parse_release(&version_text).with_context(|| {
            format!(
                "cannot read the release of {}:\n{version_text}",
                path.display()
            )
        })?;
        // `--list-gpu-code` exists since CUDA 11; without it, trust the request.
        let gpu_codes = output(Command::new(&path).arg("--list-gpu-code"))
            .map(|s| s.split_whitespace().map(str::to_owned).collect())
            .unwrap_or_default();
        Ok(Nvcc {
            path,
            version_text,
            release,
            gpu_codes,
        })
    }

    /// The folder holding nvcc and its companions (`fatbinary`).
    pub fn bin_dir(&self) -> &Path {
        self.path.parent().expect("nvcc lives in a folder")
    }

    /// Fails unless nvcc can generate code for every one of `archs`.
    pub fn check_archs(&self, archs: &[String]) -> Result<()> {
        if self.gpu_codes.is_empty() {
            return Ok(());
        }
        let missing: Vec<_> = archs
            .iter()
            .filter(|a| !self.gpu_codes.contains(a))
            .collect();
        if !missing.is_empty() {
            let (major, minor) = self.release;
            bail!(
                "nvcc {major}.{minor} at {} cannot build {missing:?} (it supports {:?}); \
                 choose others with --arch, or use a newer CUDA",
                self.path.display(),
                self.gpu_codes
            );
        }
        Ok(())
    }
}

fn output(cmd: &mut Command) -> Result<String> {
    let out = cmd
        .output()
        .with_context(|| format!("cannot run {cmd:?}"))?;
    if !out.status.success() {
        bail!("{cmd:?} failed: {}", String::from_utf8_lossy(&out.stderr));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Reads `release 13.0` out of `nvcc --version`.
fn parse_release(text: &str) -> Option<(u32, u32)> {
    let rest = &text[text.find("release ")? + "release ".len()..];
    let num: String = rest
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect();
    let mut parts = num.split('.');
    Some((parts.next()?.parse().ok()?, parts.next()?.parse().ok()?))
}

/// nvcc from the machine's CUDA (PATH, then CUDA_HOME, then CUDA_PATH), with where it was found.
fn installed() -> Option<(PathBuf, &'static str)> {
    if let Some(path) = std::env::var_os("PATH") {
        for dir in std::env::split_paths(&path) {
            let nvcc = dir.join("nvcc");
            if nvcc.is_file() {
                return Some((nvcc, "PATH"));
            }
        }
    }
    for var in ["CUDA_HOME", "CUDA_PATH"] {
        if let Some(home) = std::env::var_os(var).filter(|v| !v.is_empty()) {
            let nvcc = Path::new(&home).join("bin/nvcc");
            if nvcc.is_file() {
                return Some((nvcc, var));
            }
        }
    }
    None
}

/// nvcc inside a wheel virtual environment, whatever its Python version.
fn wheel_nvcc(venv: &Path) -> Option<PathBuf> {
    let lib = std::fs::read_dir(venv.join("lib")).ok()?;
    lib.flatten()
        .map(|e| e.path().join("site-packages/nvidia/cu13/bin/nvcc"))
        .find(|p| p.is_file())
}

/// Finds nvcc, installing the pinned wheels into `venv` when the machine has no CUDA.
pub fn find_or_provision(venv: &Path) -> Result<Nvcc> {
    if let Some((path, from)) = installed() {
        eprintln!("    nvcc: {} (from {from})", path.display());
        return Nvcc::probe(path);
    }
    if let Some(path) = wheel_nvcc(venv) {
        eprintln!(
            "    nvcc: {} (CUDA 13.0 wheels installed earlier)",
            path.display()
        );
        return Nvcc::probe(path);
    }
    eprintln!(
        "    nvcc: none on PATH, CUDA_HOME or CUDA_PATH; installing the CUDA 13.0 compiler \
         from PyPI into {}",
        venv.display()
    );
    let python = ["python3", "python"]
        .into_iter()
        .find(|p| Command::new(p).arg("--version").output().is_ok_and(|o| o.status.success()))
        .context("installing nvcc needs python3 (with venv and pip); or install CUDA and put nvcc on PATH")?;
    if !venv.join("bin/pip").is_file() {
        eprintln!("    $ {python} -m venv {}", venv.display());
        crate::util::run(Command::new(python).args(["-m", "venv"]).arg(venv))
            .context("creating the toolchain virtual environment")?;
    }
    eprintln!("    $ pip install {}", WHEELS.join(" "));
    crate::util::run(
        Command::new(venv.join("bin/pip"))
            .args(["install", "--quiet", "--disable-pip-version-check"])
            .args(WHEELS),
    )
    .context("installing the nvcc wheels from PyPI")?;
    let path =
        wheel_nvcc(venv).context("the nvcc wheels installed, but no nvcc was found in them")?;
    eprintln!("    nvcc: {}", path.display());
    Nvcc::probe(path)
}

#[cfg(test)]
mod tests {
    use super::parse_release;

    #[test]
    fn release_is_read_from_version_text() {
        let text = "nvcc: NVIDIA (R) Cuda compiler driver\nCuda compilation tools, release 13.0, V13.0.88\n";
        assert_eq!(parse_release(text), Some((13, 0)));
        assert_eq!(parse_release("release 12.8, V12.8.93"), Some((12, 8)));
        assert_eq!(parse_release("no version here"), None);
    }
}
