//! SHA-256 as bellpepper 0.2's `sha256` gadget computes it: padding, message schedule,
//! rounds with deferred additions, and the final additions, allocating in the gadget's order.

use crate::word::Word;
use crate::Sink;
use crate::{Bit, NativeError};

const ROUND_CONSTANTS: [u32; 64] = [
    0x428a_2f98,
    0x7137_4491,
    0xb5c0_fbcf,
    0xe9b5_dba5,
    0x3956_c25b,
    0x59f1_11f1,
    0x923f_82a4,
    0xab1c_5ed5,
    0xd807_aa98,
    0x1283_5b01,
    0x2431_85be,
    0x550c_7dc3,
    0x72be_5d74,
    0x80de_b1fe,
    0x9bdc_06a7,
    0xc19b_f174,
    0xe49b_69c1,
    0xefbe_4786,
    0x0fc1_9dc6,
    0x240c_a1cc,
    0x2de9_2c6f,
    0x4a74_84aa,
    0x5cb0_a9dc,
    0x76f9_88da,
    0x983e_5152,
    0xa831_c66d,
    0xb003_27c8,
    0xbf59_7fc7,
    0xc6e0_0bf3,
    0xd5a7_9147,
    0x06ca_6351,
    0x1429_2967,
    0x27b7_0a85,
    0x2e1b_2138,
    0x4d2c_6dfc,
    0x5338_0d13,
    0x650a_7354,
    0x766a_0abb,
    0x81c2_c92e,
    0x9272_2c85,
    0xa2bf_e8a1,
    0xa81a_664b,
    0xc24b_8b70,
    0xc76c_51a3,
    0xd192_e819,
    0xd699_0624,
    0xf40e_3585,
    0x106a_a070,
    0x19a4_c116,
    0x1e37_6c08,
    0x2748_774c,
    0x34b0_bcb5,
    0x391c_0cb3,
    0x4ed8_aa4a,
    0x5b9c_ca4f,
    0x682e_6ff3,
    0x748f_82ee,
    0x78a5_636f,
    0x84c8_7814,
    0x8cc7_0208,
    0x90be_fffa,
    0xa450_6ceb,
    0xbef9_a3f7,
    0xc671_78f2,
];

const IV: [u32; 8] = [
    0x6a09_e667,
    0xbb67_ae85,
    0x3c6e_f372,
    0xa54f_f53a,
    0x510e_527f,
    0x9b05_688c,
    0x1f83_d9ab,
    0x5be0_cd19,
];

/// Aux variables one compression allocates when all its words are variables (the most):
/// 48 × 149 in the message schedule, 63 × 294 + 224 in the rounds, 268 in the final sums.
const AUX_PER_COMPRESSION: usize = 26_166;

/// A digest as the gadget returns it: eight words, each all constants (when everything it
/// depends on is) or 32 fresh variables allocated together.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Digest {
    words: [Word; 8],
    /// Where in the aux vector each allocated word's least significant bit is.
    at: [Option<usize>; 8],
}

impl Digest {
    /// Bit `i` of the gadget's output (most significant first, as `into_bits_be`).
    pub fn bit(&self, i: usize) -> Bit {
        self.words[i / 32].bit(31 - (i % 32) as u32)
    }

    /// The 256 output bits, in the gadget's order.
    pub fn bits(&self) -> Vec<Bit> {
        (0..256).map(|i| self.bit(i)).collect()
    }

    /// The aux index of output bit `i`'s variable, `None` for a constant.
    pub fn aux_index(&self, i: usize) -> Option<usize> {
        self.at[i / 32].map(|lsb| lsb + 31 - i % 32)
    }

    /// The digest's bytes.
    pub fn bytes(&self) -> [u8; 32] {
        let mut out = [0u8; 32];
        for (chunk, w) in out.chunks_exact_mut(4).zip(&self.words) {
            chunk.copy_from_slice(&w.value.to_be_bytes());
        }
        out
    }
}

/// `sha256::sha256`: appends the aux values the gadget allocates hashing `input` (whole
/// bytes, most significant bit first) to `aux`, and returns its digest.
pub fn sha256(input: &[Bit], aux: &mut impl Sink) -> Result<Digest, NativeError> {
    if !input.len().is_multiple_of(8) {
        return Err(NativeError::NotBytes { bits: input.len() });
    }
    // The padding is constants: a one, zeros, the length in bits as 64 bits.
    let blocks = (input.len() + 1 + 64).div_ceil(512);
    let mut padded = Vec::with_capacity(blocks * 512);
    padded.extend_from_slice(input);
    padded.push(Bit::Constant(true));
    padded.resize(blocks * 512 - 64, Bit::Constant(false));
    let len = input.len() as u64;
    padded.extend((0..64).rev().map(|i| Bit::Constant((len >> i) & 1 == 1)));
    aux.reserve(blocks * AUX_PER_COMPRESSION);
    let mut state = IV.map(Word::constant);
    let mut at = [None; 8];
    for block in padded.chunks_exact(512) {
        (state, at) = compress(&state, &words_be(block), aux);
    }
    Ok(Digest { words: state, at })
}

/// `sha256::sha256_block_no_padding`: one compression of 512 bits from the IV.
pub fn sha256_block_no_padding(input: &[Bit], aux: &mut impl Sink) -> Result<Digest, NativeError> {
    if input.len() != 512 {
        return Err(NativeError::NotOneBlock { bits: input.len() });
    }
    aux.reserve(AUX_PER_COMPRESSION);
    let (words, at) = compress(&IV.map(Word::constant), &words_be(input), aux);
    Ok(Digest { words, at })
}

/// A block's sixteen words, each from 32 bits most significant first.
fn words_be(block: &[Bit]) -> [Word; 16] {
    std::array::from_fn(|i| Word::from_bits_be(&block[32 * i..32 * (i + 1)]))
}

/// A sum the gadget leaves for later: its operands, added when the word is first used.
#[derive(Clone, Copy)]
enum Pending {
    Ready(Word),
    Sum([Word; 8], usize),
}

impl Pending {
    fn sum(parts: &[Word]) -> Pending {
        let mut ops = [Word::constant(0); 8];
        ops[..parts.len()].copy_from_slice(parts);
        Pending::Sum(ops, parts.len())
    }

    /// The word, adding `more` to a pending sum (a ready word ignores `more`, as the
    /// gadget's `Maybe::compute`). Returns where the sum's bits start when it allocated.
    fn compute(self, more: Option<Word>, aux: &mut impl Sink) -> (Word, Option<usize>) {
        match self {
            Pending::Ready(w) => (w, None),
            Pending::Sum(mut ops, mut n) => {
                if let Some(m) = more {
                    ops[n] = m;
                    n += 1;
                }
                added(&ops[..n], aux)
            }
        }
    }
}

/// `UInt32::addmany`, and where its bits start in `aux` when it allocated any.
fn added(ops: &[Word], aux: &mut impl Sink) -> (Word, Option<usize>) {
    let start = aux.len();
    let w = Word::addmany(ops, aux);
    (w, (aux.len() > start).then_some(start))
}

/// `sha256_compression_function`: the new state, and where each of its words' bits start
/// in `aux`.
fn compress(
    state: &[Word; 8],
    block: &[Word; 16],
    aux: &mut impl Sink,
) -> ([Word; 8], [Option<usize>; 8]) {
    let mut w = [Word::constant(0); 64];
    w[..16].copy_from_slice(block);
    for i in 16..64 {
        let x = w[i - 15];
        let s0 = x.rotr(7).xor(x.rotr(18), aux).xor(x.shr(3), aux);
        let y = w[i - 2];
        let s1 = y.rotr(17).xor(y.rotr(19), aux).xor(y.shr(10), aux);
        w[i] = Word::addmany(&[w[i - 16], s0, w[i - 7], s1], aux);
    }

    let mut a = Pending::Ready(state[0]);
    let [_, mut b, mut c, mut d, _, mut f, mut g, mut h] = *state;
    let mut e = Pending::Ready(state[4]);
    for i in 0..64 {
        let new_e = e.compute(None, aux).0;
        let s1 = new_e
            .rotr(6)
            .xor(new_e.rotr(11), aux)
            .xor(new_e.rotr(25), aux);
        let ch = Word::ch(new_e, f, g, aux);
        let temp1 = [h, s1, ch, Word::constant(ROUND_CONSTANTS[i]), w[i]];
        let new_a = a.compute(None, aux).0;
        let s0 = new_a
            .rotr(2)
            .xor(new_a.rotr(13), aux)
            .xor(new_a.rotr(22), aux);
        let maj = Word::maj(new_a, b, c, aux);

        h = g;
        g = f;
        f = new_e;
        let [t0, t1, t2, t3, t4] = temp1;
        e = Pending::sum(&[t0, t1, t2, t3, t4, d]);
        d = c;
        c = b;
        b = new_a;
        a = Pending::sum(&[t0, t1, t2, t3, t4, s0, maj]);
    }

    let (h0, at0) = a.compute(Some(state[0]), aux);
    let (h1, at1) = added(&[state[1], b], aux);
    let (h2, at2) = added(&[state[2], c], aux);
    let (h3, at3) = added(&[state[3], d], aux);
    let (h4, at4) = e.compute(Some(state[4]), aux);
    let (h5, at5) = added(&[state[5], f], aux);
    let (h6, at6) = added(&[state[6], g], aux);
    let (h7, at7) = added(&[state[7], h], aux);
    (
        [h0, h1, h2, h3, h4, h5, h6, h7],
        [at0, at1, at2, at3, at4, at5, at6, at7],
    )
}
