//! Knowledge of a SHA-256 preimage: the digest is public, the preimage private.
//!
//! Cost, measured with bellpepper 0.2.1's gadgets: one boolean constraint per preimage bit,
//! the compression function per 64-byte block, and 2 constraints packing the digest into
//! 2 public inputs. A block whose 512 bits are all variables costs 26,192 constraints, so
//! each further 64 bytes of preimage adds [`Sha256Preimage::CONSTRAINTS_PER_BLOCK`] =
//! 26,704. Constant words (the IV, the padding) fold away, so the first and last blocks are
//! cheaper: 1 byte costs 24,380 constraints, 55 bytes 26,031 (one block), 64 bytes 45,388
//! (two), 119 bytes 52,735, 128 bytes 72,092. [`Sha256Preimage::constraint_count`] is exact.

use bellpepper::gadgets::multipack;
use bellpepper::gadgets::sha256::sha256;
use bellpepper_core::boolean::{AllocatedBit, Boolean};
use bellpepper_core::{Circuit, ConstraintSystem, SynthesisError};
use cuzk_field::Scalar;
use rand_chacha::ChaCha8Rng;
use rand_core::{RngCore, SeedableRng};

use crate::count::Counter;

/// Bytes per SHA-256 block.
const BLOCK_BYTES: usize = 64;
use sha2::{Digest, Sha256};

/// Proves knowledge of a preimage whose SHA-256 digest is public.
///
/// The preimage's bits (most significant first within each byte) are private booleans;
/// the 256 digest bits are packed into two public inputs with `multipack`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sha256Preimage {
    preimage: Vec<u8>,
}

impl Sha256Preimage {
    /// The circuit for this preimage.
    pub fn new(preimage: Vec<u8>) -> Sha256Preimage {
        Sha256Preimage { preimage }
    }

    /// Constraints added by each further 64 bytes of preimage (once it is at least 64
    /// bytes long): 512 bit allocations and one compression of a variable block.
    pub const CONSTRAINTS_PER_BLOCK: usize = 26_704;

    /// A preimage of seeded random bytes whose length gives the constraint count closest to
    /// `n` (Groth16's input rows not counted). Counts grow by a few dozen per byte, but jump
    /// where one more byte pushes the padding into a new block (about 19,000: 55 → 56
    /// bytes, 119 → 120, …) or starts a new block (about 5,700: 64 → 65, 128 → 129, …), so
    /// near a jump the result can be several thousand off `n`; e.g. `n = 65,536` gives 120
    /// bytes and 71,798 constraints.
    pub fn with_approx_constraints(n: usize, seed: u64) -> Sha256Preimage {
        let len = closest_len(n);
        let mut preimage = vec![0u8; len];
        ChaCha8Rng::seed_from_u64(seed).fill_bytes(&mut preimage);
        Sha256Preimage::new(preimage)
    }

    /// Exact number of constraints of the circuit for a preimage of `len` bytes (Groth16's
    /// input rows not counted). Synthesizes at most two blocks without values.
    pub fn constraint_count(len: usize) -> usize {
        if len < BLOCK_BYTES {
            return count_by_synthesis(len);
        }
        // From 64 bytes on, the blocks before the tail are all-variable and cost the same.
        let full_blocks = len / BLOCK_BYTES;
        count_by_synthesis(BLOCK_BYTES + len % BLOCK_BYTES)
            + (full_blocks - 1) * Self::CONSTRAINTS_PER_BLOCK
    }

    /// The preimage.
    pub fn preimage(&self) -> &[u8] {
        &self.preimage
    }

    /// The public inputs (ONE excluded): the digest, computed natively and packed as the
    /// circuit packs it.
    pub fn public_inputs(&self) -> Vec<Scalar> {
        let digest = Sha256::digest(&self.preimage);
        multipack::compute_multipacking(&multipack::bytes_to_bits(&digest))
    }

    /// A name for this circuit's shape (it depends only on the preimage length), e.g.
    /// `sha256-preimage-64B`, for keying recorded constraint evaluators.
    pub fn circuit_key(&self) -> String {
        format!("sha256-preimage-{}B", self.preimage.len())
    }
}

impl Circuit<Scalar> for Sha256Preimage {
    fn synthesize<CS: ConstraintSystem<Scalar>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let bits = multipack::bytes_to_bits(&self.preimage)
            .into_iter()
            .enumerate()
            .map(|(i, bit)| {
                let bit =
                    AllocatedBit::alloc(cs.namespace(|| format!("preimage bit {i}")), Some(bit))?;
                Ok(Boolean::from(bit))
            })
            .collect::<Result<Vec<_>, SynthesisError>>()?;
        let digest = sha256(cs.namespace(|| "sha256"), &bits)?;
        multipack::pack_into_inputs(cs.namespace(|| "digest"), &digest)
    }
}

fn count_by_synthesis(len: usize) -> usize {
    let mut cs = Counter::default();
    Sha256Preimage::new(vec![0; len])
        .synthesize(&mut cs)
        .expect("counting never fails");
    cs.constraints
}

/// The preimage length whose constraint count is closest to `n`.
fn closest_len(n: usize) -> usize {
    let count = Sha256Preimage::constraint_count;
    // Counts grow with the length; find the last length at or below `n`, in a window of
    // one block located with the per-block slope.
    let (mut lo, mut hi) = if n < count(BLOCK_BYTES) {
        (0, BLOCK_BYTES)
    } else {
        let blocks = 1 + (n - count(BLOCK_BYTES)) / Sha256Preimage::CONSTRAINTS_PER_BLOCK;
        (blocks * BLOCK_BYTES, (blocks + 1) * BLOCK_BYTES)
    };
    if count(lo) > n {
        return lo;
    }
    // Invariant: count(lo) <= n < count(hi).
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if count(mid) <= n {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    if count(hi) - n < n - count(lo) {
        hi
    } else {
        lo
    }
}
