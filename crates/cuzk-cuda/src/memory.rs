//! Typed device buffers, borrowed views of them, and page-locked host memory: allocated
//! ([`PinnedBuffer`]) or the caller's own, registered in place ([`RegisteredHost`]).
//!
//! Every buffer stores bytes and is typed by a `bytemuck::Pod` element, so any plain layout
//! shared with the kernels (`FrRepr`, `G1AffineRepr`, `u32`, ...) can live on the device
//! without this crate knowing it.

use crate::raw::{HostMem, Registration};
use crate::Result;
use bytemuck::Pod;
use cudarc::driver::DeviceSlice as CuDeviceSlice;
use cudarc::driver::{CudaSlice, CudaView, CudaViewMut};
use std::fmt;
use std::marker::PhantomData;
use std::ops::{Bound, Range, RangeBounds};

/// An owned array of `T` in device memory, allocated on (and freed in the order of) a stream.
pub struct DeviceBuffer<T: Pod> {
    pub(crate) bytes: CudaSlice<u8>,
    len: usize,
    _elem: PhantomData<T>,
}

/// A shared borrow of part of a [`DeviceBuffer`].
pub struct DeviceView<'a, T: Pod> {
    pub(crate) bytes: CudaView<'a, u8>,
    len: usize,
    _elem: PhantomData<&'a [T]>,
}

/// An exclusive borrow of part of a [`DeviceBuffer`].
pub struct DeviceViewMut<'a, T: Pod> {
    pub(crate) bytes: CudaViewMut<'a, u8>,
    len: usize,
    _elem: PhantomData<&'a mut [T]>,
}

/// Device memory that copies can read: a [`DeviceBuffer`] or a view of one.
pub trait DeviceSlice<T: Pod>: sealed::Sealed {
    /// Number of elements.
    fn len(&self) -> usize;
    /// Whether there are no elements.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Ordinal of the device holding the memory.
    fn device_ordinal(&self) -> usize;
    #[doc(hidden)]
    fn raw_view(&self) -> CudaView<'_, u8>;
}

/// Device memory that copies can write: a [`DeviceBuffer`] or an exclusive view of one.
pub trait DeviceSliceMut<T: Pod>: DeviceSlice<T> {
    #[doc(hidden)]
    fn raw_view_mut(&mut self) -> CudaViewMut<'_, u8>;
}

mod sealed {
    /// Keeps the slice traits closed: copies rely on the byte length matching `len`.
    pub trait Sealed {}
}

fn byte_range<T>(range: impl RangeBounds<usize>, len: usize) -> Range<usize> {
    let start = match range.start_bound() {
        Bound::Included(&s) => s,
        Bound::Excluded(&s) => s + 1,
        Bound::Unbounded => 0,
    };
    let end = match range.end_bound() {
        Bound::Included(&e) => e + 1,
        Bound::Excluded(&e) => e,
        Bound::Unbounded => len,
    };
    assert!(
        start <= end && end <= len,
        "range {start}..{end} out of bounds for length {len}"
    );
    let size = std::mem::size_of::<T>();
    start * size..end * size
}

impl<T: Pod> DeviceBuffer<T> {
    pub(crate) fn from_bytes(bytes: CudaSlice<u8>) -> Self {
        let size = std::mem::size_of::<T>().max(1);
        debug_assert_eq!(bytes.len() % size, 0);
        let len = bytes.len() / size;
        DeviceBuffer {
            bytes,
            len,
            _elem: PhantomData,
        }
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the buffer holds no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Size in bytes.
    pub fn size_bytes(&self) -> usize {
        self.len * std::mem::size_of::<T>()
    }

    /// Ordinal of the device holding the buffer.
    pub fn device_ordinal(&self) -> usize {
        self.bytes.ordinal()
    }

    /// Borrows elements `range` for reading. Panics when the range is out of bounds, like slices.
    pub fn slice(&self, range: impl RangeBounds<usize>) -> DeviceView<'_, T> {
        let r = byte_range::<T>(range, self.len);
        let len = (r.end - r.start) / std::mem::size_of::<T>().max(1);
        DeviceView {
            bytes: self.bytes.slice(r),
            len,
            _elem: PhantomData,
        }
    }

    /// Borrows elements `range` for writing. Panics when the range is out of bounds, like slices.
    pub fn slice_mut(&mut self, range: impl RangeBounds<usize>) -> DeviceViewMut<'_, T> {
        let r = byte_range::<T>(range, self.len);
        let len = (r.end - r.start) / std::mem::size_of::<T>().max(1);
        DeviceViewMut {
            bytes: self.bytes.slice_mut(r),
            len,
            _elem: PhantomData,
        }
    }

    /// Borrows the whole buffer for reading.
    pub fn as_view(&self) -> DeviceView<'_, T> {
        self.slice(..)
    }

    /// Borrows the whole buffer for writing.
    pub fn as_view_mut(&mut self) -> DeviceViewMut<'_, T> {
        self.slice_mut(..)
    }
}

impl<T: Pod> DeviceView<'_, T> {
    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the view holds no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl<T: Pod> DeviceViewMut<'_, T> {
    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the view holds no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl<T: Pod> sealed::Sealed for DeviceBuffer<T> {}
impl<T: Pod> sealed::Sealed for DeviceView<'_, T> {}
impl<T: Pod> sealed::Sealed for DeviceViewMut<'_, T> {}

impl<T: Pod> DeviceSlice<T> for DeviceBuffer<T> {
    fn len(&self) -> usize {
        self.len
    }
    fn device_ordinal(&self) -> usize {
        self.bytes.ordinal()
    }
    fn raw_view(&self) -> CudaView<'_, u8> {
        self.bytes.as_view()
    }
}

impl<T: Pod> DeviceSliceMut<T> for DeviceBuffer<T> {
    fn raw_view_mut(&mut self) -> CudaViewMut<'_, u8> {
        self.bytes.as_view_mut()
    }
}

impl<T: Pod> DeviceSlice<T> for DeviceView<'_, T> {
    fn len(&self) -> usize {
        self.len
    }
    fn device_ordinal(&self) -> usize {
        CuDeviceSlice::stream(&self.bytes).context().ordinal()
    }
    fn raw_view(&self) -> CudaView<'_, u8> {
        self.bytes.slice(..)
    }
}

impl<T: Pod> DeviceSlice<T> for DeviceViewMut<'_, T> {
    fn len(&self) -> usize {
        self.len
    }
    fn device_ordinal(&self) -> usize {
        CuDeviceSlice::stream(&self.bytes).context().ordinal()
    }
    fn raw_view(&self) -> CudaView<'_, u8> {
        self.bytes.as_view()
    }
}

impl<T: Pod> DeviceSliceMut<T> for DeviceViewMut<'_, T> {
    fn raw_view_mut(&mut self) -> CudaViewMut<'_, u8> {
        self.bytes.slice_mut(..)
    }
}

impl<T: Pod> fmt::Debug for DeviceBuffer<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeviceBuffer")
            .field("elem", &std::any::type_name::<T>())
            .field("len", &self.len)
            .field("device", &self.device_ordinal())
            .finish()
    }
}

impl<T: Pod> fmt::Debug for DeviceView<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeviceView")
            .field("len", &self.len)
            .finish()
    }
}

impl<T: Pod> fmt::Debug for DeviceViewMut<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeviceViewMut")
            .field("len", &self.len)
            .finish()
    }
}

/// Page-locked host memory holding `len` elements of `T`, zeroed when allocated.
///
/// Copies between it and the device ([`Stream::copy_pinned_to_device`],
/// [`Stream::copy_to_pinned`]) run asynchronously at full PCIe speed. The buffer carries an
/// event recorded after every such copy, each copy first waiting for the one before, so:
///
/// - reading or writing it on the host ([`as_slice`](Self::as_slice),
///   [`as_mut_slice`](Self::as_mut_slice)) first waits for every copy queued on it;
/// - dropping it waits for them too before the memory is freed, so a buffer may be dropped
///   straight after queuing a copy.
///
/// A slice taken with `as_slice` and passed to [`Stream::copy_to_device`] is copied
/// asynchronously as well (the memory is page-locked), but the buffer's event does not see
/// that copy: keep the buffer unchanged until the stream has passed it. As a safety net, a
/// buffer whose host slices were ever handed out waits for its whole device before it is freed.
///
/// Copies must run on streams of the device the buffer was allocated with (the copy methods
/// check), since the event belongs to that device's context.
///
/// [`Stream::copy_pinned_to_device`]: crate::Stream::copy_pinned_to_device
/// [`Stream::copy_to_pinned`]: crate::Stream::copy_to_pinned
/// [`Stream::copy_to_device`]: crate::Stream::copy_to_device
pub struct PinnedBuffer<T: Pod> {
    pub(crate) mem: HostMem,
    len: usize,
    _elem: PhantomData<T>,
}

impl<T: Pod> PinnedBuffer<T> {
    pub(crate) fn new(device: &crate::Device, len: usize) -> Result<Self> {
        let bytes = len
            .checked_mul(std::mem::size_of::<T>())
            .expect("pinned allocation size overflows usize");
        let mem = HostMem::alloc_zeroed(device.context(), bytes)?;
        Ok(PinnedBuffer {
            mem,
            len,
            _elem: PhantomData,
        })
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the buffer holds no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Size of the elements in bytes.
    pub fn size_bytes(&self) -> usize {
        self.len * std::mem::size_of::<T>()
    }

    /// Size of the page-locked allocation in bytes: at least [`size_bytes`](Self::size_bytes),
    /// more for a buffer [`recast`](Self::recast) to fewer elements.
    pub fn capacity_bytes(&self) -> usize {
        self.mem.bytes()
    }

    /// Ordinal of the device whose streams may copy to and from the buffer.
    pub fn device_ordinal(&self) -> usize {
        self.mem.ordinal()
    }

    /// Blocks until every copy queued on the buffer has finished.
    pub fn synchronize(&self) -> Result<()> {
        self.mem.wait()
    }

    /// The elements, after waiting for the copies queued on this buffer.
    pub fn as_slice(&self) -> Result<&[T]> {
        let bytes = self.mem.host(self.size_bytes())?;
        if self.len == 0 {
            return Ok(&[]);
        }
        // The allocation is page-aligned, so the cast cannot fail on alignment.
        Ok(bytemuck::cast_slice(bytes))
    }

    /// The elements for writing, after waiting for the copies queued on this buffer.
    pub fn as_mut_slice(&mut self) -> Result<&mut [T]> {
        let size = self.size_bytes();
        let bytes = self.mem.host_mut(size)?;
        if self.len == 0 {
            return Ok(&mut []);
        }
        Ok(bytemuck::cast_slice_mut(bytes))
    }

    /// The same allocation seen as `len` elements of `U` (for pools that keep buffers by byte
    /// size and lend them for any element type). Copies queued on it stay ordered before any
    /// later use. The contents are whatever bytes the memory holds, valid for any `Pod` type.
    ///
    /// Errors with [`CudaError::PinnedTooSmall`](crate::CudaError::PinnedTooSmall) (and frees
    /// the buffer) when `len` elements of `U` need more than
    /// [`capacity_bytes`](Self::capacity_bytes).
    pub fn recast<U: Pod>(self, len: usize) -> Result<PinnedBuffer<U>> {
        let capacity = self.mem.bytes();
        let requested = len.checked_mul(std::mem::size_of::<U>());
        match requested {
            Some(bytes) if bytes <= capacity => {}
            _ => {
                return Err(crate::CudaError::PinnedTooSmall {
                    requested: requested.unwrap_or(usize::MAX),
                    capacity,
                })
            }
        }
        // Allocations are page-aligned; only an empty buffer has a smaller (dangling) address,
        // and then `len` elements of `U` fit only when there are none or `U` is zero-sized.
        debug_assert!(capacity == 0 || self.mem.addr().is_multiple_of(std::mem::align_of::<U>()));
        Ok(PinnedBuffer {
            mem: self.mem,
            len,
            _elem: PhantomData,
        })
    }
}

impl<T: Pod> fmt::Debug for PinnedBuffer<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PinnedBuffer")
            .field("elem", &std::any::type_name::<T>())
            .field("len", &self.len)
            .field("capacity_bytes", &self.mem.bytes())
            .finish()
    }
}

/// Memory the caller already has (a `Vec`, part of a larger buffer), page-locked in place with
/// `cuMemHostRegister` for as long as this guard lives, so that copies from and to it run
/// asynchronously at pinned speed without first copying it into a [`PinnedBuffer`].
///
/// Made by [`Device::register_host`](crate::Device::register_host); copied with
/// [`Stream::copy_registered_to_device`](crate::Stream::copy_registered_to_device) and
/// [`Stream::copy_to_registered`](crate::Stream::copy_to_registered). It holds the exclusive
/// borrow of the memory, and tracks its copies with an event exactly as [`PinnedBuffer`] does:
/// host access waits for them, and dropping the guard (or [`unregister`](Self::unregister))
/// waits for them before unlocking the pages and giving the memory back to its owner.
///
/// As with [`PinnedBuffer`], a slice from [`as_slice`](Self::as_slice) passed to
/// [`Stream::copy_to_device`](crate::Stream::copy_to_device) is copied asynchronously and not
/// tracked; a guard whose host slices were handed out waits for its whole device before
/// unregistering.
///
/// Registering is not free (the driver locks every page), so register large buffers that live
/// for many copies, or use a pool of [`PinnedBuffer`]s. Memory the driver refuses (already
/// page-locked, for one) gives a typed error naming the driver's code.
pub struct RegisteredHost<'a, T: Pod> {
    pub(crate) reg: Registration<'a>,
    len: usize,
    _elem: PhantomData<&'a mut [T]>,
}

impl<'a, T: Pod> RegisteredHost<'a, T> {
    pub(crate) fn new(device: &crate::Device, data: &'a mut [T]) -> Result<Self> {
        let len = data.len();
        let reg = Registration::new(device.context(), bytemuck::cast_slice_mut(data))?;
        Ok(RegisteredHost {
            reg,
            len,
            _elem: PhantomData,
        })
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there are no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Size in bytes.
    pub fn size_bytes(&self) -> usize {
        self.len * std::mem::size_of::<T>()
    }

    /// Ordinal of the device whose streams may copy to and from the memory.
    pub fn device_ordinal(&self) -> usize {
        self.reg.mem().ordinal()
    }

    /// Blocks until every copy queued on the memory has finished.
    pub fn synchronize(&self) -> Result<()> {
        self.reg.mem().wait()
    }

    /// The elements, after waiting for the copies queued on the memory.
    pub fn as_slice(&self) -> Result<&[T]> {
        let bytes = self.reg.mem().host(self.size_bytes())?;
        if self.len == 0 {
            return Ok(&[]);
        }
        // The memory came from a `&mut [T]`, so it is aligned for `T`.
        Ok(bytemuck::cast_slice(bytes))
    }

    /// The elements for writing, after waiting for the copies queued on the memory.
    pub fn as_mut_slice(&mut self) -> Result<&mut [T]> {
        let size = self.size_bytes();
        let bytes = self.reg.mem_mut().host_mut(size)?;
        if self.len == 0 {
            return Ok(&mut []);
        }
        Ok(bytemuck::cast_slice_mut(bytes))
    }

    /// Waits for the queued copies and unlocks the pages, reporting a failure that dropping
    /// the guard would have to swallow. The memory is the owner's again either way.
    pub fn unregister(self) -> Result<()> {
        self.reg.unregister()
    }
}

impl<T: Pod> fmt::Debug for RegisteredHost<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RegisteredHost")
            .field("elem", &std::any::type_name::<T>())
            .field("len", &self.len)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::{byte_range, PinnedBuffer, RegisteredHost};

    fn shared_across_threads<T: Send + Sync>() {}

    #[test]
    fn page_locked_memory_crosses_threads() {
        shared_across_threads::<PinnedBuffer<u32>>();
        shared_across_threads::<RegisteredHost<'static, u32>>();
    }

    #[test]
    fn byte_ranges_scale_by_element_size() {
        assert_eq!(byte_range::<[u64; 4]>(.., 10), 0..320);
        assert_eq!(byte_range::<[u64; 4]>(2..5, 10), 64..160);
        assert_eq!(byte_range::<u32>(3..=3, 10), 12..16);
        assert_eq!(byte_range::<u32>(10.., 10), 40..40);
    }

    #[test]
    #[should_panic(expected = "out of bounds")]
    fn out_of_bounds_range_panics() {
        let _ = byte_range::<u32>(0..11, 10);
    }
}
