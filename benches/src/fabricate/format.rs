//! The encodings of a fabricated C1 output: filecoin-proofs-api's JSON (as Lotus and Curio
//! pass it), Curio's lotus-bench envelope around it, or filecoin-proofs' own JSON (API 1.2).

use base64::Engine as _;
use filecoin_proofs_api::seal::{SealCommitPhase1Output as ApiC1, VanillaSealProof as ApiProofs};
use serde::Serialize;
use std::str::FromStr;

use super::error::Error;
use super::{Fabricated, Size, C1};

/// How a C1 output is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// filecoin-proofs-api's `SealCommitPhase1Output` JSON (API 1.0, 1.1); filecoin-proofs'
    /// own for API 1.2.
    Json,
    /// lotus-bench's and Curio's envelope: `{"SectorNum", "Phase1Out": base64 of the API
    /// JSON, "SectorSize"}` (API 1.0, 1.1).
    Wrapper,
}

impl FromStr for Format {
    type Err = Error;
    fn from_str(s: &str) -> Result<Format, Error> {
        match s {
            "json" => Ok(Format::Json),
            "wrapper" => Ok(Format::Wrapper),
            _ => Err(Error::Unknown {
                what: "format",
                found: s.to_string(),
                expected: "json, wrapper",
            }),
        }
    }
}

/// Curio's `C1OutputWrapper`.
#[derive(Serialize)]
struct Envelope<'a> {
    #[serde(rename = "SectorNum")]
    sector_num: u64,
    #[serde(rename = "Phase1Out")]
    phase1_out: &'a str,
    #[serde(rename = "SectorSize")]
    sector_size: u64,
}

impl Fabricated {
    /// filecoin-proofs-api's C1 output (a copy of the proofs), for API 1.0 and 1.1.
    pub fn api(&self) -> Result<ApiC1, Error> {
        let registered_proof =
            self.spec
                .target
                .registered_proof()
                .ok_or_else(|| Error::NoRegisteredProof {
                    api: self.config.api_version.to_string(),
                })?;
        let p = self.c1.public();
        let vanilla_proofs = match (&self.c1, self.size) {
            (C1::Base(c), Size::KiB2) => ApiProofs::StackedDrg2KiBV1(c.vanilla_proofs.clone()),
            (C1::Base(c), Size::MiB8) => ApiProofs::StackedDrg8MiBV1(c.vanilla_proofs.clone()),
            (C1::Base(c), _) => ApiProofs::StackedDrg512MiBV1(c.vanilla_proofs.clone()),
            (C1::Sub8(c), _) => ApiProofs::StackedDrg32GiBV1(c.vanilla_proofs.clone()),
            (C1::Top2(c), _) => ApiProofs::StackedDrg64GiBV1(c.vanilla_proofs.clone()),
        };
        Ok(ApiC1 {
            registered_proof,
            vanilla_proofs,
            comm_r: p.comm_r,
            comm_d: p.comm_d,
            replica_id: p.replica_id,
            seed: p.seed,
            ticket: p.ticket,
        })
    }

    /// The JSON: filecoin-proofs-api's for API 1.0 and 1.1, filecoin-proofs' own for 1.2.
    pub fn json(&self) -> Result<Vec<u8>, Error> {
        if self.spec.target.registered_proof().is_some() {
            return Ok(serde_json::to_vec(&self.api()?)?);
        }
        Ok(match &self.c1 {
            C1::Base(c) => serde_json::to_vec(c)?,
            C1::Sub8(c) => serde_json::to_vec(c)?,
            C1::Top2(c) => serde_json::to_vec(c)?,
        })
    }

    /// Curio's envelope around filecoin-proofs-api's JSON (API 1.0 and 1.1).
    pub fn wrapper(&self) -> Result<Vec<u8>, Error> {
        let json = serde_json::to_vec(&self.api()?)?;
        let b64 = base64::engine::general_purpose::STANDARD.encode(json);
        Ok(serde_json::to_vec(&Envelope {
            sector_num: self.spec.sector,
            phase1_out: &b64,
            sector_size: self.size.bytes(),
        })?)
    }

    /// The output in `format`.
    pub fn encode(&self, format: Format) -> Result<Vec<u8>, Error> {
        match format {
            Format::Json => self.json(),
            Format::Wrapper => self.wrapper(),
        }
    }
}
