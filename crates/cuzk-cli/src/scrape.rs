//! The daemon's Prometheus text (GetMetrics), read into samples, and what `cuzk bench`
//! derives from two readings: GPU busy share per device, per-phase GPU times, and the
//! daemon's resident memory.

use std::collections::BTreeMap;

/// One sample: a metric's name, its labels, its value.
pub type Sample = (String, BTreeMap<String, String>, f64);

/// A reading of the metrics.
#[derive(Debug, Clone, Default)]
pub struct Scrape {
    samples: Vec<Sample>,
}

impl Scrape {
    /// Reads the text exposition format (comments skipped, unparsable lines ignored).
    pub fn parse(text: &str) -> Scrape {
        let samples = text
            .lines()
            .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
            .filter_map(parse_line)
            .collect();
        Scrape { samples }
    }

    /// Every sample of metric `name`.
    pub fn series<'a>(
        &'a self,
        name: &'a str,
    ) -> impl Iterator<Item = (&'a BTreeMap<String, String>, f64)> + 'a {
        self.samples
            .iter()
            .filter(move |(n, _, _)| n == name)
            .map(|(_, l, v)| (l, *v))
    }

    /// The value of `name` with these labels (others may be present).
    pub fn value(&self, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
        self.series(name)
            .find(|(l, _)| {
                labels
                    .iter()
                    .all(|(k, v)| l.get(*k).map(String::as_str) == Some(*v))
            })
            .map(|(_, v)| v)
    }
}

fn parse_line(line: &str) -> Option<Sample> {
    let (head, value) = line.rsplit_once(' ')?;
    let value: f64 = value.trim().parse().ok()?;
    let (name, labels) = match head.split_once('{') {
        None => (head.trim().to_string(), BTreeMap::new()),
        Some((name, rest)) => {
            let body = rest.strip_suffix('}')?;
            (name.to_string(), parse_labels(body)?)
        }
    };
    Some((name, labels, value))
}

/// `k="v",k2="v2"`, with `\"`, `\\` and `\n` escapes in values.
fn parse_labels(body: &str) -> Option<BTreeMap<String, String>> {
    let mut labels = BTreeMap::new();
    let mut chars = body.chars().peekable();
    loop {
        let key: String = chars.by_ref().take_while(|&c| c != '=').collect();
        if key.is_empty() {
            return Some(labels);
        }
        if chars.next()? != '"' {
            return None;
        }
        let mut value = String::new();
        loop {
            match chars.next()? {
                '\\' => match chars.next()? {
                    'n' => value.push('\n'),
                    c => value.push(c),
                },
                '"' => break,
                c => value.push(c),
            }
        }
        labels.insert(key.trim_start_matches(',').to_string(), value);
        if chars.peek() == Some(&',') {
            chars.next();
        }
    }
}

/// One device's use over a bench level.
#[derive(Debug, Clone, PartialEq)]
pub struct DeviceUse {
    /// The device's ordinal.
    pub device: String,
    /// Proofs it made in the level.
    pub proofs: f64,
    /// Kernel time over wall time (above 1 when two lanes' kernels overlapped).
    pub busy_share: f64,
    /// Time with at least one proof on the device over wall time.
    pub occupied_share: f64,
}

/// What the daemon's metrics say about one bench level.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GpuUse {
    /// Per device.
    pub devices: Vec<DeviceUse>,
    /// GPU phase times per proof (ms), all devices together.
    pub phases: Vec<(String, f64)>,
    /// CPU time preparing per proof (ms).
    pub prepare_ms: f64,
    /// The most resident memory the daemon was seen with during the level.
    pub rss_peak: Option<f64>,
}

impl GpuUse {
    /// The differences between `before` and `after`, over `wall_secs`.
    pub fn between(before: &Scrape, after: &Scrape, wall_secs: f64) -> GpuUse {
        let delta = |name: &str, labels: &[(&str, &str)]| {
            after.value(name, labels).unwrap_or(0.0) - before.value(name, labels).unwrap_or(0.0)
        };
        let wall = wall_secs.max(1e-9);
        let mut devices = Vec::new();
        let mut total_proofs = 0.0;
        let mut prepare = 0.0;
        for (labels, _) in after.series("cuzk_gpu_info") {
            let Some(device) = labels.get("device") else {
                continue;
            };
            let l = [("device", device.as_str())];
            let proofs = delta("cuzk_gpu_proofs_total", &l);
            total_proofs += proofs;
            prepare += delta("cuzk_gpu_prepare_seconds_total", &l);
            devices.push(DeviceUse {
                device: device.clone(),
                proofs,
                busy_share: delta("cuzk_gpu_busy_seconds_total", &l) / wall,
                occupied_share: delta("cuzk_gpu_occupied_seconds_total", &l) / wall,
            });
        }
        let mut phases: Vec<(String, f64)> = Vec::new();
        for (labels, v) in after.series("cuzk_gpu_phase_seconds_total") {
            let (Some(device), Some(phase)) = (labels.get("device"), labels.get("phase")) else {
                continue;
            };
            let was = before
                .value(
                    "cuzk_gpu_phase_seconds_total",
                    &[("device", device), ("phase", phase)],
                )
                .unwrap_or(0.0);
            match phases.iter_mut().find(|(p, _)| p == phase) {
                Some((_, sum)) => *sum += v - was,
                None => phases.push((phase.clone(), v - was)),
            }
        }
        let per = |secs: f64| 1e3 * secs / total_proofs.max(1.0);
        GpuUse {
            devices,
            phases: phases.into_iter().map(|(p, s)| (p, per(s))).collect(),
            prepare_ms: per(prepare),
            rss_peak: None,
        }
    }

    /// Whether the daemon reported any GPU.
    pub fn has_gpus(&self) -> bool {
        !self.devices.is_empty()
    }

    /// `0 97%, 1 95%`: busy share per device.
    pub fn busy_text(&self) -> String {
        self.share_text(|d| d.busy_share)
    }

    /// Occupied share per device.
    pub fn occupied_text(&self) -> String {
        self.share_text(|d| d.occupied_share)
    }

    fn share_text(&self, f: fn(&DeviceUse) -> f64) -> String {
        self.devices
            .iter()
            .map(|d| format!("{} {:.0}%", d.device, 100.0 * f(d)))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BEFORE: &str =
        "# HELP x y\ncuzk_gpu_info{device=\"0\",index=\"0\",name=\"NVIDIA H200\"} 1\n\
        cuzk_gpu_proofs_total{device=\"0\"} 10\ncuzk_gpu_busy_seconds_total{device=\"0\"} 5\n\
        cuzk_gpu_occupied_seconds_total{device=\"0\"} 6\n\
        cuzk_gpu_phase_seconds_total{device=\"0\",phase=\"ntt\"} 1\n\
        cuzk_process_resident_memory_bytes 1e9\n";
    const AFTER: &str = "cuzk_gpu_info{device=\"0\",index=\"0\",name=\"NVIDIA H200\"} 1\n\
        cuzk_gpu_proofs_total{device=\"0\"} 14\ncuzk_gpu_busy_seconds_total{device=\"0\"} 7\n\
        cuzk_gpu_occupied_seconds_total{device=\"0\"} 8.2\n\
        cuzk_gpu_phase_seconds_total{device=\"0\",phase=\"ntt\"} 1.4\n\
        cuzk_gpu_phase_seconds_total{device=\"0\",phase=\"msm_h\"} 0.8\n";

    #[test]
    fn readings_parse_and_differences_give_shares() {
        let before = Scrape::parse(BEFORE);
        assert_eq!(
            before.value("cuzk_gpu_info", &[("name", "NVIDIA H200")]),
            Some(1.0)
        );
        assert_eq!(
            before.value("cuzk_process_resident_memory_bytes", &[]),
            Some(1e9)
        );
        let after = Scrape::parse(AFTER);
        let u = GpuUse::between(&before, &after, 2.5);
        assert_eq!(u.devices.len(), 1);
        assert_eq!(u.devices[0].proofs, 4.0);
        assert!((u.devices[0].busy_share - 0.8).abs() < 1e-9);
        assert!((u.devices[0].occupied_share - 0.88).abs() < 1e-9);
        assert_eq!(u.busy_text(), "0 80%");
        let ntt = u.phases.iter().find(|(p, _)| p == "ntt").unwrap().1;
        assert!((ntt - 100.0).abs() < 1e-6, "{ntt}");
        assert!(!GpuUse::between(&Scrape::default(), &Scrape::default(), 1.0).has_gpus());
        let odd = Scrape::parse("m{a=\"x\\\"y\",b=\"\"} 2\nbroken line\n");
        assert_eq!(odd.value("m", &[("a", "x\"y"), ("b", "")]), Some(2.0));
    }
}
