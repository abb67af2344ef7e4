//! The identifiers requests carry as Lotus and Curio encode them: numeric registered proofs,
//! miner ids as prover ids, commitment CIDs as 32-byte commitments.

use crate::error::{Error, Result};
use filecoin_proofs::{Commitment, ProverId};
use filecoin_proofs_api::{RegisteredPoStProof, RegisteredSealProof, RegisteredUpdateProof};

/// Lowercase hex of bytes, for messages.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The prover id of a miner actor id, as Lotus and Curio derive it: the payload of the ID
/// address (the id as an unsigned LEB128 varint), left-aligned in 32 zero bytes.
pub fn prover_id_from_miner_id(miner_id: u64) -> ProverId {
    let mut id = [0u8; 32];
    let mut v = miner_id;
    for byte in id.iter_mut() {
        *byte = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            break;
        }
        *byte |= 0x80;
    }
    id
}

/// A `RegisteredSealProof` from its number on chain (Go's `abi.RegisteredSealProof`), which
/// is also its position in filecoin-proofs-api's enum.
pub fn registered_seal_proof(value: u64) -> Result<RegisteredSealProof> {
    use RegisteredSealProof::*;
    const ALL: [RegisteredSealProof; 20] = [
        StackedDrg2KiBV1,
        StackedDrg8MiBV1,
        StackedDrg512MiBV1,
        StackedDrg32GiBV1,
        StackedDrg64GiBV1,
        StackedDrg2KiBV1_1,
        StackedDrg8MiBV1_1,
        StackedDrg512MiBV1_1,
        StackedDrg32GiBV1_1,
        StackedDrg64GiBV1_1,
        StackedDrg2KiBV1_1_Feat_SyntheticPoRep,
        StackedDrg8MiBV1_1_Feat_SyntheticPoRep,
        StackedDrg512MiBV1_1_Feat_SyntheticPoRep,
        StackedDrg32GiBV1_1_Feat_SyntheticPoRep,
        StackedDrg64GiBV1_1_Feat_SyntheticPoRep,
        StackedDrg2KiBV1_2_Feat_NonInteractivePoRep,
        StackedDrg8MiBV1_2_Feat_NonInteractivePoRep,
        StackedDrg512MiBV1_2_Feat_NonInteractivePoRep,
        StackedDrg32GiBV1_2_Feat_NonInteractivePoRep,
        StackedDrg64GiBV1_2_Feat_NonInteractivePoRep,
    ];
    lookup(&ALL, value, "RegisteredSealProof")
}

/// A `RegisteredPoStProof` from its number on chain. Go's WindowPoSt `V1_1` types (10–14)
/// are filecoin-proofs-api's `V1_2` ones (the grindability fix), as in Lotus' FFI.
pub fn registered_post_proof(value: u64) -> Result<RegisteredPoStProof> {
    use RegisteredPoStProof::*;
    const ALL: [RegisteredPoStProof; 15] = [
        StackedDrgWinning2KiBV1,
        StackedDrgWinning8MiBV1,
        StackedDrgWinning512MiBV1,
        StackedDrgWinning32GiBV1,
        StackedDrgWinning64GiBV1,
        StackedDrgWindow2KiBV1,
        StackedDrgWindow8MiBV1,
        StackedDrgWindow512MiBV1,
        StackedDrgWindow32GiBV1,
        StackedDrgWindow64GiBV1,
        StackedDrgWindow2KiBV1_2,
        StackedDrgWindow8MiBV1_2,
        StackedDrgWindow512MiBV1_2,
        StackedDrgWindow32GiBV1_2,
        StackedDrgWindow64GiBV1_2,
    ];
    lookup(&ALL, value, "RegisteredPoStProof")
}

/// A `RegisteredUpdateProof` from its number on chain.
pub fn registered_update_proof(value: u64) -> Result<RegisteredUpdateProof> {
    use RegisteredUpdateProof::*;
    const ALL: [RegisteredUpdateProof; 5] = [
        StackedDrg2KiBV1,
        StackedDrg8MiBV1,
        StackedDrg512MiBV1,
        StackedDrg32GiBV1,
        StackedDrg64GiBV1,
    ];
    lookup(&ALL, value, "RegisteredUpdateProof")
}

fn lookup<T: Copy>(all: &[T], value: u64, what: &'static str) -> Result<T> {
    usize::try_from(value)
        .ok()
        .and_then(|i| all.get(i).copied())
        .ok_or(Error::UnknownRegisteredProof { what, value })
}

/// Multicodec of an unsealed (piece) commitment CID.
const FIL_COMMITMENT_UNSEALED: u64 = 0xf101;
/// Multicodec of a sealed commitment CID.
const FIL_COMMITMENT_SEALED: u64 = 0xf102;
/// Multihash of comm_d: SHA2-256 with the top two bits cleared.
const SHA2_256_TRUNC254_PADDED: u64 = 0x1012;
/// Multihash of comm_r: Poseidon over BLS12-381, arity 2, Filecoin's constants.
const POSEIDON_BLS12_381_A2_FC1: u64 = 0xb401;

/// The 32-byte commitment inside a binary Filecoin commitment CID (CIDv1, codec
/// `fil-commitment-sealed` or `-unsealed`, a 32-byte digest); `name` names it in errors.
pub fn commitment_from_cid(name: &'static str, cid: &[u8]) -> Result<Commitment> {
    parse_cid(name, cid).map(|(_, commitment)| commitment)
}

/// Like [`commitment_from_cid`], for a sealed commitment (comm_r): an unsealed one is an error.
pub fn sealed_commitment_from_cid(name: &'static str, cid: &[u8]) -> Result<Commitment> {
    of_codec(
        name,
        cid,
        FIL_COMMITMENT_SEALED,
        "fil-commitment-sealed (comm_r)",
    )
}

/// Like [`commitment_from_cid`], for an unsealed commitment (comm_d): a sealed one is an error.
pub fn unsealed_commitment_from_cid(name: &'static str, cid: &[u8]) -> Result<Commitment> {
    of_codec(
        name,
        cid,
        FIL_COMMITMENT_UNSEALED,
        "fil-commitment-unsealed (comm_d)",
    )
}

fn of_codec(name: &'static str, cid: &[u8], want: u64, what: &str) -> Result<Commitment> {
    let (codec, commitment) = parse_cid(name, cid)?;
    if codec != want {
        return Err(Error::InvalidCid {
            name,
            hex: hex(cid),
            reason: format!("codec {codec:#x}, expected {want:#x}, {what}"),
        });
    }
    Ok(commitment)
}

/// A commitment as a request field carries it: 32 raw bytes (what Curio sends) or a binary
/// commitment CID of the expected codec (36 or more bytes; sealed for comm_r, unsealed for
/// comm_d). Raw bytes must be a canonical BLS12-381 scalar, as every comm_r and comm_d is.
pub fn commitment_field(name: &'static str, bytes: &[u8], sealed: bool) -> Result<Commitment> {
    if bytes.len() != 32 {
        return if sealed {
            sealed_commitment_from_cid(name, bytes)
        } else {
            unsealed_commitment_from_cid(name, bytes)
        };
    }
    let mut commitment = [0u8; 32];
    commitment.copy_from_slice(bytes);
    if bool::from(<blstrs::Scalar as ff::PrimeField>::from_repr(commitment).is_none()) {
        return Err(Error::InvalidCid {
            name,
            hex: hex(bytes),
            reason: "32 raw bytes that are not a canonical BLS12-381 scalar (little-endian), \
                     which every commitment is"
                .to_string(),
        });
    }
    Ok(commitment)
}

/// The codec and the commitment of a binary Filecoin commitment CID.
fn parse_cid(name: &'static str, cid: &[u8]) -> Result<(u64, Commitment)> {
    let bad = |reason: String| Error::InvalidCid {
        name,
        hex: hex(cid),
        reason,
    };
    let mut rest = cid;
    let mut next = |what: &str| {
        read_varint(&mut rest).ok_or_else(|| bad(format!("truncated or bad varint in {what}")))
    };
    let version = next("version")?;
    let codec = next("codec")?;
    let hash = next("multihash code")?;
    let len = next("digest length")?;
    if version != 1 {
        return Err(bad(format!("CID version {version}, expected 1")));
    }
    let expected_hash = match codec {
        FIL_COMMITMENT_UNSEALED => SHA2_256_TRUNC254_PADDED,
        FIL_COMMITMENT_SEALED => POSEIDON_BLS12_381_A2_FC1,
        _ => {
            return Err(bad(format!(
                "codec {codec:#x} is not a Filecoin commitment"
            )))
        }
    };
    if hash != expected_hash {
        return Err(bad(format!(
            "multihash {hash:#x}, expected {expected_hash:#x} for codec {codec:#x}"
        )));
    }
    if len != 32 || rest.len() != 32 {
        return Err(bad(format!(
            "digest of {} bytes (announced {len}), expected 32",
            rest.len()
        )));
    }
    let mut out = [0u8; 32];
    out.copy_from_slice(rest);
    Ok((codec, out))
}

fn read_varint(bytes: &mut &[u8]) -> Option<u64> {
    let mut value = 0u64;
    for (i, &b) in bytes.iter().enumerate().take(9) {
        value |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            *bytes = &bytes[i + 1..];
            return Some(value);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prover_ids_are_leb128_payloads() {
        assert_eq!(prover_id_from_miner_id(0)[..2], [0, 0]);
        assert_eq!(prover_id_from_miner_id(127)[..2], [0x7f, 0]);
        assert_eq!(prover_id_from_miner_id(128)[..3], [0x80, 0x01, 0]);
        assert_eq!(prover_id_from_miner_id(1000)[..3], [0xe8, 0x07, 0]);
    }

    #[test]
    fn registered_numbers_follow_the_chain() {
        assert_eq!(
            registered_seal_proof(8).unwrap(),
            RegisteredSealProof::StackedDrg32GiBV1_1
        );
        // NI-PoRep: 15–19, as filecoin-proofs-api numbers them (its porep ids carry them).
        for (n, ni) in [
            (
                15,
                RegisteredSealProof::StackedDrg2KiBV1_2_Feat_NonInteractivePoRep,
            ),
            (
                18,
                RegisteredSealProof::StackedDrg32GiBV1_2_Feat_NonInteractivePoRep,
            ),
            (
                19,
                RegisteredSealProof::StackedDrg64GiBV1_2_Feat_NonInteractivePoRep,
            ),
        ] {
            let found = registered_seal_proof(n).unwrap();
            assert_eq!(found, ni);
            assert_eq!(u64::from(found.as_v1_config().porep_id[0]), n);
        }
        assert!(matches!(
            registered_seal_proof(20),
            Err(Error::UnknownRegisteredProof { value: 20, .. })
        ));
        assert_eq!(
            registered_post_proof(13).unwrap(),
            RegisteredPoStProof::StackedDrgWindow32GiBV1_2
        );
        assert_eq!(
            registered_update_proof(3).unwrap(),
            RegisteredUpdateProof::StackedDrg32GiBV1
        );
        assert!(matches!(
            registered_post_proof(15),
            Err(Error::UnknownRegisteredProof { value: 15, .. })
        ));
    }

    #[test]
    fn commitment_cids_round_trip() {
        // CIDv1, fil-commitment-sealed, poseidon-bls12_381-a2-fc1, 32 bytes.
        let mut cid = vec![0x01, 0x82, 0xe2, 0x03, 0x81, 0xe8, 0x02, 0x20];
        cid.extend_from_slice(&[7u8; 32]);
        assert_eq!(commitment_from_cid("comm_r_new", &cid).unwrap(), [7u8; 32]);
        cid[1] = 0x81; // unsealed codec with the sealed hash
        assert!(matches!(
            commitment_from_cid("x", &cid),
            Err(Error::InvalidCid { .. })
        ));
        assert!(commitment_from_cid("x", &cid[..20]).is_err());
        // The typed forms hold a field to its kind of commitment.
        cid[1] = 0x82;
        assert_eq!(sealed_commitment_from_cid("x", &cid).unwrap(), [7u8; 32]);
        let err = unsealed_commitment_from_cid("comm_d_new", &cid).unwrap_err();
        assert!(
            matches!(&err, Error::InvalidCid { name: "comm_d_new", reason, .. } if reason.contains("fil-commitment-unsealed")),
            "{err}"
        );
        let mut unsealed = vec![0x01, 0x81, 0xe2, 0x03, 0x92, 0x20, 0x20];
        unsealed.extend_from_slice(&[9u8; 32]);
        assert_eq!(
            unsealed_commitment_from_cid("x", &unsealed).unwrap(),
            [9u8; 32]
        );
        assert!(sealed_commitment_from_cid("x", &unsealed).is_err());
    }

    #[test]
    fn commitment_fields_are_raw_or_cids() {
        // Raw 32 bytes, as Curio sends them, whatever the kind of commitment.
        assert_eq!(
            commitment_field("comm_r_new", &[7; 32], true).unwrap(),
            [7; 32]
        );
        assert_eq!(
            commitment_field("comm_d_new", &[7; 32], false).unwrap(),
            [7; 32]
        );
        // Not a canonical scalar: refused, naming the field.
        let err = commitment_field("comm_r_old", &[0xff; 32], true).unwrap_err();
        assert!(err.to_string().contains("comm_r_old"), "{err}");
        // A CID of the right codec, or of the wrong one.
        let mut sealed = vec![0x01, 0x82, 0xe2, 0x03, 0x81, 0xe8, 0x02, 0x20];
        sealed.extend_from_slice(&[5u8; 32]);
        assert_eq!(
            commitment_field("comm_r_new", &sealed, true).unwrap(),
            [5; 32]
        );
        assert!(commitment_field("comm_d_new", &sealed, false).is_err());
        // Any other length is read as a CID and refused as one.
        assert!(commitment_field("comm_r_new", &[1; 31], true).is_err());
    }
}
