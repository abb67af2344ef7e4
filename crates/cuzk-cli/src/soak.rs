//! `cuzk soak`: a long mixed run against one daemon that checks that nothing is lost and
//! that memory stays flat. Sends a seeded mix of sha256 and synthetic-porep proofs (and, when
//! given the 2KiB Filecoin inputs `cuzk-bench soak-c1 make` writes, a small share of PoRep C2,
//! WinningPoSt, WindowPoSt and SnapDeals proofs, each request shaped as Curio sends it),
//! cancels some jobs while queued or running, sends some invalid requests that must be
//! refused with INVALID_ARGUMENT, verifies every proof here (the Filecoin ones: the daemon's
//! `verified` here, the proofs kept for filecoin-proofs' verifiers, `cuzk-bench soak-c1
//! verify`, after the run), and samples the daemon's resident memory and the GPUs' used
//! memory every N jobs.
//!
//! The jobs go in batches of `--sample-every`; at the end of each batch the driver waits for
//! the batch's jobs to finish and then samples, so each sample sees what the daemon retains
//! between jobs, not the working sets of the jobs in flight (a background sampler records
//! the live peaks, reported but not checked). Memory counts as flat when, over the samples
//! after the warm-up (the first `--warmup` jobs, which see every kind of job and so every
//! circuit's parameters and pools), neither the floor (the lowest sample of the last third
//! against the first sample) nor the envelope (the highest sample of the last third against
//! the highest of the first third) rose by more than the allowed growth (`--rss-growth-mib`,
//! `--vram-growth-mib`). Single samples may swing by the buffers a daemon keeps for the last
//! job's size; a leak lifts the floor and the envelope alike.

use crate::client::{parse_duration, Client, Target};
use crate::scrape::Scrape;
use anyhow::{bail, ensure, Context, Result};
use clap::Args;
use cuzk_proto::{
    await_proof_response::Status as JobStatus, AwaitProofRequest, AwaitProofResponse,
    CancelProofRequest, GetMetricsRequest, GetStatusRequest, Priority, ProofKind, ProveRequest,
    SubmitProofRequest,
};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use tonic::Code;

/// A proof's size in bellperson's encoding.
const PROOF_BYTES: usize = 192;
/// filecoin-proofs-api's StackedDrg2KiBV1_1, as Curio numbers it.
const POREP_2KIB_V1_1: u64 = 5;
const SECTOR_2KIB: u64 = 2048;
/// Preimage lengths of the sha256 jobs: each length is its own circuit (and parameters), so
/// a few fixed ones, all seen during warm-up.
const SHA_LENGTHS: [usize; 3] = [3, 64, 200];

/// `cuzk soak` options.
#[derive(Args, Debug)]
pub struct SoakArgs {
    /// Jobs to run, all kinds together.
    #[arg(short = 'j', long, default_value_t = 1000)]
    pub jobs: usize,
    /// Jobs in flight at once.
    #[arg(short = 'c', long, default_value_t = 12)]
    pub concurrency: usize,
    /// Jobs per batch: memory is sampled after each.
    #[arg(long, default_value_t = 50)]
    pub sample_every: usize,
    /// Jobs before the memory baseline (the first sample at or after this many jobs).
    #[arg(long, default_value_t = 200)]
    pub warmup: usize,
    /// Most growth of the daemon's resident memory allowed after warm-up, MiB.
    #[arg(long, default_value_t = 256)]
    pub rss_growth_mib: u64,
    /// Most growth of the GPUs' used memory allowed after warm-up, MiB.
    #[arg(long, default_value_t = 256)]
    pub vram_growth_mib: u64,
    /// The daemon's process id, for its VmRSS in /proc (else the daemon's own
    /// cuzk_process_resident_memory_bytes metric).
    #[arg(long)]
    pub daemon_pid: Option<u32>,
    /// synthetic-porep sizes, log2 of the constraint count, smallest first; smaller sizes
    /// get more of the jobs.
    #[arg(long, value_delimiter = ',', default_value = "16,18,20,22")]
    pub sizes: Vec<u32>,
    /// Share of jobs that are sha256 proofs.
    #[arg(long, default_value_t = 0.25)]
    pub sha_share: f64,
    /// Share of jobs that are cancelled (queued or running).
    #[arg(long, default_value_t = 0.06)]
    pub cancel_share: f64,
    /// Share of jobs that are invalid requests, expected to be refused.
    #[arg(long, default_value_t = 0.04)]
    pub refuse_share: f64,
    /// The folder `cuzk-bench soak-c1 make` wrote (filecoin.toml and the files it names):
    /// adds 2KiB PoRep C2, WinningPoSt, WindowPoSt (one partition) and SnapDeals jobs.
    #[arg(long)]
    pub filecoin_dir: Option<PathBuf>,
    /// A 2KiB PoRep C1 output (filecoin-proofs-api JSON, bare or in Curio's envelope): adds
    /// PoRep C2 jobs of that sector (in place of --filecoin-dir's).
    #[arg(long)]
    pub porep_c1: Option<PathBuf>,
    /// Share of jobs that are PoRep C2 proofs (with Filecoin inputs).
    #[arg(long, default_value_t = 0.03)]
    pub porep_share: f64,
    /// Share of jobs that are WinningPoSt proofs (with --filecoin-dir).
    #[arg(long, default_value_t = 0.01)]
    pub winning_share: f64,
    /// Share of jobs that are WindowPoSt partition proofs (with --filecoin-dir).
    #[arg(long, default_value_t = 0.01)]
    pub window_share: f64,
    /// Share of jobs that are SnapDeals proofs (with --filecoin-dir).
    #[arg(long, default_value_t = 0.01)]
    pub snap_share: f64,
    /// The sector number of --porep-c1.
    #[arg(long, default_value_t = 1)]
    pub porep_sector: u64,
    /// The miner id of --porep-c1.
    #[arg(long, default_value_t = 1000)]
    pub porep_miner: u64,
    /// Folder for the Filecoin proofs (porep-<job>.bin, winning-<job>-r<k>.bin,
    /// window-<job>-r<k>.bin, snap-<job>.bin; k: the randomness' position in filecoin.toml),
    /// for filecoin-proofs' verifiers afterwards (the daemon's own check is in `verified`);
    /// needed with Filecoin inputs. Proof files of an earlier run in it are removed.
    #[arg(long)]
    pub proof_dir: Option<PathBuf>,
    /// The CSV file of the samples.
    #[arg(long)]
    pub csv: Option<PathBuf>,
    /// Seed of the job mix.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// A job not finished this long after submission counts as lost.
    #[arg(long, default_value = "300s", value_parser = parse_duration)]
    pub job_timeout: Duration,
    /// The whole run must end within this; no new batch starts after it.
    #[arg(long, default_value = "480s", value_parser = parse_duration)]
    pub time_limit: Duration,
}

/// What a job is and what it must end as.
#[derive(Clone, Debug)]
enum Plan {
    /// Completed and verified, here too (`via_prove`: through Prove, else SubmitProof and
    /// AwaitProof).
    Prove { via_prove: bool },
    /// CancelProof after `delay` (zero: at once, while queued); cancelled, or completed and
    /// verified when the cancel came too late.
    Cancel { delay: Duration },
    /// Refused at submission with INVALID_ARGUMENT.
    Refuse { why: &'static str },
}

#[derive(Clone, Debug)]
struct Job {
    index: usize,
    /// Kind label for the tables.
    kind: String,
    submit: SubmitProofRequest,
    plan: Plan,
    /// A Filecoin proof (verified by the daemon here; its proof kept for filecoin-proofs).
    filecoin: Option<Fc>,
}

/// A Filecoin job's proof, for filecoin-proofs' verifiers after the run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fc {
    Porep,
    /// The randomness' position in the inputs.
    Winning(usize),
    Window(usize),
    Snap,
}

impl Fc {
    /// The proof's file name (`cuzk-bench soak-c1 verify` reads what it is from it).
    fn file(self, job: usize) -> String {
        match self {
            Fc::Porep => format!("porep-{job}.bin"),
            Fc::Winning(k) => format!("winning-{job}-r{k}.bin"),
            Fc::Window(k) => format!("window-{job}-r{k}.bin"),
            Fc::Snap => format!("snap-{job}.bin"),
        }
    }

    fn label(self) -> &'static str {
        match self {
            Fc::Porep => "PoRep C2",
            Fc::Winning(_) => "WinningPoSt",
            Fc::Window(_) => "WindowPoSt",
            Fc::Snap => "SnapDeals",
        }
    }
}

/// How a job ended.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Outcome {
    Verified,
    Cancelled {
        was_running: bool,
    },
    /// A cancel target that finished before the cancel (verified).
    CompletedBeforeCancel,
    Refused,
    /// Anything not expected: counts as lost.
    Unexpected(String),
}

#[derive(Debug)]
struct Done {
    job: Job,
    outcome: Outcome,
    latency: Duration,
}

/// One memory sample.
#[derive(Clone, Debug, Default)]
struct Sample {
    jobs_done: usize,
    elapsed_s: f64,
    rss_mib: Option<f64>,
    vram_smi_mib: Option<f64>,
    vram_status_mib: Option<f64>,
    /// Host bytes the GPUs' pinned pools hold (`cuzk_gpu_pinned_bytes`), MiB: part of RSS,
    /// bounded by the pools' capacity.
    pinned_mib: Option<f64>,
    completed: usize,
    cancelled: usize,
    refused: usize,
    lost: usize,
}

impl Sample {
    /// VRAM as the checks read it: nvidia-smi where it answers, else the daemon's view.
    fn vram(&self) -> Option<f64> {
        self.vram_smi_mib.or(self.vram_status_mib)
    }
}

/// A tiny seeded generator (splitmix64): the mix must be reproducible from `--seed`.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    /// Uniform in [0, 1).
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
}

/// The job mix, fixed before the run from the seed.
struct Mix {
    args: Mix0,
    fc: Filecoin,
}

/// The parts of the arguments the mix reads.
struct Mix0 {
    sizes: Vec<u32>,
    sha_share: f64,
    cancel_share: f64,
    refuse_share: f64,
    porep_share: f64,
    winning_share: f64,
    window_share: f64,
    snap_share: f64,
}

/// The 2KiB Filecoin inputs: what Curio sends for the sectors `cuzk-bench soak-c1 make`
/// sealed.
#[derive(Debug, Default)]
struct Filecoin {
    miner: u64,
    sector_size: u64,
    porep: Option<PorepIn>,
    winning: Option<PostIn>,
    window: Option<PostIn>,
    snap: Option<SnapIn>,
}

#[derive(Debug)]
struct PorepIn {
    registered_proof: u64,
    sector: u64,
    c1: Arc<Vec<u8>>,
}

#[derive(Debug)]
struct PostIn {
    registered_proof: u64,
    partition: u32,
    randomness: Vec<[u8; 32]>,
    /// Per randomness, one bincode FallbackPoStSectorProof per sector.
    vanilla: Vec<Vec<Vec<u8>>>,
}

#[derive(Debug)]
struct SnapIn {
    registered_proof: u64,
    sector: u64,
    comm_r_old: [u8; 32],
    comm_r_new: [u8; 32],
    comm_d_new: [u8; 32],
    /// One bincode PartitionProof per partition.
    vanilla: Vec<Vec<u8>>,
}

/// `filecoin.toml` as `cuzk-bench soak-c1 make` writes it (the fields the soak reads).
#[derive(Deserialize)]
struct Manifest {
    miner: u64,
    sector_size: u64,
    porep: ManifestPorep,
    winning: ManifestPost,
    window: ManifestPost,
    snap: ManifestSnap,
}

#[derive(Deserialize)]
struct ManifestPorep {
    registered_proof: u64,
    sector: u64,
    c1: String,
}

#[derive(Deserialize)]
struct ManifestPost {
    registered_proof: u64,
    partition: u32,
    randomness: Vec<String>,
    vanilla: Vec<Vec<String>>,
}

#[derive(Deserialize)]
struct ManifestSnap {
    registered_proof: u64,
    sector: u64,
    comm_r_old: String,
    comm_r_new: String,
    comm_d_new: String,
    vanilla: Vec<String>,
}

/// 32 bytes from lowercase or uppercase hex.
fn hex32(what: &str, s: &str) -> Result<[u8; 32]> {
    crate::request::decode_hex(s)
        .ok()
        .and_then(|b| <[u8; 32]>::try_from(b).ok())
        .with_context(|| format!("{what}: {s:?} is not 32 bytes of hex"))
}

impl Filecoin {
    /// Reads the inputs in `dir` (its filecoin.toml and the files it names).
    fn load(dir: &Path) -> Result<Self> {
        let path = dir.join("filecoin.toml");
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("reading {}", path.display()))?;
        let m: Manifest =
            toml::from_str(&text).with_context(|| format!("reading {}", path.display()))?;
        let read = |name: &str| {
            let p = dir.join(name);
            std::fs::read(&p).with_context(|| format!("reading {}", p.display()))
        };
        let post = |p: &ManifestPost, what: &str| -> Result<PostIn> {
            ensure!(
                !p.randomness.is_empty() && p.randomness.len() == p.vanilla.len(),
                "{}: {what} needs one vanilla set per randomness",
                path.display()
            );
            Ok(PostIn {
                registered_proof: p.registered_proof,
                partition: p.partition,
                randomness: p
                    .randomness
                    .iter()
                    .map(|r| hex32("randomness", r))
                    .collect::<Result<_>>()?,
                vanilla: p
                    .vanilla
                    .iter()
                    .map(|set| set.iter().map(|n| read(n)).collect::<Result<_>>())
                    .collect::<Result<_>>()?,
            })
        };
        Ok(Filecoin {
            miner: m.miner,
            sector_size: m.sector_size,
            porep: Some(PorepIn {
                registered_proof: m.porep.registered_proof,
                sector: m.porep.sector,
                c1: Arc::new(read(&m.porep.c1)?),
            }),
            winning: Some(post(&m.winning, "winning")?),
            window: Some(post(&m.window, "window")?),
            snap: Some(SnapIn {
                registered_proof: m.snap.registered_proof,
                sector: m.snap.sector,
                comm_r_old: hex32("comm_r_old", &m.snap.comm_r_old)?,
                comm_r_new: hex32("comm_r_new", &m.snap.comm_r_new)?,
                comm_d_new: hex32("comm_d_new", &m.snap.comm_d_new)?,
                vanilla: m
                    .snap
                    .vanilla
                    .iter()
                    .map(|n| read(n))
                    .collect::<Result<_>>()?,
            }),
        })
    }

    fn any(&self) -> bool {
        self.porep.is_some()
            || self.winning.is_some()
            || self.window.is_some()
            || self.snap.is_some()
    }
}

/// Go's `fmt.Sprintf("%d", b)` of a byte slice: `[1 2 3]`.
fn go_bytes_d(bytes: &[u8]) -> String {
    let items: Vec<String> = bytes.iter().map(u8::to_string).collect();
    format!("[{}]", items.join(" "))
}

/// Go's `fmt.Sprintf("%x", b)` of a byte slice.
fn go_bytes_x(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Draw state of the mix: which refusal and which PoSt randomness come next.
#[derive(Debug, Default)]
struct Turns {
    refusals: usize,
    winning: usize,
    window: usize,
}

/// The invalid requests, in turn.
const REFUSALS: [&str; 8] = [
    "unknown circuit",
    "log2_constraints out of range",
    "log2_constraints and num_constraints",
    "zero partitions",
    "unknown field",
    "sha256 with a field",
    "no circuit, no proof kind",
    "proof kind and circuit",
];

impl Mix {
    fn synthetic(&self, rng: &mut Rng, log2: u32, partitions: u64) -> SubmitProofRequest {
        let mut r = SubmitProofRequest {
            circuit: "synthetic-porep".into(),
            ..SubmitProofRequest::default()
        };
        r.circuit_fields
            .insert("log2_constraints".into(), log2.into());
        r.circuit_fields.insert("seed".into(), rng.next() >> 1);
        if partitions > 1 {
            r.circuit_fields.insert("partitions".into(), partitions);
        }
        r
    }

    /// A size: weights 8, 4, 2, 1, … from the smallest.
    fn size(&self, rng: &mut Rng) -> u32 {
        let n = self.args.sizes.len();
        let total: u64 = (0..n).map(|i| 1u64 << (n - 1 - i)).sum();
        let mut pick = rng.next() % total.max(1);
        for (i, &s) in self.args.sizes.iter().enumerate() {
            let w = 1u64 << (n - 1 - i);
            if pick < w {
                return s;
            }
            pick -= w;
        }
        self.args.sizes[0]
    }

    fn sha(&self, rng: &mut Rng, len: usize) -> SubmitProofRequest {
        SubmitProofRequest {
            circuit: "sha256".into(),
            circuit_inputs: rng.bytes(len),
            ..SubmitProofRequest::default()
        }
    }

    fn porep(&self) -> Option<SubmitProofRequest> {
        let p = self.fc.porep.as_ref()?;
        Some(SubmitProofRequest {
            proof_kind: ProofKind::PorepSealCommit.into(),
            vanilla_proof: p.c1.to_vec(),
            sector_size: self.fc.sector_size,
            registered_proof: p.registered_proof,
            sector_number: p.sector,
            miner_id: self.fc.miner,
            ..SubmitProofRequest::default()
        })
    }

    /// `WinningPoStCuzk`'s request for randomness `k`: `winpost-<miner>-<hex of r[:8]>`,
    /// CRITICAL.
    fn winning(&self, k: usize) -> Option<SubmitProofRequest> {
        let p = self.fc.winning.as_ref()?;
        let r = &p.randomness[k];
        Some(SubmitProofRequest {
            request_id: format!("winpost-{}-{}", self.fc.miner, go_bytes_x(&r[..8])),
            proof_kind: ProofKind::WinningPost.into(),
            sector_size: self.fc.sector_size,
            registered_proof: p.registered_proof,
            priority: Priority::Critical.into(),
            vanilla_proofs: p.vanilla[k].clone(),
            miner_id: self.fc.miner,
            randomness: r.to_vec(),
            ..SubmitProofRequest::default()
        })
    }

    /// `WindowPoStCuzk`'s request of one partition for randomness `k`:
    /// `wdpost-<miner>-<partition>-[r0 … r7]`, HIGH.
    fn window(&self, k: usize) -> Option<SubmitProofRequest> {
        let p = self.fc.window.as_ref()?;
        let r = &p.randomness[k];
        Some(SubmitProofRequest {
            request_id: format!(
                "wdpost-{}-{}-{}",
                self.fc.miner,
                p.partition,
                go_bytes_d(&r[..8])
            ),
            proof_kind: ProofKind::WindowPostPartition.into(),
            sector_size: self.fc.sector_size,
            registered_proof: p.registered_proof,
            priority: Priority::High.into(),
            vanilla_proofs: p.vanilla[k].clone(),
            miner_id: self.fc.miner,
            randomness: r.to_vec(),
            partition_index: p.partition,
            ..SubmitProofRequest::default()
        })
    }

    /// `ProveUpdateCuzk`'s request (`snap-<miner>-<sector>`, NORMAL, raw commitments), or with
    /// `task` proofshare's `computeSnap` (`ps-snap-<miner>-<sector>-<task>`, no sector size).
    fn snap(&self, task: Option<usize>) -> Option<SubmitProofRequest> {
        let p = self.fc.snap.as_ref()?;
        let miner = self.fc.miner;
        let (request_id, sector_size) = match task {
            None => (format!("snap-{miner}-{}", p.sector), self.fc.sector_size),
            Some(t) => (format!("ps-snap-{miner}-{}-{t}", p.sector), 0),
        };
        Some(SubmitProofRequest {
            request_id,
            proof_kind: ProofKind::SnapDealsUpdate.into(),
            sector_size,
            registered_proof: p.registered_proof,
            priority: Priority::Normal.into(),
            vanilla_proofs: p.vanilla.clone(),
            sector_number: p.sector,
            miner_id: miner,
            comm_r_old: p.comm_r_old.to_vec(),
            comm_r_new: p.comm_r_new.to_vec(),
            comm_d_new: p.comm_d_new.to_vec(),
            ..SubmitProofRequest::default()
        })
    }

    fn refusal(&self, k: usize) -> (&'static str, SubmitProofRequest) {
        let why = REFUSALS[k % REFUSALS.len()];
        let mut r = SubmitProofRequest {
            circuit: "synthetic-porep".into(),
            ..SubmitProofRequest::default()
        };
        let f = &mut r.circuit_fields;
        match why {
            "unknown circuit" => {
                r.circuit = "no-such-circuit".into();
            }
            "log2_constraints out of range" => {
                f.insert("log2_constraints".into(), 40);
            }
            "log2_constraints and num_constraints" => {
                f.insert("log2_constraints".into(), 10);
                f.insert("num_constraints".into(), 1000);
            }
            "zero partitions" => {
                f.insert("log2_constraints".into(), 10);
                f.insert("partitions".into(), 0);
            }
            "unknown field" => {
                f.insert("log2_constraints".into(), 10);
                f.insert("no_such_field".into(), 1);
            }
            "sha256 with a field" => {
                r.circuit = "sha256".into();
                r.circuit_inputs = b"abc".to_vec();
                f.insert("seed".into(), 1);
            }
            "no circuit, no proof kind" => {
                r.circuit.clear();
            }
            _ => {
                f.insert("log2_constraints".into(), 10);
                r.proof_kind = ProofKind::WinningPost.into();
            }
        }
        (why, r)
    }

    /// Job `index`, drawn from the generator; the first jobs are one of each kind, so that
    /// the warm-up sees every circuit.
    fn job(&self, index: usize, rng: &mut Rng, turns: &mut Turns) -> Job {
        let largest = *self.args.sizes.last().unwrap_or(&16);
        let mut opening: Vec<&str> = vec!["sha0", "sha1", "sha2"];
        opening.extend(std::iter::repeat_n("size", self.args.sizes.len()));
        opening.extend(["two-partitions", "largest", "largest", "cancel", "refuse"]);
        if self.fc.porep.is_some() {
            opening.extend(["porep", "porep-bad"]);
        }
        if self.fc.winning.is_some() {
            opening.push("winning");
        }
        if self.fc.window.is_some() {
            opening.extend(["window", "window-bad"]);
        }
        if self.fc.snap.is_some() {
            opening.extend(["snap-curio", "snap-bad"]);
        }
        let via_prove = rng.below(3) == 0;
        let proving = |kind: String, submit, filecoin| Job {
            index,
            kind,
            submit,
            plan: Plan::Prove { via_prove },
            filecoin,
        };
        let refused = |submit, why| Job {
            index,
            kind: "refused".into(),
            submit,
            plan: Plan::Refuse { why },
            filecoin: None,
        };
        let synthetic_kind = |log2: u32, parts: u64| {
            if parts > 1 {
                format!("synthetic-porep 2^{log2} x{parts}")
            } else {
                format!("synthetic-porep 2^{log2}")
            }
        };
        let pick = match opening.get(index) {
            Some(&kind) => kind,
            None => {
                let a = &self.args;
                let share = |on: bool, s: f64| if on { s } else { 0.0 };
                let draws = [
                    ("refuse", a.refuse_share),
                    ("cancel", a.cancel_share),
                    ("porep", share(self.fc.porep.is_some(), a.porep_share)),
                    ("winning", share(self.fc.winning.is_some(), a.winning_share)),
                    ("window", share(self.fc.window.is_some(), a.window_share)),
                    ("snap", share(self.fc.snap.is_some(), a.snap_share)),
                    ("sha", a.sha_share),
                ];
                let mut u = rng.unit();
                let mut pick = None;
                for (kind, share) in draws {
                    if u < share {
                        pick = Some(kind);
                        break;
                    }
                    u -= share;
                }
                match pick {
                    Some(kind) => kind,
                    None if rng.below(10) == 0 => "two-partitions",
                    None => "random-size",
                }
            }
        };
        // Successive PoSt jobs take the inputs' randomness values in turn (Curio's request
        // ids differ by randomness; a repeat after all of them is a retry of a done request).
        let next = |turn: &mut usize, n: usize| {
            let k = *turn % n.max(1);
            *turn += 1;
            k
        };
        match pick {
            "sha0" | "sha1" | "sha2" | "sha" => {
                let len = match pick {
                    "sha0" => SHA_LENGTHS[0],
                    "sha1" => SHA_LENGTHS[1],
                    "sha2" => SHA_LENGTHS[2],
                    _ => SHA_LENGTHS[rng.below(SHA_LENGTHS.len())],
                };
                proving(format!("sha256 {len}B"), self.sha(rng, len), None)
            }
            "size" => {
                let log2 = self.args.sizes[index - 3];
                proving(synthetic_kind(log2, 1), self.synthetic(rng, log2, 1), None)
            }
            "largest" => proving(
                synthetic_kind(largest, 1),
                self.synthetic(rng, largest, 1),
                None,
            ),
            "random-size" => {
                let log2 = self.size(rng);
                proving(synthetic_kind(log2, 1), self.synthetic(rng, log2, 1), None)
            }
            "two-partitions" => {
                // Two partitions of one of the smaller sizes.
                let log2 = self.args.sizes[rng.below(self.args.sizes.len().div_ceil(2))];
                proving(synthetic_kind(log2, 2), self.synthetic(rng, log2, 2), None)
            }
            "porep" => proving(
                "porep-c2 2KiB".into(),
                self.porep().expect("PoRep jobs only with a C1 output"),
                Some(Fc::Porep),
            ),
            "porep-bad" => {
                let mut r = self.porep().expect("with a C1 output");
                r.vanilla_proof.truncate(r.vanilla_proof.len() / 2);
                refused(r, "truncated C1 output")
            }
            "winning" => {
                let n = self.fc.winning.as_ref().map_or(1, |p| p.randomness.len());
                let k = next(&mut turns.winning, n);
                proving(
                    "winning-post 2KiB".into(),
                    self.winning(k).expect("with PoSt inputs"),
                    Some(Fc::Winning(k)),
                )
            }
            "window" => {
                let n = self.fc.window.as_ref().map_or(1, |p| p.randomness.len());
                let k = next(&mut turns.window, n);
                proving(
                    "window-post 2KiB".into(),
                    self.window(k).expect("with PoSt inputs"),
                    Some(Fc::Window(k)),
                )
            }
            "window-bad" => {
                // The last randomness' request with its first vanilla proof cut short.
                let n = self.fc.window.as_ref().map_or(1, |p| p.randomness.len());
                let mut r = self.window(n - 1).expect("with PoSt inputs");
                if let Some(v) = r.vanilla_proofs.first_mut() {
                    v.truncate(v.len().saturating_sub(7));
                }
                refused(r, "WindowPoSt vanilla proof cut short")
            }
            "snap-curio" => proving(
                "snap-deals 2KiB".into(),
                self.snap(None).expect("with SnapDeals inputs"),
                Some(Fc::Snap),
            ),
            "snap" => proving(
                "snap-deals 2KiB".into(),
                // proofshare's request, a task of its own each time.
                self.snap(Some(index)).expect("with SnapDeals inputs"),
                Some(Fc::Snap),
            ),
            "snap-bad" => {
                // Valid commitments, not the ones the vanilla proofs open.
                let mut r = self.snap(Some(index)).expect("with SnapDeals inputs");
                r.comm_d_new = r.comm_r_new.clone();
                refused(r, "SnapDeals comm_d_new not the vanilla proofs'")
            }
            "cancel" => {
                // The two largest sizes, so that a delayed cancel finds the job running;
                // a third of them cancelled at once, while queued.
                let n = self.args.sizes.len();
                let log2 = self.args.sizes[n.saturating_sub(1 + rng.below(2.min(n)))];
                let delay = if rng.below(3) == 0 {
                    Duration::ZERO
                } else {
                    Duration::from_millis(20 + rng.below(300) as u64)
                };
                Job {
                    index,
                    kind: "cancelled".into(),
                    submit: self.synthetic(rng, log2, 1),
                    plan: Plan::Cancel { delay },
                    filecoin: None,
                }
            }
            _ => {
                let (why, submit) = self.refusal(turns.refusals);
                turns.refusals += 1;
                refused(submit, why)
            }
        }
    }
}

/// Runs the soak; fails when a job is lost, a proof does not verify, or memory grows.
pub async fn run(target: &Target, args: &SoakArgs) -> Result<()> {
    ensure!(args.jobs > 0, "--jobs must be at least 1");
    ensure!(args.concurrency > 0, "--concurrency must be at least 1");
    ensure!(args.sample_every > 0, "--sample-every must be at least 1");
    ensure!(!args.sizes.is_empty(), "--sizes needs at least one size");
    ensure!(
        args.sizes.iter().all(|&s| (1..=27).contains(&s)),
        "--sizes are log2 constraint counts from 1 to 27"
    );
    let mut fc = match &args.filecoin_dir {
        Some(dir) => Filecoin::load(dir)?,
        None => Filecoin {
            miner: args.porep_miner,
            sector_size: SECTOR_2KIB,
            ..Filecoin::default()
        },
    };
    if let Some(path) = &args.porep_c1 {
        fc.porep = Some(PorepIn {
            registered_proof: POREP_2KIB_V1_1,
            sector: args.porep_sector,
            c1: Arc::new(
                std::fs::read(path).with_context(|| format!("reading {}", path.display()))?,
            ),
        });
        if args.filecoin_dir.is_none() {
            fc.miner = args.porep_miner;
        }
    }
    if fc.any() {
        let dir = args.proof_dir.as_ref().context(
            "--proof-dir is needed with Filecoin inputs: their proofs are checked afterwards with filecoin-proofs (cuzk-bench soak-c1 verify)",
        )?;
        clear_proofs(dir)?;
    } else if let Some(dir) = &args.proof_dir {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let mix = Mix {
        args: Mix0 {
            sizes: args.sizes.clone(),
            sha_share: args.sha_share,
            cancel_share: args.cancel_share,
            refuse_share: args.refuse_share,
            porep_share: args.porep_share,
            winning_share: args.winning_share,
            window_share: args.window_share,
            snap_share: args.snap_share,
        },
        fc,
    };
    let mut rng = Rng(args.seed);
    let mut turns = Turns::default();
    let jobs: Vec<Job> = (0..args.jobs)
        .map(|i| mix.job(i, &mut rng, &mut turns))
        .collect();

    let client = target.client().await?;
    let status = client
        .clone()
        .get_status(GetStatusRequest {})
        .await
        .context("GetStatus")?
        .into_inner();
    eprintln!(
        "soak: {} jobs, {} in flight, against {} ({} backend, {} lane(s)); samples every {} jobs, warm-up {} jobs",
        args.jobs, args.concurrency, target.uri, status.backend, status.lanes, args.sample_every, args.warmup
    );
    let probe = Probe {
        client: client.clone(),
        pid: args.daemon_pid,
    };

    // Live peaks between the samples, for the summary.
    let peaks = Arc::new(Mutex::new((0.0f64, 0.0f64)));
    let stop = Arc::new(AtomicBool::new(false));
    let sampler = tokio::spawn({
        let (probe, peaks, stop) = (probe.clone(), Arc::clone(&peaks), Arc::clone(&stop));
        async move {
            while !stop.load(Ordering::Relaxed) {
                let s = probe.sample().await;
                {
                    let mut p = peaks.lock().expect("not poisoned");
                    p.0 = p.0.max(s.rss_mib.unwrap_or(0.0));
                    p.1 = p.1.max(s.vram().unwrap_or(0.0));
                }
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
        }
    });

    let started = Instant::now();
    let gate = Arc::new(Semaphore::new(args.concurrency));
    let mut done: Vec<Done> = Vec::with_capacity(jobs.len());
    let mut samples = vec![probe.sample_at(0, started, &done).await];
    print_sample_header();
    print_sample(&samples[0]);
    let mut out_of_time = false;
    for batch in jobs.chunks(args.sample_every) {
        if started.elapsed() > args.time_limit {
            out_of_time = true;
            break;
        }
        let mut set = JoinSet::new();
        for job in batch {
            let permit = Arc::clone(&gate)
                .acquire_owned()
                .await
                .expect("never closed");
            let (client, job, timeout, dir) = (
                client.clone(),
                job.clone(),
                args.job_timeout,
                args.proof_dir.clone(),
            );
            set.spawn(async move {
                let t = Instant::now();
                let outcome = one(client, &job, timeout, dir.as_ref()).await;
                drop(permit);
                Done {
                    job,
                    outcome,
                    latency: t.elapsed(),
                }
            });
        }
        while let Some(d) = set.join_next().await {
            match d {
                Ok(d) => {
                    if let Outcome::Unexpected(why) = &d.outcome {
                        eprintln!("soak: job {} ({}) LOST: {why}", d.job.index, d.job.kind);
                    }
                    done.push(d);
                }
                Err(e) => bail!("a job's task failed: {e}"),
            }
        }
        let s = probe.sample_at(done.len(), started, &done).await;
        print_sample(&s);
        samples.push(s);
    }
    let wall = started.elapsed();
    stop.store(true, Ordering::Relaxed);
    let _ = sampler.await;
    let after = client
        .clone()
        .get_status(GetStatusRequest {})
        .await
        .context("GetStatus after the run")?
        .into_inner();

    if let Some(path) = &args.csv {
        std::fs::write(path, csv(&samples))
            .with_context(|| format!("writing {}", path.display()))?;
    }
    let peaks = *peaks.lock().expect("not poisoned");
    let report = Report {
        args,
        jobs: &jobs,
        done: &done,
        samples: &samples,
        wall,
        out_of_time,
        in_flight_after: after.partitions_in_flight,
        queued_after: after.queues.iter().map(|q| q.pending + q.in_progress).sum(),
        peaks,
    };
    let (text, failures) = report.render();
    crate::emit(&text);
    if !failures.is_empty() {
        bail!("soak failed: {}", failures.join("; "));
    }
    Ok(())
}

/// Creates the proof folder and removes the proof files of an earlier run from it, so that
/// what is there afterwards is this run's.
fn clear_proofs(dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    for entry in std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
        let path = entry?.path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        let ours = ["porep-", "winning-", "window-", "snap-"]
            .iter()
            .any(|p| name.starts_with(p));
        if ours && name.ends_with(".bin") {
            std::fs::remove_file(&path).with_context(|| format!("removing {}", path.display()))?;
        }
    }
    Ok(())
}

/// Runs one job to its outcome.
async fn one(
    mut client: Client,
    job: &Job,
    timeout: Duration,
    proof_dir: Option<&PathBuf>,
) -> Outcome {
    let timeout_ms = u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX);
    match &job.plan {
        Plan::Refuse { why } => match client.submit_proof(job.submit.clone()).await {
            Err(s) if s.code() == Code::InvalidArgument => Outcome::Refused,
            Err(s) => Outcome::Unexpected(format!(
                "{why}: refused with {:?} ({}), not INVALID_ARGUMENT",
                s.code(),
                s.message()
            )),
            Ok(r) => Outcome::Unexpected(format!(
                "{why}: accepted as job {}, expected INVALID_ARGUMENT",
                r.into_inner().job_id
            )),
        },
        Plan::Prove { via_prove: true } => {
            let reply = client
                .prove(ProveRequest {
                    submit: Some(job.submit.clone()),
                })
                .await;
            match reply {
                Ok(r) => match r.into_inner().result {
                    Some(r) => completed(job, &r, proof_dir).await,
                    None => Outcome::Unexpected("Prove answered without a result".into()),
                },
                Err(s) => Outcome::Unexpected(format!("Prove: {:?}: {}", s.code(), s.message())),
            }
        }
        Plan::Prove { via_prove: false } | Plan::Cancel { .. } => {
            let id = match client.submit_proof(job.submit.clone()).await {
                Ok(r) => r.into_inner().job_id,
                Err(s) => {
                    return Outcome::Unexpected(format!(
                        "SubmitProof: {:?}: {}",
                        s.code(),
                        s.message()
                    ))
                }
            };
            let mut was_running = false;
            if let Plan::Cancel { delay } = job.plan {
                tokio::time::sleep(delay).await;
                match client
                    .cancel_proof(CancelProofRequest { job_id: id.clone() })
                    .await
                {
                    Ok(r) => was_running = r.into_inner().was_running,
                    Err(s) => {
                        return Outcome::Unexpected(format!(
                            "CancelProof {id}: {:?}: {}",
                            s.code(),
                            s.message()
                        ))
                    }
                }
            }
            let r = match client
                .await_proof(AwaitProofRequest {
                    job_id: id.clone(),
                    timeout_ms,
                })
                .await
            {
                Ok(r) => r.into_inner(),
                Err(s) => {
                    return Outcome::Unexpected(format!(
                        "AwaitProof {id}: {:?}: {}",
                        s.code(),
                        s.message()
                    ))
                }
            };
            match (&job.plan, r.status()) {
                (Plan::Cancel { .. }, JobStatus::Cancelled) => Outcome::Cancelled { was_running },
                (Plan::Cancel { .. }, JobStatus::Completed) => {
                    match completed(job, &r, proof_dir).await {
                        Outcome::Verified => Outcome::CompletedBeforeCancel,
                        other => other,
                    }
                }
                _ => completed(job, &r, proof_dir).await,
            }
        }
    }
}

/// Checks a job's response: completed, verified by the daemon, with its verifying key, and
/// verified here (built-in circuits) or kept for filecoin-proofs' verifiers (Filecoin).
async fn completed(job: &Job, r: &AwaitProofResponse, proof_dir: Option<&PathBuf>) -> Outcome {
    if r.status() != JobStatus::Completed {
        return Outcome::Unexpected(format!(
            "job {} ended {:?}: {}",
            r.job_id,
            r.status(),
            r.error_message
        ));
    }
    if !r.verified {
        return Outcome::Unexpected(format!("job {} not verified by the daemon", r.job_id));
    }
    if r.verifying_key.is_empty() {
        return Outcome::Unexpected(format!("job {} came without a verifying key", r.job_id));
    }
    let partitions = r.partitions.max(1) as usize;
    if r.proof.len() != partitions * PROOF_BYTES {
        return Outcome::Unexpected(format!(
            "job {}: {} proof bytes for {partitions} partition(s)",
            r.job_id,
            r.proof.len()
        ));
    }
    if let Some(fc) = job.filecoin {
        if let Some(dir) = proof_dir {
            let path = dir.join(fc.file(job.index));
            if let Err(e) = std::fs::write(&path, &r.proof) {
                return Outcome::Unexpected(format!("writing {}: {e}", path.display()));
            }
        }
        return Outcome::Verified;
    }
    let (submit, response) = (job.submit.clone(), r.clone());
    match tokio::task::spawn_blocking(move || crate::verify::check(&submit, &response)).await {
        Ok(Ok(_)) => Outcome::Verified,
        Ok(Err(e)) => Outcome::Unexpected(format!("job {}: verify here: {e:#}", r.job_id)),
        Err(e) => Outcome::Unexpected(format!("job {}: the verify task failed: {e}", r.job_id)),
    }
}

/// Reads the daemon's and the GPUs' memory.
#[derive(Clone)]
struct Probe {
    client: Client,
    pid: Option<u32>,
}

impl Probe {
    async fn sample(&self) -> Sample {
        let metrics = self
            .client
            .clone()
            .get_metrics(GetMetricsRequest {})
            .await
            .ok()
            .map(|m| Scrape::parse(&m.into_inner().prometheus_text));
        let mib = |b: f64| b / f64::from(1 << 20);
        let rss_mib = match self.pid {
            Some(pid) => vm_rss_mib(pid),
            None => metrics
                .as_ref()
                .and_then(|m| m.value("cuzk_process_resident_memory_bytes", &[]))
                .map(mib),
        };
        let pinned_mib = metrics.as_ref().and_then(|m| {
            let v: Vec<f64> = m.series("cuzk_gpu_pinned_bytes").map(|(_, v)| v).collect();
            (!v.is_empty()).then(|| mib(v.iter().sum()))
        });
        let vram_status_mib = self
            .client
            .clone()
            .get_status(GetStatusRequest {})
            .await
            .ok()
            .map(|s| s.into_inner().gpus)
            .filter(|g| !g.is_empty())
            .map(|gpus| {
                gpus.iter()
                    .map(|g| g.vram_total_bytes.saturating_sub(g.vram_free_bytes) as f64)
                    .sum::<f64>()
                    / f64::from(1 << 20)
            });
        let vram_smi_mib = tokio::task::spawn_blocking(smi_used_mib)
            .await
            .ok()
            .flatten();
        Sample {
            rss_mib,
            vram_smi_mib,
            vram_status_mib,
            pinned_mib,
            ..Sample::default()
        }
    }

    async fn sample_at(&self, jobs_done: usize, started: Instant, done: &[Done]) -> Sample {
        let count = |f: fn(&Outcome) -> bool| done.iter().filter(|d| f(&d.outcome)).count();
        Sample {
            jobs_done,
            elapsed_s: started.elapsed().as_secs_f64(),
            completed: count(|o| matches!(o, Outcome::Verified | Outcome::CompletedBeforeCancel)),
            cancelled: count(|o| matches!(o, Outcome::Cancelled { .. })),
            refused: count(|o| matches!(o, Outcome::Refused)),
            lost: count(|o| matches!(o, Outcome::Unexpected(_))),
            ..self.sample().await
        }
    }
}

/// VmRSS of a process, MiB.
fn vm_rss_mib(pid: u32) -> Option<f64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024.0)
}

/// Used memory of every GPU together as nvidia-smi reports it, MiB; None without it.
fn smi_used_mib() -> Option<f64> {
    let out = std::process::Command::new("nvidia-smi")
        .args(["--query-gpu=memory.used", "--format=csv,noheader,nounits"])
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let values: Vec<f64> = text.lines().filter_map(|l| l.trim().parse().ok()).collect();
    (!values.is_empty()).then(|| values.iter().sum())
}

fn opt(v: Option<f64>) -> String {
    v.map_or_else(|| "-".into(), |v| format!("{v:.0}"))
}

const SAMPLE_HEADER: &str = "| jobs done | elapsed s | RSS MiB | pinned pool MiB | VRAM MiB (nvidia-smi) | VRAM MiB (GetStatus) | completed | cancelled | refused | lost |\n|---|---|---|---|---|---|---|---|---|---|\n";

fn sample_row(s: &Sample) -> String {
    format!(
        "| {} | {:.1} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
        s.jobs_done,
        s.elapsed_s,
        opt(s.rss_mib),
        opt(s.pinned_mib),
        opt(s.vram_smi_mib),
        opt(s.vram_status_mib),
        s.completed,
        s.cancelled,
        s.refused,
        s.lost
    )
}

fn print_sample_header() {
    crate::emit(&format!("\n{SAMPLE_HEADER}"));
}

fn print_sample(s: &Sample) {
    crate::emit(&sample_row(s));
}

fn csv(samples: &[Sample]) -> String {
    let mut out = String::from(
        "jobs_done,elapsed_s,rss_mib,pinned_mib,vram_smi_mib,vram_status_mib,completed,cancelled,refused,lost\n",
    );
    let f = |v: Option<f64>| v.map_or_else(String::new, |v| format!("{v:.1}"));
    for s in samples {
        let _ = writeln!(
            out,
            "{},{:.2},{},{},{},{},{},{},{},{}",
            s.jobs_done,
            s.elapsed_s,
            f(s.rss_mib),
            f(s.pinned_mib),
            f(s.vram_smi_mib),
            f(s.vram_status_mib),
            s.completed,
            s.cancelled,
            s.refused,
            s.lost
        );
    }
    out
}

/// Growth after warm-up, read from the samples at or after `warmup` jobs split into thirds:
/// the floor (the smallest sample of the last third against the first sample after warm-up)
/// and the envelope (the largest sample of the last third against the largest of the first
/// third). A leak raises both; memory a daemon holds for the last job's size (buffers kept
/// for reuse) makes single samples swing but moves neither. The larger of the two is the
/// growth. None with fewer than three samples after warm-up, or no value.
fn growth(samples: &[Sample], warmup: usize, get: fn(&Sample) -> Option<f64>) -> Option<Growth> {
    let post: Vec<(usize, f64)> = samples
        .iter()
        .filter(|s| s.jobs_done >= warmup)
        .filter_map(|s| get(s).map(|v| (s.jobs_done, v)))
        .collect();
    if post.len() < 3 {
        return None;
    }
    let third = post.len().div_ceil(3);
    let first = &post[..third];
    let last = &post[post.len() - third..];
    let pick = |xs: &[(usize, f64)], larger: bool| {
        xs.iter()
            .copied()
            .reduce(|a, b| {
                if (b.1 > a.1) == larger && b.1 != a.1 {
                    b
                } else {
                    a
                }
            })
            .unwrap_or(xs[0])
    };
    Some(Growth {
        base: post[0],
        floor: pick(last, false),
        first_max: pick(first, true),
        last_max: pick(last, true),
    })
}

/// The samples [`growth`] compares: (jobs done, MiB).
struct Growth {
    base: (usize, f64),
    floor: (usize, f64),
    first_max: (usize, f64),
    last_max: (usize, f64),
}

impl Growth {
    /// The larger of the floor's and the envelope's rise, MiB.
    fn grew(&self) -> f64 {
        (self.floor.1 - self.base.1).max(self.last_max.1 - self.first_max.1)
    }
}

struct Report<'a> {
    args: &'a SoakArgs,
    jobs: &'a [Job],
    done: &'a [Done],
    samples: &'a [Sample],
    wall: Duration,
    out_of_time: bool,
    in_flight_after: u32,
    queued_after: u32,
    peaks: (f64, f64),
}

impl Report<'_> {
    /// The tables and the list of failed checks.
    fn render(&self) -> (String, Vec<String>) {
        let mut failures = Vec::new();
        let mut out = String::new();
        let _ = writeln!(
            out,
            "\n## soak samples (after each batch, nothing in flight)\n"
        );
        out.push_str(SAMPLE_HEADER);
        for s in self.samples {
            out.push_str(&sample_row(s));
        }

        // Per kind: count, outcomes, latency.
        let mut kinds: BTreeMap<&str, Vec<&Done>> = BTreeMap::new();
        for d in self.done {
            kinds.entry(d.job.kind.as_str()).or_default().push(d);
        }
        let _ = writeln!(out, "\n## soak jobs by kind\n");
        out.push_str("| kind | jobs | verified | cancelled (running/queued) | completed before cancel | refused | lost | p50 ms | p95 ms | max ms |\n|---|---|---|---|---|---|---|---|---|---|\n");
        for (kind, ds) in &kinds {
            let mut lat: Vec<u128> = ds.iter().map(|d| d.latency.as_millis()).collect();
            lat.sort_unstable();
            let pct = |p: f64| lat[((lat.len() - 1) as f64 * p).round() as usize];
            let n = |f: &dyn Fn(&Outcome) -> bool| ds.iter().filter(|d| f(&d.outcome)).count();
            let _ = writeln!(
                out,
                "| {kind} | {} | {} | {} ({}/{}) | {} | {} | {} | {} | {} | {} |",
                ds.len(),
                n(&|o| *o == Outcome::Verified),
                n(&|o| matches!(o, Outcome::Cancelled { .. })),
                n(&|o| *o == Outcome::Cancelled { was_running: true }),
                n(&|o| *o == Outcome::Cancelled { was_running: false }),
                n(&|o| *o == Outcome::CompletedBeforeCancel),
                n(&|o| *o == Outcome::Refused),
                n(&|o| matches!(o, Outcome::Unexpected(_))),
                pct(0.5),
                pct(0.95),
                lat[lat.len() - 1]
            );
        }

        // The checks.
        let count =
            |f: &dyn Fn(&Outcome) -> bool| self.done.iter().filter(|d| f(&d.outcome)).count();
        let verified = count(&|o| matches!(o, Outcome::Verified | Outcome::CompletedBeforeCancel));
        let cancelled = count(&|o| matches!(o, Outcome::Cancelled { .. }));
        let cancel_running = count(&|o| *o == Outcome::Cancelled { was_running: true });
        let late = count(&|o| *o == Outcome::CompletedBeforeCancel);
        let refused = count(&|o| *o == Outcome::Refused);
        let lost = count(&|o| matches!(o, Outcome::Unexpected(_)));
        let planned = |f: &dyn Fn(&Plan) -> bool| self.jobs.iter().filter(|j| f(&j.plan)).count();
        let want_cancel = planned(&|p| matches!(p, Plan::Cancel { .. }));
        let want_refuse = planned(&|p| matches!(p, Plan::Refuse { .. }));
        // Filecoin proofs per kind, in a fixed order.
        let mut filecoin: Vec<(&str, usize)> = Vec::new();
        for d in self.done {
            if let (Some(fc), Outcome::Verified) = (d.job.filecoin, &d.outcome) {
                match filecoin.iter_mut().find(|(l, _)| *l == fc.label()) {
                    Some((_, n)) => *n += 1,
                    None => filecoin.push((fc.label(), 1)),
                }
            }
        }
        let order = ["PoRep C2", "WinningPoSt", "WindowPoSt", "SnapDeals"];
        filecoin.sort_by_key(|(l, _)| order.iter().position(|o| o == l));
        let proofs: usize = self
            .done
            .iter()
            .filter(|d| {
                matches!(
                    d.outcome,
                    Outcome::Verified | Outcome::CompletedBeforeCancel
                )
            })
            .map(|d| {
                d.job
                    .submit
                    .circuit_fields
                    .get("partitions")
                    .copied()
                    .unwrap_or(1) as usize
            })
            .sum();
        let mut rows: Vec<(String, bool, String)> = Vec::new();
        let mut check = |name: &str, ok: bool, detail: String| {
            if !ok {
                failures.push(format!("{name}: {detail}"));
            }
            rows.push((name.to_string(), ok, detail));
        };
        check(
            "every job ran",
            self.done.len() == self.jobs.len() && !self.out_of_time,
            format!(
                "{} of {} jobs in {:.1} s{}",
                self.done.len(),
                self.jobs.len(),
                self.wall.as_secs_f64(),
                if self.out_of_time {
                    format!(
                        "; stopped at the time limit of {} s",
                        self.args.time_limit.as_secs()
                    )
                } else {
                    String::new()
                }
            ),
        );
        check(
            "zero jobs lost",
            lost == 0,
            format!("{lost} lost; {verified} completed, {cancelled} cancelled, {refused} refused"),
        );
        let unverified = count(&|o| matches!(o, Outcome::Unexpected(why) if why.contains("verif")));
        check(
            "every proof verified",
            unverified == 0,
            format!(
                "{unverified} not verified; {verified} jobs, {proofs} proofs: `verified` from the daemon and checked here{}",
                if filecoin.is_empty() {
                    String::new()
                } else {
                    let list: Vec<String> =
                        filecoin.iter().map(|(l, n)| format!("{n} {l}")).collect();
                    format!(
                        " (Filecoin: {} jobs: the daemon's check here, filecoin-proofs' verifiers after the run)",
                        list.join(", ")
                    )
                }
            ),
        );
        check(
            "cancellations",
            want_cancel == 0 || cancelled > 0,
            format!(
                "{cancelled} of {want_cancel} cancelled ({cancel_running} while running), {late} finished before the cancel"
            ),
        );
        check(
            "refusals (INVALID_ARGUMENT)",
            refused == want_refuse,
            format!("{refused} of {want_refuse}"),
        );
        check(
            "nothing left in the daemon",
            self.in_flight_after == 0 && self.queued_after == 0,
            format!(
                "{} partition(s) in flight, {} job(s) queued or running after the run",
                self.in_flight_after, self.queued_after
            ),
        );
        for (name, limit, get, peak) in [
            (
                "RSS flat after warm-up",
                self.args.rss_growth_mib,
                (|s: &Sample| s.rss_mib) as fn(&Sample) -> Option<f64>,
                self.peaks.0,
            ),
            (
                "VRAM flat after warm-up",
                self.args.vram_growth_mib,
                Sample::vram,
                self.peaks.1,
            ),
        ] {
            match growth(self.samples, self.args.warmup, get) {
                Some(g) => {
                    let grew = g.grew();
                    check(
                        name,
                        grew <= limit as f64,
                        format!(
                            "floor {:.0} MiB at job {} -> {:.0} MiB at job {} (lowest of the last third); envelope {:.0} MiB at job {} -> {:.0} MiB at job {} (highest of the first and last thirds): {:+.0} MiB (limit {limit}); live peak {:.0} MiB",
                            g.base.1, g.base.0, g.floor.1, g.floor.0, g.first_max.1, g.first_max.0, g.last_max.1, g.last_max.0, grew, peak
                        ),
                    );
                }
                None if self.samples.iter().all(|s| get(s).is_none()) => {
                    check(name, true, "not measured here (no value)".into());
                }
                None => check(
                    name,
                    false,
                    format!(
                        "fewer than three samples after the warm-up of {} jobs: run more jobs",
                        self.args.warmup
                    ),
                ),
            }
        }

        // Not a check: how much of the RSS growth the pinned pools' growth explains (they
        // keep page-locked buffers up to their capacity for reuse).
        let less_pinned = |s: &Sample| Some(s.rss_mib? - s.pinned_mib?);
        if let (Some(rss), Some(rest)) = (
            growth(self.samples, self.args.warmup, |s| s.rss_mib),
            growth(self.samples, self.args.warmup, less_pinned),
        ) {
            rows.push((
                "RSS less the pinned pools (not a check)".into(),
                true,
                format!(
                    "{:+.0} MiB after warm-up, against {:+.0} MiB of RSS",
                    rest.grew(),
                    rss.grew()
                ),
            ));
        }

        let _ = writeln!(out, "\n## soak summary\n");
        out.push_str("| check | result | detail |\n|---|---|---|\n");
        for (name, ok, detail) in &rows {
            let _ = writeln!(
                out,
                "| {name} | {} | {detail} |",
                if *ok { "ok" } else { "FAILED" }
            );
        }
        let _ = writeln!(
            out,
            "\nsoak: {} in {:.1} s",
            if failures.is_empty() { "PASS" } else { "FAIL" },
            self.wall.as_secs_f64()
        );
        (out, failures)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn post(randomness: usize) -> PostIn {
        PostIn {
            registered_proof: 10,
            partition: 0,
            randomness: (0..randomness).map(|k| [k as u8 + 1; 32]).collect(),
            vanilla: (0..randomness)
                .map(|k| vec![vec![k as u8; 40]; 2])
                .collect(),
        }
    }

    fn mix(filecoin: bool) -> Mix {
        let fc = if filecoin {
            Filecoin {
                miner: 1000,
                sector_size: 2048,
                porep: Some(PorepIn {
                    registered_proof: 5,
                    sector: 1,
                    c1: Arc::new(b"{}".to_vec()),
                }),
                winning: Some(PostIn {
                    registered_proof: 0,
                    ..post(4)
                }),
                window: Some(post(4)),
                snap: Some(SnapIn {
                    registered_proof: 0,
                    sector: 1,
                    comm_r_old: [1; 32],
                    comm_r_new: [2; 32],
                    comm_d_new: [3; 32],
                    vanilla: vec![vec![9; 50]],
                }),
            }
        } else {
            Filecoin::default()
        };
        Mix {
            args: Mix0 {
                sizes: vec![16, 18, 20, 22],
                sha_share: 0.25,
                cancel_share: 0.06,
                refuse_share: 0.04,
                porep_share: 0.03,
                winning_share: 0.01,
                window_share: 0.01,
                snap_share: 0.01,
            },
            fc,
        }
    }

    #[test]
    fn the_mix_opens_with_every_kind_and_is_seeded() {
        let m = mix(true);
        let draw = |seed| {
            let (mut rng, mut t) = (Rng(seed), Turns::default());
            (0..1000)
                .map(|i| m.job(i, &mut rng, &mut t))
                .collect::<Vec<_>>()
        };
        let jobs = draw(7);
        let kinds: Vec<&str> = jobs[..21].iter().map(|j| j.kind.as_str()).collect();
        for k in [
            "sha256 3B",
            "sha256 64B",
            "sha256 200B",
            "synthetic-porep 2^16",
            "synthetic-porep 2^22",
            "cancelled",
            "refused",
            "porep-c2 2KiB",
            "winning-post 2KiB",
            "window-post 2KiB",
            "snap-deals 2KiB",
        ] {
            assert!(kinds.contains(&k), "{k} missing from {kinds:?}");
        }
        let n = |f: &dyn Fn(&Job) -> bool| jobs.iter().filter(|j| f(j)).count();
        let cancels = n(&|j| matches!(j.plan, Plan::Cancel { .. }));
        let refusals = n(&|j| matches!(j.plan, Plan::Refuse { .. }));
        assert!((30..100).contains(&cancels), "{cancels} cancels");
        assert!((20..80).contains(&refusals), "{refusals} refusals");
        assert!(n(&|j| j.filecoin == Some(Fc::Porep)) > 10);
        // A small share each of the other Filecoin kinds.
        for f in [
            &(|j: &Job| matches!(j.filecoin, Some(Fc::Winning(_)))) as &dyn Fn(&Job) -> bool,
            &|j: &Job| matches!(j.filecoin, Some(Fc::Window(_))),
            &|j: &Job| j.filecoin == Some(Fc::Snap),
        ] {
            assert!((3..30).contains(&n(f)), "{} jobs", n(f));
        }
        let again = draw(7);
        assert!(jobs
            .iter()
            .zip(&again)
            .all(|(a, b)| a.submit == b.submit && a.kind == b.kind));
        assert!(mix(false)
            .job(20, &mut Rng(1), &mut Turns::default())
            .filecoin
            .is_none());
    }

    #[test]
    fn filecoin_requests_are_shaped_as_curio_sends_them() {
        let m = mix(true);
        let w = m.winning(1).unwrap();
        assert_eq!(w.request_id, "winpost-1000-0202020202020202");
        assert_eq!(w.priority, Priority::Critical as i32);
        assert_eq!(w.proof_kind, ProofKind::WinningPost as i32);
        assert_eq!((w.registered_proof, w.sector_size), (0, 2048));
        assert_eq!(w.vanilla_proofs.len(), 2);
        assert!(w.vanilla_proof.is_empty());
        let d = m.window(2).unwrap();
        assert_eq!(d.request_id, "wdpost-1000-0-[3 3 3 3 3 3 3 3]");
        assert_eq!(d.priority, Priority::High as i32);
        assert_eq!((d.registered_proof, d.partition_index), (10, 0));
        assert_eq!(d.randomness, vec![3; 32]);
        let s = m.snap(None).unwrap();
        assert_eq!(s.request_id, "snap-1000-1");
        assert_eq!((s.sector_size, s.sector_number), (2048, 1));
        assert_eq!(
            (s.comm_r_old, s.comm_r_new, s.comm_d_new),
            (vec![1; 32], vec![2; 32], vec![3; 32])
        );
        let p = m.snap(Some(40)).unwrap();
        assert_eq!(
            (p.request_id.as_str(), p.sector_size),
            ("ps-snap-1000-1-40", 0)
        );
        // PoSt jobs take the randomness values in turn.
        let (mut rng, mut t) = (Rng(1), Turns::default());
        let ks: Vec<Fc> = (0..3000)
            .map(|i| m.job(i, &mut rng, &mut t))
            .filter_map(|j| j.filecoin)
            .filter(|f| matches!(f, Fc::Winning(_)))
            .take(6)
            .collect();
        let want: Vec<Fc> = [0, 1, 2, 3, 0, 1].map(Fc::Winning).to_vec();
        assert_eq!(ks, want);
        assert_eq!(Fc::Window(3).file(17), "window-17-r3.bin");
    }

    #[test]
    fn the_manifest_of_soak_c1_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let h = |b: u8| format!("{b:02x}").repeat(32);
        for (name, bytes) in [
            ("porep-c1.json", b"{}".to_vec()),
            ("w0.vanilla", vec![1; 10]),
            ("d0.vanilla", vec![2; 10]),
            ("d1.vanilla", vec![3; 10]),
            ("s0.vanilla", vec![4; 10]),
        ] {
            std::fs::write(d.join(name), bytes).unwrap();
        }
        let toml = format!(
            r#"miner = 1000
sector_size = 2048
[porep]
registered_proof = 5
sector = 1
c1 = "porep-c1.json"
[winning]
registered_proof = 0
partition = 0
sectors = [1]
comm_r = ["{a}"]
randomness = ["{b}"]
vanilla = [["w0.vanilla"]]
[window]
registered_proof = 10
partition = 0
sectors = [1, 2]
comm_r = ["{a}", "{a}"]
randomness = ["{b}"]
vanilla = [["d0.vanilla", "d1.vanilla"]]
[snap]
registered_proof = 0
sector = 1
comm_r_old = "{a}"
comm_r_new = "{b}"
comm_d_new = "{c}"
vanilla = ["s0.vanilla"]
"#,
            a = h(0xaa),
            b = h(0x0b),
            c = h(0xc0)
        );
        std::fs::write(d.join("filecoin.toml"), toml).unwrap();
        let fc = Filecoin::load(d).unwrap();
        assert_eq!(fc.window.as_ref().unwrap().vanilla[0][1], vec![3; 10]);
        assert_eq!(fc.winning.as_ref().unwrap().randomness[0], [0x0b; 32]);
        let snap = fc.snap.as_ref().unwrap();
        assert_eq!((snap.comm_r_old, snap.comm_d_new), ([0xaa; 32], [0xc0; 32]));
        assert!(hex32("x", "zz").is_err());
        std::fs::remove_file(d.join("d1.vanilla")).unwrap();
        assert!(Filecoin::load(d).is_err());
    }

    #[test]
    fn proof_files_of_an_earlier_run_are_removed() {
        let dir = tempfile::tempdir().unwrap();
        for name in ["porep-1.bin", "snap-2.bin", "window-3-r0.bin", "notes.txt"] {
            std::fs::write(dir.path().join(name), b"x").unwrap();
        }
        clear_proofs(dir.path()).unwrap();
        let left: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert_eq!(left, ["notes.txt"]);
    }

    #[test]
    fn refusals_are_invalid_requests() {
        let m = mix(false);
        for k in 0..REFUSALS.len() {
            let (why, r) = m.refusal(k);
            assert_eq!(why, REFUSALS[k]);
            // Each is a request the kinds or the edge refuse; spot-check a few shapes.
            match why {
                "unknown circuit" => assert_eq!(r.circuit, "no-such-circuit"),
                "no circuit, no proof kind" => {
                    assert!(r.circuit.is_empty() && r.proof_kind == 0)
                }
                "proof kind and circuit" => assert!(!r.circuit.is_empty() && r.proof_kind != 0),
                _ => assert!(!r.circuit.is_empty()),
            }
        }
    }

    #[test]
    fn growth_is_the_rise_of_the_floor_or_the_envelope_after_warm_up() {
        let s = |jobs_done, rss| Sample {
            jobs_done,
            rss_mib: Some(rss),
            ..Sample::default()
        };
        // Swings between jobs with a steady floor and envelope: no growth.
        let steady = [
            s(0, 10.0),
            s(100, 900.0),
            s(200, 1000.0),
            s(300, 1800.0),
            s(400, 1000.0),
            s(500, 1700.0),
            s(600, 1000.0),
            s(700, 1800.0),
        ];
        let g = growth(&steady, 200, |s| s.rss_mib).unwrap();
        assert_eq!((g.base, g.floor), ((200, 1000.0), (600, 1000.0)));
        assert_eq!((g.first_max, g.last_max), ((300, 1800.0), (700, 1800.0)));
        assert_eq!(g.grew(), 0.0);
        // A leak raises the floor.
        let leak: Vec<Sample> = (0..9)
            .map(|i| s(200 + 100 * i, 1000.0 + 50.0 * i as f64))
            .collect();
        let g = growth(&leak, 200, |s| s.rss_mib).unwrap();
        assert_eq!(g.floor, (800, 1300.0));
        assert_eq!(g.grew(), 300.0);
        assert!(growth(&steady[..4], 200, |s| s.rss_mib).is_none());
        assert!(growth(&steady, 200, |s| s.vram_smi_mib).is_none());
    }
}
