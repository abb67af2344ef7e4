//! a, b, c on the device against the host evaluator, and proofs that evaluate on the device
//! against the CPU reference prover and bellperson's verifier: random circuits (proptest)
//! and the sample circuits, the satisfiability check's first failing row, the scalar gather,
//! and a budget too small for the device PCE.

use bellperson::groth16 as bp;
use blstrs::Scalar;
use cuzk_circuits::{Sha256Preimage, SyntheticPoRep};
use cuzk_cuda::sparse::{self, DeviceBitmap, DeviceCsr, ALL_SATISFIED};
use cuzk_cuda::{Device, Stream};
use cuzk_field::{Bitmap, FrRepr};
use cuzk_groth16::{generate_parameters_with, prove, PreparedParameters, ToxicWaste};
use cuzk_mem::Budget;
use cuzk_prover::{DevicePce, GpuProver, GpuProverConfig};
use cuzk_synth::testing::RandomCircuit;
use cuzk_synth::{synthesize_witness, Csr, PackedAux, Pce, SynthError, Witness};
use cuzk_tests::{proof_to_bellperson, vk_to_bellperson, Keyed};
use ff::Field;
use proptest::prelude::*;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::sync::{Arc, OnceLock};

fn device() -> Device {
    Device::open(0).expect("a CUDA device (this test needs a GPU)")
}

/// One prover for the whole file: loading the kernels once keeps the proptest cases cheap.
fn prover() -> &'static GpuProver {
    static PROVER: OnceLock<GpuProver> = OnceLock::new();
    PROVER.get_or_init(|| GpuProver::new(&device(), GpuProverConfig::default()).unwrap())
}

fn reprs(values: &[Scalar]) -> Vec<FrRepr> {
    values.iter().map(|&s| s.into()).collect()
}

fn upload_matrix(stream: &Stream, m: &Csr, cols: usize) -> DeviceCsr {
    let row_ptr: Vec<u32> = m.row_ptr.iter().map(|&p| p as u32).collect();
    DeviceCsr::upload(stream, &row_ptr, &m.cols, &m.coeffs, &reprs(&m.table), cols).unwrap()
}

/// a, b, c and the first failing row from the device, over a domain of `n` ≥ rows.
fn device_abc(pce: &Pce, w: &Witness, n: usize) -> ([Vec<FrRepr>; 3], u32) {
    let stream = prover().device().new_stream().unwrap();
    let cols = pce.num_inputs + pce.num_aux;
    let m = [&pce.a, &pce.b, &pce.c].map(|m| upload_matrix(&stream, m, cols));
    // Padded by one element, as the prover pads, and passed as views of the real length.
    let pad = |v: &[Scalar]| {
        let mut r = reprs(v);
        r.push(FrRepr::default());
        stream.upload(&r).unwrap()
    };
    let (inputs, aux) = (pad(&w.inputs), pad(&w.aux));
    let mut out = [(); 3].map(|_| stream.alloc::<FrRepr>(n).unwrap());
    let mut failing = stream.upload(&[ALL_SATISFIED]).unwrap();
    let [a, b, c] = &mut out;
    sparse::eval_abc(
        &stream,
        [&m[0], &m[1], &m[2]],
        &inputs.slice(..w.inputs.len()),
        &aux.slice(..w.aux.len()),
        [a, b, c],
        &mut failing,
    )
    .unwrap();
    let got = out.map(|d| stream.download(&d).unwrap());
    (got, stream.download(&failing).unwrap()[0])
}

/// The host's a, b, c in the device layout, padded with zeros to `n`.
fn host_abc(pce: &Pce, w: &Witness, n: usize) -> [Vec<FrRepr>; 3] {
    let e = pce.evaluate(w).unwrap();
    [e.a, e.b, e.c].map(|v| {
        let mut r = reprs(&v);
        r.resize(n, FrRepr::default());
        r
    })
}

/// Witness values biased to what the evaluator's shortcuts see: zeros, ones, minus ones and
/// random elements.
fn shuffled_witness(w: &Witness, rng: &mut ChaCha8Rng) -> Witness {
    let mut value = |x: Scalar| match rng.gen_range(0..5) {
        0 => Scalar::ZERO,
        1 => Scalar::ONE,
        2 => -Scalar::ONE,
        3 => Scalar::random(&mut *rng),
        _ => x,
    };
    let mut out = w.clone();
    for x in out.aux.iter_mut() {
        *x = value(*x);
    }
    out
}

fn check_evaluation(seed: u64, size: usize, extra: usize) {
    let raw = RandomCircuit::new(seed, size);
    let pce = Pce::record(raw.clone()).unwrap();
    let witness = synthesize_witness(raw).unwrap();
    let n = pce.num_rows() + extra;
    let (got, failing) = device_abc(&pce, &witness, n);
    assert_eq!(got, host_abc(&pce, &witness, n), "a, b, c (seed {seed})");
    assert_eq!(failing, ALL_SATISFIED, "a satisfied witness fails no row");

    // A witness that breaks rows: the first failing row is the host check's.
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0xbad);
    let bad = shuffled_witness(&witness, &mut rng);
    let (got, failing) = device_abc(&pce, &bad, n);
    assert_eq!(got, host_abc(&pce, &bad, n), "a, b, c of a broken witness");
    let host_first = match pce.check_witness(&bad) {
        Ok(()) => ALL_SATISFIED,
        Err(SynthError::Unsatisfied { index, .. }) => index as u32,
        Err(e) => panic!("host check: {e}"),
    };
    assert_eq!(failing, host_first, "first failing row (seed {seed})");
}

fn check_gather(seed: u64, len: usize, density: f64) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let src: Vec<FrRepr> = (0..len).map(|_| Scalar::random(&mut rng).into()).collect();
    let mut bits = Bitmap::new(len);
    for i in 0..len {
        if rng.gen_bool(density) {
            bits.set(i);
        }
    }
    let expected: Vec<FrRepr> = bits.iter_ones().map(|i| src[i]).collect();
    let stream = prover().device().new_stream().unwrap();
    let map = DeviceBitmap::upload(&stream, bits.words(), len).unwrap();
    assert_eq!(map.ones(), expected.len());
    let mut padded = src.clone();
    padded.push(FrRepr::default());
    let src_dev = stream.upload(&padded).unwrap();
    let mut out = stream.alloc::<FrRepr>(expected.len() + 1).unwrap();
    sparse::gather(
        &stream,
        &src_dev.slice(..len),
        &map,
        &mut out.slice_mut(..expected.len()),
    )
    .unwrap();
    let got = stream.download(&out).unwrap();
    assert_eq!(
        got[..expected.len()],
        expected[..],
        "gathered (seed {seed}, len {len})"
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, .. ProptestConfig::default() })]

    #[test]
    #[ignore = "needs a CUDA GPU"]
    fn gpu_device_abc_equals_the_host_evaluation(
        seed in any::<u64>(),
        size in 1usize..400,
        extra in 0usize..70,
    ) {
        check_evaluation(seed, size, extra);
    }

    #[test]
    #[ignore = "needs a CUDA GPU"]
    fn gpu_device_gather_keeps_the_selected_elements_in_order(
        seed in any::<u64>(),
        len in 0usize..5000,
        density in prop_oneof![Just(0.0), Just(1.0), 0.0f64..1.0],
    ) {
        check_gather(seed, len, density);
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_device_abc_of_large_random_circuits_and_word_edges() {
    // Several grid-stride rounds, and bitmaps whose length is at and around word edges.
    for (seed, size) in [(1u64, 20_000usize), (2, 70_000)] {
        check_evaluation(seed, size, 123);
    }
    for len in [1, 63, 64, 65, 127, 128, 129, 1 << 20] {
        check_gather(len as u64, len, 0.5);
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_sparse_uploads_refuse_out_of_range_indices() {
    let stream = prover().device().new_stream().unwrap();
    let table = reprs(&[Scalar::ONE, -Scalar::ONE]);
    let bad_col = DeviceCsr::upload(&stream, &[0, 2], &[0, 3], &[0, 1], &table, 3);
    assert!(
        matches!(
            bad_col,
            Err(cuzk_cuda::CudaError::IndexOutOfRange {
                what: "column of entry",
                index: 1,
                ..
            })
        ),
        "got {bad_col:?}"
    );
    let bad_coeff = DeviceCsr::upload(&stream, &[0, 1], &[0], &[2], &table, 1);
    assert!(matches!(
        bad_coeff,
        Err(cuzk_cuda::CudaError::IndexOutOfRange { .. })
    ));
    let bad_ptr = DeviceCsr::upload(&stream, &[0, 5], &[0], &[0], &table, 1);
    assert!(matches!(
        bad_ptr,
        Err(cuzk_cuda::CudaError::IndexOutOfRange { .. })
    ));
    let stray_bit = DeviceBitmap::upload(&stream, &[1 << 10], 10);
    assert!(matches!(
        stray_bit,
        Err(cuzk_cuda::CudaError::IndexOutOfRange { .. })
    ));
}

/// One circuit ready for proofs.
struct Case {
    pce: Pce,
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
    Case {
        bp_pvk: bp::prepare_verifying_key(&vk_to_bellperson(&params.vk)),
        witness: synthesize_witness(circuit).expect("witness"),
        pce,
        params: Arc::new(PreparedParameters::from(params)),
        inputs,
    }
}

/// Proves `c` evaluating on the device and on the CPU with the same fresh r, s: equal, and
/// accepted by bellperson. The witness as synthesized, then packed (as a native generator
/// makes it) on the device path and on the host path.
fn check_proof(prover: &GpuProver, c: &Case, rng: &mut ChaCha8Rng) {
    let params = prover.load(c.params.clone()).unwrap();
    assert!(params.is_resident());
    let density = c.pce.density();
    let dpce = Arc::new(prover.place_pce(&c.pce, &density).unwrap());
    assert_eq!(
        Some(dpce.bytes()),
        DevicePce::bytes_for(&c.pce),
        "planned bytes"
    );
    let packed = Witness {
        inputs: c.witness.inputs.clone(),
        aux: Vec::new(),
        packed: Some(Box::new(PackedAux::from_values(&c.witness.aux))),
    };
    for (witness, on_device) in [(&c.witness, true), (&packed, true), (&packed, false)] {
        let (r, s) = (Scalar::random(&mut *rng), Scalar::random(&mut *rng));
        let mut prepared = prover
            .prepare_with(
                &params,
                &c.pce,
                &density,
                on_device.then_some(&dpce),
                witness,
            )
            .unwrap();
        assert_eq!(prepared.evaluates_on_device(), on_device);
        let (gpu, timings) = prover.prove_prepared(&params, &mut prepared, r, s).unwrap();
        assert_eq!(timings.eval_on_device, on_device);
        assert!(!on_device || timings.eval_ms > 0.0);
        let cpu = prove(&c.params, &c.pce, witness, r, s).unwrap();
        assert_eq!(
            gpu, cpu,
            "device-evaluated proof differs from the CPU reference"
        );
        assert!(
            bp::verify_proof(&c.bp_pvk, &proof_to_bellperson(&gpu), &c.inputs).unwrap(),
            "bellperson rejects the device-evaluated proof"
        );
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_proofs_evaluated_on_the_device_equal_the_cpu_reference() {
    let prover = prover();
    let mut rng = ChaCha8Rng::seed_from_u64(rand::random());
    for k in 0..12 {
        let size = if k % 4 == 3 {
            rng.gen_range(2000..6000)
        } else {
            rng.gen_range(1..200)
        };
        let raw = RandomCircuit::new(rng.gen(), size);
        let inputs = raw.public_inputs().to_vec();
        check_proof(prover, &case(Keyed::new(raw), inputs, rng.gen()), &mut rng);
    }
    let sha = Sha256Preimage::with_approx_constraints(40_000, rand::random());
    let inputs = sha.public_inputs();
    check_proof(prover, &case(sha, inputs, 1), &mut rng);
    let porep = SyntheticPoRep::new((1 << 16) - 2, rand::random());
    let inputs = porep.public_inputs();
    check_proof(prover, &case(porep, inputs, 2), &mut rng);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_device_evaluation_names_the_first_failing_row_as_the_host_does() {
    let prover = prover();
    let raw = RandomCircuit::new(rand::random(), 300);
    let inputs = raw.public_inputs().to_vec();
    let c = case(Keyed::new(raw), inputs, 9);
    let params = prover.load(c.params.clone()).unwrap();
    let density = c.pce.density();
    let dpce = Arc::new(prover.place_pce(&c.pce, &density).unwrap());
    let mut bad = c.witness.clone();
    for x in bad.aux.iter_mut() {
        *x += Scalar::ONE;
    }
    // The host checks while preparing, the device during the proof.
    let row = |on_device: bool| -> usize {
        let proved = prover
            .prepare_with(&params, &c.pce, &density, on_device.then_some(&dpce), &bad)
            .and_then(|mut prepared| {
                assert_eq!(prepared.evaluates_on_device(), on_device);
                prover.prove_prepared(&params, &mut prepared, Scalar::ONE, Scalar::ONE)
            });
        match proved.as_ref().map_err(|e| e.groth16()) {
            Err(Some(cuzk_groth16::Error::Unsatisfied { row })) => *row,
            other => panic!("expected an unsatisfied row, got {other:?}"),
        }
    };
    assert_eq!(row(true), row(false));
    // The device is fine afterwards: the honest witness proves.
    let mut rng = ChaCha8Rng::seed_from_u64(rand::random());
    check_proof(prover, &c, &mut rng);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_a_budget_too_small_for_the_device_pce_refuses_it_and_the_host_path_proves() {
    let porep = SyntheticPoRep::new((1 << 14) - 2, rand::random());
    let c = case(porep, porep.public_inputs(), 3);
    let bytes = DevicePce::bytes_for(&c.pce).unwrap();
    let budget = Budget::new("vram 0 (test)", bytes - 1);
    let prover = GpuProver::new(
        &device(),
        GpuProverConfig {
            budget: Some(budget.clone()),
            ..GpuProverConfig::default()
        },
    )
    .unwrap();
    let density = c.pce.density();
    let refused = prover.place_pce(&c.pce, &density);
    assert!(
        matches!(&refused, Err(cuzk_prover::Error::Budget(_))),
        "got {refused:?}"
    );
    assert_eq!(budget.used(), 0, "nothing stays reserved");
}
