//! A consistent Filecoin PoRep C1 output (`SealCommitPhase1Output`) for a sector that was
//! never sealed: a benchmark and test input for C2 that filecoin-proofs verifies.
//!
//! **What it is.** C2 and `verify_seal` only rehash along the opened paths and re-derive the
//! replica id, the challenges and the parents; none of that reads sector data. Interactive
//! PoRep's challenges depend on the replica id and the seed, not on comm_r, so the generator
//! chooses the seed first and then builds, for exactly the challenged nodes, openings that
//! agree with one another. The result verifies (vanilla proofs, the C2 circuit, `verify_seal`)
//! but proves nothing about storage: on chain the seed comes after comm_r, so this is not a
//! way to seal a sector. It is a committed-capacity sector (all-zero data) whose labels and
//! hashes are pseudorandom where nothing recomputes them.
//!
//! **How.** For the registered proof's (or the test) configuration, exactly as filecoin-proofs
//! sets it (shapes: 2KiB–512MiB base octrees and 2 layers, 32GiB U8/U8/U0 and 64GiB U8/U8/U2
//! with 11 layers; 1 or 10 partitions):
//! - comm_d is the all-zero sector's root; every comm_d path is the ladder of zero subtrees;
//! - the replica id comes from the prover id, sector number, ticket, comm_d and porep id, the
//!   challenges of every partition from the replica id and the seed, as filecoin-proofs
//!   derives them;
//! - each challenged node's parents come from the graph, per node (no parent cache); the
//!   challenged nodes' labels are computed layer by layer, lower nodes first, from their
//!   parents' columns; a node that is only a parent gets random labels; each node has one
//!   column, shared by every challenge and partition that opens it;
//! - comm_c and comm_r_last are sparse trees: the opened leaves, the nodes above them computed
//!   from their children, every other child a random canonical field element drawn once, so
//!   every path of every partition shares one root; comm_r = Poseidon(comm_c, comm_r_last);
//! - the vanilla proofs are filecoin-proofs' types, in challenge order, parents in graph order.
//!
//! Before it is returned, every output passes [`check`]: the replica id and comm_r, the comm_d
//! and comm_r_last paths and every challenged label recomputed from its parents' columns
//! (filecoin-proofs' vanilla verification checks neither; the circuit does), then
//! filecoin-proofs' `verify_all_partitions`. The same check takes an existing C1 output
//! ([`check_api`], [`check`]); a failure names the partition, the challenge and the layer or
//! the opening.
//!
//! SynthPoRep and NI-PoRep are refused ([`Error::NotInteractive`]): their challenges are
//! derived from comm_r. API 1.0 and 1.1 are filecoin-proofs-api's registered proofs (`V1`,
//! `V1_1`, written as its JSON or in Curio's envelope); API 1.2 has no registered interactive
//! proof, so it is filecoin-proofs' own configuration with [`TEST_POREP_ID`] and its own
//! `SealCommitPhase1Output` type.

mod assemble;
mod check;
mod error;
mod format;
mod labels;
mod sparse;

pub use assemble::Shape;
pub use check::{check, check_api, check_parts, Public};
pub use error::{CheckError, Error, Opening, Problem};
pub use format::Format;

use filecoin_proofs::{
    PoRepConfig, ProverId, SealCommitPhase1Output, SectorShapeBase, SectorShapeSub8,
    SectorShapeTop2,
};
use filecoin_proofs_api::RegisteredSealProof;
use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;
use std::fmt;
use std::str::FromStr;
use std::time::{Duration, Instant};
use storage_proofs_core::api_version::ApiVersion;

/// The porep id of API 1.2 outputs: the one filecoin-proofs' own API 1.2 tests use.
pub const TEST_POREP_ID: [u8; 32] = [129; 32];
/// Curio's cuzk-bench default miner.
pub const DEFAULT_MINER: u64 = 1000;

/// A sector size filecoin-proofs has published parameters for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Size {
    KiB2,
    MiB8,
    MiB512,
    GiB32,
    GiB64,
}

impl Size {
    pub const ALL: [Size; 5] = [
        Size::KiB2,
        Size::MiB8,
        Size::MiB512,
        Size::GiB32,
        Size::GiB64,
    ];

    /// The sector's bytes.
    pub fn bytes(self) -> u64 {
        use filecoin_proofs::constants::*;
        match self {
            Size::KiB2 => SECTOR_SIZE_2_KIB,
            Size::MiB8 => SECTOR_SIZE_8_MIB,
            Size::MiB512 => SECTOR_SIZE_512_MIB,
            Size::GiB32 => SECTOR_SIZE_32_GIB,
            Size::GiB64 => SECTOR_SIZE_64_GIB,
        }
    }

    /// The size of `bytes`, if it is one of these.
    pub fn of_bytes(bytes: u64) -> Option<Size> {
        Size::ALL.into_iter().find(|s| s.bytes() == bytes)
    }

    fn name(self) -> &'static str {
        ["2KiB", "8MiB", "512MiB", "32GiB", "64GiB"][self as usize]
    }
}

impl fmt::Display for Size {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Size {
    type Err = Error;
    fn from_str(s: &str) -> Result<Size, Error> {
        Size::ALL
            .into_iter()
            .find(|z| z.name().eq_ignore_ascii_case(s))
            .ok_or_else(|| unknown("sector size", s, "2KiB, 8MiB, 512MiB, 32GiB, 64GiB"))
    }
}

/// The PoRep API version.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Api {
    /// `StackedDrg*V1`.
    V1_0,
    /// `StackedDrg*V1_1`.
    V1_1,
    /// filecoin-proofs' `ApiVersion::V1_2_0` with [`TEST_POREP_ID`].
    V1_2,
}

impl FromStr for Api {
    type Err = Error;
    fn from_str(s: &str) -> Result<Api, Error> {
        match s {
            "1.0" => Ok(Api::V1_0),
            "1.1" => Ok(Api::V1_1),
            "1.2" => Ok(Api::V1_2),
            _ => Err(unknown("API version", s, "1.0, 1.1, 1.2")),
        }
    }
}

/// Which PoRep; only interactive PoRep can be fabricated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Porep {
    Interactive,
    /// `*_Feat_SyntheticPoRep` (refused).
    Synthetic,
    /// `*_Feat_NonInteractivePoRep` (refused).
    NonInteractive,
}

impl FromStr for Porep {
    type Err = Error;
    fn from_str(s: &str) -> Result<Porep, Error> {
        match s {
            "interactive" => Ok(Porep::Interactive),
            "synthetic" => Ok(Porep::Synthetic),
            "non-interactive" | "ni" => Ok(Porep::NonInteractive),
            _ => Err(unknown(
                "PoRep",
                s,
                "interactive, synthetic, non-interactive",
            )),
        }
    }
}

fn unknown(what: &'static str, found: &str, expected: &'static str) -> Error {
    Error::Unknown {
        what,
        found: found.to_string(),
        expected,
    }
}

/// The configuration an output is made for.
#[derive(Clone, Debug)]
pub enum Target {
    /// A filecoin-proofs-api registered proof (its porep id and API version).
    Registered(RegisteredSealProof),
    /// filecoin-proofs' own configuration (API 1.2 with the test porep id).
    Config(PoRepConfig),
}

impl Target {
    /// The target of a size, API version and PoRep. SynthPoRep and NI-PoRep are their
    /// registered proofs (which [`fabricate`] refuses).
    pub fn new(size: Size, api: Api, porep: Porep) -> Target {
        use RegisteredSealProof::*;
        let pick = |p: [RegisteredSealProof; 5]| Target::Registered(p[size as usize]);
        match (porep, api) {
            (Porep::Synthetic, _) => pick([
                StackedDrg2KiBV1_1_Feat_SyntheticPoRep,
                StackedDrg8MiBV1_1_Feat_SyntheticPoRep,
                StackedDrg512MiBV1_1_Feat_SyntheticPoRep,
                StackedDrg32GiBV1_1_Feat_SyntheticPoRep,
                StackedDrg64GiBV1_1_Feat_SyntheticPoRep,
            ]),
            (Porep::NonInteractive, _) => pick([
                StackedDrg2KiBV1_2_Feat_NonInteractivePoRep,
                StackedDrg8MiBV1_2_Feat_NonInteractivePoRep,
                StackedDrg512MiBV1_2_Feat_NonInteractivePoRep,
                StackedDrg32GiBV1_2_Feat_NonInteractivePoRep,
                StackedDrg64GiBV1_2_Feat_NonInteractivePoRep,
            ]),
            (Porep::Interactive, Api::V1_0) => pick([
                StackedDrg2KiBV1,
                StackedDrg8MiBV1,
                StackedDrg512MiBV1,
                StackedDrg32GiBV1,
                StackedDrg64GiBV1,
            ]),
            (Porep::Interactive, Api::V1_1) => pick([
                StackedDrg2KiBV1_1,
                StackedDrg8MiBV1_1,
                StackedDrg512MiBV1_1,
                StackedDrg32GiBV1_1,
                StackedDrg64GiBV1_1,
            ]),
            (Porep::Interactive, Api::V1_2) => Target::Config(PoRepConfig::new_groth16(
                size.bytes(),
                TEST_POREP_ID,
                ApiVersion::V1_2_0,
            )),
        }
    }

    /// filecoin-proofs' configuration.
    pub fn config(&self) -> PoRepConfig {
        match self {
            Target::Registered(r) => r.as_v1_config(),
            Target::Config(c) => c.clone(),
        }
    }

    /// The registered proof, for API 1.0 and 1.1.
    pub fn registered_proof(&self) -> Option<RegisteredSealProof> {
        match self {
            Target::Registered(r) => Some(*r),
            Target::Config(_) => None,
        }
    }
}

/// What to fabricate.
#[derive(Clone, Debug)]
pub struct Spec {
    pub target: Target,
    /// The miner actor id; the prover id is derived from it as Lotus and Curio do.
    pub miner: u64,
    /// The sector number.
    pub sector: u64,
    /// Seeds every random choice (ticket, interactive seed, unopened labels and siblings):
    /// the same spec gives the same output.
    pub seed: u64,
}

impl Spec {
    /// Interactive PoRep of `size` at `api` for Curio's default miner, sector 1.
    pub fn new(size: Size, api: Api, seed: u64) -> Spec {
        Spec {
            target: Target::new(size, api, Porep::Interactive),
            miner: DEFAULT_MINER,
            sector: 1,
            seed,
        }
    }
}

/// filecoin-proofs' C1 output, by tree shape.
#[derive(Debug)]
pub enum C1 {
    /// 2KiB, 8MiB, 512MiB.
    Base(SealCommitPhase1Output<SectorShapeBase>),
    /// 32GiB.
    Sub8(SealCommitPhase1Output<SectorShapeSub8>),
    /// 64GiB.
    Top2(SealCommitPhase1Output<SectorShapeTop2>),
}

macro_rules! each_shape {
    ($c1:expr, $out:ident => $body:expr) => {
        match $c1 {
            C1::Base($out) => $body,
            C1::Sub8($out) => $body,
            C1::Top2($out) => $body,
        }
    };
}

impl C1 {
    /// comm_r, comm_d, replica id, seed and ticket.
    pub fn public(&self) -> Public {
        each_shape!(self, c => Public::of(c))
    }

    /// Partitions, and challenges per partition.
    pub fn shape(&self) -> (usize, usize) {
        each_shape!(self, c => (c.vanilla_proofs.len(), c.vanilla_proofs[0].len()))
    }
}

/// How long the parts took.
#[derive(Clone, Copy, Debug, Default)]
pub struct Timings {
    /// Derivations, labels, trees and proofs.
    pub generate: Duration,
    /// The self-check.
    pub check: Duration,
}

/// A fabricated, self-checked C1 output.
#[derive(Debug)]
pub struct Fabricated {
    pub spec: Spec,
    pub config: PoRepConfig,
    pub size: Size,
    /// The prover id of `spec.miner`.
    pub prover_id: ProverId,
    pub c1: C1,
    pub timings: Timings,
}

impl Fabricated {
    /// The self-check again (it passed when the output was made).
    pub fn check(&self) -> Result<(), CheckError> {
        let (config, id, sector) = (&self.config, &self.prover_id, self.spec.sector);
        each_shape!(&self.c1, c => check(config, c, id, sector))
    }
}

/// A random 32-byte value whose top two bits are clear (a canonical field element, which
/// every consumer of tickets and seeds accepts).
fn randomness(rng: &mut impl RngCore) -> [u8; 32] {
    let mut r = [0u8; 32];
    rng.fill_bytes(&mut r);
    r[31] &= 0b0011_1111;
    r
}

/// Fabricates and self-checks the C1 output `spec` names (see the module docs).
pub fn fabricate(spec: &Spec) -> Result<Fabricated, Error> {
    let config = spec.target.config();
    if let Some(feature) = check::not_interactive(&config) {
        return Err(Error::NotInteractive { feature });
    }
    let bytes = u64::from(config.sector_size);
    let size = Size::of_bytes(bytes).ok_or(Error::UnsupportedSize { bytes })?;
    let prover_id = cuzk_filecoin::ids::prover_id_from_miner_id(spec.miner);
    let mut rng = ChaCha20Rng::seed_from_u64(spec.seed);
    let ticket = randomness(&mut rng);
    let seed = randomness(&mut rng);
    let start = Instant::now();
    let (id, sector) = (&prover_id, spec.sector);
    let c1 = match size {
        Size::KiB2 | Size::MiB8 | Size::MiB512 => C1::Base(assemble::generate(
            &config, id, sector, ticket, seed, &mut rng,
        )?),
        Size::GiB32 => C1::Sub8(assemble::generate(
            &config, id, sector, ticket, seed, &mut rng,
        )?),
        Size::GiB64 => C1::Top2(assemble::generate(
            &config, id, sector, ticket, seed, &mut rng,
        )?),
    };
    let generate = start.elapsed();
    let mut out = Fabricated {
        spec: spec.clone(),
        config,
        size,
        prover_id,
        c1,
        timings: Timings::default(),
    };
    let start = Instant::now();
    out.check()?;
    out.timings = Timings {
        generate,
        check: start.elapsed(),
    };
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use filecoin_proofs::{SectorShape32GiB, SectorShape64GiB, SectorShape8MiB};
    use storage_proofs_core::merkle::compound_path_length;
    use typenum::Unsigned;

    fn path_length<Tree: filecoin_proofs::MerkleTreeTrait>(nodes: usize) -> usize {
        compound_path_length::<Tree::Arity, Tree::SubTreeArity, Tree::TopTreeArity>(nodes)
    }

    #[test]
    fn tree_levels_are_filecoin_proofs_path_lengths() {
        let cases = [
            (
                assemble::arities::<SectorShape8MiB>(1 << 18),
                path_length::<SectorShape8MiB>(1 << 18),
            ),
            (
                assemble::arities::<SectorShape32GiB>(1 << 30),
                path_length::<SectorShape32GiB>(1 << 30),
            ),
            (
                assemble::arities::<SectorShape64GiB>(1 << 31),
                path_length::<SectorShape64GiB>(1 << 31),
            ),
        ];
        for (arities, expected) in cases {
            assert_eq!(arities.len(), expected, "{arities:?}");
        }
        assert_eq!(assemble::arities::<SectorShape32GiB>(1 << 30), vec![8; 10]);
        let top = assemble::arities::<SectorShape64GiB>(1 << 31);
        assert_eq!(top.last(), Some(&typenum::U2::to_usize()));
    }

    #[test]
    fn comm_d_is_the_empty_sector_commitment() {
        // filecoin-proofs builds the whole zero tree (the 32GiB root is checked against the
        // chain's CC commitment in the package tests).
        for size in [Size::KiB2, Size::MiB8] {
            let nodes = (size.bytes() / 32) as usize;
            let ladder = assemble::zero_ladder(nodes);
            let expected = filecoin_proofs::compute_comm_d(size.bytes().into(), &[]).unwrap();
            assert_eq!(assemble::bytes(ladder.last().unwrap()), expected, "{size}");
        }
    }

    #[test]
    fn names_parse() {
        assert_eq!("32gib".parse::<Size>().unwrap(), Size::GiB32);
        assert!("1GiB".parse::<Size>().is_err());
        assert_eq!("1.2".parse::<Api>().unwrap(), Api::V1_2);
        assert_eq!("ni".parse::<Porep>().unwrap(), Porep::NonInteractive);
    }
}
