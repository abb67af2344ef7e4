//! Streams that checksum what passes through them, moving arrays a chunk at a time.

use crate::SynthError;
use std::io::{ErrorKind, Read, Write};

/// Bytes moved per read or write call while streaming an array.
const IO_CHUNK: usize = 1 << 20;
/// Cap on what an untrusted length may pre-allocate; beyond it vectors grow as data arrives.
const MAX_UNVERIFIED_RESERVE: usize = 1 << 20;

/// A writer that checksums what passes through it.
pub(super) struct CrcWrite<W> {
    inner: W,
    hasher: crc32fast::Hasher,
}

impl<W: Write> CrcWrite<W> {
    pub(super) fn new(inner: W) -> Self {
        CrcWrite {
            inner,
            hasher: crc32fast::Hasher::new(),
        }
    }

    pub(super) fn put(&mut self, bytes: &[u8]) -> Result<(), SynthError> {
        self.hasher.update(bytes);
        self.inner
            .write_all(bytes)
            .map_err(|source| SynthError::StreamIo { source })
    }

    pub(super) fn put_crc(&mut self) -> Result<(), SynthError> {
        let crc = self.hasher.clone().finalize();
        self.put(&crc.to_le_bytes())
    }

    /// Writes `items` encoded by `encode` (`size` bytes each), a chunk at a time.
    pub(super) fn put_array<T>(
        &mut self,
        items: &[T],
        size: usize,
        encode: impl Fn(&T, &mut [u8]),
    ) -> Result<(), SynthError> {
        let mut buf = vec![0u8; IO_CHUNK.min(items.len() * size)];
        for chunk in items.chunks((IO_CHUNK / size).max(1)) {
            let bytes = &mut buf[..chunk.len() * size];
            for (item, out) in chunk.iter().zip(bytes.chunks_exact_mut(size)) {
                encode(item, out);
            }
            self.put(bytes)?;
        }
        Ok(())
    }
}

/// A reader that checksums what passes through it and names the section it ran out in.
pub(super) struct CrcRead<R> {
    inner: R,
    hasher: crc32fast::Hasher,
}

impl<R: Read> CrcRead<R> {
    pub(super) fn new(inner: R) -> Self {
        CrcRead {
            inner,
            hasher: crc32fast::Hasher::new(),
        }
    }

    pub(super) fn take(&mut self, buf: &mut [u8], section: &'static str) -> Result<(), SynthError> {
        match self.inner.read_exact(buf) {
            Ok(()) => {
                self.hasher.update(buf);
                Ok(())
            }
            Err(e) if e.kind() == ErrorKind::UnexpectedEof => {
                Err(SynthError::Truncated { section })
            }
            Err(source) => Err(SynthError::StreamIo { source }),
        }
    }

    pub(super) fn crc(&self) -> u32 {
        self.hasher.clone().finalize()
    }

    /// Reads a stored checksum and compares it with the one of everything before it.
    pub(super) fn expect_crc(&mut self, section: &'static str) -> Result<(), SynthError> {
        let computed = self.crc();
        let mut b = [0u8; 4];
        self.take(&mut b, section)?;
        let stored = u32::from_le_bytes(b);
        if stored == computed {
            Ok(())
        } else {
            Err(SynthError::ChecksumMismatch {
                section,
                stored,
                computed,
            })
        }
    }

    /// Reads `n` items of `size` bytes, a chunk at a time, decoding each into `out`.
    pub(super) fn take_array<T>(
        &mut self,
        n: usize,
        size: usize,
        section: &'static str,
        reserve: bool,
        mut decode: impl FnMut(&[u8]) -> T,
    ) -> Result<Vec<T>, SynthError> {
        let mut out = Vec::with_capacity(if reserve {
            n
        } else {
            n.min(MAX_UNVERIFIED_RESERVE)
        });
        let mut buf = vec![0u8; IO_CHUNK.min(n.saturating_mul(size))];
        let per_chunk = (IO_CHUNK / size).max(1);
        let mut left = n;
        while left > 0 {
            let k = left.min(per_chunk);
            let bytes = &mut buf[..k * size];
            self.take(bytes, section)?;
            out.extend(bytes.chunks_exact(size).map(&mut decode));
            left -= k;
        }
        Ok(out)
    }
}

pub(super) fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

pub(super) fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}
