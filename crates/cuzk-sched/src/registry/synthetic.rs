//! The built-in `synthetic-porep` kind: the PoRep-shaped synthetic circuit at a chosen
//! size, in one or more partitions.

use super::inputs::{bytes_len, field, only_fields};
use super::{CircuitKind, InputError, Instance};
use crate::{Inputs, Shape};
use cuzk_circuits::SyntheticPoRep;
use cuzk_field::Scalar;
use cuzk_synth::{Pce, SynthError, Witness};
use std::sync::Arc;

/// Fields the kind reads.
const FIELDS: [&str; 3] = ["log2_constraints", "seed", "partitions"];

/// `synthetic-porep`: fields `log2_constraints` (required), `seed` (default 0) and
/// `partitions` (default 1); no bytes. Partition i uses seed `seed + i`, so the partitions
/// are distinct proofs of one circuit, as a PoRep's are.
#[derive(Clone, Copy, Debug)]
pub struct SyntheticPoRepKind {
    /// Largest `log2_constraints` accepted.
    pub max_log2: u64,
    /// Most partitions accepted.
    pub max_partitions: u64,
}

impl SyntheticPoRepKind {
    /// The kind's name.
    pub const NAME: &'static str = "synthetic-porep";
}

impl Default for SyntheticPoRepKind {
    /// Up to 2^27 constraints (a 32 GiB PoRep partition's size) and 16 partitions (a
    /// PoRep has 10).
    fn default() -> Self {
        SyntheticPoRepKind {
            max_log2: 27,
            max_partitions: 16,
        }
    }
}

impl CircuitKind for SyntheticPoRepKind {
    fn name(&self) -> &str {
        Self::NAME
    }

    fn parse(&self, inputs: &Inputs) -> Result<Arc<dyn Instance>, InputError> {
        only_fields(inputs, &FIELDS)?;
        bytes_len(inputs, 0..=0)?;
        let log2 = field(inputs, FIELDS[0], None, 1..=self.max_log2)?;
        let seed = field(inputs, FIELDS[1], Some(0), 0..=u64::MAX)?;
        let partitions = field(inputs, FIELDS[2], Some(1), 1..=self.max_partitions)?;
        Ok(Arc::new(SyntheticInstance {
            constraints: 1 << log2,
            seed,
            partitions: partitions as usize,
        }))
    }
}

#[derive(Debug)]
struct SyntheticInstance {
    constraints: usize,
    seed: u64,
    partitions: usize,
}

impl SyntheticInstance {
    fn circuit(&self, partition: usize) -> SyntheticPoRep {
        SyntheticPoRep::new(self.constraints, self.seed.wrapping_add(partition as u64))
    }
}

impl Instance for SyntheticInstance {
    fn circuit_key(&self) -> String {
        self.circuit(0).circuit_key()
    }

    fn partitions(&self) -> usize {
        self.partitions
    }

    fn shape(&self) -> Shape {
        // Exact: one aux per constraint, and the inputs ONE and p.
        Shape {
            constraints: self.constraints,
            inputs: 2,
            aux: self.constraints,
        }
    }

    fn record(&self) -> Result<Pce, SynthError> {
        Pce::record(self.circuit(0))
    }

    fn synthesize(&self, pce: &Pce, partition: usize) -> Result<Witness, SynthError> {
        pce.synthesize_witness(self.circuit(partition))
    }

    fn public_inputs(&self, partition: usize) -> Vec<Scalar> {
        self.circuit(partition).public_inputs()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_fields_with_defaults_and_limits() {
        let kind = SyntheticPoRepKind::default();
        let inputs = Inputs::default().with_field("log2_constraints", 8);
        let instance = kind.parse(&inputs).unwrap();
        assert_eq!(instance.circuit_key(), "synthetic-porep-256");
        assert_eq!(instance.partitions(), 1);
        let pce = instance.record().unwrap();
        assert_eq!(Shape::of(&pce), instance.shape());
        assert_ne!(instance.public_inputs(0), instance.public_inputs(1));

        let too_big = inputs.clone().with_field("log2_constraints", 28);
        assert!(matches!(
            kind.parse(&too_big).unwrap_err(),
            InputError::OutOfRange {
                field: "log2_constraints",
                value: 28,
                ..
            }
        ));
        assert!(matches!(
            kind.parse(&Inputs::default()).unwrap_err(),
            InputError::MissingField {
                field: "log2_constraints"
            }
        ));
        assert!(matches!(
            kind.parse(&inputs.clone().with_field("partitions", 0))
                .unwrap_err(),
            InputError::OutOfRange {
                field: "partitions",
                ..
            }
        ));
        let with_bytes = Inputs {
            bytes: vec![1],
            ..inputs
        };
        assert!(matches!(
            kind.parse(&with_bytes).unwrap_err(),
            InputError::BytesLength { len: 1, .. }
        ));
    }
}
