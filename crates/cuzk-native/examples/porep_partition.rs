//! Generic vs hybrid witness of one PoRep partition, on one thread.
//!
//! The partition is partition 0 of a fabricated C1 output (`cuzk_bench::fabricate`, API 1.1)
//! of the size given (2KiB by default; 32GiB needs about 9 GB for the two witnesses). Generic: the circuit `StackedCompound::circuit` builds,
//! `StackedCircuit::synthesize`d into `WitnessCs`. Hybrid: [`porep_partition_witness`] (its
//! aux packed) into a fresh witness, then into a reused one (as a service reuses them). All
//! run on the calling thread; every hybrid witness is checked equal to the generic one.
//! `cargo run --release -p cuzk-native --example porep_partition [2KiB|8MiB|32GiB] [iterations]`
//! prints the medians of `iterations` (default 5) runs of each.

use cuzk_bench::fabricate::{fabricate, Api, Size, Spec, C1};
use cuzk_native::{porep_partition_witness, PorepProof, PorepPublicInputs};
use cuzk_synth::{Witness, WitnessCs};
use filecoin_hashers::sha256::Sha256Hasher;
use filecoin_hashers::{Domain, Hasher};
use std::time::{Duration, Instant};
use storage_proofs_core::merkle::MerkleTreeTrait;
use storage_proofs_porep::stacked::{StackedCircuit, Tau};

fn generic<Tree: 'static + MerkleTreeTrait>(
    pub_in: &PorepPublicInputs<Tree>,
    proofs: &[PorepProof<Tree>],
) -> Witness {
    let tau = pub_in.tau.as_ref().expect("tau");
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
    .expect("generic synthesis");
    cs.into_witness()
}

/// Partition 0's public inputs, as filecoin-proofs' `seal_commit_phase2` makes them.
fn public<Tree: MerkleTreeTrait>(
    c1: &filecoin_proofs::SealCommitPhase1Output<Tree>,
) -> PorepPublicInputs<Tree> {
    PorepPublicInputs::<Tree> {
        replica_id: c1.replica_id,
        seed: Some(c1.seed),
        tau: Some(Tau {
            comm_d: <Sha256Hasher as Hasher>::Domain::try_from_bytes(&c1.comm_d).expect("comm_d"),
            comm_r: <Tree::Hasher as Hasher>::Domain::try_from_bytes(&c1.comm_r).expect("comm_r"),
        }),
        k: Some(0),
    }
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

fn main() {
    let mut args = std::env::args().skip(1);
    let size: Size = args
        .next()
        .map(|s| s.parse().expect("size"))
        .unwrap_or(Size::KiB2);
    let iterations: usize = args
        .next()
        .map(|s| s.parse().expect("iterations"))
        .unwrap_or(5);
    let f = fabricate(&Spec::new(size, Api::V1_1, 18)).expect("fabricate");
    match &f.c1 {
        C1::Base(c1) => run(size, c1, iterations),
        C1::Sub8(c1) => run(size, c1, iterations),
        C1::Top2(c1) => run(size, c1, iterations),
    }
}

/// Times both witnesses of partition 0 of `c1`.
fn run<Tree: 'static + MerkleTreeTrait>(
    size: Size,
    c1: &filecoin_proofs::SealCommitPhase1Output<Tree>,
    iterations: usize,
) {
    let proofs = &c1.vanilla_proofs[0];
    let pub_in = public(c1);
    let mut want = None;
    let generic_times: Vec<Duration> = (0..iterations)
        .map(|_| {
            // The previous run's witness is dropped first: at 32GiB each is 4.2 GB.
            want = None;
            let t = Instant::now();
            let w = generic(&pub_in, proofs);
            let d = t.elapsed();
            want = Some(w);
            d
        })
        .collect();
    let want = want.expect("one run");
    let g = median(generic_times);
    let n_in = want.inputs.len();
    // Hybrid into a fresh witness, and into a reused one as a service reuses them.
    let mut spare = Witness::default();
    let mut time = |start: &dyn Fn(Witness) -> WitnessCs, keep: bool| -> Duration {
        let times = (0..iterations)
            .map(|_| {
                let t = Instant::now();
                let mut cs = start(std::mem::take(&mut spare));
                porep_partition_witness(&pub_in, proofs, &mut cs).expect("hybrid");
                let d = t.elapsed();
                let w = cs.into_witness();
                assert!(
                    *w.unpacked() == want,
                    "the hybrid witness differs from the generic one"
                );
                if keep {
                    spare = w;
                }
                d
            })
            .collect();
        median(times)
    };
    let h = time(&|_| WitnessCs::with_one(), false);
    let r = time(&|w| WitnessCs::reusing_for_packing(w, n_in), true);
    let values = want.inputs.len() + want.aux.len();
    println!(
        "{size} partition 0: {} challenges, {} inputs, {} aux",
        proofs.len(),
        want.inputs.len(),
        want.aux.len()
    );
    for (path, t) in [
        ("generic", g),
        ("hybrid, fresh", h),
        ("hybrid, reused witness", r),
    ] {
        println!(
            "{path:>23}: {:>10.2} ms  {:.4} µs per value  {:>6.1}x",
            t.as_secs_f64() * 1e3,
            t.as_secs_f64() * 1e6 / values as f64,
            g.as_secs_f64() / t.as_secs_f64()
        );
    }
}
