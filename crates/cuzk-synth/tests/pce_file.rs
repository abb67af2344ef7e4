//! PCE files: round trips, and every kind of damage reported as its own error.

use cuzk_field::{Field, FrRepr, Scalar};
use cuzk_synth::testing::RandomCircuit;
use cuzk_synth::{Pce, SynthError, MAX_KEY_LEN, PCE_FORMAT_VERSION};
use proptest::prelude::*;

const KEY: &str = "random-circuit-seed-3";
/// Length of the fixed header: magic, version, key length, nine counts.
const FIXED: usize = 8 + 4 + 4 + 9 * 8;
/// Offset of the circuit key: the fixed header and its CRC.
const KEY_AT: usize = FIXED + 4;

fn sample() -> Pce {
    Pce::record(RandomCircuit::new(3, 150)).unwrap()
}

fn bytes(pce: &Pce, key: &str) -> Vec<u8> {
    let mut out = Vec::new();
    pce.write_to(&mut out, key).unwrap();
    out
}

/// Recomputes both stored checksums after a deliberate edit, so only the content is wrong.
fn reseal(data: &mut [u8]) {
    let key_len = u32::from_le_bytes(data[12..16].try_into().unwrap()) as usize;
    let crc = crc32fast::hash(&data[..FIXED]);
    data[FIXED..KEY_AT].copy_from_slice(&crc.to_le_bytes());
    let header_end = KEY_AT + key_len;
    let crc = crc32fast::hash(&data[..header_end]);
    data[header_end..header_end + 4].copy_from_slice(&crc.to_le_bytes());
    let end = data.len() - 4;
    let crc = crc32fast::hash(&data[..end]);
    data[end..].copy_from_slice(&crc.to_le_bytes());
}

#[test]
fn file_round_trip() {
    let pce = sample();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("circuit.pce");
    pce.save(&path, KEY).unwrap();
    assert!(!dir.path().join("circuit.pce.partial").exists());
    assert_eq!(Pce::load(&path, Some(KEY)).unwrap(), pce);
    assert_eq!(Pce::load(&path, None).unwrap(), pce);
}

/// `peek` reads the counts a load would find, and the file's length is the loaded PCE's size
/// in memory within its header; another circuit's file is refused as `load` refuses it.
#[test]
fn peek_reads_the_header_alone() {
    let pce = sample();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("circuit.pce");
    pce.save(&path, KEY).unwrap();
    let h = Pce::peek(&path, Some(KEY)).unwrap();
    assert_eq!(
        (h.num_inputs, h.num_aux, h.num_constraints),
        (pce.num_inputs, pce.num_aux, pce.num_constraints)
    );
    assert_eq!(h.nnz, [pce.a.nnz(), pce.b.nnz(), pce.c.nnz()]);
    assert_eq!(h.file_bytes, std::fs::metadata(&path).unwrap().len());
    let heap = pce.heap_bytes();
    assert!(
        h.file_bytes >= heap && h.file_bytes - heap < 4096,
        "file {} bytes, in memory {heap}",
        h.file_bytes
    );
    assert!(matches!(
        Pce::peek(&path, Some("sha256-preimage-64B")),
        Err(SynthError::CircuitMismatch { .. })
    ));
    assert!(matches!(
        Pce::peek(dir.path().join("absent.pce"), None),
        Err(SynthError::Io { .. })
    ));
}

#[test]
fn stream_round_trip() {
    let pce = sample();
    let data = bytes(&pce, KEY);
    assert_eq!(Pce::read_from(&data[..], Some(KEY)).unwrap(), pce);
}

#[test]
fn other_circuit_key_is_a_mismatch() {
    let data = bytes(&sample(), KEY);
    match Pce::read_from(&data[..], Some("sha256-preimage-64B")) {
        Err(SynthError::CircuitMismatch { expected, found }) => {
            assert_eq!(
                (expected.as_str(), found.as_str()),
                ("sha256-preimage-64B", KEY)
            );
        }
        other => panic!("expected CircuitMismatch, got {other:?}"),
    }
}

#[test]
fn magic_and_version_are_checked_first() {
    let mut data = bytes(&sample(), KEY);
    data[0] = b'X';
    assert!(
        matches!(Pce::read_from(&data[..], None), Err(SynthError::BadMagic { found }) if found[0] == b'X')
    );
    let mut data = bytes(&sample(), KEY);
    data[8] = 9;
    assert!(matches!(
        Pce::read_from(&data[..], None),
        Err(SynthError::UnsupportedVersion {
            found: 9,
            supported: PCE_FORMAT_VERSION
        })
    ));
}

#[test]
fn sealed_but_inconsistent_content_is_corrupt() {
    let mut pce = sample();
    let vars = pce.num_vars() as u32;
    pce.b.cols[0] = vars;
    let data = bytes(&pce, KEY);
    match Pce::read_from(&data[..], None) {
        Err(SynthError::Corrupt { what }) => assert!(what.contains(&vars.to_string()), "{what}"),
        other => panic!("expected Corrupt, got {other:?}"),
    }

    // A coefficient at or above the modulus, with valid checksums.
    let pce = sample();
    let mut data = bytes(&pce, KEY);
    let c_table_end = data.len() - 4;
    data[c_table_end - 32..c_table_end].fill(0xff);
    reseal(&mut data);
    match Pce::read_from(&data[..], None) {
        Err(SynthError::Corrupt { what }) => {
            assert!(what.contains("C coefficient table"), "{what}")
        }
        other => panic!("expected Corrupt, got {other:?}"),
    }
}

#[test]
fn bad_coefficient_index_is_corrupt() {
    let mut pce = sample();
    let past_end = pce.b.table.len() as u32;
    pce.b.coeffs[0] = past_end;
    let data = bytes(&pce, KEY);
    match Pce::read_from(&data[..], None) {
        Err(SynthError::Corrupt { what }) => assert!(
            what.starts_with("matrix B") && what.contains(&format!("coefficient index {past_end}")),
            "{what}"
        ),
        other => panic!("expected Corrupt, got {other:?}"),
    }
}

#[test]
fn coefficient_table_must_start_with_one_and_minus_one() {
    let mut pce = sample();
    pce.a.table.swap(0, 1);
    let data = bytes(&pce, KEY);
    match Pce::read_from(&data[..], None) {
        Err(SynthError::Corrupt { what }) => {
            assert!(
                what.starts_with("matrix A") && what.contains("not ONE"),
                "{what}"
            )
        }
        other => panic!("expected Corrupt, got {other:?}"),
    }

    let mut pce = sample();
    pce.c.table.push(Scalar::ZERO);
    let data = bytes(&pce, KEY);
    match Pce::read_from(&data[..], None) {
        Err(SynthError::Corrupt { what }) => {
            assert!(
                what.starts_with("matrix C") && what.contains("zero"),
                "{what}"
            )
        }
        other => panic!("expected Corrupt, got {other:?}"),
    }
}

#[test]
fn oversized_coefficient_table_is_refused_before_allocating() {
    let pce = sample();
    let mut data = bytes(&pce, KEY);
    // B's table length, sealed: far more values than B has entries.
    data[72..80].copy_from_slice(&(1u64 << 40).to_le_bytes());
    reseal(&mut data);
    match Pce::read_from(&data[..], None) {
        Err(SynthError::Corrupt { what }) => {
            assert!(
                what.starts_with("matrix B") && what.contains("table"),
                "{what}"
            )
        }
        other => panic!("expected Corrupt, got {other:?}"),
    }
}

#[test]
fn unused_coefficients_are_left_out_of_the_file() {
    // No entries in B or C: their tables may hold only ONE and -ONE in a file.
    let mut pce = Pce::record(RandomCircuit::new(0, 0)).unwrap();
    pce.b
        .table
        .extend([Scalar::from(2), Scalar::from(3), Scalar::from(5)]);
    let loaded = Pce::read_from(&bytes(&pce, KEY)[..], None).unwrap();
    assert_eq!(loaded.b.table, [Scalar::ONE, -Scalar::ONE]);
    assert_eq!(loaded, pce);

    // Unused values among used ones: indices are renumbered, coefficients kept.
    let mut pce = sample();
    let extra: Vec<Scalar> = (0..pce.a.nnz() as u64 + 3)
        .map(|k| Scalar::from(1000 + k))
        .collect();
    let used = pce.a.table.split_off(2);
    pce.a.table.extend(extra);
    let shift = pce.a.table.len() as u32 - 2;
    pce.a.table.extend(used);
    for k in &mut pce.a.coeffs {
        if *k >= 2 {
            *k += shift;
        }
    }
    pce.validate().unwrap();
    let loaded = Pce::read_from(&bytes(&pce, KEY)[..], None).unwrap();
    assert!(loaded.a.table.len() <= loaded.a.nnz() + 2);
    assert_eq!(loaded, pce);
}

/// A version-1 file (a 64-byte header; a scalar per entry) of the empty circuit.
fn version_1_file() -> Vec<u8> {
    let mut data = Vec::new();
    data.extend_from_slice(b"CUZKPCE\0");
    data.extend_from_slice(&1u32.to_le_bytes());
    data.extend_from_slice(&0u32.to_le_bytes());
    for n in [1u64, 0, 0, 1, 0, 0] {
        data.extend_from_slice(&n.to_le_bytes());
    }
    let crc = crc32fast::hash(&data);
    data.extend_from_slice(&crc.to_le_bytes());
    let crc = crc32fast::hash(&data);
    data.extend_from_slice(&crc.to_le_bytes());
    for p in [0u64, 1] {
        data.extend_from_slice(&p.to_le_bytes());
    }
    data.extend_from_slice(&0u32.to_le_bytes());
    for limb in FrRepr::from(Scalar::ONE).limbs {
        data.extend_from_slice(&limb.to_le_bytes());
    }
    for _ in 0..4 {
        data.extend_from_slice(&0u64.to_le_bytes());
    }
    let crc = crc32fast::hash(&data);
    data.extend_from_slice(&crc.to_le_bytes());
    data
}

#[test]
fn version_1_file_is_unsupported() {
    let data = version_1_file();
    let unsupported = |r: Result<Pce, SynthError>| {
        matches!(
            r,
            Err(SynthError::UnsupportedVersion {
                found: 1,
                supported: PCE_FORMAT_VERSION
            })
        )
    };
    assert!(unsupported(Pce::read_from(&data[..], None)));
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v1.pce");
    std::fs::write(&path, &data).unwrap();
    assert!(unsupported(Pce::load(&path, None)));
    // Whatever the rest, and however short.
    assert!(unsupported(Pce::read_from(&data[..12], None)));
}

#[test]
fn trailing_bytes_in_a_file_are_corrupt() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("circuit.pce");
    let mut data = bytes(&sample(), KEY);
    data.push(0);
    std::fs::write(&path, &data).unwrap();
    assert!(matches!(
        Pce::load(&path, None),
        Err(SynthError::Corrupt { .. })
    ));
}

#[test]
fn missing_file_names_its_path() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("absent.pce");
    match Pce::load(&path, None) {
        Err(SynthError::Io { path: p, .. }) => assert_eq!(p, path),
        other => panic!("expected Io, got {other:?}"),
    }
}

#[test]
fn overlong_key_is_refused() {
    let key = "k".repeat(MAX_KEY_LEN + 1);
    assert!(matches!(
        sample().write_to(Vec::new(), &key),
        Err(SynthError::KeyTooLong { len, max: MAX_KEY_LEN }) if len == MAX_KEY_LEN + 1
    ));
}

#[test]
fn empty_circuit_round_trips() {
    let pce = Pce::record(RandomCircuit::new(0, 0)).unwrap();
    assert_eq!(
        (pce.num_inputs, pce.num_aux, pce.num_constraints),
        (1, 0, 0)
    );
    assert_eq!(Pce::read_from(&bytes(&pce, "")[..], Some("")).unwrap(), pce);
    let w = cuzk_synth::Witness {
        inputs: vec![Scalar::from(1)],
        aux: vec![],
        packed: None,
    };
    assert_eq!(pce.evaluate(&w).unwrap().a, vec![Scalar::from(1)]);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn any_damaged_byte_past_the_version_is_a_checksum_mismatch(at in any::<prop::sample::Index>(), flip in 1u8..=255) {
        let pce = sample();
        let mut data = bytes(&pce, KEY);
        let at = 12 + at.index(data.len() - 12);
        data[at] ^= flip;
        match Pce::read_from(&data[..], Some(KEY)) {
            Err(SynthError::ChecksumMismatch { section, stored, computed }) => {
                prop_assert!(stored != computed);
                prop_assert_eq!(section, if at < KEY_AT + KEY.len() + 4 { "header" } else { "file" });
            }
            other => prop_assert!(false, "byte {}: expected ChecksumMismatch, got {:?}", at, other),
        }
    }

    #[test]
    fn any_truncation_is_reported(cut in any::<prop::sample::Index>()) {
        let pce = sample();
        let data = bytes(&pce, KEY);
        let cut = cut.index(data.len());
        let streamed = Pce::read_from(&data[..cut], None);
        prop_assert!(matches!(streamed, Err(SynthError::Truncated { .. })), "cut at {}: {:?}", cut, streamed);

        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cut.pce");
        std::fs::write(&path, &data[..cut]).unwrap();
        let loaded = Pce::load(&path, None);
        prop_assert!(matches!(loaded, Err(SynthError::Truncated { .. })), "cut at {}: {:?}", cut, loaded);
    }
}

#[test]
fn malformed_pce_is_not_written() {
    let mut pce = sample();
    pce.c.row_ptr.pop();
    match pce.write_to(Vec::new(), KEY) {
        Err(SynthError::Corrupt { what }) => assert!(what.starts_with("matrix C"), "{what}"),
        other => panic!("expected Corrupt, got {other:?}"),
    }
}
