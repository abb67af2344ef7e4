//! How the GPU engine splits a transform into kernel passes, and the twiddle tables it needs.
//!
//! Plain Rust with no GPU code, so that the index arithmetic the kernels rely on is tested on
//! any machine: the tests at the bottom run a line-for-line model of `kernels/ntt/ntt.cu`
//! (threads, rounds, shared-memory layout) against the CPU reference.
//!
//! # The decomposition
//!
//! A transform of size `n = 2^L` is a decimation-in-frequency (DIF) network: natural-order input,
//! bit-reversed output. Its `L` stages are cut into passes of at most [`MAX_PASS_BITS`] stages,
//! top bits first. A pass over bits `[s_lo, s_hi)` works on *lines*: the `2^k` elements
//! (`k = s_hi − s_lo`) that share every index bit outside the pass, `2^s_lo` apart in memory.
//! By the four-step identity each line undergoes a plain `2^k`-point DFT with bit-reversed output
//! (its twiddles come from one small table of `2^k`-th roots), and then element `ℓ` of line
//! `(i_high, i_low)` is multiplied by the *pass factor* `ω_{2^s_hi}^(i_low · rev_k(ℓ))`; the last
//! pass (`s_lo = 0`) has no factor. Inside a pass each thread holds 8 elements in registers and
//! the line's DFT runs as *rounds* of radix 8, 4 or 2 with the same four-step split one level
//! down, exchanging elements through shared memory between rounds.
//!
//! The decimation-in-time (DIT) network, bit-reversed input and natural output, is the transpose
//! of the DIF one: the same passes in reverse order, each applying its factor first and then its
//! rounds in reverse, with transposed butterflies. Forward transforms run bit-reversal + DIT,
//! inverse ones DIF + bit-reversal, and the Groth16 H step chains DIF into DIT with no
//! reordering at all in between.
#![forbid(unsafe_code)]

use crate::NttError;
use cuzk_field::consts::root_of_unity;
use cuzk_field::{Field, FrRepr, Scalar};
use rayon::prelude::*;

/// Smallest size the GPU engine transforms: 2^1.
pub const MIN_LOG_N: u32 = 1;
/// Largest size the GPU engine transforms: 2^28 (8 GiB per vector).
pub const MAX_LOG_N: u32 = 28;
/// Most stages one kernel pass runs: a line of `2^10` elements is 32 KiB of shared memory.
pub const MAX_PASS_BITS: u32 = 10;
/// log2 of the elements one block holds (64 KiB of shared memory): passes of fewer bits put
/// several lines in a block, adjacent in memory, so that global accesses come in long runs.
pub const BLOCK_ELEMS_LOG: u32 = 11;
/// Pass factors of order up to `2^20` come from one table (32 MiB at most); larger orders use
/// two tables of about `sqrt` the size and one extra multiplication per element (the default of
/// [`PassTables::with_direct_log`]'s bound).
pub const DIRECT_FACTOR_MAX_LOG: u32 = 20;
/// Elements each thread holds in registers by default (log2; the radix of a full round).
pub const ELEMS_PER_THREAD_LOG: u32 = 3;
/// The other choice of [`Plan::with_shape`]: 4 elements a thread, so half the registers and
/// more resident warps, for twice the rounds (and shared-memory exchanges) per pass.
pub const MIN_ELEMS_PER_THREAD_LOG: u32 = 2;
/// Most threads in a pass block.
pub const MAX_THREADS_PER_BLOCK_LOG: u32 = 8;

/// One kernel pass over index bits `[s_lo, s_lo + bits)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pass {
    /// Lowest index bit the pass transforms; lines are `2^s_lo` elements apart.
    pub s_lo: u32,
    /// Number of stages (index bits) in the pass.
    pub bits: u32,
    /// log2 of the lines one block holds.
    pub log_lines_per_block: u32,
    /// log2 of the elements each thread holds in registers: [`ELEMS_PER_THREAD_LOG`] or
    /// [`MIN_ELEMS_PER_THREAD_LOG`] (different kernels).
    pub elems_log: u32,
}

impl Pass {
    /// One past the highest index bit of the pass.
    pub fn s_hi(&self) -> u32 {
        self.s_lo + self.bits
    }

    /// Threads per block: `2^elems_log` elements each, or one thread per line for shorter lines.
    pub fn threads_per_block(&self) -> u32 {
        let per_line = self.bits.saturating_sub(self.elems_log);
        1 << (per_line + self.log_lines_per_block)
    }

    /// Elements one block holds (and so its shared memory, at 32 bytes each).
    pub fn block_elems(&self) -> u32 {
        1 << (self.bits + self.log_lines_per_block)
    }

    /// The pass over bits `[s_lo, s_lo + bits)` of a size-`2^log_n` transform with blocks of
    /// (at most) `2^block_log` elements and `2^elems_log` elements a thread: as many lines a
    /// block as fit, and never more than `2^MAX_THREADS_PER_BLOCK_LOG` threads.
    pub fn shaped(log_n: u32, s_lo: u32, bits: u32, block_log: u32, elems_log: u32) -> Pass {
        let block_log = block_log.min(MAX_THREADS_PER_BLOCK_LOG + elems_log);
        Pass {
            s_lo,
            bits,
            log_lines_per_block: block_log.saturating_sub(bits).min(log_n - bits),
            elems_log,
        }
    }

    /// The same pass with `2^elems_log` elements a thread (the tables are the same).
    pub fn with_elems_log(&self, log_n: u32, block_log: u32, elems_log: u32) -> Pass {
        Pass::shaped(log_n, self.s_lo, self.bits, block_log, elems_log)
    }

    /// Whether the pass ends with (DIF) or starts with (DIT) a multiplication by pass factors.
    pub fn has_factor(&self) -> bool {
        self.s_lo > 0
    }
}

/// The passes of a transform of size `2^log_n`, in DIF order (top bits first).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    log_n: u32,
    passes: Vec<Pass>,
}

impl Plan {
    /// The plan for size `2^log_n`, [`MIN_LOG_N`] ≤ `log_n` ≤ [`MAX_LOG_N`], with blocks of
    /// `2^BLOCK_ELEMS_LOG` elements.
    pub fn new(log_n: u32) -> Result<Self, NttError> {
        Self::with_block_log(log_n, BLOCK_ELEMS_LOG)
    }

    /// The plan for size `2^log_n` with blocks of (at most) `2^block_log` elements, `block_log`
    /// in [`MAX_PASS_BITS`]..=[`BLOCK_ELEMS_LOG`]: smaller blocks mean more of them per SM and
    /// shorter contiguous runs in strided passes.
    pub fn with_block_log(log_n: u32, block_log: u32) -> Result<Self, NttError> {
        Self::with_shape(log_n, block_log, ELEMS_PER_THREAD_LOG)
    }

    /// The plan for size `2^log_n` with blocks of (at most) `2^block_log` elements and
    /// `2^elems_log` elements a thread (`elems_log` 2 or 3). Blocks never exceed
    /// `2^MAX_THREADS_PER_BLOCK_LOG` threads, so with 4 elements a thread they hold at most
    /// `2^10` elements whatever `block_log` says.
    pub fn with_shape(log_n: u32, block_log: u32, elems_log: u32) -> Result<Self, NttError> {
        assert!(
            (MIN_ELEMS_PER_THREAD_LOG..=ELEMS_PER_THREAD_LOG).contains(&elems_log),
            "elems_log {elems_log} out of range"
        );
        assert!(
            (MAX_PASS_BITS..=BLOCK_ELEMS_LOG).contains(&block_log),
            "block_log {block_log} out of range"
        );
        if log_n < MIN_LOG_N {
            return Err(NttError::TooSmall {
                log_n,
                min: MIN_LOG_N,
            });
        }
        if log_n > MAX_LOG_N {
            return Err(NttError::TooLarge {
                log_n,
                max: MAX_LOG_N,
            });
        }
        let mut passes = Vec::new();
        let mut s_hi = log_n;
        for bits in pass_bits(log_n) {
            let s_lo = s_hi - bits;
            passes.push(Pass::shaped(log_n, s_lo, bits, block_log, elems_log));
            s_hi = s_lo;
        }
        Ok(Plan { log_n, passes })
    }

    /// log2 of the transform size.
    pub fn log_n(&self) -> u32 {
        self.log_n
    }

    /// The passes, top bits first (the order DIF runs them; DIT runs them reversed).
    pub fn passes(&self) -> &[Pass] {
        &self.passes
    }
}

/// Stages per pass, top pass first: one pass up to [`MAX_PASS_BITS`], two up to 20, then three.
/// Fewer passes mean fewer trips through device memory and fewer pass-factor multiplications.
pub fn pass_bits(log_n: u32) -> Vec<u32> {
    let parts = log_n.div_ceil(MAX_PASS_BITS).max(1);
    let (q, r) = (log_n / parts, log_n % parts);
    (0..parts).map(|i| q + u32::from(i < r)).collect()
}

/// Radix-2^r rounds of a pass of `bits` stages with `2^elems_log` elements a thread, first
/// round first: a full round first (so every round's register bits fit inside the line), the
/// rest split as evenly as possible. With 8 elements the longer rounds come first; with 4 the
/// shorter ones do, so that the last round, which needs no factors after it, is a full one
/// (a radix-2 round's factors cost half a product per element, a radix-4 round's three quarters).
pub fn rounds(bits: u32, elems_log: u32) -> Vec<u32> {
    if bits <= elems_log {
        return vec![bits];
    }
    let rest = bits - elems_log;
    let parts = rest.div_ceil(elems_log);
    let (q, r) = (rest / parts, rest % parts);
    let longer = |i: u32| {
        if elems_log == ELEMS_PER_THREAD_LOG {
            i < r
        } else {
            i >= parts - r
        }
    };
    std::iter::once(elems_log)
        .chain((0..parts).map(|i| q + u32::from(longer(i))))
        .collect()
}

/// How many elements (log2) a thread of a pass holds by default, measured on an H100
/// (docs/perf.md, nineteenth session): 4 (more resident warps) except in DIT passes of 9 or
/// more stages, where 8 a thread do not spill, and 4 would need a radix-2 round and so more
/// products (3.75 an element against 3.625 for 9 stages).
pub fn auto_elems_log(bits: u32, dit: bool) -> u32 {
    if dit && bits >= 9 {
        ELEMS_PER_THREAD_LOG
    } else {
        MIN_ELEMS_PER_THREAD_LOG
    }
}

/// Which way a transform goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Direction {
    /// Powers of ω: coefficients to evaluations.
    Forward,
    /// Powers of ω⁻¹: evaluations to (n times) coefficients.
    Inverse,
}

impl Direction {
    /// The primitive `2^log`-th root of unity this direction uses.
    pub fn root(self, log: u32) -> Scalar {
        let w = root_of_unity(log).expect("log_n is at most the two-adicity");
        match self {
            Direction::Forward => w,
            Direction::Inverse => w.invert().unwrap(),
        }
    }
}

/// `value(e) = lo[e mod 2^lo_bits] · hi[e >> lo_bits]`, or `lo[e]` alone when `hi` is empty:
/// a table of `2^bits` powers stored in about `2·2^(bits/2)` entries.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SplitTable {
    /// Low-part table.
    pub lo: Vec<FrRepr>,
    /// High-part table; empty when `lo` holds every value.
    pub hi: Vec<FrRepr>,
    /// log2 of `lo.len()`.
    pub lo_bits: u32,
}

impl SplitTable {
    /// `scale · base^e` for `e < 2^bits`, direct when `bits ≤ direct_max_log`.
    pub fn powers(base: Scalar, scale: Scalar, bits: u32, direct_max_log: u32) -> Self {
        if bits <= direct_max_log {
            let lo = powers(base, scale, 1 << bits);
            return SplitTable {
                lo,
                hi: Vec::new(),
                lo_bits: bits,
            };
        }
        let lo_bits = bits.div_ceil(2);
        let lo = powers(base, Scalar::ONE, 1 << lo_bits);
        let step = base.pow_vartime([1u64 << lo_bits]);
        let hi = powers(step, scale, 1 << (bits - lo_bits));
        SplitTable { lo, hi, lo_bits }
    }

    /// Whether one lookup gives the value (no high table).
    pub fn is_direct(&self) -> bool {
        self.hi.is_empty()
    }

    /// The value at exponent `e`.
    pub fn value(&self, e: u32) -> Scalar {
        let lo = scalar(self.lo[(e & ((1 << self.lo_bits) - 1)) as usize]);
        if self.is_direct() {
            return lo;
        }
        lo * scalar(self.hi[(e >> self.lo_bits) as usize])
    }
}

/// The tables of one pass in one direction.
#[derive(Clone, Debug)]
pub struct PassTables {
    /// `w^x` for `x < 2^bits`, `w` the primitive `2^bits`-th root: the line DFT's twiddles.
    pub local_roots: Vec<FrRepr>,
    /// Pass factors `ω_{2^s_hi}^e`, for passes with `s_lo > 0`.
    pub factor: Option<SplitTable>,
}

impl PassTables {
    /// Builds the tables of `pass` for `direction`, pass factors direct up to order
    /// `2^DIRECT_FACTOR_MAX_LOG`.
    pub fn new(pass: &Pass, direction: Direction) -> Self {
        Self::with_direct_log(pass, direction, DIRECT_FACTOR_MAX_LOG)
    }

    /// As [`PassTables::new`], with pass factors of order up to `2^direct_max_log` in one table
    /// (`2^s_hi` entries: one multiplication per element fewer, a table as large as the
    /// vector when `s_hi` is the whole size).
    pub fn with_direct_log(pass: &Pass, direction: Direction, direct_max_log: u32) -> Self {
        let local_roots = powers(direction.root(pass.bits), Scalar::ONE, 1 << pass.bits);
        let factor = pass.has_factor().then(|| {
            SplitTable::powers(
                direction.root(pass.s_hi()),
                Scalar::ONE,
                pass.s_hi(),
                direct_max_log,
            )
        });
        PassTables {
            local_roots,
            factor,
        }
    }
}

/// What multiplies each element of a DIF output (after the last pass) or of a DIT input (before
/// the first): element at position `P` holds coefficient `rev_L(P)`, and is multiplied by
/// `c · g^rev_L(P)`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Scale {
    /// Nothing.
    None,
    /// A constant `c` (such as `1/n`).
    Constant(FrRepr),
    /// `c · g^idx` for coefficient index `idx`, from a split table.
    Powers(SplitTable),
}

impl Scale {
    /// The scale `c · g^idx` for a transform of size `2^log_n`; two tables of about
    /// `sqrt(n)` entries each.
    pub fn powers(g: Scalar, c: Scalar, log_n: u32) -> Self {
        Scale::Powers(SplitTable::powers(g, c, log_n, 0))
    }

    /// The factor for coefficient index `idx`.
    pub fn value(&self, idx: u32) -> Option<Scalar> {
        match self {
            Scale::None => None,
            Scale::Constant(c) => Some(scalar(*c)),
            Scale::Powers(t) => Some(t.value(idx)),
        }
    }
}

/// `[c, c·w, c·w², …]`, `count` entries, built in parallel blocks.
pub fn powers(w: Scalar, c: Scalar, count: usize) -> Vec<FrRepr> {
    const CHUNK: usize = 1 << 12;
    let mut out = vec![FrRepr::default(); count];
    out.par_chunks_mut(CHUNK)
        .enumerate()
        .for_each(|(j, chunk)| {
            let mut x = c * w.pow_vartime([(j * CHUNK) as u64]);
            for slot in chunk {
                *slot = FrRepr::from(x);
                x *= w;
            }
        });
    out
}

fn scalar(r: FrRepr) -> Scalar {
    Scalar::try_from(r).expect("tables hold reduced elements")
}

/// Reverses the low `bits` bits of `x` (`bits` ≤ 32; 0 bits gives 0).
pub fn rev(x: u32, bits: u32) -> u32 {
    if bits == 0 {
        0
    } else {
        x.reverse_bits() >> (32 - bits)
    }
}

/// Position in a line of the element register `j` of thread `theta` holds in a round whose
/// lowest bit is `b`: the `elems_log` register bits are inserted into the thread index at bit
/// `b`.
pub fn round_position(theta: u32, j: u32, b: u32, elems_log: u32) -> u32 {
    let lo = theta & ((1 << b) - 1);
    let hi = theta >> b;
    (hi << (b + elems_log)) | (j << b) | lo
}

/// Index into a block's shared memory (in 32-bit words of one limb plane) of element `pos` of
/// line `g`: lines of the last pass lie one after another, lines of strided passes interleave
/// (so that a warp's lines land on distinct banks), and bits 5–7 (5–6 with 4 elements a
/// thread) are folded into bits 0–4 so that every round's access pattern hits 32 distinct
/// banks.
pub fn smem_index(pass: &Pass, g: u32, pos: u32) -> u32 {
    let x = if pass.s_lo == 0 {
        (g << pass.bits) | pos
    } else {
        (pos << pass.log_lines_per_block) | g
    };
    x ^ smem_swizzle(x, pass.elems_log)
}

fn smem_swizzle(x: u32, elems_log: u32) -> u32 {
    let bit = |i: u32| (x >> i) & 1;
    if elems_log == ELEMS_PER_THREAD_LOG {
        (bit(5) * 0b01001) ^ (bit(6) * 0b10010) ^ (bit(7) * 0b11100)
    } else {
        (bit(5) * 0b01010) ^ (bit(6) * 0b10101)
    }
}

/// The thread of a block that owns `(line in block, thread in line)`: in the last pass threads
/// of a line are adjacent (lines are contiguous in memory), in strided passes lines are adjacent
/// (their elements are).
pub fn thread_coords(pass: &Pass, t: u32) -> (u32, u32) {
    let per_line_log = pass.bits.saturating_sub(pass.elems_log);
    if pass.s_lo == 0 {
        (t >> per_line_log, t & ((1 << per_line_log) - 1))
    } else {
        (
            t & ((1 << pass.log_lines_per_block) - 1),
            t >> pass.log_lines_per_block,
        )
    }
}

#[cfg(test)]
mod model;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passes_cover_every_bit_once() {
        for (log_n, plan) in all_plans() {
            let mut next = log_n;
            for p in plan.passes() {
                assert_eq!(p.s_hi(), next, "log_n {log_n}");
                assert!(p.bits >= 1 && p.bits <= MAX_PASS_BITS);
                assert!(p.threads_per_block() <= 256 && p.block_elems() <= 1 << BLOCK_ELEMS_LOG);
                next = p.s_lo;
                let r = rounds(p.bits, p.elems_log);
                assert_eq!(r.iter().sum::<u32>(), p.bits);
                assert!(r.iter().all(|&x| (1..=p.elems_log).contains(&x)));
                assert!(p.bits < p.elems_log || r[0] == p.elems_log);
                // Strided passes group lines that are neighbours in memory.
                if p.s_lo > 0 {
                    assert!(p.log_lines_per_block <= p.s_lo, "log_n {log_n}");
                }
            }
            assert_eq!(next, 0);
            assert_eq!(plan.passes().len(), log_n.div_ceil(MAX_PASS_BITS) as usize);
        }
        assert_eq!(pass_bits(27), vec![9, 9, 9]);
        assert_eq!(pass_bits(28), vec![10, 9, 9]);
        assert_eq!(pass_bits(20), vec![10, 10]);
        assert_eq!(rounds(10, 3), vec![3, 3, 2, 2]);
        assert_eq!(rounds(4, 3), vec![3, 1]);
        assert_eq!(rounds(9, 2), vec![2, 1, 2, 2, 2]);
        assert_eq!(rounds(10, 2), vec![2, 2, 2, 2, 2]);
        assert_eq!(rounds(3, 2), vec![2, 1]);
        assert!(matches!(
            Plan::new(0),
            Err(NttError::TooSmall { log_n: 0, min: 1 })
        ));
        assert!(matches!(
            Plan::new(29),
            Err(NttError::TooLarge { log_n: 29, max: 28 })
        ));
    }

    /// A pass reshaped for another thread count is the pass that plan would have, and the
    /// choice per pass keeps 8 elements a thread only for DIT passes of 9 or more stages.
    #[test]
    fn reshaped_passes_match_their_plans() {
        for (log_n, plan) in all_plans().filter(|(_, p)| p.passes()[0].elems_log == 3) {
            for b in MAX_PASS_BITS..=BLOCK_ELEMS_LOG {
                let four = Plan::with_shape(log_n, b, MIN_ELEMS_PER_THREAD_LOG).unwrap();
                for (p, q) in plan.passes().iter().zip(four.passes()) {
                    assert_eq!(p.with_elems_log(log_n, b, MIN_ELEMS_PER_THREAD_LOG), *q);
                    assert!(q.threads_per_block() <= 1 << MAX_THREADS_PER_BLOCK_LOG);
                }
            }
        }
        assert_eq!(auto_elems_log(9, true), 3);
        assert_eq!(auto_elems_log(10, true), 3);
        assert_eq!(auto_elems_log(8, true), 2);
        assert_eq!(auto_elems_log(9, false), 2);
    }

    #[test]
    fn split_tables_give_every_power() {
        let w = Direction::Forward.root(12);
        let c = Scalar::from(5u64);
        for direct in [12, 4] {
            let t = SplitTable::powers(w, c, 12, direct);
            assert_eq!(t.is_direct(), direct == 12);
            for e in [0u32, 1, 63, 64, 65, 4095] {
                assert_eq!(t.value(e), c * w.pow_vartime([e as u64]), "e {e}");
            }
        }
    }

    fn all_plans() -> impl Iterator<Item = (u32, Plan)> {
        (MIN_LOG_N..=MAX_LOG_N).flat_map(|log_n| {
            (MAX_PASS_BITS..=BLOCK_ELEMS_LOG).flat_map(move |b| {
                (MIN_ELEMS_PER_THREAD_LOG..=ELEMS_PER_THREAD_LOG)
                    .map(move |e| (log_n, Plan::with_shape(log_n, b, e).unwrap()))
            })
        })
    }

    #[test]
    fn shared_memory_layout_is_a_bijection_per_block() {
        for (log_n, plan) in all_plans() {
            for p in plan.passes() {
                let lines = 1u32 << p.log_lines_per_block;
                let mut seen = vec![false; p.block_elems() as usize];
                for g in 0..lines {
                    for pos in 0..1u32 << p.bits {
                        let i = smem_index(p, g, pos) as usize;
                        assert!(!seen[i], "log_n {log_n} pass {p:?}");
                        seen[i] = true;
                    }
                }
            }
        }
    }

    /// Every warp-wide shared-memory access of every round hits 32 distinct banks.
    #[test]
    fn shared_memory_accesses_are_free_of_bank_conflicts() {
        for (log_n, plan) in all_plans().filter(|(log_n, _)| *log_n >= 3) {
            for p in plan.passes() {
                let mut b = p.bits;
                for r in rounds(p.bits, p.elems_log) {
                    b -= r;
                    for warp in 0..p.threads_per_block().div_ceil(32) {
                        for j in 0..1 << p.elems_log {
                            let mut banks = std::collections::HashSet::new();
                            let lanes =
                                (warp * 32..(warp + 1) * 32).filter(|&t| t < p.threads_per_block());
                            let count = lanes.clone().count();
                            for t in lanes {
                                let (g, theta) = thread_coords(p, t);
                                banks.insert(
                                    smem_index(p, g, round_position(theta, j, b, p.elems_log)) % 32,
                                );
                            }
                            assert_eq!(
                                banks.len(),
                                count,
                                "log_n {log_n} pass {p:?} round base {b} j {j}"
                            );
                        }
                    }
                }
            }
        }
    }
}
