//! The built-in `synthetic-porep` kind: the PoRep-shaped synthetic circuit at a chosen
//! size, in one or more partitions.

use cuzk_circuits::SyntheticPoRep;
use cuzk_field::Scalar;
use cuzk_plugin::inputs::{bytes_len, field, only_fields};
use cuzk_plugin::{CircuitKind, InputError, Instance};
use cuzk_plugin::{Inputs, Shape};
use cuzk_synth::{Pce, SynthError, Witness};
use std::sync::Arc;

/// Fields the kind reads.
const FIELDS: [&str; 4] = ["log2_constraints", "num_constraints", "seed", "partitions"];

/// The prefix of the kind's circuit keys, `synthetic-porep-<constraints>`.
const KEY_PREFIX: &str = "synthetic-porep-";

/// `synthetic-porep`: the size as `log2_constraints` (2^k constraints) or
/// `num_constraints` (exactly that many; one of the two is required), `seed` (default 0)
/// and `partitions` (default 1); no bytes. Partition i uses seed `seed + i`, so the
/// partitions are distinct proofs of one circuit, as a PoRep's are.
///
/// The QAP has one row per constraint plus one per public input (2), so 2^k constraints
/// need a domain of 2^(k+1); `num_constraints = 2^k − 2` fills a domain of exactly 2^k, the
/// shape of a real PoRep partition (which nearly fills 2^27).
#[derive(Clone, Copy, Debug)]
pub struct SyntheticPoRepKind {
    /// Largest `log2_constraints` accepted (and 2^this the largest `num_constraints`).
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
        let by_log2 = inputs.fields.contains_key(FIELDS[0]);
        let by_count = inputs.fields.contains_key(FIELDS[1]);
        let constraints = match (by_log2, by_count) {
            (true, true) => {
                return Err(InputError::Invalid {
                    reason: "give log2_constraints or num_constraints, not both".into(),
                })
            }
            (false, true) => field(inputs, FIELDS[1], None, 1..=1u64 << self.max_log2)?,
            // Absent both, this names log2_constraints as the missing field.
            _ => 1 << field(inputs, FIELDS[0], None, 1..=self.max_log2)?,
        };
        let seed = field(inputs, FIELDS[2], Some(0), 0..=u64::MAX)?;
        let partitions = field(inputs, FIELDS[3], Some(1), 1..=self.max_partitions)?;
        Ok(Arc::new(SyntheticInstance {
            constraints: constraints as usize,
            seed,
            partitions: partitions as usize,
        }))
    }

    fn instance_for_key(&self, circuit_key: &str) -> Option<Arc<dyn Instance>> {
        let constraints: u64 = circuit_key.strip_prefix(KEY_PREFIX)?.parse().ok()?;
        if !(1..=1u64 << self.max_log2).contains(&constraints) {
            return None;
        }
        Some(Arc::new(SyntheticInstance {
            constraints: constraints as usize,
            seed: 0,
            partitions: 1,
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
        // Written from the known shape: what recording gives, without running the circuit
        // through a recorder (at 2^24 constraints that takes minutes and many gigabytes).
        Ok(self.circuit(0).pce())
    }

    fn synthesize(&self, pce: &Pce, partition: usize) -> Result<Witness, SynthError> {
        pce.synthesize_witness(self.circuit(partition))
    }

    fn synthesize_reusing(
        &self,
        pce: &Pce,
        partition: usize,
        spare: Witness,
    ) -> Result<Witness, SynthError> {
        pce.synthesize_witness_reusing(self.circuit(partition), spare)
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
        let exact = kind
            .parse(&Inputs::default().with_field("num_constraints", (1 << 10) - 2))
            .unwrap();
        assert_eq!(exact.circuit_key(), "synthetic-porep-1022");
        assert_eq!(exact.shape().domain_size(), 1 << 10);
        assert!(matches!(
            kind.parse(&inputs.clone().with_field("num_constraints", 5))
                .unwrap_err(),
            InputError::Invalid { .. }
        ));
        assert!(matches!(
            kind.parse(&Inputs::default().with_field("num_constraints", (1 << 27) + 1))
                .unwrap_err(),
            InputError::OutOfRange {
                field: "num_constraints",
                ..
            }
        ));
        let by_key = kind.instance_for_key("synthetic-porep-1022").unwrap();
        assert_eq!(by_key.circuit_key(), "synthetic-porep-1022");
        assert!(kind.instance_for_key("synthetic-porep-x").is_none());
        assert!(kind.instance_for_key("sha256-preimage-3B").is_none());
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
