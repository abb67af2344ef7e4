//! Finding the kernel image (`cuzk.fatbin`) on disk, and the kernels looked up in it.
//!
//! The image is searched, in order: in `$CUZK_KERNEL_DIR` when that is set (and nowhere else,
//! so a bundle never picks up a stale build by accident); next to the running executable; then
//! in a `kernels/` folder of each ancestor of the executable's folder, which finds
//! `target/kernels/cuzk.fatbin` from test and bench binaries under `target/<profile>/deps`.

use crate::{CudaError, Result};
use cudarc::driver::{CudaContext, CudaFunction};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// File name of the kernel image that `cargo xtask build-kernels` writes.
pub const KERNEL_IMAGE_FILE: &str = "cuzk.fatbin";

/// Environment variable naming the folder that holds the kernel image.
pub const KERNEL_DIR_ENV: &str = "CUZK_KERNEL_DIR";

/// Finds the kernel image for this process (see the module docs for the search order).
pub fn find_kernel_image() -> Result<PathBuf> {
    let exe = std::env::current_exe().ok();
    locate(std::env::var_os(KERNEL_DIR_ENV), exe.as_deref())
}

/// The search itself, free of process state so that tests can drive it.
fn locate(env_dir: Option<OsString>, exe: Option<&Path>) -> Result<PathBuf> {
    let searched = candidate_dirs(env_dir, exe);
    for dir in &searched {
        let path = dir.join(KERNEL_IMAGE_FILE);
        if path.is_file() {
            return Ok(path);
        }
    }
    Err(CudaError::KernelImageNotFound {
        file: KERNEL_IMAGE_FILE,
        searched,
    })
}

fn candidate_dirs(env_dir: Option<OsString>, exe: Option<&Path>) -> Vec<PathBuf> {
    if let Some(dir) = env_dir.filter(|d| !d.is_empty()) {
        return vec![PathBuf::from(dir)];
    }
    let mut dirs = Vec::new();
    if let Some(exe_dir) = exe.and_then(Path::parent) {
        dirs.push(exe_dir.to_path_buf());
        dirs.extend(exe_dir.ancestors().map(|a| a.join("kernels")));
    }
    dirs
}

/// A kernel of the loaded image, ready to launch with [`Stream::launch`](crate::Stream::launch).
///
/// Cheap to clone; keeps its module loaded.
#[derive(Clone, Debug)]
pub struct Kernel {
    function: CudaFunction,
    name: Arc<str>,
    /// The context the kernel's module lives in, made current before each attribute call:
    /// the driver's function calls act on the calling thread's current context, and a
    /// kernel may be looked up on one thread and queried on another.
    ctx: Arc<CudaContext>,
}

impl Kernel {
    pub(crate) fn new(function: CudaFunction, name: &str, ctx: Arc<CudaContext>) -> Self {
        Kernel {
            function,
            name: name.into(),
            ctx,
        }
    }

    /// Makes the kernel's context current on this thread, for the attribute calls below.
    fn bind(&self, op: &'static str) -> Result<()> {
        self.ctx.bind_to_thread().map_err(CudaError::driver(op))
    }

    pub(crate) fn function(&self) -> &CudaFunction {
        &self.function
    }

    /// The kernel's exported (`extern "C"`) name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Registers per thread of the compiled kernel.
    pub fn num_registers(&self) -> Result<u32> {
        self.bind("kernel attribute query")?;
        let regs = self
            .function
            .num_regs()
            .map_err(CudaError::driver("kernel attribute query"))?;
        Ok(regs as u32)
    }

    /// The largest block this kernel can be launched with on its device.
    pub fn max_threads_per_block(&self) -> Result<u32> {
        self.bind("kernel attribute query")?;
        let n = self
            .function
            .max_threads_per_block()
            .map_err(CudaError::driver("kernel attribute query"))?;
        Ok(n as u32)
    }

    /// How many blocks of `block` threads using `shared_mem_bytes` of dynamic shared memory fit
    /// on one SM at once: the basis for sizing persistent grids.
    pub fn max_active_blocks_per_sm(&self, block: u32, shared_mem_bytes: usize) -> Result<u32> {
        self.bind("occupancy query")?;
        self.function
            .occupancy_max_active_blocks_per_multiprocessor(block, shared_mem_bytes, None)
            .map_err(CudaError::driver("occupancy query"))
    }

    /// Allows launches with up to `bytes` of dynamic shared memory per block; needed above
    /// 48 KiB (the opt-in limit is [`DeviceInfo::max_shared_mem_per_block`](crate::DeviceInfo)).
    pub fn set_max_dynamic_shared_mem(&self, bytes: u32) -> Result<()> {
        use cudarc::driver::sys::CUfunction_attribute_enum as Attr;
        let attr = Attr::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES;
        self.bind("kernel shared memory limit")?;
        self.function
            .set_attribute(attr, bytes as i32)
            .map_err(CudaError::driver("kernel shared memory limit"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_dir_is_the_only_place_searched_when_set() {
        let dirs = candidate_dirs(Some("/opt/k".into()), Some(Path::new("/x/y/bin")));
        assert_eq!(dirs, vec![PathBuf::from("/opt/k")]);
    }

    #[test]
    fn exe_folder_then_kernels_folders_of_ancestors() {
        let dirs = candidate_dirs(None, Some(Path::new("/w/target/release/deps/t-123")));
        assert_eq!(dirs[0], PathBuf::from("/w/target/release/deps"));
        assert!(dirs.contains(&PathBuf::from("/w/target/kernels")));
        // An empty variable counts as unset.
        assert_eq!(
            candidate_dirs(Some("".into()), Some(Path::new("/a/b"))).len(),
            dirs_len("/a/b")
        );
    }

    fn dirs_len(exe: &str) -> usize {
        candidate_dirs(None, Some(Path::new(exe))).len()
    }

    #[test]
    fn missing_image_names_the_fix() {
        let empty = std::env::temp_dir().join(format!("cuzk-no-kernels-{}", std::process::id()));
        let err = locate(Some(empty.clone().into()), None).unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("cargo xtask build-kernels"), "{msg}");
        assert!(msg.contains("CUZK_KERNEL_DIR"), "{msg}");
        assert!(
            matches!(err, CudaError::KernelImageNotFound { searched, .. } if searched == [empty])
        );
    }

    #[test]
    fn image_is_found_in_a_kernels_folder_above_the_exe() {
        let root = std::env::temp_dir().join(format!("cuzk-kernels-{}", std::process::id()));
        let deps = root.join("target/release/deps");
        std::fs::create_dir_all(&deps).unwrap();
        std::fs::create_dir_all(root.join("target/kernels")).unwrap();
        let image = root.join("target/kernels").join(KERNEL_IMAGE_FILE);
        std::fs::write(&image, b"not a real image").unwrap();
        let found = locate(None, Some(&deps.join("test-bin"))).unwrap();
        assert_eq!(found, image);
        std::fs::remove_dir_all(&root).unwrap();
    }
}
