//! GPU tests of the NTT engine against the CPU reference (ignored by default; run with
//! `--ignored gpu_` on a machine with a CUDA GPU and the kernel image).
//!
//! Inputs are fresh seeded random vectors; every assertion names its seed, size and position.
#![cfg(feature = "cuda")]

use cuzk_cuda::{Device, DeviceBuffer, Stream};
use cuzk_field::consts::{root_of_unity, FR_MODULUS};
use cuzk_field::{Field, FrRepr, Scalar};
use cuzk_ntt::cpu::{evaluate, Domain};
use cuzk_ntt::gpu::{ArithCode, ArithOp, NttEngine};
use cuzk_ntt::NttError;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;
use rayon::prelude::*;
use std::sync::OnceLock;
use std::time::Instant;

fn engine() -> &'static (NttEngine, Stream) {
    static ENGINE: OnceLock<(NttEngine, Stream)> = OnceLock::new();
    ENGINE.get_or_init(|| {
        let device = Device::open(0).expect("a CUDA device");
        let engine = NttEngine::new(&device).expect("the NTT kernels");
        let stream = device.new_stream().unwrap();
        (engine, stream)
    })
}

/// `n` random elements below 2^254 (so below r), generated in parallel from `seed`.
fn random_reprs(seed: u64, n: usize) -> Vec<FrRepr> {
    const CHUNK: usize = 1 << 16;
    let mut out = vec![FrRepr::default(); n];
    out.par_chunks_mut(CHUNK)
        .enumerate()
        .for_each(|(i, chunk)| {
            let mut rng = ChaCha20Rng::seed_from_u64(seed ^ ((i as u64) << 20));
            for x in chunk {
                let mut l: [u64; 4] = rng.gen();
                l[3] &= (1 << 62) - 1;
                x.limbs = l;
            }
        });
    out
}

fn to_scalars(v: &[FrRepr]) -> Vec<Scalar> {
    v.par_iter()
        .map(|r| Scalar::try_from(*r).expect("reduced"))
        .collect()
}

fn to_reprs(v: &[Scalar]) -> Vec<FrRepr> {
    v.par_iter().map(|s| FrRepr::from(*s)).collect()
}

/// Every other element plus r: the same residue in the form below 2r that the NTT's passes hold
/// between operations (r < 2^255, so the sum fits).
fn lift_alternate(v: &[FrRepr]) -> Vec<FrRepr> {
    v.iter()
        .enumerate()
        .map(|(i, x)| {
            if i % 2 == 0 {
                return *x;
            }
            let mut limbs = x.limbs;
            let mut carry = 0u128;
            for (l, m) in limbs.iter_mut().zip(FR_MODULUS) {
                let s = *l as u128 + m as u128 + carry;
                *l = s as u64;
                carry = s >> 64;
            }
            assert_eq!(carry, 0, "x + r fits in 256 bits");
            FrRepr { limbs }
        })
        .collect()
}

fn download(stream: &Stream, b: &DeviceBuffer<FrRepr>) -> Vec<Scalar> {
    to_scalars(&stream.download(b).unwrap())
}

fn assert_same(got: &[Scalar], want: &[Scalar], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    if let Some(i) = (0..got.len()).find(|&i| got[i] != want[i]) {
        let wrong = (0..got.len()).filter(|&i| got[i] != want[i]).count();
        panic!(
            "{what}: {wrong} of {} elements differ, first at {i}",
            got.len()
        );
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_arith_matches_blstrs() {
    let (engine, stream) = engine();
    let seed = 11;
    let mut a = to_scalars(&random_reprs(seed, 1 << 14));
    let mut b = to_scalars(&random_reprs(seed + 1, 1 << 14));
    // Edge values in both operands: the field values r − 1 and r − 2, and the elements whose
    // Montgomery limbs are r − 1, r − 2 and 2^254 (lifted by `lift_alternate` to 2r − 1,
    // 2r − 2 and r + 2^254, the top of the lazily reduced range), every pair at an even index
    // (unlifted) and an odd one (lifted).
    let limbs = |l: [u64; 4]| Scalar::try_from(FrRepr { limbs: l }).expect("below r");
    let r_minus = |k: u64| {
        let mut l = FR_MODULUS;
        l[0] -= k;
        limbs(l)
    };
    let edge = [
        Scalar::ZERO,
        Scalar::ONE,
        -Scalar::ONE,
        -Scalar::from(2u64),
        Scalar::from(u64::MAX),
        r_minus(1),
        r_minus(2),
        limbs([0, 0, 0, 1 << 62]),
    ];
    let e = edge.len();
    for (i, x) in edge.iter().enumerate() {
        for (j, y) in edge.iter().enumerate() {
            for k in 0..2 {
                a[2 * (i * e + j) + k] = *x;
                b[2 * (i * e + j) + k] = *y;
            }
        }
    }
    let da = stream.upload(&to_reprs(&a)).unwrap();
    let db = stream.upload(&to_reprs(&b)).unwrap();
    // The lazily reduced code takes operands below 2r (the product's second one below r).
    let da_lifted = stream.upload(&lift_alternate(&to_reprs(&a))).unwrap();
    let db_lifted = stream.upload(&lift_alternate(&to_reprs(&b))).unwrap();
    let mut out = stream.alloc::<FrRepr>(a.len()).unwrap();
    for code in ArithCode::ALL {
        let lazy = !matches!(code, ArithCode::Ntt | ArithCode::Generic);
        for (op, iters) in [
            (ArithOp::Mul, 1),
            (ArithOp::Mul, 3),
            (ArithOp::Add, 2),
            (ArithOp::Sub, 2),
        ] {
            let (x, y) = match (lazy, op) {
                (true, ArithOp::Mul) => (&da_lifted, &db),
                (true, _) => (&da_lifted, &db_lifted),
                (false, _) => (&da, &db),
            };
            engine
                .arith(stream, (op, code), x, y, &mut out, iters)
                .unwrap();
            let got = download(stream, &out);
            let want: Vec<Scalar> = a
                .iter()
                .zip(&b)
                .map(|(x, y)| {
                    let mut acc = *x;
                    for _ in 0..iters {
                        acc = match op {
                            ArithOp::Mul => acc * y,
                            ArithOp::Add => acc + y,
                            ArithOp::Sub => acc - y,
                        };
                    }
                    acc
                })
                .collect();
            assert_same(
                &got,
                &want,
                &format!("{code:?} {op:?} x{iters}, seed {seed}"),
            );
        }
    }
}

/// All four transforms against the CPU reference for every size 2^1 … 2^20, four vectors per
/// call (so batches span more than one launch).
#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_transforms_match_cpu_reference_for_every_size() {
    let (engine, stream) = engine();
    let start = Instant::now();
    for log_n in 1..=20u32 {
        let seed = 1000 + log_n as u64;
        let d = Domain::new(log_n).unwrap();
        let inputs: Vec<Vec<FrRepr>> = (0..4)
            .map(|i| random_reprs(seed * 10 + i, d.size()))
            .collect();
        type Transform = fn(
            &NttEngine,
            &Stream,
            &mut [cuzk_cuda::DeviceViewMut<'_, FrRepr>],
        ) -> Result<(), NttError>;
        type Reference = fn(&Domain, &mut [Scalar]) -> Result<(), NttError>;
        let cases: [(&str, Transform, Reference); 4] = [
            ("ntt", NttEngine::ntt, Domain::ntt),
            ("intt", NttEngine::intt, Domain::intt),
            ("coset_ntt", NttEngine::coset_ntt, Domain::coset_ntt),
            ("coset_intt", NttEngine::coset_intt, Domain::coset_intt),
        ];
        for (name, gpu, cpu) in cases {
            let mut bufs: Vec<DeviceBuffer<FrRepr>> =
                inputs.iter().map(|v| stream.upload(v).unwrap()).collect();
            let mut views: Vec<_> = bufs.iter_mut().map(|b| b.as_view_mut()).collect();
            gpu(engine, stream, &mut views).unwrap();
            drop(views);
            for (i, (buf, input)) in bufs.iter().zip(&inputs).enumerate() {
                let mut want = to_scalars(input);
                cpu(&d, &mut want).unwrap();
                assert_same(
                    &download(stream, buf),
                    &want,
                    &format!("{name} 2^{log_n}, vector {i}, seed {seed}"),
                );
            }
        }
    }
    eprintln!(
        "every size 2^1..2^20: {:.1} s",
        start.elapsed().as_secs_f64()
    );
}

/// The bit-reversed-order variants: the forward transform without its bit reversal against
/// the CPU reference permuted (every size up to 2^20, several vectors per call), and the
/// inverse from bit-reversed order back to the input (also at 2^21 … 2^24).
#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_bit_reversed_order_variants_match_cpu_reference() {
    let (engine, stream) = engine();
    for log_n in (1..=20u32).chain([21, 22, 24]) {
        let seed = 8000 + log_n as u64;
        let inputs: Vec<Vec<FrRepr>> = (0..3)
            .map(|i| random_reprs(seed * 10 + i, 1 << log_n))
            .collect();
        let mut bufs: Vec<DeviceBuffer<FrRepr>> =
            inputs.iter().map(|v| stream.upload(v).unwrap()).collect();
        let mut views: Vec<_> = bufs.iter_mut().map(|b| b.as_view_mut()).collect();
        engine.ntt_to_bit_reversed(stream, &mut views).unwrap();
        drop(views);
        if log_n <= 20 {
            let d = Domain::new(log_n).unwrap();
            for (i, (buf, input)) in bufs.iter().zip(&inputs).enumerate() {
                let mut want = to_scalars(input);
                d.ntt(&mut want).unwrap();
                cuzk_ntt::cpu::bit_reverse_permute(&mut want);
                assert_same(
                    &download(stream, buf),
                    &want,
                    &format!("ntt to bit-reversed 2^{log_n}, vector {i}, seed {seed}"),
                );
            }
        }
        let mut views: Vec<_> = bufs.iter_mut().map(|b| b.as_view_mut()).collect();
        engine.intt_from_bit_reversed(stream, &mut views).unwrap();
        drop(views);
        for (i, (buf, input)) in bufs.iter().zip(&inputs).enumerate() {
            assert!(
                stream.download(buf).unwrap() == *input,
                "intt from bit-reversed ∘ ntt to bit-reversed, 2^{log_n}, vector {i}, seed {seed}"
            );
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_round_trips_are_the_identity() {
    let (engine, stream) = engine();
    for log_n in [21u32, 22, 23, 24, 25] {
        let seed = 2000 + log_n as u64;
        let input = random_reprs(seed, 1 << log_n);
        let mut buf = stream.upload(&input).unwrap();
        engine.ntt(stream, &mut [buf.as_view_mut()]).unwrap();
        let mid = stream.download(&buf).unwrap();
        assert_ne!(
            mid[1..9],
            input[1..9],
            "ntt changed nothing, 2^{log_n}, seed {seed}"
        );
        engine.intt(stream, &mut [buf.as_view_mut()]).unwrap();
        assert!(
            stream.download(&buf).unwrap() == input,
            "intt∘ntt, 2^{log_n}, seed {seed}"
        );
        engine.coset_ntt(stream, &mut [buf.as_view_mut()]).unwrap();
        engine.coset_intt(stream, &mut [buf.as_view_mut()]).unwrap();
        assert!(
            stream.download(&buf).unwrap() == input,
            "coset_intt∘coset_ntt, 2^{log_n}, seed {seed}"
        );
    }
}

/// Checks a few outputs of a large forward, coset and inverse transform by direct evaluation.
fn spot_check(log_n: u32, positions: usize) {
    let (engine, stream) = engine();
    let seed = 3000 + log_n as u64;
    let n = 1usize << log_n;
    let input = random_reprs(seed, n);
    let coeffs = to_scalars(&input);
    let omega = root_of_unity(log_n).unwrap();
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let picks: Vec<usize> = (0..positions)
        .map(|_| rng.gen_range(0..n))
        .chain([0, n - 1])
        .collect();

    let mut buf = stream.upload(&input).unwrap();
    let t = Instant::now();
    engine.ntt(stream, &mut [buf.as_view_mut()]).unwrap();
    let evals = download(stream, &buf);
    eprintln!(
        "2^{log_n}: ntt + download {:.2} s",
        t.elapsed().as_secs_f64()
    );
    for &k in &picks {
        let want = evaluate(&coeffs, omega.pow_vartime([k as u64]));
        assert!(evals[k] == want, "ntt 2^{log_n} output {k}, seed {seed}");
    }
    // The inverse of the evaluations is the input again, and spot values of an inverse of
    // arbitrary data are x_i = (1/n)·Σ X_k ω^(-ik).
    engine.intt(stream, &mut [buf.as_view_mut()]).unwrap();
    assert!(
        stream.download(&buf).unwrap() == input,
        "intt∘ntt 2^{log_n}, seed {seed}"
    );
    let n_inv = Scalar::from(n as u64).invert().unwrap();
    let mut buf = stream.upload(&input).unwrap();
    engine.intt(stream, &mut [buf.as_view_mut()]).unwrap();
    let inv = download(stream, &buf);
    let omega_inv = omega.invert().unwrap();
    for &i in picks.iter().take(2) {
        assert!(
            inv[i] == evaluate(&coeffs, omega_inv.pow_vartime([i as u64])) * n_inv,
            "intt 2^{log_n} output {i}, seed {seed}"
        );
    }
    let mut buf = stream.upload(&input).unwrap();
    engine.coset_ntt(stream, &mut [buf.as_view_mut()]).unwrap();
    let coset = download(stream, &buf);
    let g = cuzk_field::consts::COSET_GENERATOR;
    for &k in picks.iter().take(2) {
        assert!(
            coset[k] == evaluate(&coeffs, g * omega.pow_vartime([k as u64])),
            "coset_ntt 2^{log_n} output {k}, seed {seed}"
        );
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_spot_checks_at_2_24() {
    spot_check(24, 4);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_spot_checks_at_2_27() {
    spot_check(27, 3);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_groth16_h_matches_cpu_reference() {
    let (engine, stream) = engine();
    // 2^1 and 2^2 take the tiny kernel, 2^3 to 2^10 one pass, 2^11 to 2^20 two and 2^21
    // three; the final bit reversal (with the subtraction of C) is element by element below
    // 2^8, tiled from there.
    for log_n in (1..=16u32).chain([20, 21]) {
        let seed = 4000 + log_n as u64;
        let d = Domain::new(log_n).unwrap();
        let host: Vec<Vec<FrRepr>> = (0..3)
            .map(|i| random_reprs(seed * 10 + i, d.size()))
            .collect();
        let [mut a, mut b, mut c] = [0, 1, 2].map(|i| stream.upload(&host[i]).unwrap());
        engine
            .groth16_h(
                stream,
                &mut [a.as_view_mut(), b.as_view_mut(), c.as_view_mut()],
            )
            .unwrap();
        let [mut ra, mut rb, mut rc] = [0, 1, 2].map(|i| to_scalars(&host[i]));
        d.h_quotient(&mut ra, &mut rb, &mut rc).unwrap();
        assert_same(
            &download(stream, &a),
            &ra,
            &format!("groth16_h 2^{log_n}, seed {seed}"),
        );
    }
}

/// `p(τ)` for the polynomial p of degree < n whose evaluations on ⟨ω⟩ are `evals`, by the
/// barycentric formula `p(τ) = (τ^n − 1)/n · Σ evals[i]·ω^i/(τ − ω^i)`.
fn eval_from_evaluations(evals: &[Scalar], omega: Scalar, tau: Scalar) -> Scalar {
    const CHUNK: usize = 1 << 14;
    let n = evals.len();
    let sum: Scalar = evals
        .par_chunks(CHUNK)
        .enumerate()
        .map(|(j, chunk)| {
            let mut w = omega.pow_vartime([(j * CHUNK) as u64]);
            let mut ws = Vec::with_capacity(chunk.len());
            let mut den = Vec::with_capacity(chunk.len());
            for _ in chunk {
                ws.push(w);
                den.push(tau - w);
                w *= omega;
            }
            // Batch inversion: one field inversion per chunk.
            let mut prefix = Vec::with_capacity(den.len());
            let mut acc = Scalar::ONE;
            for x in &den {
                prefix.push(acc);
                acc *= x;
            }
            let mut inv = acc.invert().unwrap();
            let mut s = Scalar::ZERO;
            for i in (0..den.len()).rev() {
                let di = inv * prefix[i];
                inv *= den[i];
                s += chunk[i] * ws[i] * di;
            }
            s
        })
        .reduce(|| Scalar::ZERO, |x, y| x + y);
    let tn = tau.pow_vartime([n as u64]) - Scalar::ONE;
    sum * tn * Scalar::from(n as u64).invert().unwrap()
}

/// At 2^24, too large to recompute on the CPU: with C = A∘B on the domain the quotient is
/// exact, so `H(τ)·Z(τ) = A(τ)·B(τ) − C(τ)` at a random τ, and H has degree below n − 1.
#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_groth16_h_at_2_24_divides_exactly() {
    let (engine, stream) = engine();
    let log_n = 24;
    let seed = 5024;
    let n = 1usize << log_n;
    let a = to_scalars(&random_reprs(seed, n));
    let b = to_scalars(&random_reprs(seed + 1, n));
    let c: Vec<Scalar> = a.par_iter().zip(&b).map(|(x, y)| *x * y).collect();
    let [mut da, mut db, mut dc] = [&a, &b, &c].map(|v| stream.upload(&to_reprs(v)).unwrap());
    engine
        .groth16_h(
            stream,
            &mut [da.as_view_mut(), db.as_view_mut(), dc.as_view_mut()],
        )
        .unwrap();
    let h = download(stream, &da);
    assert!(h[n - 1].is_zero_vartime(), "deg H < n − 1, seed {seed}");
    let omega = root_of_unity(log_n).unwrap();
    let tau = Scalar::random(ChaCha20Rng::seed_from_u64(seed));
    let z = tau.pow_vartime([n as u64]) - Scalar::ONE;
    let lhs = evaluate(&h, tau) * z;
    let rhs = eval_from_evaluations(&a, omega, tau) * eval_from_evaluations(&b, omega, tau)
        - eval_from_evaluations(&c, omega, tau);
    assert!(lhs == rhs, "H·Z = A·B − C at τ, 2^{log_n}, seed {seed}");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_bad_inputs_are_refused_by_name() {
    let (engine, stream) = engine();
    let mut a = stream.alloc_zeroed::<FrRepr>(8).unwrap();
    let mut b = stream.alloc_zeroed::<FrRepr>(16).unwrap();
    let mut odd = stream.alloc_zeroed::<FrRepr>(12).unwrap();
    let mut one = stream.alloc_zeroed::<FrRepr>(1).unwrap();
    let err = engine
        .ntt(stream, &mut [a.as_view_mut(), b.as_view_mut()])
        .unwrap_err();
    assert!(
        matches!(
            err,
            NttError::LengthMismatch {
                index: 1,
                expected: 8,
                got: 16
            }
        ),
        "{err}"
    );
    let err = engine.intt(stream, &mut [odd.as_view_mut()]).unwrap_err();
    assert!(matches!(err, NttError::NotPowerOfTwo { len: 12 }), "{err}");
    let err = engine
        .coset_ntt(stream, &mut [one.as_view_mut()])
        .unwrap_err();
    assert!(matches!(err, NttError::TooSmall { log_n: 0, .. }), "{err}");
    assert!(matches!(
        engine.ntt(stream, &mut []).unwrap_err(),
        NttError::EmptyBatch
    ));
}

/// Both block sizes of the pass kernels compute the same transforms.
#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_block_sizes_agree() {
    let big = &engine().0;
    let small = NttEngine::new(big.device()).unwrap();
    small.set_block_log(10).unwrap();
    assert!(matches!(
        small.set_block_log(12),
        Err(NttError::BlockSize { block_log: 12, .. })
    ));
    assert_engines_agree(
        big,
        &small,
        &[3, 9, 12, 17, 20, 23],
        17,
        6000,
        "small blocks",
    );
}

/// Checks that `other` transforms like `reference` (a forward NTT, then a coset inverse NTT) at
/// each size `2^log_n` of `sizes`, and like the CPU reference up to `2^cpu_max`.
fn assert_engines_agree(
    reference: &NttEngine,
    other: &NttEngine,
    sizes: &[u32],
    cpu_max: u32,
    seed0: u64,
    what: &str,
) {
    let stream = &engine().1;
    for &log_n in sizes {
        let seed = seed0 + log_n as u64;
        let input = random_reprs(seed, 1 << log_n);
        let mut x = stream.upload(&input).unwrap();
        let mut y = stream.upload(&input).unwrap();
        reference.ntt(stream, &mut [x.as_view_mut()]).unwrap();
        other.ntt(stream, &mut [y.as_view_mut()]).unwrap();
        assert!(
            stream.download(&x).unwrap() == stream.download(&y).unwrap(),
            "{what}: ntt 2^{log_n}, seed {seed}"
        );
        reference
            .coset_intt(stream, &mut [x.as_view_mut()])
            .unwrap();
        other.coset_intt(stream, &mut [y.as_view_mut()]).unwrap();
        assert!(
            stream.download(&x).unwrap() == stream.download(&y).unwrap(),
            "{what}: coset_intt 2^{log_n}, seed {seed}"
        );
        if log_n <= cpu_max {
            let d = Domain::new(log_n).unwrap();
            let mut want = to_scalars(&input);
            d.ntt(&mut want).unwrap();
            d.coset_intt(&mut want).unwrap();
            assert_same(
                &download(stream, &y),
                &want,
                &format!("{what} 2^{log_n}, seed {seed}"),
            );
        }
    }
}

/// `e`'s Groth16 H step of the vectors a, b, c (uploaded afresh), downloaded.
fn groth16_h_of(e: &NttEngine, vecs: &[Vec<FrRepr>]) -> Vec<FrRepr> {
    let stream = &engine().1;
    let mut bufs: Vec<DeviceBuffer<FrRepr>> =
        vecs.iter().map(|v| stream.upload(v).unwrap()).collect();
    let [a, b, c] = &mut bufs[..] else {
        unreachable!()
    };
    e.groth16_h(
        stream,
        &mut [a.as_view_mut(), b.as_view_mut(), c.as_view_mut()],
    )
    .unwrap();
    stream.download(&bufs[0]).unwrap()
}

/// Pass factors from one table (any bound) compute the same transforms as from two, and an
/// impossible bound is refused by name.
#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_direct_factor_tables_agree() {
    let split = &engine().0;
    let direct = NttEngine::new(split.device()).unwrap();
    direct.set_direct_factor_log(28).unwrap();
    assert!(matches!(
        direct.set_direct_factor_log(29),
        Err(NttError::DirectFactorLog { log: 29, max: 28 })
    ));
    // With the default bound the top-pass factors of 2^13 and 2^16 come from one table and those
    // of 2^21 and up from two: `direct` takes every factor from one table (so it differs from
    // the default at 2^21 and up), `every_split` from two (so it differs at 2^13 and 2^16).
    let every_split = NttEngine::new(split.device()).unwrap();
    every_split.set_direct_factor_log(0).unwrap();
    assert_engines_agree(
        split,
        &direct,
        &[13, 21, 22, 24],
        13,
        7000,
        "direct factors",
    );
    assert_engines_agree(split, &every_split, &[13, 16], 16, 7500, "split factors");
    // The Groth16 H step at 2^22 through direct tables against the default engine.
    let log_n = 22;
    let vecs: Vec<Vec<FrRepr>> = (0..3).map(|i| random_reprs(7100 + i, 1 << log_n)).collect();
    assert!(
        groth16_h_of(split, &vecs) == groth16_h_of(&direct, &vecs),
        "groth16_h 2^{log_n}"
    );
}

/// Every pass with 4 elements a thread, and every pass with 8, computes what the default
/// choice per pass does (which mixes the two), at sizes with one, two and three passes (odd
/// pass widths, so radix-2 rounds; passes of 3 stages) and in the Groth16 H step; a shape the
/// kernels do not come in is refused by name.
#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_thread_shapes_agree() {
    let auto = &engine().0;
    let four = NttEngine::new(auto.device()).unwrap();
    four.set_elems_log(Some(2)).unwrap();
    let eight = NttEngine::new(auto.device()).unwrap();
    eight.set_elems_log(Some(3)).unwrap();
    for bad in [1, 4] {
        assert!(matches!(
            four.set_elems_log(Some(bad)),
            Err(NttError::ElemsPerThread { elems_log, min: 2, max: 3 }) if elems_log == bad
        ));
    }
    let sizes = [3, 4, 5, 9, 10, 11, 12, 13, 17, 20, 21, 23, 24, 26];
    assert_engines_agree(auto, &four, &sizes, 17, 8000, "4 elements a thread");
    assert_engines_agree(auto, &eight, &sizes, 13, 8500, "8 elements a thread");
    let log_n = 22;
    let vecs: Vec<Vec<FrRepr>> = (0..3).map(|i| random_reprs(8100 + i, 1 << log_n)).collect();
    let want = groth16_h_of(auto, &vecs);
    assert!(
        groth16_h_of(&four, &vecs) == want,
        "groth16_h 2^{log_n}, 4 elements a thread"
    );
    assert!(
        groth16_h_of(&eight, &vecs) == want,
        "groth16_h 2^{log_n}, 8 elements a thread"
    );
}
