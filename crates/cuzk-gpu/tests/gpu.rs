//! The CUDA backend under the real scheduler, on real GPUs: two lanes sharing a tight VRAM
//! budget, an injected allocation fault that fails one job alone, jobs pinned to their
//! device (both devices used where there are two), parameters generated on the GPU, kept
//! resident, preloaded, evicted and evicted when idle; the PCE on the device when the
//! budget holds it. Every proof is verified by the
//! scheduler and again here. One test binary for the whole crate (the bundle needs that).

use cuzk_cuda::Device;
use cuzk_gpu::sizes::{self, Queries};
use cuzk_gpu::{FaultPlan, GpuBackend, GpuConfig, ParamgenChoice};
use cuzk_groth16::{prepare_verifying_key, verify_proof};
use cuzk_mem::{Budget, DriverSampler, VramPolicy};
use cuzk_plugin::{AnyBackend, BackendError, Inputs};
use cuzk_prover::Residency;
use cuzk_sched::{JobError, JobOutput, ProveError, Registry, Request, Scheduler, SchedulerConfig};
use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

const GIB: u64 = 1 << 30;

/// Host memory the scheduler may reserve in these tests.
const HOST_BUDGET: u64 = 32 * GIB;

/// Pinned pool per device in these tests.
const PINNED: u64 = 8 * GIB;

/// A configuration for these tests: the given devices and lanes, a small pinned pool, and
/// parameters from the CPU generator unless a test wants the GPU one.
fn config(devices: Vec<usize>, workers: usize) -> GpuConfig {
    GpuConfig {
        devices,
        workers_per_device: workers,
        pinned_bytes: Some(PINNED),
        paramgen: ParamgenChoice::Cpu,
        ..GpuConfig::default()
    }
}

fn start(config: GpuConfig) -> (Scheduler, Arc<GpuBackend>) {
    let backend = Arc::new(GpuBackend::new(config).expect("a CUDA device (this test needs a GPU)"));
    let scheduler = Scheduler::start(
        SchedulerConfig::default(),
        Arc::clone(&backend) as Arc<dyn AnyBackend>,
        Registry::with_builtins(),
        Budget::new("host (test)", HOST_BUDGET),
    )
    .unwrap();
    (scheduler, backend)
}

/// A synthetic PoRep-shaped request filling a domain of exactly 2^`log_n`.
fn porep(log_n: u32, seed: u64, partitions: u64) -> Request {
    let inputs = Inputs::default()
        .with_field("num_constraints", (1 << log_n) - 2)
        .with_field("seed", seed)
        .with_field("partitions", partitions);
    Request::new("synthetic-porep", inputs)
}

/// Checks every proof of `out` with the verifying key of its circuit, independently of the
/// scheduler's own check.
fn verify(s: &Scheduler, out: &JobOutput) {
    assert!(out.verified, "the scheduler verified the proofs");
    let setup = s.registry().cached(&out.circuit_key).expect("set up");
    let pvk = prepare_verifying_key(&setup.vk);
    for (proof, inputs) in out.proofs.iter().zip(&out.public_inputs) {
        assert!(
            verify_proof(&pvk, proof, inputs).unwrap(),
            "a proof does not verify"
        );
    }
}

fn devices_of(out: &JobOutput) -> BTreeSet<usize> {
    out.timings
        .partitions
        .iter()
        .map(|p| p.lane.device)
        .collect()
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_two_lanes_share_a_budget_that_fits_one_upload_and_one_compute() {
    let log_n = 18;
    let n = 1u64 << log_n;
    let msm = 512u64 << 20;
    // Learn the circuit's query sizes from its parameters (made on the CPU, outside the
    // scheduler), then size the budget: the parameters, one proof's working set, and one
    // more upload of a, b, c; a second proof's full working set does not fit.
    let pce = cuzk_circuits::SyntheticPoRep::new((n - 2) as usize, 0).pce();
    let params = cuzk_groth16::generate_parameters(&pce, &mut rand::rngs::OsRng).unwrap();
    let queries = Queries::of(&cuzk_groth16::PreparedParameters::from(&params));
    let working_set = sizes::resident_working_set(n, msm);
    let capacity = queries.resident_bytes() + working_set + 3 * 32 * n;
    assert!(capacity < queries.resident_bytes() + 2 * working_set);

    let (s, backend) = start(GpuConfig {
        vram: VramPolicy::Fixed(capacity),
        msm_vram: Some(msm),
        residency: Residency::Resident,
        ..config(vec![0], 2)
    });
    s.registry()
        .supply_parameters(format!("synthetic-porep-{}", n - 2), params);
    let vram = backend.vram_budgets()[0].clone();
    assert_eq!(vram.capacity(), capacity);
    let device = Device::open(0).unwrap();
    // The baseline has the contexts, kernels and lanes' streams; everything above it is
    // parameters and proofs, which the budget must bound.
    let sampler = DriverSampler::start(&device, Duration::from_millis(2)).unwrap();
    let handles: Vec<_> = (0..6)
        .map(|seed| s.submit(porep(log_n, seed * 100, 1)).unwrap())
        .collect();
    let outputs: Vec<JobOutput> = handles
        .into_iter()
        .map(|h| h.wait_blocking().expect("every job succeeds"))
        .collect();
    let report = sampler.stop().unwrap();
    for out in &outputs {
        verify(&s, out);
    }
    let m = s.metrics();
    let lanes_used = m.lanes.iter().filter(|l| l.proofs > 0).count();
    assert_eq!(lanes_used, 2, "both lanes proved: {:?}", m.lanes);
    assert!(
        vram.high_water() <= capacity,
        "ledger high water {} above the budget {capacity}",
        vram.high_water()
    );
    let slack = 512u64 << 20;
    let gained = report.peak_above_baseline();
    assert!(
        gained <= capacity + slack,
        "the driver saw {gained} bytes above the baseline; budget {capacity} + slack {slack}"
    );
    let stats = &m.devices[0];
    assert_eq!(stats.proofs, 6);
    assert!(stats.busy > Duration::ZERO && stats.occupied >= stats.busy / 2);
    assert!(stats.parameters.iter().any(|p| p.resident));
    eprintln!(
        "two lanes, budget {capacity} B: ledger high water {} B, driver peak +{gained} B, busy {:?} in {:?} occupied",
        vram.high_water(),
        stats.busy,
        stats.occupied
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_injected_allocation_fault_fails_one_job_alone() {
    let (s, _backend) = start(GpuConfig {
        faults: FaultPlan::parse("1").unwrap(),
        ..config(vec![0], 1)
    });
    let failed = s.prove_blocking(porep(12, 1, 1)).unwrap_err();
    let ProveError::Job(JobError::Prove { source, .. }) = &failed else {
        panic!("expected a proving failure, got {failed}");
    };
    assert!(matches!(source, BackendError::Device { device: 0, .. }));
    let text = failed.to_string();
    assert!(
        text.contains("GPU allocation failed") && text.contains("CUZK_TEST_FAIL_GPU_ALLOC"),
        "{text}"
    );
    let out = s
        .prove_blocking(porep(12, 2, 2))
        .expect("the next job succeeds");
    verify(&s, &out);
    let m = s.metrics();
    assert_eq!((m.jobs.failed, m.jobs.succeeded), (1, 1));
    assert_eq!((m.devices[0].failures, m.devices[0].proofs), (1, 2));
    eprintln!("the injected fault read: {text}");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_jobs_stay_on_their_device() {
    let count = cuzk_cuda::device_count().expect("a CUDA driver");
    let (s, backend) = start(config(Vec::new(), 1));
    assert_eq!(backend.ordinals().len(), count);
    let handles: Vec<_> = (0..8)
        .map(|seed| s.submit(porep(14, seed * 10, 3)).unwrap())
        .collect();
    let mut used = BTreeSet::new();
    for h in handles {
        let id = h.id();
        let out = h.wait_blocking().unwrap();
        verify(&s, &out);
        let devices = devices_of(&out);
        assert_eq!(devices.len(), 1, "{id} was proved on devices {devices:?}");
        assert_eq!(s.status(id).unwrap().device, devices.first().copied());
        used.extend(devices);
    }
    let m = s.metrics();
    if count >= 2 {
        assert_eq!(used.len(), count, "every device proved jobs: {used:?}");
        for d in &m.devices {
            assert!(d.proofs > 0, "device {} made no proof", d.ordinal);
        }
        eprintln!("{count} devices: every job stayed on one device; all devices used");
    } else {
        assert_eq!(used, BTreeSet::from([0]));
        eprintln!(
            "NOTE: only one CUDA device here: checked that all 8 jobs (3 partitions each) stayed \
             on device 0; the both-devices-used part needs a host with two GPUs"
        );
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_parameters_generated_on_the_gpu_stay_resident_until_evicted() {
    let (s, _backend) = start(GpuConfig {
        paramgen: ParamgenChoice::Auto,
        idle_evict: Some(Duration::from_millis(300)),
        ..config(vec![0], 2)
    });
    let out = s.prove_blocking(porep(16, 1, 2)).unwrap();
    verify(&s, &out);
    let key = out.circuit_key.clone();
    let setup = s.registry().cached(&key).unwrap();
    assert_eq!(setup.generator, "gpu", "parameters made on the GPU");
    let resident = |s: &Scheduler| -> Vec<(String, bool, bool)> {
        s.metrics().devices[0]
            .parameters
            .iter()
            .map(|p| (p.circuit_key.clone(), p.resident, p.pinned))
            .collect()
    };
    assert_eq!(resident(&s), [(key.clone(), true, false)]);

    // Unpinned and unused: the idle sweep frees them.
    std::thread::sleep(Duration::from_millis(1500));
    assert!(resident(&s).is_empty(), "idle parameters evicted");

    // Preloaded parameters are pinned: the sweep leaves them.
    let report = s.preload_key(&key, true).unwrap();
    assert!(report.was_cached && report.load.resident);
    std::thread::sleep(Duration::from_millis(1000));
    assert_eq!(resident(&s), [(key.clone(), true, true)]);
    let out = s.prove_blocking(porep(16, 9, 1)).unwrap();
    verify(&s, &out);

    // Evicting frees the device copy and the host setup; the next job sets up again.
    let evicted = s.evict(&key);
    assert!(evicted.was_loaded && evicted.freed_bytes > 0);
    assert!(resident(&s).is_empty());
    assert!(s.registry().cached(&key).is_none());
    let out = s.prove_blocking(porep(16, 5, 1)).unwrap();
    verify(&s, &out);
    assert_eq!(resident(&s).len(), 1);
}

/// Parameters made again for a circuit whose parameters are placed (another cache generating
/// it, or its file removed and made again) replace the placed ones: each proof is made with
/// the parameters its call brings and verifies under their key.
#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_parameters_made_again_for_a_placed_circuit_replace_them() {
    use cuzk_field::Scalar;
    use cuzk_groth16::PreparedParameters;
    use cuzk_plugin::{Backend, Lane, ProveInput};

    let backend = GpuBackend::new(GpuConfig {
        paramgen: ParamgenChoice::Auto,
        ..config(vec![0], 1)
    })
    .expect("a CUDA device (this test needs a GPU)");
    // No generator in this registry: the setup's parameters are made on the CPU.
    let registry = Registry::with_builtins();
    let inputs = Inputs::default()
        .with_field("num_constraints", (1 << 14) - 2)
        .with_field("seed", 3);
    let instance = registry.parse("synthetic-porep", &inputs).unwrap();
    let (setup, _) = registry.setup(&*instance).unwrap();
    let key = setup.circuit_key.as_str();
    let witness = instance.synthesize(&setup.pce, 0).unwrap();
    let public = instance.public_inputs(0);

    // Made on the GPU for the same circuit and kept there under its key.
    let generator = Backend::parameter_generator(&backend).expect("a GPU generator");
    let made = Arc::new(PreparedParameters::from(
        generator.generate(key, &setup.pce).unwrap(),
    ));
    assert_ne!(made.vk(), setup.params.vk());
    let placed = |b: &GpuBackend| -> Vec<String> {
        Backend::device_stats(b)[0]
            .parameters
            .iter()
            .map(|p| p.circuit_key.clone())
            .collect()
    };
    assert_eq!(
        placed(&backend),
        [key],
        "the generated parameters stay placed"
    );

    for (round, params) in [&setup.params, &made, &setup.params]
        .into_iter()
        .enumerate()
    {
        let proof = Backend::prove(
            &backend,
            Lane {
                device: 0,
                worker: 0,
            },
            &ProveInput {
                circuit_key: key,
                params,
                pce: &setup.pce,
                witness: &witness,
                r: Scalar::from(7 + round as u64),
                s: Scalar::from(11 + round as u64),
            },
        )
        .unwrap();
        let pvk = prepare_verifying_key(params.vk());
        assert!(
            verify_proof(&pvk, &proof, &public).unwrap(),
            "round {round}: the proof is not made with the parameters the call brought"
        );
        assert_eq!(placed(&backend), [key], "one placement per circuit");
    }
}

/// A circuit's PCE goes on the device beside its resident parameters exactly when the budget
/// holds both and the larger working set (then its proofs evaluate a, b, c there); one byte
/// less, or `device_eval` off, and the host evaluates. Every proof verifies, and the driver
/// never sees more than the budget above its baseline.
#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_the_pce_goes_on_the_device_when_the_budget_holds_it_else_the_host_evaluates() {
    let log_n = 16;
    let n = 1u64 << log_n;
    let msm = 512u64 << 20;
    let pce = cuzk_circuits::SyntheticPoRep::new((n - 2) as usize, 0).pce();
    let params = cuzk_groth16::generate_parameters(&pce, &mut rand::rngs::OsRng).unwrap();
    let queries = Queries::of(&cuzk_groth16::PreparedParameters::from(&params));
    let pce_bytes = cuzk_prover::DevicePce::bytes_for(&pce).expect("fits 32-bit pointers");
    let extra = cuzk_prover::device_eval_bytes(
        pce.num_inputs,
        pce.num_aux,
        queries.a as usize,
        queries.b_g1 as usize,
    );
    let plain = queries.resident_bytes() + sizes::resident_working_set(n, msm);
    let evaluating = plain + pce_bytes + extra;
    let device = Device::open(0).unwrap();
    for (capacity, device_eval, on_device) in [
        (evaluating, true, true),
        (evaluating - 1, true, false),
        (evaluating + GIB, false, false),
    ] {
        let (s, backend) = start(GpuConfig {
            vram: VramPolicy::Fixed(capacity),
            msm_vram: Some(msm),
            residency: Residency::Resident,
            device_eval,
            ..config(vec![0], 1)
        });
        s.registry()
            .supply_parameters(format!("synthetic-porep-{}", n - 2), params.clone());
        let sampler = DriverSampler::start(&device, Duration::from_millis(2)).unwrap();
        for seed in 0..3 {
            let out = s
                .prove_blocking(porep(log_n, 7 + seed, 2))
                .expect("every job succeeds");
            verify(&s, &out);
        }
        let report = sampler.stop().unwrap();
        let m = s.metrics();
        let placed = &m.devices[0].parameters;
        assert!(
            placed
                .iter()
                .all(|p| p.resident && p.eval_on_device == on_device),
            "budget {capacity} (device_eval {device_eval}): {placed:?}"
        );
        let vram = backend.vram_budgets()[0].clone();
        assert!(vram.high_water() <= capacity);
        let gained = report.peak_above_baseline();
        let slack = 512u64 << 20;
        assert!(
            gained <= capacity + slack,
            "the driver saw {gained} bytes above the baseline; budget {capacity} + slack {slack}"
        );
        eprintln!(
            "budget {capacity} B, device_eval {device_eval}: on device {on_device}, ledger high water {} B, driver +{gained} B",
            vram.high_water()
        );
        drop(s);
    }
}
