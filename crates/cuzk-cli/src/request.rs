//! A proving request from command-line flags or a TOML file (flags win), in the daemon's
//! wire form.

use anyhow::{bail, Context, Result};
use clap::Args;
use cuzk_proto::{Priority, ProofKind, SubmitProofRequest};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// What to prove. Either a registered circuit (`--circuit`) with its inputs, or a Filecoin
/// proof kind (`--proof-kind`) with its vanilla proof.
#[derive(Args, Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RequestSpec {
    /// A TOML file with these same keys (flags given as well override it).
    #[arg(long = "request", value_name = "FILE")]
    #[serde(skip)]
    pub file: Option<PathBuf>,
    /// A circuit registered in the daemon: sha256, synthetic-porep.
    #[arg(long)]
    pub circuit: Option<String>,
    /// A named integer input, `name=value` (repeatable), e.g. log2_constraints=14.
    #[arg(long = "field", value_name = "NAME=VALUE", value_parser = parse_field)]
    #[serde(skip)]
    pub field_flags: Vec<(String, u64)>,
    /// Named integer inputs (in a request file: a `[fields]` table).
    #[arg(skip)]
    #[serde(default)]
    pub fields: BTreeMap<String, u64>,
    /// The circuit's input bytes in hex (the preimage for sha256).
    #[arg(long)]
    pub input_hex: Option<String>,
    /// A file whose bytes are the circuit's input.
    #[arg(long)]
    pub input_file: Option<PathBuf>,
    /// A Filecoin proof kind: POREP_SEAL_COMMIT, SNAP_DEALS_UPDATE, WINDOW_POST_PARTITION,
    /// WINNING_POST.
    #[arg(long)]
    pub proof_kind: Option<String>,
    /// PoRep C2: the C1 output file (JSON, bare or in Curio's envelope), sent as
    /// `vanilla_proof`.
    #[arg(long)]
    pub vanilla_proof_file: Option<PathBuf>,
    /// PoRep C2 of a C1 output file: filecoin-proofs-api's `SealCommitPhase1Output` JSON,
    /// or Curio's (lotus-bench's) envelope `{"SectorNum", "Phase1Out", "SectorSize"}`, whose
    /// sector number and size are used unless given. The same as `--proof-kind
    /// porep_seal_commit --vanilla-proof-file FILE`; `--miner-id` is still needed (the
    /// prover id is derived from it).
    #[arg(long, value_name = "FILE")]
    pub c1: Option<PathBuf>,
    /// PoSt and SnapDeals: one file per vanilla proof (repeatable, in order), sent as
    /// `vanilla_proofs`: a bincode `FallbackPoStSectorProof` per challenged sector, or a
    /// bincode `PartitionProof` per SnapDeals partition.
    #[arg(long = "vanilla-proofs-file", value_name = "FILE")]
    #[serde(default)]
    pub vanilla_proofs_files: Vec<PathBuf>,
    /// PoSt randomness, 32 bytes in hex.
    #[arg(long)]
    pub randomness_hex: Option<String>,
    /// The partition, for WINDOW_POST_PARTITION.
    #[arg(long)]
    pub partition_index: Option<u32>,
    /// SnapDeals: the sector key's comm_r, in hex (32 raw bytes, or a binary commitment CID).
    #[arg(long)]
    pub comm_r_old: Option<String>,
    /// SnapDeals: the new comm_r, in hex (32 raw bytes, or a binary commitment CID).
    #[arg(long)]
    pub comm_r_new: Option<String>,
    /// SnapDeals: the new comm_d, in hex (32 raw bytes, or a binary commitment CID).
    #[arg(long)]
    pub comm_d_new: Option<String>,
    /// Sector size in bytes.
    #[arg(long)]
    pub sector_size: Option<u64>,
    /// Numeric registered proof type.
    #[arg(long)]
    pub registered_proof: Option<u64>,
    /// Sector number.
    #[arg(long)]
    pub sector_number: Option<u64>,
    /// Miner id.
    #[arg(long)]
    pub miner_id: Option<u64>,
    /// low, normal, high or critical.
    #[arg(long)]
    pub priority: Option<String>,
    /// Fail the job if not done this many milliseconds after submission.
    #[arg(long)]
    pub deadline_ms: Option<u64>,
}

fn parse_field(text: &str) -> Result<(String, u64), String> {
    let (name, value) = text
        .split_once('=')
        .ok_or_else(|| format!("{text:?} is not NAME=VALUE"))?;
    let value = value
        .trim()
        .parse()
        .map_err(|_| format!("{value:?} is not a non-negative integer"))?;
    Ok((name.trim().to_string(), value))
}

impl RequestSpec {
    /// The request file (if any) with these flags on top.
    pub fn resolve(&self) -> Result<RequestSpec> {
        let mut spec = match &self.file {
            None => RequestSpec::default(),
            Some(path) => {
                let text = std::fs::read_to_string(path)
                    .with_context(|| format!("reading {}", path.display()))?;
                let mut spec: RequestSpec =
                    toml::from_str(&text).with_context(|| format!("parsing {}", path.display()))?;
                // Paths in a request file are relative to the file.
                let base = path.parent().unwrap_or(Path::new("."));
                for p in [
                    &mut spec.input_file,
                    &mut spec.vanilla_proof_file,
                    &mut spec.c1,
                ]
                .into_iter()
                .flatten()
                .chain(spec.vanilla_proofs_files.iter_mut())
                {
                    *p = base.join(&*p);
                }
                spec
            }
        };
        macro_rules! take {
            ($($f:ident),*) => { $( if self.$f.is_some() { spec.$f = self.$f.clone(); } )* };
        }
        take!(
            circuit,
            input_hex,
            input_file,
            proof_kind,
            vanilla_proof_file,
            c1,
            randomness_hex,
            partition_index,
            comm_r_old,
            comm_r_new,
            comm_d_new,
            sector_size,
            registered_proof,
            sector_number,
            miner_id,
            priority,
            deadline_ms
        );
        if !self.vanilla_proofs_files.is_empty() {
            spec.vanilla_proofs_files = self.vanilla_proofs_files.clone();
        }
        spec.fields.extend(self.fields.clone());
        spec.fields.extend(self.field_flags.iter().cloned());
        if let Some(path) = spec.c1.clone() {
            spec.apply_c1(&path)?;
        }
        Ok(spec)
    }

    /// Turns `--c1 FILE` into the PoRep C2 request it stands for (see [`RequestSpec::c1`]).
    fn apply_c1(&mut self, path: &Path) -> Result<()> {
        if self.circuit.is_some() || self.vanilla_proof_file.is_some() {
            bail!("--c1 names what to prove: give it without --circuit or --vanilla-proof-file");
        }
        match self.proof_kind.as_deref() {
            None => self.proof_kind = Some("porep_seal_commit".into()),
            Some(k) if k.eq_ignore_ascii_case("porep_seal_commit") => {}
            Some(k) => bail!("--c1 is a PoRep C2 input, not one for --proof-kind {k}"),
        }
        let envelope = read_envelope(path)?;
        if let Some(envelope) = envelope {
            self.sector_number.get_or_insert(envelope.sector_num);
            if let Some(size) = envelope.sector_size {
                self.sector_size.get_or_insert(size);
            }
        }
        if self.sector_number.is_none() {
            bail!(
                "{} is a bare C1 output, which names no sector number: give --sector-number",
                path.display()
            );
        }
        if self.miner_id.is_none() {
            bail!("--c1 needs --miner-id: the miner the sector belongs to (the prover id comes from it)");
        }
        self.vanilla_proof_file = Some(path.to_path_buf());
        Ok(())
    }

    /// Whether anything says what to prove.
    pub fn is_empty(&self) -> bool {
        self.circuit.is_none() && self.proof_kind.is_none()
    }

    /// The wire request.
    pub fn to_submit(&self) -> Result<SubmitProofRequest> {
        let mut r = SubmitProofRequest {
            circuit: self.circuit.clone().unwrap_or_default(),
            circuit_fields: self.fields.clone().into_iter().collect(),
            sector_size: self.sector_size.unwrap_or(0),
            registered_proof: self.registered_proof.unwrap_or(0),
            sector_number: self.sector_number.unwrap_or(0),
            miner_id: self.miner_id.unwrap_or(0),
            partition_index: self.partition_index.unwrap_or(0),
            deadline_ms: self.deadline_ms.unwrap_or(0),
            ..SubmitProofRequest::default()
        };
        r.circuit_inputs = match (&self.input_hex, &self.input_file) {
            (Some(_), Some(_)) => bail!("give --input-hex or --input-file, not both"),
            (Some(hex), None) => decode_hex(hex)?,
            (None, Some(path)) => {
                std::fs::read(path).with_context(|| format!("reading {}", path.display()))?
            }
            (None, None) => Vec::new(),
        };
        if let Some(kind) = &self.proof_kind {
            let kind = ProofKind::from_str_name(&kind.to_ascii_uppercase())
                .with_context(|| format!("unknown proof kind {kind:?}"))?;
            r.proof_kind = kind.into();
        }
        if let Some(path) = &self.vanilla_proof_file {
            r.vanilla_proof =
                std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
        }
        for path in &self.vanilla_proofs_files {
            r.vanilla_proofs
                .push(std::fs::read(path).with_context(|| format!("reading {}", path.display()))?);
        }
        for (flag, hex, field) in [
            ("--randomness-hex", &self.randomness_hex, &mut r.randomness),
            ("--comm-r-old", &self.comm_r_old, &mut r.comm_r_old),
            ("--comm-r-new", &self.comm_r_new, &mut r.comm_r_new),
            ("--comm-d-new", &self.comm_d_new, &mut r.comm_d_new),
        ] {
            if let Some(hex) = hex {
                *field = decode_hex(hex).with_context(|| format!("{flag} {hex:?}"))?;
            }
        }
        if let Some(p) = &self.priority {
            let p = Priority::from_str_name(&p.to_ascii_uppercase())
                .with_context(|| format!("unknown priority {p:?} (low, normal, high, critical)"))?;
            r.priority = p.into();
        }
        Ok(r)
    }

    /// A short description for tables.
    pub fn label(&self) -> String {
        match (&self.circuit, &self.proof_kind) {
            (Some(c), _) if c == "synthetic-porep" => {
                let parts = self.fields.get("partitions").copied().unwrap_or(1);
                match self.fields.get("num_constraints") {
                    Some(&n) => {
                        let domain = (n + 2).next_power_of_two().trailing_zeros();
                        format!("synthetic-porep {n} constraints (domain 2^{domain}) ×{parts}")
                    }
                    None => {
                        let log = self.fields.get("log2_constraints").copied().unwrap_or(0);
                        format!("synthetic-porep 2^{log} ×{parts}")
                    }
                }
            }
            (Some(c), _) => c.clone(),
            (None, Some(k)) => k.clone(),
            (None, None) => "?".into(),
        }
    }
}

/// The sector fields of Curio's C1 envelope (its `Phase1Out` is left to the daemon).
#[derive(Deserialize)]
struct Envelope {
    #[serde(rename = "SectorNum")]
    sector_num: u64,
    #[serde(rename = "SectorSize")]
    sector_size: Option<u64>,
}

/// The envelope's sector fields when `path` holds Curio's envelope; `None` for a bare C1
/// output (which starts with `registered_proof` and has no `SectorNum`).
fn read_envelope(path: &Path) -> Result<Option<Envelope>> {
    #[derive(Deserialize)]
    struct Probe {
        #[serde(rename = "SectorNum")]
        sector_num: Option<u64>,
        #[serde(rename = "SectorSize")]
        sector_size: Option<u64>,
    }
    let file = std::fs::File::open(path).with_context(|| format!("reading {}", path.display()))?;
    let probe: Probe = serde_json::from_reader(std::io::BufReader::new(file))
        .with_context(|| format!("{} is not a JSON C1 output", path.display()))?;
    Ok(probe.sector_num.map(|sector_num| Envelope {
        sector_num,
        sector_size: probe.sector_size,
    }))
}

pub(crate) fn decode_hex(text: &str) -> Result<Vec<u8>> {
    let text = text.trim();
    if !text.len().is_multiple_of(2) {
        bail!("hex needs an even number of digits");
    }
    let digit = |b: u8| char::from(b).to_digit(16).context("not hex");
    text.as_bytes()
        .chunks(2)
        .map(|pair| Ok((digit(pair[0])? * 16 + digit(pair[1])?) as u8))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_override_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("req.toml");
        std::fs::write(
            &file,
            "circuit = \"synthetic-porep\"\npriority = \"low\"\n[fields]\nlog2_constraints = 10\nseed = 4\n",
        )
        .unwrap();
        let flags = RequestSpec {
            file: Some(file),
            priority: Some("high".into()),
            field_flags: vec![("log2_constraints".into(), 12)],
            ..RequestSpec::default()
        };
        let spec = flags.resolve().unwrap();
        let r = spec.to_submit().unwrap();
        assert_eq!(r.circuit, "synthetic-porep");
        assert_eq!(r.circuit_fields["log2_constraints"], 12);
        assert_eq!(r.circuit_fields["seed"], 4);
        assert_eq!(r.priority(), Priority::High);
        assert_eq!(spec.label(), "synthetic-porep 2^12 ×1");
    }

    #[test]
    fn kinds_hex_and_fields_are_checked() {
        let spec = RequestSpec {
            proof_kind: Some("porep_seal_commit".into()),
            input_hex: Some("6162".into()),
            ..RequestSpec::default()
        };
        let r = spec.to_submit().unwrap();
        assert_eq!(r.proof_kind(), ProofKind::PorepSealCommit);
        assert_eq!(r.circuit_inputs, b"ab");
        let bad = RequestSpec {
            proof_kind: Some("nope".into()),
            ..RequestSpec::default()
        };
        assert!(bad.to_submit().is_err());
        let post = RequestSpec {
            proof_kind: Some("WINDOW_POST_PARTITION".into()),
            randomness_hex: Some("07".repeat(32)),
            partition_index: Some(3),
            comm_r_new: Some("0182".into()),
            registered_proof: Some(10),
            ..RequestSpec::default()
        };
        let r = post.to_submit().unwrap();
        assert_eq!(r.proof_kind(), ProofKind::WindowPostPartition);
        assert_eq!(r.randomness, [7; 32]);
        assert_eq!(r.partition_index, 3);
        assert_eq!(r.comm_r_new, [1, 0x82]);
        assert_eq!(r.registered_proof, 10);
        let odd = RequestSpec {
            randomness_hex: Some("7".into()),
            ..post
        };
        assert!(format!("{:#}", odd.to_submit().unwrap_err()).contains("--randomness-hex"));
        assert_eq!(parse_field("seed=3"), Ok(("seed".into(), 3)));
        assert!(parse_field("seed").is_err());
    }

    #[test]
    fn a_c1_file_is_a_porep_request_with_the_envelopes_sector() {
        let dir = tempfile::tempdir().unwrap();
        let envelope = dir.path().join("c1.json");
        let text = r#"{"SectorNum":7,"Phase1Out":"e30=","SectorSize":2048}"#;
        std::fs::write(&envelope, text).unwrap();
        let flags = RequestSpec {
            c1: Some(envelope.clone()),
            miner_id: Some(1000),
            ..RequestSpec::default()
        };
        let r = flags.resolve().unwrap().to_submit().unwrap();
        assert_eq!(r.proof_kind(), ProofKind::PorepSealCommit);
        assert_eq!(
            (r.sector_number, r.sector_size, r.miner_id),
            (7, 2048, 1000)
        );
        assert_eq!(r.vanilla_proof, text.as_bytes());
        // Flags win over the envelope.
        let given = RequestSpec {
            sector_number: Some(9),
            ..flags.clone()
        };
        assert_eq!(
            given.resolve().unwrap().to_submit().unwrap().sector_number,
            9
        );
        // Without a miner, or with another kind: refused, saying why.
        let no_miner = RequestSpec {
            miner_id: None,
            ..flags.clone()
        };
        assert!(format!("{:#}", no_miner.resolve().unwrap_err()).contains("--miner-id"));
        let other = RequestSpec {
            proof_kind: Some("winning_post".into()),
            ..flags.clone()
        };
        assert!(format!("{:#}", other.resolve().unwrap_err()).contains("winning_post"));
        // A bare C1 output names no sector.
        let bare = dir.path().join("bare.json");
        std::fs::write(&bare, r#"{"registered_proof":"StackedDrg2KiBV1_1"}"#).unwrap();
        let bare_flags = RequestSpec {
            c1: Some(bare.clone()),
            ..flags.clone()
        };
        assert!(format!("{:#}", bare_flags.resolve().unwrap_err()).contains("--sector-number"));
        let numbered = RequestSpec {
            sector_number: Some(3),
            ..bare_flags
        };
        let r = numbered.resolve().unwrap().to_submit().unwrap();
        assert_eq!((r.sector_number, r.sector_size), (3, 0));
        // Not JSON at all.
        let junk = dir.path().join("junk");
        std::fs::write(&junk, b"\x00\x01").unwrap();
        let junk_flags = RequestSpec {
            c1: Some(junk),
            ..flags
        };
        assert!(format!("{:#}", junk_flags.resolve().unwrap_err()).contains("not a JSON C1"));
    }
}
