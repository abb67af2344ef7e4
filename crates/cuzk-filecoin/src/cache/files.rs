//! The cache's file I/O: filecoin-proofs' BLAKE2b digests of files read and written,
//! writes under a temporary name renamed into place, and the thread that writes a generated
//! circuit's parameter file.

use super::{CircuitId, GenerationRecord, IO_BUFFER};
use crate::error::{Error, Result};
use cuzk_groth16::PreparedParameters;
use std::fs::{self, File};
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

/// Writes a generated circuit's `.params` file, then its generation record, holding the
/// circuit's file lock until both are in place.
pub(super) struct Writer {
    pub dir: PathBuf,
    pub id: CircuitId,
    pub params: Arc<PreparedParameters>,
    pub vk_digest: String,
    pub generator: String,
    /// The circuit's file lock, released when both files are in place.
    pub lock: Option<File>,
}

impl Writer {
    pub fn run(self) {
        let start = Instant::now();
        let written = write_atomic(&self.dir.join(self.id.params_file()), |w| {
            self.params.write(w)
        })
        .and_then(|params_digest| {
            let record = GenerationRecord {
                params_digest,
                vk_digest: self.vk_digest.clone(),
                sector_size: self.id.sector_size,
                generator: self.generator.clone(),
            };
            write_atomic(&self.dir.join(self.id.generation_record_file()), |w| {
                serde_json::to_writer_pretty(w, &record).map_err(io::Error::other)
            })
        });
        match written {
            Ok(_) => tracing::info!(
                circuit = %self.id,
                ms = start.elapsed().as_millis() as u64,
                "generated parameter file written"
            ),
            Err(e) => tracing::warn!(
                circuit = %self.id,
                error = %e,
                "generated parameter file not written; the next process generates again"
            ),
        }
        // Only now may another process load the circuit from these files.
        drop(self.lock);
    }
}

/// `Ok` when the filesystem of `dir` has at least `bytes` free for this process, else the
/// bytes it has (0 when that cannot be told: a write that may not fit is not started).
pub(super) fn room_for(dir: &Path, bytes: u64) -> std::result::Result<(), u64> {
    let free = nix::sys::statvfs::statvfs(dir)
        .map(|s| s.blocks_available().saturating_mul(s.fragment_size()))
        .unwrap_or(0);
    if free >= bytes {
        Ok(())
    } else {
        Err(free)
    }
}

/// filecoin-proofs' digest of a file: the first 128 bits of its BLAKE2b-512, hex.
pub fn file_digest(path: &Path) -> Result<String> {
    let file = File::open(path).map_err(Error::io(path))?;
    let mut reader = DigestReader::new(BufReader::with_capacity(IO_BUFFER, file));
    io::copy(&mut reader, &mut io::sink()).map_err(Error::io(path))?;
    Ok(reader.hex_digest())
}

fn hex_digest(state: &blake2b_simd::State) -> String {
    state.finalize().to_hex()[..32].to_string()
}

/// A reader that hashes everything read through it.
pub(super) struct DigestReader<R> {
    inner: R,
    state: blake2b_simd::State,
}

impl<R: Read> DigestReader<R> {
    pub(super) fn new(inner: R) -> Self {
        DigestReader {
            inner,
            state: blake2b_simd::Params::new().to_state(),
        }
    }

    pub(super) fn hex_digest(&self) -> String {
        hex_digest(&self.state)
    }
}

impl<R: Read> Read for DigestReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.state.update(&buf[..n]);
        Ok(n)
    }
}

/// A writer that hashes everything written through it.
pub(super) struct DigestWriter<W> {
    inner: W,
    state: blake2b_simd::State,
}

impl<W: Write> Write for DigestWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.state.update(&buf[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// The temporary name [`write_atomic`] writes `path` under in process `pid`.
fn partial_name(path: &Path, pid: u32) -> PathBuf {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(format!(".partial-{pid}"));
    PathBuf::from(tmp)
}

/// Removes the temporary files that processes no longer running left while writing `path`
/// (a daemon killed while writing a 47 GB parameter file leaves one that size, which the next
/// free-disk check would count against the new file). A process is taken as gone when
/// `/proc` is mounted and has no entry for it; without `/proc` nothing is removed. Returns the
/// bytes freed.
pub(super) fn remove_stale_partials(path: &Path) -> u64 {
    let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else {
        return 0;
    };
    let proc = Path::new("/proc");
    if !proc.join("self").exists() {
        return 0;
    }
    let prefix = format!("{}.partial-", name.to_string_lossy());
    let Ok(entries) = fs::read_dir(dir) else {
        return 0;
    };
    let mut freed = 0;
    for entry in entries.flatten() {
        let file = entry.file_name();
        let Some(pid) = file
            .to_str()
            .and_then(|f| f.strip_prefix(&prefix))
            .and_then(|pid| pid.parse::<u32>().ok())
        else {
            continue;
        };
        if pid == std::process::id() || proc.join(pid.to_string()).exists() {
            continue;
        }
        let bytes = entry.metadata().map(|m| m.len()).unwrap_or(0);
        match fs::remove_file(entry.path()) {
            Ok(()) => {
                freed += bytes;
                tracing::info!(file = %entry.path().display(), bytes, "removed a partial file a stopped process left");
            }
            Err(e) => {
                tracing::warn!(file = %entry.path().display(), error = %e, "a partial file a stopped process left could not be removed")
            }
        }
    }
    freed
}

/// Writes `path` through `write` under a temporary name, renames it into place, and returns
/// the file's digest. Readers never see a partial file under the final name.
pub(super) fn write_atomic(
    path: &Path,
    write: impl FnOnce(&mut DigestWriter<BufWriter<File>>) -> io::Result<()>,
) -> Result<String> {
    let tmp = partial_name(path, std::process::id());
    let result = (|| {
        let file = File::create(&tmp)?;
        let mut w = DigestWriter {
            inner: BufWriter::with_capacity(IO_BUFFER, file),
            state: blake2b_simd::Params::new().to_state(),
        };
        write(&mut w)?;
        w.flush()?;
        w.inner.get_ref().sync_all()?;
        Ok(hex_digest(&w.state))
    })();
    let digest = match result {
        Ok(d) => d,
        Err(source) => {
            // Best effort: the write error is what the caller needs to see.
            let _ = fs::remove_file(&tmp);
            return Err(Error::Io { path: tmp, source });
        }
    };
    fs::rename(&tmp, path).map_err(Error::io(path))?;
    Ok(digest)
}

#[cfg(test)]
mod tests {
    use super::{partial_name, remove_stale_partials, room_for, write_atomic};
    use std::io::Write;

    #[test]
    fn partial_files_of_stopped_processes_are_removed_and_live_ones_kept() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v28-circuit.params");
        // A process that cannot be running (above the kernel's pid limit), this one, and an
        // unrelated file with the same prefix.
        let dead = partial_name(&path, 4_000_000_000);
        let mine = partial_name(&path, std::process::id());
        let other = dir.path().join("v28-circuit.params.partial-notapid");
        for f in [&dead, &mine, &other] {
            std::fs::write(f, b"12345").unwrap();
        }
        assert_eq!(remove_stale_partials(&path), 5);
        assert!(!dead.exists());
        assert!(mine.exists() && other.exists());
        // This process's own write goes through its own partial name and leaves only the file.
        std::fs::remove_file(&mine).unwrap();
        write_atomic(&path, |w| w.write_all(b"params")).unwrap();
        assert!(!mine.exists());
        assert_eq!(std::fs::read(&path).unwrap(), b"params");
    }

    #[test]
    fn room_for_compares_with_the_filesystems_free_space() {
        let dir = std::env::temp_dir();
        assert_eq!(room_for(&dir, 0), Ok(()));
        let free = room_for(&dir, u64::MAX).unwrap_err();
        assert!(free > 0, "the temporary folder's free space can be read");
        assert_eq!(room_for(&dir, free / 2), Ok(()));
        // A folder that does not exist has no room.
        assert_eq!(room_for(&dir.join("cuzk-no-such-folder"), 1), Err(0));
    }
}
