//! Streams (ordered queues of copies and launches on one device) and events (points in them).

use crate::memory::{DeviceBuffer, DeviceSlice, DeviceSliceMut, PinnedBuffer, RegisteredHost};
use crate::raw::{self, HostMem};
use crate::{CudaError, Device, Kernel, Launch, Result};
use bytemuck::Pod;
use cudarc::driver::sys::CUevent_flags;
use cudarc::driver::{CudaEvent, CudaStream};
use std::fmt;
use std::sync::Arc;

/// An ordered queue of work on one device. Work on different streams may overlap; order
/// across streams with [`Event`]s ([`record`](Stream::record) / [`wait`](Stream::wait)).
///
/// Device buffers additionally carry their own read/write events, so a launch or copy on one
/// stream waits for earlier writes to the same buffer on another.
#[derive(Clone)]
pub struct Stream {
    inner: Arc<CudaStream>,
    device: Device,
}

impl Stream {
    pub(crate) fn new(inner: Arc<CudaStream>, device: Device) -> Self {
        Stream { inner, device }
    }

    pub(crate) fn raw(&self) -> &Arc<CudaStream> {
        &self.inner
    }

    /// The device this stream runs on.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// Blocks until all work queued so far on this stream has finished.
    pub fn synchronize(&self) -> Result<()> {
        self.inner
            .synchronize()
            .map_err(CudaError::driver("stream synchronize"))
    }

    /// Marks the current end of this stream with `event`.
    pub fn record(&self, event: &Event) -> Result<()> {
        event
            .inner
            .record(&self.inner)
            .map_err(CudaError::driver("event record"))
    }

    /// Makes later work on this stream wait until `event` has completed (the host does not wait).
    pub fn wait(&self, event: &Event) -> Result<()> {
        self.inner
            .wait(&event.inner)
            .map_err(CudaError::driver("stream wait on event"))
    }

    /// Starts building a launch of `kernel` on this stream.
    pub fn launch<'a>(&'a self, kernel: &'a Kernel) -> Launch<'a> {
        Launch::new(self, kernel)
    }

    fn check<T: Pod>(&self, what: &'static str, s: &impl DeviceSlice<T>) -> Result<()> {
        let (buffer_device, stream_device) = (s.device_ordinal(), self.device.ordinal());
        if buffer_device != stream_device {
            return Err(CudaError::WrongDevice {
                what,
                buffer_device,
                stream_device,
            });
        }
        Ok(())
    }

    fn same_len(what: &'static str, expected: usize, got: usize) -> Result<()> {
        if expected != got {
            return Err(CudaError::LengthMismatch {
                what,
                expected,
                got,
            });
        }
        Ok(())
    }

    /// Allocates `len` elements on the device, ordered on this stream; the contents are
    /// unspecified until written.
    pub fn alloc<T: Pod>(&self, len: usize) -> Result<DeviceBuffer<T>> {
        let size = len
            .checked_mul(std::mem::size_of::<T>())
            .expect("allocation size overflows usize");
        let bytes = raw::alloc_bytes(&self.inner, size)?;
        Ok(DeviceBuffer::from_bytes(bytes))
    }

    /// Allocates `len` zeroed elements on the device.
    pub fn alloc_zeroed<T: Pod>(&self, len: usize) -> Result<DeviceBuffer<T>> {
        let mut buf = self.alloc(len)?;
        self.zero(&mut buf)?;
        Ok(buf)
    }

    /// Copies `src` into a new device buffer. The host slice may be reused once this returns.
    pub fn upload<T: Pod>(&self, src: &[T]) -> Result<DeviceBuffer<T>> {
        let mut buf = self.alloc(src.len())?;
        self.copy_to_device(src, &mut buf)?;
        Ok(buf)
    }

    /// Copies `src` into `dst` (equal lengths). From pageable memory the driver stages the
    /// copy, and the host slice may be reused once this returns; prefer [`PinnedBuffer`]s for
    /// large transfers.
    ///
    /// A slice of page-locked memory (from [`PinnedBuffer::as_slice`] or
    /// [`RegisteredHost::as_slice`]) is copied asynchronously instead, and the buffer's event
    /// does not track the copy: keep the memory unchanged and alive until the stream has passed
    /// it (synchronize, or wait on an event recorded after it). The tracked
    /// [`copy_pinned_to_device`](Self::copy_pinned_to_device) needs no such care.
    pub fn copy_to_device<T: Pod>(
        &self,
        src: &[T],
        dst: &mut impl DeviceSliceMut<T>,
    ) -> Result<()> {
        self.check("copy destination", dst)?;
        Self::same_len("host-to-device copy", dst.len(), src.len())?;
        let mut view = dst.raw_view_mut();
        self.inner
            .memcpy_htod(bytemuck::cast_slice::<T, u8>(src), &mut view)
            .map_err(CudaError::driver("host-to-device copy"))
    }

    /// Queues a copy of the whole pinned buffer into `dst` (equal lengths); the host does not
    /// wait. The pinned buffer's accessors, and dropping it, wait for it.
    pub fn copy_pinned_to_device<T: Pod>(
        &self,
        src: &PinnedBuffer<T>,
        dst: &mut impl DeviceSliceMut<T>,
    ) -> Result<()> {
        Self::same_len("pinned-to-device copy", dst.len(), src.len())?;
        self.host_to_device(&src.mem, dst)
    }

    /// Queues a copy of the whole registered range into `dst` (equal lengths); the host does
    /// not wait. The range's accessors, and dropping or unregistering it, wait for it.
    pub fn copy_registered_to_device<T: Pod>(
        &self,
        src: &RegisteredHost<'_, T>,
        dst: &mut impl DeviceSliceMut<T>,
    ) -> Result<()> {
        Self::same_len("registered-to-device copy", dst.len(), src.len())?;
        self.host_to_device(src.reg.mem(), dst)
    }

    /// A copy from page-locked memory tracked by its event; `dst.len()` elements, which the
    /// caller has checked against the source.
    fn host_to_device<T: Pod>(
        &self,
        src: &HostMem,
        dst: &mut impl DeviceSliceMut<T>,
    ) -> Result<()> {
        self.check("copy destination", dst)?;
        self.check_host("copy source", src)?;
        let mut view = dst.raw_view_mut();
        src.copy_to_device(&self.inner, &mut view)
            .map_err(CudaError::driver("host-to-device copy"))
    }

    /// A copy into page-locked memory tracked by its event; `src.len()` elements, which the
    /// caller has checked against the destination.
    fn device_to_host<T: Pod>(&self, src: &impl DeviceSlice<T>, dst: &mut HostMem) -> Result<()> {
        self.check("copy source", src)?;
        self.check_host("copy destination", dst)?;
        let view = src.raw_view();
        dst.copy_from_device(&self.inner, &view)
            .map_err(CudaError::driver("device-to-host copy"))
    }

    /// Page-locked memory records its copies with an event of the context it was made in, and
    /// an event can only be recorded on streams of that context.
    fn check_host(&self, what: &'static str, mem: &HostMem) -> Result<()> {
        let (buffer_device, stream_device) = (mem.ordinal(), self.device.ordinal());
        if buffer_device != stream_device {
            return Err(CudaError::WrongDevice {
                what,
                buffer_device,
                stream_device,
            });
        }
        Ok(())
    }

    /// Copies `src` back into a new vector, waiting for it and all earlier work on this stream.
    pub fn download<T: Pod>(&self, src: &impl DeviceSlice<T>) -> Result<Vec<T>> {
        let mut out = vec![T::zeroed(); src.len()];
        self.copy_to_host(src, &mut out)?;
        Ok(out)
    }

    /// Copies `src` into `dst` (equal lengths), waiting for it and all earlier work on this stream.
    pub fn copy_to_host<T: Pod>(&self, src: &impl DeviceSlice<T>, dst: &mut [T]) -> Result<()> {
        self.check("copy source", src)?;
        Self::same_len("device-to-host copy", src.len(), dst.len())?;
        let view = src.raw_view();
        self.inner
            .memcpy_dtoh(&view, bytemuck::cast_slice_mut::<T, u8>(dst))
            .map_err(CudaError::driver("device-to-host copy"))?;
        // Pageable destinations: make completion explicit rather than rely on driver staging.
        self.synchronize()
    }

    /// Queues a copy of `src` into the whole pinned buffer (equal lengths); the host does not
    /// wait. The pinned buffer's accessors, and dropping it, wait for it.
    pub fn copy_to_pinned<T: Pod>(
        &self,
        src: &impl DeviceSlice<T>,
        dst: &mut PinnedBuffer<T>,
    ) -> Result<()> {
        Self::same_len("device-to-pinned copy", src.len(), dst.len())?;
        self.device_to_host(src, &mut dst.mem)
    }

    /// Queues a copy of `src` into the whole registered range (equal lengths); the host does
    /// not wait. The range's accessors, and dropping or unregistering it, wait for it.
    pub fn copy_to_registered<T: Pod>(
        &self,
        src: &impl DeviceSlice<T>,
        dst: &mut RegisteredHost<'_, T>,
    ) -> Result<()> {
        Self::same_len("device-to-registered copy", src.len(), dst.len())?;
        self.device_to_host(src, dst.reg.mem_mut())
    }

    /// Queues a device-to-device copy (equal lengths).
    pub fn copy_on_device<T: Pod>(
        &self,
        src: &impl DeviceSlice<T>,
        dst: &mut impl DeviceSliceMut<T>,
    ) -> Result<()> {
        self.check("copy source", src)?;
        self.check("copy destination", dst)?;
        Self::same_len("device-to-device copy", dst.len(), src.len())?;
        let view = src.raw_view();
        let mut out = dst.raw_view_mut();
        self.inner
            .memcpy_dtod(&view, &mut out)
            .map_err(CudaError::driver("device-to-device copy"))
    }

    /// Queues setting every byte of `dst` to zero.
    pub fn zero<T: Pod>(&self, dst: &mut impl DeviceSliceMut<T>) -> Result<()> {
        self.check("memset destination", dst)?;
        let mut view = dst.raw_view_mut();
        self.inner
            .memset_zeros(&mut view)
            .map_err(CudaError::driver("memset"))
    }
}

impl fmt::Debug for Stream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Stream")
            .field("device", &self.device.ordinal())
            .finish()
    }
}

/// A point in a stream's work: for ordering streams and for timing on the device.
pub struct Event {
    inner: CudaEvent,
}

impl Event {
    pub(crate) fn new(device: &Device) -> Result<Event> {
        let inner = device
            .context()
            .new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
            .map_err(CudaError::driver("event creation"))?;
        Ok(Event { inner })
    }

    /// Blocks until the work before the event's last record has finished.
    pub fn synchronize(&self) -> Result<()> {
        self.inner
            .synchronize()
            .map_err(CudaError::driver("event synchronize"))
    }

    /// Whether the work before the event's last record has finished.
    pub fn is_complete(&self) -> bool {
        self.inner.is_complete()
    }

    /// Milliseconds of device time from this event to `end` (both recorded), waiting for both.
    pub fn elapsed_ms(&self, end: &Event) -> Result<f32> {
        self.inner
            .elapsed_ms(&end.inner)
            .map_err(CudaError::driver("event elapsed time"))
    }
}

impl fmt::Debug for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Event").finish_non_exhaustive()
    }
}
