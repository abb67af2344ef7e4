//! A circuit's size, and the host memory one CPU proof of it needs (admission's unit).

use cuzk_synth::Pce;

/// Bytes of one Fr scalar.
const SCALAR: u64 = 32;

/// Bytes of a gathered G1 MSM term: an affine base (96) and a scalar (32).
const G1_TERM: u64 = 96 + 32;

/// Fixed allowance per proof for Pippenger scratch, bitmaps and bookkeeping.
const SCRATCH: u64 = 8 << 20;

/// Bytes of an affine G1 point in host memory.
const G1_AFFINE: u64 = 96;

/// Bytes of an affine G2 point in host memory.
const G2_AFFINE: u64 = 192;

/// PCE bytes per QAP row: three row pointers (8 bytes each) and the A, B and C entries
/// (a column and a coefficient index, 8 bytes each), about 15 per row in PoRep circuits
/// (17.6 GiB for a 2^27 partition).
const PCE_ROW: u64 = 3 * 8 + 15 * 8;

/// A circuit's size: what memory estimates are made from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Shape {
    /// The circuit's own constraints.
    pub constraints: usize,
    /// Public inputs, ONE included.
    pub inputs: usize,
    /// Aux (private) variables.
    pub aux: usize,
}

impl Shape {
    /// The exact shape of a recorded circuit.
    pub fn of(pce: &Pce) -> Shape {
        Shape {
            constraints: pce.num_constraints,
            inputs: pce.num_inputs,
            aux: pce.num_aux,
        }
    }

    /// Rows of the QAP: constraints plus one per input.
    pub fn rows(&self) -> usize {
        self.constraints.saturating_add(self.inputs)
    }

    /// The evaluation domain: the next power of two of the rows (saturating at
    /// `u64::MAX` for absurd shapes, which then fit no budget).
    pub fn domain_size(&self) -> u64 {
        (self.rows() as u64)
            .max(1)
            .checked_next_power_of_two()
            .unwrap_or(u64::MAX)
    }

    /// Peak host memory of one proof with the CPU reference prover, estimated from above:
    /// the witness (held from synthesis to the end of proving), a, b and c padded to the
    /// domain plus one more domain-sized vector for the resize and the quotient, and the
    /// largest G1 MSM's gathered bases and scalars (H over the domain, or L/A over the aux
    /// variables), plus fixed scratch. The G2 MSM gathers only the B terms whose scalar is
    /// neither 0 nor 1, a few percent in practical circuits, and fits in the same room.
    pub fn cpu_prover_bytes(&self) -> u64 {
        let vars = (self.inputs as u64).saturating_add(self.aux as u64);
        let n = self.domain_size();
        let witness = SCALAR.saturating_mul(vars);
        let abc = (4 * SCALAR).saturating_mul(n);
        let gather = G1_TERM.saturating_mul(n.max(vars));
        witness
            .saturating_add(abc)
            .saturating_add(gather)
            .saturating_add(SCRATCH)
    }

    /// Host memory of the circuit's setup (its parameters and PCE), estimated from above:
    /// [`Shape::parameter_bytes`] and the PCE at [`PCE_ROW`] bytes per row. About 90 GiB for
    /// a 2^27 PoRep partition, whose real setup takes about 53 GiB (45 GiB of parameters,
    /// 8.3 GiB of PCE): a kind that knows more says so in `Instance::setup_bytes`.
    pub fn setup_bytes(&self) -> u64 {
        self.parameter_bytes()
            .saturating_add(PCE_ROW.saturating_mul(self.rows() as u64))
    }

    /// Host memory of the circuit's parameters, from above: G1 points for H (the domain),
    /// L (aux) and A and B (every variable, as if none were filtered out by density), G2
    /// points for B. Real circuits filter enough out of B to also cover the copy of one
    /// query made while parameters are converted.
    pub fn parameter_bytes(&self) -> u64 {
        let vars = (self.inputs as u64).saturating_add(self.aux as u64);
        let g1 = self
            .domain_size()
            .saturating_add(self.aux as u64)
            .saturating_add(vars.saturating_mul(2));
        G1_AFFINE
            .saturating_mul(g1)
            .saturating_add(G2_AFFINE.saturating_mul(vars))
    }

    /// The largest query's bytes, from above: H over the domain, L over aux, or B in G2 over
    /// every variable (what converting parameters one query at a time holds twice).
    pub fn largest_query_bytes(&self) -> u64 {
        let vars = (self.inputs as u64).saturating_add(self.aux as u64);
        G1_AFFINE
            .saturating_mul(self.domain_size().max(self.aux as u64))
            .max(G2_AFFINE.saturating_mul(vars))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn estimates_grow_with_the_domain() {
        let small = Shape {
            constraints: 254,
            inputs: 2,
            aux: 256,
        };
        assert_eq!(small.rows(), 256);
        assert_eq!(small.domain_size(), 256);
        assert_eq!(
            small.cpu_prover_bytes(),
            32 * 258 + 128 * 256 + 128 * 258 + (8 << 20)
        );
        let porep = Shape {
            constraints: 130_278_869,
            inputs: 2,
            aux: 130_169_893,
        };
        // About 36 GiB for a 32 GiB PoRep partition on the CPU prover.
        let gib = porep.cpu_prover_bytes() >> 30;
        assert!((30..45).contains(&gib), "{gib} GiB");
        let absurd = Shape {
            constraints: usize::MAX,
            inputs: usize::MAX,
            aux: usize::MAX,
        };
        assert_eq!(absurd.cpu_prover_bytes(), u64::MAX);
        assert_eq!(absurd.setup_bytes(), u64::MAX);
        // Parameters and PCE of a 32 GiB PoRep partition: about 53 GiB really, 90 estimated
        // from the shape alone (no density, a PCE of 144 bytes a row).
        let gib = porep.setup_bytes() >> 30;
        assert!((53..100).contains(&gib), "{gib} GiB");
        // Its parameters: about 45 GiB really; the largest query B in G2 with every variable.
        let gib = porep.parameter_bytes() >> 30;
        assert!((45..75).contains(&gib), "{gib} GiB");
        assert_eq!(porep.largest_query_bytes(), 192 * 130_169_895);
        assert!(small.setup_bytes() < 1 << 20);
    }
}
