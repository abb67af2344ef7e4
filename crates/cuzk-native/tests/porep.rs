//! The hybrid PoRep partition witness against the generic one: `StackedCircuit::synthesize`
//! into `WitnessCs` on the same fabricated C1 output, every input and aux value compared.

use cuzk_bench::fabricate::{fabricate, Api, Size, Spec, C1};
use cuzk_native::{porep_partition_witness, PorepError, PorepProof, PorepPublicInputs};
use cuzk_synth::{PackedAux, Witness, WitnessCs};
use filecoin_hashers::sha256::Sha256Hasher;
use filecoin_hashers::{Domain, Hasher};
use storage_proofs_core::merkle::MerkleTreeTrait;
use storage_proofs_porep::stacked::{StackedCircuit, Tau};

/// Partition `k`'s public inputs, as filecoin-proofs' `seal_commit_phase2` makes them.
fn public<Tree: MerkleTreeTrait>(
    c1: &filecoin_proofs::SealCommitPhase1Output<Tree>,
    k: usize,
) -> PorepPublicInputs<Tree> {
    PorepPublicInputs::<Tree> {
        replica_id: c1.replica_id,
        seed: Some(c1.seed),
        tau: Some(Tau {
            comm_d: <Sha256Hasher as Hasher>::Domain::try_from_bytes(&c1.comm_d).unwrap(),
            comm_r: <Tree::Hasher as Hasher>::Domain::try_from_bytes(&c1.comm_r).unwrap(),
        }),
        k: Some(k),
    }
}

/// The generic witness: the circuit `StackedCompound::circuit` builds, synthesized.
fn generic<Tree: 'static + MerkleTreeTrait>(
    pub_in: &PorepPublicInputs<Tree>,
    proofs: &[PorepProof<Tree>],
) -> Witness {
    let tau = pub_in.tau.as_ref().unwrap();
    let mut cs = WitnessCs::with_one();
    StackedCircuit::<Tree, Sha256Hasher>::synthesize(
        &mut cs,
        Some(pub_in.replica_id),
        Some(tau.comm_d),
        Some(tau.comm_r),
        Some(proofs[0].comm_r_last()),
        Some(proofs[0].comm_c()),
        proofs.iter().cloned().map(Into::into).collect(),
    )
    .unwrap();
    cs.into_witness()
}

/// Fails naming the first index where `hybrid` and `generic` differ.
fn assert_same(what: &str, hybrid: &[cuzk_field::Scalar], generic: &[cuzk_field::Scalar]) {
    if let Some(i) = (0..hybrid.len().min(generic.len())).find(|&i| hybrid[i] != generic[i]) {
        panic!(
            "{what} differ first at index {i} of {} (hybrid) and {} (generic)",
            hybrid.len(),
            generic.len()
        );
    }
    assert_eq!(
        hybrid.len(),
        generic.len(),
        "{what}: hybrid has {} values, generic {}",
        hybrid.len(),
        generic.len()
    );
}

/// The hybrid witness `got` (its aux packed) against the generic `want`: the same inputs, the
/// same aux values one by one, and the packed form the generic values pack into.
fn assert_same_witness(got: &Witness, want: &Witness) {
    assert_same("inputs", &got.inputs, &want.inputs);
    assert!(got.aux.is_empty(), "the hybrid aux is all packed");
    let packed = got.packed.as_ref().expect("a packed aux assignment");
    assert_same("aux", &packed.to_values(), &want.aux);
    assert!(
        **packed == PackedAux::from_values(&want.aux),
        "the packed form is the generic witness's"
    );
}

/// The first `partitions` partitions of a C1 output, both ways.
fn agree_c1<Tree: 'static + MerkleTreeTrait>(
    size: Size,
    c1: &filecoin_proofs::SealCommitPhase1Output<Tree>,
    partitions: usize,
) {
    for (k, proofs) in c1.vanilla_proofs.iter().enumerate().take(partitions) {
        let pub_in = public(c1, k);
        let want = generic(&pub_in, proofs);
        let mut cs = WitnessCs::with_one();
        porep_partition_witness(&pub_in, proofs, &mut cs).unwrap();
        let got = cs.into_witness();
        assert_same_witness(&got, &want);
        eprintln!(
            "{size} partition {k}: {} challenges, {} inputs and {} aux values agree",
            proofs.len(),
            want.inputs.len(),
            want.aux.len()
        );
    }
}

/// Every partition of a fabricated C1 output of `size` (a base-tree shape), both ways.
fn agree(size: Size, seed: u64) {
    let f = fabricate(&Spec::new(size, Api::V1_1, seed)).unwrap();
    let C1::Base(c1) = &f.c1 else {
        panic!("{size} is a base-tree shape")
    };
    agree_c1(size, c1, usize::MAX);
}

#[test]
fn the_hybrid_witness_of_2kib_partitions_is_the_generic_one() {
    for seed in [1, 2] {
        agree(Size::KiB2, seed);
    }
}

#[test]
fn the_hybrid_witness_of_an_8mib_partition_is_the_generic_one() {
    agree(Size::MiB8, 3);
}

#[test]
fn a_partition_without_challenges_is_refused() {
    let f = fabricate(&Spec::new(Size::KiB2, Api::V1_1, 4)).unwrap();
    let C1::Base(c1) = &f.c1 else { panic!() };
    let mut cs = WitnessCs::with_one();
    let err =
        porep_partition_witness(&public(c1, 0), &c1.vanilla_proofs[0][..0], &mut cs).unwrap_err();
    assert!(matches!(err, PorepError::NoProofs), "{err}");
    let mut no_tau = public(c1, 0);
    no_tau.tau = None;
    let err = porep_partition_witness(&no_tau, &c1.vanilla_proofs[0], &mut cs).unwrap_err();
    assert!(matches!(err, PorepError::NoTau), "{err}");
}

/// One challenge whose comm_d path is a level short has another shape than the others (a
/// malformed C1): its packed section is shorter, and the joined witness is still the generic
/// one's, with the short one first and last.
#[test]
fn a_challenge_of_another_shape_still_gets_the_generic_witness() {
    let f = fabricate(&Spec::new(Size::KiB2, Api::V1_1, 6)).unwrap();
    let C1::Base(c1) = &f.c1 else { panic!() };
    let pub_in = public(c1, 0);
    let whole = generic(&pub_in, &c1.vanilla_proofs[0]);
    for short in [0, c1.vanilla_proofs[0].len() - 1] {
        let mut proofs = c1.vanilla_proofs[0].clone();
        proofs[short] = shorter_comm_d_path(&proofs[short]);
        let want = generic(&pub_in, &proofs);
        assert!(want.aux.len() < whole.aux.len(), "the path got shorter");
        let mut cs = WitnessCs::with_one();
        porep_partition_witness(&pub_in, &proofs, &mut cs).unwrap();
        assert_same_witness(&cs.into_witness(), &want);
    }
}

/// `p` with the last level of its comm_d path dropped (through its serde form: the path's
/// fields are private).
fn shorter_comm_d_path<Tree: MerkleTreeTrait>(p: &PorepProof<Tree>) -> PorepProof<Tree> {
    let mut v = serde_json::to_value(p).unwrap();
    let levels = path_in(&mut v["comm_d_proofs"]).expect("a comm_d path");
    assert!(levels.len() > 1);
    levels.pop();
    serde_json::from_value(v).unwrap()
}

/// The first array under a key "path" in `v`.
fn path_in(v: &mut serde_json::Value) -> Option<&mut Vec<serde_json::Value>> {
    match v {
        serde_json::Value::Object(map) => {
            if map.get("path").is_some_and(serde_json::Value::is_array) {
                return map
                    .get_mut("path")
                    .and_then(serde_json::Value::as_array_mut);
            }
            map.values_mut().find_map(path_in)
        }
        serde_json::Value::Array(items) => items.iter_mut().find_map(path_in),
        _ => None,
    }
}

/// 32GiB: 11 layers (the column hash of arity 11) and a sub-tree (U8/U8/U0 paths). About
/// 8.2 GB for the two witnesses and about a minute, mostly the generic synthesis (68 s in the
/// test profile on a shared 2-core machine), so it runs with the GPU tests on the GPU host
/// (`run-tests`, `cargo xtask test --gpu`), whose memory it needs, not its GPU; by hand:
/// `cargo test -p cuzk-native --test porep -- --ignored`.
#[test]
#[ignore = "needs the GPU host's memory (8.2 GB) and a minute: runs with the GPU tests"]
fn gpu_host_the_hybrid_witness_of_a_32gib_partition_is_the_generic_one() {
    let f = fabricate(&Spec::new(Size::GiB32, Api::V1_1, 5)).unwrap();
    let C1::Sub8(c1) = &f.c1 else {
        panic!("32GiB is the sub-tree shape")
    };
    agree_c1(Size::GiB32, c1, 1);
}
