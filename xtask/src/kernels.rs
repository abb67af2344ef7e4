//! `cargo xtask build-kernels`: generates the field code, compiles `kernels/` into one kernel
//! image (`target/kernels/cuzk.fatbin`: SASS per architecture plus compute_90 PTX), and skips
//! all of it when nothing that goes into the image has changed.
//!
//! Layout under the target folder:
//! - `kernels/gen/ec_gpu_field.cuh`: ec-gpu-gen's field arithmetic for Fr, Fp and Fp2;
//! - `kernels/gen/cuzk.cu`: the single translation unit, including every `kernels/**/*.cu`;
//! - `kernels/cache/<key>-<arch>.{cubin,ptx}`: one compiled image per architecture, keyed by a
//!   hash of sources, generated code, flags and nvcc version, so changing `--arch` recompiles
//!   only the architectures not built yet;
//! - `kernels/cuzk.fatbin` and `cuzk.fatbin.stamp` (the key of what the image holds).

use crate::nvcc::{self, Nvcc};
use crate::util::{project_root, step};
use anyhow::{bail, Context, Result};
use sha2::{Digest, Sha256};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;

/// Architectures of a full build: Ampere (A100, consumer), Ada, Hopper, Blackwell (consumer).
pub const DEFAULT_ARCHS: &[&str] = &["sm_80", "sm_86", "sm_89", "sm_90", "sm_120"];

/// The PTX shipped beside the SASS, JIT-compiled by drivers for newer GPUs. Made by the same
/// toolchain as the SASS; PTX of CUDA 13.0 loads on drivers of CUDA 13.0 and later.
const PTX_ARCH: &str = "compute_90";

/// Name of the image, as the runtime looks for it (`cuzk_cuda::KERNEL_IMAGE_FILE`).
pub const IMAGE_FILE: &str = cuzk_cuda::KERNEL_IMAGE_FILE;

/// Options of `cargo xtask build-kernels`.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct BuildKernelsArgs {
    /// Real architectures to build SASS for, comma-separated (default: sm_80,sm_86,sm_89,sm_90,sm_120).
    #[arg(long, value_delimiter = ',')]
    pub arch: Vec<String>,
    /// Rebuild even when the inputs are unchanged (and ignore cached per-architecture images).
    #[arg(long)]
    pub force: bool,
    /// Preprocessor definitions (`NAME` or `NAME=VALUE`, repeatable) for a variant image: a
    /// kernel change kept behind `#ifdef` until it is measured. A variant goes to
    /// `target/kernels-<definitions>/` (name it in `CUZK_KERNEL_DIR` to use it), never over the
    /// default image.
    #[arg(long = "define", value_name = "NAME[=VALUE]")]
    pub defines: Vec<String>,
}

/// The cargo target folder (honouring CARGO_TARGET_DIR, as the runtime's search does).
pub fn target_dir() -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR").filter(|v| !v.is_empty()) {
        Some(dir) => project_root().join(dir),
        None => project_root().join("target"),
    }
}

/// Where the kernel image is written.
pub fn image_path() -> PathBuf {
    target_dir().join("kernels").join(IMAGE_FILE)
}

fn archs(args: &BuildKernelsArgs) -> Result<Vec<String>> {
    let mut out: Vec<String> = Vec::new();
    let requested: Vec<String> = if args.arch.is_empty() {
        DEFAULT_ARCHS.iter().map(|s| s.to_string()).collect()
    } else {
        args.arch
            .iter()
            .map(|s| s.trim().to_owned())
            .filter(|s| !s.is_empty())
            .collect()
    };
    for a in requested {
        let digits = a.strip_prefix("sm_").unwrap_or("");
        if digits.len() < 2 || !digits.chars().all(|c| c.is_ascii_alphanumeric()) {
            bail!("--arch takes real architectures such as sm_90 (got {a:?})");
        }
        if !out.contains(&a) {
            out.push(a);
        }
    }
    if out.is_empty() {
        bail!("--arch names no architecture");
    }
    Ok(out)
}

/// The `-D` flags of a variant and the folder its image goes to (`kernels` for none).
fn variant(defines: &[String]) -> Result<(Vec<String>, String)> {
    let mut flags = Vec::new();
    let mut parts = Vec::new();
    for d in defines {
        let (name, value) = d.split_once('=').unwrap_or((d.as_str(), ""));
        let word = |w: &str| w.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        let starts_well = name
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
        if !starts_well || !word(name) || !word(value) {
            bail!("--define takes NAME or NAME=VALUE of letters, digits and '_' (got {d:?})");
        }
        flags.push(format!("-D{d}"));
        parts.push(if value.is_empty() {
            name.to_owned()
        } else {
            format!("{name}-{value}")
        });
    }
    let folder = if parts.is_empty() {
        "kernels".to_owned()
    } else {
        format!("kernels-{}", parts.join("-"))
    };
    Ok((flags, folder))
}

/// Builds the kernel image if anything that goes into it changed; returns its path.
pub fn build(args: &BuildKernelsArgs) -> Result<PathBuf> {
    let start = Instant::now();
    let archs = archs(args)?;
    let (defines, folder) = variant(&args.defines)?;
    // A variant image is built to be measured on the GPUs at hand, so it holds their SASS only:
    // the PTX for later GPUs would double its compile time for nothing.
    let with_ptx = defines.is_empty();
    step(&format!(
        "kernel image for {}{}{}",
        archs.join(", "),
        if with_ptx {
            format!(" + {PTX_ARCH} PTX")
        } else {
            String::new()
        },
        if defines.is_empty() {
            String::new()
        } else {
            format!(", variant {}", defines.join(" "))
        }
    ));
    let out_dir = target_dir().join(folder);
    let gen_dir = out_dir.join("gen");
    let cache_dir = out_dir.join("cache");
    fs::create_dir_all(&gen_dir)?;
    fs::create_dir_all(&cache_dir)?;

    // Several people may build in one checkout: one build at a time writes these folders.
    let lock = fs::File::create(out_dir.join(".build.lock"))?;
    lock.lock().context("locking target/kernels")?;

    let nvcc = nvcc::find_or_provision(&target_dir().join("cuda-toolchain"))?;
    nvcc.check_archs(&archs)?;

    let kernels_dir = project_root().join("kernels");
    write_if_changed(&gen_dir.join("ec_gpu_field.cuh"), &generate_field_code()?)?;
    let entries = entry_files(&kernels_dir)?;
    write_if_changed(&gen_dir.join("cuzk.cu"), &unity_source(&entries))?;

    let mut flags = flags(&kernels_dir, &gen_dir);
    flags.extend(defines);
    let key = input_key(&kernels_dir, &gen_dir, &flags, &nvcc)?;
    let image = out_dir.join(IMAGE_FILE);
    let stamp_path = out_dir.join(format!("{IMAGE_FILE}.stamp"));
    let ptx_arch = if with_ptx { PTX_ARCH } else { "none" };
    let stamp = format!("key={key}\narchs={}\nptx={ptx_arch}\n", archs.join(","));
    if !args.force
        && image.is_file()
        && fs::read_to_string(&stamp_path).ok().as_deref() == Some(&stamp)
    {
        eprintln!("    up to date: {} ({})", image.display(), size(&image));
        return Ok(image);
    }

    let short = &key[..16];
    prune_cache(&cache_dir, short)?;
    let mut jobs = Vec::new();
    let mut parts = Vec::new();
    for arch in &archs {
        let out = cache_dir.join(format!("{short}-{arch}.cubin"));
        parts.push((format!("elf,sm={}", &arch[3..]), out.clone()));
        jobs.push(Job {
            label: arch.clone(),
            kind: "-cubin",
            arch: format!("-arch={arch}"),
            out,
        });
    }
    if with_ptx {
        let ptx = cache_dir.join(format!("{short}-{PTX_ARCH}.ptx"));
        parts.push((format!("ptx,sm={}", &PTX_ARCH[8..]), ptx.clone()));
        jobs.push(Job {
            label: format!("{PTX_ARCH} PTX"),
            kind: "-ptx",
            arch: format!("-arch={PTX_ARCH}"),
            out: ptx,
        });
    }
    if !args.force {
        jobs.retain(|j| !j.out.is_file());
    }
    compile_all(&nvcc, &flags, &gen_dir.join("cuzk.cu"), jobs)?;

    // Assemble the image from the per-architecture pieces, then publish it atomically.
    let tmp = out_dir.join(format!("{IMAGE_FILE}.tmp"));
    let mut cmd = Command::new(nvcc.bin_dir().join("fatbinary"));
    cmd.arg(format!("--create={}", tmp.display())).arg("-64");
    for (spec, file) in &parts {
        cmd.arg(format!("--image3=kind={spec},file={}", file.display()));
    }
    crate::util::run(&mut cmd).context("assembling the fatbin")?;
    fs::rename(&tmp, &image)?;
    fs::write(&stamp_path, stamp)?;
    eprintln!(
        "    wrote {} ({}) in {:.1} s",
        image.display(),
        size(&image),
        start.elapsed().as_secs_f64()
    );
    Ok(image)
}

fn size(path: &Path) -> String {
    let bytes = fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    format!("{:.2} MiB", bytes as f64 / (1u64 << 20) as f64)
}

/// nvcc flags shared by every piece of the image.
fn flags(kernels_dir: &Path, gen_dir: &Path) -> Vec<String> {
    vec![
        "-std=c++17".into(),
        "-O3".into(),
        format!("-I{}", kernels_dir.display()),
        format!("-I{}", gen_dir.display()),
    ]
}

/// ec-gpu-gen's field arithmetic for Fr, Fp and Fp2, in a fixed order.
///
/// The generator keeps fields in hash sets, so one builder with all three fields emits them in
/// a different order on every run; building each field alone and sharing the common prelude
/// keeps the text (and so the cache key) stable.
pub fn generate_field_code() -> Result<String> {
    use blstrs::{Fp2, Scalar};
    use ec_gpu_gen::SourceBuilder;
    check_montgomery_layout()?;
    // An empty builder emits the prelude followed by five empty sections joined by blank lines.
    let empty = SourceBuilder::new().build_32_bit_limbs();
    let prelude = empty
        .strip_suffix(&"\n\n".repeat(5))
        .context("unexpected ec-gpu-gen prelude")?;
    let body = |src: String| -> Result<String> {
        Ok(src
            .strip_prefix(prelude)
            .context("ec-gpu-gen output lacks its prelude")?
            .to_owned())
    };
    let fr = body(
        SourceBuilder::new()
            .add_field::<Scalar>()
            .build_32_bit_limbs(),
    )?;
    let fp_fp2 = body(SourceBuilder::new().add_field::<Fp2>().build_32_bit_limbs())?;
    Ok(format!(
        "// Generated by `cargo xtask build-kernels` with ec-gpu-gen 0.7.1 from blstrs 0.7.1:\n\
         // Fr (blstrs__scalar__Scalar), Fp (blstrs__fp__Fp), Fp2 (blstrs__fp2__Fp2). Do not edit.\n\
         #pragma once\n{prelude}{fr}{fp_fp2}\n"
    ))
}

/// The generator's constants must be blst's Montgomery form (R = 2^256 for Fr, 2^384 for Fp)
/// as 32-bit halves of the u64 limbs, so that `cuzk_field` reprs cross unchanged.
fn check_montgomery_layout() -> Result<()> {
    use cuzk_field::consts::{FP_MODULUS, FP_R, FR_MODULUS, FR_R};
    use ec_gpu::GpuField;
    let halves = |limbs: &[u64]| -> Vec<u32> {
        limbs
            .iter()
            .flat_map(|l| [*l as u32, (*l >> 32) as u32])
            .collect()
    };
    let fr_one =
        halves(&cuzk_field::FrRepr::from(<blstrs::Scalar as cuzk_field::Field>::ONE).limbs);
    if <blstrs::Scalar as GpuField>::one() != halves(&FR_R)
        || <blstrs::Scalar as GpuField>::one() != fr_one
        || <blstrs::Scalar as GpuField>::modulus() != halves(&FR_MODULUS)
        || <blstrs::Fp as GpuField>::one() != halves(&FP_R)
        || <blstrs::Fp as GpuField>::modulus() != halves(&FP_MODULUS)
    {
        bail!("ec-gpu-gen's field constants are not blst's Montgomery limbs: the GPU layout would differ");
    }
    Ok(())
}

/// Every entry file (`*.cu`) under `kernels/`, relative, with `/` separators, sorted.
fn entry_files(kernels_dir: &Path) -> Result<Vec<String>> {
    let mut files = Vec::new();
    walk(kernels_dir, &mut files)?;
    let mut entries: Vec<String> = files
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "cu"))
        .map(|p| relative(kernels_dir, p))
        .collect();
    entries.sort();
    if entries.is_empty() {
        bail!(
            "no kernel entry files (*.cu) under {}",
            kernels_dir.display()
        );
    }
    Ok(entries)
}

fn relative(base: &Path, path: &Path) -> String {
    let rel = path.strip_prefix(base).unwrap_or(path);
    rel.components()
        .map(|c| c.as_os_str().to_string_lossy())
        .collect::<Vec<_>>()
        .join("/")
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    for entry in fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
        let path = entry?.path();
        if path.is_dir() {
            walk(&path, out)?;
        } else {
            out.push(path);
        }
    }
    Ok(())
}

/// The single translation unit of the image: one image with one PTX needs one unit (device
/// linking of several would rule the PTX fallback out), and headers are compiled once.
fn unity_source(entries: &[String]) -> String {
    let mut s = String::from(
        "// Generated by `cargo xtask build-kernels`: the kernel image's one translation unit,\n\
         // every entry file under kernels/ in path order. Do not edit.\n",
    );
    for e in entries {
        s.push_str(&format!("#include \"{e}\"\n"));
    }
    s
}

/// Hash of everything that decides the image's contents, except the architecture list.
fn input_key(kernels_dir: &Path, gen_dir: &Path, flags: &[String], nvcc: &Nvcc) -> Result<String> {
    let mut files = Vec::new();
    walk(kernels_dir, &mut files)?;
    // Documentation does not go into the image.
    files.retain(|p| p.extension().is_none_or(|e| e != "md"));
    let mut named: Vec<(String, PathBuf)> = files
        .into_iter()
        .map(|p| (format!("kernels/{}", relative(kernels_dir, &p)), p))
        .collect();
    for gen in ["ec_gpu_field.cuh", "cuzk.cu"] {
        named.push((format!("gen/{gen}"), gen_dir.join(gen)));
    }
    named.sort();
    let mut h = Sha256::new();
    for (name, path) in &named {
        let bytes = fs::read(path).with_context(|| format!("reading {}", path.display()))?;
        h.update((name.len() as u64).to_le_bytes());
        h.update(name.as_bytes());
        h.update((bytes.len() as u64).to_le_bytes());
        h.update(&bytes);
    }
    // Flags name absolute include paths; hash them relative so that checkouts share keys.
    for f in flags {
        h.update(
            f.replace(&project_root().display().to_string(), "<root>")
                .as_bytes(),
        );
        h.update([0]);
    }
    h.update(nvcc.version_text.as_bytes());
    Ok(h.finalize().iter().map(|b| format!("{b:02x}")).collect())
}

fn write_if_changed(path: &Path, contents: &str) -> Result<()> {
    if fs::read_to_string(path).ok().as_deref() != Some(contents) {
        fs::write(path, contents).with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}

/// Drops cached pieces of older inputs; pieces of the current inputs (any architecture) stay.
fn prune_cache(cache_dir: &Path, key: &str) -> Result<()> {
    for entry in fs::read_dir(cache_dir)? {
        let path = entry?.path();
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if !name.starts_with(key) {
            let _ = fs::remove_file(&path);
        }
    }
    Ok(())
}

struct Job {
    label: String,
    kind: &'static str,
    arch: String,
    out: PathBuf,
}

/// Runs the nvcc jobs, as many at once as there are cores (each nvcc is single-threaded).
fn compile_all(nvcc: &Nvcc, flags: &[String], source: &Path, jobs: Vec<Job>) -> Result<()> {
    if jobs.is_empty() {
        return Ok(());
    }
    let workers = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(jobs.len());
    eprintln!(
        "    compiling {} piece(s) with {} nvcc process(es) at a time; each takes seconds to minutes",
        jobs.len(),
        workers
    );
    let next = AtomicUsize::new(0);
    let errors = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(job) = jobs.get(i) else { break };
                if !errors.lock().expect("no panics while held").is_empty() {
                    break;
                }
                if let Err(e) = compile_one(nvcc, flags, source, job) {
                    errors.lock().expect("no panics while held").push(e);
                }
            });
        }
    });
    match errors
        .into_inner()
        .expect("threads joined")
        .into_iter()
        .next()
    {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

fn compile_one(nvcc: &Nvcc, flags: &[String], source: &Path, job: &Job) -> Result<()> {
    let start = Instant::now();
    eprintln!("    nvcc {} ...", job.label);
    let tmp = job.out.with_extension("tmp");
    let out = Command::new(&nvcc.path)
        .arg(job.kind)
        .arg(&job.arch)
        .args(flags)
        .arg("-o")
        .arg(&tmp)
        .arg(source)
        .output()
        .with_context(|| format!("cannot run {}", nvcc.path.display()))?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        bail!("nvcc {} failed ({}):\n{stderr}", job.label, out.status);
    }
    if !stderr.trim().is_empty() {
        eprintln!("{stderr}");
    }
    fs::rename(&tmp, &job.out)?;
    eprintln!(
        "    nvcc {} done in {:.0} s",
        job.label,
        start.elapsed().as_secs_f64()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arch_lists_are_validated_and_deduplicated() {
        let a = |v: &[&str]| {
            archs(&BuildKernelsArgs {
                arch: v.iter().map(|s| s.to_string()).collect(),
                force: false,
                defines: Vec::new(),
            })
        };
        assert_eq!(a(&[]).unwrap().len(), DEFAULT_ARCHS.len());
        assert_eq!(a(&["sm_90", "sm_90"]).unwrap(), vec!["sm_90"]);
        assert!(a(&["compute_90"]).is_err());
        assert!(a(&["90"]).is_err());
    }

    #[test]
    fn variants_take_plain_definitions_and_their_own_folder() {
        let v = |d: &[&str]| variant(&d.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        assert_eq!(v(&[]).unwrap(), (vec![], "kernels".to_owned()));
        assert_eq!(
            v(&["CUZK_A", "B_2=3"]).unwrap(),
            (
                vec!["-DCUZK_A".to_owned(), "-DB_2=3".to_owned()],
                "kernels-CUZK_A-B_2-3".to_owned()
            )
        );
        for bad in ["", "2X", "A B", "A=b c", "A;rm", "../x"] {
            assert!(v(&[bad]).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn generated_field_code_is_stable_and_complete() {
        let one = generate_field_code().unwrap();
        assert_eq!(
            one,
            generate_field_code().unwrap(),
            "generation must be deterministic"
        );
        for name in [
            "blstrs__scalar__Scalar_mul",
            "blstrs__fp__Fp_mul",
            "blstrs__fp2__Fp2_mul",
        ] {
            assert!(one.contains(name), "missing {name}");
        }
        // The prelude appears once, not once per field.
        assert_eq!(one.matches("mac_with_carry_32(uint a").count(), 1);
    }

    #[test]
    fn unity_source_includes_entries_in_order() {
        let s = unity_source(&["field/field_ops.cu".into(), "ntt/ntt.cu".into()]);
        let f = s.find("field/field_ops.cu").unwrap();
        assert!(f < s.find("ntt/ntt.cu").unwrap());
    }
}
