//! The kernel launch builder: arguments pushed in the kernel's parameter order, buffers
//! checked to be on the stream's device, and the one unsafe call that queues the kernel.
#![allow(unsafe_code)] // Passing values by address to the driver and the launch itself.

use crate::memory::{DeviceBuffer, DeviceView, DeviceViewMut};
use crate::{CudaError, Kernel, Result, Stream};
use bytemuck::Pod;
use cudarc::driver::{DeviceRepr, LaunchArgs, PushKernelArg};

/// A kernel argument passed by value: any `Pod` value whose layout matches the kernel's
/// parameter (a scalar, an `FrRepr` constant, a small struct of sizes).
#[repr(transparent)]
struct ByValue<T>(T);

// SAFETY: `Pod` types are plain bytes with a C (or transparent) layout and no pointers the
// device could misuse; the kernel reads them as its parameter of the same layout, which the
// caller of `Launch::launch` promises.
unsafe impl<T: Pod> DeviceRepr for ByValue<T> {}

/// Grid, block and dynamic shared memory of one launch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaunchConfig {
    /// Blocks in the grid (x, y, z).
    pub grid: (u32, u32, u32),
    /// Threads per block (x, y, z).
    pub block: (u32, u32, u32),
    /// Bytes of dynamic shared memory per block.
    pub shared_mem_bytes: u32,
}

impl LaunchConfig {
    /// A one-dimensional launch of `grid` blocks of `block` threads, no dynamic shared memory.
    pub fn linear(grid: u32, block: u32) -> Self {
        LaunchConfig {
            grid: (grid, 1, 1),
            block: (block, 1, 1),
            shared_mem_bytes: 0,
        }
    }

    /// A launch for a grid-stride loop over `n` items: enough blocks of `block` threads to
    /// cover `n`, capped at `max_grid` (at least one block, so an empty launch is still valid).
    pub fn for_items(n: usize, block: u32, max_grid: u32) -> Self {
        let blocks = n
            .div_ceil(block.max(1) as usize)
            .clamp(1, max_grid.max(1) as usize);
        Self::linear(blocks as u32, block)
    }

    /// The same launch with `bytes` of dynamic shared memory per block.
    pub fn with_shared_mem(self, bytes: u32) -> Self {
        LaunchConfig {
            shared_mem_bytes: bytes,
            ..self
        }
    }
}

/// Arguments for one launch of a [`Kernel`] on a [`Stream`], pushed in the order of the
/// kernel's parameters. Made by [`Stream::launch`].
///
/// Buffers pushed here take part in the runtime's cross-stream ordering: a launch waits for
/// earlier writes to its inputs on other streams, and later users wait for it.
pub struct Launch<'a> {
    args: LaunchArgs<'a>,
    kernel: &'a Kernel,
    ordinal: usize,
    wrong_device: Option<CudaError>,
}

impl std::fmt::Debug for Launch<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Launch")
            .field("kernel", &self.kernel.name())
            .finish()
    }
}

impl<'a> Launch<'a> {
    pub(crate) fn new(stream: &'a Stream, kernel: &'a Kernel) -> Self {
        Launch {
            args: stream.raw().launch_builder(kernel.function()),
            kernel,
            ordinal: stream.device().ordinal(),
            wrong_device: None,
        }
    }

    fn check_device(&mut self, what: &'static str, buffer_device: usize) {
        if buffer_device != self.ordinal && self.wrong_device.is_none() {
            self.wrong_device = Some(CudaError::WrongDevice {
                what,
                buffer_device,
                stream_device: self.ordinal,
            });
        }
    }

    /// Pushes a value passed by value (`u32`, `u64`, an `FrRepr`, a `#[repr(C)]` struct).
    pub fn arg<T: Pod>(&mut self, value: &'a T) -> &mut Self {
        // SAFETY: `ByValue<T>` is `repr(transparent)` over `T`, so the cast keeps address,
        // layout and lifetime.
        let wrapped: &'a ByValue<T> = unsafe { &*(value as *const T as *const ByValue<T>) };
        self.args.arg(wrapped);
        self
    }

    /// Pushes a pointer to a buffer the kernel only reads.
    pub fn buf<T: Pod>(&mut self, buf: &'a DeviceBuffer<T>) -> &mut Self {
        self.check_device("kernel input", buf.device_ordinal());
        self.args.arg(&buf.bytes);
        self
    }

    /// Pushes a pointer to a buffer the kernel may write.
    pub fn buf_mut<T: Pod>(&mut self, buf: &'a mut DeviceBuffer<T>) -> &mut Self {
        self.check_device("kernel output", buf.device_ordinal());
        self.args.arg(&mut buf.bytes);
        self
    }

    /// Pushes a pointer to the start of a view the kernel only reads.
    pub fn view<T: Pod>(&mut self, view: &'a DeviceView<'_, T>) -> &mut Self {
        self.check_device("kernel input", crate::DeviceSlice::device_ordinal(view));
        self.args.arg(&view.bytes);
        self
    }

    /// Pushes a pointer to the start of a view the kernel may write.
    pub fn view_mut<T: Pod>(&mut self, view: &'a mut DeviceViewMut<'_, T>) -> &mut Self {
        self.check_device("kernel output", crate::DeviceSlice::device_ordinal(view));
        self.args.arg(&mut view.bytes);
        self
    }

    /// Queues the kernel on the stream.
    ///
    /// # Safety
    ///
    /// The pushed arguments must match the kernel's parameters in number, order and layout;
    /// the launch shape must keep every access the kernel makes inside the buffers passed
    /// (kernels take lengths as arguments and check them); a buffer pushed with
    /// [`buf`](Self::buf) or [`view`](Self::view) must not be written by the kernel; and
    /// `shared_mem_bytes` must be what the kernel expects and within its limit.
    pub unsafe fn launch(&mut self, cfg: LaunchConfig) -> Result<()> {
        if let Some(e) = self.wrong_device.take() {
            return Err(e);
        }
        let cfg = cudarc::driver::LaunchConfig {
            grid_dim: cfg.grid,
            block_dim: cfg.block,
            shared_mem_bytes: cfg.shared_mem_bytes,
        };
        // SAFETY: forwarded to the caller, who upholds this function's contract.
        unsafe { self.args.launch(cfg) }
            .map(drop)
            .map_err(|e| CudaError::Launch {
                kernel: self.kernel.name().to_owned(),
                source: e.into(),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::LaunchConfig;

    #[test]
    fn grid_stride_launches_cover_and_cap() {
        assert_eq!(LaunchConfig::for_items(1000, 256, 1 << 20).grid, (4, 1, 1));
        assert_eq!(LaunchConfig::for_items(1 << 30, 256, 528).grid, (528, 1, 1));
        assert_eq!(LaunchConfig::for_items(0, 256, 528).grid, (1, 1, 1));
        assert_eq!(
            LaunchConfig::linear(3, 128)
                .with_shared_mem(4096)
                .shared_mem_bytes,
            4096
        );
    }
}
