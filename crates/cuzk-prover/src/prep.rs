//! The CPU side of a GPU proof, run while the device proves the previous witness. On the
//! host path one witness is evaluated, checked and laid out in pinned host memory — a, b, c
//! over the whole domain, the aux assignment (L) and the density-filtered scalars of A and B.
//! When the circuit's PCE is on the device ([`DevicePce`]) and the parameters are resident,
//! only the witness is laid out: the device evaluates and checks a, b, c and gathers the
//! scalars itself. The pinned buffers come from the device's pinned pool and go back to it,
//! so no proof pays for pinning or freeing.

use crate::device_pce::DevicePce;
use crate::error::{Error, Result};
use crate::pack::Packed;
use cuzk_field::{FrRepr, Scalar};
use cuzk_groth16::parts::{check_queries, check_witness, Shape};
use cuzk_mem::{PinnedPool, PooledPinned};
use cuzk_msm::gpu::Split;
use cuzk_synth::{Bitmap, Density, Pce, Witness};
use rayon::prelude::*;
use std::fmt;
use std::sync::Arc;
use std::time::Instant;

/// Bits per compaction block: a multiple of 64, so blocks start on bitmap words.
const BLOCK_BITS: usize = 1 << 16;

/// Element counts of one witness's buffers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Lengths {
    /// Domain size (a, b, c each).
    pub n: usize,
    /// Aux variables (the L scalars).
    pub aux: usize,
    /// Scalars of the A query.
    pub a: usize,
    /// Scalars of the B queries.
    pub b: usize,
}

impl Lengths {
    /// The buffers of a witness for parameters of `shape` (a domain of `shape.h + 1`).
    pub(crate) fn of(shape: &Shape) -> Lengths {
        Lengths {
            n: shape.h + 1,
            aux: shape.l,
            a: shape.a,
            b: shape.b_g1,
        }
    }

    /// Bytes of each pinned buffer of a set (see [`witness_buffer_bytes`]).
    pub(crate) fn buffer_bytes(&self) -> [u64; 6] {
        witness_buffer_bytes(self.n, self.aux, self.a, self.b)
    }
}

/// Bytes of each pinned buffer of one prepared witness, in the order the prover takes them
/// from the pool: a, b and c over a domain of `domain` elements, the `aux` assignment, the
/// `a` scalars of the A query and the `b` of the B queries. Each keeps at least one element
/// (the driver refuses empty allocations).
pub fn witness_buffer_bytes(domain: usize, aux: usize, a: usize, b: usize) -> [u64; 6] {
    let bytes = |len: usize| (len.max(1) * std::mem::size_of::<FrRepr>()) as u64;
    let n = bytes(domain);
    [n, n, n, bytes(aux), bytes(a), bytes(b)]
}

/// The pinned buffers of one witness, lent by the device's pinned pool (returned to it, not
/// freed, when dropped).
pub(crate) struct Buffers {
    pub lengths: Lengths,
    pub abc: [PooledPinned<FrRepr>; 3],
    pub aux: PooledPinned<FrRepr>,
    pub a: PooledPinned<FrRepr>,
    pub b: PooledPinned<FrRepr>,
}

impl Buffers {
    /// Takes a set from `pool`, waiting for earlier sets to come back if the pool is full
    /// (the back-pressure that bounds how many witnesses are prepared ahead).
    fn take(pool: &PinnedPool, lengths: Lengths) -> Result<Buffers> {
        // The driver refuses empty allocations: keep one spare element.
        let take = |len: usize| pool.acquire_blocking::<FrRepr>(len.max(1), None);
        Ok(Buffers {
            lengths,
            abc: [take(lengths.n)?, take(lengths.n)?, take(lengths.n)?],
            aux: take(lengths.aux)?,
            a: take(lengths.a)?,
            b: take(lengths.b)?,
        })
    }
}

/// The witness alone, in pinned memory, for a proof that evaluates a, b, c on the device.
pub(crate) struct WitnessOnly {
    pub lengths: Lengths,
    /// The aux assignment (also the L scalars), packed: bits for its zeros and ones.
    pub aux: Box<Packed>,
    pub inputs: Vec<FrRepr>,
    pub pce: Arc<DevicePce>,
    /// The 0/1 split of the L, A and B MSMs, decided from host samples of their scalars
    /// (the engine leaves device scalars dense otherwise).
    pub splits: Splits,
}

/// The 0/1 split of each MSM that reads witness values.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Splits {
    pub l: Split,
    pub a: Split,
    pub b: Split,
}

impl Splits {
    /// Decided from about [`Split::SAMPLES`] values of each MSM's scalars: the aux for L,
    /// and the aux A and B use (drawn at evenly spaced positions, kept where the density
    /// bit is set) with the inputs for A and B.
    fn sample(
        aux_len: usize,
        aux: impl Fn(usize) -> FrRepr,
        inputs: &[FrRepr],
        density: &Density,
    ) -> Splits {
        let step = (aux_len / Split::SAMPLES).max(1);
        let picked = |bits: Option<&Bitmap>| {
            (0..aux_len)
                .step_by(step)
                .filter(|&i| bits.is_none_or(|b| b.get(i)))
                .map(&aux)
                .collect::<Vec<_>>()
        };
        let (all, in_a, in_b) = (
            picked(None),
            picked(Some(&density.a_aux)),
            picked(Some(&density.b_aux)),
        );
        let b_inputs = density.b_input.iter_ones().map(|i| &inputs[i]);
        Splits {
            l: Split::for_sample(&all),
            a: Split::for_sample(inputs.iter().chain(&in_a)),
            b: Split::for_sample(b_inputs.chain(&in_b)),
        }
    }
}

/// What a prepared witness holds for its proof.
pub(crate) enum Staged {
    /// a, b, c evaluated and checked on the host, with the MSM scalars laid out.
    Host(Box<Buffers>),
    /// The witness alone; the device evaluates it with the circuit's [`DevicePce`].
    Device(WitnessOnly),
}

impl Staged {
    pub(crate) fn lengths(&self) -> Lengths {
        match self {
            Staged::Host(b) => b.lengths,
            Staged::Device(w) => w.lengths,
        }
    }
}

/// One witness ready for the device (see the module docs). Proved once: its buffers go back
/// to the prover's pool as soon as the proof has queued its last read of them (the next
/// writer waits for those copies), or when it is dropped unproved.
pub struct PreparedWitness {
    /// `None` once a proof has given the buffers back.
    pub(crate) staged: Option<Staged>,
    pub(crate) log_n: u32,
    pub(crate) shape: Shape,
    /// Milliseconds spent evaluating and checking a, b, c on the host (0 when the device
    /// evaluates them).
    pub eval_ms: f64,
    /// Milliseconds spent laying out the MSM scalars (the witness alone when the device
    /// evaluates).
    pub scalars_ms: f64,
}

impl fmt::Debug for PreparedWitness {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PreparedWitness")
            .field("log_n", &self.log_n)
            .field("lengths", &self.staged.as_ref().map(Staged::lengths))
            .field("on_device", &self.evaluates_on_device())
            .finish_non_exhaustive()
    }
}

impl PreparedWitness {
    /// Domain size.
    pub fn domain_size(&self) -> usize {
        1 << self.log_n
    }

    /// Whether a proof has read the witness already (and given its buffers back).
    pub fn is_proved(&self) -> bool {
        self.staged.is_none()
    }

    /// Whether its proof evaluates a, b, c on the device (the witness alone was laid out).
    pub fn evaluates_on_device(&self) -> bool {
        matches!(self.staged, Some(Staged::Device(_)))
    }

    /// Bytes of the packed witness when its proof evaluates on the device, else 0.
    pub(crate) fn packed_bytes(&self) -> u64 {
        match &self.staged {
            Some(Staged::Device(w)) => w.aux.bytes(),
            _ => 0,
        }
    }

    /// What it holds, unless a proof has given it back.
    pub(crate) fn staged(&self) -> Result<&Staged> {
        self.staged.as_ref().ok_or(Error::Proved)
    }

    /// The host path's pinned buffers, unless a proof has given them back.
    pub(crate) fn buffers(&self) -> Result<&Buffers> {
        match self.staged()? {
            Staged::Host(b) => Ok(b),
            Staged::Device(_) => Err(Error::NotResident),
        }
    }

    /// The host path's pinned buffers for writing, unless a proof has given them back.
    pub(crate) fn buffers_mut(&mut self) -> Result<&mut Buffers> {
        match self.staged.as_mut().ok_or(Error::Proved)? {
            Staged::Host(b) => Ok(b),
            Staged::Device(_) => Err(Error::NotResident),
        }
    }
}

/// Checks `witness` against the parameters' shape and the PCE, evaluates and checks it into
/// pinned buffers, and lays out the MSM scalars.
pub(crate) fn prepare(
    pool: &PinnedPool,
    shape: &Shape,
    pce: &Pce,
    density: &Density,
    witness: &Witness,
) -> Result<PreparedWitness> {
    // A packed aux assignment is expanded: this path evaluates and lays out value by value.
    let witness = &*witness.unpacked();
    check_variables(
        shape,
        "PCE variables (inputs + aux)",
        pce.num_inputs,
        pce.num_aux,
        witness,
    )?;
    let log_n = check_queries(shape, pce.num_inputs, pce.num_aux, density, pce.num_rows())?;
    // The checks above tie the domain (2^log_n = h + 1) and the aux count (l) to the shape.
    let lengths = Lengths::of(shape);
    let mut buffers = Buffers::take(pool, lengths)?;

    let start = Instant::now();
    let evaluated = {
        let n = lengths.n;
        let [a, b, c] = &mut buffers.abc;
        let (a, b, c) = (
            &mut a.as_mut_slice()?[..n],
            &mut b.as_mut_slice()?[..n],
            &mut c.as_mut_slice()?[..n],
        );
        pce.evaluate_checked_into(witness, a, b, c)
    };
    if let Err(e) = evaluated {
        return Err(match e {
            cuzk_synth::SynthError::Unsatisfied { index, .. } => {
                cuzk_groth16::Error::Unsatisfied { row: index }.into()
            }
            other => other.into(),
        });
    }
    let eval_ms = start.elapsed().as_secs_f64() * 1e3;

    let start = Instant::now();
    let (inputs, aux) = (&witness.inputs[..], &witness.aux[..]);
    let ni = inputs.len();
    let aux_out = &mut buffers.aux.as_mut_slice()?[..lengths.aux];
    aux_out
        .par_iter_mut()
        .zip(aux.par_iter())
        .with_min_len(4096)
        .for_each(|(d, s)| *d = (*s).into());
    // A: every input (they are in A through their input rows), then the aux in A.
    let a_out = &mut buffers.a.as_mut_slice()?[..lengths.a];
    let (a_inputs, a_aux) = a_out.split_at_mut(ni);
    convert(inputs, a_inputs);
    compact(aux, &density.a_aux, a_aux);
    // B: the inputs in B, then the aux in B.
    let b_out = &mut buffers.b.as_mut_slice()?[..lengths.b];
    let (b_inputs, b_aux) = b_out.split_at_mut(density.b_input.count_ones());
    compact(inputs, &density.b_input, b_inputs);
    compact(aux, &density.b_aux, b_aux);
    let scalars_ms = start.elapsed().as_secs_f64() * 1e3;

    Ok(PreparedWitness {
        staged: Some(Staged::Host(Box::new(buffers))),
        log_n,
        shape: *shape,
        eval_ms,
        scalars_ms,
    })
}

/// Checks `witness` against the parameters' shape and the device PCE, and lays out the
/// witness alone in pinned memory for a proof that evaluates it on the device.
pub(crate) fn prepare_for_device(
    pool: &PinnedPool,
    shape: &Shape,
    pce: &Arc<DevicePce>,
    density: &Density,
    witness: &Witness,
) -> Result<PreparedWitness> {
    check_variables(
        shape,
        "device PCE variables (inputs + aux)",
        pce.num_inputs,
        pce.num_aux,
        witness,
    )?;
    let log_n = check_queries(shape, pce.num_inputs, pce.num_aux, density, pce.rows())?;
    let lengths = Lengths::of(shape);
    if pce.a_len() != lengths.a || pce.b_len() != lengths.b {
        return Err(Error::shape(
            "A and B scalars of the device PCE's density",
            lengths.a + lengths.b,
            pce.a_len() + pce.b_len(),
        ));
    }
    let start = Instant::now();
    let aux = Box::new(match &witness.packed {
        Some(packed) => Packed::from_packed(pool, packed)?,
        None => Packed::new(pool, &witness.aux)?,
    });
    let inputs: Vec<FrRepr> = witness.inputs.iter().map(|&s| s.into()).collect();
    let splits = Splits::sample(aux.len(), aux.reader()?, &inputs, density);
    let scalars_ms = start.elapsed().as_secs_f64() * 1e3;
    Ok(PreparedWitness {
        staged: Some(Staged::Device(WitnessOnly {
            lengths,
            aux,
            inputs,
            pce: Arc::clone(pce),
            splits,
        })),
        log_n,
        shape: *shape,
        eval_ms: 0.0,
        scalars_ms,
    })
}

/// Checks `witness` against the parameters' shape and against the `inputs` and `aux` counts
/// of the evaluator (`what` names it in the error).
fn check_variables(
    shape: &Shape,
    what: &'static str,
    inputs: usize,
    aux: usize,
    witness: &Witness,
) -> Result<()> {
    check_witness(shape, &witness.inputs, witness.aux_len())?;
    if inputs != witness.inputs.len() || aux != witness.aux_len() {
        return Err(Error::shape(
            what,
            witness.inputs.len() + witness.aux_len(),
            inputs + aux,
        ));
    }
    Ok(())
}

fn convert(src: &[Scalar], out: &mut [FrRepr]) {
    for (d, s) in out.iter_mut().zip(src) {
        *d = (*s).into();
    }
}

/// Writes the elements of `src` whose bit is set in `bits`, in order, into `out` (exactly
/// as many as there are set bits), in parallel over blocks of the bitmap.
fn compact(src: &[Scalar], bits: &Bitmap, out: &mut [FrRepr]) {
    debug_assert_eq!(src.len(), bits.len());
    debug_assert_eq!(out.len(), bits.count_ones());
    let words_per_block = BLOCK_BITS / 64;
    let words = bits.words();
    let counts: Vec<usize> = words
        .chunks(words_per_block)
        .map(|w| w.iter().map(|x| x.count_ones() as usize).sum())
        .collect();
    let mut outs = Vec::with_capacity(counts.len());
    let mut rest = out;
    for &c in &counts {
        let (head, tail) = rest.split_at_mut(c);
        outs.push(head);
        rest = tail;
    }
    words
        .par_chunks(words_per_block)
        .zip(src.par_chunks(BLOCK_BITS))
        .zip(outs.into_par_iter())
        .for_each(|((w, s), o)| {
            let mut k = 0;
            for (j, &word) in w.iter().enumerate() {
                let mut rest = word;
                while rest != 0 {
                    let bit = rest.trailing_zeros() as usize;
                    rest &= rest - 1;
                    o[k] = s[j * 64 + bit].into();
                    k += 1;
                }
            }
        });
}

#[cfg(test)]
mod tests {
    use super::*;
    use ff::Field;
    use rand::SeedableRng;

    #[test]
    fn splits_follow_the_share_of_bits_in_each_msm() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(9);
        let len = 20_000;
        // Even positions hold bits, odd ones random values: L sees half bits; A uses the
        // even positions only (all bits), B the odd ones only (none).
        let aux: Vec<Scalar> = (0..len)
            .map(|i| {
                if i % 2 == 0 {
                    Scalar::from((i % 4 == 0) as u64)
                } else {
                    Scalar::random(&mut rng)
                }
            })
            .collect();
        let mut density = Density {
            a_aux: Bitmap::new(len),
            b_input: Bitmap::new(1),
            b_aux: Bitmap::new(len),
        };
        for i in 0..len {
            if i % 2 == 0 {
                density.a_aux.set(i);
            } else {
                density.b_aux.set(i);
            }
        }
        let inputs = [Scalar::ONE.into()];
        let splits = Splits::sample(aux.len(), |i| aux[i].into(), &inputs, &density);
        assert_eq!(splits.l, Split::Always);
        assert_eq!(splits.a, Split::Always);
        assert_eq!(splits.b, Split::Dense);
    }

    #[test]
    fn compaction_keeps_the_selected_elements_in_order() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
        for len in [
            0usize,
            1,
            63,
            64,
            65,
            BLOCK_BITS - 1,
            BLOCK_BITS + 77,
            3 * BLOCK_BITS,
        ] {
            let src: Vec<Scalar> = (0..len).map(|_| Scalar::random(&mut rng)).collect();
            let mut bits = Bitmap::new(len);
            for i in 0..len {
                if rand::Rng::gen_bool(&mut rng, 0.3) {
                    bits.set(i);
                }
            }
            let expected: Vec<FrRepr> = bits.iter_ones().map(|i| src[i].into()).collect();
            let mut out = vec![FrRepr::default(); expected.len()];
            compact(&src, &bits, &mut out);
            assert_eq!(out, expected, "length {len}");
        }
    }
}
