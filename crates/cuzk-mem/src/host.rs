//! Sizing the host budget: from `/proc/meminfo` minus a margin, or a fixed override.

use crate::{Budget, MemError};
use std::path::{Path, PathBuf};

/// Where Linux reports the host's memory.
const MEMINFO: &str = "/proc/meminfo";

/// The host's memory as `/proc/meminfo` reports it, in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemInfo {
    /// `MemTotal`.
    pub total: u64,
    /// `MemAvailable` (memory that can be had without swapping); absent on old kernels.
    pub available: Option<u64>,
}

impl MemInfo {
    /// Reads `/proc/meminfo`.
    pub fn read() -> Result<MemInfo, MemError> {
        MemInfo::read_from(Path::new(MEMINFO))
    }

    /// Reads a meminfo file at `path`.
    pub fn read_from(path: &Path) -> Result<MemInfo, MemError> {
        let text = std::fs::read_to_string(path).map_err(|source| MemError::MemInfoIo {
            path: path.to_path_buf(),
            source,
        })?;
        MemInfo::parse(&text, path)
    }

    /// Parses meminfo text (`Name:   123 kB` lines); `path` names the source in errors.
    pub fn parse(text: &str, path: &Path) -> Result<MemInfo, MemError> {
        let field = |name: &str| -> Result<Option<u64>, MemError> {
            let Some(line) = text.lines().find(|l| l.split(':').next() == Some(name)) else {
                return Ok(None);
            };
            parse_kb(line)
                .map(Some)
                .ok_or_else(|| MemError::MemInfoParse {
                    path: PathBuf::from(path),
                    what: format!("malformed line {line:?}"),
                })
        };
        let total = field("MemTotal")?.ok_or_else(|| MemError::MemInfoParse {
            path: PathBuf::from(path),
            what: "no MemTotal line".into(),
        })?;
        Ok(MemInfo {
            total,
            available: field("MemAvailable")?,
        })
    }
}

/// `Name:   123 kB` → 123 × 1024 bytes (the kernel's "kB" is KiB).
fn parse_kb(line: &str) -> Option<u64> {
    let (_, value) = line.split_once(':')?;
    let mut words = value.split_whitespace();
    let number: u64 = words.next()?.parse().ok()?;
    match (words.next(), words.next()) {
        (Some("kB"), None) => number.checked_mul(1024),
        (None, None) => Some(number),
        _ => None,
    }
}

/// The margin automatic sizing leaves to the rest of the system: a tenth of the host's
/// memory, at least 512 MiB and at most 4 GiB (the OS, the daemon's own structures, page
/// cache for parameter files).
pub fn default_margin(total: u64) -> u64 {
    (total / 10).clamp(512 << 20, 4 << 30)
}

/// How the host budget's capacity is chosen.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum HostBudget {
    /// `MemAvailable` (or `MemTotal` where the kernel lacks it) when the budget is made,
    /// minus [`default_margin`] of `MemTotal`.
    #[default]
    Auto,
    /// [`HostBudget::Auto`] with an explicit margin in bytes.
    AutoWithMargin(u64),
    /// Exactly this many bytes, whatever the host reports.
    Fixed(u64),
}

impl HostBudget {
    /// The capacity this policy gives on this host.
    pub fn capacity(&self) -> Result<u64, MemError> {
        match self {
            HostBudget::Fixed(bytes) => fixed(*bytes),
            _ => self.capacity_with(&MemInfo::read()?),
        }
    }

    /// The capacity this policy gives for the given meminfo.
    pub fn capacity_with(&self, info: &MemInfo) -> Result<u64, MemError> {
        let margin = match *self {
            HostBudget::Fixed(bytes) => return fixed(bytes),
            HostBudget::Auto => default_margin(info.total),
            HostBudget::AutoWithMargin(margin) => margin,
        };
        let base = info.available.unwrap_or(info.total);
        if base <= margin {
            return Err(MemError::NoHostMemory { base, margin });
        }
        Ok(base - margin)
    }

    /// A budget named `host` with this policy's capacity.
    pub fn budget(&self) -> Result<Budget, MemError> {
        let capacity = self.capacity()?;
        tracing::info!(
            capacity,
            human = %crate::Bytes(capacity),
            policy = ?self,
            "host memory budget"
        );
        Ok(Budget::new("host", capacity))
    }
}

fn fixed(bytes: u64) -> Result<u64, MemError> {
    if bytes == 0 {
        return Err(MemError::ZeroCapacity);
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "MemTotal:       24684096 kB\nMemFree:        21267896 kB\n\
                          MemAvailable:   24227912 kB\nBuffers:           16440 kB\n\
                          HugePages_Total:       0\n";

    #[test]
    fn parses_meminfo() {
        let info = MemInfo::parse(SAMPLE, Path::new("x")).unwrap();
        assert_eq!(info.total, 24684096 * 1024);
        assert_eq!(info.available, Some(24227912 * 1024));
        let old_kernel = MemInfo::parse("MemTotal: 2048 kB\n", Path::new("x")).unwrap();
        assert_eq!(old_kernel.available, None);
    }

    #[test]
    fn bad_meminfo_is_named() {
        let err = MemInfo::parse("MemFree: 1 kB\n", Path::new("/m")).unwrap_err();
        assert!(
            matches!(err, MemError::MemInfoParse { ref what, .. } if what.contains("MemTotal"))
        );
        let err = MemInfo::parse("MemTotal: lots kB\n", Path::new("/m")).unwrap_err();
        assert!(
            matches!(err, MemError::MemInfoParse { ref what, .. } if what.contains("lots")),
            "{err}"
        );
        let err = MemInfo::read_from(Path::new("/nonexistent/meminfo")).unwrap_err();
        assert!(matches!(err, MemError::MemInfoIo { .. }));
    }

    #[test]
    fn auto_subtracts_the_margin_from_available_else_total() {
        let gib = 1u64 << 30;
        let info = MemInfo {
            total: 64 * gib,
            available: Some(40 * gib),
        };
        assert_eq!(
            HostBudget::Auto.capacity_with(&info).unwrap(),
            40 * gib - 4 * gib
        );
        assert_eq!(
            HostBudget::AutoWithMargin(gib)
                .capacity_with(&info)
                .unwrap(),
            39 * gib
        );
        let old = MemInfo {
            total: 4 * gib,
            available: None,
        };
        // A tenth of 4 GiB is below the 512 MiB floor.
        assert_eq!(
            HostBudget::Auto.capacity_with(&old).unwrap(),
            4 * gib - (512 << 20)
        );
        assert!(matches!(
            HostBudget::AutoWithMargin(5 * gib).capacity_with(&old),
            Err(MemError::NoHostMemory { .. })
        ));
        assert_eq!(HostBudget::Fixed(7).capacity_with(&info).unwrap(), 7);
        assert!(matches!(
            HostBudget::Fixed(0).capacity(),
            Err(MemError::ZeroCapacity)
        ));
    }

    #[test]
    fn this_host_has_an_automatic_budget() {
        if Path::new(MEMINFO).exists() {
            let budget = HostBudget::Auto.budget().unwrap();
            assert!(budget.capacity() > 0);
            assert_eq!(budget.name(), "host");
        }
    }
}
