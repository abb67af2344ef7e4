//! NI-PoRep's proof: the SnarkPack aggregate of its partition proofs, made as filecoin-proofs'
//! `aggregate_seal_commit_proofs` makes it, from the SRS file in the parameter folder.
//!
//! filecoin-proofs pads the partition proofs to a power of two by repeating the last, puts the
//! SHA-256 of comm_r (NI-PoRep has no seed) into the transcript and aggregates with SnarkPack
//! version 2 over the generic SRS `v28-fil-inner-product-v1.srs`, of which it reads the first
//! `(2 << 14) + 1` powers of each vector. cuzk does the same with the file in its own
//! [`ParamCache`] folder, checks the file's digest as it checks parameters, and verifies the
//! aggregate against the verifier's public inputs before returning it.

use crate::cache::{file_digest, CircuitId, DigestCheck, ParamCache};
use crate::error::{Error, ProofKind, Result};
use bellperson::groth16::aggregate::{
    aggregate_proofs, setup_fake_srs, verify_aggregate_proof, AggregateVersion, GenericSRS,
};
use bellperson::groth16::{prepare_verifying_key, PreparedVerifyingKey, VerifyingKey};
use blstrs::{Bls12, Scalar as Fr};
use cuzk_groth16::Proof;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::fs::{self, File};
use std::io::{self, BufReader, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;
use storage_proofs_core::parameter_cache::{SRS_KEY_EXT, SRS_SHARED_KEY_NAME, VERSION};

/// The SRS file's name, as filecoin-proofs names it (one file for every circuit).
pub fn srs_file() -> String {
    format!("v{VERSION}-{SRS_SHARED_KEY_NAME}.{SRS_KEY_EXT}")
}

/// The record cuzk writes beside an SRS it generated (a test SRS): its digest.
fn srs_record_file() -> String {
    format!("v{VERSION}-{SRS_SHARED_KEY_NAME}.cuzk-gen.json")
}

/// How many powers of each vector filecoin-proofs reads (storage-proofs-core's
/// `read_cached_srs_key`). The aggregate depends on the count read, so cuzk reads as many.
const SRS_READ_LEN: usize = (2 << 14) + 1;

/// How many proofs a generated test SRS aggregates: 128 covers every NI-PoRep (a 32GiB
/// sector's 126 partitions, padded).
const TEST_SRS_PROOFS: usize = 128;

/// SnarkPack's version for NI-PoRep, as filecoin-proofs uses it.
const VERSION_NI: AggregateVersion = AggregateVersion::V2;

#[derive(Debug, Serialize, Deserialize)]
struct SrsRecord {
    digest: String,
    proofs: usize,
    generator: String,
}

fn failed(step: &'static str, message: impl std::fmt::Display) -> Error {
    Error::FilecoinProofs {
        kind: ProofKind::PoRep,
        step,
        message: message.to_string(),
    }
}

/// How many proofs filecoin-proofs aggregates for `n` partition proofs (a power of two, at
/// least 2).
pub(crate) fn target_len(n: usize) -> usize {
    n.max(2).next_power_of_two()
}

/// The SnarkPack transcript's extra input for one NI-PoRep: SHA-256 of comm_r.
fn transcript(comm_r: &[u8; 32]) -> [u8; 32] {
    Sha256::digest(comm_r).into()
}

/// NI-PoRep's proof bytes from its partition proofs (in partition order) and their public
/// inputs (ONE excluded): the aggregate `verify_seal` accepts for an NI registered proof,
/// checked before it is returned.
pub(crate) fn aggregate(
    cache: &ParamCache,
    circuit: &CircuitId,
    comm_r: &[u8; 32],
    proofs: &[Proof],
    inputs: &[Vec<Fr>],
) -> Result<Vec<u8>> {
    let start = Instant::now();
    if proofs.is_empty() || proofs.len() != inputs.len() {
        return Err(failed(
            "NI-PoRep aggregation",
            format!(
                "{} proofs with {} sets of inputs",
                proofs.len(),
                inputs.len()
            ),
        ));
    }
    let n = target_len(proofs.len());
    let mut padded: Vec<bellperson::groth16::Proof<Bls12>> = proofs
        .iter()
        .map(|p| {
            bellperson::groth16::Proof::read(&p.to_bytes()[..])
                .map_err(|e| failed("NI-PoRep aggregation", format!("proof encoding: {e}")))
        })
        .collect::<Result<_>>()?;
    let mut padded_inputs = inputs.to_vec();
    while padded.len() < n {
        padded.push(padded[proofs.len() - 1].clone());
        padded_inputs.push(inputs[inputs.len() - 1].clone());
    }
    let srs = load_srs(cache, circuit.sector_size)?;
    if srs.g_alpha_powers.len() < 2 * n || srs.h_alpha_powers.len() < 2 * n {
        return Err(failed(
            "NI-PoRep aggregation",
            format!(
                "{} holds {} powers, too few to aggregate {n} proofs (needs {})",
                cache.dir().join(srs_file()).display(),
                srs.g_alpha_powers.len(),
                2 * n
            ),
        ));
    }
    let (prover_srs, verifier_srs) = srs.specialize(n);
    let include = transcript(comm_r);
    let aggregate = aggregate_proofs::<Bls12>(&prover_srs, &include, &padded, VERSION_NI)
        .map_err(|e| failed("NI-PoRep aggregation", e))?;
    let aggregated = start.elapsed();

    let pvk = verifying_key(cache, circuit)?;
    let ok = verify_aggregate_proof(
        &verifier_srs,
        &pvk,
        rand::rngs::OsRng,
        &padded_inputs,
        &aggregate,
        &include,
        VERSION_NI,
    )
    .map_err(|e| failed("NI-PoRep aggregate verification", e))?;
    if !ok {
        return Err(failed(
            "NI-PoRep aggregate verification",
            format!("the aggregate of {n} proofs does not verify"),
        ));
    }
    let mut bytes = Vec::new();
    aggregate
        .write(&mut bytes)
        .map_err(|e| failed("NI-PoRep aggregation", e))?;
    tracing::info!(
        partitions = proofs.len(),
        aggregated = n,
        bytes = bytes.len(),
        aggregate_ms = aggregated.as_millis() as u64,
        total_ms = start.elapsed().as_millis() as u64,
        "NI-PoRep proofs aggregated and verified"
    );
    Ok(bytes)
}

/// The SRS of `cache`'s folder, read once per process and folder: checked by digest under
/// the cache's policy, generated (a test SRS) when missing and the policy allows generation
/// for `sector_size`.
fn load_srs(cache: &ParamCache, sector_size: u64) -> Result<Arc<GenericSRS<Bls12>>> {
    static LOADED: OnceLock<Mutex<HashMap<PathBuf, Arc<GenericSRS<Bls12>>>>> = OnceLock::new();
    let path = cache.dir().join(srs_file());
    // Held while loading: a second job waits for the first's read instead of repeating it.
    let mut loaded = LOADED
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    if let Some(srs) = loaded.get(&path) {
        return Ok(Arc::clone(srs));
    }
    let may_generate = cache.policy().generate_up_to >= sector_size;
    let record = cache.dir().join(srs_record_file());
    if !path.exists() {
        if !may_generate {
            return Err(Error::MissingParameters { path, sector_size });
        }
        generate_test_srs(&path, &record)?;
    }
    if cache.policy().digests == DigestCheck::Verify {
        check_digest(&path, &record, may_generate)?;
    }
    let start = Instant::now();
    let srs = Arc::new(read_srs(&path)?);
    tracing::info!(
        path = %path.display(),
        powers = srs.g_alpha_powers.len(),
        ms = start.elapsed().as_millis() as u64,
        "SnarkPack SRS read"
    );
    loaded.insert(path, Arc::clone(&srs));
    Ok(srs)
}

/// Compares the SRS file's digest with cuzk's record (when generation is allowed and it
/// wrote one) or with the one storage-proofs-core's `srs-inner-product.json` lists.
fn check_digest(path: &Path, record: &Path, trust_generated: bool) -> Result<()> {
    let (expected, source) = if trust_generated && record.exists() {
        let bytes = fs::read(record).map_err(Error::io(record))?;
        let rec: SrsRecord = serde_json::from_slice(&bytes).map_err(|e| Error::Io {
            path: record.to_path_buf(),
            source: io::Error::new(io::ErrorKind::InvalidData, e),
        })?;
        (rec.digest, "cuzk generation record")
    } else {
        match storage_proofs_core::parameter_cache::get_srs_parameter_data_from_id(&srs_file()) {
            Some(data) => (data.digest.clone(), "srs-inner-product.json"),
            None => {
                return Err(Error::UnknownParameterFile {
                    path: path.to_path_buf(),
                })
            }
        }
    };
    let found = file_digest(path)?;
    if found != expected {
        return Err(Error::DigestMismatch {
            path: path.to_path_buf(),
            expected,
            found,
            source_of_expected: source,
        });
    }
    Ok(())
}

/// Reads the first [`SRS_READ_LEN`] powers of each of the file's four vectors, as
/// filecoin-proofs' mapped read does, skipping the rest (the published file holds
/// `(2 << 19) + 1`).
fn read_srs(path: &Path) -> Result<GenericSRS<Bls12>> {
    let io_err = Error::io(path);
    let read = || -> io::Result<GenericSRS<Bls12>> {
        let mut file = BufReader::with_capacity(1 << 20, File::open(path)?);
        // Compressed points, as bellperson writes them.
        let (g1, g2) = (48, 96);
        // The vectors as `GenericSRS::read` takes them, each cut to its first powers.
        let mut image = Vec::new();
        for point in [g1, g1, g2, g2] {
            let mut len = [0u8; 4];
            file.read_exact(&mut len)?;
            let len = u32::from_be_bytes(len) as usize;
            let keep = len.min(SRS_READ_LEN);
            image.extend_from_slice(&(keep as u32).to_be_bytes());
            let start = image.len();
            image.resize(start + keep * point, 0);
            file.read_exact(&mut image[start..])?;
            let skip = (len - keep) * point;
            file.seek(SeekFrom::Current(skip as i64))?;
        }
        GenericSRS::<Bls12>::read(&mut &image[..])
    };
    read().map_err(io_err)
}

/// Writes a test SRS (random toxic waste: never production) and its record.
fn generate_test_srs(path: &Path, record: &Path) -> Result<()> {
    let start = Instant::now();
    let srs = setup_fake_srs::<Bls12, _>(&mut rand::rngs::OsRng, TEST_SRS_PROOFS);
    let mut bytes = Vec::new();
    srs.write(&mut bytes).map_err(Error::io(path))?;
    write_atomic(path, &bytes)?;
    let rec = SrsRecord {
        digest: file_digest(path)?,
        proofs: TEST_SRS_PROOFS,
        generator: format!(
            "cuzk-filecoin {} (setup_fake_srs)",
            env!("CARGO_PKG_VERSION")
        ),
    };
    let json = serde_json::to_vec_pretty(&rec).map_err(|e| Error::Io {
        path: record.to_path_buf(),
        source: io::Error::other(e),
    })?;
    write_atomic(record, &json)?;
    tracing::warn!(
        path = %path.display(),
        proofs = TEST_SRS_PROOFS,
        ms = start.elapsed().as_millis() as u64,
        "generated a test SnarkPack SRS (not for production)"
    );
    Ok(())
}

/// Writes `bytes` under a temporary name and renames it into place.
fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(format!(".partial-{}", std::process::id()));
    let tmp = PathBuf::from(tmp);
    let written = (|| {
        let mut f = File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()
    })();
    if let Err(source) = written {
        // Best effort: the write error is what the caller needs to see.
        let _ = fs::remove_file(&tmp);
        return Err(Error::Io { path: tmp, source });
    }
    fs::rename(&tmp, path).map_err(Error::io(path))
}

/// The circuit's verifying key in bellperson's form, from its `.vk` file (which the
/// ceremony's folders and cuzk's generator both hold), read once per process and file.
fn verifying_key(
    cache: &ParamCache,
    circuit: &CircuitId,
) -> Result<Arc<PreparedVerifyingKey<Bls12>>> {
    static LOADED: OnceLock<Mutex<HashMap<PathBuf, Arc<PreparedVerifyingKey<Bls12>>>>> =
        OnceLock::new();
    let path = cache.dir().join(circuit.vk_file());
    let mut loaded = LOADED
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    if let Some(pvk) = loaded.get(&path) {
        return Ok(Arc::clone(pvk));
    }
    let file = File::open(&path).map_err(Error::io(&path))?;
    let vk = VerifyingKey::<Bls12>::read(BufReader::new(file)).map_err(Error::io(&path))?;
    let pvk = Arc::new(prepare_verifying_key(&vk));
    loaded.insert(path, Arc::clone(&pvk));
    Ok(pvk)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_lengths_are_filecoin_proofs() {
        assert_eq!(srs_file(), "v28-fil-inner-product-v1.srs");
        assert_eq!(target_len(1), 2);
        assert_eq!(target_len(13), 16);
        assert_eq!(target_len(126), 128);
        assert_eq!(target_len(16), 16);
    }

    #[test]
    fn a_cut_read_equals_the_whole_for_a_small_srs() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(srs_file());
        let srs = setup_fake_srs::<Bls12, _>(&mut rand::rngs::OsRng, 4);
        let mut bytes = Vec::new();
        srs.write(&mut bytes).unwrap();
        fs::write(&path, &bytes).unwrap();
        let read = read_srs(&path).unwrap();
        assert_eq!(read.g_alpha_powers, srs.g_alpha_powers);
        assert_eq!(read.h_beta_powers, srs.h_beta_powers);
        // A truncated file is an I/O error naming it.
        fs::write(&path, &bytes[..bytes.len() - 1]).unwrap();
        let err = read_srs(&path).unwrap_err();
        assert!(err.to_string().contains(&srs_file()), "{err}");
    }
}
