//! The pinned host pool: page-locked buffers per device, lent out and taken back instead of
//! pinned and freed for every proof.

use crate::pool::{PoolStats, Shelf, Ticket};
use crate::{Budget, MemError};
use bytemuck::Pod;
use cuzk_cuda::{Device, PinnedBuffer};
use std::fmt;
use std::ops::{Deref, DerefMut};
use std::sync::Arc;
use std::time::Duration;

type Bytes = PinnedBuffer<u8>;

/// Page-locked host buffers for one device, kept for reuse: a buffer handed out by
/// [`PinnedPool::acquire`] returns to the pool when dropped, and is freed only by
/// [`PinnedPool::trim`], by eviction to make room for another size, or when the pool and all
/// its buffers are gone. So in steady state a proof neither pins nor frees host memory.
///
/// Buffers come in size classes (quarter steps between powers of two, at least 64 KiB; see
/// `size_class`): a request gets an idle buffer of its class or up to twice that, else a new
/// one. The pool keeps at most `capacity` bytes pinned, idle and lent together, and charges
/// every pinned byte to the host budget if given one, from pinning to freeing: idle buffers
/// are memory the rest of the host cannot have.
///
/// Cheap to clone; clones share the pool. Thread-safe: workers acquire and drop buffers from
/// any thread.
#[derive(Clone)]
pub struct PinnedPool {
    device: Device,
    shelf: Arc<Shelf<Bytes>>,
}

impl PinnedPool {
    /// A pool for `device` keeping at most `capacity` bytes pinned (a budget named
    /// `pinned <ordinal>`), each buffer also charged to `host` if given.
    pub fn new(device: &Device, capacity: u64, host: Option<Budget>) -> PinnedPool {
        let name = format!("pinned {}", device.ordinal());
        PinnedPool {
            device: device.clone(),
            shelf: Shelf::new(name, capacity, host),
        }
    }

    /// The device whose streams copy to and from this pool's buffers.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// The most bytes the pool keeps pinned at once.
    pub fn capacity(&self) -> u64 {
        self.shelf.capacity()
    }

    /// A buffer of `len` elements of `T`; never waits for buffers to come back.
    ///
    /// Its contents are unspecified: zeroes when newly pinned, else what its last user left
    /// (any bytes are valid for a `Pod` type). Copies its last user queued stay ordered before
    /// every use, through the buffer's event.
    ///
    /// Errors with [`MemError::ExceedsCapacity`] when the size class is larger than the
    /// pool, with [`MemError::Unavailable`] (naming the pool's or the host's budget) when
    /// there is no idle buffer and no room for a new one even after evicting idle ones, and
    /// with [`MemError::Cuda`] when pinning fails.
    pub fn acquire<T: Pod>(&self, len: usize) -> Result<PooledPinned<T>, MemError> {
        let bytes = bytes_for::<T>(len)?;
        let (buffer, ticket) = self.shelf.take(bytes, &mut |class| self.pin(class))?;
        self.lend(buffer, ticket, len)
    }

    /// [`PinnedPool::acquire`], waiting (for at most `timeout`; `None`: no limit) for
    /// buffers to come back or budget bytes to be released when there is no room now. Do not
    /// call it from an async task: it parks the thread.
    pub fn acquire_blocking<T: Pod>(
        &self,
        len: usize,
        timeout: Option<Duration>,
    ) -> Result<PooledPinned<T>, MemError> {
        let bytes = bytes_for::<T>(len)?;
        let (buffer, ticket) = self
            .shelf
            .take_blocking(bytes, timeout, &mut |class| self.pin(class))?;
        self.lend(buffer, ticket, len)
    }

    /// Pins one idle buffer for each of `sizes` (in bytes) now, so that the first proofs find
    /// them instead of pinning. Stops at the first size that does not fit. These buffers are
    /// not freed for sitting idle ([`PinnedPool::set_max_idle`]), only to make room or by a
    /// trim.
    pub fn prewarm(&self, sizes: &[u64]) -> Result<(), MemError> {
        self.shelf.stock(sizes, &mut |class| self.pin(class))
    }

    /// Frees every idle buffer; returns the bytes unpinned. Lent buffers are untouched and
    /// come back as usual. Freeing waits for copies still queued on the buffers.
    pub fn trim(&self) -> u64 {
        self.shelf.trim_to(0)
    }

    /// Frees idle buffers, largest first, until at most `keep` bytes of them remain; returns
    /// the bytes unpinned.
    pub fn trim_to(&self, keep: u64) -> u64 {
        self.shelf.trim_to(keep)
    }

    /// Frees buffers once they have sat idle for `max_idle` (`None`, the default: keeps
    /// them until evicted or trimmed), so that memory pinned for a burst of demand goes back
    /// to the host when the burst is over. The pool checks at every acquire, every return and
    /// every [`PinnedPool::stats`] read.
    pub fn set_max_idle(&self, max_idle: Option<Duration>) {
        self.shelf.set_max_idle(max_idle);
    }

    /// Hits, misses, evictions and the bytes pinned now and at most.
    pub fn stats(&self) -> PoolStats {
        self.shelf.stats()
    }

    fn pin(&self, class: u64) -> Result<Bytes, MemError> {
        let cuda = |source| MemError::Cuda {
            op: "pinned host allocation",
            device: self.device.ordinal(),
            source: Box::new(source),
        };
        let bytes = usize::try_from(class).map_err(|_| MemError::SizeOverflow {
            len: class,
            elem_bytes: 1,
        })?;
        let started = std::time::Instant::now();
        let buffer = self.device.alloc_pinned::<u8>(bytes).map_err(cuda)?;
        tracing::debug!(
            pool = self.shelf.name(),
            bytes = class,
            elapsed_ms = started.elapsed().as_secs_f64() * 1e3,
            "pinned a pool buffer"
        );
        Ok(buffer)
    }

    fn lend<T: Pod>(
        &self,
        buffer: Bytes,
        ticket: Ticket,
        len: usize,
    ) -> Result<PooledPinned<T>, MemError> {
        match buffer.recast::<T>(len) {
            Ok(buffer) => Ok(PooledPinned {
                buffer: Some(buffer),
                ticket: Some(ticket),
                shelf: Arc::clone(&self.shelf),
            }),
            Err(source) => {
                // Cannot happen (the class holds the request); should it, the buffer is
                // already freed, and the pool forgets it.
                self.shelf.forget(&ticket);
                Err(MemError::Cuda {
                    op: "pinned buffer lend",
                    device: self.device.ordinal(),
                    source: Box::new(source),
                })
            }
        }
    }
}

fn bytes_for<T>(len: usize) -> Result<u64, MemError> {
    let elem = std::mem::size_of::<T>() as u64;
    (len as u64)
        .checked_mul(elem)
        .ok_or(MemError::SizeOverflow {
            len: len as u64,
            elem_bytes: elem,
        })
}

impl fmt::Debug for PinnedPool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PinnedPool")
            .field("device", &self.device.ordinal())
            .field("stats", &self.stats())
            .finish()
    }
}

/// A buffer lent by a [`PinnedPool`]: a [`PinnedBuffer`] of the requested length (through
/// `Deref`), so the streams' pinned copies take it as they are. Dropping it returns it to the
/// pool without waiting and without freeing; copies still queued on it stay ordered before
/// its next use by its event.
pub struct PooledPinned<T: Pod> {
    buffer: Option<PinnedBuffer<T>>,
    ticket: Option<Ticket>,
    shelf: Arc<Shelf<Bytes>>,
}

impl<T: Pod> PooledPinned<T> {
    /// Bytes of the pooled allocation (its size class), at least the requested size.
    pub fn class_bytes(&self) -> u64 {
        self.ticket.as_ref().map_or(0, Ticket::class)
    }
}

impl<T: Pod> Deref for PooledPinned<T> {
    type Target = PinnedBuffer<T>;

    fn deref(&self) -> &PinnedBuffer<T> {
        self.buffer.as_ref().expect("present until drop")
    }
}

impl<T: Pod> DerefMut for PooledPinned<T> {
    fn deref_mut(&mut self) -> &mut PinnedBuffer<T> {
        self.buffer.as_mut().expect("present until drop")
    }
}

impl<T: Pod> Drop for PooledPinned<T> {
    fn drop(&mut self) {
        let (Some(buffer), Some(ticket)) = (self.buffer.take(), self.ticket.take()) else {
            return;
        };
        let capacity = buffer.capacity_bytes();
        match buffer.recast::<u8>(capacity) {
            Ok(bytes) => self.shelf.put(bytes, ticket),
            // Cannot fail (the whole allocation as bytes); if it did the buffer is freed.
            Err(_) => self.shelf.forget(&ticket),
        }
    }
}

impl<T: Pod> fmt::Debug for PooledPinned<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PooledPinned")
            .field("buffer", &self.buffer)
            .field("class_bytes", &self.class_bytes())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shared_across_threads<T: Send + Sync>() {}

    #[test]
    fn pools_and_their_buffers_cross_threads() {
        shared_across_threads::<PinnedPool>();
        shared_across_threads::<PooledPinned<u32>>();
        shared_across_threads::<crate::VramBudget>();
    }

    #[test]
    fn request_sizes_overflow_into_a_typed_error() {
        assert_eq!(bytes_for::<[u64; 4]>(3).unwrap(), 96);
        assert!(matches!(
            bytes_for::<[u64; 4]>(usize::MAX),
            Err(MemError::SizeOverflow { elem_bytes: 32, .. })
        ));
    }
}
