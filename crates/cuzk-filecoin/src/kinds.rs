//! The four Filecoin proof kinds as cuzk-sched circuit kinds, so that the scheduler (and the
//! daemon over it) proves them from the fields Curio's `SubmitProof` sends.
//!
//! | kind | bytes | integer fields | byte fields |
//! |---|---|---|---|
//! | `porep-seal-commit` | C1 output JSON, bare or in Curio's envelope | `sector_number`, `miner_id`, `sector_size`, `registered_proof` (checked against the JSON when given) | – |
//! | `winning-post` | one bincode `FallbackPoStSectorProof` per part (or back to back in the bytes) | `registered_proof` (0–4), `miner_id`, `sector_size` | `randomness` (32 bytes) |
//! | `window-post-partition` | the partition's sectors' `FallbackPoStSectorProof`s, as for WinningPoSt | as WinningPoSt (5–14), `partition_index` | `randomness` |
//! | `snap-deals-update` | one bincode `PartitionProof` per part (or back to back in the bytes) | `registered_proof` (0–4), `sector_size` | `comm_r_old`, `comm_r_new`, `comm_d_new` (raw 32 bytes or commitment CIDs) |
//!
//! PoRep reads the bytes (Curio's `vanilla_proof`); the others read the parts (Curio's
//! `vanilla_proofs`) and, for older clients, the bytes when no parts are given, never both.
//!
//! Absent integer fields are 0 (proto3's "unset"); a given `sector_size` must be the registered
//! proof's. Fields of the request a kind does not use are ignored; names outside this list are
//! refused. A circuit's setup is loaded from the [`ParamCache`] (parameters checked by digest,
//! the PCE kept beside them) and then owned by the scheduler's setup cache.

use crate::cache::{CircuitId, ParamCache};
use crate::compound::{check_inputs, expected_inputs, Job, Vanilla};
use crate::error::{Error, ProofKind};
use crate::ids;
use crate::porep::{decode_c1, porep_job_api, porep_preload};
use crate::post::{post_job_bytes, post_preload, Mode};
use crate::update::{update_job_bytes, update_preload};
use blstrs::Scalar as Fr;
use cuzk_plugin::{CircuitKind, InputError, Inputs, Instance, LoadError, ReadySetup, Shape};
use cuzk_synth::{Pce, SynthError, Witness};
use std::fmt;
use std::sync::{Arc, OnceLock};

/// The registry name of PoRep C2 (Curio's `POREP_SEAL_COMMIT`).
pub const POREP_SEAL_COMMIT: &str = "porep-seal-commit";
/// The registry name of a SnapDeals update proof (`SNAP_DEALS_UPDATE`).
pub const SNAP_DEALS_UPDATE: &str = "snap-deals-update";
/// The registry name of one WindowPoSt partition (`WINDOW_POST_PARTITION`).
pub const WINDOW_POST_PARTITION: &str = "window-post-partition";
/// The registry name of WinningPoSt (`WINNING_POST`).
pub const WINNING_POST: &str = "winning-post";

/// Integer fields every kind accepts (those it does not use are ignored).
const INT_FIELDS: [&str; 5] = [
    "sector_size",
    "registered_proof",
    "sector_number",
    "miner_id",
    "partition_index",
];
/// Byte fields every kind accepts.
const BYTE_FIELDS: [&str; 4] = ["randomness", "comm_r_old", "comm_r_new", "comm_d_new"];

/// Which Filecoin proof a kind makes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Which {
    PoRep,
    SnapDeals,
    WindowPartition,
    Winning,
}

/// One of the four Filecoin proof kinds over a parameter cache.
#[derive(Debug)]
pub struct FilecoinKind {
    which: Which,
    cache: Arc<ParamCache>,
}

impl FilecoinKind {
    /// The four kinds, sharing `cache`.
    pub fn all(cache: Arc<ParamCache>) -> Vec<FilecoinKind> {
        [
            Which::PoRep,
            Which::SnapDeals,
            Which::WindowPartition,
            Which::Winning,
        ]
        .into_iter()
        .map(|which| FilecoinKind {
            which,
            cache: Arc::clone(&cache),
        })
        .collect()
    }

    /// The request's partitions, checked.
    fn job(&self, inputs: &Inputs) -> Result<Box<dyn Job>, InputError> {
        for field in inputs.fields.keys() {
            if !INT_FIELDS.contains(&field.as_str()) {
                return Err(InputError::UnknownField {
                    field: field.clone(),
                    expected: INT_FIELDS.to_vec(),
                });
            }
        }
        for field in inputs.byte_fields.keys() {
            if !BYTE_FIELDS.contains(&field.as_str()) {
                return Err(InputError::UnknownField {
                    field: field.clone(),
                    expected: BYTE_FIELDS.to_vec(),
                });
            }
        }
        let int = |name: &str| inputs.fields.get(name).copied().unwrap_or(0);
        let prover_id = ids::prover_id_from_miner_id(int("miner_id"));
        let registered = int("registered_proof");
        let porep = self.which == Which::PoRep;
        let vanilla = match (inputs.bytes.is_empty(), inputs.parts.is_empty()) {
            (true, true) => {
                return Err(InputError::MissingField {
                    field: if porep {
                        "vanilla_proof"
                    } else {
                        "vanilla_proofs"
                    },
                })
            }
            (false, false) => {
                return Err(InputError::Invalid {
                    reason: "the request carries both vanilla_proof and vanilla_proofs; \
                             PoRep C2 takes vanilla_proof, PoSt and SnapDeals vanilla_proofs"
                        .to_string(),
                })
            }
            (true, false) if porep => {
                return Err(InputError::Invalid {
                    reason: "PoRep C2 takes its C1 output in vanilla_proof, not vanilla_proofs"
                        .to_string(),
                })
            }
            (true, false) => Vanilla::Each(&inputs.parts),
            (false, true) => Vanilla::Concatenated(&inputs.bytes),
        };
        if inputs.parts.iter().any(Vec::is_empty) {
            let index = inputs.parts.iter().position(Vec::is_empty).unwrap_or(0);
            return Err(InputError::Invalid {
                reason: format!("vanilla_proofs[{index}] is empty"),
            });
        }
        match self.which {
            Which::PoRep => {
                let c1 = decode_c1(&inputs.bytes).map_err(invalid)?;
                if inputs.fields.contains_key("registered_proof") {
                    let named = ids::registered_seal_proof(registered).map_err(invalid)?;
                    if named != c1.registered_proof {
                        return Err(InputError::Invalid {
                            reason: format!(
                                "registered_proof {registered} ({named:?}) is not the C1 output's {:?}",
                                c1.registered_proof
                            ),
                        });
                    }
                }
                check_size(
                    inputs,
                    u64::from(c1.registered_proof.sector_size()),
                    &c1.registered_proof,
                )?;
                let native = self.cache.policy().native_witness;
                porep_job_api(c1, prover_id, int("sector_number"), native).map_err(invalid)
            }
            Which::Winning | Which::WindowPartition => {
                let registered = ids::registered_post_proof(registered).map_err(invalid)?;
                check_size(inputs, u64::from(registered.sector_size()), &registered)?;
                let randomness = randomness(inputs)?;
                let mode = match self.which {
                    Which::Winning => Mode::Winning,
                    _ => Mode::WindowPartition(int("partition_index") as usize),
                };
                let native = self.cache.policy().native_witness;
                post_job_bytes(registered, mode, &randomness, prover_id, vanilla, native)
                    .map_err(invalid)
            }
            Which::SnapDeals => {
                let registered = ids::registered_update_proof(registered).map_err(invalid)?;
                check_size(inputs, u64::from(registered.sector_size()), &registered)?;
                let commitment = |name: &'static str, sealed: bool| {
                    let bytes = inputs
                        .byte_fields
                        .get(name)
                        .ok_or(InputError::MissingField { field: name })?;
                    ids::commitment_field(name, bytes, sealed).map_err(invalid)
                };
                let comm_r_old = commitment("comm_r_old", true)?;
                let comm_r_new = commitment("comm_r_new", true)?;
                let comm_d_new = commitment("comm_d_new", false)?;
                let native = self.cache.policy().native_witness;
                update_job_bytes(
                    registered, vanilla, comm_r_old, comm_r_new, comm_d_new, native,
                )
                .map_err(invalid)
            }
        }
    }
}

impl CircuitKind for FilecoinKind {
    fn name(&self) -> &str {
        match self.which {
            Which::PoRep => POREP_SEAL_COMMIT,
            Which::SnapDeals => SNAP_DEALS_UPDATE,
            Which::WindowPartition => WINDOW_POST_PARTITION,
            Which::Winning => WINNING_POST,
        }
    }

    fn parse(&self, inputs: &Inputs) -> Result<Arc<dyn Instance>, InputError> {
        let job = self.job(inputs)?;
        // Parameters that are not in the folder and will not be generated: refused now,
        // naming the file, rather than failing the job when it is set up.
        if let Some(path) = self.cache.missing_parameters(job.id()) {
            return Err(InputError::MissingFile {
                what: "parameter file",
                path,
                reason: format!(
                    "{} needs it; put it in the parameter folder (paramfetch), or raise \
                     [filecoin] generate_up_to for a test network",
                    job.id()
                ),
            });
        }
        let expected = expected_inputs(&*job).map_err(invalid)?;
        Ok(Arc::new(FilecoinInstance {
            job,
            expected,
            cache: Arc::clone(&self.cache),
        }))
    }

    /// The circuit a `PreloadSRS` id names, when it is this kind's: `porep-`, `snap-`,
    /// `wpost-` or `winning-` followed by a sector size (`2k`, `8m`, `512m`, `32g`, `64g`, or
    /// `2KiB` … `64GiB`), e.g. `porep-32g`.
    fn instance_for_key(&self, circuit_key: &str) -> Option<Arc<dyn Instance>> {
        let (which, size) = preload_id(circuit_key)?;
        if which != self.which {
            return None;
        }
        let made = match which {
            Which::PoRep => ids::registered_seal_proof(5 + size as u64).and_then(|r| {
                let config = r.as_v1_config();
                crate::with_shape!(u64::from(r.sector_size()), porep_preload, &config)
            }),
            Which::Winning | Which::WindowPartition => {
                let first = if which == Which::Winning { 0 } else { 10 };
                ids::registered_post_proof(first + size as u64).and_then(|r| {
                    let config = r.as_v1_config();
                    crate::with_shape!(u64::from(r.sector_size()), post_preload, &config)
                })
            }
            Which::SnapDeals => ids::registered_update_proof(size as u64).and_then(|r| {
                let config = r.as_v1_config();
                crate::with_shape!(u64::from(r.sector_size()), update_preload, &config)
            }),
        };
        match made {
            Ok((id, load)) => Some(Arc::new(PreloadInstance {
                id,
                load,
                cache: Arc::clone(&self.cache),
            })),
            Err(e) => {
                tracing::warn!(circuit = circuit_key, error = %e, "cannot name the circuit to preload");
                None
            }
        }
    }

    fn preload_ids(&self) -> Vec<String> {
        PRELOAD_SIZES
            .iter()
            .map(|size| format!("{}-{size}", self.which.preload_prefix()))
            .collect()
    }

    fn serves_preload_id(&self, id: &str) -> bool {
        preload_id(id).is_some_and(|(which, _)| which == self.which)
    }

    fn public_id(&self, circuit_key: &str) -> Option<String> {
        self.public_ids()
            .iter()
            .find(|(key, _)| key == circuit_key)
            .map(|(_, id)| id.clone())
    }
}

/// The kind and sector size (as an index into 2KiB, 8MiB, 512MiB, 32GiB, 64GiB, the order of
/// filecoin-proofs-api's registered proofs) a preload id names.
fn preload_id(id: &str) -> Option<(Which, usize)> {
    let (kind, size) = id.split_once('-')?;
    let which = match kind {
        "porep" => Which::PoRep,
        "snap" => Which::SnapDeals,
        "wpost" => Which::WindowPartition,
        "winning" => Which::Winning,
        _ => return None,
    };
    let size = match size.to_ascii_lowercase().as_str() {
        "2k" | "2kib" => 0,
        "8m" | "8mib" => 1,
        "512m" | "512mib" => 2,
        "32g" | "32gib" => 3,
        "64g" | "64gib" => 4,
        _ => return None,
    };
    Some((which, size))
}

/// A circuit named by a preload id: nothing to prove, only its setup to load.
struct PreloadInstance {
    id: CircuitId,
    load: crate::compound::LoadFn,
    cache: Arc<ParamCache>,
}

impl fmt::Debug for PreloadInstance {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PreloadInstance")
            .field("circuit", &self.id)
            .finish_non_exhaustive()
    }
}

impl Instance for PreloadInstance {
    fn circuit_key(&self) -> String {
        self.id.cache_id.clone()
    }

    fn partitions(&self) -> usize {
        0
    }

    fn shape(&self) -> Shape {
        estimate(&self.id)
    }

    fn setup_bytes(&self) -> u64 {
        self.cache.setup_bytes(&self.id, estimate(&self.id))
    }

    fn record(&self) -> Result<Pce, SynthError> {
        Err(SynthError::Rejected {
            reason: format!(
                "{} is loaded from the parameter cache, not recorded here",
                self.id
            ),
        })
    }

    fn synthesize(&self, _pce: &Pce, partition: usize) -> Result<Witness, SynthError> {
        Err(SynthError::Rejected {
            reason: format!("a preload of {} has no partition {partition}", self.id),
        })
    }

    fn public_inputs(&self, _partition: usize) -> Vec<Fr> {
        Vec::new()
    }

    fn load_setup(&self) -> Option<Result<ReadySetup, LoadError>> {
        let loaded = (self.load)(&self.cache).map(|keys| {
            // As for a request: the scheduler's setup cache owns the setup from here.
            self.cache.evict(&self.id.cache_id);
            ReadySetup {
                pce: Arc::clone(&keys.pce),
                params: Arc::clone(&keys.params),
                source: self.id.params_file(),
            }
        });
        Some(loaded.map_err(load_error))
    }
}

/// A request's error as the scheduler reports bad inputs: the library error's message, which
/// names the offending value.
fn invalid(e: Error) -> InputError {
    InputError::Invalid {
        reason: e.to_string(),
    }
}

/// Errors unless the request's `sector_size`, when given, is `expected` (that of `registered`).
fn check_size(
    inputs: &Inputs,
    expected: u64,
    registered: &dyn fmt::Debug,
) -> Result<(), InputError> {
    match inputs.fields.get("sector_size") {
        Some(&found) if found != expected => Err(InputError::Invalid {
            reason: format!(
                "sector_size is {found} bytes, but {registered:?} proves {expected}-byte sectors"
            ),
        }),
        _ => Ok(()),
    }
}

/// The 32-byte `randomness` field.
fn randomness(inputs: &Inputs) -> Result<[u8; 32], InputError> {
    let bytes = inputs
        .byte_fields
        .get("randomness")
        .ok_or(InputError::MissingField {
            field: "randomness",
        })?;
    bytes
        .as_slice()
        .try_into()
        .map_err(|_| InputError::Invalid {
            reason: format!("randomness is {} bytes, expected 32", bytes.len()),
        })
}

/// One parsed request: its partitions and the public inputs the verifier will use.
struct FilecoinInstance {
    job: Box<dyn Job>,
    expected: Vec<Vec<Fr>>,
    cache: Arc<ParamCache>,
}

impl fmt::Debug for FilecoinInstance {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FilecoinInstance")
            .field("circuit", self.job.id())
            .field("partitions", &self.job.partitions())
            .finish()
    }
}

impl Instance for FilecoinInstance {
    fn circuit_key(&self) -> String {
        self.job.id().cache_id.clone()
    }

    fn partitions(&self) -> usize {
        self.job.partitions()
    }

    fn shape(&self) -> Shape {
        estimate(self.job.id())
    }

    fn setup_bytes(&self) -> u64 {
        self.cache
            .setup_bytes(self.job.id(), estimate(self.job.id()))
    }

    fn record(&self) -> Result<Pce, SynthError> {
        self.job.record()
    }

    /// A partition synthesized in runs (PoRep) holds the runs' witnesses beside the joined
    /// one for a moment: one more witness.
    fn synthesis_scratch_bytes(&self) -> u64 {
        if !self.job.splits() {
            return 0;
        }
        let shape = self.shape();
        (shape.inputs as u64)
            .saturating_add(shape.aux as u64)
            .saturating_mul(std::mem::size_of::<Fr>() as u64)
    }

    fn synthesize(&self, pce: &Pce, partition: usize) -> Result<Witness, SynthError> {
        self.synthesize_reusing(pce, partition, Witness::default())
    }

    fn synthesize_reusing(
        &self,
        pce: &Pce,
        partition: usize,
        spare: Witness,
    ) -> Result<Witness, SynthError> {
        let w = self
            .job
            .witness(pce, partition, spare)
            .map_err(|e| SynthError::Rejected {
                reason: e.to_string(),
            })?;
        check_inputs(&w, &self.expected[partition]).map_err(|index| SynthError::Rejected {
            reason: format!(
                "partition {partition}'s witness differs from the verifier's public inputs at input {index}"
            ),
        })?;
        Ok(w)
    }

    fn public_inputs(&self, partition: usize) -> Vec<Fr> {
        self.expected[partition].clone()
    }

    fn load_setup(&self) -> Option<Result<ReadySetup, LoadError>> {
        let id = self.job.id();
        let loaded = self.job.load(&self.cache).map(|keys| {
            // The scheduler's setup cache owns the setup from here (and evicts it); the
            // parameter cache keeps no second reference.
            self.cache.evict(&id.cache_id);
            ReadySetup {
                pce: Arc::clone(&keys.pce),
                params: Arc::clone(&keys.params),
                source: id.params_file(),
            }
        });
        Some(loaded.map_err(load_error))
    }

    /// NI-PoRep: the partition proofs are aggregated into the seal proof.
    fn finishes(&self) -> bool {
        self.job.finishes()
    }

    fn finish(&self, proofs: &[cuzk_groth16::Proof]) -> Result<Vec<u8>, LoadError> {
        self.job
            .finish(&self.cache, proofs, &self.expected)
            .map_err(|e| Box::new(e) as LoadError)
    }
}

/// A circuit's shape before its PCE is loaded, for the scheduler's memory admission: from
/// above, by kind and sector size (2KiB–512MiB PoRep circuits have 2.7 M constraints; 32GiB
/// PoRep, WindowPoSt and SnapDeals partitions 80–131 M; WinningPoSt a few million).
fn estimate(id: &CircuitId) -> Shape {
    let large = id.sector_size >= 32 << 30;
    let log2 = match id.kind {
        ProofKind::WinningPost => 22,
        ProofKind::PoRep | ProofKind::WindowPost | ProofKind::SnapDeals if large => 27,
        _ => 22,
    };
    let inputs = 64;
    Shape {
        constraints: (1usize << log2) - inputs,
        inputs,
        aux: 1 << log2,
    }
}

// Public preload ids and setup errors, as the daemon reports them.

/// The sector sizes of preload ids, canonical spelling, in [`preload_id`]'s order.
const PRELOAD_SIZES: [&str; 5] = ["2k", "8m", "512m", "32g", "64g"];

impl Which {
    /// The prefix of the kind's preload ids, as Curio names them.
    fn preload_prefix(self) -> &'static str {
        match self {
            Which::PoRep => "porep",
            Which::SnapDeals => "snap",
            Which::WindowPartition => "wpost",
            Which::Winning => "winning",
        }
    }
}

impl FilecoinKind {
    /// The circuit key and preload id of each of the kind's five circuits, made once per
    /// process (the keys depend on filecoin-proofs' parameters only, not on the cache).
    fn public_ids(&self) -> &'static [(String, String)] {
        static IDS: [OnceLock<Vec<(String, String)>>; 4] = [
            OnceLock::new(),
            OnceLock::new(),
            OnceLock::new(),
            OnceLock::new(),
        ];
        let slot = match self.which {
            Which::PoRep => &IDS[0],
            Which::SnapDeals => &IDS[1],
            Which::WindowPartition => &IDS[2],
            Which::Winning => &IDS[3],
        };
        slot.get_or_init(|| {
            self.preload_ids()
                .into_iter()
                .filter_map(|id| Some((self.instance_for_key(&id)?.circuit_key(), id)))
                .collect()
        })
    }
}

/// A setup error as the scheduler takes it: a missing parameter file as
/// [`cuzk_plugin::MissingFile`] (the host lacks it; the daemon answers FAILED_PRECONDITION),
/// anything else as it is.
fn load_error(e: Error) -> LoadError {
    match e {
        Error::MissingParameters { ref path, .. } => Box::new(cuzk_plugin::MissingFile {
            path: path.clone(),
            reason: e.to_string(),
        }),
        e => Box::new(e),
    }
}

#[cfg(test)]
mod public_id_tests {
    use super::*;

    fn kinds() -> Vec<FilecoinKind> {
        FilecoinKind::all(Arc::new(ParamCache::new(
            std::env::temp_dir().join("cuzk-filecoin-public-ids-unused"),
        )))
    }

    #[test]
    fn each_kind_lists_its_five_circuits_and_names_their_keys() {
        let kinds = kinds();
        let ids: Vec<Vec<String>> = kinds.iter().map(|k| k.preload_ids()).collect();
        assert_eq!(
            ids[0],
            [
                "porep-2k",
                "porep-8m",
                "porep-512m",
                "porep-32g",
                "porep-64g"
            ]
        );
        assert_eq!(ids[2][0], "wpost-2k");
        assert_eq!(ids[3][4], "winning-64g");
        for (kind, ids) in kinds.iter().zip(&ids) {
            for id in ids {
                assert!(kind.serves_preload_id(id), "{id}");
                let key = kind.instance_for_key(id).unwrap().circuit_key();
                // Each circuit key maps back to its id, and only for its own kind.
                assert_eq!(kind.public_id(&key).as_deref(), Some(id.as_str()));
                for other in kinds.iter().filter(|k| k.which != kind.which) {
                    assert!(other.public_id(&key).is_none(), "{id}");
                    assert!(!other.serves_preload_id(id), "{id}");
                }
            }
        }
        let porep = &kinds[0];
        assert!(porep.serves_preload_id("porep-32GiB"));
        assert!(!porep.serves_preload_id("porep-1g"));
        assert!(porep.public_id("synthetic-porep-1024").is_none());
    }

    #[test]
    fn a_missing_parameter_file_is_a_missing_file() {
        let path = std::path::PathBuf::from("/params/v28-x.params");
        let e = load_error(Error::MissingParameters {
            path: path.clone(),
            sector_size: 32 << 30,
        });
        let missing = e.downcast_ref::<cuzk_plugin::MissingFile>().unwrap();
        assert_eq!(missing.path, path);
        assert!(missing.reason.contains("/params/v28-x.params"), "{missing}");
        let other = load_error(Error::UnsupportedSectorSize { sector_size: 7 });
        assert!(other.downcast_ref::<cuzk_plugin::MissingFile>().is_none());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(which: Which) -> FilecoinKind {
        let dir = std::env::temp_dir().join("cuzk-filecoin-kinds-unused");
        FilecoinKind {
            which,
            cache: Arc::new(ParamCache::new(dir)),
        }
    }

    fn reason(e: InputError) -> String {
        e.to_string()
    }

    #[test]
    fn names_are_the_daemons() {
        let names: Vec<String> = FilecoinKind::all(Arc::new(ParamCache::new("unused")))
            .iter()
            .map(|k| k.name().to_string())
            .collect();
        assert_eq!(
            names,
            [
                POREP_SEAL_COMMIT,
                SNAP_DEALS_UPDATE,
                WINDOW_POST_PARTITION,
                WINNING_POST
            ]
        );
    }

    #[test]
    fn bad_porep_requests_name_the_problem() {
        let porep = kind(Which::PoRep);
        let err = porep.parse(&Inputs::default()).unwrap_err();
        assert_eq!(
            err,
            InputError::MissingField {
                field: "vanilla_proof"
            }
        );
        let err = reason(
            porep
                .parse(&Inputs::from_bytes(&b"{\"registered_proof\": "[..]))
                .unwrap_err(),
        );
        assert!(err.contains("C1 output JSON"), "{err}");
        assert!(err.contains("line 1"), "{err}");
        let err = porep
            .parse(&Inputs::from_bytes(&b"{}"[..]).with_field("sector_sise", 2048))
            .unwrap_err();
        assert!(
            matches!(err, InputError::UnknownField { ref field, .. } if field == "sector_sise")
        );
        let err = porep
            .parse(&Inputs::from_bytes(&b"{}"[..]).with_byte_field("seed", vec![0]))
            .unwrap_err();
        assert!(matches!(err, InputError::UnknownField { ref field, .. } if field == "seed"));
    }

    #[test]
    fn bad_post_requests_name_the_problem() {
        let winning = kind(Which::Winning);
        let some = Inputs::from_bytes(vec![1, 2, 3]);
        assert_eq!(
            winning.parse(&some).unwrap_err(),
            InputError::MissingField {
                field: "randomness"
            }
        );
        let short = some.clone().with_byte_field("randomness", vec![0; 31]);
        assert!(reason(winning.parse(&short).unwrap_err()).contains("31 bytes"));
        let wrong_size = some
            .clone()
            .with_byte_field("randomness", vec![0; 32])
            .with_field("sector_size", 8 << 20);
        let err = reason(winning.parse(&wrong_size).unwrap_err());
        assert!(err.contains("sector_size is 8388608"), "{err}");
        // A WindowPoSt type for WinningPoSt.
        let window_type = some
            .clone()
            .with_byte_field("randomness", vec![0; 32])
            .with_field("registered_proof", 10);
        let err = reason(winning.parse(&window_type).unwrap_err());
        assert!(err.contains("StackedDrgWindow2KiBV1_2"), "{err}");
        let unknown = some.clone().with_field("registered_proof", 99);
        assert!(reason(kind(Which::WindowPartition).parse(&unknown).unwrap_err()).contains("99"));
        // Three bytes are no bincode vanilla proof.
        let garbage = some
            .with_byte_field("randomness", vec![0; 32])
            .with_field("registered_proof", 10);
        let err = reason(kind(Which::WindowPartition).parse(&garbage).unwrap_err());
        assert!(err.contains("vanilla proof 0"), "{err}");
    }

    #[test]
    fn snap_deals_needs_its_commitments() {
        let snap = kind(Which::SnapDeals);
        let one = Inputs::default().with_parts(vec![vec![1]]);
        let err = snap.parse(&one).unwrap_err();
        assert_eq!(
            err,
            InputError::MissingField {
                field: "comm_r_old"
            }
        );
        let inputs = one
            .clone()
            .with_byte_field("comm_r_old", vec![1, 2])
            .with_byte_field("comm_r_new", vec![1, 2])
            .with_byte_field("comm_d_new", vec![1, 2]);
        assert!(reason(snap.parse(&inputs).unwrap_err()).contains("comm_r_old"));
        // 32 raw bytes above the field's modulus are no commitment.
        let inputs = one
            .with_byte_field("comm_r_old", vec![0xff; 32])
            .with_byte_field("comm_r_new", vec![0; 32])
            .with_byte_field("comm_d_new", vec![0; 32]);
        let err = reason(snap.parse(&inputs).unwrap_err());
        assert!(
            err.contains("comm_r_old") && err.contains("canonical"),
            "{err}"
        );
    }

    #[test]
    fn vanilla_proofs_go_to_their_kinds() {
        let post = Inputs::default()
            .with_byte_field("randomness", vec![0; 32])
            .with_field("registered_proof", 10);
        // Parts are read one by one: the second one's garbage is named by its index.
        let garbage = post.clone().with_parts(vec![vec![1, 2, 3], vec![4]]);
        let err = reason(kind(Which::WindowPartition).parse(&garbage).unwrap_err());
        assert!(err.contains("vanilla proof 0"), "{err}");
        let err = kind(Which::WindowPartition)
            .parse(&post.clone().with_parts(vec![vec![1], vec![]]))
            .unwrap_err();
        assert!(reason(err).contains("vanilla_proofs[1] is empty"));
        let both = Inputs {
            bytes: vec![1],
            ..post.clone().with_parts(vec![vec![1]])
        };
        let err = reason(kind(Which::WindowPartition).parse(&both).unwrap_err());
        assert!(
            err.contains("both vanilla_proof and vanilla_proofs"),
            "{err}"
        );
        assert_eq!(
            kind(Which::Winning).parse(&post).unwrap_err(),
            InputError::MissingField {
                field: "vanilla_proofs"
            }
        );
        let err = kind(Which::PoRep)
            .parse(&Inputs::default().with_parts(vec![vec![1]]))
            .unwrap_err();
        assert!(reason(err).contains("not vanilla_proofs"));
    }

    #[test]
    fn preload_ids_name_each_kinds_circuits() {
        let porep = kind(Which::PoRep);
        let instance = porep.instance_for_key("porep-2k").unwrap();
        let config = filecoin_proofs_api::RegisteredSealProof::StackedDrg2KiBV1_1.as_v1_config();
        let id = CircuitId::porep::<filecoin_proofs::SectorShape2KiB>(&config).unwrap();
        assert_eq!(instance.circuit_key(), id.cache_id);
        assert_eq!(instance.partitions(), 0);
        assert_eq!(
            porep.instance_for_key("porep-2KiB").unwrap().circuit_key(),
            id.cache_id
        );
        assert_ne!(
            porep.instance_for_key("porep-32g").unwrap().circuit_key(),
            id.cache_id
        );
        for (which, id, prefix) in [
            (Which::Winning, "winning-2k", "proof-of-spacetime-fallback-"),
            (
                Which::WindowPartition,
                "wpost-512m",
                "proof-of-spacetime-fallback-",
            ),
            (Which::SnapDeals, "snap-32g", "empty-sector-update-"),
        ] {
            let key = kind(which).instance_for_key(id).unwrap().circuit_key();
            assert!(key.starts_with(prefix), "{id}: {key}");
        }
        // WinningPoSt and WindowPoSt circuits of one size differ.
        assert_ne!(
            kind(Which::Winning)
                .instance_for_key("winning-2k")
                .unwrap()
                .circuit_key(),
            kind(Which::WindowPartition)
                .instance_for_key("wpost-2k")
                .unwrap()
                .circuit_key()
        );
        // Another kind's id, unknown sizes and names: not this kind's.
        for id in [
            "snap-2k",
            "porep-1g",
            "porep",
            "porep-",
            "seal-32g",
            "synthetic-porep-1024",
        ] {
            assert!(porep.instance_for_key(id).is_none(), "{id}");
        }
    }

    #[test]
    fn estimates_cover_the_known_circuits() {
        let id = |kind, sector_size| CircuitId {
            kind,
            cache_id: String::new(),
            sector_size,
        };
        // The 2KiB PoRep circuit: 2.69 M constraints.
        assert!(estimate(&id(ProofKind::PoRep, 2048)).constraints > 2_690_000);
        // A 32GiB PoRep partition: 130.3 M.
        assert!(estimate(&id(ProofKind::PoRep, 32 << 30)).constraints > 130_300_000);
    }
}
