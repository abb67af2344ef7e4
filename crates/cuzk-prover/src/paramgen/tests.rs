//! GPU tests of parameter generation and of the fixed-base kernels under it (ignored without a
//! GPU; run with `--ignored gpu_`): device results against the CPU, point for point and file
//! for file. Every assertion names the group, window, points per thread and scalar.

use super::*;
use cuzk_circuits::{Sha256Preimage, SyntheticPoRep};
use cuzk_field::{Field, G1Projective, G2Projective, Group};
use cuzk_groth16::{generate_parameters_with, Parameters};
use cuzk_msm::gpu::{FixedBaseEngine, FIXED_MAX_BITS, FIXED_MIN_BITS};
use cuzk_synth::testing::RandomCircuit;
use cuzk_synth::Csr;
use proptest::prelude::*;
use rand_chacha::rand_core::SeedableRng;
use rand_chacha::ChaCha8Rng;
use std::sync::OnceLock;

fn device() -> &'static Device {
    static DEVICE: OnceLock<Device> = OnceLock::new();
    DEVICE.get_or_init(|| Device::open(0).expect("a CUDA device"))
}

fn pow2(k: u64) -> Scalar {
    Scalar::from(2u64).pow_vartime([k])
}

/// Scalars that stress the signed recoding with `bits`-bit windows and the special cases of
/// the additions: 0, ±1, ±2, r − 1 (= −1), (r ± 1)/2, powers of two, window boundaries, every
/// window at 2^{bits−1} (the largest digit without a carry) and at 2^{bits−1} + 1 (a carry
/// through every window).
fn edge_scalars(bits: u32) -> Vec<Scalar> {
    let one = Scalar::ONE;
    let half_inv = Scalar::from(2u64).invert().unwrap();
    let b = u64::from(bits);
    let windows = u64::from(256u32.div_ceil(bits));
    let mut v = vec![
        Scalar::ZERO,
        one,
        Scalar::from(2u64),
        Scalar::from(3u64),
        -one,
        -Scalar::from(2u64),
        half_inv,
        -half_inv,
        pow2(64),
        pow2(128),
        pow2(254),
        pow2(254) - one,
        pow2(b - 1),
        pow2(b - 1) + one,
        pow2(b) - one,
        pow2(b),
        -pow2(b - 1),
        -pow2(b),
    ];
    let (mut no_carry, mut carry) = (Scalar::ZERO, Scalar::ZERO);
    for w in 0..windows {
        let weight = pow2(b * w);
        v.push(weight);
        v.push(-weight);
        no_carry += pow2(b - 1) * weight;
        carry += (pow2(b - 1) + one) * weight;
    }
    v.extend([no_carry, carry, -no_carry, -carry]);
    v
}

fn random_scalars(n: usize, seed: u64) -> Vec<Scalar> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    (0..n).map(|_| Scalar::random(&mut rng)).collect()
}

/// Multiplies `scalars` by `base` on the device and compares every point with the host.
fn fixed_base_case<C: MsmCurve>(base: &C::Affine, bits: Option<u32>, per: u32, scalars: &[Scalar]) {
    let d = device();
    let stream = d.new_stream().unwrap();
    let engine = FixedBaseEngine::new(d)
        .unwrap()
        .with_points_per_thread(per)
        .unwrap();
    let table = engine.table::<C>(&stream, base, bits).unwrap();
    let reprs: Vec<FrRepr> = scalars.iter().map(|s| FrRepr::from(*s)).collect();
    let got = engine.mul_host::<C>(&stream, &table, &reprs).unwrap();
    assert_eq!(got.len(), scalars.len());
    let want: Vec<C::AffineRepr> = scalars
        .par_iter()
        .map(|s| C::to_repr(&(*base * *s).to_affine()))
        .collect();
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        assert_eq!(
            g,
            w,
            "{} bits {:?} per {per}: scalar {i} = {:?}",
            C::NAME,
            table.bits(),
            scalars[i]
        );
    }
}

fn fixed_base_all_shapes<C: MsmCurve>(seed: u64) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let generator = C::Affine::generator();
    let other = C::Projective::random(&mut rng).to_affine();
    for bits in [
        None,
        Some(FIXED_MIN_BITS),
        Some(7),
        Some(8),
        Some(13),
        Some(FIXED_MAX_BITS),
    ] {
        let b = bits.unwrap_or_else(cuzk_msm::gpu::default_fixed_bits::<C>);
        for per in [1, 5, 16] {
            // Sizes that leave partial threads and blocks.
            let mut scalars = edge_scalars(b);
            scalars.extend(random_scalars(
                1000 + 37 * per as usize,
                seed + u64::from(b),
            ));
            fixed_base_case::<C>(&generator, bits, per, &scalars);
        }
        fixed_base_case::<C>(&other, bits, 16, &edge_scalars(b));
    }
    // One scalar, and an empty call.
    fixed_base_case::<C>(&generator, None, 16, &[-Scalar::ONE]);
    fixed_base_case::<C>(&generator, None, 16, &[]);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_fixed_base_equals_cpu_in_g1() {
    fixed_base_all_shapes::<G1>(1);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_fixed_base_equals_cpu_in_g2() {
    fixed_base_all_shapes::<G2>(2);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 8, .. ProptestConfig::default() })]

    #[test]
    #[ignore = "needs a CUDA GPU"]
    fn gpu_fixed_base_equals_cpu_on_fresh_scalars(seed in any::<u64>(), n in 1usize..3000) {
        let scalars = random_scalars(n, seed);
        fixed_base_case::<G1>(&G1Affine::generator(), None, 16, &scalars);
        fixed_base_case::<G2>(&G2Affine::generator(), None, 16, &scalars[..n.min(500)]);
    }
}

/// More points than one launch takes (2^26): checked at the launch boundary, at the ends and
/// at spread indices.
#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_fixed_base_spans_several_launches() {
    let n = (1usize << 26) + 4099;
    let scalars = cuzk_msm::testing::random_scalars(n, 3);
    let d = device();
    let stream = d.new_stream().unwrap();
    let engine = FixedBaseEngine::new(d).unwrap();
    let table = engine
        .table::<G1>(&stream, &G1Affine::generator(), None)
        .unwrap();
    let reprs = cuzk_msm::testing::to_reprs(&scalars);
    let got = engine.mul_host::<G1>(&stream, &table, &reprs).unwrap();
    let boundary = 1usize << 26;
    let mut picks: Vec<usize> = (0..256).map(|k| k * (n / 256) + k).collect();
    picks.extend([0, 1, boundary - 1, boundary, boundary + 1, n - 1]);
    for i in picks {
        let want = G1::to_repr(&(G1Affine::generator() * scalars[i]).to_affine());
        assert_eq!(got[i], want, "point {i} of {n}");
    }
}

/// The PCE with one extra row `x·0 = 0` (x in A) for every variable no row mentions, placed
/// before the input rows, so that a random circuit gets parameters at all.
fn constrain_unused(mut pce: Pce) -> Pce {
    let num_vars = pce.num_inputs + pce.num_aux;
    let mut used = vec![false; num_vars];
    for m in [&pce.a, &pce.b, &pce.c] {
        for &c in &m.cols {
            used[c as usize] = true;
        }
    }
    let unused: Vec<u32> = (0..num_vars as u32)
        .filter(|&j| !used[j as usize])
        .collect();
    let rows = pce.num_constraints;
    for (m, in_a) in [(&mut pce.a, true), (&mut pce.b, false), (&mut pce.c, false)] {
        let split = m.row_ptr[rows];
        let tail_cols = m.cols.split_off(split as usize);
        let tail_coeffs = m.coeffs.split_off(split as usize);
        let tail_ptr: Vec<u64> = m.row_ptr[rows + 1..].iter().map(|p| p - split).collect();
        m.row_ptr.truncate(rows + 1);
        for &j in &unused {
            if in_a {
                m.cols.push(j);
                m.coeffs.push(Csr::ONE_INDEX);
            }
            m.row_ptr.push(m.cols.len() as u64);
        }
        let base = m.cols.len() as u64;
        m.cols.extend(tail_cols);
        m.coeffs.extend(tail_coeffs);
        m.row_ptr.extend(tail_ptr.iter().map(|p| p + base));
    }
    pce.num_constraints += unused.len();
    pce
}

fn bytes(p: &Parameters) -> Vec<u8> {
    let mut out = Vec::new();
    p.write(&mut out).unwrap();
    out
}

/// The device copies of the queries equal the host queries (H followed by one identity).
fn check_on_device(params: &Parameters, q: &DeviceQueries) {
    let stream = device().new_stream().unwrap();
    let g1 = |p: &[G1Affine]| p.iter().map(G1::to_repr).collect::<Vec<_>>();
    let mut h = g1(&params.h);
    h.push(G1AffineRepr::default());
    assert_eq!(q.h.download(&stream).unwrap(), h, "h on the device");
    assert_eq!(
        q.l.download(&stream).unwrap(),
        g1(&params.l),
        "l on the device"
    );
    assert_eq!(
        q.a.download(&stream).unwrap(),
        g1(&params.a),
        "a on the device"
    );
    assert_eq!(
        q.b_g1.download(&stream).unwrap(),
        g1(&params.b_g1),
        "b_g1 on the device"
    );
    let b_g2: Vec<_> = params.b_g2.iter().map(G2::to_repr).collect();
    assert_eq!(
        q.b_g2.download(&stream).unwrap(),
        b_g2,
        "b_g2 on the device"
    );
}

/// GPU and CPU generators give byte-identical parameters, with the default configuration
/// and with narrow windows, few points per thread and the points kept on the device.
fn gpu_equals_cpu(pce: &Pce, toxic: &ToxicWaste, what: &str) {
    let cpu = generate_parameters_with(pce, toxic).unwrap();
    let gpu = generate_parameters_gpu(device(), pce, toxic).unwrap();
    assert!(bytes(&gpu) == bytes(&cpu), "{what}: default configuration");
    let config = GpuParamgenConfig {
        g1_window_bits: Some(5),
        g2_window_bits: Some(4),
        points_per_thread: Some(3),
        keep_on_device: true,
    };
    let kept = generate_parameters_gpu_config(device(), pce, toxic, &config).unwrap();
    assert!(bytes(&kept.params) == bytes(&cpu), "{what}: {config:?}");
    check_on_device(
        &kept.params,
        kept.on_device.as_ref().expect("kept on the device"),
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_generate_equals_cpu_on_random_circuits() {
    for seed in 0..12u64 {
        let circuit = RandomCircuit::new(seed, 40 + 30 * seed as usize);
        let pce = constrain_unused(Pce::record(circuit).unwrap());
        let toxic = ToxicWaste::random(&mut ChaCha8Rng::seed_from_u64(seed ^ 0x5eed));
        gpu_equals_cpu(&pce, &toxic, &format!("random circuit {seed}"));
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_generate_equals_cpu_on_the_samples() {
    let toxic = ToxicWaste::random(&mut ChaCha8Rng::seed_from_u64(11));
    let sha = Pce::record(Sha256Preimage::with_approx_constraints(1 << 16, 1)).unwrap();
    // Compare the written files, as a user would.
    let dir = tempfile::tempdir().unwrap();
    let (cpu_file, gpu_file) = (dir.path().join("cpu.params"), dir.path().join("gpu.params"));
    generate_parameters_with(&sha, &toxic)
        .unwrap()
        .write_file(&cpu_file)
        .unwrap();
    generate_parameters_gpu(device(), &sha, &toxic)
        .unwrap()
        .write_file(&gpu_file)
        .unwrap();
    assert!(
        std::fs::read(&cpu_file).unwrap() == std::fs::read(&gpu_file).unwrap(),
        "SHA-256 parameter files differ"
    );
    gpu_equals_cpu(
        &SyntheticPoRep::new((1 << 14) - 2, 1).pce(),
        &toxic,
        "synthetic 2^14",
    );
}

/// A size that fills several pinned chunks (2^21 scalars, 2^21 G1 and 2^20 G2 points) with a
/// tail: every point at every chunk boundary, and spread samples, against the host.
#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_generate_across_staging_chunks() {
    let pce = SyntheticPoRep::new((1 << 22) - 2, 1).pce();
    let toxic = ToxicWaste::random(&mut ChaCha8Rng::seed_from_u64(12));
    let config = GpuParamgenConfig {
        keep_on_device: true,
        ..GpuParamgenConfig::default()
    };
    let gen = generate_parameters_gpu_config(device(), &pce, &toxic, &config).unwrap();
    let s = GeneratorScalars::compute(&pce, &toxic).unwrap();
    let p = &gen.params;
    let picks = |n: usize| -> Vec<usize> {
        let mut v: Vec<usize> = (0..512).map(|k| k * n / 512).collect();
        for edge in (1usize << 20..n).step_by(1 << 20) {
            v.extend([edge - 1, edge]);
        }
        v.push(n - 1);
        v
    };
    let g1 = G1Projective::generator();
    let g2 = G2Projective::generator();
    for (name, points, scalars) in [
        ("h", &p.h, &s.h),
        ("l", &p.l, &s.l),
        ("a", &p.a, &s.a),
        ("b_g1", &p.b_g1, &s.b),
    ] {
        assert_eq!(points.len(), scalars.len(), "{name}");
        for i in picks(points.len()) {
            assert_eq!(points[i], (g1 * scalars[i]).to_affine(), "{name}[{i}]");
        }
    }
    assert_eq!(p.b_g2.len(), s.b.len());
    for i in picks(p.b_g2.len()) {
        assert_eq!(p.b_g2[i], (g2 * s.b[i]).to_affine(), "b_g2[{i}]");
    }
    assert_eq!(p.vk, s.verifying_key(p.vk.ic.clone()), "verifying key");
    check_on_device(p, gen.on_device.as_ref().unwrap());
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_generate_refuses_what_the_cpu_refuses() {
    let pce = Pce::record(SyntheticPoRep::new(6, 1)).unwrap();
    let mut toxic = ToxicWaste::random(&mut ChaCha8Rng::seed_from_u64(13));
    toxic.delta = Scalar::ZERO;
    assert!(matches!(
        generate_parameters_gpu(device(), &pce, &toxic),
        Err(Error::Groth16(cuzk_groth16::Error::DegenerateToxicWaste(_)))
    ));
    let bad = GpuParamgenConfig {
        points_per_thread: Some(17),
        ..GpuParamgenConfig::default()
    };
    toxic.delta = Scalar::ONE;
    let r = generate_parameters_gpu_config(device(), &pce, &toxic, &bad);
    assert!(
        matches!(&r, Err(Error::Msm(e)) if matches!(**e, cuzk_msm::MsmError::BadPointsPerThread { per: 17, .. })),
        "got {r:?}"
    );
}
