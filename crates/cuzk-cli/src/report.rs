//! Summaries for `cuzk bench`: percentiles and the tables it prints.

use crate::scrape::GpuUse;
use std::time::Duration;

/// One finished request as bench records it.
#[derive(Debug, Clone, Default)]
pub struct Sample {
    /// Whether it produced proofs.
    pub ok: bool,
    /// Proofs it produced.
    pub proofs: u32,
    /// Submission to answer, seen by the client.
    pub latency: Duration,
    /// The daemon's phase times, milliseconds: queue wait, setup, synthesis, prove,
    /// verify, total.
    pub phases: [u64; 6],
}

/// Phase names, in [`Sample::phases`] order.
pub const PHASES: [&str; 6] = [
    "queue wait",
    "setup",
    "synthesis",
    "prove",
    "verify",
    "total (daemon)",
];

/// The `q`-quantile (0..=1) of `values` by nearest rank; 0 for none.
pub fn percentile(values: &[f64], q: f64) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let rank = (q * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// One concurrency level's result.
#[derive(Debug, Clone)]
pub struct Run {
    /// Requests in flight at once.
    pub concurrency: usize,
    /// Every request's sample.
    pub samples: Vec<Sample>,
    /// First to last answer.
    pub wall: Duration,
    /// What the daemon's metrics said about the level (`None` when they could not be read).
    pub gpu: Option<GpuUse>,
}

impl Run {
    /// Proofs made.
    pub fn proofs(&self) -> u32 {
        self.samples.iter().filter(|s| s.ok).map(|s| s.proofs).sum()
    }

    /// Requests that failed.
    pub fn failed(&self) -> usize {
        self.samples.iter().filter(|s| !s.ok).count()
    }

    /// Wall seconds per proof.
    pub fn secs_per_proof(&self) -> f64 {
        self.wall.as_secs_f64() / f64::from(self.proofs().max(1))
    }

    /// Client latencies of the successful requests, seconds.
    pub fn latencies(&self) -> Vec<f64> {
        self.samples
            .iter()
            .filter(|s| s.ok)
            .map(|s| s.latency.as_secs_f64())
            .collect()
    }

    /// The per-phase table of this run.
    pub fn phase_table(&self) -> String {
        let ok: Vec<&Sample> = self.samples.iter().filter(|s| s.ok).collect();
        let mut out =
            String::from("| phase | mean ms | p50 ms | p95 ms | max ms |\n|---|---|---|---|---|\n");
        let mut row = |name: &str, values: Vec<f64>| {
            let mean = values.iter().sum::<f64>() / values.len().max(1) as f64;
            let max = values.iter().copied().fold(0.0, f64::max);
            out.push_str(&format!(
                "| {name} | {mean:.0} | {:.0} | {:.0} | {max:.0} |\n",
                percentile(&values, 0.5),
                percentile(&values, 0.95)
            ));
        };
        for (i, name) in PHASES.iter().enumerate() {
            row(name, ok.iter().map(|s| s.phases[i] as f64).collect());
        }
        row(
            "latency (client)",
            ok.iter().map(|s| s.latency.as_secs_f64() * 1e3).collect(),
        );
        out
    }

    /// The GPU tables of this run (per device, per phase), empty without GPUs.
    pub fn gpu_tables(&self) -> String {
        let Some(u) = self.gpu.as_ref().filter(|u| u.has_gpus()) else {
            return String::new();
        };
        let mut out = String::from(
            "| device | proofs | kernel time / wall (sum over lanes) | occupied share |\n|---|---|---|---|\n",
        );
        for d in &u.devices {
            out.push_str(&format!(
                "| {} | {:.0} | {:.1}% | {:.1}% |\n",
                d.device,
                d.proofs,
                100.0 * d.busy_share,
                100.0 * d.occupied_share
            ));
        }
        out.push_str("\n| GPU phase | ms per proof |\n|---|---|\n");
        out.push_str(&format!("| prepare (CPU) | {:.1} |\n", u.prepare_ms));
        for (phase, ms) in &u.phases {
            out.push_str(&format!("| {phase} | {ms:.1} |\n"));
        }
        out.push('\n');
        out
    }

    /// One line: throughput and latency percentiles.
    pub fn summary(&self) -> String {
        let l = self.latencies();
        format!(
            "c={}: {} requests, {} proofs, {} failed in {:.2} s: {:.3} s/proof, latency p50 {:.2} s, p95 {:.2} s",
            self.concurrency,
            self.samples.len(),
            self.proofs(),
            self.failed(),
            self.wall.as_secs_f64(),
            self.secs_per_proof(),
            percentile(&l, 0.5),
            percentile(&l, 0.95)
        )
    }
}

/// The table comparing concurrency levels; with kernel time over wall time (summed over a
/// device's lanes, so above 100% when lanes' kernels overlap) and the occupied share (time
/// with at least one proof on the device) per device
/// and the daemon's peak resident memory when its metrics report them.
pub fn sweep_table(runs: &[Run]) -> String {
    let gpus = runs
        .iter()
        .any(|r| r.gpu.as_ref().is_some_and(GpuUse::has_gpus));
    let rss = runs
        .iter()
        .any(|r| r.gpu.as_ref().is_some_and(|u| u.rss_peak.is_some()));
    let mut out =
        String::from("| c | requests | proofs | failed | wall s | s/proof | p50 s | p95 s |");
    let mut rule = String::from("|---|---|---|---|---|---|---|---|");
    if gpus {
        out.push_str(" kernel/wall | GPU occupied |");
        rule.push_str("---|---|");
    }
    if rss {
        out.push_str(" RSS peak GiB |");
        rule.push_str("---|");
    }
    out.push('\n');
    out.push_str(&rule);
    out.push('\n');
    for r in runs {
        let l = r.latencies();
        out.push_str(&format!(
            "| {} | {} | {} | {} | {:.2} | {:.3} | {:.2} | {:.2} |",
            r.concurrency,
            r.samples.len(),
            r.proofs(),
            r.failed(),
            r.wall.as_secs_f64(),
            r.secs_per_proof(),
            percentile(&l, 0.5),
            percentile(&l, 0.95)
        ));
        let u = r.gpu.clone().unwrap_or_default();
        if gpus {
            out.push_str(&format!(" {} | {} |", u.busy_text(), u.occupied_text()));
        }
        if rss {
            match u.rss_peak {
                Some(b) => out.push_str(&format!(" {:.2} |", b / f64::from(1 << 30))),
                None => out.push_str(" - |"),
            }
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_by_nearest_rank() {
        let v: Vec<f64> = (1..=20).map(f64::from).collect();
        assert_eq!(percentile(&v, 0.5), 10.0);
        assert_eq!(percentile(&v, 0.95), 19.0);
        assert_eq!(percentile(&v, 1.0), 20.0);
        assert_eq!(percentile(&[], 0.5), 0.0);
        assert_eq!(percentile(&[3.0], 0.95), 3.0);
    }

    #[test]
    fn runs_summarize() {
        let sample = |ms: u64| Sample {
            ok: true,
            proofs: 2,
            latency: Duration::from_millis(ms),
            phases: [1, 0, 2, 3, 1, 7],
        };
        let run = Run {
            concurrency: 2,
            samples: vec![sample(100), sample(300), Sample::default()],
            wall: Duration::from_secs(2),
            gpu: None,
        };
        assert_eq!(run.proofs(), 4);
        assert_eq!(run.failed(), 1);
        assert_eq!(run.secs_per_proof(), 0.5);
        assert!(run.phase_table().contains("| prove | 3 | 3 | 3 | 3 |"));
        assert!(sweep_table(&[run]).contains("| 2 | 3 | 4 | 1 | 2.00 | 0.500 |"));
    }
}
