//! The one-call prover: a bellpepper circuit and its parameters in, a verified proof out, on
//! the GPU when there is one and on the CPU reference otherwise.
//!
//! Per parameter set (keyed by the digest of its verifying key) the prover keeps what every
//! later proof reuses: the circuit's recorded matrices (PCE) and density, the prepared
//! verifying key, and the parameters placed on the device. The first proof of a circuit
//! records its PCE and its witness in one synthesis; later ones synthesize the witness only.
//! So one `Prover` must only ever see, for one parameter set, the circuit those parameters
//! were made for — which the verification of every proof (on by default) would catch.

use crate::error::{Error, Result};
use crate::{DeviceParameters, GpuProver, GpuProverConfig};
use cuzk_cuda::Device;
use cuzk_field::Scalar;
use cuzk_groth16::{
    prepare_verifying_key, verify_proof, Parameters, PreparedParameters, PreparedVerifyingKey,
    Proof, VerifyingKey,
};
use cuzk_synth::{Density, Pce, Witness};
use ff::Field;
use rand_core::RngCore;
use rayon::prelude::*;
use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

pub use bellpepper_core::Circuit;

/// Where a proof's parameters come from: a parameter file, cuzk's [`Parameters`], or (with
/// the `bellperson` feature) bellperson's `Parameters<Bls12>`. It also fixes the type of the
/// proofs returned: bellperson's for bellperson's parameters, cuzk's otherwise.
pub trait ParameterSource {
    /// The proof type handed back.
    type Proof;

    /// The verifying key alone (cheap: the cache is keyed by its digest).
    fn verifying_key(&self) -> Result<VerifyingKey>;

    /// The whole parameter set (read once per circuit, on the first proof).
    fn parameters(&self) -> Result<PreparedParameters>;

    /// A proof in the source's type.
    fn convert(proof: Proof) -> Result<Self::Proof>;
}

impl ParameterSource for &Path {
    type Proof = Proof;

    fn verifying_key(&self) -> Result<VerifyingKey> {
        VerifyingKey::read_file(self).map_err(|source| Error::Parameters {
            path: self.to_path_buf(),
            source: Box::new(source),
        })
    }

    fn parameters(&self) -> Result<PreparedParameters> {
        // The file's points are checked (on the curve, in the subgroup) as they are read.
        let params = Parameters::read_file(self, true).map_err(|source| Error::Parameters {
            path: self.to_path_buf(),
            source: Box::new(source),
        })?;
        Ok(PreparedParameters::from(params))
    }

    fn convert(proof: Proof) -> Result<Proof> {
        Ok(proof)
    }
}

impl ParameterSource for &PathBuf {
    type Proof = Proof;

    fn verifying_key(&self) -> Result<VerifyingKey> {
        self.as_path().verifying_key()
    }

    fn parameters(&self) -> Result<PreparedParameters> {
        self.as_path().parameters()
    }

    fn convert(proof: Proof) -> Result<Proof> {
        Ok(proof)
    }
}

impl ParameterSource for &Parameters {
    type Proof = Proof;

    fn verifying_key(&self) -> Result<VerifyingKey> {
        Ok(self.vk.clone())
    }

    fn parameters(&self) -> Result<PreparedParameters> {
        Ok(PreparedParameters::from(*self))
    }

    fn convert(proof: Proof) -> Result<Proof> {
        Ok(proof)
    }
}

/// One parameter set's reusable state.
struct Entry {
    pce: Pce,
    density: Density,
    pvk: PreparedVerifyingKey,
    host: Arc<PreparedParameters>,
    /// The parameters on the prover's device (GPU only).
    device: Option<DeviceParameters>,
}

/// Where proofs run.
enum Engine {
    Gpu(Box<GpuProver>),
    Cpu { why: String },
}

/// Proves bellpepper circuits in one call: `prover.create_random_proof(circuit, params,
/// &mut rng)`. On the GPU when one was found ([`Prover::new`]), else on the CPU reference;
/// both give the same proof for the same randomness, the one bellperson gives.
///
/// Every proof is verified against the verifying key and the witness's public inputs
/// before it is returned; a proof that fails is [`Error::Invalid`], never returned.
/// [`Prover::verify_proofs`] turns that off (saving a pairing check, about 2 ms a proof).
///
/// Thread-safe: proofs from several threads share the cache and take turns on the device.
pub struct Prover {
    engine: Engine,
    verify: bool,
    cache: Mutex<HashMap<[u8; 32], Arc<Entry>>>,
}

impl fmt::Debug for Prover {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Prover")
            .field("device", &self.device())
            .field("verify", &self.verify)
            .field("circuits", &self.circuits())
            .finish()
    }
}

impl Prover {
    /// A prover on CUDA device 0 if one opens, else on the CPU (the reason is logged and
    /// kept: [`Prover::cpu_reason`]).
    pub fn new() -> Prover {
        match Prover::gpu(0) {
            Ok(p) => p,
            Err(e) => {
                let why = format!("no usable CUDA device: {e}");
                tracing::info!(reason = %why, "proving on the CPU");
                Prover::with(Engine::Cpu { why })
            }
        }
    }

    /// A prover on CUDA device `ordinal` (the device to itself: parameters resident when
    /// they fit its free memory, else streamed from the host).
    pub fn gpu(ordinal: usize) -> Result<Prover> {
        let device = Device::open(ordinal)?;
        let lane = GpuProver::new(&device, GpuProverConfig::default())?;
        Ok(Prover::with(Engine::Gpu(Box::new(lane))))
    }

    /// A prover on the CPU reference.
    pub fn cpu() -> Prover {
        Prover::with(Engine::Cpu {
            why: "asked for".into(),
        })
    }

    fn with(engine: Engine) -> Prover {
        Prover {
            engine,
            verify: true,
            cache: Mutex::new(HashMap::new()),
        }
    }

    /// Whether each proof is verified before it is returned (default: yes).
    pub fn verify_proofs(mut self, verify: bool) -> Prover {
        self.verify = verify;
        self
    }

    /// The ordinal of the device proofs run on; `None`: the CPU.
    pub fn device(&self) -> Option<usize> {
        match &self.engine {
            Engine::Gpu(lane) => Some(lane.device().ordinal()),
            Engine::Cpu { .. } => None,
        }
    }

    /// Why proofs run on the CPU; `None` on a GPU.
    pub fn cpu_reason(&self) -> Option<&str> {
        match &self.engine {
            Engine::Gpu(_) => None,
            Engine::Cpu { why } => Some(why),
        }
    }

    /// Parameter sets cached.
    pub fn circuits(&self) -> usize {
        self.cache
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    /// Proves `circuit` with fresh randomness from `rng` (r then s, bellperson's order: the
    /// same seeded rng gives bellperson's `create_random_proof` proof).
    pub fn create_random_proof<C, S, R>(
        &self,
        circuit: C,
        params: S,
        rng: &mut R,
    ) -> Result<S::Proof>
    where
        C: Circuit<Scalar> + Send,
        S: ParameterSource,
        R: RngCore,
    {
        let mut proofs = self.create_random_proof_batch(vec![circuit], params, rng)?;
        Ok(proofs.remove(0))
    }

    /// Proves several circuits of one parameter set, their witnesses synthesized in
    /// parallel, r and s drawn for each in turn. A failing circuit stops the batch with
    /// [`Error::InBatch`] naming it.
    pub fn create_random_proof_batch<C, S, R>(
        &self,
        circuits: Vec<C>,
        params: S,
        rng: &mut R,
    ) -> Result<Vec<S::Proof>>
    where
        C: Circuit<Scalar> + Send,
        S: ParameterSource,
        R: RngCore,
    {
        let randomness: Vec<(Scalar, Scalar)> = circuits
            .iter()
            .map(|_| (Scalar::random(&mut *rng), Scalar::random(&mut *rng)))
            .collect();
        let vk = params.verifying_key()?;
        let key = digest(&vk)?;
        let cached = self
            .cache
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&key)
            .cloned();
        let mut circuits = circuits.into_iter();
        let (entry, first) = match cached {
            Some(entry) => (entry, None),
            None => match circuits.next() {
                None => return Ok(Vec::new()),
                Some(circuit) => {
                    let (pce, witness) = Pce::record_with_witness(circuit)
                        .map_err(|e| in_batch(0, Error::from(e)))?;
                    let entry = Arc::new(self.place(pce, &params)?);
                    self.cache
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .insert(key, Arc::clone(&entry));
                    (entry, Some(witness))
                }
            },
        };
        let skip = usize::from(first.is_some());
        let rest: Vec<C> = circuits.collect();
        let rest: Vec<Witness> = rest
            .into_par_iter()
            .enumerate()
            .map(|(i, c)| {
                entry
                    .pce
                    .synthesize_witness(c)
                    .map_err(|e| in_batch(i + skip, Error::from(e)))
            })
            .collect::<Result<_>>()?;
        let witnesses: Vec<Witness> = first.into_iter().chain(rest).collect();
        let proofs = self.prove(&entry, &witnesses, &randomness)?;
        if self.verify {
            for (index, (proof, w)) in proofs.iter().zip(&witnesses).enumerate() {
                if !verify_proof(&entry.pvk, proof, &w.inputs[1..])? {
                    return Err(Error::Invalid { index });
                }
            }
        }
        proofs.into_iter().map(S::convert).collect()
    }

    /// The reusable state of a parameter set seen for the first time.
    fn place<S: ParameterSource>(&self, pce: Pce, params: &S) -> Result<Entry> {
        let host = Arc::new(params.parameters()?);
        let density = pce.density();
        let pvk = prepare_verifying_key(host.vk());
        let device = match &self.engine {
            Engine::Gpu(lane) => Some(lane.load(Arc::clone(&host))?),
            Engine::Cpu { .. } => None,
        };
        tracing::info!(
            constraints = pce.num_constraints,
            device = ?self.device(),
            "circuit recorded and its parameters placed"
        );
        Ok(Entry {
            pce,
            density,
            pvk,
            host,
            device,
        })
    }

    fn prove(
        &self,
        entry: &Entry,
        witnesses: &[Witness],
        randomness: &[(Scalar, Scalar)],
    ) -> Result<Vec<Proof>> {
        match (&self.engine, &entry.device) {
            (Engine::Gpu(lane), Some(device)) => Ok(lane
                .prove_batch(device, &entry.pce, &entry.density, witnesses, randomness)?
                .into_iter()
                .map(|(proof, _)| proof)
                .collect()),
            _ => Ok(cuzk_groth16::prove_batch(
                &entry.host,
                &entry.pce,
                witnesses,
                randomness,
            )?),
        }
    }
}

impl Default for Prover {
    fn default() -> Self {
        Prover::new()
    }
}

fn in_batch(index: usize, e: Error) -> Error {
    Error::InBatch {
        index,
        source: Box::new(e),
    }
}

/// BLAKE2b-256 of the verifying key's bytes.
fn digest(vk: &VerifyingKey) -> Result<[u8; 32]> {
    let mut bytes = Vec::new();
    vk.write(&mut bytes)
        .map_err(|e| Error::Groth16(cuzk_groth16::Error::Io(e)))?;
    let hash = blake2b_simd::Params::new().hash_length(32).hash(&bytes);
    let mut out = [0; 32];
    out.copy_from_slice(hash.as_bytes());
    Ok(out)
}

/// bellperson's proof of a cuzk proof (the same 192 bytes): for proofs made from a parameter
/// file or cuzk's parameters, when the caller wants bellperson's type.
#[cfg(feature = "bellperson")]
pub fn to_bellperson(proof: &Proof) -> Result<bellperson::groth16::Proof<blstrs::Bls12>> {
    bellperson::groth16::Proof::read(&proof.to_bytes()[..])
        .map_err(|e| Error::Groth16(cuzk_groth16::Error::Io(e)))
}

#[cfg(feature = "bellperson")]
mod bellperson_source {
    use super::*;
    use bellperson::groth16 as bp;
    use blstrs::Bls12;

    /// Bellperson's parameters, read as cuzk's through their common file format.
    impl ParameterSource for &bp::Parameters<Bls12> {
        type Proof = bp::Proof<Bls12>;

        fn verifying_key(&self) -> Result<VerifyingKey> {
            let mut bytes = Vec::new();
            self.vk
                .write(&mut bytes)
                .map_err(|e| Error::Groth16(cuzk_groth16::Error::Io(e)))?;
            Ok(VerifyingKey::read(&bytes[..])?)
        }

        fn parameters(&self) -> Result<PreparedParameters> {
            let mut bytes = Vec::new();
            self.write(&mut bytes)
                .map_err(|e| Error::Groth16(cuzk_groth16::Error::Io(e)))?;
            Ok(PreparedParameters::from(Parameters::read(
                &bytes[..],
                true,
            )?))
        }

        fn convert(proof: Proof) -> Result<bp::Proof<Bls12>> {
            to_bellperson(&proof)
        }
    }
}

#[cfg(test)]
mod tests;
