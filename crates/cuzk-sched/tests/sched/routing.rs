//! Devices: every job is pinned to one device for its whole life, new jobs go to the least
//! loaded device, one device's backlog does not hold another back, and what a backend
//! prepares on the synthesis workers reaches a lane of the device it was prepared for.

use crate::common::*;
use cuzk_groth16::{prepare_verifying_key, verify_proof, Proof};
use cuzk_sched::plugin::{
    Backend, BackendError, EvictReport, Lane, LaneLayout, LoadReport, PrepareInput, ProveInput,
    ProvePreparedInput, Setup, Shape,
};
use cuzk_sched::{CpuBackend, JobOutput, Request, SchedulerConfig};
use cuzk_synth::Witness;
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The devices a job's partitions were proved on.
fn devices_of(out: &JobOutput) -> BTreeSet<usize> {
    out.timings
        .partitions
        .iter()
        .map(|p| p.lane.device)
        .collect()
}

#[test]
fn every_job_stays_on_one_device_and_both_devices_work() {
    let backend = Arc::new(CpuBackend::with_lanes(2, 2));
    let s = start(
        backend,
        registry(vec![]),
        BIG_BUDGET,
        SchedulerConfig::default(),
    );
    let handles: Vec<_> = (0..6)
        .map(|seed| {
            s.submit(Request::synthetic_porep(LOG2, seed * 10, 3))
                .unwrap()
        })
        .collect();
    let ids: Vec<_> = handles.iter().map(|h| h.id()).collect();
    let outputs: Vec<JobOutput> = handles
        .into_iter()
        .map(|h| h.wait_blocking().unwrap())
        .collect();
    let mut used = BTreeSet::new();
    for (out, id) in outputs.iter().zip(ids) {
        let devices = devices_of(out);
        assert_eq!(devices.len(), 1, "{id} was proved on devices {devices:?}");
        let device = *devices.first().unwrap();
        assert_eq!(s.status(id).unwrap().device, Some(device));
        used.insert(device);
    }
    assert_eq!(used, BTreeSet::from([0, 1]), "both devices proved jobs");
    let m = s.metrics();
    assert!(m.lanes.iter().all(|l| l.job.is_none()));
    assert!(m.devices.is_empty(), "the CPU backend reports no devices");
}

/// The CPU backend, with every proof taking at least `delay`.
#[derive(Debug)]
struct Slow {
    cpu: CpuBackend,
    delay: Duration,
}

impl Backend for Slow {
    type Prepared = ();

    fn name(&self) -> &str {
        "slow-cpu"
    }

    fn lanes(&self) -> LaneLayout {
        self.cpu.lanes()
    }

    fn prove(&self, lane: Lane, input: &ProveInput<'_>) -> Result<Proof, BackendError> {
        std::thread::sleep(self.delay);
        self.cpu.prove(lane, input)
    }
}

#[test]
fn one_devices_backlog_does_not_hold_another_back() {
    let backend = Arc::new(Slow {
        cpu: CpuBackend::with_lanes(2, 1),
        delay: Duration::from_millis(100),
    });
    let s = start(
        backend,
        registry(vec![]),
        BIG_BUDGET,
        SchedulerConfig::default(),
    );
    // Set up first, so both jobs start at once.
    s.prove_blocking(Request::synthetic_porep(LOG2, 0, 1))
        .unwrap();
    let long = s.submit(Request::synthetic_porep(LOG2, 100, 8)).unwrap();
    let short = s.submit(Request::synthetic_porep(LOG2, 200, 1)).unwrap();
    let long_id = long.id();
    let out = short.wait_blocking().unwrap();
    let proved = s.status(long_id).unwrap().partitions_proved;
    assert!(
        proved <= 4,
        "the one-partition job waited for {proved} of the other job's 8 proofs"
    );
    let long = long.wait_blocking().unwrap();
    assert_ne!(devices_of(&out), devices_of(&long));
}

/// What [`Preparing`] makes on a synthesis worker.
#[derive(Debug)]
struct Made {
    /// The device it was prepared for.
    device: usize,
    witness: Witness,
    thread: String,
}

/// The CPU backend with a prepare step that records where it ran, and checks that the lane
/// proving the result belongs to the device it was prepared for.
#[derive(Debug)]
struct Preparing {
    cpu: CpuBackend,
    prepared: AtomicUsize,
    plain_proofs: AtomicUsize,
    /// (device prepared for, lane's device, thread that prepared).
    seen: Mutex<Vec<(usize, usize, String)>>,
}

impl Preparing {
    /// Over the CPU backend with `devices` × `workers` lanes, nothing counted yet.
    fn new(devices: usize, workers: usize) -> Preparing {
        Preparing {
            cpu: CpuBackend::with_lanes(devices, workers),
            prepared: AtomicUsize::new(0),
            plain_proofs: AtomicUsize::new(0),
            seen: Mutex::new(Vec::new()),
        }
    }
}

impl Backend for Preparing {
    type Prepared = Made;

    fn name(&self) -> &str {
        "preparing-cpu"
    }

    fn lanes(&self) -> LaneLayout {
        self.cpu.lanes()
    }

    fn prove(&self, lane: Lane, input: &ProveInput<'_>) -> Result<Proof, BackendError> {
        self.plain_proofs.fetch_add(1, Ordering::SeqCst);
        self.cpu.prove(lane, input)
    }

    fn prepare(
        &self,
        device: usize,
        input: &PrepareInput<'_>,
    ) -> Result<Option<Made>, BackendError> {
        self.prepared.fetch_add(1, Ordering::SeqCst);
        let thread = std::thread::current().name().unwrap_or("").to_string();
        Ok(Some(Made {
            device,
            witness: input.witness.clone(),
            thread,
        }))
    }

    fn prove_prepared(
        &self,
        lane: Lane,
        input: &ProvePreparedInput<'_>,
        made: Made,
    ) -> Result<Proof, BackendError> {
        let device = made.device;
        self.seen
            .lock()
            .unwrap()
            .push((device, lane.device, made.thread));
        let plain = ProveInput {
            circuit_key: input.circuit_key,
            params: input.params,
            pce: input.pce,
            witness: &made.witness,
            r: input.r,
            s: input.s,
        };
        self.cpu.prove(lane, &plain)
    }

    fn load(&self, _setup: &Setup, _pin: bool) -> Result<LoadReport, BackendError> {
        Ok(LoadReport {
            devices: 2,
            ..LoadReport::default()
        })
    }

    fn evict(&self, _circuit_key: &str) -> EvictReport {
        EvictReport {
            was_loaded: true,
            freed_bytes: 7,
        }
    }
}

#[test]
fn prepared_partitions_reach_a_lane_of_their_device() {
    let backend = Arc::new(Preparing::new(2, 2));
    let s = start(
        Arc::clone(&backend) as Arc<dyn cuzk_sched::plugin::AnyBackend>,
        registry(vec![]),
        BIG_BUDGET,
        SchedulerConfig::default(),
    );
    let outputs: Vec<JobOutput> = (0..5)
        .map(|seed| {
            s.submit(Request::synthetic_porep(LOG2, seed * 10, 2))
                .unwrap()
        })
        .collect::<Vec<_>>()
        .into_iter()
        .map(|h| h.wait_blocking().unwrap())
        .collect();
    let pvk = prepare_verifying_key(&s.registry().cached("synthetic-porep-256").unwrap().vk);
    for out in &outputs {
        assert_eq!(devices_of(out).len(), 1);
        for (proof, inputs) in out.proofs.iter().zip(&out.public_inputs) {
            assert!(verify_proof(&pvk, proof, inputs).unwrap());
        }
    }
    assert_eq!(backend.prepared.load(Ordering::SeqCst), 10);
    assert_eq!(backend.plain_proofs.load(Ordering::SeqCst), 0);
    let seen = backend.seen.lock().unwrap();
    assert_eq!(seen.len(), 10);
    for (prepared_for, proved_on, thread) in seen.iter() {
        assert_eq!(prepared_for, proved_on);
        assert!(thread.starts_with("cuzk-synth-"), "prepared on {thread:?}");
    }
}

#[test]
fn prepared_witnesses_lend_their_memory_to_the_next_and_give_it_back_when_idle() {
    let backend = Arc::new(Preparing::new(1, 2));
    // Room for about three partitions at a time: spares must share the budget with them.
    let one = Shape {
        constraints: 1 << LOG2,
        inputs: 2,
        aux: 1 << LOG2,
    }
    .cpu_prover_bytes();
    let s = start(
        Arc::clone(&backend) as Arc<dyn cuzk_sched::plugin::AnyBackend>,
        registry(vec![]),
        3 * one + one / 2,
        SchedulerConfig {
            synthesis_workers: Some(2),
            lookahead: Some(4),
            ..SchedulerConfig::default()
        },
    );
    let handles: Vec<_> = (0..6)
        .map(|seed| {
            s.submit(Request::synthetic_porep(LOG2, seed * 10 + 1, 3))
                .unwrap()
        })
        .collect();
    for h in handles {
        let out = h.wait_blocking().unwrap();
        let pvk = prepare_verifying_key(&out.verifying_key);
        for (proof, inputs) in out.proofs.iter().zip(&out.public_inputs) {
            assert!(verify_proof(&pvk, proof, inputs).unwrap());
        }
    }
    assert_eq!(backend.prepared.load(Ordering::SeqCst), 18);
    assert!(s.budget().high_water() <= s.budget().capacity());
    // Idle: no spare keeps memory.
    wait_until("memory to be released", || {
        s.budget().used() == s.registry().setup_bytes_held()
    });
}

#[test]
fn preload_and_evict_go_through_the_backend_and_the_cache() {
    let backend = Arc::new(Preparing::new(2, 1));
    let s = start(
        backend,
        registry(vec![]),
        BIG_BUDGET,
        SchedulerConfig::default(),
    );
    let report = s.preload_key("synthetic-porep-254", true).unwrap();
    assert!(!report.was_cached);
    assert_eq!(report.load.devices, 2);
    assert_eq!(s.registry().cached_keys(), ["synthetic-porep-254"]);
    assert!(
        s.preload_key("synthetic-porep-254", true)
            .unwrap()
            .was_cached
    );
    assert!(s.preload_key("no-such-circuit-1", true).is_err());

    let evicted = s.evict("synthetic-porep-254");
    assert!(evicted.was_loaded);
    assert!(evicted.freed_bytes > 7, "host parameters counted too");
    assert!(s.registry().cached_keys().is_empty());
    // The next job sets the circuit up again.
    let inputs = cuzk_sched::Inputs::default().with_field("num_constraints", 254);
    let out = s
        .prove_blocking(Request::new("synthetic-porep", inputs))
        .unwrap();
    assert_eq!(out.circuit_key, "synthetic-porep-254");
}

/// A kind with one public preload id, `tiny`: the 254-constraint synthetic circuit.
struct Tiny;

impl cuzk_sched::plugin::CircuitKind for Tiny {
    fn name(&self) -> &str {
        "tiny-kind"
    }

    fn parse(
        &self,
        inputs: &cuzk_sched::Inputs,
    ) -> Result<Arc<dyn cuzk_sched::plugin::Instance>, cuzk_sched::plugin::InputError> {
        cuzk_sched::SyntheticPoRepKind::default().parse(inputs)
    }

    fn instance_for_key(&self, id: &str) -> Option<Arc<dyn cuzk_sched::plugin::Instance>> {
        (id == "tiny").then(|| {
            cuzk_sched::SyntheticPoRepKind::default()
                .instance_for_key("synthetic-porep-254")
                .unwrap()
        })
    }

    fn preload_ids(&self) -> Vec<String> {
        vec!["tiny".into()]
    }

    fn public_id(&self, circuit_key: &str) -> Option<String> {
        (circuit_key == "synthetic-porep-254").then(|| "tiny".into())
    }
}

#[test]
fn preload_named_takes_public_trusted_and_cached_circuits_only() {
    let mut registry = registry(vec![]);
    registry.register(Arc::new(Tiny)).unwrap();
    let s = start(cpu(), registry, BIG_BUDGET, SchedulerConfig::default());
    // A key of any size names a circuit, but not one a caller may have set up.
    let err = s.preload_named("synthetic-porep-100000", true).unwrap_err();
    match &err {
        cuzk_sched::PreloadError::NotPreloadable { id, public, .. } => {
            assert_eq!(id, "synthetic-porep-100000");
            assert_eq!(public, &["tiny"]);
        }
        other => panic!("{other:?}"),
    }
    assert!(s.registry().cached_keys().is_empty(), "nothing set up");

    // A public id: set up with its memory reserved meanwhile, then reported by that id.
    let report = s.preload_named("tiny", true).unwrap();
    assert!(!report.was_cached);
    assert_eq!(report.circuit_key, "synthetic-porep-254");
    let estimate = Shape {
        constraints: 254,
        inputs: 2,
        aux: 254,
    }
    .setup_bytes();
    assert!(s.budget().high_water() >= estimate, "reserved while set up");
    // Once cached, the setup holds its own bytes of the budget, not the estimate.
    let held = s.registry().setup_bytes_held();
    assert!(held > 0 && held < estimate, "{held} of {estimate}");
    assert_eq!(s.budget().used(), held);
    assert_eq!(s.registry().public_id("synthetic-porep-254"), "tiny");
    assert_eq!(
        s.registry().public_id("synthetic-porep-62"),
        "synthetic-porep-62"
    );
    // The configuration may name it by that id too, without inputs.
    let none = cuzk_sched::Inputs::default();
    assert!(s.preload("tiny", &none, true).unwrap().was_cached);
    let inputs = none.clone().with_field("num_constraints", 254);
    assert!(s.preload("no-such-kind", &none, true).is_err());
    assert!(
        s.preload("tiny", &inputs, true).is_err(),
        "an id takes no inputs"
    );

    // Preloaded by kind and inputs (the daemon's configuration): by its key again, also
    // after an eviction.
    let inputs = cuzk_sched::Inputs::default().with_field("num_constraints", 126);
    s.preload("synthetic-porep", &inputs, true).unwrap();
    assert!(s.evict("synthetic-porep-126").was_loaded);
    assert!(
        !s.preload_named("synthetic-porep-126", true)
            .unwrap()
            .was_cached
    );

    // Set up by a job: preloadable while cached, not once evicted.
    let inputs = cuzk_sched::Inputs::default().with_field("num_constraints", 62);
    s.prove_blocking(Request::new("synthetic-porep", inputs))
        .unwrap();
    assert!(
        s.preload_named("synthetic-porep-62", true)
            .unwrap()
            .was_cached
    );
    // A setup made by a job holds its bytes too, until evicted.
    let with_62 = s.registry().setup_bytes_held();
    s.evict("synthetic-porep-62");
    assert!(s.registry().setup_bytes_held() < with_62);
    assert_eq!(s.budget().used(), s.registry().setup_bytes_held());
    let err = s.preload_named("synthetic-porep-62", true).unwrap_err();
    assert!(err.to_string().contains("synthetic-porep-126"), "{err}");

    // A setup the budget cannot hold is refused, naming the budget.
    let small = start(
        cpu(),
        registry_with_tiny(),
        4096,
        SchedulerConfig::default(),
    );
    let err = small.preload_named("tiny", true).unwrap_err();
    assert!(
        matches!(err, cuzk_sched::PreloadError::Memory { .. }),
        "{err:?}"
    );
    assert!(err.to_string().contains("budget test"), "{err}");
    assert!(small.registry().cached_keys().is_empty());
}

fn registry_with_tiny() -> cuzk_sched::Registry {
    let mut registry = registry(vec![]);
    registry.register(Arc::new(Tiny)).unwrap();
    registry
}

/// A preloaded setup's share of the budget always leaves room for one of its circuit's
/// partitions, so its jobs run even when the setup alone nearly fills the budget; a circuit
/// whose partition no longer fits beside other circuits' setups is refused at submission.
#[test]
fn cached_setups_hold_their_bytes_but_never_starve_their_own_jobs() {
    let shape = Shape {
        constraints: 254,
        inputs: 2,
        aux: 254,
    };
    let partition = cpu().partition_bytes(&shape);
    // The setup's own bytes, from a roomy budget.
    let roomy = start(
        cpu(),
        registry_with_tiny(),
        BIG_BUDGET,
        SchedulerConfig::default(),
    );
    roomy.preload_named("tiny", true).unwrap();
    let actual = roomy.registry().setup_bytes_held();
    assert!(actual > 0);
    drop(roomy);

    // A budget in which the setup and one partition do not both fit.
    let capacity = shape.setup_bytes().max(partition + actual / 2);
    assert!(actual + partition > capacity);
    let s = start(
        cpu(),
        registry_with_tiny(),
        capacity,
        SchedulerConfig::default(),
    );
    s.preload_named("tiny", true).unwrap();
    let held = s.registry().setup_bytes_held();
    assert!(
        held > 0 && held <= capacity - partition,
        "{held} of {capacity}"
    );
    let inputs = cuzk_sched::Inputs::default().with_field("num_constraints", 254);
    let out = s
        .prove_blocking(Request::new("synthetic-porep", inputs))
        .unwrap();
    assert_eq!(out.circuit_key, "synthetic-porep-254");
    assert_eq!(s.budget().used(), s.registry().setup_bytes_held());

    // Another circuit whose partition needs more than the setup leaves: refused, naming it.
    let big = cuzk_sched::Inputs::default().with_field("num_constraints", 1 << 16);
    match s.submit(Request::new("synthetic-porep", big)) {
        Err(cuzk_sched::SubmitError::TooLarge { capacity: left, .. }) => {
            assert_eq!(left, capacity - held)
        }
        other => panic!("expected TooLarge, got {:?}", other.map(|h| h.id())),
    }
}

#[test]
fn evictions_racing_jobs_leave_no_share_held_and_no_setup_made_twice() {
    let s = Arc::new(start(
        cpu(),
        registry(vec![]),
        BIG_BUDGET,
        SchedulerConfig::default(),
    ));
    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let evictor = {
        let (s, done) = (Arc::clone(&s), Arc::clone(&done));
        std::thread::spawn(move || {
            let mut evicted = 0;
            while !done.load(Ordering::SeqCst) {
                if s.evict("synthetic-porep-256").was_loaded {
                    evicted += 1;
                }
                std::thread::yield_now();
            }
            evicted
        })
    };
    let provers: Vec<_> = (0..2)
        .map(|t| {
            let s = Arc::clone(&s);
            std::thread::spawn(move || {
                for seed in 0..12 {
                    let out = s
                        .prove_blocking(Request::synthetic_porep(LOG2, t * 100 + seed, 1))
                        .unwrap();
                    let pvk = prepare_verifying_key(&out.verifying_key);
                    assert!(verify_proof(&pvk, &out.proofs[0], &out.public_inputs[0]).unwrap());
                }
            })
        })
        .collect();
    for p in provers {
        p.join().unwrap();
    }
    done.store(true, Ordering::SeqCst);
    let evicted = evictor.join().unwrap();
    assert!(evicted > 0, "the evictions raced nothing");
    s.evict("synthetic-porep-256");
    assert!(s.registry().cached_keys().is_empty());
    // Once idle and evicted, no setup's share of the budget is left behind.
    wait_until("the budget to empty", || {
        s.budget().used() == 0 && s.registry().setup_bytes_held() == 0
    });
}
