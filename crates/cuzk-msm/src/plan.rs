//! How the GPU engine cuts an MSM to fit a VRAM allowance: window width, windows per pass,
//! points per chunk, and the sizes of every work buffer. Plain arithmetic, always built, so
//! that budgets can be checked (and are tested) without a GPU.
//!
//! The bases are the caller's (resident across calls) and not counted here; everything else a
//! call allocates on the device is. Working memory grows with the points of a chunk (scalars,
//! sorted pairs, partial sums) and with the windows of a pass (buckets, histogram). A plan
//! first shrinks the chunk, which costs little (one more histogram pass), then the windows per
//! pass, which re-reads the scalars once per pass, and last the window width.

use crate::digits::{buckets_per_window, window_count, MAX_WINDOW_BITS, MIN_WINDOW_BITS};
use crate::MsmError;

/// Largest number of points of one MSM: indices carry a sign in their top bit on the device.
pub const MAX_POINTS: usize = (1 << 31) - 1;

/// Most points sorted together. Every chunk's complete runs land in empty buckets (a store):
/// the pass's first chunk stores into the pass's buckets and each later one into a second,
/// zeroed array ([`Sizes::chunk_points`]), which is then added into the first bucket by bucket
/// in one elementwise launch, an addition a work item. (Adding each run into the buckets as it
/// closed, a full XYZZ addition and a random load on a divergent branch, halved the
/// accumulation rate on the H200 when 2^26 points went through in four chunks.)
pub const MAX_CHUNK: usize = 1 << 27;

/// Scalars per upload: each piece is copied on the copy stream while the previous one is
/// converted, so only the copies themselves stand between the call and its sort.
pub const PIECE: usize = 1 << 22;

/// Sorted (bucket, point) pairs of one chunk are counted in 32 bits.
const MAX_PAIRS: u64 = 1 << 31;

/// Bytes of a scalar on the device.
const SCALAR_BYTES: usize = 32;

/// Elements per tile of the device scan (kernels/msm/digits.cuh, SCAN_TILE).
pub const SCAN_TILE: usize = 4096;

/// Entries per thread in the reduction levels over partial sums.
pub const SPAN_XYZZ: u32 = 8;

/// Most batch-affine pair levels a plan runs: each halves every bucket, so 20 take buckets of
/// up to 2^20 entries to one.
pub const MAX_AFFINE_LEVELS: u32 = 20;

/// Bins of one window group of the binned scatter: its blocks count their pairs per bin in
/// shared memory (MAX_BINS in kernels/msm/bins.cuh).
pub const MAX_BINS: usize = 4096;

/// log2 of the pairs a bin of the binned scatter holds on average: a bin's buckets are written
/// while the device works through it, so they should stay in the L2 (50–60 MB on sm_90) with
/// room to spare: 2^20 pairs are 8 MB.
pub const BIN_PAIRS_LOG: u32 = 20;

/// Window groups a pass's binned scatter takes: its second pair buffer holds one group's pairs,
/// a third of the first buffer (more groups, and a smaller buffer, under a tight allowance).
pub const BIN_GROUPS: u32 = 3;

/// Tails from which a plan bins its pairs where the caller leaves it to the plan: below, a
/// chunk's pairs fit the L2 or nearly, and the one-pass scatter's stores find their sectors
/// there. Above, the binned scatter measured faster on an H200 (G1 2^26 / 2^27 −3.3% / −2.7%
/// whole call, G2 2^24 −0.4%; docs/perf.md, twenty-third session).
pub const BIN_MIN_POINTS: usize = 1 << 20;

/// Windows per group of the binned scatter of a pass of `pass_windows`.
pub fn bin_windows(pass_windows: u32) -> u32 {
    pass_windows.div_ceil(BIN_GROUPS).max(1)
}

/// log2 of the keys per bin of the binned scatter for a chunk of `chunk` points, windows of
/// `bits` bits and groups of `group` windows: about 2^[`BIN_PAIRS_LOG`] pairs a bin (a window of
/// a chunk has at most `chunk` pairs over its 2^(bits − 1) buckets), at most a window a bin,
/// and at most [`MAX_BINS`] bins a group.
pub fn bin_shift(chunk: usize, bits: u32, group: u32) -> u32 {
    let half_log = bits - 1;
    let mut shift = (half_log + BIN_PAIRS_LOG)
        .saturating_sub(floor_log2(chunk))
        .min(half_log);
    while shift < half_log && (group as usize) << (half_log - shift) > MAX_BINS {
        shift += 1;
    }
    shift
}

/// The output slots (pairs or copies) a work item of a pair level takes where the level is
/// small enough for that: one field inversion (about 570 multiplications) is shared by an
/// item's pairs, so much shorter batches would spend more on it than they save. Levels with
/// more slots than one wave of items times this get one wave, with longer batches.
pub const PAIR_SLOTS: usize = 128;

/// The pair levels' buffers of a plan that groups windows take at most 1 / this of its
/// allowance: with no cap, each call's plan would claim nearly all free VRAM for them (a group
/// of 12 G1 windows of 2^26 points holds about 60 GB) and the engine's cached workspace would
/// keep it, so other work on the device (the pipeline's next witness) found none left. Half,
/// not less: every extra group costs about 7–10 ms of G2 2^24 accumulation (an H100: 255 ms
/// in one group, 270 in two or three, 283 in four), and a quarter of an 80 GB card holds 7 of
/// its 15 windows (docs/perf.md, eighteenth session). The prover runs no pair levels.
pub const PAIR_LEVEL_SHARE: usize = 2;

/// The window width for an MSM of `n` points with XYZZ points of `xyzz_bytes` (192 for G1,
/// 384 for G2), from sweeps on the H200 (docs/perf.md).
///
/// The rule is c = log2(n) − 6, about 128 points per bucket: with fewer, runs of a bucket end
/// inside a thread's slice more often and their flushes diverge the warp, which cost more than
/// the window saved (G1 and G2 at 2^20 and 2^22, G2 at 2^24, G1 at 2^26). G1 at 2^23 … 2^25
/// does better with wider buckets still (2^24: c = 16 beat 18 by 3.5%). Capped at 20 bits:
/// at 2^27 that keeps 256 points per bucket with the same 13 windows as 21 bits.
pub fn window_bits(n: usize, xyzz_bytes: usize) -> u32 {
    let log = usize::BITS - 1 - n.max(1).leading_zeros(); // ⌊log2 n⌋
    let g1 = xyzz_bytes <= 192;
    match log {
        23 | 24 if g1 => 16,
        25 if g1 => 18,
        _ => log.saturating_sub(6).clamp(4, 20),
    }
}

/// Entries per thread of the first level summing the ones of a piece: small, since a piece
/// holds at most [`PIECE`] ones and the chain must still fill the GPU.
pub const SPAN_ONES: u32 = 32;

/// The pair levels a plan runs where the caller leaves the count to it: 4 for dense G2 MSMs
/// of 2^21 and 2^22 points, 5 from 2^23, none otherwise. Measured on an H100 (docs/perf.md,
/// seventeenth session), each against the plain accumulation in the same call: G2 2^24 −20%
/// with 5 levels, 2^22 −14% with 4, 2^20 level; G1 level or slower at every size, since its
/// pairs are bound by memory traffic rather than by products. Split plans run none: their
/// level buffers would be sized for the whole chunk, not for the tail the call samples.
pub fn auto_affine_levels(input: &PlanInput) -> u32 {
    let g2 = input.xyzz_bytes > 192;
    if !g2 || input.split {
        return 0;
    }
    match floor_log2(input.tail.min(input.n)) {
        0..=20 => 0,
        21 | 22 => 4,
        _ => 5,
    }
}

/// What a plan is made for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PlanInput {
    /// Points (scalars) of the MSM.
    pub n: usize,
    /// Points expected to reach the bucket sort: `n`, or the tail after the 0/1 split. The
    /// window width is chosen for it.
    pub tail: usize,
    /// Window width; `None` picks [`window_bits`] for `tail` and lets the plan narrow it to fit.
    pub bits: Option<u32>,
    /// The 0/1 split: index lists for the scalars equal to one and for the tail.
    pub split: bool,
    /// Scalars come from the host and need staging buffers on the device (two, so that the
    /// next piece's copy overlaps this piece's conversion; a chunk's worth where the next
    /// chunk's upload overlaps this chunk's work, [`PlanInput::upload_overlap`]).
    pub staged: bool,
    /// Bytes of an XYZZ point (192 for G1, 384 for G2).
    pub xyzz_bytes: usize,
    /// Streaming multiprocessors, to size the reductions' parallelism.
    pub sm_count: u32,
    /// Device bytes the call may use.
    pub allowance: usize,
    /// Batch-affine pair levels to run on each window's sorted entries before the XYZZ levels;
    /// `None` leaves the count to [`auto_affine_levels`]. A plan that cannot fit them runs none.
    pub affine_levels: Option<u32>,
    /// Most windows whose pair levels run in one launch (0: a pass). The plan takes at most as
    /// many as fit with their buffers in [`PAIR_LEVEL_SHARE`] of the allowance, at least one,
    /// spread evenly over the groups that takes.
    pub pair_group: u32,
    /// Place each chunk's pairs by the binned scatter instead of the one-pass scatter; `None`
    /// leaves it to the plan (from [`BIN_MIN_POINTS`] of tail). A plan that cannot fit the
    /// second pair buffer scatters in one pass.
    pub binned_scatter: Option<bool>,
    /// Shifted copies of the bases the call reads (1: the bases alone). With t copies of
    /// `bits`-bit windows (copy k holds 2^(bits·k)·P_i), t consecutive windows share one set of
    /// buckets, each reading its own copy: the buckets to sum and their memory shrink t-fold,
    /// so wider windows (fewer additions) pay. Needs `bits`, the width the copies were made
    /// for.
    pub copies: u32,
    /// Staged scalars that one chunk would take cut into two chunks, every piece of a chunk
    /// given its own staging buffer, so that the second chunk's upload runs under the first
    /// chunk's sort and accumulation ([`Plan::with_upload_overlap`]): `None` where that
    /// should pay ([`overlap_pays`]) and fits the allowance, `Some(true)` wherever it fits,
    /// `Some(false)` never.
    pub upload_overlap: Option<bool>,
}

impl PlanInput {
    /// The pair levels asked for: `affine_levels`, or [`auto_affine_levels`] where it is
    /// `None`.
    pub fn levels(&self) -> u32 {
        self.affine_levels
            .unwrap_or_else(|| auto_affine_levels(self))
    }

    /// Whether the binned scatter is asked for: `binned_scatter`, or from [`BIN_MIN_POINTS`]
    /// of tail where it is `None`.
    pub fn binned(&self) -> bool {
        self.binned_scatter
            .unwrap_or(self.tail.min(self.n) >= BIN_MIN_POINTS)
    }
}

/// How one MSM runs on the device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Plan {
    /// Window width c.
    pub bits: u32,
    /// Bucket sets of a scalar: its ⌈256 / c⌉ digit windows, `copies` to a set. Without
    /// copies a set is a window, and the rest of the plan speaks of windows.
    pub windows: u32,
    /// Shifted copies of the bases (1: none); digit windows per bucket set.
    pub copies: u32,
    /// Buckets per set, 2^(c−1).
    pub buckets: u32,
    /// Bucket sets handled per pass over the scalars.
    pub pass_windows: u32,
    /// Points per chunk: the points sorted together.
    pub chunk: usize,
    /// Points per upload piece within a chunk (host scalars).
    pub piece: usize,
    /// Entries per thread in the first reduction level (affine bases).
    pub span_affine: u32,
    /// log2 of buckets per thread when summing the buckets of a window.
    pub seg_log: u32,
    /// Batch-affine pair levels on the entries of each window group (`PlanInput::levels`
    /// when they fit the allowance, else 0).
    pub affine_levels: u32,
    /// Windows whose pair levels run together, one launch per level for the group: their
    /// buckets form one key range, so one inversion per work item serves the slots of all of
    /// them. The last group of a pass may be shorter. 1 without pair levels.
    pub pair_group: u32,
    /// Windows per group of the binned scatter, 0 for the one-pass scatter
    /// (`PlanInput::binned` where the second pair buffer fits the allowance): [`bin_windows`]
    /// of the pass, or fewer where that buffer would not fit.
    pub bin_windows: u32,
    /// log2 of the keys per bin of the binned scatter ([`bin_shift`]).
    pub bin_shift: u32,
    /// Capacities of every work buffer.
    pub sizes: Sizes,
}

/// Element counts of the work buffers of a plan.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sizes {
    /// Scalar staging, in buffers of [`staging_slot`] scalars: two pieces for host scalars, or
    /// a chunk's every piece (at least two) where the next chunk's upload runs under this
    /// chunk's work ([`Plan::with_upload_overlap`]); else 0.
    pub staging: usize,
    /// Canonical scalars of a chunk.
    pub canon: usize,
    /// Index lists (tail and ones) of a chunk, 0 without the split.
    pub index: usize,
    /// Histogram counters: pass windows × buckets.
    pub hist: usize,
    /// Scan tile sums.
    pub tiles: usize,
    /// Sorted pairs of a chunk.
    pub pairs: usize,
    /// Partial sums, first and second buffer of the reduction levels.
    pub partial_a: usize,
    /// See `partial_a`.
    pub partial_b: usize,
    /// Buckets of one pass.
    pub bucket_points: usize,
    /// Buckets of one pass again, where a pass takes more than one chunk: each later chunk
    /// stores its runs here before they are added into `bucket_points`' array; else 0.
    pub chunk_points: usize,
    /// Per-segment sums of one pass.
    pub segment_points: usize,
    /// Window sums (all windows) plus the sum of the bases whose scalar is one.
    pub result_points: usize,
    /// Keyed affine points written by the first, third, ... pair level of a window group.
    pub affine_a: usize,
    /// Keyed affine points written by the second, fourth, ... pair level of a window group.
    pub affine_b: usize,
    /// Buckets of one window group whose per-level counts and starts the pair levels keep
    /// (two of each, alternately), 0 without pair levels.
    pub window_buckets: usize,
    /// The binned scatter's second buffer of pairs (a window group's), 0 without it.
    pub bin_pairs: usize,
    /// The binned scatter's bin cursors and a group's bounds, 0 without it.
    pub bin_cursors: usize,
}

impl Sizes {
    /// Device bytes of these buffers for XYZZ points of `xyzz` bytes.
    pub fn bytes(&self, xyzz: usize) -> usize {
        let u32s = self.index * 2 + self.hist * 2 + 1 + self.tiles + self.pairs * 2 + 4;
        let partial = (self.partial_a + self.partial_b) * (4 + xyzz);
        let points =
            self.bucket_points + self.chunk_points + self.segment_points + self.result_points;
        // An affine point is half an XYZZ one; each carries its key. Counts and starts: two
        // arrays of each, the starts one longer.
        let affine = (self.affine_a + self.affine_b) * (4 + xyzz / 2);
        let counts = if self.window_buckets > 0 {
            4 * self.window_buckets + 2
        } else {
            0
        };
        // The binned scatter: a second pair buffer and the bin cursors.
        let bins = 2 * self.bin_pairs + self.bin_cursors;
        (self.staging + self.canon) * SCALAR_BYTES
            + (u32s + counts + bins) * 4
            + partial
            + points * xyzz
            + affine
    }

    /// Whether every buffer of `self` holds at least what `need` asks for.
    pub fn covers(&self, need: &Sizes) -> bool {
        self.staging >= need.staging
            && self.canon >= need.canon
            && self.index >= need.index
            && self.hist >= need.hist
            && self.tiles >= need.tiles
            && self.pairs >= need.pairs
            && self.partial_a >= need.partial_a
            && self.partial_b >= need.partial_b
            && self.bucket_points >= need.bucket_points
            && self.chunk_points >= need.chunk_points
            && self.segment_points >= need.segment_points
            && self.result_points >= need.result_points
            && self.affine_a >= need.affine_a
            && self.affine_b >= need.affine_b
            && self.window_buckets >= need.window_buckets
            && self.bin_pairs >= need.bin_pairs
            && self.bin_cursors >= need.bin_cursors
    }

    /// The larger of each buffer of two plans: a workspace that serves both.
    pub fn max(&self, o: &Sizes) -> Sizes {
        Sizes {
            staging: self.staging.max(o.staging),
            canon: self.canon.max(o.canon),
            index: self.index.max(o.index),
            hist: self.hist.max(o.hist),
            tiles: self.tiles.max(o.tiles),
            pairs: self.pairs.max(o.pairs),
            partial_a: self.partial_a.max(o.partial_a),
            partial_b: self.partial_b.max(o.partial_b),
            bucket_points: self.bucket_points.max(o.bucket_points),
            chunk_points: self.chunk_points.max(o.chunk_points),
            segment_points: self.segment_points.max(o.segment_points),
            result_points: self.result_points.max(o.result_points),
            affine_a: self.affine_a.max(o.affine_a),
            affine_b: self.affine_b.max(o.affine_b),
            window_buckets: self.window_buckets.max(o.window_buckets),
            bin_pairs: self.bin_pairs.max(o.bin_pairs),
            bin_cursors: self.bin_cursors.max(o.bin_cursors),
        }
    }
}

/// Slots written by one reduction level over `m` entries, `span` per thread.
pub fn level_outputs(m: usize, span: u32) -> usize {
    2 * m.div_ceil(span as usize)
}

/// Entries a pair level can leave of a window (or a group of windows) with at most `m` entries
/// in `nb` buckets, after `level` levels (1 = after the first): each bucket keeps
/// ceil(count / 2), so the total is at most (m_prev + nb) / 2 per level.
pub fn pair_outputs(m: usize, nb: usize, level: u32) -> usize {
    let mut out = m;
    for _ in 0..level {
        out = (out + nb).div_ceil(2);
    }
    out.min(m.max(1))
}

/// Work items (a thread for G1, a lane pair for G2) of a pair level with at most `slots`
/// output slots on `sm_count` SMs with `resident` work items per SM (the driver's occupancy
/// figure for the kernel; on sm_90 the G1 pair kernels take 146–148 registers, 3 blocks of 128
/// threads): about [`PAIR_SLOTS`] slots each, and at most one wave, with more slots each:
/// every item does the same work, so a second, partial wave would idle most of the device
/// while it runs.
pub fn pair_threads(slots: usize, sm_count: u32, resident: usize) -> usize {
    slots
        .div_ceil(PAIR_SLOTS)
        .clamp(1, sm_count.max(1) as usize * resident.max(1))
}

/// Points per bucket of a pass (G1; twice that for G2) from which cutting a one-chunk MSM of
/// staged scalars in two pays ([`overlap_pays`]).
pub const OVERLAP_POINTS_PER_BUCKET: usize = 9;

/// Whether an MSM of `n` staged scalars gains by running in two chunks, the second one's
/// upload under the first one's sort and accumulation, with `pass_buckets` buckets a pass of
/// `xyzz_bytes`-byte points. Measured on an H100 (docs/perf.md, thirty-second session): the
/// upload phase shrinks by about 0.19 ns a point of `n` (26 ms at 2^27), and adding the second
/// chunk's buckets into the first's cost about 1.6 ns a G1 bucket (10–11 ms for 6.3–6.8
/// million) through the reduction chain that addition took then: even at about 8 points a
/// bucket. (The elementwise addition that replaced the chain is predicted at 0.6–0.8 ns a
/// bucket, about four points; the rule moves when that is measured.) G1 2^26 at 9.8 points a
/// bucket gained 5.7 ms, at 16 7.7 ms, 2^27 at 20–21 points 15.6–19.3 ms. G2's additions cost
/// three times the Fp products for a point twice the size: taken as twice the points a bucket.
pub fn overlap_pays(n: usize, pass_buckets: usize, xyzz_bytes: usize) -> bool {
    let per_bucket = OVERLAP_POINTS_PER_BUCKET * (xyzz_bytes / 192).max(1);
    n >= per_bucket.saturating_mul(pass_buckets)
}

/// Scalars per staging buffer of a workspace with `staging` scalars of staging: two buffers of
/// a piece each, or buffers of [`PIECE`] scalars where the staging holds more than two pieces
/// ([`Sizes::staging`]). At least every plan's piece whose staging `staging` covers.
pub fn staging_slot(staging: usize) -> usize {
    (staging / 2).min(PIECE)
}

fn floor_log2(x: usize) -> u32 {
    usize::BITS - 1 - x.max(1).leading_zeros()
}

impl Plan {
    /// The plan with the largest chunk and pass that fit `input.allowance`. Pair levels and
    /// the binned scatter are kept only where they fit without cutting the MSM into more
    /// pieces (a narrower window, fewer windows per pass, a smaller chunk) than it takes
    /// without them; the pair levels then group as many windows per launch as fit
    /// (`PlanInput::pair_group` at most). The binned scatter is added only where it narrows no
    /// such group: where both do not fit, the pair levels are kept before it. Without pair
    /// levels, a binned scatter whose usual groups' buffer does not fit runs in narrower groups
    /// where theirs does.
    pub fn new(input: &PlanInput) -> Result<Plan, MsmError> {
        let plan = Self::shaped(input)?;
        Ok(plan.with_upload_overlap(input).unwrap_or(plan))
    }

    /// [`Plan::new`] before any upload overlap.
    fn shaped(input: &PlanInput) -> Result<Plan, MsmError> {
        let asked = input.levels();
        if asked > MAX_AFFINE_LEVELS {
            return Err(MsmError::BadAffineLevels {
                levels: asked,
                max: MAX_AFFINE_LEVELS,
            });
        }
        let input = &PlanInput {
            affine_levels: Some(asked),
            ..*input
        };
        let plain = Self::fit(&PlanInput {
            affine_levels: Some(0),
            binned_scatter: Some(false),
            ..*input
        })?;
        // The plan for `c` where it keeps the plain plan's shape.
        let same_shape = |c: &PlanInput| -> Option<Plan> {
            let p = Self::fit(c).ok()?;
            ((p.bits, p.pass_windows, p.chunk) == (plain.bits, plain.pass_windows, plain.chunk))
                .then(|| p.widest_group(input))
        };
        // The binned scatter at the plain plan's shape: in the usual groups, or where their
        // second pair buffer does not fit beside it, in the widest narrower groups that do
        // (a group more re-reads the chunk's scalars once: G1 2^27 in two chunks under 16 GiB
        // scattered in 133 ms so, against 126 in the usual groups and 189 in one pass, on an
        // H100; docs/perf.md, thirtieth session).
        let binned_only = || {
            if !input.binned() {
                return None;
            }
            let c = PlanInput {
                affine_levels: Some(0),
                ..*input
            };
            same_shape(&c).or_else(|| {
                (1..bin_windows(plain.pass_windows))
                    .rev()
                    .map(|g| plain.with_bin_group(g))
                    .find(|p| p.bytes(input.xyzz_bytes) <= input.allowance)
            })
        };
        if asked == 0 {
            return Ok(binned_only().unwrap_or(plain));
        }
        let levels = same_shape(&PlanInput {
            binned_scatter: Some(false),
            ..*input
        });
        let Some(levels) = levels else {
            return Ok(binned_only().unwrap_or(plain));
        };
        if input.binned() {
            if let Some(both) = same_shape(input) {
                if both.pair_group >= levels.pair_group {
                    return Ok(both);
                }
            }
        }
        Ok(levels)
    }

    /// `self` (a one-chunk plan of staged scalars made from `input` before any overlap) cut
    /// into two even chunks whose every piece has a staging buffer of its own, where
    /// `input.upload_overlap` asks for it (`None`: where [`overlap_pays`]) and it fits the
    /// allowance. The copy stream then uploads the second chunk's pieces while the first
    /// chunk is sorted and accumulated, instead of after it; the second chunk's buckets are
    /// added into the first's (`Sizes::chunk_points`).
    pub fn with_upload_overlap(&self, input: &PlanInput) -> Option<Plan> {
        let n = input.n;
        if !input.staged || n < 2 || self.chunks(n) != 1 {
            return None;
        }
        let wanted = match input.upload_overlap {
            Some(asked) => asked,
            None => overlap_pays(
                n,
                self.pass_windows as usize * self.buckets as usize,
                input.xyzz_bytes,
            ),
        };
        if !wanted {
            return None;
        }
        let mut p = self.reshaped(input, self.pass_windows, n.div_ceil(2));
        p.sizes.staging = p.chunk.div_ceil(p.piece).max(2) * p.piece;
        (p.bytes(input.xyzz_bytes) <= input.allowance).then_some(p)
    }

    /// `self` (planned with one window per pair-level launch) with as few groups of windows
    /// per pass as fit: the widest group, at most `input.pair_group` (0: a pass), whose plan
    /// fits `input.allowance` and whose level buffers take at most [`PAIR_LEVEL_SHARE`] of
    /// it (one window when no wider group does), then narrowed to the pass's windows spread
    /// evenly over that many groups, which costs no time (the group count is what does) and
    /// holds less memory.
    fn widest_group(self, input: &PlanInput) -> Plan {
        if self.affine_levels == 0 {
            return self;
        }
        let most = match input.pair_group {
            0 => self.pass_windows,
            g => g.min(self.pass_windows),
        };
        let xyzz = input.xyzz_bytes;
        let share = input.allowance / PAIR_LEVEL_SHARE;
        let widest = (1..=most)
            .rev()
            .map(|g| self.with_pair_group(g))
            .find(|p| p.bytes(xyzz) <= input.allowance && p.level_bytes(xyzz) <= share)
            .unwrap_or(self);
        let windows = self.pass_windows.max(1);
        let groups = windows.div_ceil(widest.pair_group.max(1));
        self.with_pair_group(windows.div_ceil(groups))
    }

    /// Device bytes of the pair levels' buffers (points, keys, counts and starts).
    pub fn level_bytes(&self, xyzz: usize) -> usize {
        let without = level_sizes(self.sizes, 0, 0, 0);
        self.sizes.bytes(xyzz) - without.bytes(xyzz)
    }

    /// `self` with the pair levels of `group` windows (at least 1, at most a pass) run in one
    /// launch per level, its level buffers sized for them.
    pub fn with_pair_group(mut self, group: u32) -> Plan {
        let g = group.clamp(1, self.pass_windows.max(1));
        self.pair_group = g;
        // A group's entries: at most a chunk's from each of its sets' digit windows.
        let digits = (g * self.copies).min(window_count(self.bits)) as usize;
        self.sizes = level_sizes(
            self.sizes,
            self.affine_levels,
            digits * self.chunk,
            g as usize * self.buckets as usize,
        );
        self
    }

    /// The plan with the largest chunk and pass that fit `input.allowance`, with the pair
    /// levels it asks for.
    fn fit(input: &PlanInput) -> Result<Plan, MsmError> {
        if input.n > MAX_POINTS {
            return Err(MsmError::TooLarge {
                len: input.n,
                max: MAX_POINTS,
            });
        }
        check_width(input.bits, input.copies)?;
        let n = input.n.max(1);
        let preferred = input
            .bits
            .unwrap_or_else(|| window_bits(input.tail.clamp(1, n), input.xyzz_bytes));
        // A forced width is kept; a chosen one may narrow when even one window does not fit.
        let widths: Vec<u32> = match input.bits {
            Some(b) => vec![b],
            None => (MIN_WINDOW_BITS.max(4).min(preferred)..=preferred)
                .rev()
                .collect(),
        };
        let mut least = usize::MAX;
        for &bits in &widths {
            let windows = window_count(bits).div_ceil(input.copies);
            // Halve the windows per pass until a chunk of a useful size fits, then accept any.
            let mut passes: Vec<u32> = Vec::new();
            let mut w = windows;
            loop {
                passes.push(w);
                if w == 1 {
                    break;
                }
                w = w.div_ceil(2);
            }
            let good_chunk = n.min(1 << 16);
            for min_chunk in [good_chunk, 1] {
                for &pass_windows in &passes {
                    let fit = Self::largest_chunk(input, bits, pass_windows);
                    if let Some(plan) = fit {
                        if plan.chunk >= min_chunk {
                            // As many chunks, of equal size: no short last chunk, and buffers
                            // no larger than the chunks need, which leaves room for the binned
                            // scatter's where the largest chunk did not.
                            let even = n.div_ceil(plan.chunks(n));
                            return Ok(Self::with_chunk(input, bits, pass_windows, even));
                        }
                    }
                    let one = Self::with_chunk(input, bits, pass_windows, 1);
                    least = least.min(one.sizes.bytes(input.xyzz_bytes));
                }
            }
        }
        Err(MsmError::AllowanceTooSmall {
            allowance: input.allowance,
            needed: least,
        })
    }

    /// The plan for a given chunk size.
    pub fn with_chunk(input: &PlanInput, bits: u32, pass_windows: u32, chunk: usize) -> Plan {
        let buckets = buckets_per_window(bits);
        let copies = input.copies.max(1);
        let pass_digits = pass_digits(bits, pass_windows, copies) as usize;
        let pairs = chunk * pass_digits;
        let threads = input.sm_count.max(1) as usize * 1024;
        let span_affine = (1u32 << floor_log2(pairs / threads).clamp(3, 7)).max(8);
        // The buckets of a window are summed in segments; aim for a few hundred threads per SM.
        let all_buckets = pass_windows as usize * buckets as usize;
        let seg_target = input.sm_count.max(1) as usize * 384;
        let seg_log = floor_log2(all_buckets / seg_target).min(bits - 1);
        let segments = all_buckets >> seg_log;
        let hist = pass_windows as usize * buckets as usize;
        // A pass of several chunks adds each later chunk's buckets into the pass's.
        let chunked = chunk < input.n.max(1);
        let chunk_points = if chunked { hist } else { 0 };
        // Every chain of levels (tail pairs, ones, segment sums) starts in buffer A. It also
        // keeps the room a chain over a pass's buckets took before a later chunk's buckets
        // were added elementwise: without it, plans made under the same allowance take other
        // chunks, and the workspaces that cover a tight proof's MSMs (`covering_of`) come out
        // smaller than the plans they must serve (`plans_cut_to_run_in_a_covering_workspace`).
        let first = level_outputs(pairs, span_affine)
            .max(level_outputs(chunk.min(PIECE), SPAN_ONES))
            .max(level_outputs(segments, SPAN_XYZZ))
            .max(level_outputs(chunk_points, SPAN_XYZZ));
        let second = level_outputs(first, SPAN_XYZZ);
        let piece = chunk.min(PIECE);
        let levels = input.levels();
        let nb = buckets as usize;
        let sizes = Sizes {
            staging: if input.staged { 2 * piece } else { 0 },
            canon: chunk,
            index: if input.split { chunk } else { 0 },
            hist,
            tiles: hist.div_ceil(SCAN_TILE),
            pairs,
            partial_a: first,
            partial_b: second,
            bucket_points: hist,
            chunk_points,
            segment_points: segments,
            result_points: window_count(bits).div_ceil(copies) as usize + 1,
            affine_a: 0,
            affine_b: 0,
            window_buckets: 0,
            bin_pairs: 0,
            bin_cursors: 0,
        };
        let plan = Plan {
            bits,
            windows: window_count(bits).div_ceil(copies),
            copies,
            buckets,
            pass_windows,
            chunk,
            piece,
            span_affine,
            seg_log,
            affine_levels: levels,
            pair_group: 1,
            bin_windows: 0,
            bin_shift: 0,
            sizes: level_sizes(sizes, levels, chunk * pass_digits.min(copies as usize), nb),
        };
        if input.binned() {
            plan.with_bin_group(bin_windows(pass_windows))
        } else {
            plan
        }
    }

    /// `self` with the binned scatter in groups of `group` windows (at least 1, at most a
    /// pass), its second pair buffer (one group's pairs) and bin cursors sized for them.
    pub fn with_bin_group(mut self, group: u32) -> Plan {
        let g = group.clamp(1, self.pass_windows.max(1));
        let digits = pass_digits(self.bits, self.pass_windows, self.copies) as usize;
        self.bin_windows = g;
        self.bin_shift = bin_shift(self.chunk * self.copies as usize, self.bits, g);
        self.sizes.bin_pairs = self.chunk * digits.min(g as usize * self.copies as usize);
        self.sizes.bin_cursors = MAX_BINS + 2;
        self
    }

    fn largest_chunk(input: &PlanInput, bits: u32, pass_windows: u32) -> Option<Plan> {
        let n = input.n.max(1);
        let digits = pass_digits(bits, pass_windows, input.copies) as u64;
        let cap = n
            .min(MAX_CHUNK)
            .min((split_pair_cap(input).min(MAX_PAIRS) / digits) as usize)
            .max(1);
        let fits = |chunk: usize| {
            let p = Self::with_chunk(input, bits, pass_windows, chunk);
            (p.sizes.bytes(input.xyzz_bytes) <= input.allowance).then_some(p)
        };
        largest_up_to(cap, fits)
    }

    /// `self` (made by [`Plan::new`] from `input`) cut to fit buffers that `held` already
    /// provides: the same width, pair levels and scatter, with as many windows per pass as
    /// give the fewest pieces (chunks times passes) whose every buffer `held` covers, each
    /// such pass cut into equal chunks as large as fit. `None` where that takes more than
    /// twice `self`'s pieces, or where nothing fits: a call then does better to reallocate.
    /// (A piece more costs its launches and a pass over the chunk's scalars, a few
    /// milliseconds at most at these sizes; a reallocation frees and allocates gigabytes and
    /// waits for the stream.)
    ///
    /// On a card without room for two plans' buffers at once, the MSMs of a proof (dense H
    /// and L, split A and B) each fill the allowance with buffers of slightly different
    /// shapes, so each would otherwise free and allocate gigabytes and wait for the stream.
    /// A chunked plan holds one bucket array more than a one-chunk plan of its windows, so a
    /// workspace made for several plans may hold their windows only with fewer per pass.
    pub fn within(&self, input: &PlanInput, held: &Sizes) -> Option<Plan> {
        if held.covers(&self.sizes) {
            return Some(*self);
        }
        let n = input.n.max(1);
        let pieces = |p: &Plan| p.chunks(n) * p.passes() as usize;
        let binned = self.bin_windows > 0;
        let best_for = |pass_windows: u32| {
            let make = |chunk: usize| {
                let p = self.reshaped(input, pass_windows, chunk);
                (held.covers(&p.sizes) && (p.bin_windows > 0) == binned).then_some(p)
            };
            let largest = largest_up_to(self.chunk, make)?;
            Some(self.reshaped(input, pass_windows, n.div_ceil(largest.chunks(n))))
        };
        (1..=self.pass_windows)
            .rev()
            .filter_map(best_for)
            .min_by_key(|p| pieces(p))
            .filter(|p| pieces(p) <= 2 * pieces(self))
    }

    /// A plan of `self`'s shape (made by [`Plan::new`] from `input`: width, pair levels and
    /// their group, scatter) for passes of `pass_windows` windows and chunks of `chunk`
    /// points.
    pub fn reshaped(&self, input: &PlanInput, pass_windows: u32, chunk: usize) -> Plan {
        let shaped = PlanInput {
            affine_levels: Some(self.affine_levels),
            binned_scatter: Some(self.bin_windows > 0),
            ..*input
        };
        let mut p = Self::with_chunk(&shaped, self.bits, pass_windows, chunk);
        if self.bin_windows > 0 {
            p = p.with_bin_group(self.bin_windows.min(p.bin_windows));
        }
        if p.affine_levels > 0 {
            p.with_pair_group(self.pair_group)
        } else {
            p
        }
    }

    /// Chunks per pass.
    pub fn chunks(&self, n: usize) -> usize {
        n.max(1).div_ceil(self.chunk)
    }

    /// Bits between consecutive bucket sets: the weight 2^(this) of one set's sum over the
    /// previous one's is `copies` windows' worth.
    pub fn set_bits(&self) -> u32 {
        self.bits * self.copies
    }

    /// Passes over the scalars.
    pub fn passes(&self) -> u32 {
        self.windows.div_ceil(self.pass_windows)
    }

    /// Device bytes of the work buffers for XYZZ points of `xyzz` bytes.
    pub fn bytes(&self, xyzz: usize) -> usize {
        self.sizes.bytes(xyzz)
    }
}

/// The plan of the largest chunk up to `cap` that `fits` gives one for: `cap` itself, else the
/// largest below it by bisection. `cap` is tried apart because a chunk of every point holds no
/// second bucket array ([`Sizes::chunk_points`]), so it may fit where a smaller one does not;
/// below it, buffers grow with the chunk, so the chunks that fit are those below some bound.
fn largest_up_to(cap: usize, fits: impl Fn(usize) -> Option<Plan>) -> Option<Plan> {
    if let Some(p) = fits(cap) {
        return Some(p);
    }
    let (mut lo, mut hi) = (0usize, cap);
    let mut best = None;
    while lo + 1 < hi {
        let mid = lo + (hi - lo) / 2;
        match fits(mid) {
            Some(p) => {
                lo = mid;
                best = Some(p);
            }
            None => hi = mid,
        }
    }
    best
}

/// Checks a forced window width and the shifted copies of the bases made for it: the width
/// within the supported range, and 1 to its window count copies (more than one only with a
/// width, since copies are made for one).
pub fn check_width(bits: Option<u32>, copies: u32) -> Result<(), MsmError> {
    if let Some(bits) = bits {
        if !(MIN_WINDOW_BITS..=MAX_WINDOW_BITS).contains(&bits) {
            return Err(MsmError::BadWindow {
                bits,
                min: MIN_WINDOW_BITS,
                max: MAX_WINDOW_BITS,
            });
        }
    }
    if copies != 1 {
        let bits = bits.unwrap_or(0);
        let max = if bits == 0 { 1 } else { window_count(bits) };
        if copies == 0 || copies > max {
            return Err(MsmError::BadCopies { copies, bits, max });
        }
    }
    Ok(())
}

/// Shifted copies for `windows` digit windows: the most, 2 to `windows`, for which `fits`
/// holds, then the fewest that give as many bucket sets (11 windows in sets of 6 need no 8
/// copies); 1 where two do not fit, so that an MSM runs on the bases alone.
pub fn most_copies(windows: u32, mut fits: impl FnMut(u32) -> bool) -> u32 {
    let Some(most) = (2..=windows).rev().find(|&t| fits(t)) else {
        return 1;
    };
    windows.div_ceil(windows.div_ceil(most))
}

/// The most pairs a chunk of a plan for a tail estimate below its points (a split plan)
/// holds: [`SPLIT_PAIR_SHARE`] of what a dense plan of the same points would (a chunk of all
/// of them at its width); no limit for a plan of the whole.
/// A split plan's pairs must hold a chunk's whole tail in the worst case, and the narrow
/// windows a small tail estimate picks would make that up to 64 digits a point: 16 GiB of
/// pairs for 2^25 G2 points whose real tail fills a few bytes of them. Smaller chunks bound it
/// at the cost of more chunks, each cheap when its tail is short.
fn split_pair_cap(input: &PlanInput) -> u64 {
    if input.tail >= input.n {
        return u64::MAX;
    }
    let n = input.n.clamp(1, MAX_CHUNK);
    let dense = window_count(window_bits(n, input.xyzz_bytes)) as u64 * n as u64;
    dense / SPLIT_PAIR_SHARE.1 * SPLIT_PAIR_SHARE.0
}

/// A split plan's pairs may exceed a dense plan's by this ratio (numerator, denominator): the
/// 2^31 pairs of 2^27 G1 points with a tail of 2^23 (16-bit windows) stay one chunk.
const SPLIT_PAIR_SHARE: (u64, u64) = (5, 4);

/// Digit windows of a pass of `pass_windows` bucket sets: `copies` per set, at most a scalar's.
fn pass_digits(bits: u32, pass_windows: u32, copies: u32) -> u32 {
    (pass_windows * copies.max(1)).min(window_count(bits))
}

/// `sizes` with the pair levels' buffers for `levels` levels over groups of at most `m`
/// entries in `nb` buckets.
fn level_sizes(sizes: Sizes, levels: u32, m: usize, nb: usize) -> Sizes {
    let at = |level: u32| {
        if levels >= level {
            pair_outputs(m, nb, level)
        } else {
            0
        }
    };
    Sizes {
        affine_a: at(1),
        affine_b: at(2),
        window_buckets: if levels >= 1 { nb } else { 0 },
        ..sizes
    }
}

/// Threads a reduction chain launches, level by level, for `m_max` entries: the first level
/// takes `first_span` entries per thread, the rest [`SPAN_XYZZ`]; it ends with one thread.
pub fn level_threads(m_max: usize, first_span: u32) -> Vec<usize> {
    let mut out = vec![m_max.div_ceil(first_span as usize).max(1)];
    while *out.last().unwrap() > 1 {
        let m = 2 * out.last().unwrap();
        out.push(m.div_ceil(SPAN_XYZZ as usize));
    }
    out
}

/// Work buffers that serve every plan an MSM of `base.n` points can be given in
/// `base.allowance`: the dense plan when `dense`, and split plans for every tail its 0/1 split
/// can leave when `split` ([`covering_inputs`]), as [`covering_of`] joins them.
pub fn covering_sizes(base: &PlanInput, dense: bool, split: bool) -> Result<Sizes, MsmError> {
    covering_of(&covering_inputs(base, dense, split), base.allowance)
}

/// The plans an MSM of `base.n` points can be given: the dense plan when `dense`, and split
/// plans for every tail its 0/1 split can leave when `split` (a call samples the tail from its
/// scalars, and the window width follows ⌊log2 tail⌋ alone, so the tails n, n/2, …, 1 meet
/// every plan a split can choose).
pub fn covering_inputs(base: &PlanInput, dense: bool, split: bool) -> Vec<PlanInput> {
    let n = base.n.max(1);
    let mut inputs: Vec<PlanInput> = Vec::new();
    if dense {
        inputs.push(PlanInput {
            tail: n,
            split: false,
            ..*base
        });
    }
    if split {
        let mut tail = n;
        loop {
            inputs.push(PlanInput {
                tail,
                split: true,
                ..*base
            });
            if tail == 1 {
                break;
            }
            tail /= 2;
        }
    }
    inputs
}

/// One workspace for the plans of `inputs` (one group's MSMs, of any lengths and sources) in
/// `allowance`: each buffer the largest any of them asks for. Where the plans made under
/// `allowance` do not fit it together, they are made under the largest smaller allowance
/// where they do (found by bisection), so that one workspace still holds every plan's buffers
/// and a call planned under the whole allowance runs cut to it ([`Plan::within`]) instead of
/// reallocating; where not even a sixteenth of the allowance gives that, the first plan, then
/// each next one only if the whole still fits. A workspace of these sizes serves the first
/// call of any of them without allocating ([`Sizes::covers`]).
pub fn covering_of(inputs: &[PlanInput], allowance: usize) -> Result<Sizes, MsmError> {
    let Some(xyzz) = inputs.first().map(|i| i.xyzz_bytes) else {
        return Ok(Sizes::default());
    };
    // Every plan under `under`, joined; None where one does not fit it at all.
    let union = |under: usize| -> Option<Sizes> {
        let mut all: Option<Sizes> = None;
        for input in inputs {
            let sizes = Plan::new(&PlanInput {
                allowance: under,
                ..*input
            })
            .ok()?
            .sizes;
            all = Some(all.map_or(sizes, |a| a.max(&sizes)));
        }
        all
    };
    let fits = |under: usize| union(under).filter(|u| u.bytes(xyzz) <= allowance);
    if let Some(whole) = fits(allowance) {
        return Ok(whole);
    }
    let (mut lo, mut hi) = (allowance / 16, allowance);
    if let Some(mut best) = fits(lo) {
        while hi - lo > (allowance >> 10).max(1) {
            let mid = lo + (hi - lo) / 2;
            match fits(mid) {
                Some(u) => {
                    lo = mid;
                    best = u;
                }
                None => hi = mid,
            }
        }
        return Ok(best);
    }
    let mut covering: Option<Sizes> = None;
    for input in inputs {
        let sizes = Plan::new(&PlanInput {
            allowance,
            ..*input
        })?
        .sizes;
        let next = covering.map_or(sizes, |c| c.max(&sizes));
        if covering.is_some() && next.bytes(xyzz) > allowance {
            continue;
        }
        covering = Some(next);
    }
    Ok(covering.unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_are_the_fewest_that_give_the_most_that_fit() {
        // 12 windows of 22 bits, room for up to 4 copies: 3 sets of 4 windows.
        assert_eq!(most_copies(12, |t| t <= 4), 4);
        // Room for 5 still gives 3 sets, so 4 are made.
        assert_eq!(most_copies(12, |t| t <= 5), 4);
        // Room for 6: 2 sets of 6.
        assert_eq!(most_copies(12, |t| t <= 6), 6);
        // Room for every window's copy.
        assert_eq!(most_copies(12, |_| true), 12);
        // No room for a second copy: the bases alone.
        assert_eq!(most_copies(12, |t| t < 2), 1);
        // 11 windows of 24 bits, room for 8: 2 sets of 6.
        assert_eq!(most_copies(11, |t| t <= 8), 6);
    }

    #[test]
    fn split_plans_hold_no_more_pairs_than_a_dense_plan_allows() {
        // A small tail estimate picks narrow windows; its chunks shrink so that its pairs stay
        // within SPLIT_PAIR_SHARE of the dense plan's, where before they took up to 2^31.
        for (xyzz, n) in [(384, 1usize << 25), (192, 1 << 27), (192, 1 << 20)] {
            let base = PlanInput {
                xyzz_bytes: xyzz,
                ..input(n, 400 << 30)
            };
            let dense = Plan::new(&base).unwrap();
            let cap = dense.sizes.pairs / 4 * 5;
            for tail in [1, 100, 1 << 11, n / 64, n / 4] {
                let p = Plan::new(&PlanInput {
                    tail,
                    split: true,
                    ..base
                })
                .unwrap();
                assert!(
                    p.sizes.pairs <= cap + cap / 1000,
                    "n {n} tail {tail}: {} pairs against {} dense",
                    p.sizes.pairs,
                    dense.sizes.pairs
                );
                assert!(p.sizes.pairs >= p.chunk, "a chunk's pairs hold its points");
            }
        }
        // 2^27 G1 points with a tail of 2^23 (16-bit windows): still one chunk.
        let g1 = input(1 << 27, 400 << 30);
        let p = Plan::new(&PlanInput {
            tail: 1 << 23,
            split: true,
            ..g1
        })
        .unwrap();
        assert_eq!(p.chunks(1 << 27), 1);
        // 2^25 G2 points with any tail: the covering workspace is about the dense plan's
        // (11 GiB), not the 36 GiB of whole chunks at 4-bit windows.
        let g2 = PlanInput {
            xyzz_bytes: 384,
            ..input(1 << 25, 400 << 30)
        };
        let all = covering_sizes(&g2, true, true).unwrap();
        assert!(all.bytes(384) < 14 << 30, "{} bytes", all.bytes(384));
    }

    #[test]
    fn plans_cut_to_run_in_a_covering_workspace() {
        // A tight card's proof: the workspace reserved for dense and split host calls under
        // one allowance, then each call planned under the same allowance (it fills it, so no
        // workspace serves two calls' plans).
        for (n, allowance) in [
            (1usize << 27, 15usize << 30),
            (1 << 26, 5 << 30),
            (1 << 20, 64 << 20),
        ] {
            let base = PlanInput {
                staged: true,
                ..input(n, allowance)
            };
            let held = covering_sizes(&base, true, true).unwrap();
            for (split, tail) in [(false, n), (true, n / 3), (true, n / 50), (true, 1)] {
                let call = PlanInput {
                    split,
                    tail,
                    ..base
                };
                let plan = Plan::new(&call).unwrap();
                let cut = plan.within(&call, &held).unwrap_or_else(|| {
                    panic!(
                        "2^{} {split} {tail}: {plan:?} not cut into {held:?}",
                        n.ilog2()
                    )
                });
                assert!(held.covers(&cut.sizes), "{cut:?}");
                assert_eq!(
                    (cut.bits, cut.affine_levels, cut.bin_windows > 0),
                    (plan.bits, plan.affine_levels, plan.bin_windows > 0)
                );
                assert!(cut.pass_windows <= plan.pass_windows && cut.pair_group <= plan.pair_group);
                let pieces = |p: &Plan| p.chunks(n) * p.passes() as usize;
                assert!(
                    cut.chunk <= n && pieces(&cut) <= 2 * pieces(&plan),
                    "{cut:?}"
                );
                // The shape alone rebuilds the plan at its own chunk.
                assert_eq!(plan.reshaped(&call, plan.pass_windows, plan.chunk), plan);
            }
        }
        // A plan the buffers already serve is kept; buffers that hold no chunk give none.
        let call = input(1 << 20, 64 << 20);
        let plan = Plan::new(&call).unwrap();
        assert_eq!(plan.within(&call, &plan.sizes), Some(plan));
        assert_eq!(plan.within(&call, &Sizes::default()), None);
        // A chunk far below the plan's (many more chunks) is refused: reallocating pays.
        let small = Plan::with_chunk(&call, plan.bits, plan.pass_windows, plan.chunk / 8).sizes;
        if plan.chunk >= 16 {
            assert_eq!(plan.within(&call, &small), None);
        }
    }

    #[test]
    fn one_workspace_serves_a_tight_proofs_msms_as_allowances_drift() {
        // A 2^27 proof's G1 MSMs on an 80 GB card: H dense from the device, L, A and B1 from
        // the host (dense or split), reserved together under the warm-up's allowance, then
        // called under each proof's, which drifts by a few tenths of a percent.
        let n = 1usize << 27;
        let shapes = [
            (n, false),
            (n - n / 20, true),
            (n - n / 50, true),
            (n / 5 * 3, true),
        ];
        let reserved = 15_967_033_754usize;
        let mut inputs = Vec::new();
        for &(len, host) in &shapes {
            let base = PlanInput {
                staged: host,
                ..input(len, reserved)
            };
            inputs.extend(covering_inputs(&base, true, host));
        }
        let held = covering_of(&inputs, reserved).unwrap();
        assert!(held.bytes(192) <= reserved);
        let mut cut_short = 0;
        for allowance in [
            reserved,
            15_943_586_202,
            15_834_250_932,
            reserved + (64 << 20),
        ] {
            for &(len, host) in &shapes {
                let tails: &[(bool, usize)] = if host {
                    &[
                        (false, len),
                        (true, len / 2),
                        (true, len / 40),
                        (true, 1000),
                    ]
                } else {
                    &[(false, len)]
                };
                for &(split, tail) in tails {
                    let call = PlanInput {
                        staged: host,
                        split,
                        tail,
                        ..input(len, allowance)
                    };
                    let plan = Plan::new(&call).unwrap();
                    let cut = plan.within(&call, &held);
                    assert!(
                        cut.is_some_and(|c| held.covers(&c.sizes)),
                        "{len} {host} {split} {tail} under {allowance}: {plan:?} not cut into {held:?}"
                    );
                    cut_short += usize::from(cut.is_some_and(|c| c.chunk < plan.chunk));
                }
            }
        }
        // The allowance is tight: most calls run a smaller chunk than they planned.
        assert!(cut_short >= 8, "{cut_short} plans cut");
    }

    #[test]
    fn covering_sizes_serve_every_tail_a_split_can_leave() {
        for xyzz in [192, 384] {
            for n in [1000, 1 << 16, (1 << 20) + 7, 1 << 24, 1 << 27] {
                let base = PlanInput {
                    xyzz_bytes: xyzz,
                    ..input(n, 400 << 30)
                };
                let all = covering_sizes(&base, true, true).unwrap();
                assert!(all.bytes(xyzz) <= base.allowance);
                let mut tails: Vec<usize> =
                    (0..=27).map(|k| 1usize << k).filter(|&t| t <= n).collect();
                tails.extend([n, n - 1, n / 3, n / 100 + 1, 3, 5000.min(n)]);
                for tail in tails {
                    for split in [false, true] {
                        let need = Plan::new(&PlanInput {
                            tail,
                            split,
                            ..base
                        })
                        .unwrap()
                        .sizes;
                        assert!(
                            all.covers(&need),
                            "n {n} tail {tail} split {split} (xyzz {xyzz}): {need:?} not in {all:?}"
                        );
                    }
                }
                // Dense only: the dense plan exactly; split only: no smaller than any tail's.
                let dense = covering_sizes(&base, true, false).unwrap();
                assert_eq!(dense, Plan::new(&base).unwrap().sizes);
            }
        }
        // A tight allowance: what is kept still fits it, and the dense plan runs in it.
        let tight = input(1 << 20, 64 << 20);
        let kept = covering_sizes(&tight, true, true).unwrap();
        assert!(kept.bytes(192) <= 64 << 20);
        assert!(Plan::new(&tight).unwrap().within(&tight, &kept).is_some());
    }

    fn input(n: usize, allowance: usize) -> PlanInput {
        PlanInput {
            n,
            tail: n,
            bits: None,
            split: false,
            staged: true,
            xyzz_bytes: 192,
            sm_count: 132,
            allowance,
            affine_levels: Some(0),
            pair_group: 0,
            binned_scatter: Some(false),
            copies: 1,
            upload_overlap: Some(false),
        }
    }

    #[test]
    fn copies_share_bucket_sets_and_size_buffers_by_digit_windows() {
        let with = |copies: u32, bits: Option<u32>, allowance: usize| {
            Plan::new(&PlanInput {
                copies,
                bits,
                binned_scatter: None,
                ..input(1 << 26, allowance)
            })
        };
        // 11 windows of 24 bits in one set; 6 copies leave two sets, the second of 5 windows.
        let one = with(11, Some(24), 100 << 30).unwrap();
        assert_eq!((one.windows, one.copies, one.set_bits()), (1, 11, 264));
        assert_eq!(one.sizes.pairs, 11 << 26);
        assert_eq!(one.sizes.bucket_points, 1 << 23);
        assert_eq!(one.sizes.result_points, 2);
        assert!(one.bin_windows > 0 && one.sizes.bin_pairs <= 11 << 26);
        let two = with(6, Some(24), 100 << 30).unwrap();
        assert_eq!((two.windows, two.passes()), (2, 1));
        assert_eq!(two.sizes.pairs, 11 << 26, "12 window slots, 11 windows");
        // A tight allowance cuts sets into passes, never a set.
        let tight = with(6, Some(24), two.bytes(192) / 2).unwrap();
        assert!(
            tight.passes() == 2 || tight.chunks(1 << 26) > 1,
            "{tight:?}"
        );
        assert_eq!(tight.copies, 6);
        // Copies need their width, and at most one per window.
        assert!(matches!(
            with(2, None, 100 << 30),
            Err(MsmError::BadCopies { copies: 2, .. })
        ));
        assert!(matches!(
            with(12, Some(24), 100 << 30),
            Err(MsmError::BadCopies {
                copies: 12,
                bits: 24,
                max: 11
            })
        ));
        assert!(matches!(
            with(0, Some(24), 100 << 30),
            Err(MsmError::BadCopies { copies: 0, .. })
        ));
        // Pair levels size their buffers by the digit windows a group holds.
        let levels = Plan::new(&PlanInput {
            copies: 6,
            bits: Some(24),
            affine_levels: Some(2),
            ..input(1 << 20, 100 << 30)
        })
        .unwrap();
        assert_eq!(levels.affine_levels, 2);
        assert!(levels.sizes.affine_a <= pair_outputs(11 << 20, 2 << 23, 1));
    }

    #[test]
    fn roomy_allowance_takes_every_window_and_the_largest_chunk() {
        let p = Plan::new(&input(1 << 26, 100 << 30)).unwrap();
        assert_eq!(p.bits, window_bits(1 << 26, 192));
        assert_eq!(p.pass_windows, p.windows);
        assert_eq!(p.chunk, 1 << 26);
        assert_eq!(p.piece, PIECE);
        assert!(p.bytes(192) <= 100 << 30);
        let small = Plan::new(&input(1000, 1 << 30)).unwrap();
        assert_eq!(small.chunk, 1000);
        assert_eq!(small.passes(), 1);
    }

    #[test]
    fn tight_allowances_shrink_chunk_then_windows_then_width() {
        let roomy = Plan::new(&input(1 << 20, 64 << 30)).unwrap();
        for allowance in [256 << 20, 64 << 20, 16 << 20, 4 << 20, 1 << 20, 300 << 10] {
            let p = Plan::new(&input(1 << 20, allowance)).unwrap();
            assert!(p.bytes(192) <= allowance, "{p:?} over {allowance}");
            assert!(p.chunk >= 1 && p.pass_windows >= 1);
            assert!(p.bits <= roomy.bits);
        }
        let tiny = Plan::new(&input(1 << 20, 300 << 10)).unwrap();
        assert!(tiny.chunk < 1 << 20 || tiny.pass_windows < tiny.windows);
    }

    #[test]
    fn forced_width_is_kept_or_refused() {
        let mut i = input(1 << 16, 1 << 30);
        i.bits = Some(9);
        assert_eq!(Plan::new(&i).unwrap().bits, 9);
        i.bits = Some(30);
        assert!(matches!(
            Plan::new(&i),
            Err(MsmError::BadWindow { bits: 30, .. })
        ));
        i.bits = Some(20);
        i.allowance = 1 << 20;
        let err = Plan::new(&i).unwrap_err();
        assert!(
            matches!(err, MsmError::AllowanceTooSmall { allowance, needed } if allowance == 1 << 20 && needed > 1 << 20),
            "{err}"
        );
    }

    #[test]
    fn hopeless_allowance_names_the_least_that_would_do() {
        let err = Plan::new(&input(100, 1000)).unwrap_err();
        let MsmError::AllowanceTooSmall { allowance, needed } = err else {
            panic!("{err}")
        };
        assert_eq!(allowance, 1000);
        assert!(needed > 1000);
        assert!(Plan::new(&input(100, needed)).is_ok());
    }

    #[test]
    fn too_many_points_are_refused() {
        assert!(matches!(
            Plan::new(&input(MAX_POINTS + 1, usize::MAX)),
            Err(MsmError::TooLarge { .. })
        ));
    }

    #[test]
    fn level_chains_end_with_one_thread_and_fit_their_buffers() {
        for m in [1usize, 2, 7, 8, 9, 1000, 1 << 20, 3 << 28] {
            for span in [8u32, 32, 128] {
                let t = level_threads(m, span);
                assert_eq!(*t.last().unwrap(), 1);
                for w in t.windows(2) {
                    assert!(w[1] < w[0] || w[0] == 1);
                }
            }
        }
        let p = Plan::new(&input(1 << 20, 64 << 30)).unwrap();
        let t = level_threads(p.sizes.pairs, p.span_affine);
        assert!(2 * t[0] <= p.sizes.partial_a);
        if t.len() > 1 {
            assert!(2 * t[1] <= p.sizes.partial_b);
        }
        for (i, &threads) in t.iter().enumerate().skip(2) {
            let cap = if i % 2 == 0 {
                p.sizes.partial_a
            } else {
                p.sizes.partial_b
            };
            assert!(2 * threads <= cap);
        }
    }

    #[test]
    fn pair_levels_fit_beside_the_plan_or_are_dropped() {
        let grouped = |n: usize, allowance: usize, l: u32, group: u32| {
            Plan::new(&PlanInput {
                affine_levels: Some(l),
                pair_group: group,
                ..input(n, allowance)
            })
        };
        let levels = |n: usize, allowance: usize, l: u32| grouped(n, allowance, l, 1);
        let roomy = levels(1 << 26, 100 << 30, 3).unwrap();
        let plain = levels(1 << 26, 100 << 30, 0).unwrap();
        assert_eq!(
            (roomy.affine_levels, roomy.pair_group, plain.pair_group),
            (3, 1, 1)
        );
        assert_eq!((roomy.bits, roomy.chunk), (plain.bits, plain.chunk));
        let nb = roomy.buckets as usize;
        assert_eq!(roomy.sizes.affine_a, ((1 << 26) + nb) / 2);
        assert_eq!(roomy.sizes.affine_b, pair_outputs(1 << 26, nb, 2));
        assert_eq!(roomy.sizes.window_buckets, nb);
        let extra = roomy.bytes(192) - plain.bytes(192);
        assert_eq!(
            extra,
            (roomy.sizes.affine_a + roomy.sizes.affine_b) * 100 + (4 * nb + 2) * 4
        );
        assert_eq!(roomy.level_bytes(192), extra);
        // Groups: a whole pass where its level buffers take at most their share of the
        // allowance, at most the cap asked for, else the most that fit both.
        let wide = grouped(1 << 26, 400 << 30, 3, 0).unwrap();
        let g = wide.pass_windows as usize;
        assert_eq!(wide.pair_group as usize, g);
        assert_eq!(wide.sizes.affine_a, pair_outputs(g << 26, g * nb, 1));
        assert_eq!(wide.sizes.affine_b, pair_outputs(g << 26, g * nb, 2));
        assert_eq!(wide.sizes.window_buckets, g * nb);
        assert!(wide.level_bytes(192) <= (400 << 30) / PAIR_LEVEL_SHARE);
        assert_eq!(grouped(1 << 26, 400 << 30, 3, 4).unwrap().pair_group, 4);
        for room in [100usize << 30, roomy.bytes(192) + 2 * extra, 20 << 30] {
            let mid = grouped(1 << 26, room, 3, 0).unwrap();
            let g = mid.pair_group;
            assert!(g >= 1 && g < mid.pass_windows, "{room}: {mid:?}");
            assert_eq!((mid.bits, mid.chunk), (plain.bits, plain.chunk));
            let fits =
                |p: &Plan| p.bytes(192) <= room && p.level_bytes(192) <= room / PAIR_LEVEL_SHARE;
            // The fewest groups whose widest fits both bounds, the windows spread evenly
            // over them; one window when none wider fits.
            assert!(g == 1 || fits(&mid), "{room}: {mid:?}");
            let groups = mid.pass_windows.div_ceil(g);
            assert_eq!(g, mid.pass_windows.div_ceil(groups), "{room}: {mid:?}");
            if groups > 1 {
                let fewer = mid.pass_windows.div_ceil(groups - 1);
                assert!(!fits(&mid.with_pair_group(fewer)), "{room}: {mid:?}");
            }
        }
        assert!(grouped(1 << 26, 100 << 30, 3, 0).unwrap().pair_group >= 2);
        assert_eq!(plain.sizes.affine_a + plain.sizes.window_buckets, 0);
        // One level needs no second buffer.
        assert_eq!(levels(1 << 20, 1 << 30, 1).unwrap().sizes.affine_b, 0);
        // Where the levels would cut the MSM into more pieces, the plan runs without them.
        let tight = plain.bytes(192) + 1000;
        let dropped = levels(1 << 26, tight, 3).unwrap();
        assert_eq!(dropped.affine_levels, 0);
        assert_eq!(dropped, levels(1 << 26, tight, 0).unwrap());
        assert!(matches!(
            levels(1000, 1 << 30, MAX_AFFINE_LEVELS + 1),
            Err(MsmError::BadAffineLevels {
                levels: 21,
                max: 20
            })
        ));
    }

    #[test]
    fn pair_levels_by_default_for_dense_g2_from_2_21_points() {
        let auto = |n: usize, xyzz: usize, split: bool, tail: usize| {
            Plan::new(&PlanInput {
                affine_levels: None,
                xyzz_bytes: xyzz,
                split,
                tail,
                ..input(n, 400 << 30)
            })
            .unwrap()
            .affine_levels
        };
        for (log, want) in [
            (0, 0),
            (16, 0),
            (20, 0),
            (21, 4),
            (22, 4),
            (23, 5),
            (24, 5),
            (27, 5),
        ] {
            let n = 1usize << log;
            assert_eq!(auto(n, 384, false, n), want, "G2 2^{log}");
            assert_eq!(auto(n + 7, 384, false, n + 7), want, "G2 2^{log} + 7");
            assert_eq!(auto(n, 192, false, n), 0, "G1 2^{log}");
            assert_eq!(auto(n, 384, true, n), 0, "G2 2^{log}, split");
            assert_eq!(auto(n, 384, true, 1), 0, "G2 2^{log}, split, tail 1");
        }
        // An explicit count overrides the rule either way.
        let base = PlanInput {
            xyzz_bytes: 384,
            ..input(1 << 24, 400 << 30)
        };
        assert_eq!(base.levels(), 0);
        assert_eq!(
            PlanInput {
                affine_levels: None,
                ..base
            }
            .levels(),
            5
        );
        let g1 = PlanInput {
            affine_levels: Some(3),
            ..input(1 << 24, 400 << 30)
        };
        assert_eq!(Plan::new(&g1).unwrap().affine_levels, 3);
        // Covering sizes of the automatic choice serve the dense call with its levels.
        let auto_base = PlanInput {
            affine_levels: None,
            ..base
        };
        let cover = covering_sizes(&auto_base, true, true).unwrap();
        assert!(cover.covers(&Plan::new(&auto_base).unwrap().sizes));
    }

    #[test]
    fn bin_buffers_fit_beside_the_plan_or_the_plan_scatters() {
        let with = |n: usize, allowance: usize, binned: Option<bool>, levels: u32| {
            Plan::new(&PlanInput {
                binned_scatter: binned,
                affine_levels: Some(levels),
                ..input(n, allowance)
            })
            .unwrap()
        };
        let plain = with(1 << 26, 100 << 30, Some(false), 0);
        let binned = with(1 << 26, 100 << 30, Some(true), 0);
        assert!(binned.bin_windows > 0 && plain.bin_windows == 0);
        assert_eq!((binned.bits, binned.chunk), (plain.bits, plain.chunk));
        // Left to the plan: binned from BIN_MIN_POINTS of tail, not below.
        assert_eq!(with(1 << 26, 100 << 30, None, 0), binned);
        let least = with(BIN_MIN_POINTS, 100 << 30, None, 0);
        assert_eq!(least.bin_windows, bin_windows(least.pass_windows));
        assert_eq!(with(BIN_MIN_POINTS - 1, 100 << 30, None, 0).bin_windows, 0);
        // Three groups of windows; the second buffer holds a group's pairs.
        assert_eq!(binned.bin_windows, binned.pass_windows.div_ceil(BIN_GROUPS));
        let group_pairs = binned.chunk * binned.bin_windows as usize;
        assert_eq!(binned.sizes.bin_pairs, group_pairs);
        assert_eq!(
            binned.bytes(192) - plain.bytes(192),
            (2 * group_pairs + MAX_BINS + 2) * 4
        );
        // Bins of about 2^20 pairs: 2^26 points over 2^19 buckets a window, 2^13 keys a bin.
        assert_eq!((binned.bits, binned.bin_shift), (20, 13));
        // Room beside the plain plan for the buffer of two windows' pairs only: the plan keeps
        // its shape and bins in groups of two.
        let narrow = with(
            1 << 26,
            plain.bytes(192) + (2 * plain.chunk * 2 + MAX_BINS + 2) * 4,
            Some(true),
            0,
        );
        assert!(binned.bin_windows > 2);
        assert_eq!(
            (
                narrow.bits,
                narrow.pass_windows,
                narrow.chunk,
                narrow.bin_windows
            ),
            (plain.bits, plain.pass_windows, plain.chunk, 2)
        );
        assert_eq!(narrow.sizes.bin_pairs, 2 * plain.chunk);
        assert_eq!(narrow.bin_shift, bin_shift(plain.chunk, 20, 2));
        // Less than one window's: the one-pass scatter.
        let none = with(1 << 26, plain.bytes(192) + plain.chunk * 8, Some(true), 0);
        assert_eq!((none.chunk, none.bin_windows), (plain.chunk, 0));
        // Room for one of the two: the pair levels are kept, the binned scatter dropped. (One
        // window per launch: wider groups would take what the binned scatter needs.)
        let one_window = |allowance: usize, binned: bool| {
            Plan::new(&PlanInput {
                binned_scatter: Some(binned),
                affine_levels: Some(2),
                pair_group: 1,
                ..input(1 << 26, allowance)
            })
            .unwrap()
        };
        let levels_only = one_window(100 << 30, false);
        let both = one_window(levels_only.bytes(192), true);
        assert_eq!((both.affine_levels, both.bin_windows), (2, 0));
        // With room for both at one window, a group that the binned scatter would narrow
        // keeps the binned scatter out.
        let room = levels_only.bytes(192) + (binned.bytes(192) - plain.bytes(192));
        let wide = with(1 << 26, 4 * room, Some(false), 2);
        assert!(wide.pair_group > 1);
        assert!(with(1 << 26, 4 * room, Some(true), 2).pair_group >= wide.pair_group);
        // Room for neither: the plain plan.
        let neither = with(1 << 26, plain.bytes(192), Some(true), 2);
        assert_eq!(neither, plain);
    }

    #[test]
    fn bins_hold_about_a_million_pairs_and_fit_the_shared_counters() {
        for bits in 4..=20u32 {
            for log in 0..=27u32 {
                for group in 1..=22u32 {
                    let shift = bin_shift(1 << log, bits, group);
                    assert!(shift < bits, "bits {bits}, 2^{log}, group {group}");
                    let per_window = 1usize << (bits - 1 - shift);
                    assert!(group as usize * per_window <= MAX_BINS || per_window == 1);
                    if shift < bits - 1 && group as usize * per_window * 2 <= MAX_BINS {
                        // Not capped: a bin's expected pairs are about 2^BIN_PAIRS_LOG.
                        assert!(log + shift >= bits - 1 + BIN_PAIRS_LOG - 1);
                    }
                }
            }
        }
    }

    #[test]
    fn pair_outputs_bound_every_level() {
        for (m, nb) in [
            (0usize, 1usize),
            (1, 1),
            (7, 3),
            (1000, 16),
            (1 << 20, 1 << 13),
        ] {
            for level in 0..25 {
                let bound = pair_outputs(m, nb, level);
                assert!(bound <= m.max(1));
                // The worst case: every bucket odd, as many nonempty as can be.
                let mut counts: Vec<usize> = vec![0; nb];
                for i in 0..m {
                    counts[i % nb] += 1;
                }
                for _ in 0..level {
                    counts.iter_mut().for_each(|c| *c = c.div_ceil(2));
                }
                assert!(
                    counts.iter().sum::<usize>() <= bound,
                    "m {m} nb {nb} level {level}"
                );
            }
        }
        assert_eq!(pair_threads(1 << 26, 132, 384), 132 * 384);
        assert_eq!(pair_threads(1 << 20, 132, 384), (1 << 20) / PAIR_SLOTS);
        assert_eq!(pair_threads(0, 132, 384), 1);
    }

    #[test]
    fn widths_grow_with_size() {
        for xyzz in [192, 384] {
            let mut last = 0;
            for log in 0..=31 {
                let b = window_bits(1usize << log, xyzz);
                assert!(b >= last && (MIN_WINDOW_BITS..=MAX_WINDOW_BITS).contains(&b));
                last = b;
            }
        }
        assert_eq!(window_bits(1 << 24, 192), 16);
        assert_eq!(window_bits(1 << 24, 384), 18);
        assert_eq!(window_bits(1 << 20, 192), 14);
    }

    #[test]
    fn upload_overlap_cuts_large_staged_msms_in_two_where_it_fits() {
        let auto = |n: usize, allowance: usize| PlanInput {
            upload_overlap: None,
            ..input(n, allowance)
        };
        // G1 2^27 from the host with room: two chunks, every piece of one staged apart.
        let n = 1 << 27;
        let one = Plan::shaped(&auto(n, 60 << 30)).unwrap();
        let p = Plan::new(&auto(n, 60 << 30)).unwrap();
        assert_eq!((one.chunks(n), p.chunks(n)), (1, 2), "{p:?}");
        assert_eq!((p.bits, p.pass_windows), (one.bits, one.pass_windows));
        assert_eq!(p.sizes.staging, (n / 2 / PIECE) * PIECE);
        assert_eq!(p.sizes.chunk_points, p.sizes.bucket_points);
        assert_eq!(staging_slot(p.sizes.staging), PIECE);
        // Half the pairs and canonical scalars: less than one chunk takes, staging and all.
        assert!(
            p.bytes(192) < one.bytes(192),
            "{} {}",
            p.bytes(192),
            one.bytes(192)
        );
        // Not from the device, not when asked not to.
        for q in [
            PlanInput {
                staged: false,
                ..auto(n, 60 << 30)
            },
            PlanInput {
                upload_overlap: Some(false),
                ..auto(n, 60 << 30)
            },
        ] {
            assert_eq!(Plan::new(&q).unwrap(), Plan::shaped(&q).unwrap(), "{q:?}");
        }
        // Small MSMs: the bucket additions outweigh the hidden upload unless forced.
        let small = auto(1 << 16, 8 << 30);
        assert_eq!(Plan::new(&small).unwrap().chunks(1 << 16), 1);
        let forced = PlanInput {
            upload_overlap: Some(true),
            ..small
        };
        let p = Plan::new(&forced).unwrap();
        assert_eq!((p.chunks(1 << 16), p.sizes.staging), (2, 2 * p.piece));
        // Two points split; one cannot.
        for (n, chunks) in [(1, 1), (2, 2), (3, 2)] {
            let q = PlanInput {
                upload_overlap: Some(true),
                ..auto(n, 1 << 30)
            };
            assert_eq!(Plan::new(&q).unwrap().chunks(n), chunks, "n = {n}");
        }
        // The rule: G1 at nine points a bucket of the pass, G2 at eighteen.
        assert!(overlap_pays(9 << 20, 1 << 20, 192) && !overlap_pays((9 << 20) - 1, 1 << 20, 192));
        assert!(overlap_pays(18 << 20, 1 << 20, 384) && !overlap_pays(17 << 20, 1 << 20, 384));
    }

    #[test]
    fn staging_buffers_hold_every_covered_plans_piece() {
        let plans: Vec<Plan> = [
            (1usize << 27, 60usize << 30),
            (1 << 20, 1 << 30),
            (5000, 1 << 30),
        ]
        .into_iter()
        .flat_map(|(n, a)| {
            [None, Some(false), Some(true)].map(|o| {
                Plan::new(&PlanInput {
                    upload_overlap: o,
                    ..input(n, a)
                })
                .unwrap()
            })
        })
        .collect();
        for a in &plans {
            for b in &plans {
                let staging = a.sizes.max(&b.sizes).staging;
                let slot = staging_slot(staging);
                assert!(slot >= a.piece && slot >= b.piece, "{a:?} {b:?}");
                assert!(staging / slot >= 2, "{a:?} {b:?}");
            }
        }
    }
}
