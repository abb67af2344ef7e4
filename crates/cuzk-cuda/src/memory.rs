//! Typed device buffers, borrowed views of them, and page-locked host buffers.
//!
//! Every buffer stores bytes and is typed by a `bytemuck::Pod` element, so any plain layout
//! shared with the kernels (`FrRepr`, `G1AffineRepr`, `u32`, ...) can live on the device
//! without this crate knowing it.

use crate::raw;
use crate::Result;
use bytemuck::Pod;
use cudarc::driver::DeviceSlice as CuDeviceSlice;
use cudarc::driver::{CudaSlice, CudaView, CudaViewMut, PinnedHostSlice};
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
/// Copies between it and the device run asynchronously at full PCIe speed; reading or writing
/// it on the host first waits for the copies queued on it.
pub struct PinnedBuffer<T: Pod> {
    pub(crate) bytes: PinnedHostSlice<u8>,
    len: usize,
    _elem: PhantomData<T>,
}

impl<T: Pod> PinnedBuffer<T> {
    pub(crate) fn new(device: &crate::Device, len: usize) -> Result<Self> {
        let bytes = raw::alloc_pinned_zeroed(device.context(), len * std::mem::size_of::<T>())?;
        Ok(PinnedBuffer {
            bytes,
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

    /// The elements, after waiting for the copies queued on this buffer.
    pub fn as_slice(&self) -> Result<&[T]> {
        let bytes = self
            .bytes
            .as_slice()
            .map_err(crate::CudaError::driver("pinned buffer wait"))?;
        // The allocation is page-aligned, so the cast cannot fail on alignment.
        Ok(bytemuck::cast_slice(bytes))
    }

    /// The elements for writing, after waiting for the copies queued on this buffer.
    pub fn as_mut_slice(&mut self) -> Result<&mut [T]> {
        let bytes = self
            .bytes
            .as_mut_slice()
            .map_err(crate::CudaError::driver("pinned buffer wait"))?;
        Ok(bytemuck::cast_slice_mut(bytes))
    }
}

impl<T: Pod> fmt::Debug for PinnedBuffer<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PinnedBuffer")
            .field("elem", &std::any::type_name::<T>())
            .field("len", &self.len)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::byte_range;

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
