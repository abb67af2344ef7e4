//! Device discovery and the one context per device, which also holds the loaded kernel image.

use crate::image::{find_kernel_image, Kernel};
use crate::memory::{PinnedBuffer, RegisteredHost};
use crate::{raw, CudaError, Event, Result, Stream};
use bytemuck::Pod;
use cudarc::driver::sys::CUdevice_attribute_enum as Attr;
use cudarc::driver::{CudaContext, CudaModule};
use cudarc::nvrtc::Ptx;
use std::collections::HashMap;
use std::fmt;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

/// Whether this machine can run cuzk's kernels: a driver loads and reports at least one device.
/// Never panics; `false` on machines without an NVIDIA driver.
pub fn cuda_available() -> bool {
    matches!(device_count(), Ok(n) if n > 0)
}

/// Number of CUDA devices the driver reports.
pub fn device_count() -> Result<usize> {
    if !raw::driver_present() {
        return Err(CudaError::NoDriver);
    }
    // With a driver but no device (or no permission), initialisation itself fails.
    match CudaContext::device_count() {
        Ok(n) => Ok(n.max(0) as usize),
        Err(e) => {
            let e = crate::error::DriverError::from(e);
            if e.name() == "CUDA_ERROR_NO_DEVICE" {
                Ok(0)
            } else {
                Err(CudaError::Driver {
                    op: "driver initialisation",
                    source: e,
                })
            }
        }
    }
}

/// What a device is, read once from the driver when it is first opened.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct DeviceInfo {
    /// The driver's ordinal of the device.
    pub ordinal: usize,
    /// Marketing name, such as `NVIDIA H200`.
    pub name: String,
    /// Compute capability (major, minor): (9, 0) for Hopper.
    pub compute_capability: (u32, u32),
    /// Number of streaming multiprocessors.
    pub sm_count: u32,
    /// Total device memory in bytes.
    pub total_memory: usize,
    /// L2 cache size in bytes.
    pub l2_cache_bytes: u32,
    /// Largest dynamic shared memory a block may opt into, in bytes.
    pub max_shared_mem_per_block: u32,
    /// Largest block size.
    pub max_threads_per_block: u32,
}

impl fmt::Display for DeviceInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (major, minor) = self.compute_capability;
        write!(
            f,
            "{} (device {}, sm_{major}{minor}, {} SMs, {:.1} GiB)",
            self.name,
            self.ordinal,
            self.sm_count,
            self.total_memory as f64 / (1u64 << 30) as f64
        )
    }
}

/// One GPU: its context, information, and the kernel image loaded on it.
///
/// Cheap to clone; every clone (and [`Device::open`] of the same ordinal) shares one context
/// and one loaded image.
#[derive(Clone)]
pub struct Device {
    inner: Arc<Inner>,
}

struct Inner {
    ctx: Arc<CudaContext>,
    info: DeviceInfo,
    image: Mutex<Option<LoadedImage>>,
}

struct LoadedImage {
    path: PathBuf,
    module: Arc<CudaModule>,
    kernels: HashMap<String, Kernel>,
}

/// Devices opened so far, by ordinal, so that each has exactly one context and image.
static DEVICES: Mutex<Vec<Option<Device>>> = Mutex::new(Vec::new());

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // The guarded maps stay consistent even if a holder panicked: entries are inserted whole.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Device {
    /// Opens device `ordinal`, or returns the already opened one.
    pub fn open(ordinal: usize) -> Result<Device> {
        let count = device_count()?;
        if ordinal >= count {
            return Err(CudaError::NoDevice { ordinal, count });
        }
        let mut devices = lock(&DEVICES);
        if devices.len() <= ordinal {
            devices.resize(ordinal + 1, None);
        }
        if let Some(d) = &devices[ordinal] {
            return Ok(d.clone());
        }
        let ctx = CudaContext::new(ordinal).map_err(CudaError::driver("context creation"))?;
        let info = read_info(&ctx)?;
        let device = Device {
            inner: Arc::new(Inner {
                ctx,
                info,
                image: Mutex::new(None),
            }),
        };
        devices[ordinal] = Some(device.clone());
        Ok(device)
    }

    /// Opens every device the driver reports (none on a machine without a driver).
    pub fn all() -> Result<Vec<Device>> {
        let count = match device_count() {
            Err(CudaError::NoDriver) => 0,
            other => other?,
        };
        (0..count).map(Device::open).collect()
    }

    /// The driver's ordinal of this device.
    pub fn ordinal(&self) -> usize {
        self.inner.info.ordinal
    }

    /// What this device is.
    pub fn info(&self) -> &DeviceInfo {
        &self.inner.info
    }

    pub(crate) fn context(&self) -> &Arc<CudaContext> {
        &self.inner.ctx
    }

    /// Free and total device memory in bytes, as the driver sees it now.
    pub fn memory_info(&self) -> Result<(usize, usize)> {
        self.inner
            .ctx
            .mem_get_info()
            .map_err(CudaError::driver("memory info query"))
    }

    /// Lets the device keep up to `bytes` of freed device memory mapped for later
    /// allocations of this process, instead of unmapping it at every synchronisation (the
    /// driver's default). Freeing and allocating a proof's buffers then costs microseconds
    /// instead of milliseconds per gigabyte; the kept memory counts as used in
    /// [`Device::memory_info`] until [`Device::trim_freed_memory`]. For callers that meter
    /// device memory themselves (a budget), with `bytes` their budget.
    pub fn keep_freed_memory(&self, bytes: u64) -> Result<()> {
        raw::set_pool_release_threshold(&self.inner.ctx, bytes)
    }

    /// Gives the freed device memory that [`Device::keep_freed_memory`] kept back to the
    /// driver.
    pub fn trim_freed_memory(&self) -> Result<()> {
        raw::trim_pool(&self.inner.ctx)
    }

    /// A new stream that does not synchronise with other streams implicitly.
    pub fn new_stream(&self) -> Result<Stream> {
        let s = self
            .inner
            .ctx
            .new_stream()
            .map_err(CudaError::driver("stream creation"))?;
        Ok(Stream::new(s, self.clone()))
    }

    /// A new event that records timing, for [`Event::elapsed_ms`].
    pub fn new_event(&self) -> Result<Event> {
        Event::new(self)
    }

    /// Page-locked host memory for `len` elements, zeroed.
    pub fn alloc_pinned<T: Pod>(&self, len: usize) -> Result<PinnedBuffer<T>> {
        PinnedBuffer::new(self, len)
    }

    /// Page-locks `data` in place (`cuMemHostRegister`) for as long as the returned guard
    /// lives, so that copies from and to it run asynchronously at pinned speed. Dropping the
    /// guard waits for the copies queued on it, then unlocks the pages.
    pub fn register_host<'a, T: Pod>(&self, data: &'a mut [T]) -> Result<RegisteredHost<'a, T>> {
        RegisteredHost::new(self, data)
    }

    /// Waits until all work queued on this device has finished.
    pub fn synchronize(&self) -> Result<()> {
        self.inner
            .ctx
            .synchronize()
            .map_err(CudaError::driver("device synchronize"))
    }

    /// Loads the kernel image now (it is otherwise loaded by the first [`kernel`](Self::kernel)
    /// call), returning the path it was loaded from.
    pub fn load_kernels(&self) -> Result<PathBuf> {
        let mut image = lock(&self.inner.image);
        if image.is_none() {
            *image = Some(self.load_image(&find_kernel_image()?)?);
        }
        Ok(image.as_ref().expect("loaded above").path.clone())
    }

    /// Looks up an exported kernel of the image by name, loading the image on first use.
    /// Lookups are cached, so callers may ask for a kernel at every launch.
    pub fn kernel(&self, name: &str) -> Result<Kernel> {
        let mut image = lock(&self.inner.image);
        if image.is_none() {
            *image = Some(self.load_image(&find_kernel_image()?)?);
        }
        let loaded = image.as_mut().expect("loaded above");
        if let Some(k) = loaded.kernels.get(name) {
            return Ok(k.clone());
        }
        let function =
            loaded
                .module
                .load_function(name)
                .map_err(|e| CudaError::KernelNotFound {
                    kernel: name.to_owned(),
                    source: e.into(),
                })?;
        let kernel = Kernel::new(function, name, self.inner.ctx.clone());
        loaded.kernels.insert(name.to_owned(), kernel.clone());
        Ok(kernel)
    }

    fn load_image(&self, path: &std::path::Path) -> Result<LoadedImage> {
        let bytes = std::fs::read(path).map_err(|source| CudaError::KernelImageRead {
            path: path.to_owned(),
            source,
        })?;
        let module = self
            .inner
            .ctx
            .load_module(Ptx::from_binary(bytes))
            .map_err(|e| CudaError::KernelImageLoad {
                path: path.to_owned(),
                device: self.inner.info.to_string(),
                source: e.into(),
            })?;
        Ok(LoadedImage {
            path: path.to_owned(),
            module,
            kernels: HashMap::new(),
        })
    }
}

impl fmt::Debug for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Device")
            .field(&self.inner.info.to_string())
            .finish()
    }
}

fn read_info(ctx: &Arc<CudaContext>) -> Result<DeviceInfo> {
    let attr = |a: Attr| -> Result<u32> {
        ctx.attribute(a)
            .map(|v| v.max(0) as u32)
            .map_err(CudaError::driver("device attribute query"))
    };
    let (major, minor) = ctx
        .compute_capability()
        .map_err(CudaError::driver("device attribute query"))?;
    Ok(DeviceInfo {
        ordinal: ctx.ordinal(),
        name: ctx.name().map_err(CudaError::driver("device name query"))?,
        compute_capability: (major.max(0) as u32, minor.max(0) as u32),
        sm_count: attr(Attr::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?,
        total_memory: ctx
            .total_mem()
            .map_err(CudaError::driver("memory info query"))?,
        l2_cache_bytes: attr(Attr::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)?,
        max_shared_mem_per_block: attr(
            Attr::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
        )?,
        max_threads_per_block: attr(Attr::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probing_without_a_gpu_does_not_panic() {
        // On a GPU host this is true; on CPU-only machines it must be a plain `false`.
        let available = cuda_available();
        assert_eq!(available, matches!(device_count(), Ok(n) if n > 0));
        if !raw::driver_present() {
            assert!(!available);
            assert!(matches!(Device::open(0), Err(CudaError::NoDriver)));
            assert!(Device::all().unwrap().is_empty());
        }
    }

    #[test]
    fn info_displays_the_architecture() {
        let info = DeviceInfo {
            ordinal: 0,
            name: "NVIDIA H200".into(),
            compute_capability: (9, 0),
            sm_count: 132,
            total_memory: 150_754_820_096,
            l2_cache_bytes: 60 << 20,
            max_shared_mem_per_block: 232_448,
            max_threads_per_block: 1024,
        };
        assert_eq!(
            info.to_string(),
            "NVIDIA H200 (device 0, sm_90, 132 SMs, 140.4 GiB)"
        );
    }
}
