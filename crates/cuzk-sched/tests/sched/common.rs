//! Test fixtures: small schedulers, kinds that wait, panic or count, and backends that
//! record, misbehave or count.

use cuzk_circuits::SyntheticPoRep;
use cuzk_field::Scalar;
use cuzk_groth16::Proof;
use cuzk_mem::Budget;
use cuzk_sched::plugin::{
    Backend, BackendError, CircuitKind, InputError, Instance, Lane, LaneLayout, ProveInput, Shape,
};
use cuzk_sched::{
    CpuBackend, Inputs, JobId, JobState, Registry, Scheduler, SchedulerConfig, SyntheticPoRepKind,
};
use cuzk_synth::{Pce, SynthError, Witness};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// log2 of the synthetic circuits most tests prove: tiny, so a proof takes milliseconds.
pub const LOG2: u32 = 8;

/// A generous budget for tests that are not about memory.
pub const BIG_BUDGET: u64 = 1 << 30;

/// A scheduler over `backend`, with a budget of `budget` bytes.
pub fn start(
    backend: Arc<dyn cuzk_sched::plugin::AnyBackend>,
    registry: Registry,
    budget: u64,
    config: SchedulerConfig,
) -> Scheduler {
    Scheduler::start(config, backend, registry, Budget::new("test", budget)).unwrap()
}

/// The plain CPU backend, one lane.
pub fn cpu() -> Arc<dyn cuzk_sched::plugin::AnyBackend> {
    Arc::new(CpuBackend::new())
}

/// One synthesis worker and the given lookahead: starts are strictly one at a time.
pub fn serial(lookahead: usize) -> SchedulerConfig {
    SchedulerConfig {
        synthesis_workers: Some(1),
        lookahead: Some(lookahead),
        ..SchedulerConfig::default()
    }
}

/// The public input p of the synthetic circuit of 2^LOG2 constraints and `seed`.
pub fn p_of(seed: u64) -> Scalar {
    SyntheticPoRep::new(1 << LOG2, seed).public_inputs()[0]
}

/// Polls `cond` until it holds; panics after 20 s.
pub fn wait_until(what: &str, cond: impl Fn() -> bool) {
    let start = Instant::now();
    while !cond() {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "timed out waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
}

pub fn wait_running(s: &Scheduler, id: JobId) {
    wait_until("the job to start", || {
        s.status(id).unwrap().state == JobState::Running
    });
}

/// A gate that synthesis waits at until the test opens it (or 20 s pass, so that a failed
/// test cannot hang the run).
#[derive(Debug, Default)]
pub struct Gate {
    open: Mutex<bool>,
    opened: Condvar,
}

impl Gate {
    pub fn open(&self) {
        *self.open.lock().unwrap() = true;
        self.opened.notify_all();
    }

    fn wait(&self) {
        let open = self.open.lock().unwrap();
        let _ = self
            .opened
            .wait_timeout_while(open, Duration::from_secs(20), |open| !*open)
            .unwrap();
    }
}

/// What a wrapping kind does around the synthetic circuit.
#[derive(Clone, Debug)]
pub enum Twist {
    /// Synthesis waits at the gate first.
    Gated(Arc<Gate>),
    /// Synthesis panics.
    Panics,
    /// Synthesis returns an error.
    Fails,
    /// Synthesis counts the partitions holding memory (until [`Tracked`] proves them).
    Counted(Arc<Counter>),
    /// Synthesis records the CPU threads the scheduler gave it (`cuzk_plugin::share`).
    Shares(Arc<Mutex<Vec<Option<usize>>>>),
    /// Synthesis says it holds this many bytes beyond its witness.
    Scratch(u64),
}

/// A kind that parses like `synthetic-porep` and applies a twist to synthesis.
#[derive(Debug)]
pub struct Twisted {
    pub name: &'static str,
    pub twist: Twist,
}

impl CircuitKind for Twisted {
    fn name(&self) -> &str {
        self.name
    }

    fn parse(&self, inputs: &Inputs) -> Result<Arc<dyn Instance>, InputError> {
        let inner = SyntheticPoRepKind::default().parse(inputs)?;
        Ok(Arc::new(TwistedInstance {
            inner,
            twist: self.twist.clone(),
        }))
    }
}

#[derive(Debug)]
struct TwistedInstance {
    inner: Arc<dyn Instance>,
    twist: Twist,
}

impl Instance for TwistedInstance {
    fn circuit_key(&self) -> String {
        self.inner.circuit_key()
    }
    fn partitions(&self) -> usize {
        self.inner.partitions()
    }
    fn shape(&self) -> Shape {
        self.inner.shape()
    }
    fn record(&self) -> Result<Pce, SynthError> {
        self.inner.record()
    }
    fn synthesis_scratch_bytes(&self) -> u64 {
        match self.twist {
            Twist::Scratch(bytes) => bytes,
            _ => 0,
        }
    }
    fn synthesize(&self, pce: &Pce, partition: usize) -> Result<Witness, SynthError> {
        match &self.twist {
            Twist::Gated(gate) => gate.wait(),
            Twist::Panics => panic!("circuit bug in partition {partition}"),
            Twist::Fails => {
                return Err(SynthError::Corrupt {
                    what: "witness generator refused".into(),
                })
            }
            Twist::Counted(counter) => counter.enter(),
            Twist::Shares(seen) => seen
                .lock()
                .unwrap()
                .push(cuzk_sched::plugin::share::synthesis_share()),
            Twist::Scratch(_) => {}
        }
        self.inner.synthesize(pce, partition)
    }
    fn public_inputs(&self, partition: usize) -> Vec<Scalar> {
        self.inner.public_inputs(partition)
    }
}

/// A registry with the built-ins and the given twisted kinds.
pub fn registry(kinds: Vec<Twisted>) -> Registry {
    let mut registry = Registry::with_builtins();
    for kind in kinds {
        registry.register(Arc::new(kind)).unwrap();
    }
    registry
}

/// Counts partitions between the start of their synthesis and the end of their proof,
/// and the most at once: memory in use as seen from outside the budget.
#[derive(Debug, Default)]
pub struct Counter {
    live: AtomicUsize,
    pub peak: AtomicUsize,
}

impl Counter {
    fn enter(&self) {
        let now = self.live.fetch_add(1, Ordering::SeqCst) + 1;
        self.peak.fetch_max(now, Ordering::SeqCst);
    }

    fn leave(&self) {
        self.live.fetch_sub(1, Ordering::SeqCst);
    }
}

/// What a test backend does around the CPU prover.
#[derive(Debug)]
pub enum Behaviour {
    /// Records each proof's public input p, in proving order.
    Record(Mutex<Vec<Scalar>>),
    /// Returns a proof with C negated: well formed, but false.
    Forge,
    /// Panics when the public input is p.
    PanicOn(Scalar),
    /// Ends a [`Counter`] partition after proving.
    Count(Arc<Counter>),
}

/// The CPU backend with a behaviour.
#[derive(Debug)]
pub struct Tracked {
    pub cpu: CpuBackend,
    pub behaviour: Behaviour,
}

impl Tracked {
    /// One lane.
    pub fn new(behaviour: Behaviour) -> Arc<Tracked> {
        Tracked::with_lanes(behaviour, 1, 1)
    }

    pub fn with_lanes(behaviour: Behaviour, devices: usize, workers: usize) -> Arc<Tracked> {
        Arc::new(Tracked {
            cpu: CpuBackend::with_lanes(devices, workers),
            behaviour,
        })
    }

    /// The recorded public inputs.
    pub fn recorded(&self) -> Vec<Scalar> {
        match &self.behaviour {
            Behaviour::Record(seen) => seen.lock().unwrap().clone(),
            _ => Vec::new(),
        }
    }
}

impl Backend for Tracked {
    type Prepared = ();

    fn name(&self) -> &str {
        "tracked-cpu"
    }

    fn lanes(&self) -> LaneLayout {
        self.cpu.lanes()
    }

    fn prove(&self, lane: Lane, input: &ProveInput<'_>) -> Result<Proof, BackendError> {
        let p = input.witness.inputs[1];
        match &self.behaviour {
            Behaviour::Record(seen) => seen.lock().unwrap().push(p),
            Behaviour::PanicOn(bad) if *bad == p => panic!("backend bug"),
            _ => {}
        }
        let proof = self.cpu.prove(lane, input);
        match &self.behaviour {
            Behaviour::Forge => proof.map(|p| Proof { c: -p.c, ..p }),
            Behaviour::Count(counter) => {
                counter.leave();
                proof
            }
            _ => proof,
        }
    }
}
