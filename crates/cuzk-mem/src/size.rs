//! Byte sizes as people write them in configuration (`64GiB`, `1.5 GB`) and read them in
//! logs.

use crate::MemError;
use std::fmt;

/// Units accepted after a number, longest first so that `GiB` is not read as `G`.
/// K/M/G/T alone are binary, as in systemd's `MemoryMax=`; KB/MB/… are decimal.
const UNITS: &[(&str, u64)] = &[
    ("KiB", 1 << 10),
    ("MiB", 1 << 20),
    ("GiB", 1 << 30),
    ("TiB", 1 << 40),
    ("KB", 1_000),
    ("MB", 1_000_000),
    ("GB", 1_000_000_000),
    ("TB", 1_000_000_000_000),
    ("K", 1 << 10),
    ("M", 1 << 20),
    ("G", 1 << 30),
    ("T", 1 << 40),
    ("B", 1),
];

/// Reads a size: a whole number of bytes (`1048576`), or a number, possibly with a
/// fraction, followed by a unit (`512MiB`, `1.5 GB`, `64G`). Units are case-sensitive.
pub fn parse_size(input: &str) -> Result<u64, MemError> {
    let bad = |reason| MemError::BadSize {
        input: input.to_string(),
        reason,
    };
    let text = input.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = (&text[..split], text[split..].trim_start());
    if number.is_empty() {
        return Err(bad("no number"));
    }
    let scale = if unit.is_empty() {
        1
    } else {
        UNITS
            .iter()
            .find(|(name, _)| *name == unit)
            .map(|&(_, scale)| scale)
            .ok_or_else(|| {
                bad("unknown unit (use B, KiB, MiB, GiB, TiB, KB, MB, GB, TB, K, M, G or T)")
            })?
    };
    match number.split_once('.') {
        None => number
            .parse::<u64>()
            .map_err(|_| bad("number too large"))?
            .checked_mul(scale)
            .ok_or_else(|| bad("size too large")),
        Some((whole, frac)) => {
            if frac.contains('.') || (whole.is_empty() && frac.is_empty()) {
                return Err(bad("malformed number"));
            }
            // A fraction of a byte is meaningless; f64 is exact far beyond any memory size.
            let value: f64 = number.parse().map_err(|_| bad("malformed number"))?;
            let bytes = (value * scale as f64).round();
            if bytes >= u64::MAX as f64 {
                return Err(bad("size too large"));
            }
            Ok(bytes as u64)
        }
    }
}

/// Displays a byte count in binary units with two decimals (`1.50 GiB`), bytes below 1 KiB.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Bytes(pub u64);

impl fmt::Display for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const NAMES: [&str; 5] = ["KiB", "MiB", "GiB", "TiB", "PiB"];
        if self.0 < 1 << 10 {
            return write!(f, "{} B", self.0);
        }
        let mut value = self.0 as f64 / 1024.0;
        let mut unit = 0;
        while value >= 1024.0 && unit + 1 < NAMES.len() {
            value /= 1024.0;
            unit += 1;
        }
        write!(f, "{value:.2} {}", NAMES[unit])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse() {
        let cases = [
            ("0", 0),
            ("1048576", 1 << 20),
            ("512MiB", 512 << 20),
            ("512 MiB", 512 << 20),
            (" 64G ", 64 << 30),
            ("1.5GiB", 3 << 29),
            ("2GB", 2_000_000_000),
            ("10B", 10),
            ("4K", 4096),
            (".5KiB", 512),
        ];
        for (text, bytes) in cases {
            assert_eq!(parse_size(text).unwrap(), bytes, "{text}");
        }
    }

    #[test]
    fn bad_sizes_name_the_input() {
        for text in [
            "",
            "GiB",
            "12XB",
            "1.2.3G",
            "99999999999999999999",
            "20000000TiB",
            ".",
        ] {
            match parse_size(text) {
                Err(MemError::BadSize { input, .. }) => assert_eq!(input, text),
                other => panic!("{text:?} gave {other:?}"),
            }
        }
    }

    #[test]
    fn bytes_display() {
        assert_eq!(Bytes(1000).to_string(), "1000 B");
        assert_eq!(Bytes(3 << 29).to_string(), "1.50 GiB");
        assert_eq!(Bytes(512 << 20).to_string(), "512.00 MiB");
    }
}
