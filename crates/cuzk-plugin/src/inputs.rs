//! A request's inputs, and reading their named fields and bytes with errors that name what
//! is wrong.

use std::collections::BTreeMap;
use std::ops::RangeInclusive;

/// A request's inputs: raw bytes, named integers and named byte strings, interpreted by the
/// circuit kind.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Inputs {
    /// Opaque bytes (the preimage of `sha256`; a serialized vanilla proof for a Filecoin kind).
    pub bytes: Vec<u8>,
    /// Named integers (`log2_constraints`, `seed`, `partitions` for `synthetic-porep`).
    pub fields: BTreeMap<String, u64>,
    /// Named byte strings beside the main bytes (a Filecoin PoSt's `randomness`, a
    /// SnapDeals request's commitment CIDs).
    pub byte_fields: BTreeMap<String, Vec<u8>>,
    /// A list of byte strings (a PoSt request's vanilla proofs, one per sector; a SnapDeals
    /// request's, one per partition).
    pub parts: Vec<Vec<u8>>,
}

impl Inputs {
    /// Inputs made of these bytes alone.
    pub fn from_bytes(bytes: impl Into<Vec<u8>>) -> Inputs {
        Inputs {
            bytes: bytes.into(),
            ..Inputs::default()
        }
    }

    /// These inputs with field `name` set to `value`.
    pub fn with_field(mut self, name: impl Into<String>, value: u64) -> Inputs {
        self.fields.insert(name.into(), value);
        self
    }

    /// These inputs with `parts` as their list of byte strings.
    pub fn with_parts(mut self, parts: Vec<Vec<u8>>) -> Inputs {
        self.parts = parts;
        self
    }

    /// These inputs with byte field `name` set to `value`.
    pub fn with_byte_field(mut self, name: impl Into<String>, value: impl Into<Vec<u8>>) -> Inputs {
        self.byte_fields.insert(name.into(), value.into());
        self
    }
}

/// Why a circuit kind rejected a request's inputs.
#[derive(Clone, Debug, thiserror::Error, PartialEq, Eq)]
pub enum InputError {
    /// Required field `field` is missing.
    #[error("missing field {field:?}")]
    MissingField {
        /// The field.
        field: &'static str,
    },

    /// Field `field` is not one this kind takes (it takes `expected`).
    #[error("unknown field {field:?} (expected one of: {})", expected.join(", "))]
    UnknownField {
        /// The field given.
        field: String,
        /// The fields this kind takes.
        expected: Vec<&'static str>,
    },

    /// Field `field` is `value`, outside `min..=max`.
    #[error("field {field:?} is {value}, outside {min}..={max}")]
    OutOfRange {
        /// The field.
        field: &'static str,
        /// Its value.
        value: u64,
        /// Smallest allowed.
        min: u64,
        /// Largest allowed.
        max: u64,
    },

    /// The request carries `len` bytes; this kind takes `min..=max`.
    #[error("{len} input bytes given, this kind takes {min}..={max}")]
    BytesLength {
        /// Bytes given.
        len: usize,
        /// Fewest allowed.
        min: usize,
        /// Most allowed.
        max: usize,
    },

    /// The request is well formed, but a file its circuit needs is missing and will not be
    /// made (a parameter file this daemon may not generate): not the caller's mistake, the
    /// host's state.
    #[error("{what} {} is missing: {reason}", path.display())]
    MissingFile {
        /// What the file is ("parameter file").
        what: &'static str,
        /// Where it was looked for.
        path: std::path::PathBuf,
        /// Why it is needed and how to provide it.
        reason: String,
    },

    /// Anything else wrong with the inputs: `reason`.
    #[error("{reason}")]
    Invalid {
        /// What is wrong.
        reason: String,
    },
}

/// Errors on the first field (integer or bytes) of `inputs` not in `expected`.
pub fn only_fields(inputs: &Inputs, expected: &[&'static str]) -> Result<(), InputError> {
    match inputs
        .fields
        .keys()
        .chain(inputs.byte_fields.keys())
        .find(|k| !expected.contains(&k.as_str()))
    {
        None => Ok(()),
        Some(field) => Err(InputError::UnknownField {
            field: field.clone(),
            expected: expected.to_vec(),
        }),
    }
}

/// Field `field` (or `default` when absent; required when `default` is `None`), checked
/// against `range`.
pub fn field(
    inputs: &Inputs,
    field: &'static str,
    default: Option<u64>,
    range: RangeInclusive<u64>,
) -> Result<u64, InputError> {
    let value = inputs
        .fields
        .get(field)
        .copied()
        .or(default)
        .ok_or(InputError::MissingField { field })?;
    if !range.contains(&value) {
        return Err(InputError::OutOfRange {
            field,
            value,
            min: *range.start(),
            max: *range.end(),
        });
    }
    Ok(value)
}

/// Errors unless the input bytes' length is in `range`.
pub fn bytes_len(inputs: &Inputs, range: RangeInclusive<usize>) -> Result<(), InputError> {
    let len = inputs.bytes.len();
    if range.contains(&len) {
        return Ok(());
    }
    Err(InputError::BytesLength {
        len,
        min: *range.start(),
        max: *range.end(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_checked_and_named() {
        let inputs = Inputs::default().with_field("a", 5).with_field("b", 1);
        assert_eq!(field(&inputs, "a", None, 0..=9), Ok(5));
        assert_eq!(field(&inputs, "c", Some(3), 0..=9), Ok(3));
        assert_eq!(
            field(&inputs, "c", None, 0..=9),
            Err(InputError::MissingField { field: "c" })
        );
        assert_eq!(
            field(&inputs, "a", None, 6..=9),
            Err(InputError::OutOfRange {
                field: "a",
                value: 5,
                min: 6,
                max: 9
            })
        );
        assert!(only_fields(&inputs, &["a", "b"]).is_ok());
        let err = only_fields(&inputs, &["a"]).unwrap_err();
        assert_eq!(err.to_string(), "unknown field \"b\" (expected one of: a)");
        assert!(bytes_len(&Inputs::from_bytes(vec![1, 2]), 0..=1).is_err());
        let with_bytes = inputs.with_byte_field("randomness", vec![1]);
        assert!(only_fields(&with_bytes, &["a", "b"]).is_err());
    }
}
