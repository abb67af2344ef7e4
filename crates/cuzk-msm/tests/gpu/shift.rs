//! Shifted copies of the bases (`MsmEngine::shift_bases`): the device's copies against the
//! CPU's, and MSMs over them against the CPU reference at every size class, with the edge
//! cases, both scatters, pair levels, a forced chunking, and the fallback where none fit.

use super::*;
use cuzk_msm::testing::shifted_table;

/// `bases` uploaded and shifted into `copies` copies for `bits`-bit windows.
fn shifted<C: MsmCurve>(bases: &[C::Affine], bits: u32, copies: u32) -> Bases<C> {
    let g = gpu();
    g.engine
        .shift_bases::<C>(&g.stream, upload::<C>(bases), bits, copies)
        .unwrap()
}

/// The device's copies equal the CPU's, identity bases included.
fn copies_match<C: MsmCurve>(n: usize, bits: u32, copies: u32, seed: u64) {
    let g = gpu();
    let mut host = random_bases::<C>(n, seed);
    for i in (0..n).step_by(7) {
        host[i] = C::Affine::identity();
    }
    let bases = shifted::<C>(&host, bits, copies);
    assert_eq!(bases.copies(), (copies, bits));
    assert_eq!(bases.len(), n);
    let got: Vec<C::AffineRepr> = g.stream.download(bases.points()).unwrap();
    let want: Vec<C::AffineRepr> = shifted_table::<C>(&host, bits, copies)
        .iter()
        .map(C::to_repr)
        .collect();
    assert_eq!(got.len(), want.len());
    for (i, (a, b)) in got.iter().zip(&want).enumerate() {
        assert!(
            a == b,
            "{} copy {} of point {}: device and CPU differ",
            C::NAME,
            i / n,
            i % n
        );
    }
}

/// Random, sparse and edge scalars over shifted bases, every way of calling, with `cfg`.
fn shifted_cases<C: MsmCurve>(n: usize, bits: u32, copies: u32, cfg: &MsmConfig, seed: u64) {
    let mut host = random_bases::<C>(n, seed);
    let bases = shifted::<C>(&host, bits, copies);
    let label = |what: &str| format!("{what}, {bits} bits, {copies} copies");
    for (what, scalars) in [
        ("random", random_scalars(n, seed + 1)),
        ("sparse", sparse_scalars(n, 0.3, 0.3, seed + 2)),
        ("r - 1", vec![-Scalar::ONE; n]),
    ] {
        let want = cpu::msm::<C>(&host, &scalars).unwrap();
        check_with::<C>(&label(what), &bases, &scalars, &want, cfg);
    }
    check_with::<C>(
        &label("zeros"),
        &bases,
        &vec![Scalar::ZERO; n],
        &C::Projective::identity(),
        cfg,
    );
    for i in (0..n).step_by(3) {
        host[i] = C::Affine::identity();
    }
    let with_identity = shifted::<C>(&host, bits, copies);
    let scalars = random_scalars(n, seed + 3);
    let want = cpu::msm::<C>(&host, &scalars).unwrap();
    check_with::<C>(
        &label("identity bases"),
        &with_identity,
        &scalars,
        &want,
        cfg,
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_shifted_copies_match_the_cpu() {
    copies_match::<G1>(1000, 24, 11, 300);
    copies_match::<G1>(33, 7, 37, 301);
    copies_match::<G2>(300, 13, 4, 302);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_msm_over_shifted_bases_matches_cpu_g1_and_g2() {
    let plain = MsmConfig::default();
    for (n, bits, copies) in [
        (1, 24, 11),
        (2, 8, 32),
        (4096 + 7, 24, 11),
        (4096 + 7, 24, 6),
        (3000, 13, 5),
        (3000, 20, 2),
    ] {
        shifted_cases::<G1>(n, bits, copies, &plain, 310 + n as u64);
    }
    shifted_cases::<G2>(1500, 16, 4, &plain, 311);
    // Both scatters and pair levels over sets of windows.
    for (binned, levels) in [(Some(true), 0), (Some(false), 0), (Some(true), 2)] {
        let cfg = MsmConfig {
            binned_scatter: binned,
            affine_levels: Some(levels),
            ..plain
        };
        shifted_cases::<G1>(5000, 22, 12, &cfg, 320 + levels as u64);
        shifted_cases::<G1>(5000, 12, 7, &cfg, 322 + levels as u64);
        shifted_cases::<G2>(1000, 11, 3, &cfg, 324 + levels as u64);
    }
    // The copies' width wins over a configured one.
    let host = random_bases::<G1>(500, 330);
    let bases = shifted::<G1>(&host, 16, 8);
    let scalars = random_scalars(500, 331);
    let cfg = MsmConfig {
        window_bits: Some(9),
        ..plain
    };
    let (got, info) = msm_info::<G1>(&bases, &scalars, &cfg);
    assert_eq!(
        (info.plan.bits, info.plan.copies, info.plan.windows),
        (16, 8, 2)
    );
    assert_eq!(got, cpu::msm::<G1>(&host, &scalars).unwrap());
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_shifted_bases_chunked_at_size_and_refused() {
    let g = gpu();
    // A tight allowance cuts the MSM into chunks and passes over its sets.
    let n = 20_000;
    let host = random_bases::<G1>(n, 340);
    let bases = shifted::<G1>(&host, 12, 4);
    let scalars = sparse_scalars(n, 0.2, 0.2, 341);
    let want = cpu::msm::<G1>(&host, &scalars).unwrap();
    let input = PlanInput {
        n,
        tail: n,
        bits: Some(12),
        split: true,
        staged: true,
        xyzz_bytes: std::mem::size_of::<<G1 as MsmCurve>::XyzzRepr>(),
        sm_count: g.device.info().sm_count,
        allowance: 0,
        affine_levels: Some(0),
        pair_group: 0,
        binned_scatter: Some(false),
        copies: 4,
        upload_overlap: Some(false),
    };
    for (chunk, sets) in [(n / 5, 6), (n / 3, 2), (n, 1)] {
        let allowance = Plan::with_chunk(&input, 12, sets, chunk).bytes(input.xyzz_bytes);
        let cfg = MsmConfig {
            vram_allowance: Some(allowance),
            split: Split::Always,
            ..MsmConfig::default()
        };
        let (got, info) = msm_info::<G1>(&bases, &scalars, &cfg);
        assert!(
            info.plan.chunks(n) > 1 || info.plan.passes() > 1,
            "allowance {allowance} should chunk: {:?}",
            info.plan
        );
        assert_eq!(info.plan.copies, 4);
        assert_eq!(got, want, "allowance {allowance}: {:?}", info.plan);
    }
    // Generated bases at size, checked in linear time, with the copies that fit.
    for (log, bits) in [(22u32, 20u32), (20, 16)] {
        let n = (1usize << log) + 5;
        let seed = 350 + log as u64;
        let bases = g.engine.generate_bases::<G1>(&g.stream, n, seed).unwrap();
        let copies = g
            .engine
            .copies_that_fit::<G1>(&bases, bits, g.engine.config())
            .unwrap();
        assert!(
            copies > 1,
            "2^{log} points should take copies on this device"
        );
        let bases = timed(&format!("shift 2^{log} points, {copies} copies"), || {
            let b = g
                .engine
                .shift_bases::<G1>(&g.stream, bases, bits, copies)
                .unwrap();
            g.stream.synchronize().unwrap();
            b
        });
        for scalars in [
            random_scalars(n, seed + 1),
            sparse_scalars(n, 0.49, 0.5, seed + 2),
        ] {
            let want = generated_msm::<G1>(&scalars, seed, GEN_POINTS_PER_THREAD);
            let reprs = to_reprs(&scalars);
            let got = run::<G1>(&bases, &reprs, Via::Pinned, &MsmConfig::default()).unwrap();
            assert_eq!(got, want, "2^{log} + 5 points, {copies} copies");
        }
    }
    let n = (1 << 20) + 3;
    let bases = g.engine.generate_bases::<G2>(&g.stream, n, 360).unwrap();
    let bases = g.engine.shift_bases::<G2>(&g.stream, bases, 14, 3).unwrap();
    let scalars = random_scalars(n, 361);
    let got = run::<G2>(
        &bases,
        &to_reprs(&scalars),
        Via::Pinned,
        &MsmConfig::default(),
    );
    assert_eq!(
        got.unwrap(),
        generated_msm::<G2>(&scalars, 360, GEN_POINTS_PER_THREAD)
    );
    // The fallback: an allowance with no room for a second copy gives one.
    let small = g
        .engine
        .generate_bases::<G1>(&g.stream, 1 << 16, 362)
        .unwrap();
    let tight = MsmConfig {
        vram_allowance: Some(64 << 20),
        ..MsmConfig::default()
    };
    assert_eq!(
        g.engine.copies_that_fit::<G1>(&small, 24, &tight).unwrap(),
        1
    );
    // Refusals name what was wrong and leave the bases' owner with an error, not a crash.
    let host = random_bases::<G1>(10, 363);
    for (bits, copies) in [(24, 12), (24, 0), (25, 2), (1, 2)] {
        let err = g
            .engine
            .shift_bases::<G1>(&g.stream, upload::<G1>(&host), bits, copies)
            .unwrap_err();
        assert!(
            matches!(err, MsmError::BadCopies { .. } | MsmError::BadWindow { .. }),
            "{bits} bits, {copies} copies: {err}"
        );
    }
    // Refilling the points in place stops the copies being used.
    let mut bases = shifted::<G1>(&host, 8, 4);
    let fresh: Vec<_> = random_bases::<G1>(10, 364)
        .iter()
        .map(G1::to_repr)
        .collect();
    g.stream
        .copy_to_device(&fresh, &mut bases.points_mut().slice_mut(..10))
        .unwrap();
    assert_eq!(bases.copies(), (1, 0));
    let scalars = random_scalars(10, 365);
    let want = cpu::msm::<G1>(&random_bases::<G1>(10, 364), &scalars).unwrap();
    assert_eq!(
        msm_info::<G1>(&bases, &scalars, &MsmConfig::default()).0,
        want
    );
}
