//! GPU tests of the Filecoin proofs (ignored by default; run with `--ignored gpu_` on a
//! machine with a CUDA GPU and the kernel image): 2KiB PoRep C2, WinningPoSt, WindowPoSt and
//! SnapDeals proved by `GpuBackend` and accepted by filecoin-proofs' verifiers, every GPU
//! proof equal to cuzk's CPU proof with the same randomness, parameters generated on the GPU.
//! The tests call the shape-generic `*_v1` entry points, so that the binary links the 2KiB
//! shape alone (it ships in the size-capped GPU bundle).
//!
//! Files go where `support` says: under target/ through cargo, else under
//! `$CUZK_FILECOIN_DIR` or `./filecoin-work` (about 3 GB once the 2KiB parameters exist).
#![cfg(feature = "cuda")]

mod support;

use anyhow::Result;
use cuzk_field::Scalar;
use cuzk_filecoin::{
    BackendError, CpuProver, Generator, GpuBackend, ParamCache, PartitionProver, Prover,
    RegisteredPoStProof, RegisteredUpdateProof,
};
use cuzk_groth16::{PreparedParameters, Proof};
use cuzk_synth::{Pce, Witness};
use filecoin_proofs::{
    merge_window_post_partition_proofs, verify_empty_sector_update_proof, verify_window_post,
    verify_winning_post, FallbackPoStSectorProof, PartitionSnarkProof, PublicReplicaInfo,
};
use std::collections::BTreeMap;
use std::fs;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use storage_proofs_core::sector::SectorId;
use support::*;

/// The GPU backend checked against the CPU prover: every batch is proved by both with the
/// same randomness, and a difference fails the request.
#[derive(Debug)]
struct Checked {
    gpu: GpuBackend,
    /// Batches (requests) compared so far.
    compared: AtomicUsize,
}

impl PartitionProver for Checked {
    fn prove(
        &self,
        params: &Arc<PreparedParameters>,
        pce: &Pce,
        witnesses: &[Witness],
        randomness: &[(Scalar, Scalar)],
    ) -> Result<Vec<Proof>, BackendError> {
        let gpu = self.gpu.prove(params, pce, witnesses, randomness)?;
        let cpu = CpuProver.prove(params, pce, witnesses, randomness)?;
        let differ: Vec<usize> = (0..gpu.len().max(cpu.len()))
            .filter(|&k| gpu.get(k) != cpu.get(k))
            .collect();
        if !differ.is_empty() {
            return Err(format!("GPU and CPU proofs differ in partitions {differ:?}").into());
        }
        self.compared.fetch_add(1, Ordering::Relaxed);
        Ok(gpu)
    }
}

/// The backend every test shares: device 0.
fn gpu() -> &'static Checked {
    static GPU: OnceLock<Checked> = OnceLock::new();
    GPU.get_or_init(|| Checked {
        gpu: GpuBackend::open(0).expect("a CUDA device and the kernel image"),
        compared: AtomicUsize::new(0),
    })
}

/// The shared parameter folder (filecoin-proofs' own), missing parameters made on the GPU.
fn gpu_cache() -> &'static ParamCache {
    static CACHE: OnceLock<ParamCache> = OnceLock::new();
    CACHE.get_or_init(|| {
        ParamCache::with_policy(&layout().params, test_policy(Generator::Gpu { device: 0 }))
    })
}

/// Vanilla proofs decoded afresh for one request (they are not `Clone`).
fn decode(vanilla: &[Vec<u8>]) -> Vec<FallbackPoStSectorProof<Tree>> {
    vanilla
        .iter()
        .map(|b| bincode::deserialize(b).expect("vanilla proofs this test encoded decode"))
        .collect()
}

/// Runs `prove` on the checked backend and asserts that it compared GPU and CPU proofs.
fn compared<T>(prove: impl FnOnce(&Prover<'_>) -> cuzk_filecoin::Result<T>) -> Result<T> {
    let before = gpu().compared.load(Ordering::Relaxed);
    let out = prove(&Prover::new(gpu_cache(), gpu()))?;
    assert!(
        gpu().compared.load(Ordering::Relaxed) > before,
        "no batch was compared"
    );
    Ok(out)
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_porep_c2_2kib_verify_seal() -> Result<()> {
    let config = porep_config();
    let sealed = seal(&config, PROVER_ID, 141, 43)?;
    let seed = [17u8; 32];
    let c1 = commit_phase1(&config, &sealed, PROVER_ID, seed)?;
    let verify = |proof: &[u8]| {
        filecoin_proofs::verify_seal::<Tree>(
            &config,
            sealed.comm_r,
            sealed.comm_d,
            PROVER_ID,
            sealed.sector_id,
            sealed.ticket,
            seed,
            proof,
        )
    };

    let _heavy = heavy();
    let proved = compared(|p| p.seal_commit_phase2_v1(&config, c1, PROVER_ID, 141))?;
    let partitions = usize::from(config.partitions);
    assert_eq!(proved.partitions, partitions);
    assert_eq!(proved.proof.len(), 192 * partitions);
    assert!(verify(&proved.proof)?, "verify_seal rejected the GPU proof");
    let mut bad = proved.proof.clone();
    bad[100] ^= 1;
    assert!(!verify(&bad).unwrap_or(false));

    // Again on the bare backend: the circuit stays on the device, nothing is placed again.
    let c1 = commit_phase1(&config, &sealed, PROVER_ID, seed)?;
    let before = gpu().gpu.stats();
    let again =
        Prover::new(gpu_cache(), &gpu().gpu).seal_commit_phase2_v1(&config, c1, PROVER_ID, 141)?;
    let after = gpu().gpu.stats();
    assert_eq!(after.placements, before.placements);
    assert_eq!(after.densities, before.densities);
    assert_eq!(after.proofs, before.proofs + partitions as u64);
    assert_eq!(gpu().gpu.last_timings().len(), partitions);
    assert!(verify(&again.proof)?);
    eprintln!(
        "2KiB C2 on the GPU: first {:?}, again {:?} (phases {:?})",
        proved.timings,
        again.timings,
        gpu().gpu.last_timings()[0].phases()
    );
    Ok(())
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_winning_post_2kib() -> Result<()> {
    let (sealed, vanilla) = winning_vanilla(PROVER_ID, 151, 51, &RANDOMNESS)?;
    let registered = RegisteredPoStProof::StackedDrgWinning2KiBV1;
    let config = registered.as_v1_config();
    let bytes = vec![vanilla];
    let public = [(sealed.sector_id, PublicReplicaInfo::new(sealed.comm_r)?)];

    let proved =
        compared(|p| p.winning_post_v1::<Tree>(&config, &RANDOMNESS, PROVER_ID, decode(&bytes)))?;
    assert_eq!(proved.proof.len(), 192);
    assert!(verify_winning_post::<Tree>(
        &config,
        &RANDOMNESS,
        &public,
        PROVER_ID,
        &proved.proof
    )?);

    // A cache of its own, so that its parameters are surely generated on the GPU here; the
    // prover checks the proof against that cache's verifying key before returning it.
    let dir = temp_dir("gpu-generated-");
    let fresh = ParamCache::with_policy(dir.path(), test_policy(Generator::Gpu { device: 0 }));
    let proved = Prover::new(&fresh, gpu()).winning_post_v1::<Tree>(
        &config,
        &RANDOMNESS,
        PROVER_ID,
        decode(&bytes),
    )?;
    let keys = fresh.loaded();
    assert_eq!(keys.len(), 1);
    let record = fs::read_to_string(dir.path().join(keys[0].generation_record_file()))?;
    assert!(record.contains("(gpu 0)"), "{record}");
    assert_eq!(proved.proof.len(), 192);
    Ok(())
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_window_post_2kib_two_partitions() -> Result<()> {
    let (sealed, vanilla) = window_vanilla(PROVER_ID, 161, 3, 60, &RANDOMNESS)?;
    let registered = RegisteredPoStProof::StackedDrgWindow2KiBV1_2;
    let config = registered.as_v1_config();
    let public: BTreeMap<SectorId, PublicReplicaInfo> = sealed
        .iter()
        .map(|s| Ok((s.sector_id, PublicReplicaInfo::new(s.comm_r)?)))
        .collect::<Result<_>>()?;

    // Both partitions in one batch on the device.
    let whole =
        compared(|p| p.window_post_v1::<Tree>(&config, &RANDOMNESS, PROVER_ID, decode(&vanilla)))?;
    assert_eq!(whole.partitions, 2);
    assert!(verify_window_post::<Tree>(
        &config,
        &RANDOMNESS,
        &public,
        PROVER_ID,
        &whole.proof
    )?);

    // One partition per request, merged as Curio merges them.
    let mut partitions = Vec::new();
    for (p, chunk) in vanilla.chunks(config.sector_count).enumerate() {
        let proved = compared(|prover| {
            prover.window_post_partition_v1::<Tree>(
                &config,
                &RANDOMNESS,
                PROVER_ID,
                decode(chunk),
                p,
            )
        })?;
        partitions.push(PartitionSnarkProof(proved.proof));
    }
    let merged = merge_window_post_partition_proofs(partitions)?;
    assert!(verify_window_post::<Tree>(
        &config,
        &RANDOMNESS,
        &public,
        PROVER_ID,
        &merged
    )?);
    Ok(())
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_snap_deals_2kib() -> Result<()> {
    let SnapUpdate {
        cc,
        comm_r_new,
        comm_d_new,
        vanilla,
        _dir,
    } = snap_update(171, 70, 77, "gpu-update-")?;
    let registered = RegisteredUpdateProof::StackedDrg2KiBV1;
    let update_porep = registered.as_v1_config();
    let partitions = vanilla.len();

    let _heavy = heavy();
    let proved = compared(|p| {
        p.snap_deals_update_v1::<Tree>(&update_porep, vanilla, cc.comm_r, comm_r_new, comm_d_new)
    })?;
    assert_eq!(proved.proof.len(), 192 * partitions);
    assert!(verify_empty_sector_update_proof::<Tree>(
        &update_porep,
        &proved.proof,
        cc.comm_r,
        comm_r_new,
        comm_d_new,
    )?);
    Ok(())
}
