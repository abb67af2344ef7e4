//! cuzk's CUDA runtime: devices, streams, events, device buffers, page-locked host memory
//! (allocated, or the caller's registered in place), the kernel image, typed launches,
//! element-wise field kernels, sparse constraint products ([`sparse`]) and the packed witness
//! ([`packed`]).
//!
//! This is the only crate that talks to the CUDA driver. Kernel-owning crates (NTT, MSM) take a
//! [`Stream`] and [`DeviceBuffer`]s from their caller, look their kernels up with
//! [`Device::kernel`], and launch them with [`Stream::launch`]:
//!
//! ```no_run
//! # fn main() -> Result<(), cuzk_cuda::CudaError> {
//! use cuzk_cuda::{Device, LaunchConfig};
//! let device = Device::open(0)?;
//! let stream = device.new_stream()?;
//! let mut data = stream.upload(&[1u32, 2, 3])?;
//! let kernel = device.kernel("my_kernel")?; // an `extern "C"` kernel of the image
//! let n = data.len() as u64;
//! // SAFETY: `my_kernel(uint32_t* data, uint64_t n)` touches only `data[0..n]`.
//! unsafe { stream.launch(&kernel).buf_mut(&mut data).arg(&n).launch(LaunchConfig::linear(1, 32))? };
//! let back: Vec<u32> = stream.download(&data)?;
//! # Ok(()) }
//! ```
//!
//! Builds and runs without CUDA installed: the driver library is loaded at run time, and
//! [`cuda_available`] answers `false` instead of failing on machines without a GPU.
//!
//! The kernel image (`cuzk.fatbin`, built by `cargo xtask build-kernels`) is found through
//! `$CUZK_KERNEL_DIR`, next to the executable, or in a `kernels/` folder above it
//! ([`find_kernel_image`]); it is loaded once per device.
#![deny(unsafe_code)] // Opted out, with reasons, only by `raw`, `launch`, `field`, `sparse`
                      // and `packed`.

mod device;
mod error;
pub mod field;
mod image;
mod launch;
mod memory;
pub mod packed;
mod raw;
pub mod sparse;
mod stream;
mod timeline;

pub use device::{cuda_available, device_count, Device, DeviceInfo};
pub use error::{CudaError, DriverError, Result};
pub use image::{find_kernel_image, Kernel, KERNEL_DIR_ENV, KERNEL_IMAGE_FILE};
pub use launch::{Launch, LaunchConfig};
pub use memory::{
    DeviceBuffer, DeviceSlice, DeviceSliceMut, DeviceView, DeviceViewMut, PinnedBuffer,
    RegisteredHost,
};
pub use stream::{Event, Stream};
pub use timeline::Timeline;
