//! Seeded random inputs for tests and benchmarks: scalars, valid random bases made cheaply on
//! the CPU, scalar sets shaped like Groth16 witnesses, and the host mirror of the device's
//! point generator (kernels/curve/bases.cu), which says which multiple of the generator each
//! generated point is.

use crate::curve::MsmCurve;
use cuzk_field::{FrRepr, PrimeCurveAffine, Scalar};
use ff::Field;
use group::Group;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;
use rayon::prelude::*;

/// Items per parallel generator, each seeded from the run's seed and its index.
const CHUNK: usize = 1 << 14;

fn chunk_rng(seed: u64, chunk: usize) -> ChaCha20Rng {
    ChaCha20Rng::seed_from_u64(seed ^ (chunk as u64).wrapping_mul(0xA24B_AED4_963E_E407))
}

/// `n` uniformly random scalars.
pub fn random_scalars(n: usize, seed: u64) -> Vec<Scalar> {
    let mut out = vec![Scalar::ZERO; n];
    out.par_chunks_mut(CHUNK).enumerate().for_each(|(i, c)| {
        let mut rng = chunk_rng(seed, i);
        c.iter_mut().for_each(|s| *s = Scalar::random(&mut rng));
    });
    out
}

/// `n` scalars shaped like a PoRep witness: each is 0 with probability `p_zero`, 1 with
/// probability `p_one`, and uniformly random otherwise.
pub fn sparse_scalars(n: usize, p_zero: f64, p_one: f64, seed: u64) -> Vec<Scalar> {
    let mut out = vec![Scalar::ZERO; n];
    out.par_chunks_mut(CHUNK).enumerate().for_each(|(i, c)| {
        let mut rng = chunk_rng(seed, i);
        for s in c {
            let u: f64 = rng.gen();
            *s = if u < p_zero {
                Scalar::ZERO
            } else if u < p_zero + p_one {
                Scalar::ONE
            } else {
                Scalar::random(&mut rng)
            };
        }
    });
    out
}

/// The kernels' Montgomery layout of scalars.
pub fn to_reprs(scalars: &[Scalar]) -> Vec<FrRepr> {
    scalars.par_iter().map(|s| FrRepr::from(*s)).collect()
}

/// `n` valid random points: each parallel block starts at a random point and steps by
/// another, which is far cheaper than a scalar multiplication per point.
pub fn random_bases<C: MsmCurve>(n: usize, seed: u64) -> Vec<C::Affine> {
    let projective: Vec<C::Projective> = (0..n.div_ceil(CHUNK))
        .into_par_iter()
        .flat_map_iter(|i| {
            let mut rng = chunk_rng(seed, i);
            let mut p = C::Projective::random(&mut rng);
            let step = C::Projective::random(&mut rng);
            let len = CHUNK.min(n - i * CHUNK);
            (0..len).map(move |_| {
                p += step;
                p
            })
        })
        .collect();
    projective
        .par_chunks(CHUNK)
        .flat_map_iter(C::batch_to_affine)
        .collect()
}

/// The bases followed by their shifted copies, as [`crate::gpu::MsmEngine::shift_bases`] lays
/// them out on the device: copy k holds 2^(bits·k)·P_i at k·len + i, for k < `copies`.
pub fn shifted_table<C: MsmCurve>(bases: &[C::Affine], bits: u32, copies: u32) -> Vec<C::Affine> {
    let mut table = bases.to_vec();
    let mut copy: Vec<C::Projective> = bases.par_iter().map(|p| p.to_curve()).collect();
    for _ in 1..copies {
        copy.par_iter_mut().for_each(|p| {
            for _ in 0..bits {
                *p = p.double();
            }
        });
        table.extend(
            copy.par_chunks(CHUNK)
                .flat_map_iter(C::batch_to_affine)
                .collect::<Vec<_>>(),
        );
    }
    table
}

/// SplitMix64, as the device's point generator uses it.
fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Which multiple of the generator the device's point generator writes at `index` for `seed`
/// with `per_thread` points per thread: (j + 1)·k_t for thread t = index / per_thread,
/// j = index mod per_thread.
pub fn generated_multiplier(seed: u64, index: u64, per_thread: u32) -> Scalar {
    let t = index / per_thread as u64;
    let j = index % per_thread as u64;
    let mut k = splitmix64(seed ^ t.wrapping_mul(0x9E37_79B9_7F4A_7C15));
    if k == 0 {
        k = 1;
    }
    Scalar::from(k) * Scalar::from(j + 1)
}

/// Σ scalars[i]·m_i for the multipliers of generated points: the MSM over generated bases is
/// this scalar times the generator, which checks any size in linear time.
pub fn generated_msm<C: MsmCurve>(scalars: &[Scalar], seed: u64, per_thread: u32) -> C::Projective {
    let sum = scalars
        .par_iter()
        .enumerate()
        .map(|(i, s)| *s * generated_multiplier(seed, i as u64, per_thread))
        .reduce(|| Scalar::ZERO, |a, b| a + b);
    C::Projective::generator() * sum
}
