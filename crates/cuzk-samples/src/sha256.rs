//! The built-in `sha256` kind: knowledge of a SHA-256 preimage, the bytes of the request.

use cuzk_circuits::Sha256Preimage;
use cuzk_field::Scalar;
use cuzk_plugin::inputs::{bytes_len, only_fields};
use cuzk_plugin::{CircuitKind, InputError, Instance};
use cuzk_plugin::{Inputs, Shape};
use cuzk_synth::{Pce, SynthError, Witness};
use std::sync::Arc;

/// Longest preimage accepted: 16 KiB is about 7 million constraints, far beyond a sample
/// but still a quick refusal by the memory budget rather than a surprise.
const MAX_PREIMAGE: usize = 16 << 10;

/// `sha256`: the request's bytes are the preimage; its digest (two field elements) is the
/// public input. One partition.
#[derive(Clone, Copy, Debug, Default)]
pub struct Sha256Kind;

impl Sha256Kind {
    /// The kind's name.
    pub const NAME: &'static str = "sha256";
}

impl CircuitKind for Sha256Kind {
    fn name(&self) -> &str {
        Self::NAME
    }

    fn parse(&self, inputs: &Inputs) -> Result<Arc<dyn Instance>, InputError> {
        only_fields(inputs, &[])?;
        bytes_len(inputs, 0..=MAX_PREIMAGE)?;
        Ok(Arc::new(Sha256Instance {
            circuit: Sha256Preimage::new(inputs.bytes.clone()),
        }))
    }

    /// `sha256-preimage-<n>B`: the circuit of any preimage of n bytes (zeros stand in).
    fn instance_for_key(&self, circuit_key: &str) -> Option<Arc<dyn Instance>> {
        let len: usize = circuit_key
            .strip_prefix("sha256-preimage-")?
            .strip_suffix('B')?
            .parse()
            .ok()?;
        (len <= MAX_PREIMAGE).then(|| {
            Arc::new(Sha256Instance {
                circuit: Sha256Preimage::new(vec![0; len]),
            }) as Arc<dyn Instance>
        })
    }
}

#[derive(Debug)]
struct Sha256Instance {
    circuit: Sha256Preimage,
}

impl Instance for Sha256Instance {
    fn circuit_key(&self) -> String {
        self.circuit.circuit_key()
    }

    fn partitions(&self) -> usize {
        1
    }

    fn shape(&self) -> Shape {
        let constraints = Sha256Preimage::constraint_count(self.circuit.preimage().len());
        // The gadgets allocate about one aux variable per constraint; the estimate errs
        // high, which only makes admission cautious until the PCE gives the exact count.
        Shape {
            constraints,
            inputs: 3,
            aux: constraints,
        }
    }

    fn record(&self) -> Result<Pce, SynthError> {
        Pce::record(self.circuit.clone())
    }

    fn synthesize(&self, pce: &Pce, _partition: usize) -> Result<Witness, SynthError> {
        pce.synthesize_witness(self.circuit.clone())
    }

    fn public_inputs(&self, _partition: usize) -> Vec<Scalar> {
        self.circuit.public_inputs()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_bytes_and_refuses_fields() {
        let instance = Sha256Kind
            .parse(&Inputs::from_bytes(b"abc".to_vec()))
            .unwrap();
        assert_eq!(instance.circuit_key(), "sha256-preimage-3B");
        assert_eq!(instance.partitions(), 1);
        assert_eq!(instance.public_inputs(0).len(), 2);
        let by_key = Sha256Kind.instance_for_key("sha256-preimage-3B").unwrap();
        assert_eq!(by_key.circuit_key(), "sha256-preimage-3B");
        assert!(Sha256Kind.instance_for_key("sha256-preimage-3").is_none());
        let err = Sha256Kind
            .parse(&Inputs::from_bytes(vec![1]).with_field("seed", 1))
            .unwrap_err();
        assert!(matches!(err, InputError::UnknownField { ref field, .. } if field == "seed"));
        let err = Sha256Kind
            .parse(&Inputs::from_bytes(vec![0; MAX_PREIMAGE + 1]))
            .unwrap_err();
        assert!(matches!(err, InputError::BytesLength { len, .. } if len == MAX_PREIMAGE + 1));
    }
}
