//! Byte counts the backend plans with: device bytes of parameters and of one proof, host
//! bytes of one partition and of a pinned witness set, device bytes of parameter
//! generation. Estimates err high; CUDA-free, so they are tested on any machine.

use cuzk_groth16::PreparedParameters;
use cuzk_plugin::Shape;
use cuzk_synth::Pce;

/// Bytes of an Fr scalar.
pub const SCALAR: u64 = 32;
/// Bytes of a G1 affine point on the device.
pub const G1: u64 = 96;
/// Bytes of a G2 affine point on the device.
pub const G2: u64 = 192;
/// An allowance for a proof's NTT twiddle and scale tables (under 1 MiB up to 2^28) and the
/// driver's allocation granularity.
pub const TABLES: u64 = 64 << 20;
/// The GPU prover's default MSM work allowance.
pub const DEFAULT_MSM_VRAM: u64 = 8 << 30;

/// The largest automatic MSM allowance: what a 2^27-point G1 MSM takes unchunked (24.75 GiB)
/// and a margin.
pub const LARGEST_MSM_VRAM: u64 = 26 << 30;
/// Device bytes of one chunk buffer of streamed parameters (the prover's default).
pub const STREAM_CHUNK: u64 = 512 << 20;
/// Device bytes of the prover's staging buffers per group.
const STAGE: u64 = 64 << 20;
/// Host bytes per partition beyond its vectors: MSM results, assembly, bookkeeping.
const HOST_SCRATCH: u64 = 64 << 20;
/// Device bytes parameter generation needs beyond its vectors: generator tables, staging.
const PARAMGEN_FIXED: u64 = 512 << 20;

/// The query lengths of a circuit's parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Queries {
    /// H (n − 1 points for a domain of n).
    pub h: u64,
    /// L (one per aux variable).
    pub l: u64,
    /// A (density-filtered).
    pub a: u64,
    /// B in G1 (density-filtered).
    pub b_g1: u64,
    /// B in G2 (as B in G1).
    pub b_g2: u64,
}

impl Queries {
    /// The lengths of `params`' queries.
    pub fn of(params: &PreparedParameters) -> Queries {
        Queries {
            h: params.h().len() as u64,
            l: params.l().len() as u64,
            a: params.a().len() as u64,
            b_g1: params.b_g1().len() as u64,
            b_g2: params.b_g2().len() as u64,
        }
    }

    /// The evaluation domain size n.
    pub fn domain(&self) -> u64 {
        self.h + 1
    }

    /// Device bytes of the five queries when resident (H padded by one point), as the GPU
    /// prover uploads them.
    pub fn resident_bytes(&self) -> u64 {
        G1 * (self.h + 1 + self.l + self.a + self.b_g1) + G2 * self.b_g2
    }

    /// Host bytes of one pinned witness set: a, b, c over the domain, the aux assignment
    /// and the A and B scalars.
    pub fn pinned_set_bytes(&self) -> u64 {
        self.pinned_buffers().iter().sum()
    }

    /// The pinned buffers of one witness set, in bytes: a, b, c, the aux assignment, the A
    /// scalars, the B scalars, as the prover takes them ([`cuzk_prover::witness_buffer_bytes`]).
    pub fn pinned_buffers(&self) -> [u64; 6] {
        let count = |n: u64| usize::try_from(n).unwrap_or(usize::MAX);
        cuzk_prover::witness_buffer_bytes(
            count(self.domain()),
            count(self.l),
            count(self.a),
            count(self.b_g1),
        )
    }
}

/// Pool bytes one pinned set may take: each buffer rounded up to its pool size class (at
/// most a quarter more, at least 64 KiB).
pub fn pinned_set_pool_bytes(queries: &Queries) -> u64 {
    queries
        .pinned_buffers()
        .iter()
        .map(|&b| (b + b / 4).max(64 << 10))
        .sum()
}

/// Device bytes one proof of domain size `n` reserves with parameters resident: a, b, c,
/// tables and the MSM work of G1 allowance `msm_vram` (G1's and G2's buffers,
/// [`cuzk_prover::msm_work_bytes`]).
pub fn resident_working_set(n: u64, msm_vram: u64) -> u64 {
    3 * SCALAR * n + TABLES + cuzk_prover::msm_work_bytes(msm_vram)
}

/// Device bytes one proof of domain size `n` reserves with parameters streamed: the larger
/// of the H step (a, b, c, tables) and the MSM stage (two chunk buffers with staging, and
/// both groups' MSM work of G1 allowance `msm_vram`).
pub fn streamed_working_set(n: u64, msm_vram: u64) -> u64 {
    (3 * SCALAR * n + TABLES)
        .max(2 * (STREAM_CHUNK + 2 * STAGE) + cuzk_prover::msm_work_bytes(msm_vram))
}

/// The (G1) MSM allowance for a device budget of `capacity` bytes: `configured`, or a fifth of the
/// budget, at least 8 GiB (but at most a quarter of the budget) and at most
/// [`LARGEST_MSM_VRAM`]. On a 141 GB card that runs a 2^27 partition's H MSM in one chunk
/// (24.75 GiB of work buffers; with 8 GiB it takes four chunks and twice the time); on small
/// cards it stays a quarter of the budget.
pub fn msm_allowance(configured: Option<u64>, capacity: u64) -> u64 {
    let floor = DEFAULT_MSM_VRAM.min(capacity / 4);
    configured.unwrap_or((capacity / 5).clamp(floor, LARGEST_MSM_VRAM.max(floor)))
}

/// Host bytes one partition holds in the scheduler's budget from the start of its
/// synthesis to the end of its proof on the GPU: the witness (until it is prepared) and
/// scratch. Its pinned set (a, b, c and the MSM scalars) is lent by the device's pinned
/// pool, whose bytes are kept out of that budget.
pub fn partition_host_bytes(shape: &Shape) -> u64 {
    let vars = (shape.inputs as u64).saturating_add(shape.aux as u64);
    SCALAR.saturating_mul(vars).saturating_add(HOST_SCRATCH)
}

/// The default pinned pool of each of `devices` devices on a host of `host_bytes`: a
/// quarter of the host shared by the devices, at most 64 GiB each.
pub fn default_pinned_bytes(host_bytes: u64, devices: usize) -> u64 {
    (host_bytes / 4 / devices.max(1) as u64).min(64 << 30)
}

/// Device bytes parameter generation for `pce`'s circuit takes at most: two queries'
/// scalars and G1 points in flight (every query is at most the larger of the domain and
/// the variables), the G2 query's scalars and points, tables and staging; with `keep`,
/// also every query's points, kept on the device for the prover (bounded by the domain for
/// H and the variables for L, A and B).
pub fn paramgen_vram(pce: &Pce, keep: bool) -> u64 {
    let vars = (pce.num_inputs + pce.num_aux) as u64;
    let n = (pce.num_rows() as u64).max(1).next_power_of_two();
    let longest = n.max(vars);
    let working = 2 * longest * (SCALAR + G1) + vars * (SCALAR + G2) + PARAMGEN_FIXED;
    if keep {
        working + G1 * (n + 3 * vars) + G2 * vars
    } else {
        working
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GIB: u64 = 1 << 30;

    #[test]
    fn porep_shaped_sizes() {
        // A 2^24 PoRep-shaped partition: every variable in A, a quarter in B.
        let n = 1u64 << 24;
        let q = Queries {
            h: n - 1,
            l: n - 2,
            a: n,
            b_g1: n / 4,
            b_g2: n / 4,
        };
        assert_eq!(q.domain(), n);
        let params = q.resident_bytes();
        assert!((5 * GIB..6 * GIB).contains(&params), "{params}");
        let set = q.pinned_set_bytes();
        assert!((2 * GIB..3 * GIB).contains(&set), "{set}");
        let pooled = pinned_set_pool_bytes(&q);
        assert!(
            pooled >= set && pooled <= set + set / 4 + (6 << 16),
            "{pooled}"
        );
        let shape = Shape {
            constraints: (n - 2) as usize,
            inputs: 2,
            aux: (n - 2) as usize,
        };
        let host = partition_host_bytes(&shape);
        assert!(host >= 32 * n && host < GIB, "{host}");
        assert_eq!(default_pinned_bytes(128 * GIB, 1), 32 * GIB);
        assert_eq!(default_pinned_bytes(1024 * GIB, 2), 64 * GIB);
        assert_eq!(
            resident_working_set(n, 8 * GIB),
            3 * 32 * n + TABLES + 10 * GIB
        );
        assert!(streamed_working_set(n, 8 * GIB) > 8 * GIB);
        assert_eq!(msm_allowance(None, 139 * GIB), 26 * GIB);
        assert_eq!(msm_allowance(None, 80 * GIB), 16 * GIB);
        assert_eq!(msm_allowance(None, 24 * GIB), 6 * GIB);
        assert_eq!(msm_allowance(None, 16 * GIB), 4 * GIB);
        assert_eq!(msm_allowance(Some(GIB), 16 * GIB), GIB);
        let absurd = Shape {
            constraints: usize::MAX,
            inputs: usize::MAX,
            aux: usize::MAX,
        };
        assert_eq!(partition_host_bytes(&absurd), u64::MAX);
    }
}
