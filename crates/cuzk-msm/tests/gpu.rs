//! GPU tests of the MSM engine against the CPU reference (ignored by default; run with
//! `--ignored gpu_` on a machine with a CUDA GPU and the kernel image).
//!
//! Inputs are fresh seeded random scalars and bases; every assertion names the group, size,
//! case and configuration. CPU references are computed once per input set.
#![cfg(feature = "cuda")]

use cuzk_cuda::{Device, Stream};
use cuzk_field::{FrRepr, PrimeCurveAffine, Scalar};
use cuzk_msm::gpu::{
    Bases, HostBases, MsmConfig, MsmEngine, MsmShape, Scalars, Split, GEN_POINTS_PER_THREAD,
};
use cuzk_msm::plan::{Plan, PlanInput};
use cuzk_msm::testing::{
    generated_msm, generated_multiplier, random_bases, random_scalars, sparse_scalars, to_reprs,
};
use cuzk_msm::{cpu, MsmCurve, MsmError, G1, G2};
use ff::Field;
use group::{Curve, Group};
use proptest::prelude::*;
use std::sync::OnceLock;
use std::time::Instant;

#[path = "gpu/shift.rs"]
mod shift;

struct Gpu {
    device: Device,
    stream: Stream,
    engine: MsmEngine,
}

fn gpu() -> &'static Gpu {
    static GPU: OnceLock<Gpu> = OnceLock::new();
    GPU.get_or_init(|| {
        let device = Device::open(0).expect("a CUDA device");
        let stream = device.new_stream().unwrap();
        let engine = MsmEngine::new(&device).expect("the MSM kernels");
        Gpu {
            device,
            stream,
            engine,
        }
    })
}

/// One MSM of host `scalars` against the first of `bases` with `cfg`, with its call's info.
fn msm_info<C: MsmCurve>(
    bases: &Bases<C>,
    scalars: &[Scalar],
    cfg: &MsmConfig,
) -> (C::Projective, cuzk_msm::gpu::CallInfo) {
    let g = gpu();
    g.engine
        .msm_with(&g.stream, bases, Scalars::Host(&to_reprs(scalars)), cfg)
        .unwrap()
}

/// How a call receives its scalars.
#[derive(Clone, Copy, Debug)]
enum Via {
    Pinned,
    Host,
    Device,
}

fn config(split: Split) -> MsmConfig {
    MsmConfig {
        split,
        ..MsmConfig::default()
    }
}

fn run<C: MsmCurve>(
    bases: &Bases<C>,
    scalars: &[FrRepr],
    via: Via,
    cfg: &MsmConfig,
) -> Result<C::Projective, MsmError> {
    let g = gpu();
    match via {
        Via::Pinned => {
            let mut pinned = g.device.alloc_pinned::<FrRepr>(scalars.len())?;
            pinned.as_mut_slice()?.copy_from_slice(scalars);
            g.engine
                .msm_with(&g.stream, bases, Scalars::Pinned(&pinned), cfg)
                .map(|r| r.0)
        }
        Via::Host => g
            .engine
            .msm_with(&g.stream, bases, Scalars::Host(scalars), cfg)
            .map(|r| r.0),
        Via::Device => {
            let d = g.stream.upload(scalars)?;
            g.engine
                .msm_with(&g.stream, bases, Scalars::Device(&d), cfg)
                .map(|r| r.0)
        }
    }
}

fn upload<C: MsmCurve>(points: &[C::Affine]) -> Bases<C> {
    let reprs: Vec<C::AffineRepr> = points.iter().map(C::to_repr).collect();
    gpu().engine.upload_bases(&gpu().stream, &reprs).unwrap()
}

/// Checks every way of running an MSM against `want`.
fn check<C: MsmCurve>(what: &str, bases: &Bases<C>, scalars: &[Scalar], want: &C::Projective) {
    check_with(what, bases, scalars, want, &MsmConfig::default());
}

/// As [`check`], each way with `base`'s settings but its own split.
fn check_with<C: MsmCurve>(
    what: &str,
    bases: &Bases<C>,
    scalars: &[Scalar],
    want: &C::Projective,
    base: &MsmConfig,
) {
    let reprs = to_reprs(scalars);
    let cases = [
        (Via::Pinned, Split::Auto),
        (Via::Pinned, Split::Dense),
        (Via::Pinned, Split::Always),
        (Via::Device, Split::Dense),
        (Via::Device, Split::Always),
    ];
    for (via, split) in cases {
        let cfg = MsmConfig { split, ..*base };
        let got = run::<C>(bases, &reprs, via, &cfg)
            .unwrap_or_else(|e| panic!("{} {what}: {via:?} {split:?}: {e}", C::NAME));
        assert_eq!(
            got.to_affine(),
            want.to_affine(),
            "{} {what} (n = {}): {via:?} {split:?}",
            C::NAME,
            scalars.len()
        );
    }
}

fn timed<T>(what: &str, f: impl FnOnce() -> T) -> T {
    let t = Instant::now();
    let out = f();
    eprintln!("    {what}: {:.2} s", t.elapsed().as_secs_f64());
    out
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_generated_points_are_the_expected_multiples() {
    fn one<C: MsmCurve>(n: usize, seed: u64) {
        let g = gpu();
        let bases = g.engine.generate_bases::<C>(&g.stream, n, seed).unwrap();
        let host = bases.download(&g.stream).unwrap();
        assert_eq!(host.len(), n);
        let per = GEN_POINTS_PER_THREAD;
        for i in (0..n).step_by(37).chain([n - 1]) {
            let p = C::from_repr(&host[i]).unwrap_or_else(|e| panic!("{} point {i}: {e}", C::NAME));
            let want = C::Projective::generator() * generated_multiplier(seed, i as u64, per);
            assert_eq!(p.to_curve(), want, "{} generated point {i}", C::NAME);
        }
    }
    one::<G1>(1000, 11);
    one::<G2>(333, 12);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_g1_small_and_odd_sizes() {
    let max = 20_000;
    let bases_host = random_bases::<G1>(max, 1);
    let bases = upload::<G1>(&bases_host);
    for (i, n) in [1usize, 2, 3, 5, 17, 100, 1000, 3001, 12_345, 19_999]
        .into_iter()
        .enumerate()
    {
        let scalars = random_scalars(n, 100 + i as u64);
        let want = cpu::msm::<G1>(&bases_host[..n], &scalars).unwrap();
        check::<G1>("random", &bases, &scalars, &want);
    }
    // Scalars through pageable host memory too.
    let scalars = random_scalars(777, 5);
    let want = cpu::msm::<G1>(&bases_host[..777], &scalars).unwrap();
    let got = run::<G1>(
        &bases,
        &to_reprs(&scalars),
        Via::Host,
        &MsmConfig::default(),
    )
    .unwrap();
    assert_eq!(got, want, "pageable host scalars");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_g1_powers_of_two_up_to_2_20() {
    let max = 1 << 20;
    let bases_host = timed("2^20 G1 bases", || random_bases::<G1>(max, 2));
    let bases = upload::<G1>(&bases_host);
    for log in 10..=20 {
        let n = 1usize << log;
        let scalars = random_scalars(n, 200 + log);
        let want = timed(&format!("reference 2^{log}"), || {
            cpu::msm::<G1>(&bases_host[..n], &scalars).unwrap()
        });
        let reprs = to_reprs(&scalars);
        let via = [Via::Pinned, Via::Device, Via::Host][log as usize % 3];
        for split in [Split::Dense, Split::Always] {
            let got = run::<G1>(&bases, &reprs, via, &config(split)).unwrap();
            assert_eq!(got, want, "G1 2^{log} {via:?} {split:?}");
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_g2_sizes_up_to_2_20() {
    let max = 1 << 20;
    let bases_host = timed("2^20 G2 bases", || random_bases::<G2>(max, 3));
    let bases = upload::<G2>(&bases_host);
    for (i, n) in [1usize, 3, 1000, 4099, 1 << 16, 1 << 20]
        .into_iter()
        .enumerate()
    {
        let scalars = random_scalars(n, 300 + i as u64);
        let want = timed(&format!("G2 reference {n}"), || {
            cpu::msm::<G2>(&bases_host[..n], &scalars).unwrap()
        });
        if n <= 1 << 16 {
            check::<G2>("random", &bases, &scalars, &want);
        } else {
            let got = run::<G2>(
                &bases,
                &to_reprs(&scalars),
                Via::Pinned,
                &MsmConfig::default(),
            );
            assert_eq!(got.unwrap(), want, "G2 n = {n}");
        }
    }
}

fn edge_cases<C: MsmCurve>(n: usize, seed: u64) {
    edge_cases_with::<C>(n, seed, &MsmConfig::default());
}

fn edge_cases_with<C: MsmCurve>(n: usize, seed: u64, cfg: &MsmConfig) {
    let check = |what: &str, bases: &Bases<C>, scalars: &[Scalar], want: &C::Projective| {
        check_with::<C>(what, bases, scalars, want, cfg)
    };
    let mut bases_host = random_bases::<C>(n, seed);
    let scalars = random_scalars(n, seed + 1);
    let bases = upload::<C>(&bases_host);
    let reference = |b: &[C::Affine], s: &[Scalar]| cpu::msm::<C>(b, s).unwrap();

    check(
        "all-zero scalars",
        &bases,
        &vec![Scalar::ZERO; n],
        &C::Projective::identity(),
    );
    let all_one = vec![Scalar::ONE; n];
    check(
        "all-one scalars",
        &bases,
        &all_one,
        &reference(&bases_host, &all_one),
    );
    let minus_one = vec![-Scalar::ONE; n];
    check(
        "scalar r - 1",
        &bases,
        &minus_one,
        &reference(&bases_host, &minus_one),
    );

    // Identity bases among random ones.
    for i in (0..n).step_by(3) {
        bases_host[i] = C::Affine::identity();
    }
    let with_identity = upload::<C>(&bases_host);
    check(
        "identity bases",
        &with_identity,
        &scalars,
        &reference(&bases_host, &scalars),
    );
    let only_identity = upload::<C>(&vec![C::Affine::identity(); n]);
    check(
        "only identity bases",
        &only_identity,
        &scalars,
        &C::Projective::identity(),
    );

    // Repeated bases: doublings inside buckets, and P + (−P) with r − 1 mixed in.
    let repeated_host: Vec<C::Affine> = (0..n).map(|i| bases_host[1 + i % 5]).collect();
    let repeated = upload::<C>(&repeated_host);
    let mut mixed = scalars.clone();
    for i in (0..n).step_by(2) {
        mixed[i] = -Scalar::ONE;
    }
    check(
        "repeated bases",
        &repeated,
        &mixed,
        &reference(&repeated_host, &mixed),
    );
    let same = vec![Scalar::from(12345u64); n];
    check(
        "repeated bases, one scalar",
        &repeated,
        &same,
        &reference(&repeated_host, &same),
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_edge_cases_g1_and_g2() {
    edge_cases::<G1>(4096 + 7, 40);
    edge_cases::<G2>(1500, 41);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_affine_pair_levels_match_cpu_g1_and_g2() {
    use cuzk_msm::plan::MAX_AFFINE_LEVELS;
    for levels in [1, 2, 3, MAX_AFFINE_LEVELS] {
        let cfg = MsmConfig {
            affine_levels: Some(levels),
            ..MsmConfig::default()
        };
        edge_cases_with::<G1>(4096 + 7, 140 + levels as u64, &cfg);
        for n in [1usize, 2, 3, 100, 3000, (1 << 16) + 3] {
            let bases_host = random_bases::<G1>(n, 150 + n as u64);
            let bases = upload::<G1>(&bases_host);
            let scalars = random_scalars(n, 151 + n as u64);
            let want = cpu::msm::<G1>(&bases_host, &scalars).unwrap();
            check_with::<G1>(&format!("levels {levels}"), &bases, &scalars, &want, &cfg);
            let sparse = sparse_scalars(n, 0.3, 0.3, 152);
            let want = cpu::msm::<G1>(&bases_host, &sparse).unwrap();
            check_with::<G1>(
                &format!("levels {levels} sparse"),
                &bases,
                &sparse,
                &want,
                &cfg,
            );
        }
        // Each base beside its negation with one scalar: every first-level pair cancels.
        let n = 5000;
        let mut opposite = random_bases::<G1>(n, 160);
        for i in (1..n).step_by(2) {
            opposite[i] = (-opposite[i - 1].to_curve()).to_affine();
        }
        let same = vec![Scalar::from(77u64); n];
        check_with::<G1>(
            &format!("levels {levels}, P beside -P"),
            &upload::<G1>(&opposite),
            &same,
            &cpu::msm::<G1>(&opposite, &same).unwrap(),
            &cfg,
        );
        // The plan runs the levels (roomy allowance), in G2 as well.
        let bases = upload::<G1>(&random_bases::<G1>(1000, 161));
        let (_, info) = msm_info::<G1>(&bases, &random_scalars(1000, 162), &cfg);
        assert_eq!(info.plan.affine_levels, levels);
        let g2_host = random_bases::<G2>(700, 163);
        let g2_scalars = random_scalars(700, 164);
        let (got, info) = msm_info::<G2>(&upload::<G2>(&g2_host), &g2_scalars, &cfg);
        assert_eq!(info.plan.affine_levels, levels);
        assert_eq!(got, cpu::msm::<G2>(&g2_host, &g2_scalars).unwrap());
        edge_cases_with::<G2>(1500, 145 + levels as u64, &cfg);
    }
    // Window groups: one window per launch, and three (a pass of 19 windows of 14 bits ends
    // with a shorter group), against the whole pass the runs above took.
    for group in [1, 3] {
        let cfg = MsmConfig {
            affine_levels: Some(2),
            pair_group: group,
            ..MsmConfig::default()
        };
        edge_cases_with::<G1>(4096 + 7, 190 + group as u64, &cfg);
        edge_cases_with::<G2>(1500, 192 + group as u64, &cfg);
        let n = (1 << 16) + 3;
        let bases_host = random_bases::<G1>(n, 194);
        let bases = upload::<G1>(&bases_host);
        for (what, scalars) in [
            ("random", random_scalars(n, 195 + group as u64)),
            ("sparse", sparse_scalars(n, 0.3, 0.3, 197)),
        ] {
            let want = cpu::msm::<G1>(&bases_host, &scalars).unwrap();
            check_with::<G1>(
                &format!("group {group}, {what}"),
                &bases,
                &scalars,
                &want,
                &cfg,
            );
        }
        let with_bits = MsmConfig {
            window_bits: Some(14),
            ..cfg
        };
        let scalars = random_scalars(n, 198);
        let (got, info) = msm_info::<G1>(&bases, &scalars, &with_bits);
        let p = info.plan;
        assert_eq!((p.pair_group, p.windows, p.pass_windows), (group, 19, 19));
        assert_eq!(got, cpu::msm::<G1>(&bases_host, &scalars).unwrap());
    }
    // Large sizes: many threads, each with a long batch; checked in linear time.
    pair_levels_at_size::<G1>((1 << 22) + 5, 2);
    pair_levels_at_size::<G1>(1 << 24, 3);
    pair_levels_at_size::<G2>((1 << 22) + 3, 2);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_binned_scatter_matches_cpu_g1_and_g2() {
    for levels in [0, 2] {
        let cfg = MsmConfig {
            binned_scatter: Some(true),
            affine_levels: Some(levels),
            ..MsmConfig::default()
        };
        edge_cases_with::<G1>(4096 + 7, 180 + levels as u64, &cfg);
        edge_cases_with::<G2>(1500, 181 + levels as u64, &cfg);
        for n in [1usize, 2, 3, 100, 3000, (1 << 16) + 3] {
            let bases_host = random_bases::<G1>(n, 182 + n as u64);
            let bases = upload::<G1>(&bases_host);
            for (what, scalars) in [
                ("random", random_scalars(n, 183)),
                ("sparse", sparse_scalars(n, 0.3, 0.3, 184)),
            ] {
                let want = cpu::msm::<G1>(&bases_host, &scalars).unwrap();
                let label = format!("binned, levels {levels}, {what}");
                check_with::<G1>(&label, &bases, &scalars, &want, &cfg);
            }
        }
        // Every window width: one bin a window to many, groups of one window to seven.
        let n = 3000;
        let bases_host = random_bases::<G1>(n, 185);
        let bases = upload::<G1>(&bases_host);
        let scalars = random_scalars(n, 186);
        let want = cpu::msm::<G1>(&bases_host, &scalars).unwrap();
        for bits in [2, 3, 5, 9, 13, 16, 20] {
            let with_bits = MsmConfig {
                window_bits: Some(bits),
                ..cfg
            };
            let (got, info) = msm_info::<G1>(&bases, &scalars, &with_bits);
            assert!(info.plan.bin_windows > 0, "bits {bits}: {:?}", info.plan);
            assert_eq!(got, want, "binned, levels {levels}, window bits {bits}");
        }
        msm_at_size::<G1>((1 << 22) + 5, &cfg, 190 + levels as u64);
        msm_at_size::<G2>((1 << 20) + 3, &cfg, 192 + levels as u64);
    }
    // A tight allowance: no room for the usual groups' second pair buffer beside the plan,
    // room for one of three windows' pairs. The plan keeps its chunk and bins in narrower
    // groups.
    let g = gpu();
    let n = (1 << 22) + 5;
    let dense = MsmConfig {
        binned_scatter: Some(true),
        split: Split::Dense,
        ..MsmConfig::default()
    };
    let roomy = g
        .engine
        .wanted_bytes::<G1>(&[MsmShape::new(n, true)], &dense)
        .unwrap();
    let bases = g.engine.generate_bases::<G1>(&g.stream, n, 196).unwrap();
    for (what, scalars) in [
        ("random", random_scalars(n, 197)),
        ("sparse", sparse_scalars(n, 0.49, 0.5, 198)),
    ] {
        let want = generated_msm::<G1>(&scalars, 196, GEN_POINTS_PER_THREAD);
        let (_, roomy_info) = msm_info::<G1>(&bases, &scalars, &dense);
        let usual = roomy_info.plan.bin_windows;
        assert!(usual > 3, "{:?}", roomy_info.plan);
        let tight = MsmConfig {
            vram_allowance: Some(roomy - (usual as usize - 3) * n * 8),
            ..dense
        };
        let (got, info) = msm_info::<G1>(&bases, &scalars, &tight);
        assert_eq!(
            (info.plan.chunk, info.plan.bin_windows),
            (roomy_info.plan.chunk, 3),
            "{what}: {:?}",
            info.plan
        );
        assert_eq!(got, want, "binned in narrower groups, {what}");
    }
    // The one-pass scatter where the plan would bin.
    let one_pass = MsmConfig {
        binned_scatter: Some(false),
        ..MsmConfig::default()
    };
    msm_at_size::<G1>((1 << 22) + 5, &one_pass, 194);
}

fn pair_levels_at_size<C: MsmCurve>(n: usize, levels: u32) {
    let cfg = MsmConfig {
        affine_levels: Some(levels),
        ..MsmConfig::default()
    };
    msm_at_size::<C>(n, &cfg, 170 + levels as u64);
}

/// Generated bases of `n` points, random and sparse scalars with `cfg`, checked in linear time.
fn msm_at_size<C: MsmCurve>(n: usize, cfg: &MsmConfig, seed: u64) {
    let g = gpu();
    let bases = timed(&format!("{} generate {n} bases", C::NAME), || {
        let b = g.engine.generate_bases::<C>(&g.stream, n, seed).unwrap();
        g.stream.synchronize().unwrap();
        b
    });
    for (i, scalars) in [
        random_scalars(n, seed + 1),
        sparse_scalars(n, 0.49, 0.5, seed + 2),
    ]
    .into_iter()
    .enumerate()
    {
        let want = generated_msm::<C>(&scalars, seed, GEN_POINTS_PER_THREAD);
        let reprs = to_reprs(&scalars);
        let got = timed(&format!("{} MSM of {n}", C::NAME), || {
            run::<C>(&bases, &reprs, Via::Pinned, cfg).unwrap()
        });
        assert_eq!(got, want, "{} {cfg:?}, n = {n}, set {i}", C::NAME);
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_sparse_bitmaps() {
    let max = 1 << 18;
    let bases_host = random_bases::<G1>(max, 6);
    let bases = upload::<G1>(&bases_host);
    for (i, (n, p0, p1)) in [(1000, 0.5, 0.45), (1 << 16, 0.3, 0.3), (max, 0.495, 0.495)]
        .into_iter()
        .enumerate()
    {
        let scalars = sparse_scalars(n, p0, p1, 60 + i as u64);
        let want = cpu::msm::<G1>(&bases_host[..n], &scalars).unwrap();
        check::<G1>(&format!("sparse {p0}/{p1}"), &bases, &scalars, &want);
    }
    let g2_host = random_bases::<G2>(3000, 7);
    let scalars = sparse_scalars(3000, 0.4, 0.5, 8);
    let want = cpu::msm::<G2>(&g2_host, &scalars).unwrap();
    check::<G2>("sparse", &upload::<G2>(&g2_host), &scalars, &want);
}

fn tiny_allowance<C: MsmCurve>(n: usize, seed: u64) {
    let g = gpu();
    let bases_host = random_bases::<C>(n, seed);
    let bases = upload::<C>(&bases_host);
    let scalars = sparse_scalars(n, 0.2, 0.2, seed + 1);
    let want = cpu::msm::<C>(&bases_host, &scalars).unwrap();
    let reprs = to_reprs(&scalars);
    let mut pinned = g.device.alloc_pinned::<FrRepr>(n).unwrap();
    pinned.as_mut_slice().unwrap().copy_from_slice(&reprs);
    // An allowance far below one that would do.
    let tight = MsmConfig {
        vram_allowance: Some(1000),
        window_bits: Some(10),
        split: Split::Always,
        ..MsmConfig::default()
    };
    match g
        .engine
        .msm_with(&g.stream, &bases, Scalars::Pinned(&pinned), &tight)
    {
        Err(MsmError::AllowanceTooSmall {
            allowance: 1000,
            needed,
        }) => assert!(needed > 1000),
        other => panic!("expected AllowanceTooSmall, got {:?}", other.map(|r| r.1)),
    }
    // Allowances that hold a few windows and a fraction of the points at a time.
    let input = PlanInput {
        n,
        tail: n,
        bits: Some(10),
        split: true,
        staged: true,
        xyzz_bytes: std::mem::size_of::<C::XyzzRepr>(),
        sm_count: g.device.info().sm_count,
        allowance: 0,
        affine_levels: Some(0),
        pair_group: 0,
        binned_scatter: Some(false),
        copies: 1,
        upload_overlap: Some(false),
    };
    for (chunk, windows) in [(n / 5, 26), (n / 3, 9), (n, 4), (1000, 2)] {
        let allowance = Plan::with_chunk(&input, 10, windows, chunk).bytes(input.xyzz_bytes);
        for split in [Split::Always, Split::Dense] {
            let cfg = MsmConfig {
                vram_allowance: Some(allowance),
                split,
                ..tight
            };
            let (got, info) = g
                .engine
                .msm_with(&g.stream, &bases, Scalars::Pinned(&pinned), &cfg)
                .unwrap();
            assert!(
                info.plan.chunks(n) > 1 || info.plan.passes() > 1,
                "allowance {allowance} should chunk: {:?}",
                info.plan
            );
            assert_eq!(
                got,
                want,
                "{} allowance {allowance} {split:?}: {:?}",
                C::NAME,
                info.plan
            );
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_tiny_vram_allowance_chunks_with_the_same_result() {
    tiny_allowance::<G1>(20_000, 70);
    tiny_allowance::<G2>(5_000, 71);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_every_window_width_and_bad_inputs() {
    let n = 3000;
    let bases_host = random_bases::<G1>(n, 80);
    let bases = upload::<G1>(&bases_host);
    let scalars = random_scalars(n, 81);
    let want = cpu::msm::<G1>(&bases_host, &scalars).unwrap();
    let reprs = to_reprs(&scalars);
    for bits in [2, 3, 5, 7, 9, 13, 16, 20] {
        let cfg = MsmConfig {
            window_bits: Some(bits),
            ..MsmConfig::default()
        };
        let got = run::<G1>(&bases, &reprs, Via::Device, &cfg).unwrap();
        assert_eq!(got, want, "window bits {bits}");
    }
    // More scalars than bases.
    let err = run::<G1>(
        &bases,
        &to_reprs(&random_scalars(n + 1, 1)),
        Via::Host,
        &MsmConfig::default(),
    )
    .unwrap_err();
    assert!(
        matches!(
            err,
            MsmError::LengthMismatch {
                bases: 3000,
                scalars: 3001
            }
        ),
        "{err}"
    );
    // Fewer scalars pair with the first bases.
    let got = run::<G1>(&bases, &reprs[..10], Via::Host, &MsmConfig::default()).unwrap();
    assert_eq!(
        got,
        cpu::msm::<G1>(&bases_host[..10], &scalars[..10]).unwrap()
    );
    let empty = run::<G1>(&bases, &[], Via::Host, &MsmConfig::default()).unwrap();
    assert_eq!(empty, group::Group::identity());
}

fn spot<C: MsmCurve>(n: usize, seed: u64) {
    msm_at_size::<C>(n, &MsmConfig::default(), seed);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_spot_checks_at_2_24() {
    spot::<G1>((1 << 24) + 5, 90);
    spot::<G2>(1 << 24, 91);
}

/// Staged MSMs cut in two for the upload overlap, forced where the plan would not choose it:
/// the reference's results for two points, an odd count and a few thousand (every way of
/// passing scalars, dense and split, G1 and G2), and for chunks of three pieces, each staged
/// in a buffer of its own, the plan saying so.
#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_upload_overlap_cuts_staged_msms_in_two() {
    let on = MsmConfig {
        upload_overlap: Some(true),
        ..MsmConfig::default()
    };
    for (i, n) in [2usize, 3, 2001].into_iter().enumerate() {
        let seed = 400 + 10 * i as u64;
        let host = random_bases::<G1>(n, seed);
        let bases = upload::<G1>(&host);
        let scalars = random_scalars(n, seed + 1);
        let want = cpu::msm::<G1>(&host, &scalars).unwrap();
        check_with("upload overlap", &bases, &scalars, &want, &on);
        let sparse = sparse_scalars(n, 0.3, 0.3, seed + 2);
        let want = cpu::msm::<G1>(&host, &sparse).unwrap();
        check_with("upload overlap, sparse", &bases, &sparse, &want, &on);
    }
    let host = random_bases::<G2>(1001, 430);
    let scalars = random_scalars(1001, 431);
    let want = cpu::msm::<G2>(&host, &scalars).unwrap();
    check_with("upload overlap", &upload::<G2>(&host), &scalars, &want, &on);
    // Chunks of 2.5 pieces and a few points: three staging buffers of a piece.
    let g = gpu();
    let piece = cuzk_msm::plan::PIECE;
    let n = 5 * piece + 7;
    let seed = 440;
    let bases = g.engine.generate_bases::<G1>(&g.stream, n, seed).unwrap();
    for (what, scalars, split) in [
        ("random", random_scalars(n, seed + 1), Split::Dense),
        (
            "sparse",
            sparse_scalars(n, 0.45, 0.45, seed + 2),
            Split::Always,
        ),
    ] {
        let mut pinned = g.device.alloc_pinned::<FrRepr>(n).unwrap();
        pinned
            .as_mut_slice()
            .unwrap()
            .copy_from_slice(&to_reprs(&scalars));
        let cfg = MsmConfig { split, ..on };
        let (got, info) = g
            .engine
            .msm_with(&g.stream, &bases, Scalars::Pinned(&pinned), &cfg)
            .unwrap();
        assert_eq!(
            (info.plan.chunks(n), info.plan.sizes.staging),
            (2, 3 * piece),
            "G1 {what}: {:?}",
            info.plan
        );
        let want = generated_msm::<G1>(&scalars, seed, GEN_POINTS_PER_THREAD);
        assert_eq!(got, want, "G1 {what}, upload overlap, n = {n}");
    }
}

/// The default configuration runs pair levels on dense G2 MSMs from 2^21 points and none on
/// G1 or on split G2 calls; results equal the generated check either way.
#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_default_pair_levels_on_dense_g2_only() {
    let g = gpu();
    let n = (1 << 21) + 3;
    let seed = 96;
    let bases = g.engine.generate_bases::<G2>(&g.stream, n, seed).unwrap();
    for (what, scalars, levels) in [
        ("random", random_scalars(n, seed + 1), 4),
        ("sparse", sparse_scalars(n, 0.45, 0.45, seed + 2), 0),
    ] {
        let (got, info) = msm_info::<G2>(&bases, &scalars, &MsmConfig::default());
        assert_eq!(
            info.plan.affine_levels, levels,
            "G2 {what}: {:?}",
            info.plan
        );
        assert_eq!(info.split, levels == 0, "G2 {what}");
        let want = generated_msm::<G2>(&scalars, seed, GEN_POINTS_PER_THREAD);
        assert_eq!(got, want, "G2 {what}, default config, n = {n}");
    }
    let g1 = g.engine.generate_bases::<G1>(&g.stream, n, seed).unwrap();
    let scalars = random_scalars(n, seed + 3);
    let (got, info) = msm_info::<G1>(&g1, &scalars, &MsmConfig::default());
    assert_eq!(info.plan.affine_levels, 0, "G1: {:?}", info.plan);
    assert_eq!(
        got,
        generated_msm::<G1>(&scalars, seed, GEN_POINTS_PER_THREAD)
    );
}

/// What the scalars of one test set are.
#[derive(Clone, Copy, Debug)]
enum Kind {
    Random,
    Zero,
    MinusOne,
    /// 45% zeros, 45% ones: the 0/1 split's case.
    Sparse,
}

fn make_scalars(kind: Kind, n: usize, seed: u64) -> Vec<Scalar> {
    match kind {
        Kind::Random => random_scalars(n, seed),
        Kind::Zero => vec![Scalar::ZERO; n],
        Kind::MinusOne => vec![-Scalar::ONE; n],
        Kind::Sparse => sparse_scalars(n, 0.45, 0.45, seed),
    }
}

/// Scalars held where a [`Via`] reads them, alive while the [`Scalars`] borrow them.
enum Held {
    Pinned(cuzk_cuda::PinnedBuffer<FrRepr>),
    Host(Vec<FrRepr>),
    Device(cuzk_cuda::DeviceBuffer<FrRepr>),
}

impl Held {
    /// Device buffers cannot be empty: empty device sets are held on the host instead.
    fn new(reprs: &[FrRepr], via: Via) -> Held {
        let g = gpu();
        match via {
            Via::Device if !reprs.is_empty() => Held::Device(g.stream.upload(reprs).unwrap()),
            Via::Pinned => {
                let mut p = g.device.alloc_pinned::<FrRepr>(reprs.len()).unwrap();
                p.as_mut_slice().unwrap().copy_from_slice(reprs);
                Held::Pinned(p)
            }
            _ => Held::Host(reprs.to_vec()),
        }
    }

    fn scalars(&self) -> Scalars<'_> {
        match self {
            Held::Pinned(p) => Scalars::Pinned(p),
            Held::Host(h) => Scalars::Host(h),
            Held::Device(d) => Scalars::Device(d),
        }
    }
}

/// Runs `sets` (length, kind, via) as one batch against the first points of `bases_host` and
/// checks every result against the CPU reference and against a single `msm` call. Returns
/// the batch's call infos.
fn batch_case<C: MsmCurve>(
    what: &str,
    bases_host: &[C::Affine],
    bases: &Bases<C>,
    sets: &[(usize, Kind, Via)],
    seed: u64,
    cfg: &MsmConfig,
) -> Vec<cuzk_msm::gpu::CallInfo> {
    let g = gpu();
    let scalars: Vec<Vec<Scalar>> = sets
        .iter()
        .enumerate()
        .map(|(k, &(n, kind, _))| make_scalars(kind, n, seed + k as u64))
        .collect();
    let held: Vec<Held> = scalars
        .iter()
        .zip(sets)
        .map(|(s, &(_, _, via))| Held::new(&to_reprs(s), via))
        .collect();
    let views: Vec<Scalars<'_>> = held.iter().map(Held::scalars).collect();
    let (got, infos) = g
        .engine
        .msm_batch_with::<C>(&g.stream, bases, &views, cfg)
        .unwrap_or_else(|e| panic!("{} {what}: batch {sets:?}: {e}", C::NAME));
    assert_eq!(got.len(), sets.len());
    assert_eq!(infos.len(), sets.len());
    for (k, (s, set)) in scalars.iter().zip(sets).enumerate() {
        let want = cpu::msm::<C>(&bases_host[..s.len()], s).unwrap();
        assert_eq!(
            got[k].to_affine(),
            want.to_affine(),
            "{} {what}: set {k} of {sets:?} ({:?})",
            C::NAME,
            set
        );
        let single = g
            .engine
            .msm_with::<C>(&g.stream, bases, held[k].scalars(), cfg)
            .unwrap()
            .0;
        assert_eq!(got[k], single, "{} {what}: set {k}: batch vs msm", C::NAME);
    }
    infos
}

/// Whether host set `k` of a batch was copied whole ahead of its MSM (its plan has no staging).
fn prefetched(infos: &[cuzk_msm::gpu::CallInfo], k: usize) -> bool {
    infos[k].plan.sizes.staging == 0
}

fn batch_shapes<C: MsmCurve>(n: usize, seed: u64) {
    let bases_host = random_bases::<C>(n, seed);
    let bases = upload::<C>(&bases_host);
    let cfg = MsmConfig::default();
    let one = batch_case::<C>(
        "batch of 1",
        &bases_host,
        &bases,
        &[(n, Kind::Random, Via::Pinned)],
        seed + 1,
        &cfg,
    );
    assert!(prefetched(&one, 0), "{one:?}");
    batch_case::<C>(
        "batch of 2",
        &bases_host,
        &bases,
        &[
            (n / 2, Kind::Random, Via::Pinned),
            (n, Kind::Sparse, Via::Pinned),
        ],
        seed + 10,
        &cfg,
    );
    let five = [
        (0, Kind::Random, Via::Pinned),
        (1, Kind::Random, Via::Pinned),
        (n, Kind::Zero, Via::Host),
        (n - 3, Kind::MinusOne, Via::Pinned),
        (n / 3 + 1, Kind::Sparse, Via::Device),
    ];
    let infos = batch_case::<C>("batch of 5", &bases_host, &bases, &five, seed + 20, &cfg);
    assert!(prefetched(&infos, 1) && prefetched(&infos, 3), "{infos:?}");
    // Every split mode, and device sets first so that the first host set's upload overlaps
    // them.
    for split in [Split::Dense, Split::Always] {
        batch_case::<C>(
            &format!("batch of 5, {split:?}"),
            &bases_host,
            &bases,
            &[
                (n, Kind::Random, Via::Device),
                (n / 2, Kind::Sparse, Via::Device),
                (n, Kind::Sparse, Via::Pinned),
                (7, Kind::MinusOne, Via::Host),
                (n - 1, Kind::Random, Via::Pinned),
            ],
            seed + 30,
            &config(split),
        );
    }
    // An empty batch, and a batch of empty sets.
    let g = gpu();
    assert!(g
        .engine
        .msm_batch::<C>(&g.stream, &bases, &[])
        .unwrap()
        .is_empty());
    let empty: Vec<FrRepr> = Vec::new();
    let got = g
        .engine
        .msm_batch::<C>(
            &g.stream,
            &bases,
            &[Scalars::Host(&empty), Scalars::Host(&empty)],
        )
        .unwrap();
    assert_eq!(got, vec![C::Projective::identity(); 2]);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_batch_of_1_2_and_5_sets_g1_and_g2() {
    batch_shapes::<G1>(3000, 100);
    batch_shapes::<G2>(700, 101);
}

/// Allowances too small for two whole scalar sets next to the work buffers: host sets are
/// staged in pieces, in plans of several chunks or passes, and a set too long for the bases
/// fails the batch without harming the next one.
fn batch_tight<C: MsmCurve>(n: usize, seed: u64) {
    let g = gpu();
    let bases_host = random_bases::<C>(n, seed);
    let bases = upload::<C>(&bases_host);
    let input = PlanInput {
        n,
        tail: n,
        bits: Some(10),
        split: true,
        staged: true,
        xyzz_bytes: std::mem::size_of::<C::XyzzRepr>(),
        sm_count: g.device.info().sm_count,
        allowance: 0,
        affine_levels: Some(0),
        pair_group: 0,
        binned_scatter: Some(false),
        copies: 1,
        upload_overlap: Some(false),
    };
    // One window per pass, a tenth of the points per chunk: less than two whole sets of
    // scalars take, so the batch must stage them.
    let allowance = Plan::with_chunk(&input, 10, 1, n / 10).bytes(input.xyzz_bytes);
    assert!(
        allowance < 2 * n * 32,
        "{allowance} would hold two sets of {n}"
    );
    let cfg = MsmConfig {
        vram_allowance: Some(allowance),
        window_bits: Some(10),
        split: Split::Always,
        ..MsmConfig::default()
    };
    let sets = [
        (n, Kind::Sparse, Via::Pinned),
        (n / 2, Kind::Random, Via::Pinned),
        (n, Kind::MinusOne, Via::Host),
    ];
    let infos = batch_case::<C>(
        "tight allowance",
        &bases_host,
        &bases,
        &sets,
        seed + 1,
        &cfg,
    );
    assert!(!prefetched(&infos, 0), "{infos:?}");
    assert!(
        infos[0].plan.chunks(n) > 1 || infos[0].plan.passes() > 1,
        "{:?}",
        infos[0].plan
    );
    let long = to_reprs(&random_scalars(n + 1, seed + 2));
    let short = to_reprs(&random_scalars(10, seed + 3));
    let err = g
        .engine
        .msm_batch::<C>(
            &g.stream,
            &bases,
            &[Scalars::Host(&short), Scalars::Host(&long)],
        )
        .unwrap_err();
    assert!(
        matches!(err, MsmError::LengthMismatch { scalars, .. } if scalars == n + 1),
        "{err}"
    );
    batch_case::<C>(
        "after an error",
        &bases_host,
        &bases,
        &[
            (n, Kind::Random, Via::Pinned),
            (10, Kind::Random, Via::Pinned),
        ],
        seed + 4,
        &MsmConfig::default(),
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_batch_under_a_tight_allowance_g1_and_g2() {
    batch_tight::<G1>(20_000, 110);
    batch_tight::<G2>(16_000, 111);
}

fn kind_strategy() -> impl Strategy<Value = Kind> {
    prop::sample::select(vec![Kind::Random, Kind::Zero, Kind::MinusOne, Kind::Sparse])
}

fn via_strategy() -> impl Strategy<Value = Via> {
    prop::sample::select(vec![Via::Pinned, Via::Host, Via::Device])
}

/// Bases of the property tests, made and uploaded once per group.
type Shared<C> = (Vec<<C as MsmCurve>::Affine>, Bases<C>);

fn shared<C: MsmCurve>(n: usize, seed: u64) -> Shared<C> {
    let host = random_bases::<C>(n, seed);
    let dev = upload::<C>(&host);
    (host, dev)
}

fn prop_g1() -> &'static Shared<G1> {
    static B: OnceLock<Shared<G1>> = OnceLock::new();
    B.get_or_init(|| shared::<G1>(2000, 121))
}

fn prop_g2() -> &'static Shared<G2> {
    static B: OnceLock<Shared<G2>> = OnceLock::new();
    B.get_or_init(|| shared::<G2>(500, 120))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 6, .. ProptestConfig::default() })]

    #[test]
    #[ignore = "needs a CUDA GPU"]
    fn gpu_batch_equals_the_reference_on_fresh_sets(
        seed in any::<u64>(),
        sets in prop::collection::vec((0usize..=2000, kind_strategy(), via_strategy()), 1..=5),
        g2 in any::<bool>(),
    ) {
        if g2 {
            let (host, bases) = prop_g2();
            let sets: Vec<_> = sets.iter().map(|&(n, k, v)| (n / 4, k, v)).collect();
            batch_case::<G2>("fresh", host, bases, &sets, seed, &MsmConfig::default());
        } else {
            let (host, bases) = prop_g1();
            batch_case::<G1>("fresh", host, bases, &sets, seed, &MsmConfig::default());
        }
    }
}

/// Runs an MSM against `bases_host` kept on the host under `cfg`, via each scalar source,
/// against the CPU reference; returns the cut of the first run.
fn host_bases_case<C: MsmCurve>(
    what: &str,
    bases_host: &[C::Affine],
    scalars: &[Scalar],
    cfg: &MsmConfig,
) -> cuzk_msm::streamed::StreamedPlan {
    let g = gpu();
    let reprs: Vec<C::AffineRepr> = bases_host.iter().map(C::to_repr).collect();
    let bases = HostBases::<C>::from_slice(&g.device, &reprs).unwrap();
    let want = cpu::msm::<C>(&bases_host[..scalars.len()], scalars).unwrap();
    let s = to_reprs(scalars);
    let mut cut = None;
    for via in [Via::Pinned, Via::Host, Via::Device] {
        let held = Held::new(&s, via);
        let (got, info) = g
            .engine
            .msm_host_bases_with::<C>(&g.stream, &bases, held.scalars(), cfg)
            .unwrap_or_else(|e| panic!("{} {what}: {via:?}: {e}", C::NAME));
        assert_eq!(
            got.to_affine(),
            want.to_affine(),
            "{} {what} (n = {}): {via:?} {:?}",
            C::NAME,
            scalars.len(),
            info.cut
        );
        cut.get_or_insert(info.cut);
    }
    cut.unwrap()
}

fn host_bases<C: MsmCurve>(n: usize, seed: u64) {
    let mut bases_host = random_bases::<C>(n, seed);
    for i in (0..n).step_by(7) {
        bases_host[i] = C::Affine::identity();
    }
    let affine = std::mem::size_of::<C::AffineRepr>();
    // Base buffers of at most n / 6 points each: six or more chunks.
    let tiny = |split| MsmConfig {
        vram_allowance: Some((4 * (n / 6) * affine).max(600_000)),
        split,
        ..MsmConfig::default()
    };
    for (i, kind) in [Kind::Random, Kind::Sparse, Kind::MinusOne, Kind::Zero]
        .into_iter()
        .enumerate()
    {
        let scalars = make_scalars(kind, n, seed + 1 + i as u64);
        for split in [Split::Auto, Split::Dense, Split::Always] {
            let cut = host_bases_case::<C>(
                &format!("{kind:?} {split:?}"),
                &bases_host,
                &scalars,
                &tiny(split),
            );
            assert!(cut.chunks > 2, "{kind:?}: {cut:?}");
        }
    }
    // Fewer scalars than bases, one scalar, none; and a roomy allowance (one chunk).
    let scalars = random_scalars(n, seed + 9);
    for len in [n - 5, n / 2 + 1, 1, 0] {
        host_bases_case::<C>(
            &format!("{len} scalars"),
            &bases_host,
            &scalars[..len],
            &tiny(Split::Auto),
        );
    }
    let cut = host_bases_case::<C>("roomy", &bases_host, &scalars, &MsmConfig::default());
    assert_eq!(cut.chunks, 1, "{cut:?}");
    // More scalars than bases; an allowance that holds nothing.
    let g = gpu();
    let reprs: Vec<C::AffineRepr> = bases_host.iter().map(C::to_repr).collect();
    let bases = HostBases::<C>::from_slice(&g.device, &reprs).unwrap();
    let long = to_reprs(&random_scalars(n + 1, 1));
    let err = g
        .engine
        .msm_host_bases::<C>(&g.stream, &bases, Scalars::Host(&long))
        .unwrap_err();
    assert!(matches!(err, MsmError::LengthMismatch { .. }), "{err}");
    let hopeless = MsmConfig {
        vram_allowance: Some(1000),
        ..MsmConfig::default()
    };
    let err = g
        .engine
        .msm_host_bases_with::<C>(&g.stream, &bases, Scalars::Host(&long[..n]), &hopeless)
        .unwrap_err();
    assert!(
        matches!(
            err,
            MsmError::AllowanceTooSmall {
                allowance: 1000,
                ..
            }
        ),
        "{err}"
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_host_bases_streamed_in_chunks_g1_and_g2() {
    host_bases::<G1>(20_000, 130);
    host_bases::<G2>(3_000, 131);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 6, .. ProptestConfig::default() })]

    #[test]
    #[ignore = "needs a CUDA GPU"]
    fn gpu_host_bases_equal_the_reference_on_fresh_inputs(
        seed in any::<u64>(),
        n in 1usize..4000,
        share in 1usize..8,
        kind in kind_strategy(),
    ) {
        // Base buffers of at most about n / share points each, and room for the work.
        let allowance = 4 * n.div_ceil(share) * 96 + 300_000;
        let bases_host = random_bases::<G1>(n, seed);
        let scalars = make_scalars(kind, n, seed ^ 1);
        let cfg = MsmConfig { vram_allowance: Some(allowance), ..MsmConfig::default() };
        host_bases_case::<G1>(&format!("fresh, allowance {allowance}"), &bases_host, &scalars, &cfg);
    }
}

/// Work buffers reserved ahead serve the calls of those shapes without allocating, and calls
/// that alternate between a dense device plan and a split host plan settle on one workspace;
/// the results are the reference's either way.
fn reserved<C: MsmCurve>(n: usize, seed: u64) {
    let g = gpu();
    let engine = MsmEngine::new(&g.device).unwrap();
    let bases_host = random_bases::<C>(n, seed);
    let reprs: Vec<C::AffineRepr> = bases_host.iter().map(C::to_repr).collect();
    let bases: Bases<C> = engine.upload_bases(&g.stream, &reprs).unwrap();
    let dense = random_scalars(n, seed + 1);
    let sparse = sparse_scalars(n, 0.6, 0.35, seed + 2);
    let want_dense = cpu::msm::<C>(&bases_host, &dense).unwrap();
    let want_sparse = cpu::msm::<C>(&bases_host, &sparse).unwrap();
    let on_device = g.stream.upload(&to_reprs(&dense)).unwrap();
    let mut pinned = g.device.alloc_pinned::<FrRepr>(n).unwrap();
    pinned
        .as_mut_slice()
        .unwrap()
        .copy_from_slice(&to_reprs(&sparse));
    let cfg = config(Split::Auto);
    let calls_with = |engine: &MsmEngine, bases: &Bases<C>, cfg: &MsmConfig| {
        let (d, _) = engine
            .msm_with(&g.stream, bases, Scalars::Device(&on_device), cfg)
            .unwrap();
        let (s, info) = engine
            .msm_with(&g.stream, bases, Scalars::Pinned(&pinned), cfg)
            .unwrap();
        assert!(info.split, "{}: the sparse scalars should split", C::NAME);
        assert_eq!(d, want_dense, "{} dense, device scalars", C::NAME);
        assert_eq!(s, want_sparse, "{} sparse, pinned scalars", C::NAME);
    };
    let calls = |engine: &MsmEngine| calls_with(engine, &bases, &cfg);

    // Unreserved: the first round allocates, later rounds do not.
    calls(&engine);
    let settled = engine.workspace_allocations();
    assert!(settled >= 1);
    calls(&engine);
    calls(&engine);
    assert_eq!(
        engine.workspace_allocations(),
        settled,
        "{}: alternating plans reallocate",
        C::NAME
    );

    // Reserved ahead on a fresh engine: the first round allocates nothing.
    let engine = MsmEngine::new(&g.device).unwrap();
    let bases: Bases<C> = engine.upload_bases(&g.stream, &reprs).unwrap();
    let bytes = engine
        .reserve::<C>(&g.stream, &[MsmShape::new(n, false)], 0, &cfg)
        .and_then(|_| engine.reserve::<C>(&g.stream, &[MsmShape::new(n, true)], 0, &cfg))
        .unwrap();
    assert!(bytes > 0);
    let reserved = engine.workspace_allocations();
    let (d, _) = engine
        .msm_with(&g.stream, &bases, Scalars::Device(&on_device), &cfg)
        .unwrap();
    let (s, _) = engine
        .msm_with(&g.stream, &bases, Scalars::Pinned(&pinned), &cfg)
        .unwrap();
    assert_eq!((d, s), (want_dense, want_sparse), "{} reserved", C::NAME);
    assert_eq!(
        engine.workspace_allocations(),
        reserved,
        "{}: a reserved shape allocated",
        C::NAME
    );
    // Nothing to reserve for no points.
    assert_eq!(
        engine
            .reserve::<C>(&g.stream, &[MsmShape::new(0, true)], 0, &cfg)
            .unwrap(),
        bytes
    );

    // Over shifted copies the plan keeps their width and sets: a shape with the copies
    // reserves what the call takes.
    let engine = MsmEngine::new(&g.device).unwrap();
    let bases: Bases<C> = engine.upload_bases(&g.stream, &reprs).unwrap();
    let shifted = engine.shift_bases::<C>(&g.stream, bases, 12, 3).unwrap();
    engine
        .reserve::<C>(&g.stream, &[MsmShape::over(&shifted, n, false)], 0, &cfg)
        .unwrap();
    let reserved = engine.workspace_allocations();
    let (d, info) = engine
        .msm_with(&g.stream, &shifted, Scalars::Device(&on_device), &cfg)
        .unwrap();
    assert_eq!(d, want_dense, "{} over copies, reserved", C::NAME);
    assert_eq!(
        (info.plan.bits, info.plan.copies),
        (12, 3),
        "{}: the copies' plan",
        C::NAME
    );
    assert_eq!(
        engine.workspace_allocations(),
        reserved,
        "{}: a reserved shape over copies allocated",
        C::NAME
    );

    // A tight allowance, too small for the two shapes' plans side by side: reserved together,
    // they share one workspace, each call runs its plan cut to it, and none allocates.
    let engine = MsmEngine::new(&g.device).unwrap();
    let bases: Bases<C> = engine.upload_bases(&g.stream, &reprs).unwrap();
    let shapes = [MsmShape::new(n, false), MsmShape::new(n, true)];
    let roomy = engine.wanted_bytes::<C>(&shapes, &cfg).unwrap();
    let tight = MsmConfig {
        vram_allowance: Some(roomy / 4 * 3),
        ..cfg
    };
    let held = engine.reserve::<C>(&g.stream, &shapes, 0, &tight).unwrap();
    assert!(held <= roomy / 4 * 3, "{held} of {roomy}");
    let reserved = engine.workspace_allocations();
    calls_with(&engine, &bases, &tight);
    calls_with(&engine, &bases, &tight);
    assert_eq!(
        engine.workspace_allocations(),
        reserved,
        "{}: calls under a tight allowance reallocated",
        C::NAME
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_reserved_workspaces_serve_first_calls_without_allocating() {
    reserved::<G1>(1 << 16, 90);
    reserved::<G2>(1 << 14, 91);
}
