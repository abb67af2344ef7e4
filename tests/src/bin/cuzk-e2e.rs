//! `cargo xtask e2e`: proves the sample circuits end to end on the CPU backend, verifies
//! every proof with cuzk's and bellperson's verifiers, and prints a timing table.

use anyhow::{bail, ensure, Context, Result};
use bellpepper_core::Circuit;
use cuzk_circuits::{Sha256Preimage, SyntheticPoRep};
use cuzk_field::Scalar;
use cuzk_groth16::{
    generate_parameters, prepare_verifying_key, prove, verify_proof, PreparedParameters, Proof,
};
use cuzk_synth::{synthesize_witness, Pce};
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use serde::Deserialize;
use std::time::{Duration, Instant};

/// The configuration compiled into the binary; `--config <file>` replaces it.
const DEFAULT_CONFIG: &str = include_str!("../e2e.toml");

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Config {
    job: Vec<Job>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Job {
    circuit: String,
    preimage_bytes: Option<usize>,
    log_constraints: Option<u32>,
    #[serde(default = "one")]
    proofs: usize,
    #[serde(default)]
    seed: u64,
}

fn one() -> usize {
    1
}

#[derive(Debug)]
struct Row {
    name: String,
    constraints: usize,
    record: Duration,
    paramgen: Duration,
    witness: Duration,
    prove: Duration,
    verify: Duration,
    proofs: usize,
}

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let text = match args.as_slice() {
        [] => DEFAULT_CONFIG.to_string(),
        [flag, path] if flag == "--config" => {
            std::fs::read_to_string(path).with_context(|| format!("reading e2e config {path}"))?
        }
        _ => bail!("usage: cuzk-e2e [--config <file.toml>]"),
    };
    let config: Config = toml::from_str(&text).context("parsing the e2e config")?;
    ensure!(!config.job.is_empty(), "the e2e config lists no job");

    eprintln!(
        "cuzk e2e: backend = cpu (in-process), {} job(s)",
        config.job.len()
    );
    let mut rows = Vec::new();
    for job in &config.job {
        let row = match job.circuit.as_str() {
            "sha256" => {
                let len = job
                    .preimage_bytes
                    .context("sha256 job needs preimage_bytes")?;
                let preimage: Vec<u8> = (0..len).map(|i| (i as u64 ^ job.seed) as u8).collect();
                let c = Sha256Preimage::new(preimage);
                let inputs = c.public_inputs();
                run_job(format!("sha256 {len} B"), job, || c.clone(), &inputs)?
            }
            "synthetic-porep" => {
                let log = job
                    .log_constraints
                    .context("synthetic-porep job needs log_constraints")?;
                let c = SyntheticPoRep::new(1 << log, job.seed);
                let inputs = c.public_inputs();
                run_job(format!("synthetic-porep 2^{log}"), job, || c, &inputs)?
            }
            other => bail!(
                "unknown circuit {other:?} in the e2e config (known: sha256, synthetic-porep)"
            ),
        };
        rows.push(row);
    }
    print_table(&rows);
    Ok(())
}

fn run_job<C, F>(name: String, job: &Job, make: F, inputs: &[Scalar]) -> Result<Row>
where
    C: Circuit<Scalar>,
    F: Fn() -> C,
{
    eprintln!("==> {name}: recording the PCE");
    let t = Instant::now();
    let pce = Pce::record(make()).with_context(|| format!("{name}: recording"))?;
    let record = t.elapsed();

    eprintln!(
        "==> {name}: generating parameters ({} rows)",
        pce.num_rows()
    );
    let mut rng = ChaCha20Rng::seed_from_u64(job.seed ^ 0xe2e);
    let t = Instant::now();
    let params =
        generate_parameters(&pce, &mut rng).with_context(|| format!("{name}: parameters"))?;
    let paramgen = t.elapsed();

    let mut vk_bytes = Vec::new();
    params.vk.write(&mut vk_bytes)?;
    let bp_vk = bellperson::groth16::VerifyingKey::<blstrs::Bls12>::read(&vk_bytes[..])
        .context("bellperson reading cuzk's verifying key")?;
    let bp_pvk = bellperson::groth16::prepare_verifying_key(&bp_vk);
    let pvk = prepare_verifying_key(&params.vk);
    let params = PreparedParameters::from(params);

    let (mut witness_t, mut prove_t, mut verify_t) =
        (Duration::ZERO, Duration::ZERO, Duration::ZERO);
    for i in 0..job.proofs {
        eprintln!("==> {name}: proof {}/{}", i + 1, job.proofs);
        let t = Instant::now();
        let witness = synthesize_witness(make()).with_context(|| format!("{name}: witness"))?;
        witness_t += t.elapsed();

        let t = Instant::now();
        let r = ff::Field::random(&mut rng);
        let s = ff::Field::random(&mut rng);
        let proof =
            prove(&params, &pce, &witness, r, s).with_context(|| format!("{name}: proving"))?;
        prove_t += t.elapsed();

        let t = Instant::now();
        ensure!(
            verify_proof(&pvk, &proof, inputs)?,
            "{name}: cuzk's verifier rejected proof {i}"
        );
        let bp_proof = bellperson::groth16::Proof::<blstrs::Bls12>::read(&proof.to_bytes()[..])?;
        let ok = bellperson::groth16::verify_proof(&bp_pvk, &bp_proof, inputs)
            .map_err(|e| anyhow::anyhow!("{name}: bellperson's verifier failed: {e}"))?;
        ensure!(ok, "{name}: bellperson's verifier rejected proof {i}");
        verify_t += t.elapsed();
        debug_assert_eq!(Proof::from_bytes(&proof.to_bytes())?, proof);
    }
    let n = job.proofs.max(1) as u32;
    Ok(Row {
        name,
        constraints: pce.num_constraints,
        record,
        paramgen,
        witness: witness_t / n,
        prove: prove_t / n,
        verify: verify_t / n,
        proofs: job.proofs,
    })
}

fn print_table(rows: &[Row]) {
    let ms = |d: Duration| format!("{:.1}", d.as_secs_f64() * 1e3);
    println!();
    println!(
        "| circuit | constraints | proofs | PCE record ms | paramgen ms | witness ms/proof | prove ms/proof | verify (cuzk + bellperson) ms/proof | result |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    for r in rows {
        println!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | verified |",
            r.name,
            r.constraints,
            r.proofs,
            ms(r.record),
            ms(r.paramgen),
            ms(r.witness),
            ms(r.prove),
            ms(r.verify)
        );
    }
}
