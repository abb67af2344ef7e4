//! The GPU prover against the CPU reference prover and bellperson's verifier: random and
//! sample circuits, resident and streamed parameters, a small VRAM budget, two lanes
//! sharing a budget, batches, and a bad witness that fails alone.

use bellperson::groth16 as bp;
use blstrs::Scalar;
use cuzk_circuits::{Sha256Preimage, SyntheticPoRep};
use cuzk_cuda::Device;
use cuzk_groth16::{generate_parameters_with, prove, Error, PreparedParameters, ToxicWaste};
use cuzk_mem::Budget;
use cuzk_prover::{DeviceParameters, GpuProver, GpuProverConfig, Residency};
use cuzk_synth::testing::RandomCircuit;
use cuzk_synth::{synthesize_witness, Density, Pce, Witness};
use cuzk_tests::{proof_to_bellperson, vk_to_bellperson, Keyed};
use ff::Field;
use rand_chacha::rand_core::SeedableRng;
use rand_chacha::ChaCha8Rng;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

/// One circuit made ready: its PCE, densities, parameters, a witness and public inputs.
struct Case {
    pce: Pce,
    density: Density,
    params: Arc<PreparedParameters>,
    bp_pvk: bp::PreparedVerifyingKey<blstrs::Bls12>,
    witness: Witness,
    inputs: Vec<Scalar>,
}

fn case<C: bellpepper_core::Circuit<Scalar> + Clone>(
    circuit: C,
    inputs: Vec<Scalar>,
    seed: u64,
) -> Case {
    let pce = Pce::record(circuit.clone()).expect("recording");
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let params = generate_parameters_with(&pce, &ToxicWaste::random(&mut rng)).expect("params");
    let bp_pvk = bp::prepare_verifying_key(&vk_to_bellperson(&params.vk));
    let witness = synthesize_witness(circuit).expect("witness");
    Case {
        density: pce.density(),
        pce,
        params: Arc::new(PreparedParameters::from(params)),
        bp_pvk,
        witness,
        inputs,
    }
}

fn device() -> Device {
    Device::open(0).expect("a CUDA device (this test needs a GPU)")
}

/// Proves `case` on the GPU and on the CPU with the same fresh r, s: the proofs must be equal
/// and bellperson's verifier must accept the GPU proof.
fn check(prover: &GpuProver, params: &DeviceParameters, case: &Case, rng: &mut ChaCha8Rng) {
    let (r, s) = (Scalar::random(&mut *rng), Scalar::random(&mut *rng));
    let (gpu, timings) = prover
        .prove(params, &case.pce, &case.density, &case.witness, r, s)
        .expect("GPU proof");
    let cpu = prove(&case.params, &case.pce, &case.witness, r, s).expect("CPU proof");
    assert_eq!(gpu, cpu, "GPU proof differs from the CPU reference");
    assert!(
        bp::verify_proof(&case.bp_pvk, &proof_to_bellperson(&gpu), &case.inputs).unwrap(),
        "bellperson rejects the GPU proof"
    );
    assert!(timings.gpu_busy_ms > 0.0 && timings.prove_ms > 0.0);
}

fn random_case(seed: u64, size: usize) -> Case {
    let raw = RandomCircuit::new(seed, size);
    let inputs = raw.public_inputs().to_vec();
    case(Keyed::new(raw), inputs, seed ^ 0x5eed)
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_prover_equals_cpu_reference_on_random_circuits() {
    let prover = GpuProver::new(&device(), GpuProverConfig::default()).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(rand::random());
    for k in 0..24 {
        let seed: u64 = rand::Rng::gen(&mut rng);
        // Sizes from a single constraint up, with a few domains of several thousand points.
        let size = if k % 6 == 5 {
            rand::Rng::gen_range(&mut rng, 2000..6000)
        } else {
            rand::Rng::gen_range(&mut rng, 1..200)
        };
        let case = random_case(seed, size);
        let params = prover.load(case.params.clone()).unwrap();
        assert!(params.is_resident());
        check(&prover, &params, &case, &mut rng);
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_prover_sample_circuits_verify_under_bellperson() {
    let prover = GpuProver::new(&device(), GpuProverConfig::default()).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(rand::random());
    let sha = Sha256Preimage::with_approx_constraints(40_000, rand::random());
    let inputs = sha.public_inputs();
    let sha = case(sha, inputs, 1);
    let porep = SyntheticPoRep::new((1 << 16) - 2, rand::random());
    let inputs = porep.public_inputs();
    let porep = case(porep, inputs, 2);
    for c in [&sha, &porep] {
        let params = prover.load(c.params.clone()).unwrap();
        check(&prover, &params, c, &mut rng);
        // Twice, so the second proof runs on pooled pinned buffers and cached work buffers.
        check(&prover, &params, c, &mut rng);
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_streamed_parameters_under_a_small_budget_give_the_same_proofs() {
    let budget = Budget::new("vram 0 (test)", 2 << 30);
    let config = GpuProverConfig {
        residency: Residency::Streamed,
        budget: Some(budget.clone()),
        msm_vram: Some(256 << 20),
        // Small chunks, so every query passes through the device in several pieces.
        stream_chunk: 1 << 20,
        ..GpuProverConfig::default()
    };
    let prover = GpuProver::new(&device(), config).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(rand::random());
    let porep = SyntheticPoRep::new((1 << 17) - 2, rand::random());
    let inputs = porep.public_inputs();
    let porep = case(porep, inputs, 3);
    let params = prover.load(porep.params.clone()).unwrap();
    assert!(!params.is_resident());
    check(&prover, &params, &porep, &mut rng);
    for seed in 0..4 {
        let c = random_case(rand::Rng::gen(&mut rng), 100 + 700 * seed);
        let params = prover.load(c.params.clone()).unwrap();
        check(&prover, &params, &c, &mut rng);
    }
    assert!(budget.high_water() <= budget.capacity());
    assert_eq!(budget.used(), 0, "every reservation is released");
}

/// NTT pass factors from one table (the prover's `ntt_direct_factor_log`) give the same proofs
/// at a domain whose top pass multiplies two table entries by default (2^21), and the working
/// set a proof reserves under a budget grows by exactly the larger tables.
#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_direct_ntt_factor_tables_give_the_same_proofs() {
    let mut rng = ChaCha8Rng::seed_from_u64(rand::random());
    let porep = SyntheticPoRep::new((1 << 21) - 2, rand::random());
    let inputs = porep.public_inputs();
    let porep = case(porep, inputs, 5);
    let mut high_water = Vec::new();
    for direct in [None, Some(28)] {
        let budget = Budget::new("vram 0 (test)", 24 << 30);
        let config = GpuProverConfig {
            budget: Some(budget.clone()),
            ntt_direct_factor_log: direct,
            ..GpuProverConfig::default()
        };
        let prover = GpuProver::new(&device(), config).unwrap();
        let params = prover.load(porep.params.clone()).unwrap();
        check(&prover, &params, &porep, &mut rng);
        high_water.push(budget.high_water());
        drop((params, prover));
        assert_eq!(budget.used(), 0, "every reservation is released");
    }
    // 2^21 splits 7 + 7 + 7: the top pass's factors (order 2^21) from one table of 2^21
    // entries instead of 2^11 + 2^10, in each direction.
    let grown = 2 * ((1u64 << 21) - ((1 << 11) + (1 << 10))) * 32;
    assert_eq!(
        high_water[1] - high_water[0],
        grown,
        "reserved {high_water:?}"
    );
}

/// MSMs with batch-affine pair levels, the binned scatter or both give the CPU prover's proofs
/// (same r, s), unmetered and under a budget whose MSM allowance may drop them.
#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_msm_pair_levels_and_binned_scatter_give_the_same_proofs() {
    let mut rng = ChaCha8Rng::seed_from_u64(rand::random());
    let porep = SyntheticPoRep::new((1 << 20) - 2, rand::random());
    let inputs = porep.public_inputs();
    let porep = case(porep, inputs, 5);
    for (levels, binned) in [(1, false), (3, false), (0, true), (2, true)] {
        for budget in [None, Some(Budget::new("vram 0 (test)", 24 << 30))] {
            let config = GpuProverConfig {
                budget,
                msm_affine_levels: levels,
                msm_binned_scatter: Some(binned),
                ..GpuProverConfig::default()
            };
            let prover = GpuProver::new(&device(), config).unwrap();
            let params = prover.load(porep.params.clone()).unwrap();
            check(&prover, &params, &porep, &mut rng);
        }
    }
}

/// MSMs of pinned scalars cut in two, the second half's upload under the first half's work,
/// give the CPU prover's proofs (same r, s), unmetered and under a budget.
#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_msm_upload_overlap_gives_the_same_proofs() {
    let mut rng = ChaCha8Rng::seed_from_u64(rand::random());
    let porep = SyntheticPoRep::new((1 << 20) - 2, rand::random());
    let inputs = porep.public_inputs();
    let porep = case(porep, inputs, 5);
    for budget in [None, Some(Budget::new("vram 0 (test)", 24 << 30))] {
        let config = GpuProverConfig {
            budget,
            msm_upload_overlap: Some(true),
            ..GpuProverConfig::default()
        };
        let prover = GpuProver::new(&device(), config).unwrap();
        let params = prover.load(porep.params.clone()).unwrap();
        check(&prover, &params, &porep, &mut rng);
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_batch_equals_single_proofs() {
    let prover = GpuProver::new(&device(), GpuProverConfig::default()).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(rand::random());
    let circuits: Vec<SyntheticPoRep> = (0..4)
        .map(|_| SyntheticPoRep::new(5000, rand::random()))
        .collect();
    let first = case(circuits[0], circuits[0].public_inputs(), 4);
    let params = prover.load(first.params.clone()).unwrap();
    let witnesses: Vec<Witness> = circuits
        .iter()
        .map(|c| synthesize_witness(*c).unwrap())
        .collect();
    let randomness: Vec<(Scalar, Scalar)> = (0..4)
        .map(|_| (Scalar::random(&mut rng), Scalar::random(&mut rng)))
        .collect();
    let batch = prover
        .prove_batch(&params, &first.pce, &first.density, &witnesses, &randomness)
        .unwrap();
    assert_eq!(batch.len(), 4);
    for ((w, &(r, s)), (proof, _)) in witnesses.iter().zip(&randomness).zip(&batch) {
        let cpu = prove(&first.params, &first.pce, w, r, s).unwrap();
        assert_eq!(*proof, cpu);
    }
    for (c, (proof, _)) in circuits.iter().zip(&batch) {
        assert!(bp::verify_proof(
            &first.bp_pvk,
            &proof_to_bellperson(proof),
            &c.public_inputs()
        )
        .unwrap());
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_bad_witness_fails_alone_and_the_next_proof_succeeds() {
    let prover = GpuProver::new(&device(), GpuProverConfig::default()).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(rand::random());
    let c = random_case(rand::random(), 300);
    let params = prover.load(c.params.clone()).unwrap();
    let mut bad = c.witness.clone();
    // Flip every aux value: some constraint must fail (the circuit has constraints on aux).
    for x in bad.aux.iter_mut() {
        *x += Scalar::ONE;
    }
    let r = prover.prove(&params, &c.pce, &c.density, &bad, Scalar::ONE, Scalar::ONE);
    assert!(
        matches!(&r, Err(e) if matches!(e.groth16(), Some(Error::Unsatisfied { .. }))),
        "got {r:?}"
    );
    let mut short = c.witness.clone();
    short.aux.pop();
    assert!(prover
        .prove(
            &params,
            &c.pce,
            &c.density,
            &short,
            Scalar::ONE,
            Scalar::ONE
        )
        .is_err());
    check(&prover, &params, &c, &mut rng);
}

/// With resident parameters a prepared witness's pinned buffers go back to the pool during
/// its proof (the next preparation need not wait for the proof to end), the proof is still
/// the CPU reference's, and proving the witness again is refused.
#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_prepared_witness_gives_its_buffers_back_during_its_proof_and_is_proved_once() {
    let prover = GpuProver::new(&device(), GpuProverConfig::default()).unwrap();
    let c = random_case(rand::random(), 300);
    let params = prover.load(c.params.clone()).unwrap();
    let mut prepared = prover
        .prepare(&params, &c.pce, &c.density, &c.witness)
        .unwrap();
    let lent = prover.pinned_pool().stats().lent_buffers;
    assert!(
        lent >= 6,
        "a prepared witness holds its set: {lent} buffers lent"
    );
    let mut rng = ChaCha8Rng::seed_from_u64(rand::random());
    let (r, s) = (Scalar::random(&mut rng), Scalar::random(&mut rng));
    let (proof, _) = prover.prove_prepared(&params, &mut prepared, r, s).unwrap();
    // `prepared` is still alive: its buffers came back during the proof.
    assert!(prepared.is_proved());
    assert_eq!(prover.pinned_pool().stats().lent_buffers, lent - 6);
    let expected = prove(&c.params, &c.pce, &c.witness, r, s).unwrap();
    assert_eq!(proof, expected, "GPU proof equals the CPU reference's");
    let again = prover.prove_prepared(&params, &mut prepared, r, s);
    assert!(
        matches!(again, Err(cuzk_prover::Error::Proved)),
        "got {again:?}"
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_two_lanes_share_a_budget_that_fits_one_proof() {
    let dev = device();
    let porep = SyntheticPoRep::new((1 << 18) - 2, rand::random());
    let c = Arc::new(case(porep, porep.public_inputs(), 5));
    let n = 1u64 << 18;
    let params_bytes = 96
        * (n + c.params.l().len() as u64
            + c.params.a().len() as u64
            + c.params.b_g1().len() as u64)
        + 192 * c.params.b_g2().len() as u64;
    let msm = 512u64 << 20;
    // Parameters, plus one proof's a/b/c and tables (generously), plus one MSM allowance.
    let capacity = params_bytes + 3 * 32 * n + (64 << 20) + msm;
    let budget = Budget::new("vram 0 (two lanes)", capacity);
    let config = GpuProverConfig {
        budget: Some(budget.clone()),
        msm_vram: Some(msm),
        residency: Residency::Resident,
        ..GpuProverConfig::default()
    };
    let lanes = [
        GpuProver::new(&dev, config.clone()).unwrap(),
        GpuProver::new(&dev, config).unwrap(),
    ];
    let params = lanes[0].load(c.params.clone()).unwrap();
    let (free0, total) = dev.memory_info().unwrap();
    let baseline = (total - free0) as u64;
    let done = AtomicBool::new(false);
    let peak = AtomicUsize::new(0);
    let proofs = AtomicUsize::new(0);
    std::thread::scope(|s| {
        s.spawn(|| {
            // Samples the driver's figure, not the budget's ledger.
            while !done.load(Ordering::Relaxed) {
                let (free, total) = dev.memory_info().unwrap();
                peak.fetch_max(total - free, Ordering::Relaxed);
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
        });
        let workers: Vec<_> = lanes
            .iter()
            .map(|lane| {
                let (params, c, proofs) = (&params, &c, &proofs);
                s.spawn(move || {
                    let mut rng = ChaCha8Rng::seed_from_u64(rand::random());
                    for _ in 0..3 {
                        check(lane, params, c, &mut rng);
                        proofs.fetch_add(1, Ordering::Relaxed);
                    }
                })
            })
            .collect();
        for w in workers {
            w.join().unwrap();
        }
        done.store(true, Ordering::Relaxed);
    });
    assert_eq!(proofs.load(Ordering::Relaxed), 6, "both lanes finished");
    assert!(budget.high_water() <= capacity);
    // What the device gained above the baseline (taken with the parameters resident) stays
    // within the proof's share of the budget, plus slack for the second lane's streams and
    // the driver's allocation granularity.
    let gained = (peak.load(Ordering::Relaxed) as u64).saturating_sub(baseline);
    let slack = 256u64 << 20;
    assert!(
        gained <= capacity - params_bytes + slack,
        "device memory rose {gained} bytes above the baseline; budget for proofs {}",
        capacity - params_bytes
    );
}

/// After `warm`, the first proof of a parameter set allocates no MSM work buffers and pins
/// nothing (its buffers were stocked), and its proof is the CPU reference's; under a VRAM
/// budget warming builds the NTT tables only (each proof reserves its own MSM buffers).
#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_warmed_prover_first_proof_allocates_no_msm_buffers() {
    let mut rng = ChaCha8Rng::seed_from_u64(rand::random());
    let porep = SyntheticPoRep::new((1 << 16) - 2, rand::random());
    let inputs = porep.public_inputs();
    let porep = case(porep, inputs, 7);
    let prover = GpuProver::new(&device(), GpuProverConfig::default()).unwrap();
    let params = prover.load(porep.params.clone()).unwrap();
    let warmed = prover.warm(&params, 3).unwrap();
    assert_eq!(warmed.sets, 3, "{warmed:?}");
    assert!(warmed.workspace_bytes > 0, "{warmed:?}");
    let allocations = prover.msm_workspace_allocations();
    let misses = prover.pinned_pool().stats().misses;
    check(&prover, &params, &porep, &mut rng);
    check(&prover, &params, &porep, &mut rng);
    assert_eq!(
        prover.msm_workspace_allocations(),
        allocations,
        "a warmed prover's proofs allocated MSM work buffers"
    );
    assert_eq!(
        prover.pinned_pool().stats().misses,
        misses,
        "a warmed prover's proofs pinned buffers"
    );

    let budget = Budget::new("vram 0 (test)", 8 << 30);
    let metered = GpuProver::new(
        &device(),
        GpuProverConfig {
            budget: Some(budget.clone()),
            ..GpuProverConfig::default()
        },
    )
    .unwrap();
    let params = metered.load(porep.params.clone()).unwrap();
    let warmed = metered.warm(&params, 1).unwrap();
    assert_eq!(warmed.workspace_bytes, 0, "{warmed:?}");
    check(&metered, &params, &porep, &mut rng);
    drop(params);
    assert_eq!(budget.used(), 0, "every reservation is released");
}

/// Shifted copies of the H bases (`GpuProver::copy_h`) give the CPU prover's proofs (same r,
/// s) at several widths (a 2^18 query's copies are small, so each width gets a copy for every
/// window; MSMs over copies in several bucket sets are cuzk-msm's tests), warmed so that the
/// first proof over the copies allocates no MSM work buffers; under a budget the prover makes
/// none.
#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_h_bases_copies_give_the_same_proofs() {
    let mut rng = ChaCha8Rng::seed_from_u64(rand::random());
    let porep = SyntheticPoRep::new((1 << 18) - 2, rand::random());
    let inputs = porep.public_inputs();
    let porep = case(porep, inputs, 9);
    for bits in [10, 16, 22] {
        let config = GpuProverConfig {
            h_copy_bits: Some(bits),
            ..GpuProverConfig::default()
        };
        let prover = GpuProver::new(&device(), config).unwrap();
        let mut params = prover.load(porep.params.clone()).unwrap();
        let (copies, shift_bits) = params.h_bases().expect("resident").copies();
        assert!(
            copies > 1,
            "{bits} bits: a 2^18 H query's copies fit any card"
        );
        assert_eq!(shift_bits, bits);
        // Asked again, the copies are kept.
        let again = prover.copy_h(&mut params).unwrap();
        assert_eq!((again.copies, again.bits), (copies, bits));
        prover.warm(&params, 1).unwrap();
        let allocations = prover.msm_workspace_allocations();
        check(&prover, &params, &porep, &mut rng);
        check(&prover, &params, &porep, &mut rng);
        assert_eq!(
            prover.msm_workspace_allocations(),
            allocations,
            "{bits} bits: proofs over warmed copies allocated MSM work buffers"
        );
    }
    let metered = GpuProver::new(
        &device(),
        GpuProverConfig {
            budget: Some(Budget::new("vram 0 (test)", 24 << 30)),
            h_copy_bits: Some(16),
            ..GpuProverConfig::default()
        },
    )
    .unwrap();
    let params = metered.load(porep.params.clone()).unwrap();
    assert_eq!(params.h_bases().map(|h| h.copies().0), Some(1));
    check(&metered, &params, &porep, &mut rng);
}
