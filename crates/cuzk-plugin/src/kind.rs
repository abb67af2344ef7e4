//! Circuit kinds: how a request's inputs become a circuit the scheduler proves.
//!
//! A kind is code (how to read inputs, build and synthesize the circuit); a request is
//! data (a kind's name and inputs). The kind turns inputs into an [`Instance`], which the
//! scheduler asks for its shape, partitions, witnesses and public inputs.

use crate::{InputError, Inputs, LoadError, ReadySetup, Shape};
use cuzk_field::Scalar;
use cuzk_groth16::Proof;
use cuzk_synth::{Pce, SynthError, Witness};
use std::fmt;
use std::sync::Arc;

/// A circuit kind: reads a request's inputs into an [`Instance`].
pub trait CircuitKind: Send + Sync + 'static {
    /// The name requests use, e.g. `sha256`.
    fn name(&self) -> &str;

    /// Checks and reads `inputs`. Runs on the submitting thread, so it must be cheap: no
    /// synthesis, no parameter work.
    fn parse(&self, inputs: &Inputs) -> Result<Arc<dyn Instance>, InputError>;

    /// An instance whose circuit key is `circuit_key`, if this kind makes such circuits and
    /// the key alone fixes the shape (for preloading parameters by key, as `PreloadSRS`
    /// asks). Its witnesses need not be meaningful: only its setup is used. The default:
    /// `None`.
    fn instance_for_key(&self, circuit_key: &str) -> Option<Arc<dyn Instance>> {
        let _ = circuit_key;
        None
    }

    /// The public ids of this kind's circuits that any caller may ask to preload
    /// (the scheduler's `preload_named`, the daemon's `PreloadSRS`), in their canonical
    /// spelling, e.g. Curio's `porep-32g`. Each must be accepted by
    /// [`CircuitKind::instance_for_key`]. A kind whose keys name circuits of any size (a
    /// caller could ask for a huge setup) lists none: its circuits are preloaded only when
    /// trusted (the registry's `trust_for_preload`) or already set up. The default: none.
    fn preload_ids(&self) -> Vec<String> {
        Vec::new()
    }

    /// Whether `id` is one of [`CircuitKind::preload_ids`], maybe in another spelling the
    /// kind accepts (`porep-32GiB`). The default: listed there as given.
    fn serves_preload_id(&self, id: &str) -> bool {
        self.preload_ids().iter().any(|p| p == id)
    }

    /// The public id ([`CircuitKind::preload_ids`]) of the circuit whose setup key is
    /// `circuit_key`, when it is one of them (to report setups as callers name them). The
    /// default: `None`.
    fn public_id(&self, circuit_key: &str) -> Option<String> {
        let _ = circuit_key;
        None
    }
}

/// One request's circuit: everything the scheduler asks of it. Calls may panic or fail;
/// either fails only this job.
pub trait Instance: Send + Sync + fmt::Debug + 'static {
    /// The key of the circuit's shape (its PCE and parameters), e.g.
    /// `synthetic-porep-1024`: instances with equal keys share them.
    fn circuit_key(&self) -> String;

    /// How many partitions (independent proofs of the same circuit) the job has; at least 1.
    fn partitions(&self) -> usize;

    /// The circuit's shape, estimated before its PCE is recorded (for memory admission).
    fn shape(&self) -> Shape;

    /// Host bytes making the circuit's setup (its PCE and parameters) holds at its peak,
    /// reserved in the scheduler's budget while a preload makes it. Default: the shape's
    /// estimate from above ([`Shape::setup_bytes`]); a kind that knows more (a PCE already
    /// recorded, a parameter file on disk) gives a closer figure, still from above.
    fn setup_bytes(&self) -> u64 {
        self.shape().setup_bytes()
    }

    /// Records the circuit's PCE (done once per key; the cache keeps it).
    fn record(&self) -> Result<Pce, SynthError>;

    /// Host bytes one partition's synthesis holds beyond its witness at its peak, added to
    /// each partition's reservation of the scheduler's budget (default 0). A kind that
    /// synthesizes a partition in parallel runs and joins their witnesses into the partition's
    /// holds the runs' witnesses beside the joined one for a moment: about one more witness.
    fn synthesis_scratch_bytes(&self) -> u64 {
        0
    }

    /// The witness of partition `partition`.
    fn synthesize(&self, pce: &Pce, partition: usize) -> Result<Witness, SynthError>;

    /// [`Instance::synthesize`] in the memory of `spare`, a witness of an earlier partition
    /// that is no longer needed (see [`cuzk_synth::WitnessCs::reusing`]); the witness must be
    /// the same. The default drops `spare` and synthesizes afresh.
    fn synthesize_reusing(
        &self,
        pce: &Pce,
        partition: usize,
        spare: Witness,
    ) -> Result<Witness, SynthError> {
        drop(spare);
        self.synthesize(pce, partition)
    }

    /// The public inputs of partition `partition`, ONE not included, as the verifier takes
    /// them.
    fn public_inputs(&self, partition: usize) -> Vec<Scalar>;

    /// The circuit's setup, when the kind loads it itself (a ceremony's parameter file and
    /// the PCE kept beside it) rather than having it recorded here ([`Instance::record`])
    /// with supplied or generated parameters. Called once per circuit key, on a synthesis
    /// worker (it may take long). The default, `None`, records and generates.
    fn load_setup(&self) -> Option<Result<ReadySetup, LoadError>> {
        None
    }

    /// Whether the job's proof is made from its partitions' proofs by [`Instance::finish`]
    /// (a NI-PoRep's SnarkPack aggregate) rather than being their 192-byte encodings back to
    /// back. The default: `false`.
    fn finishes(&self) -> bool {
        false
    }

    /// The job's proof from its partitions' proofs, in partition order, once every one is
    /// proved (and verified, when the scheduler verifies). Called only when
    /// [`Instance::finishes`], once per job, on a thread of its own outside the scheduler's
    /// lock; an error fails the job. The default concatenates the proofs' encodings.
    fn finish(&self, proofs: &[Proof]) -> Result<Vec<u8>, LoadError> {
        Ok(proofs.iter().flat_map(|p| p.to_bytes()).collect())
    }
}
