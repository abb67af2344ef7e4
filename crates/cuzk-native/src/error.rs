//! The errors of native witness generation: inputs the generic gadget would refuse.

/// An input the generic gadget refuses (it panics on these; the native one says why).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum NativeError {
    /// `sha256` hashes whole bytes only.
    #[error("sha256 input of {bits} bits is not a whole number of bytes")]
    NotBytes {
        /// The input's length in bits.
        bits: usize,
    },
    /// `sha256_block_no_padding` compresses exactly one 512-bit block.
    #[error("sha256 block of {bits} bits, not 512")]
    NotOneBlock {
        /// The input's length in bits.
        bits: usize,
    },
    /// A label's replica id is 32 to 256 bits.
    #[error("label replica id of {bits} bits, not 32 to 256")]
    ReplicaId {
        /// The replica id's length in bits.
        bits: usize,
    },
    /// A label hashes `LABEL_PARENTS` parents.
    #[error("label of {count} parents, not 37")]
    Parents {
        /// The number of parents given.
        count: usize,
    },
    /// A label's parent fills one 256-bit slot.
    #[error("label parent {index} of {bits} bits, not 1 to 256")]
    Parent {
        /// Which parent.
        index: usize,
        /// Its length in bits.
        bits: usize,
    },
}
