//! Prometheus text for /metrics and GetMetrics: the scheduler's snapshot, job latencies,
//! and RPC outcomes by method and code.

use cuzk_sched::plugin::DeviceStats;
use cuzk_sched::{JobTimings, MetricsSnapshot};
use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

/// Upper bounds (seconds) of the job-latency histogram: from a small sample circuit on a
/// GPU to a PoRep on a CPU.
const BUCKETS: [f64; 12] = [
    0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0, 1800.0,
];

#[derive(Debug, Default)]
struct Inner {
    rpcs: BTreeMap<(&'static str, &'static str), u64>,
    /// Cumulative counts per bucket, then +Inf.
    latency: [u64; BUCKETS.len() + 1],
    latency_sum: f64,
    phases: [Duration; 6],
}

/// Phase names of `cuzk_job_phase_seconds_total`, in [`Inner::phases`] order.
const PHASES: [&str; 6] = [
    "queue_wait",
    "setup",
    "synthesis",
    "prepare",
    "prove",
    "verify",
];

/// What the daemon counts beyond the scheduler's snapshot.
#[derive(Debug, Default)]
pub struct Counters {
    inner: Mutex<Inner>,
}

impl Counters {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Counts one call of `method` that ended with gRPC code `code`.
    pub fn rpc(&self, method: &'static str, code: tonic::Code) {
        *self
            .lock()
            .rpcs
            .entry((method, code_name(code)))
            .or_default() += 1;
    }

    /// Records a finished job's timings.
    pub fn job(&self, t: &JobTimings) {
        let mut inner = self.lock();
        let secs = t.total.as_secs_f64();
        for (i, bound) in BUCKETS.iter().enumerate() {
            if secs <= *bound {
                inner.latency[i] += 1;
            }
        }
        inner.latency[BUCKETS.len()] += 1;
        inner.latency_sum += secs;
        for (slot, d) in [
            t.queue_wait,
            t.setup,
            t.synthesis,
            t.prepare,
            t.prove,
            t.verify,
        ]
        .into_iter()
        .enumerate()
        {
            inner.phases[slot] += d;
        }
    }

    /// The Prometheus text exposition of `m` and these counters.
    pub fn render(&self, m: &MetricsSnapshot, version: &str) -> String {
        let mut out = String::new();
        let o = &mut out;
        metric(
            o,
            "cuzk_build_info",
            "gauge",
            "Version and backend of this daemon.",
        );
        line(
            o,
            "cuzk_build_info",
            &[("version", version), ("backend", &m.backend)],
            1.0,
        );
        metric(
            o,
            "cuzk_uptime_seconds",
            "gauge",
            "Seconds since the scheduler started.",
        );
        line(o, "cuzk_uptime_seconds", &[], m.uptime.as_secs_f64());

        let j = &m.jobs;
        metric(
            o,
            "cuzk_jobs_total",
            "counter",
            "Jobs by outcome since start.",
        );
        for (outcome, n) in [
            ("submitted", j.submitted),
            ("refused", j.refused),
            ("invalid", j.invalid),
            ("succeeded", j.succeeded),
            ("failed", j.failed),
            ("cancelled", j.cancelled),
        ] {
            line(o, "cuzk_jobs_total", &[("outcome", outcome)], n as f64);
        }
        metric(o, "cuzk_jobs", "gauge", "Unfinished jobs by state.");
        line(o, "cuzk_jobs", &[("state", "queued")], j.queued as f64);
        line(o, "cuzk_jobs", &[("state", "running")], j.running as f64);

        let p = &m.partitions;
        metric(
            o,
            "cuzk_partitions",
            "gauge",
            "Partitions in flight by stage.",
        );
        for (stage, n) in [
            ("synthesizing", p.synthesizing),
            ("ready", p.ready),
            ("proving", p.proving),
        ] {
            line(o, "cuzk_partitions", &[("stage", stage)], n as f64);
        }

        let mem = &m.memory;
        let budget = [("budget", mem.budget.as_str())];
        for (name, help, value) in [
            (
                "cuzk_memory_capacity_bytes",
                "The memory budget's capacity.",
                mem.capacity,
            ),
            (
                "cuzk_memory_used_bytes",
                "Bytes of the budget reserved now.",
                mem.used,
            ),
            (
                "cuzk_memory_high_water_bytes",
                "Most bytes reserved at once.",
                mem.high_water,
            ),
        ] {
            metric(o, name, "gauge", help);
            line(o, name, &budget, value as f64);
        }

        metric(o, "cuzk_lane_busy", "gauge", "1 while the lane is proving.");
        for l in &m.lanes {
            line(
                o,
                "cuzk_lane_busy",
                &[("lane", &l.lane.to_string())],
                f64::from(u8::from(l.busy)),
            );
        }
        metric(
            o,
            "cuzk_lane_busy_seconds_total",
            "counter",
            "Time each lane spent proving and verifying.",
        );
        for l in &m.lanes {
            line(
                o,
                "cuzk_lane_busy_seconds_total",
                &[("lane", &l.lane.to_string())],
                l.busy_time.as_secs_f64(),
            );
        }
        metric(
            o,
            "cuzk_lane_proofs_total",
            "counter",
            "Proofs each lane made.",
        );
        for l in &m.lanes {
            line(
                o,
                "cuzk_lane_proofs_total",
                &[("lane", &l.lane.to_string())],
                l.proofs as f64,
            );
        }
        metric(
            o,
            "cuzk_lane_failures_total",
            "counter",
            "Partitions that failed on each lane.",
        );
        for l in &m.lanes {
            line(
                o,
                "cuzk_lane_failures_total",
                &[("lane", &l.lane.to_string())],
                l.failures as f64,
            );
        }
        metric(
            o,
            "cuzk_lane_utilization",
            "gauge",
            "Busy time over uptime, 0 to 1.",
        );
        for l in &m.lanes {
            line(
                o,
                "cuzk_lane_utilization",
                &[("lane", &l.lane.to_string())],
                l.utilization,
            );
        }

        let s = &m.synthesis;
        for (name, kind, help, value) in [
            (
                "cuzk_synthesis_workers",
                "gauge",
                "Synthesis threads.",
                s.workers as f64,
            ),
            (
                "cuzk_synthesis_busy",
                "gauge",
                "Synthesis threads working now.",
                s.busy as f64,
            ),
            (
                "cuzk_synthesis_busy_seconds_total",
                "counter",
                "Time spent in setup and synthesis.",
                s.busy_time.as_secs_f64(),
            ),
            (
                "cuzk_synthesis_partitions_total",
                "counter",
                "Partitions synthesized.",
                s.partitions as f64,
            ),
            (
                "cuzk_synthesis_utilization",
                "gauge",
                "Busy time over uptime times workers, 0 to 1.",
                s.utilization,
            ),
            (
                "cuzk_setups_cached",
                "gauge",
                "Circuits whose PCE and parameters are loaded.",
                m.setups_cached as f64,
            ),
            (
                "cuzk_setup_bytes",
                "gauge",
                "Host memory budget bytes the cached setups hold (their parameters and PCEs).",
                m.setup_bytes as f64,
            ),
        ] {
            metric(o, name, kind, help);
            line(o, name, &[], value);
        }

        devices(o, m);
        process(o);

        let inner = self.lock();
        metric(
            o,
            "cuzk_job_duration_seconds",
            "histogram",
            "Submission to result, finished jobs with proofs.",
        );
        for (i, bound) in BUCKETS.iter().enumerate() {
            line(
                o,
                "cuzk_job_duration_seconds_bucket",
                &[("le", &bound.to_string())],
                inner.latency[i] as f64,
            );
        }
        let count = inner.latency[BUCKETS.len()] as f64;
        line(
            o,
            "cuzk_job_duration_seconds_bucket",
            &[("le", "+Inf")],
            count,
        );
        line(o, "cuzk_job_duration_seconds_sum", &[], inner.latency_sum);
        line(o, "cuzk_job_duration_seconds_count", &[], count);
        metric(
            o,
            "cuzk_job_phase_seconds_total",
            "counter",
            "Time finished jobs spent per phase, summed over partitions.",
        );
        for (phase, d) in PHASES.iter().zip(inner.phases) {
            line(
                o,
                "cuzk_job_phase_seconds_total",
                &[("phase", phase)],
                d.as_secs_f64(),
            );
        }
        metric(
            o,
            "cuzk_grpc_requests_total",
            "counter",
            "gRPC calls by method and status code.",
        );
        for ((method, code), n) in &inner.rpcs {
            line(
                o,
                "cuzk_grpc_requests_total",
                &[("method", method), ("code", code)],
                *n as f64,
            );
        }
        out
    }
}

/// Per-device figures of a GPU backend (nothing for the CPU backend).
fn devices(o: &mut String, m: &MetricsSnapshot) {
    if m.devices.is_empty() {
        return;
    }
    let label = |d: &DeviceStats| d.ordinal.to_string();
    metric(
        o,
        "cuzk_gpu_info",
        "gauge",
        "A GPU the backend uses: its ordinal, lane-layout index (lanes d<index>w<n>) and name.",
    );
    for d in &m.devices {
        line(
            o,
            "cuzk_gpu_info",
            &[
                ("device", &label(d)),
                ("index", &d.index.to_string()),
                ("name", &d.name),
            ],
            1.0,
        );
    }
    type Get = fn(&DeviceStats) -> f64;
    let per_device: [(&str, &str, &str, Get); 12] = [
        ("cuzk_gpu_proofs_total", "counter", "Proofs made on the GPU.", |d| d.proofs as f64),
        ("cuzk_gpu_failures_total", "counter", "Proofs that failed on the GPU.", |d| d.failures as f64),
        (
            "cuzk_gpu_busy_seconds_total",
            "counter",
            "Kernel time of the GPU's proofs (NTT and MSMs), summed over its lanes; its rate is the GPU busy share (above 1 when lanes overlap).",
            |d| d.busy.as_secs_f64(),
        ),
        (
            "cuzk_gpu_occupied_seconds_total",
            "counter",
            "Wall time with at least one proof on the GPU.",
            |d| d.occupied.as_secs_f64(),
        ),
        (
            "cuzk_gpu_prepare_seconds_total",
            "counter",
            "CPU time preparing partitions for the GPU (a, b, c into pinned memory), summed.",
            |d| d.prepare.as_secs_f64(),
        ),
        ("cuzk_gpu_vram_capacity_bytes", "gauge", "The GPU's VRAM budget.", |d| {
            d.memory.as_ref().map_or(0.0, |m| m.capacity as f64)
        }),
        ("cuzk_gpu_vram_used_bytes", "gauge", "VRAM budget bytes reserved now.", |d| {
            d.memory.as_ref().map_or(0.0, |m| m.used as f64)
        }),
        (
            "cuzk_gpu_vram_high_water_bytes",
            "gauge",
            "Most VRAM budget bytes reserved at once.",
            |d| d.memory.as_ref().map_or(0.0, |m| m.high_water as f64),
        ),
        ("cuzk_gpu_driver_free_bytes", "gauge", "Device memory the driver reports free.", |d| {
            d.driver_free as f64
        }),
        ("cuzk_gpu_driver_total_bytes", "gauge", "Device memory in all.", |d| d.driver_total as f64),
        ("cuzk_gpu_pinned_bytes", "gauge", "Host bytes the GPU's pinned pool holds now.", |d| {
            d.pinned.as_ref().map_or(0.0, |m| m.used as f64)
        }),
        (
            "cuzk_gpu_pinned_capacity_bytes",
            "gauge",
            "The GPU's pinned pool capacity.",
            |d| d.pinned.as_ref().map_or(0.0, |m| m.capacity as f64),
        ),
    ];
    for (name, kind, help, get) in per_device {
        metric(o, name, kind, help);
        for d in &m.devices {
            line(o, name, &[("device", &label(d))], get(d));
        }
    }
    metric(
        o,
        "cuzk_gpu_phase_seconds_total",
        "counter",
        "Time per proof phase on the GPU (eval, scalars, upload, ntt, msm_h, msm_l, msm_a, msm_b_g1, msm_b_g2, assembly, free, prove), summed.",
    );
    for d in &m.devices {
        for (phase, t) in &d.phases {
            line(
                o,
                "cuzk_gpu_phase_seconds_total",
                &[("device", &label(d)), ("phase", phase)],
                t.as_secs_f64(),
            );
        }
    }
    metric(
        o,
        "cuzk_gpu_parameters_bytes",
        "gauge",
        "Parameters placed on a GPU: device bytes (0 when streamed from the host).",
    );
    for d in &m.devices {
        for p in &d.parameters {
            line(
                o,
                "cuzk_gpu_parameters_bytes",
                &[
                    ("device", &label(d)),
                    ("circuit", &p.circuit_key),
                    ("resident", if p.resident { "true" } else { "false" }),
                    ("pinned", if p.pinned { "true" } else { "false" }),
                ],
                p.bytes as f64,
            );
        }
    }
}

/// The daemon process's resident memory now and at its peak, from /proc/self/status.
fn process(o: &mut String) {
    let Ok(status) = std::fs::read_to_string("/proc/self/status") else {
        return;
    };
    let kib = |key: &str| -> Option<f64> {
        let line = status.lines().find(|l| l.starts_with(key))?;
        let value: f64 = line[key.len()..]
            .trim()
            .trim_end_matches("kB")
            .trim()
            .parse()
            .ok()?;
        Some(value * 1024.0)
    };
    for (name, key, help) in [
        (
            "cuzk_process_resident_memory_bytes",
            "VmRSS:",
            "Resident memory of the daemon now.",
        ),
        (
            "cuzk_process_resident_memory_peak_bytes",
            "VmHWM:",
            "The most resident memory of the daemon so far.",
        ),
    ] {
        if let Some(v) = kib(key) {
            metric(o, name, "gauge", help);
            line(o, name, &[], v);
        }
    }
}

fn metric(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
}

fn line(out: &mut String, name: &str, labels: &[(&str, &str)], value: f64) {
    out.push_str(name);
    if !labels.is_empty() {
        out.push('{');
        for (i, (k, v)) in labels.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            let v = v
                .replace('\\', "\\\\")
                .replace('"', "\\\"")
                .replace('\n', "\\n");
            let _ = write!(out, "{k}=\"{v}\"");
        }
        out.push('}');
    }
    let _ = writeln!(out, " {value}");
}

/// The canonical upper-case name of a gRPC code, as other gRPC metrics use it.
fn code_name(code: tonic::Code) -> &'static str {
    use tonic::Code::*;
    match code {
        Ok => "OK",
        Cancelled => "CANCELLED",
        Unknown => "UNKNOWN",
        InvalidArgument => "INVALID_ARGUMENT",
        DeadlineExceeded => "DEADLINE_EXCEEDED",
        NotFound => "NOT_FOUND",
        AlreadyExists => "ALREADY_EXISTS",
        PermissionDenied => "PERMISSION_DENIED",
        ResourceExhausted => "RESOURCE_EXHAUSTED",
        FailedPrecondition => "FAILED_PRECONDITION",
        Aborted => "ABORTED",
        OutOfRange => "OUT_OF_RANGE",
        Unimplemented => "UNIMPLEMENTED",
        Internal => "INTERNAL",
        Unavailable => "UNAVAILABLE",
        DataLoss => "DATA_LOSS",
        Unauthenticated => "UNAUTHENTICATED",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_escaped_and_histograms_cumulative() {
        let mut s = String::new();
        line(&mut s, "m", &[("a", "x\"y")], 2.0);
        assert_eq!(s, "m{a=\"x\\\"y\"} 2\n");
        let c = Counters::default();
        c.job(&JobTimings {
            total: Duration::from_millis(700),
            ..JobTimings::default()
        });
        c.rpc("Prove", tonic::Code::Ok);
        let inner = c.lock();
        assert_eq!(inner.latency[3], 0);
        assert_eq!(inner.latency[4], 1);
        assert_eq!(inner.latency[BUCKETS.len()], 1);
        assert_eq!(inner.rpcs[&("Prove", "OK")], 1);
    }
}
