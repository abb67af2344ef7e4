//! The prover-backend interface the scheduler drives, and its lanes.

use crate::{DeviceStats, Setup, Shape};
use cuzk_field::Scalar;
use cuzk_groth16::{Parameters, PreparedParameters, Proof};
use cuzk_synth::{Pce, Witness};
use std::any::Any;
use std::fmt;
use std::sync::Arc;

/// One worker lane: a device and one of its workers. Each lane proves one partition at a
/// time, on a thread of its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Lane {
    /// The device's index.
    pub device: usize,
    /// The worker's index on that device.
    pub worker: usize,
}

impl fmt::Display for Lane {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "d{}w{}", self.device, self.worker)
    }
}

/// A backend's lanes: `devices` × `workers_per_device`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LaneLayout {
    /// Devices (GPUs; for the CPU backend, abstract).
    pub devices: usize,
    /// Workers per device (`gpu_workers_per_device`): more than one lets one worker upload
    /// while another computes.
    pub workers_per_device: usize,
}

impl LaneLayout {
    /// Number of lanes.
    pub fn len(&self) -> usize {
        self.devices.saturating_mul(self.workers_per_device)
    }

    /// Whether there are no lanes at all.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every lane, device-major: all of device 0's workers, then device 1's, ….
    pub fn lanes(&self) -> impl Iterator<Item = Lane> + '_ {
        (0..self.devices).flat_map(move |device| {
            (0..self.workers_per_device).map(move |worker| Lane { device, worker })
        })
    }
}

impl fmt::Display for LaneLayout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} device(s) × {} worker(s)",
            self.devices, self.workers_per_device
        )
    }
}

/// What one proof needs: the circuit's key, parameters and PCE, a witness, and the
/// randomness r, s.
#[derive(Clone, Copy, Debug)]
pub struct ProveInput<'a> {
    /// The circuit's key, which a backend may use to keep its parameters resident.
    pub circuit_key: &'a str,
    /// The parameters (shared: a backend may keep the `Arc` to place them on a device).
    pub params: &'a Arc<PreparedParameters>,
    /// The circuit's recorded constraints.
    pub pce: &'a Pce,
    /// The assignments.
    pub witness: &'a Witness,
    /// The proof's randomness r.
    pub r: Scalar,
    /// The proof's randomness s.
    pub s: Scalar,
}

/// What [`Backend::prepare`] reads: one synthesized partition of a circuit.
#[derive(Clone, Copy, Debug)]
pub struct PrepareInput<'a> {
    /// The circuit's key.
    pub circuit_key: &'a str,
    /// The parameters.
    pub params: &'a Arc<PreparedParameters>,
    /// The circuit's recorded constraints.
    pub pce: &'a Pce,
    /// The assignments.
    pub witness: &'a Witness,
}

/// What [`Backend::prove_prepared`] needs besides the [`Prepared`] partition: the circuit
/// and the randomness.
#[derive(Clone, Copy, Debug)]
pub struct ProvePreparedInput<'a> {
    /// The circuit's key.
    pub circuit_key: &'a str,
    /// The parameters.
    pub params: &'a Arc<PreparedParameters>,
    /// The circuit's recorded constraints.
    pub pce: &'a Pce,
    /// The proof's randomness r.
    pub r: Scalar,
    /// The proof's randomness s.
    pub s: Scalar,
}

/// A partition a backend prepared ([`Backend::prepare`]), as the scheduler carries it from a
/// synthesis worker to a lane of the device it was prepared for (for the CUDA backend: a,
/// b, c evaluated into pinned memory). Opaque: only [`AnyBackend`]'s implementation for a
/// [`Backend`] makes one, from that backend's own [`Backend::Prepared`] value, and only the
/// same backend's [`AnyBackend::prove_prepared`] opens it, so a backend always gets back
/// the type it made.
pub struct Prepared {
    device: usize,
    inner: Box<dyn Any + Send>,
}

impl Prepared {
    /// The device it was prepared for.
    pub fn device(&self) -> usize {
        self.device
    }
}

impl fmt::Debug for Prepared {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Prepared")
            .field("device", &self.device)
            .finish_non_exhaustive()
    }
}

/// What [`Backend::load`] did with one circuit's parameters.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LoadReport {
    /// Devices the parameters are placed on now.
    pub devices: usize,
    /// Devices where they were already placed before this call.
    pub already: usize,
    /// Whether they are resident (uploaded) on every device, rather than streamed.
    pub resident: bool,
    /// Device bytes they take on each device where resident.
    pub bytes_per_device: u64,
}

/// What [`Backend::evict`] freed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EvictReport {
    /// Whether the backend held anything for the circuit.
    pub was_loaded: bool,
    /// Device bytes freed (or freed once the proofs still using them end).
    pub freed_bytes: u64,
}

/// Makes Groth16 parameters for a circuit none were supplied for: the registry calls it
/// instead of the CPU generator (and falls back to the CPU generator when it fails).
pub trait ParameterGenerator: Send + Sync + 'static {
    /// A short name for logs, e.g. `gpu`.
    fn name(&self) -> &str;

    /// Fresh parameters (random toxic waste) for circuit `circuit_key`, recorded in `pce`.
    /// The key lets a device backend keep what it made on a device for the circuit's proofs.
    fn generate(&self, circuit_key: &str, pce: &Pce) -> Result<Parameters, BackendError>;
}

/// Something that turns a witness into a proof: the CPU prover here, the CUDA prover in
/// the GPU crates. Called concurrently from every lane's and synthesis worker's thread.
///
/// Only [`Backend::name`], [`Backend::lanes`] and [`Backend::prove`] are required; the
/// other methods let a device backend prepare partitions ahead of its lanes, keep
/// parameters resident, generate parameters and report per-device figures.
pub trait Backend: Send + Sync + 'static {
    /// A partition in this backend's own form, made by [`Backend::prepare`] and handed back
    /// to [`Backend::prove_prepared`]; `()` for a backend that prepares nothing.
    type Prepared: Send + 'static;

    /// A short name for logs and metrics, e.g. `cpu`.
    fn name(&self) -> &str;

    /// The lanes the scheduler runs for this backend.
    fn lanes(&self) -> LaneLayout;

    /// Host memory one partition of `shape` holds from the start of its synthesis to the
    /// end of its proof; the scheduler reserves this much before starting it. The default
    /// is the CPU reference prover's estimate, [`Shape::cpu_prover_bytes`].
    fn partition_bytes(&self, shape: &Shape) -> u64 {
        shape.cpu_prover_bytes()
    }

    /// Proves one partition on `lane`.
    fn prove(&self, lane: Lane, input: &ProveInput<'_>) -> Result<Proof, BackendError>;

    /// The CPU part of a proof that can run before a lane is free: called on a synthesis
    /// worker right after the witness is made, for `device`, the device the partition's job
    /// is pinned to. `Some` replaces the witness (which is then dropped) and goes to
    /// [`Backend::prove_prepared`] on a lane of that device; `None` (the default) sends the
    /// witness to [`Backend::prove`].
    fn prepare(
        &self,
        device: usize,
        input: &PrepareInput<'_>,
    ) -> Result<Option<Self::Prepared>, BackendError> {
        let _ = (device, input);
        Ok(None)
    }

    /// Proves a partition [`Backend::prepare`] made, on `lane` (always a lane of the
    /// device it was prepared for). A backend whose `prepare` returns `Some` implements it.
    fn prove_prepared(
        &self,
        lane: Lane,
        input: &ProvePreparedInput<'_>,
        prepared: Self::Prepared,
    ) -> Result<Proof, BackendError> {
        let _ = (lane, input, prepared);
        Err(BackendError::Failed {
            backend: self.name().to_string(),
            message: "this backend prepares nothing, so it proves no prepared partition".into(),
        })
    }

    /// Places circuit `setup`'s parameters on every device ahead of its jobs (preloading);
    /// `pin` keeps them from idle eviction. The default does nothing: the CPU proves from
    /// the host parameters.
    fn load(&self, setup: &Setup, pin: bool) -> Result<LoadReport, BackendError> {
        let _ = (setup, pin);
        Ok(LoadReport::default())
    }

    /// Drops what the backend holds for circuit `circuit_key` (device copies of its
    /// parameters). Proofs still running keep what they use until they end.
    fn evict(&self, circuit_key: &str) -> EvictReport {
        let _ = circuit_key;
        EvictReport::default()
    }

    /// A parameter generator to use instead of the CPU one (`None`, the default: the CPU).
    fn parameter_generator(&self) -> Option<Arc<dyn ParameterGenerator>> {
        None
    }

    /// Per-device figures (none for the CPU backend).
    fn device_stats(&self) -> Vec<DeviceStats> {
        Vec::new()
    }
}

/// A [`Backend`] as the scheduler holds it (`Arc<dyn AnyBackend>`), its prepared partitions
/// carried as [`Prepared`]. Every `Backend` is one; implement `Backend`, not this.
pub trait AnyBackend: Send + Sync + 'static {
    /// [`Backend::name`].
    fn name(&self) -> &str;
    /// [`Backend::lanes`].
    fn lanes(&self) -> LaneLayout;
    /// [`Backend::partition_bytes`].
    fn partition_bytes(&self, shape: &Shape) -> u64;
    /// [`Backend::prove`].
    fn prove(&self, lane: Lane, input: &ProveInput<'_>) -> Result<Proof, BackendError>;
    /// [`Backend::prepare`], its value kept for `device`.
    fn prepare(
        &self,
        device: usize,
        input: &PrepareInput<'_>,
    ) -> Result<Option<Prepared>, BackendError>;
    /// [`Backend::prove_prepared`] on what this backend prepared for `lane`'s device.
    fn prove_prepared(
        &self,
        lane: Lane,
        input: &ProvePreparedInput<'_>,
        prepared: Prepared,
    ) -> Result<Proof, BackendError>;
    /// [`Backend::load`].
    fn load(&self, setup: &Setup, pin: bool) -> Result<LoadReport, BackendError>;
    /// [`Backend::evict`].
    fn evict(&self, circuit_key: &str) -> EvictReport;
    /// [`Backend::parameter_generator`].
    fn parameter_generator(&self) -> Option<Arc<dyn ParameterGenerator>>;
    /// [`Backend::device_stats`].
    fn device_stats(&self) -> Vec<DeviceStats>;
}

impl<B: Backend> AnyBackend for B {
    fn name(&self) -> &str {
        Backend::name(self)
    }

    fn lanes(&self) -> LaneLayout {
        Backend::lanes(self)
    }

    fn partition_bytes(&self, shape: &Shape) -> u64 {
        Backend::partition_bytes(self, shape)
    }

    fn prove(&self, lane: Lane, input: &ProveInput<'_>) -> Result<Proof, BackendError> {
        Backend::prove(self, lane, input)
    }

    fn prepare(
        &self,
        device: usize,
        input: &PrepareInput<'_>,
    ) -> Result<Option<Prepared>, BackendError> {
        Ok(
            Backend::prepare(self, device, input)?.map(|value| Prepared {
                device,
                inner: Box::new(value),
            }),
        )
    }

    fn prove_prepared(
        &self,
        lane: Lane,
        input: &ProvePreparedInput<'_>,
        prepared: Prepared,
    ) -> Result<Proof, BackendError> {
        let failed = |message: String| BackendError::Failed {
            backend: Backend::name(self).to_string(),
            message,
        };
        if prepared.device != lane.device {
            return Err(failed(format!(
                "a partition prepared for device {} reached lane {lane}",
                prepared.device
            )));
        }
        // Only `prepare` above makes a `Prepared`, and a scheduler drives one backend: the
        // value is this backend's `Prepared`.
        let value = prepared
            .inner
            .downcast::<B::Prepared>()
            .map_err(|_| failed("a partition another backend prepared".into()))?;
        Backend::prove_prepared(self, lane, input, *value)
    }

    fn load(&self, setup: &Setup, pin: bool) -> Result<LoadReport, BackendError> {
        Backend::load(self, setup, pin)
    }

    fn evict(&self, circuit_key: &str) -> EvictReport {
        Backend::evict(self, circuit_key)
    }

    fn parameter_generator(&self) -> Option<Arc<dyn ParameterGenerator>> {
        Backend::parameter_generator(self)
    }

    fn device_stats(&self) -> Vec<DeviceStats> {
        Backend::device_stats(self)
    }
}

/// Why a backend could not prove.
#[derive(Debug, thiserror::Error)]
pub enum BackendError {
    /// The Groth16 prover rejected its inputs (a shape or parameter mismatch, an
    /// unsatisfied constraint) or failed; the error names the offending value. Boxed: this
    /// one travels in every result. A device's own failures are [`BackendError::Device`].
    #[error(transparent)]
    Prover(Box<cuzk_groth16::Error>),

    /// Lane `lane` is not one of the backend's `layout`.
    #[error("lane {lane} is not one of this backend's {layout}")]
    NoSuchLane {
        /// The lane asked for.
        lane: Lane,
        /// The backend's lanes.
        layout: LaneLayout,
    },

    /// Backend `backend` failed on device `device` (an index of its lane layout):
    /// `source` says how (a device allocation, a kernel, the VRAM budget, …).
    #[error("backend {backend}, device {device}: {source}")]
    Device {
        /// The backend's name.
        backend: String,
        /// The device's index.
        device: usize,
        /// What failed.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },

    /// Backend `backend` failed: `message`.
    #[error("backend {backend}: {message}")]
    Failed {
        /// The backend's name.
        backend: String,
        /// What went wrong.
        message: String,
    },
}

impl From<cuzk_groth16::Error> for BackendError {
    fn from(e: cuzk_groth16::Error) -> Self {
        BackendError::Prover(Box::new(e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cuzk_synth::testing::RandomCircuit;

    /// Prepares its device's number plus 100 and reports what it is given back.
    struct Numbers;
    /// Prepares text.
    struct Words;

    fn said(message: String) -> BackendError {
        BackendError::Failed {
            backend: "test".into(),
            message,
        }
    }

    impl Backend for Numbers {
        type Prepared = u32;

        fn name(&self) -> &str {
            "numbers"
        }

        fn lanes(&self) -> LaneLayout {
            LaneLayout {
                devices: 2,
                workers_per_device: 1,
            }
        }

        fn prove(&self, _: Lane, _: &ProveInput<'_>) -> Result<Proof, BackendError> {
            Err(said("unused".into()))
        }

        fn prepare(
            &self,
            device: usize,
            _: &PrepareInput<'_>,
        ) -> Result<Option<u32>, BackendError> {
            Ok(Some(device as u32 + 100))
        }

        fn prove_prepared(
            &self,
            _: Lane,
            _: &ProvePreparedInput<'_>,
            prepared: u32,
        ) -> Result<Proof, BackendError> {
            Err(said(format!("given {prepared}")))
        }
    }

    impl Backend for Words {
        type Prepared = String;

        fn name(&self) -> &str {
            "words"
        }

        fn lanes(&self) -> LaneLayout {
            Backend::lanes(&Numbers)
        }

        fn prove(&self, _: Lane, _: &ProveInput<'_>) -> Result<Proof, BackendError> {
            Err(said("unused".into()))
        }
    }

    #[test]
    fn a_prepared_partition_goes_back_typed_to_its_backend_on_its_device_only() {
        // The first seeded random circuit the generator takes (some leave a variable
        // unconstrained); what these backends are given is never proved.
        let (pce, witness, params) = (0..64)
            .find_map(|seed| {
                let circuit = RandomCircuit::new(seed, 16);
                let pce = cuzk_synth::Pce::record(circuit.clone()).ok()?;
                let params =
                    cuzk_groth16::generate_parameters(&pce, &mut rand::rngs::OsRng).ok()?;
                let witness = cuzk_synth::synthesize_witness(circuit).ok()?;
                Some((pce, witness, Arc::new(PreparedParameters::from(params))))
            })
            .expect("a random circuit with parameters");
        let prepare = PrepareInput {
            circuit_key: "random",
            params: &params,
            pce: &pce,
            witness: &witness,
        };
        let prove = ProvePreparedInput {
            circuit_key: "random",
            params: &params,
            pce: &pce,
            r: Scalar::from(1u64),
            s: Scalar::from(2u64),
        };
        let numbers: &dyn AnyBackend = &Numbers;
        let message = |r: Result<Proof, BackendError>| r.unwrap_err().to_string();

        let on_1 = numbers.prepare(1, &prepare).unwrap().unwrap();
        assert_eq!(on_1.device(), 1);
        // Its own type, on its own device.
        let lane_1 = Lane {
            device: 1,
            worker: 0,
        };
        assert!(message(numbers.prove_prepared(lane_1, &prove, on_1)).contains("given 101"));
        // Another device's lane refuses it.
        let on_1 = numbers.prepare(1, &prepare).unwrap().unwrap();
        let lane_0 = Lane {
            device: 0,
            worker: 0,
        };
        let refused = message(numbers.prove_prepared(lane_0, &prove, on_1));
        assert!(
            refused.contains("prepared for device 1 reached lane d0w0"),
            "{refused}"
        );
        // Another backend refuses it; one that prepares nothing prepares nothing.
        let words: &dyn AnyBackend = &Words;
        assert!(words.prepare(0, &prepare).unwrap().is_none());
        let on_0 = numbers.prepare(0, &prepare).unwrap().unwrap();
        let refused = message(words.prove_prepared(lane_0, &prove, on_0));
        assert!(refused.contains("another backend prepared"), "{refused}");
    }

    #[test]
    fn layouts_list_their_lanes_device_major() {
        let layout = LaneLayout {
            devices: 2,
            workers_per_device: 2,
        };
        let lanes: Vec<String> = layout.lanes().map(|l| l.to_string()).collect();
        assert_eq!(lanes, ["d0w0", "d0w1", "d1w0", "d1w1"]);
        assert_eq!(layout.len(), 4);
        assert!(LaneLayout {
            devices: 0,
            workers_per_device: 3
        }
        .is_empty());
    }
}
