//! Captures bellperson's `synthesis time: …` log record, the only place its synthesis time is exposed.

use std::sync::Mutex;
use std::time::Duration;

/// A `log` backend that keeps the durations bellperson reports for synthesis.
#[derive(Debug, Default)]
pub struct SynthesisTimes {
    seen: Mutex<Vec<Duration>>,
}

impl SynthesisTimes {
    /// Installs the capture as the process's logger (once).
    pub fn install() -> &'static SynthesisTimes {
        let me: &'static SynthesisTimes = Box::leak(Box::default());
        log::set_logger(me).expect("no other logger is installed in the bench binary");
        log::set_max_level(log::LevelFilter::Info);
        me
    }

    /// Takes the durations recorded since the last call.
    pub fn take(&self) -> Vec<Duration> {
        std::mem::take(&mut self.seen.lock().expect("log capture lock"))
    }
}

impl log::Log for SynthesisTimes {
    fn enabled(&self, m: &log::Metadata<'_>) -> bool {
        m.level() <= log::Level::Info
    }

    fn log(&self, record: &log::Record<'_>) {
        let msg = record.args().to_string();
        if let Some(rest) = msg.strip_prefix("synthesis time: ") {
            if let Some(d) = parse_debug_duration(rest) {
                self.seen.lock().expect("log capture lock").push(d);
            }
        }
    }

    fn flush(&self) {}
}

/// Parses `Duration`'s `Debug` form ("1.5s", "12.3ms", "850µs", "40ns").
pub fn parse_debug_duration(s: &str) -> Option<Duration> {
    let s = s.trim();
    let split = s.find(|c: char| !(c.is_ascii_digit() || c == '.'))?;
    let (num, unit) = s.split_at(split);
    let v: f64 = num.parse().ok()?;
    let secs = match unit {
        "s" => v,
        "ms" => v / 1e3,
        "µs" | "us" => v / 1e6,
        "ns" => v / 1e9,
        _ => return None,
    };
    Some(Duration::from_secs_f64(secs))
}

#[cfg(test)]
mod tests {
    use super::parse_debug_duration;
    use std::time::Duration;

    #[test]
    fn parses_every_debug_unit() {
        for d in [
            Duration::from_nanos(40),
            Duration::from_micros(850),
            Duration::from_micros(12_345),
            Duration::from_millis(1_500),
        ] {
            let back = parse_debug_duration(&format!("{d:?}")).unwrap();
            let diff = back.as_secs_f64() - d.as_secs_f64();
            assert!(
                diff.abs() < 1e-9 + d.as_secs_f64() * 1e-6,
                "{d:?} -> {back:?}"
            );
        }
        assert_eq!(parse_debug_duration("soon"), None);
    }
}
