//! The C1 generator (`cuzk_bench::fabricate`): fabricated outputs pass the self-check at 8MiB
//! (each API version) and 32GiB (no parameters needed: vanilla verification and label
//! recomputation only); a C1 output with one label or one sibling changed is refused with an
//! error naming the partition, challenge and what is wrong; SynthPoRep and NI-PoRep are
//! refused. (C2 of fabricated 2KiB outputs, accepted by `verify_seal`, is in the daemon's
//! tests.)

use anyhow::Result;
use cuzk_bench::fabricate::{
    check_api, fabricate, Api, CheckError, Error, Fabricated, Format, Opening, Porep, Problem,
    Size, Spec, Target,
};
use filecoin_proofs_api::seal::SealCommitPhase1Output as ApiC1;
use filecoin_proofs_api::RegisteredSealProof;
use serde_json::Value;

fn made(size: Size, api: Api, seed: u64) -> Fabricated {
    fabricate(&Spec::new(size, api, seed)).unwrap_or_else(|e| panic!("{size} API {api:?}: {e}"))
}

#[test]
fn fabricated_8mib_c1s_pass_the_self_check_at_every_api_version() -> Result<()> {
    for api in [Api::V1_0, Api::V1_1, Api::V1_2] {
        let f = made(Size::MiB8, api, 11);
        assert_eq!(f.c1.shape(), (1, 2), "{api:?}");
        f.check()?;
        if api == Api::V1_2 {
            // No registered proof: filecoin-proofs' own JSON only.
            assert!(matches!(
                f.encode(Format::Wrapper),
                Err(Error::NoRegisteredProof { .. })
            ));
            let own: filecoin_proofs::SealCommitPhase1Output<filecoin_proofs::SectorShape8MiB> =
                serde_json::from_slice(&f.json()?)?;
            cuzk_bench::fabricate::check(&f.config, &own, &f.prover_id, f.spec.sector)?;
            continue;
        }
        // What the daemon reads: the JSON, bare and in Curio's envelope, checks again.
        let json: ApiC1 = serde_json::from_slice(&f.json()?)?;
        check_api(&json, &f.prover_id, f.spec.sector)?;
        let wrapped = cuzk_filecoin::decode_c1(&f.encode(Format::Wrapper)?)?;
        assert_eq!(wrapped.comm_r, f.c1.public().comm_r);
        assert_eq!(
            Some(wrapped.registered_proof),
            f.spec.target.registered_proof()
        );
    }
    // The same spec gives the same output; another seed another one.
    let (a, b) = (
        made(Size::MiB8, Api::V1_1, 5),
        made(Size::MiB8, Api::V1_1, 5),
    );
    assert_eq!(a.json()?, b.json()?);
    assert_ne!(
        a.c1.public().comm_r,
        made(Size::MiB8, Api::V1_1, 6).c1.public().comm_r
    );
    Ok(())
}

#[test]
fn a_fabricated_32gib_c1_passes_the_self_check() -> Result<()> {
    let f = made(Size::GiB32, Api::V1_1, 3);
    assert_eq!(f.c1.shape(), (10, 18));
    assert_eq!(
        f.spec.target.registered_proof(),
        Some(RegisteredSealProof::StackedDrg32GiBV1_1)
    );
    // The committed-capacity sector's comm_d (baga6ea4seaqao7s73y24kcutaosvacpdjgfe5pw76ooefnyqw4ynr3d2y6x2mpq).
    assert_eq!(
        cuzk_filecoin::ids::hex(&f.c1.public().comm_d),
        "077e5fde35c50a9303a55009e3498a4ebedff39c42b710b730d8ec7ac7afa63e"
    );
    eprintln!(
        "32GiB C1: generated in {:.2} s, self-checked in {:.2} s",
        f.timings.generate.as_secs_f64(),
        f.timings.check.as_secs_f64()
    );
    Ok(())
}

/// An 8MiB C1 output as JSON, and what its check needs.
fn json_8mib(seed: u64) -> Result<(Fabricated, Value)> {
    let f = made(Size::MiB8, Api::V1_1, seed);
    let value = serde_json::from_slice(&f.json()?)?;
    Ok((f, value))
}

fn check_value(f: &Fabricated, value: Value) -> Result<(), CheckError> {
    let c1: ApiC1 = serde_json::from_value(value).expect("still a C1 output");
    check_api(&c1, &f.prover_id, f.spec.sector)
}

/// Challenge `index` of the only partition.
fn proof(value: &mut Value, index: usize) -> &mut Value {
    &mut value["vanilla_proofs"]["StackedDrg8MiBV1"][0][index]
}

/// Flips the lowest bit of a 32-byte value (it stays a canonical field element).
fn flip(bytes: &mut Value) {
    let b = bytes[0].as_u64().expect("a byte");
    bytes[0] = Value::from(b ^ 1);
}

#[test]
fn a_c1_with_one_label_changed_is_refused_naming_the_layer() -> Result<()> {
    let (f, mut value) = json_8mib(21)?;
    let node = proof(&mut value, 1)["replica_column_proofs"]["c_x"]["column"]["index"]
        .as_u64()
        .unwrap() as usize;
    flip(&mut proof(&mut value, 1)["replica_column_proofs"]["c_x"]["column"]["rows"][1]);
    let err = check_value(&f, value).unwrap_err();
    assert!(
        matches!(err, CheckError::Label { partition: 0, index: 1, node: n, layer: 2 } if n == node),
        "{err}"
    );
    let text = err.to_string();
    assert!(
        text.contains("challenge 1") && text.contains("layer 2"),
        "{text}"
    );
    Ok(())
}

#[test]
fn a_c1_with_one_sibling_changed_is_refused_naming_the_path() -> Result<()> {
    // A sibling of the replica path: filecoin-proofs' vanilla verification does not rehash
    // that path, the circuit (and the self-check) does.
    let (f, value) = json_8mib(22)?;
    let mut r_last = value.clone();
    let path = &mut proof(&mut r_last, 0)["comm_r_last_proof"]["data"]["Single"]["path"]["path"];
    flip(&mut path[3]["hashes"][5]);
    let err = check_value(&f, r_last).unwrap_err();
    assert!(
        matches!(
            err,
            CheckError::Opening {
                partition: 0,
                index: 0,
                opening: Opening::CommRLast,
                problem: Problem::Path,
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("comm_r_last path"), "{err}");

    // A sibling of an expander parent's column path: refused by the vanilla verification,
    // then named.
    let mut column = value;
    let parent = &mut proof(&mut column, 1)["replica_column_proofs"]["exp_parents"][4];
    flip(&mut parent["inclusion_proof"]["data"]["Single"]["path"]["path"][0]["hashes"][2]);
    let err = check_value(&f, column).unwrap_err();
    assert!(
        matches!(
            err,
            CheckError::Opening {
                partition: 0,
                index: 1,
                opening: Opening::ExpParent(4),
                problem: Problem::Path,
                ..
            }
        ),
        "{err}"
    );
    Ok(())
}

#[test]
fn a_c1_of_another_sector_or_seed_is_refused() -> Result<()> {
    let (f, value) = json_8mib(23)?;
    let c1: ApiC1 = serde_json::from_value(value.clone())?;
    let err = check_api(&c1, &f.prover_id, f.spec.sector + 1).unwrap_err();
    assert!(matches!(err, CheckError::ReplicaId { .. }), "{err}");
    // Another seed: other challenges, which the openings do not prove.
    let mut reseeded = value;
    flip(&mut reseeded["seed"]);
    let err = check_value(&f, reseeded).unwrap_err();
    assert!(
        matches!(
            err,
            CheckError::Opening {
                partition: 0,
                index: 0,
                opening: Opening::CommD,
                problem: Problem::Index { .. },
                ..
            }
        ),
        "{err}"
    );
    Ok(())
}

#[test]
fn synthetic_and_non_interactive_porep_are_refused() -> Result<()> {
    for porep in [Porep::Synthetic, Porep::NonInteractive] {
        let spec = Spec {
            target: Target::new(Size::KiB2, Api::V1_1, porep),
            ..Spec::new(Size::KiB2, Api::V1_1, 1)
        };
        let err = fabricate(&spec).unwrap_err();
        assert!(matches!(err, Error::NotInteractive { .. }), "{err}");
        assert!(err.to_string().contains("derived from comm_r"), "{err}");
    }
    // An existing C1 output said to be SynthPoRep's is not checked either.
    let f = made(Size::KiB2, Api::V1_1, 2);
    let mut c1 = f.api()?;
    c1.registered_proof = RegisteredSealProof::StackedDrg2KiBV1_1_Feat_SyntheticPoRep;
    let err = check_api(&c1, &f.prover_id, f.spec.sector).unwrap_err();
    assert!(matches!(err, CheckError::NotInteractive { .. }), "{err}");
    Ok(())
}
