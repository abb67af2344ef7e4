//! The crate's unsafe edge with the driver: probing for libcuda, raw allocations, and
//! page-locked host memory (allocated or registered) with the event that tracks its copies.
//! Everything here is small on purpose, below the safe layer and importing none of it; the
//! launch builder is `launch`.
#![allow(unsafe_code)] // This module is where the crate meets the driver's unchecked API.

use crate::{CudaError, Result};
use cudarc::driver::{
    result, sys, CudaContext, CudaEvent, CudaSlice, CudaStream, CudaView, CudaViewMut, DriverError,
    HostSlice, SyncOnDrop,
};
use std::marker::PhantomData;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

/// Whether the driver library can be loaded. The binding panics on its first call when it
/// cannot, so every entry point asks this first.
pub(crate) fn driver_present() -> bool {
    // SAFETY: only tries to dlopen the driver library under its usual names; no driver call.
    unsafe { sys::is_culib_present() }
}

/// Allocates `bytes` of device memory on `stream`, contents unspecified.
pub(crate) fn alloc_bytes(stream: &Arc<CudaStream>, bytes: usize) -> Result<CudaSlice<u8>> {
    // SAFETY: the memory is uninitialised on the device only. Rust never reads it in place:
    // it reaches the host solely through driver copies into initialised host memory, and the
    // buffers are typed by `Pod` elements, for which any bytes are a valid value.
    unsafe { stream.alloc::<u8>(bytes) }.map_err(CudaError::driver("device memory allocation"))
}

/// The memory pool stream-ordered allocations of `ctx`'s device come from, or `None` when
/// the device has none (no stream-ordered allocation: frees are immediate then).
fn memory_pool(ctx: &CudaContext) -> Result<Option<sys::CUmemoryPool>> {
    if !ctx.has_async_alloc() {
        return Ok(None);
    }
    let mut pool = std::ptr::null_mut();
    // SAFETY: writes one pool handle into `pool`; `cu_device` is the context's valid device.
    unsafe { sys::cuDeviceGetMemPool(&mut pool, ctx.cu_device()) }
        .result()
        .map_err(CudaError::driver("memory pool query"))?;
    Ok(Some(pool))
}

/// Lets the device's memory pool keep up to `bytes` of freed memory mapped across
/// synchronisations (the driver's default keeps none, so every synchronisation unmaps what
/// was freed and the next allocations map it again).
pub(crate) fn set_pool_release_threshold(ctx: &CudaContext, bytes: u64) -> Result<()> {
    let Some(pool) = memory_pool(ctx)? else {
        return Ok(());
    };
    let mut value = bytes;
    // SAFETY: the release threshold attribute takes a pointer to one u64, read during the
    // call; `pool` is the device's live pool.
    unsafe {
        sys::cuMemPoolSetAttribute(
            pool,
            sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
            (&mut value as *mut u64).cast(),
        )
    }
    .result()
    .map_err(CudaError::driver("memory pool release threshold"))
}

/// Unmaps the freed memory the device's pool keeps (memory in use is untouched).
pub(crate) fn trim_pool(ctx: &CudaContext) -> Result<()> {
    let Some(pool) = memory_pool(ctx)? else {
        return Ok(());
    };
    // SAFETY: `pool` is the device's live pool; trimming releases only unused memory.
    unsafe { sys::cuMemPoolTrimTo(pool, 0) }
        .result()
        .map_err(CudaError::driver("memory pool trim"))
}

/// How a [`HostMem`] came to be page-locked, which decides how it is given back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Origin {
    /// Allocated with `cuMemHostAlloc`; freed with `cuMemFreeHost`.
    Allocated,
    /// The caller's memory, locked in place with `cuMemHostRegister`; unlocked with
    /// `cuMemHostUnregister` and left to its owner.
    Registered,
    /// Nothing to give back: zero bytes (no driver call was made) or already released.
    Empty,
}

/// Page-locked host memory, owned (allocated) or borrowed (registered), with an event that
/// marks the end of the last device copy queued on it.
///
/// Every copy is queued through [`HostMem::copy_to_device`] or [`HostMem::copy_from_device`],
/// which take the event's lock, make the stream wait for the event, queue the copy and record
/// the event again. So the event always lies after every copy queued so far, on any stream of
/// the context, and one host wait on it ([`HostMem::wait`]) covers them all. That wait runs
/// before every host access and before the memory is freed or unregistered.
pub(crate) struct HostMem {
    ptr: NonNull<u8>,
    bytes: usize,
    origin: Origin,
    ctx: Arc<CudaContext>,
    /// Recorded after each queued copy. The lock serialises wait-copy-record, so that two
    /// threads queuing copies at once cannot leave the event covering only one of them.
    last_copy: Mutex<CudaEvent>,
    /// Set once a host slice of the memory was handed out. Such a slice can reach
    /// `Stream::copy_to_device`, whose asynchronous copy from page-locked memory the event does
    /// not see; release then waits for the whole context before giving the memory back.
    exposed: AtomicBool,
}

// SAFETY: `HostMem` is plain bytes behind a pointer it owns (or holds an exclusive borrow of, see
// `Registration`), plus thread-safe driver handles. Shared references only read the bytes (or
// queue device reads of them) and exclusive references are needed to write them, so moving or
// sharing it across threads is as safe as for a `Box<[u8]>`.
unsafe impl Send for HostMem {}
// SAFETY: as above; the event is behind a mutex and the flag is atomic.
unsafe impl Sync for HostMem {}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // The guarded event is a driver handle with no Rust-side invariant a panic could break.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// An event for host waits on copies: blocking, so waiting threads sleep instead of spinning
/// on cores that synthesis needs.
fn copy_event(ctx: &Arc<CudaContext>) -> Result<CudaEvent> {
    ctx.new_event(Some(sys::CUevent_flags::CU_EVENT_BLOCKING_SYNC))
        .map_err(CudaError::driver("event creation"))
}

impl HostMem {
    fn empty(ctx: &Arc<CudaContext>) -> Result<HostMem> {
        Ok(HostMem {
            ptr: NonNull::dangling(),
            bytes: 0,
            origin: Origin::Empty,
            ctx: Arc::clone(ctx),
            last_copy: Mutex::new(copy_event(ctx)?),
            exposed: AtomicBool::new(false),
        })
    }

    /// Allocates `bytes` of portable page-locked host memory, zeroed. Zero bytes allocate
    /// nothing.
    pub(crate) fn alloc_zeroed(ctx: &Arc<CudaContext>, bytes: usize) -> Result<HostMem> {
        let mut mem = HostMem::empty(ctx)?;
        if bytes == 0 {
            return Ok(mem);
        }
        let op = "pinned host allocation";
        ctx.bind_to_thread().map_err(CudaError::driver(op))?;
        // Portable: usable from every device's context. Not write-combined, which would make
        // host reads of results very slow.
        // SAFETY: a plain allocation call; the pointer it returns is checked for null and
        // then owned by `mem`, which frees it exactly once.
        let raw = unsafe { result::malloc_host(bytes, sys::CU_MEMHOSTALLOC_PORTABLE) }
            .map_err(CudaError::driver(op))?;
        let ptr = NonNull::new(raw.cast::<u8>()).ok_or_else(|| {
            CudaError::driver(op)(DriverError(sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY))
        })?;
        // SAFETY: `ptr` points to `bytes` bytes just allocated for us and not yet shared.
        unsafe { std::ptr::write_bytes(ptr.as_ptr(), 0, bytes) };
        mem.ptr = ptr;
        mem.bytes = bytes;
        mem.origin = Origin::Allocated;
        Ok(mem)
    }

    /// Size in bytes.
    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }

    /// Address of the first byte (for alignment checks; never dereferenced by callers).
    pub(crate) fn addr(&self) -> usize {
        self.ptr.as_ptr() as usize
    }

    /// Ordinal of the device whose context tracks the copies.
    pub(crate) fn ordinal(&self) -> usize {
        self.ctx.ordinal()
    }

    /// Blocks until every copy queued on this memory so far has finished.
    pub(crate) fn wait(&self) -> Result<()> {
        lock(&self.last_copy)
            .synchronize()
            .map_err(CudaError::driver("pinned buffer wait"))
    }

    /// The first `bytes` bytes for reading on the host, after waiting for the queued copies.
    pub(crate) fn host(&self, bytes: usize) -> Result<&[u8]> {
        assert!(bytes <= self.bytes, "{bytes} bytes of {}", self.bytes);
        self.wait()?;
        self.exposed.store(true, Ordering::Relaxed);
        if bytes == 0 {
            return Ok(&[]);
        }
        // SAFETY: the range lies in this memory (asserted), which is initialised (zeroed at
        // allocation, or the registering caller's initialised slice) and valid while `self`
        // is. Every copy into it has finished (waited above), and a new one needs `&mut self`,
        // which this shared borrow excludes; copies out of it only read.
        Ok(unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), bytes) })
    }

    /// The first `bytes` bytes for writing on the host, after waiting for the queued copies.
    pub(crate) fn host_mut(&mut self, bytes: usize) -> Result<&mut [u8]> {
        assert!(bytes <= self.bytes, "{bytes} bytes of {}", self.bytes);
        self.wait()?;
        self.exposed.store(true, Ordering::Relaxed);
        if bytes == 0 {
            return Ok(&mut []);
        }
        // SAFETY: as in `host`; in addition every copy reading the memory has finished too
        // (the event covers reads and writes), and `&mut self` excludes any new one.
        Ok(unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), bytes) })
    }

    /// Queues a copy of the first `dst.len()` bytes to `dst` on `stream`, after every copy
    /// queued on this memory before, and records the event after it. The host does not wait.
    ///
    /// The caller has checked that `stream` belongs to this memory's context and that the
    /// length fits.
    pub(crate) fn copy_to_device(
        &self,
        stream: &Arc<CudaStream>,
        dst: &mut CudaViewMut<'_, u8>,
    ) -> std::result::Result<(), DriverError> {
        let bytes = dst.len();
        assert!(bytes <= self.bytes, "{bytes} bytes of {}", self.bytes);
        if bytes == 0 {
            return Ok(());
        }
        let event = lock(&self.last_copy);
        stream.wait(&event)?;
        let src = HostRange {
            ptr: self.ptr,
            len: bytes,
        };
        stream.memcpy_htod(&src, dst)?;
        Self::record_after(&event, stream)
    }

    /// Queues a copy of `src` into the first `src.len()` bytes on `stream`, after every copy
    /// queued on this memory before, and records the event after it. The host does not wait.
    pub(crate) fn copy_from_device(
        &mut self,
        stream: &Arc<CudaStream>,
        src: &CudaView<'_, u8>,
    ) -> std::result::Result<(), DriverError> {
        let bytes = src.len();
        assert!(bytes <= self.bytes, "{bytes} bytes of {}", self.bytes);
        if bytes == 0 {
            return Ok(());
        }
        let event = lock(&self.last_copy);
        stream.wait(&event)?;
        let mut dst = HostRange {
            ptr: self.ptr,
            len: bytes,
        };
        stream.memcpy_dtoh(src, &mut dst)?;
        Self::record_after(&event, stream)
    }

    /// Records the event after a copy just queued. Should that fail, nothing would mark the
    /// copy, so the stream is drained instead: the memory must not be released under it.
    fn record_after(
        event: &CudaEvent,
        stream: &Arc<CudaStream>,
    ) -> std::result::Result<(), DriverError> {
        event.record(stream).inspect_err(|_| {
            stream.context().record_err(stream.synchronize());
        })
    }

    /// Waits for the copies (and, if a host slice escaped, the whole context), then frees or
    /// unregisters the memory. Afterwards the value holds nothing; calling it again does
    /// nothing.
    fn release(&mut self) -> Result<()> {
        let origin = std::mem::replace(&mut self.origin, Origin::Empty);
        if origin == Origin::Empty {
            return Ok(());
        }
        let op = "pinned host release";
        let waited = self
            .last_copy
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner)
            .synchronize()
            .map_err(CudaError::driver("pinned buffer wait"));
        let drained = if *self.exposed.get_mut() {
            self.ctx
                .synchronize()
                .map_err(CudaError::driver("device synchronize"))
        } else {
            Ok(())
        };
        // Give the memory back even after a failed wait: that only happens when the context is
        // broken for good, and then it runs no more copies.
        let bound = self.ctx.bind_to_thread().map_err(CudaError::driver(op));
        let ptr = self.ptr.as_ptr().cast::<std::ffi::c_void>();
        let given_back = match origin {
            // SAFETY: `ptr` came from `cuMemHostAlloc` and is freed exactly once (the origin
            // is now `Empty`); every copy queued on it has finished (waited above).
            Origin::Allocated => unsafe { result::free_host(ptr) },
            // SAFETY: `ptr` is the exact start address registered in `Registration::new`,
            // unregistered exactly once; every copy queued on it has finished.
            Origin::Registered => unsafe { sys::cuMemHostUnregister(ptr) }.result(),
            Origin::Empty => Ok(()),
        };
        waited?;
        drained?;
        bound?;
        given_back.map_err(CudaError::driver(op))
    }
}

impl Drop for HostMem {
    fn drop(&mut self) {
        if let Err(e) = self.release() {
            // Drop cannot report; the error is dropped rather than left in the context, where
            // it would fail whichever unrelated call comes next.
            drop(e);
        }
    }
}

impl std::fmt::Debug for HostMem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostMem")
            .field("bytes", &self.bytes)
            .field("origin", &self.origin)
            .finish()
    }
}

/// The caller's memory, page-locked in place for as long as this lives; holds the exclusive
/// borrow of it, so nothing else reads or writes it meanwhile.
pub(crate) struct Registration<'a> {
    mem: HostMem,
    _borrow: PhantomData<&'a mut [u8]>,
}

impl<'a> Registration<'a> {
    /// Page-locks `data` (portable: every context sees it as pinned). Empty data makes no
    /// driver call.
    pub(crate) fn new(ctx: &Arc<CudaContext>, data: &'a mut [u8]) -> Result<Registration<'a>> {
        let mut mem = HostMem::empty(ctx)?;
        if !data.is_empty() {
            let op = "host memory registration";
            ctx.bind_to_thread().map_err(CudaError::driver(op))?;
            let ptr = NonNull::from(&mut *data).cast::<u8>();
            // SAFETY: `data` is valid, initialised memory of `data.len()` bytes, exclusively
            // borrowed for `'a`, which `Registration` keeps; the driver only locks its pages.
            // The matching unregister happens in `HostMem::release`, before the borrow ends.
            unsafe {
                sys::cuMemHostRegister_v2(
                    ptr.as_ptr().cast(),
                    data.len(),
                    sys::CU_MEMHOSTREGISTER_PORTABLE,
                )
            }
            .result()
            .map_err(CudaError::driver(op))?;
            mem.ptr = ptr;
            mem.bytes = data.len();
            mem.origin = Origin::Registered;
        }
        Ok(Registration {
            mem,
            _borrow: PhantomData,
        })
    }

    pub(crate) fn mem(&self) -> &HostMem {
        &self.mem
    }

    pub(crate) fn mem_mut(&mut self) -> &mut HostMem {
        &mut self.mem
    }

    /// Waits for the queued copies and unregisters, reporting what failed.
    pub(crate) fn unregister(mut self) -> Result<()> {
        self.mem.release()
    }
}

/// A range of page-locked memory handed to the binding's copy calls. Ordering is done by
/// [`HostMem`] itself, so the range asks the binding for no synchronisation of its own.
struct HostRange {
    ptr: NonNull<u8>,
    len: usize,
}

// The binding's contract for these methods: the slice is used only with `stream`. It is: the
// binding hands it straight to that stream's copy call.
impl HostSlice<u8> for HostRange {
    fn len(&self) -> usize {
        self.len
    }

    unsafe fn stream_synced_slice<'a>(
        &'a self,
        _stream: &'a CudaStream,
    ) -> (&'a [u8], SyncOnDrop<'a>) {
        // SAFETY: `HostRange` is only built by `HostMem`'s copy methods over `len` bytes of
        // its live memory, which no host code writes while the borrow of the `HostMem` lasts;
        // the binding only passes the pointer and length to the driver.
        let slice = unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) };
        (slice, SyncOnDrop::Sync(None))
    }

    unsafe fn stream_synced_mut_slice<'a>(
        &'a mut self,
        _stream: &'a CudaStream,
    ) -> (&'a mut [u8], SyncOnDrop<'a>) {
        // SAFETY: as above; the `HostMem` is borrowed exclusively for the copy into it.
        let slice = unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) };
        (slice, SyncOnDrop::Sync(None))
    }
}
