//! Medians and table formatting for the benchmark reports.

use std::time::Duration;

/// The median of a non-empty set of samples (mean of the middle two for even counts).
pub fn median(samples: &[Duration]) -> Duration {
    assert!(!samples.is_empty(), "median of no samples");
    let mut v = samples.to_vec();
    v.sort();
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2
    }
}

/// Milliseconds with three decimals, the unit every table uses.
pub fn ms(d: Duration) -> String {
    format!("{:.3}", d.as_secs_f64() * 1e3)
}

/// The process's peak resident memory (VmHWM), GiB; 0 where /proc is not there.
pub fn rss_peak_gib() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<f64>().ok())
        })
        .map_or(0.0, |kib| kib / (1u64 << 20) as f64)
}

#[cfg(test)]
mod tests {
    use super::median;
    use std::time::Duration;

    #[test]
    fn median_of_odd_and_even_counts() {
        let d = Duration::from_millis;
        assert_eq!(median(&[d(5), d(1), d(3)]), d(3));
        assert_eq!(
            median(&[d(4), d(1), d(3), d(2)]),
            Duration::from_micros(2500)
        );
    }
}
