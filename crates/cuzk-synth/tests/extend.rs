//! bellperson's contract for extensible constraint systems: a circuit that synthesizes parts
//! into fresh `new()` systems (each allocating its temp ONE first) and merges them with
//! `extend` gives the same witness, a/b/c, densities, PCE and proof as its sequential form,
//! and bellperson, whose proving system takes the extending path too, agrees bit for bit.

use bellpepper_core::{Circuit, ConstraintSystem, SynthesisError};
use bellperson::groth16 as bp;
use blstrs::{Bls12, G1Projective, G2Projective, Scalar};
use cuzk_groth16::{
    create_proof, generate_parameters_with, prepare_verifying_key, prove, verify_proof, Parameters,
    PreparedParameters, ToxicWaste,
};
use cuzk_synth::{synthesize_full, synthesize_witness, Pce};
use ff::Field;
use group::Group;
use rand_chacha::rand_core::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// Top-level variables, then `parts` independent parts, then more top-level variables. With
/// `extend`, each part is synthesized into its own `CS::new()` where the system allows it.
#[derive(Clone, Debug)]
struct Parts {
    parts: u64,
    extend: bool,
}

/// One part: a public input x, aux y = x², z = y + 1 and w = 0, with ONE and x in B.
fn part<CS: ConstraintSystem<Scalar>>(cs: &mut CS, i: u64) -> Result<(), SynthesisError> {
    let xv = Scalar::from(i + 10);
    let x = cs.alloc_input(|| "x", || Ok(xv))?;
    let y = cs.alloc(|| "y", || Ok(xv.square()))?;
    cs.enforce(|| "x * x = y", |lc| lc + x, |lc| lc + x, |lc| lc + y);
    let z = cs.alloc(|| "z", || Ok(xv.square() + Scalar::ONE))?;
    cs.enforce(
        || "(y + 1) * 1 = z",
        |lc| lc + y + CS::one(),
        |lc| lc + CS::one(),
        |lc| lc + z,
    );
    let w = cs.alloc(|| "w", || Ok(Scalar::ZERO))?;
    cs.enforce(|| "0 * w = 0", |lc| lc, |lc| lc + w, |lc| lc);
    Ok(())
}

impl Circuit<Scalar> for Parts {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let p = cs.alloc_input(|| "p", || Ok(Scalar::from(3)))?;
        let q = cs.alloc(|| "q", || Ok(Scalar::from(9)))?;
        cs.enforce(|| "p * p = q", |lc| lc + p, |lc| lc + p, |lc| lc + q);
        if self.extend && CS::is_extensible() {
            let mut subs = Vec::new();
            for i in 0..self.parts {
                let mut sub = CS::new();
                sub.alloc_input(|| "temp ONE", || Ok(Scalar::ONE))?;
                part(&mut sub.namespace(|| format!("part {i}")), i)?;
                subs.push(sub);
            }
            for sub in &subs {
                cs.extend(sub);
            }
        } else {
            for i in 0..self.parts {
                part(&mut cs.namespace(|| format!("part {i}")), i)?;
            }
        }
        let r = cs.alloc_input(|| "r", || Ok(Scalar::from(5)))?;
        let t = cs.alloc(|| "t", || Ok(Scalar::from(15)))?;
        cs.enforce(|| "r * p = t", |lc| lc + r, |lc| lc + p, |lc| lc + t);
        Ok(())
    }
}

fn circuits(parts: u64) -> (Parts, Parts) {
    (
        Parts {
            parts,
            extend: true,
        },
        Parts {
            parts,
            extend: false,
        },
    )
}

/// The public inputs the verifier gives (ONE excluded).
fn public_inputs(parts: u64) -> Vec<Scalar> {
    let mut v = vec![Scalar::from(3)];
    v.extend((0..parts).map(|i| Scalar::from(i + 10)));
    v.push(Scalar::from(5));
    v
}

#[test]
fn extend_matches_the_sequential_form() {
    for parts in [0, 1, 3] {
        let (ext, seq) = circuits(parts);
        let full = synthesize_full(ext.clone()).unwrap();
        assert_eq!(full, synthesize_full(seq.clone()).unwrap(), "{parts} parts");
        let mut expected = vec![Scalar::ONE];
        expected.extend(public_inputs(parts));
        assert_eq!(
            full.witness.inputs, expected,
            "no temp ONE among the inputs"
        );
        // ONE is in B through the parts only.
        assert_eq!(full.density.b_input.get(0), parts > 0);

        let pce = Pce::record(ext.clone()).unwrap();
        pce.validate().unwrap();
        assert_eq!(pce, Pce::record(seq.clone()).unwrap(), "{parts} parts");
        assert_eq!(pce.num_inputs, 3 + parts as usize);
        assert_eq!(pce.num_aux, 2 + 3 * parts as usize);

        let w = synthesize_witness(ext.clone()).unwrap();
        assert_eq!(w, full.witness);
        assert_eq!(w, synthesize_witness(seq).unwrap());
        assert_eq!(
            Pce::record_with_witness(ext.clone()).unwrap(),
            (pce.clone(), w.clone()),
            "{parts} parts, recorded and synthesized in one run"
        );
        assert_eq!(pce.synthesize_witness(ext).unwrap(), w);
        assert_eq!(pce.evaluate(&w).unwrap(), full.eval);
        assert_eq!(pce.density(), full.density);
        pce.check_witness(&w).unwrap();
    }
}

#[test]
fn extend_proofs_equal_bellpersons() {
    let parts = 3;
    let (ext, seq) = circuits(parts);
    let inputs = public_inputs(parts);
    let mut rng = ChaCha8Rng::seed_from_u64(8);
    let toxic = ToxicWaste::random(&mut rng);

    let pce = Pce::record(ext.clone()).unwrap();
    let params = generate_parameters_with(&pce, &toxic).unwrap();
    let bp_params = bp::generate_parameters::<Bls12, _>(
        ext.clone(),
        G1Projective::generator(),
        G2Projective::generator(),
        toxic.alpha,
        toxic.beta,
        toxic.gamma,
        toxic.delta,
        toxic.tau,
    )
    .unwrap();
    let mut bytes = Vec::new();
    bp_params.write(&mut bytes).unwrap();
    assert_eq!(Parameters::read(&bytes[..], true).unwrap(), params);

    let prepared = PreparedParameters::from(&params);
    let (r, s) = (Scalar::random(&mut rng), Scalar::random(&mut rng));
    let w = pce.synthesize_witness(ext.clone()).unwrap();
    let by_pce = prove(&prepared, &pce, &w, r, s).unwrap();
    assert_eq!(create_proof(ext.clone(), &prepared, r, s).unwrap(), by_pce);
    assert_eq!(create_proof(seq, &prepared, r, s).unwrap(), by_pce);
    assert!(verify_proof(&prepare_verifying_key(&params.vk), &by_pce, &inputs).unwrap());

    // bellperson's proving assignment is extensible: it takes the extending path.
    let theirs = bp::create_proof(ext, &bp_params, r, s).unwrap();
    let mut their_bytes = Vec::new();
    theirs.write(&mut their_bytes).unwrap();
    assert_eq!(their_bytes[..], by_pce.to_bytes()[..]);
    let bp_pvk = bp::prepare_verifying_key(&bp_params.vk);
    assert!(bp::verify_proof(&bp_pvk, &theirs, &inputs).unwrap());
}
