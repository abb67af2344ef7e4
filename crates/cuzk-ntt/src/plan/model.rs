//! A line-for-line CPU model of the pass kernels in `kernels/ntt/ntt.cu`: the same threads,
//! registers, rounds, shared-memory indices and tables, run one thread at a time. Tested
//! against the CPU reference, it proves the kernels' index arithmetic before any GPU runs it.
//! It computes with reduced field elements, where the kernels keep each value below 2r inside a
//! pass and reduce it when the pass stores it (kernels/field/fr_arith.cuh: `mul_lazy`, `add_2r`,
//! `sub_2r`): the same residues, so the two agree at every pass boundary.

use super::*;
use crate::cpu::{bit_reverse_permute, Domain};
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;

/// The per-thread register count of a pass (`2^elems_log`, or the whole line for shorter lines).
fn regs_per_thread(pass: &Pass) -> u32 {
    1 << pass.bits.min(pass.elems_log)
}

fn global_index(pass: &Pass, i_high: u32, pos: u32, i_low: u32) -> usize {
    ((i_high << pass.s_hi()) | (pos << pass.s_lo) | i_low) as usize
}

fn root(tables: &PassTables, e: u32) -> Scalar {
    scalar(tables.local_roots[e as usize])
}

/// Radix-2^r DIF butterflies on one register group (natural in, bit-reversed out).
fn dif_group(x: &mut [Scalar], bits: u32, tables: &PassTables) {
    let mut h = x.len() / 2;
    while h >= 1 {
        for blk in (0..x.len()).step_by(2 * h) {
            for i in 0..h {
                let (a, b) = (x[blk + i], x[blk + i + h]);
                x[blk + i] = a + b;
                let w = root(tables, (i << bits) as u32 / (2 * h) as u32);
                x[blk + i + h] = (a - b) * w;
            }
        }
        h /= 2;
    }
}

/// Radix-2^r DIT butterflies on one register group (bit-reversed in, natural out).
fn dit_group(x: &mut [Scalar], bits: u32, tables: &PassTables) {
    let mut h = 1;
    while h < x.len() {
        for blk in (0..x.len()).step_by(2 * h) {
            for i in 0..h {
                let w = root(tables, (i << bits) as u32 / (2 * h) as u32);
                let (a, t) = (x[blk + i], x[blk + i + h] * w);
                x[blk + i] = a + t;
                x[blk + i + h] = a - t;
            }
        }
        h *= 2;
    }
}

/// The factor of round (base `b`, radix `2^r`) for register `j` of thread `theta`, if not 1.
fn round_factor(
    tables: &PassTables,
    bits: u32,
    theta: u32,
    j: u32,
    b: u32,
    r: u32,
) -> Option<Scalar> {
    let m = j & ((1 << r) - 1);
    if b == 0 || m == 0 {
        return None;
    }
    let e = ((theta & ((1 << b) - 1)) * rev(m, r)) << (bits - b - r);
    Some(root(tables, e))
}

/// Runs one pass of the DIF (`dit == false`) or DIT network over `data`, as the kernel does.
pub(super) fn run_pass(
    data: &mut [Scalar],
    log_n: u32,
    pass: &Pass,
    tables: &PassTables,
    scale: &Scale,
    dit: bool,
) {
    let k = pass.bits;
    let rs = rounds(k, pass.elems_log);
    let e = regs_per_thread(pass) as usize;
    let lines = 1u32 << (log_n - k);
    let groups = lines >> pass.log_lines_per_block;
    let threads = pass.threads_per_block();
    // Round bases: b_q is the lowest bit of round q.
    let mut bases = Vec::new();
    let mut b = k;
    for r in &rs {
        b -= r;
        bases.push(b);
    }
    for grp in 0..groups {
        let mut smem = vec![Scalar::ZERO; pass.block_elems() as usize];
        let mut regs = vec![[Scalar::ZERO; 8]; threads as usize];
        let coords = |t: u32| {
            let (g, theta) = thread_coords(pass, t);
            let line = (grp << pass.log_lines_per_block) | g;
            (g, theta, line >> pass.s_lo, line & ((1 << pass.s_lo) - 1))
        };
        let order: Vec<usize> = if dit {
            (0..rs.len()).rev().collect()
        } else {
            (0..rs.len()).collect()
        };
        let first_base = bases[order[0]];
        // Load in the first round's positions.
        for t in 0..threads {
            let (_, theta, i_high, i_low) = coords(t);
            for j in 0..e {
                let pos = round_position(theta, j as u32, first_base, pass.elems_log);
                let mut x = data[global_index(pass, i_high, pos, i_low)];
                if dit {
                    if pass.s_lo == 0 {
                        if let Some(s) = scale.value(rev((i_high << k) | pos, log_n)) {
                            x *= s;
                        }
                    }
                    if let Some(f) = &tables.factor {
                        x *= f.value(i_low * rev(pos, k));
                    }
                }
                regs[t as usize][j] = x;
            }
        }
        for (step, &q) in order.iter().enumerate() {
            let (r, b) = (rs[q], bases[q]);
            if step > 0 {
                let prev = bases[order[step - 1]];
                for t in 0..threads {
                    let (g, theta, _, _) = coords(t);
                    for j in 0..e {
                        smem[smem_index(
                            pass,
                            g,
                            round_position(theta, j as u32, prev, pass.elems_log),
                        ) as usize] = regs[t as usize][j];
                    }
                }
                for t in 0..threads {
                    let (g, theta, _, _) = coords(t);
                    for j in 0..e {
                        regs[t as usize][j] = smem[smem_index(
                            pass,
                            g,
                            round_position(theta, j as u32, b, pass.elems_log),
                        ) as usize];
                    }
                }
            }
            for t in 0..threads {
                let (_, theta, _, _) = coords(t);
                let v = &mut regs[t as usize][..e];
                if dit {
                    for j in 0..e as u32 {
                        if let Some(f) = round_factor(tables, k, theta, j, b, r) {
                            v[j as usize] *= f;
                        }
                    }
                    v.chunks_mut(1 << r)
                        .for_each(|grp| dit_group(grp, k, tables));
                } else {
                    v.chunks_mut(1 << r)
                        .for_each(|grp| dif_group(grp, k, tables));
                    for j in 0..e as u32 {
                        if let Some(f) = round_factor(tables, k, theta, j, b, r) {
                            v[j as usize] *= f;
                        }
                    }
                }
            }
        }
        let last_base = bases[*order.last().unwrap()];
        for t in 0..threads {
            let (_, theta, i_high, i_low) = coords(t);
            for j in 0..e {
                let pos = round_position(theta, j as u32, last_base, pass.elems_log);
                let mut x = regs[t as usize][j];
                if !dit {
                    if let Some(f) = &tables.factor {
                        x *= f.value(i_low * rev(pos, k));
                    }
                    if pass.s_lo == 0 {
                        if let Some(s) = scale.value(rev((i_high << k) | pos, log_n)) {
                            x *= s;
                        }
                    }
                }
                data[global_index(pass, i_high, pos, i_low)] = x;
            }
        }
    }
}

/// Block size of the model's plans; tests run both sizes the engine offers.
static BLOCK_LOG: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(BLOCK_ELEMS_LOG);

/// Elements a thread of the model's plans (log2); tests run both kernels' shapes.
static ELEMS_LOG: std::sync::atomic::AtomicU32 =
    std::sync::atomic::AtomicU32::new(ELEMS_PER_THREAD_LOG);

/// Bound on directly tabulated pass factors of the model's tables (the engine's
/// `set_direct_factor_log`); tests run the default, every factor split and every one direct.
static DIRECT_LOG: std::sync::atomic::AtomicU32 =
    std::sync::atomic::AtomicU32::new(DIRECT_FACTOR_MAX_LOG);

fn tables(p: &Pass, direction: Direction) -> PassTables {
    PassTables::with_direct_log(
        p,
        direction,
        DIRECT_LOG.load(std::sync::atomic::Ordering::Relaxed),
    )
}

fn plan(log_n: u32) -> Plan {
    use std::sync::atomic::Ordering::Relaxed;
    Plan::with_shape(log_n, BLOCK_LOG.load(Relaxed), ELEMS_LOG.load(Relaxed)).unwrap()
}

/// The DIF network (natural in, bit-reversed out) with `scale` on its output.
fn dif(data: &mut [Scalar], log_n: u32, direction: Direction, scale: &Scale) {
    let plan = plan(log_n);
    for p in plan.passes() {
        run_pass(data, log_n, p, &tables(p, direction), scale, false);
    }
}

/// The DIT network (bit-reversed in, natural out) with `scale` on its input.
fn dit(data: &mut [Scalar], log_n: u32, direction: Direction, scale: &Scale) {
    let plan = plan(log_n);
    for p in plan.passes().iter().rev() {
        run_pass(data, log_n, p, &tables(p, direction), scale, true);
    }
}

fn random_vec(seed: u64, n: usize) -> Vec<Scalar> {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    (0..n).map(|_| Scalar::random(&mut rng)).collect()
}

fn n_inv(log_n: u32) -> Scalar {
    Scalar::from(1u64 << log_n).invert().unwrap()
}

fn check_all_transforms(log_n: u32) {
    let d = Domain::new(log_n).unwrap();
    let g = d.coset_generator();
    let seed = 77 + log_n as u64;
    let input = random_vec(seed, d.size());

    let mut want = input.clone();
    d.ntt(&mut want).unwrap();
    let mut got = input.clone();
    bit_reverse_permute(&mut got);
    dit(&mut got, log_n, Direction::Forward, &Scale::None);
    assert_eq!(got, want, "forward, log_n {log_n}, seed {seed}");

    let mut want = input.clone();
    d.intt(&mut want).unwrap();
    let mut got = input.clone();
    dif(
        &mut got,
        log_n,
        Direction::Inverse,
        &Scale::Constant(n_inv(log_n).into()),
    );
    bit_reverse_permute(&mut got);
    assert_eq!(got, want, "inverse, log_n {log_n}, seed {seed}");

    let mut want = input.clone();
    d.coset_ntt(&mut want).unwrap();
    let mut got = input.clone();
    bit_reverse_permute(&mut got);
    dit(
        &mut got,
        log_n,
        Direction::Forward,
        &Scale::powers(g, Scalar::ONE, log_n),
    );
    assert_eq!(got, want, "coset forward, log_n {log_n}, seed {seed}");

    let mut want = input.clone();
    d.coset_intt(&mut want).unwrap();
    let mut got = input;
    dif(
        &mut got,
        log_n,
        Direction::Inverse,
        &Scale::powers(g.invert().unwrap(), n_inv(log_n), log_n),
    );
    bit_reverse_permute(&mut got);
    assert_eq!(got, want, "coset inverse, log_n {log_n}, seed {seed}");
}

/// The networks alone, without a bit reversal: DIF forward gives the evaluations in
/// bit-reversed order, DIT inverse (scaled by 1/n) takes them back (the engine's
/// `ntt_to_bit_reversed` and `intt_from_bit_reversed`).
#[test]
fn model_bit_reversed_order_variants_match_reference() {
    for log_n in [1, 2, 3, 7, 11, 13, 16] {
        let d = Domain::new(log_n).unwrap();
        let seed = 300 + log_n as u64;
        let input = random_vec(seed, d.size());
        let mut want = input.clone();
        d.ntt(&mut want).unwrap();
        bit_reverse_permute(&mut want);
        let mut got = input.clone();
        dif(&mut got, log_n, Direction::Forward, &Scale::None);
        assert_eq!(got, want, "ntt to bit-reversed, log_n {log_n}, seed {seed}");
        dit(
            &mut got,
            log_n,
            Direction::Inverse,
            &Scale::Constant(n_inv(log_n).into()),
        );
        assert_eq!(
            got, input,
            "intt from bit-reversed, log_n {log_n}, seed {seed}"
        );
    }
}

#[test]
fn model_matches_reference_for_small_sizes() {
    for log_n in MIN_LOG_N..=12 {
        check_all_transforms(log_n);
    }
}

#[test]
fn model_matches_reference_for_two_pass_sizes() {
    for log_n in [13, 15, 16] {
        check_all_transforms(log_n);
    }
}

#[test]
fn model_matches_reference_with_small_blocks() {
    // Only this test changes the block size; the others see the default either way, since
    // both sizes compute the same transform.
    BLOCK_LOG.store(MAX_PASS_BITS, std::sync::atomic::Ordering::Relaxed);
    for log_n in [3, 7, 10, 12, 15] {
        check_all_transforms(log_n);
    }
    BLOCK_LOG.store(BLOCK_ELEMS_LOG, std::sync::atomic::Ordering::Relaxed);
}

#[test]
fn model_matches_reference_with_four_elements_a_thread() {
    // Only this test changes the shape; the others see the default either way, since both
    // shapes compute the same transform. Sizes with one, two and three passes, radix-2 rounds
    // (odd pass widths) and passes of 3 stages.
    use std::sync::atomic::Ordering::Relaxed;
    ELEMS_LOG.store(MIN_ELEMS_PER_THREAD_LOG, Relaxed);
    for log_n in [3, 4, 5, 9, 10, 12, 13, 16, 21] {
        check_all_transforms(log_n);
    }
    ELEMS_LOG.store(ELEMS_PER_THREAD_LOG, Relaxed);
}

#[test]
fn model_matches_reference_with_every_factor_table_layout() {
    // Only this test changes the bound; the others see the default either way, since every
    // bound computes the same transform. 0: every pass factor from two tables; MAX_LOG_N:
    // every one from one table, as large as the vector for the top pass.
    for direct in [0, MAX_LOG_N] {
        DIRECT_LOG.store(direct, std::sync::atomic::Ordering::Relaxed);
        for log_n in [4, 11, 13, 16] {
            check_all_transforms(log_n);
        }
    }
    DIRECT_LOG.store(DIRECT_FACTOR_MAX_LOG, std::sync::atomic::Ordering::Relaxed);
}

#[test]
fn model_matches_reference_for_a_three_pass_size() {
    // 2^21 splits 7 + 7 + 7: strided passes with several lines per block, a two-level factor
    // table for the top pass (order 2^21 > 2^20) and a direct one for the middle pass.
    let log_n = 21;
    let d = Domain::new(log_n).unwrap();
    let input = random_vec(99, d.size());
    let mut want = input.clone();
    d.ntt(&mut want).unwrap();
    let mut got = input;
    bit_reverse_permute(&mut got);
    dit(&mut got, log_n, Direction::Forward, &Scale::None);
    assert!(got == want, "forward, log_n {log_n}, seed 99");
}

/// The engine's H step (`NttEngine::groth16_h`), transform by transform: A and B inverse DIF
/// onto the coset and forward DIT (coset evaluations), C inverse DIF scaled by `1/(n·Z)` (its
/// coefficients over Z, bit-reversed), the product of A and B, the inverse DIF back with the
/// division by Z, then C's part subtracted in bit-reversed order and one bit reversal.
fn h_step(d: &Domain, a: &[Scalar], b: &[Scalar], c: &[Scalar]) -> Vec<Scalar> {
    let log_n = d.log_n();
    let g = d.coset_generator();
    let z_inv = d.vanishing_on_coset().invert().unwrap();
    let (mut a, mut b, mut c) = (a.to_vec(), b.to_vec(), c.to_vec());
    let to_coset = Scale::powers(g, n_inv(log_n), log_n);
    for v in [&mut a, &mut b] {
        dif(v, log_n, Direction::Inverse, &to_coset);
    }
    let over_z = Scale::Constant((n_inv(log_n) * z_inv).into());
    dif(&mut c, log_n, Direction::Inverse, &over_z);
    for v in [&mut a, &mut b] {
        dit(v, log_n, Direction::Forward, &Scale::None);
    }
    for (x, y) in a.iter_mut().zip(&b) {
        *x *= y;
    }
    let back = Scale::powers(g.invert().unwrap(), n_inv(log_n) * z_inv, log_n);
    dif(&mut a, log_n, Direction::Inverse, &back);
    for (x, y) in a.iter_mut().zip(&c) {
        *x -= y;
    }
    bit_reverse_permute(&mut a);
    a
}

#[test]
fn model_h_step_matches_reference() {
    for log_n in [1, 2, 4, 7, 11] {
        let d = Domain::new(log_n).unwrap();
        let (mut a, mut b, mut c) = (
            random_vec(1, d.size()),
            random_vec(2, d.size()),
            random_vec(3, d.size()),
        );
        let got = h_step(&d, &a, &b, &c);
        d.h_quotient(&mut a, &mut b, &mut c).unwrap();
        assert_eq!(got, a, "log_n {log_n}");
    }
}

#[test]
fn model_h_step_divides_exactly_when_c_is_a_times_b() {
    // C = A∘B on the domain: A·B − C vanishes there, H is the exact quotient, of degree
    // below n − 1.
    for log_n in [1, 2, 4, 7, 11] {
        let d = Domain::new(log_n).unwrap();
        let (mut a, mut b) = (random_vec(11, d.size()), random_vec(12, d.size()));
        let mut c: Vec<Scalar> = a.iter().zip(&b).map(|(x, y)| *x * y).collect();
        let got = h_step(&d, &a, &b, &c);
        assert_eq!(
            got[d.size() - 1],
            Scalar::ZERO,
            "deg H < n − 1, log_n {log_n}"
        );
        d.h_quotient(&mut a, &mut b, &mut c).unwrap();
        assert_eq!(got, a, "log_n {log_n}");
    }
}

/// A model of the kernels' Montgomery multiplication (`mont_mul_folded` in
/// `kernels/field/fr_arith.cuh`), carry flag and all, checked against blstrs: it relies on
/// r ≡ 1 (mod 2^32) and on r's second limb being 2^32 − 1, which replace three of every round's
/// multiplications by additions.
mod montgomery {
    use super::limbs32;
    use crate::plan::*;
    use cuzk_field::consts::FR_MODULUS;
    use proptest::prelude::*;

    /// The PTX carry flag and the instructions of the chains, as the kernel uses them.
    #[derive(Default)]
    struct Cc(u32);
    impl Cc {
        fn add(&mut self, a: u32, b: u32, carry_in: bool) -> u32 {
            let s = a as u64 + b as u64 + if carry_in { self.0 as u64 } else { 0 };
            self.0 = (s >> 32) as u32;
            s as u32
        }
        fn mad_lo(&mut self, a: u32, b: u32, c: u32, carry_in: bool) -> u32 {
            self.add(a.wrapping_mul(b), c, carry_in)
        }
        fn mad_hi(&mut self, a: u32, b: u32, c: u32, carry_in: bool) -> u32 {
            self.add(((a as u64 * b as u64) >> 32) as u32, c, carry_in)
        }
    }

    fn fr_mul(a: [u32; 8], b: [u32; 8]) -> [u32; 8] {
        let p = limbs32(FR_MODULUS);
        assert_eq!(
            (p[0], p[1]),
            (1, u32::MAX),
            "the reduction shortcut needs these limbs"
        );
        let mut e = [0u32; 9];
        for (i, &bi) in b.iter().enumerate() {
            let mut cc = Cc::default();
            // E += a_even·b_i (one chain, carry into E8, which is 0 at the start of a round).
            if i == 0 {
                for k in 0..4 {
                    let prod = a[2 * k] as u64 * bi as u64;
                    e[2 * k] = prod as u32;
                    e[2 * k + 1] = (prod >> 32) as u32;
                }
                e[8] = 0;
            } else {
                e[0] = cc.mad_lo(a[0], bi, e[0], false);
                e[1] = cc.mad_hi(a[0], bi, e[1], true);
                for k in 1..4 {
                    e[2 * k] = cc.mad_lo(a[2 * k], bi, e[2 * k], true);
                    e[2 * k + 1] = cc.mad_hi(a[2 * k], bi, e[2 * k + 1], true);
                }
                e[8] = cc.add(0, 0, true);
            }
            // O = a_odd·b_i, limb k of O standing for limb k + 1 of the sum; no carries.
            let mut o = [0u32; 9];
            for k in 0..4 {
                let prod = a[2 * k + 1] as u64 * bi as u64;
                o[2 * k] = prod as u32;
                o[2 * k + 1] = (prod >> 32) as u32;
            }
            // Reduction by m = −E0 (since −r⁻¹ ≡ −1 mod 2^32).
            let u = e[0];
            let m = u.wrapping_neg();
            let hc = if u != 0 { !u } else { 0 };
            let _ = cc.add(u, m, false); // 0, carry = (u ≠ 0)
            e[1] = cc.add(e[1], 0, true);
            for k in 1..4 {
                e[2 * k] = cc.mad_lo(m, p[2 * k], e[2 * k], true);
                e[2 * k + 1] = cc.mad_hi(m, p[2 * k], e[2 * k + 1], true);
            }
            e[8] = cc.add(e[8], 0, true);
            o[0] = cc.add(o[0], u, false);
            o[1] = cc.add(o[1], hc, true);
            for k in 1..4 {
                o[2 * k] = cc.mad_lo(m, p[2 * k + 1], o[2 * k], true);
                o[2 * k + 1] = cc.mad_hi(m, p[2 * k + 1], o[2 * k + 1], true);
            }
            o[8] = cc.add(0, 0, true);
            // Shift down one limb and fold O in: E'k = E(k+1) + O(k).
            e[0] = cc.add(e[1], o[0], false);
            for k in 1..8 {
                e[k] = cc.add(e[k + 1], o[k], true);
            }
            // The sum is below 2r < 2^256: nothing is left above limb 7.
            assert_eq!(cc.0 + o[8], 0, "round {i} left a carry");
        }
        // One conditional subtraction of r.
        let mut d = [0u32; 8];
        let mut borrow = 0u32;
        for k in 0..8 {
            let s = e[k] as i64 - p[k] as i64 - borrow as i64;
            d[k] = s as u32;
            borrow = (s < 0) as u32;
        }
        let mut out = [0u32; 8];
        out.copy_from_slice(if borrow == 1 { &e[..8] } else { &d[..] });
        out
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]
        #[test]
        fn fr_mul_model_matches_blstrs(seed in any::<u64>()) {
            use rand::SeedableRng;
            let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(seed);
            let (a, b) = (Scalar::random(&mut rng), Scalar::random(&mut rng));
            let got = fr_mul(limbs32(FrRepr::from(a).limbs), limbs32(FrRepr::from(b).limbs));
            prop_assert_eq!(got, limbs32(FrRepr::from(a * b).limbs));
        }
    }

    #[test]
    fn fr_mul_model_edge_values() {
        let edge = [
            Scalar::ZERO,
            Scalar::ONE,
            -Scalar::ONE,
            Scalar::from(2u64),
            -Scalar::from(2u64),
        ];
        for a in edge {
            for b in edge {
                let got = fr_mul(
                    limbs32(FrRepr::from(a).limbs),
                    limbs32(FrRepr::from(b).limbs),
                );
                assert_eq!(got, limbs32(FrRepr::from(a * b).limbs));
            }
        }
    }
}

/// Four 64-bit limbs as the kernels' eight 32-bit ones (the product models' operands).
fn limbs32(x: [u64; 4]) -> [u32; 8] {
    let mut out = [0u32; 8];
    for i in 0..4 {
        out[2 * i] = x[i] as u32;
        out[2 * i + 1] = (x[i] >> 32) as u32;
    }
    out
}

mod fp64;
