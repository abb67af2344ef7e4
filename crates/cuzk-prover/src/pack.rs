//! The host half of the packed witness (`cuzk_cuda::packed`): the aux assignment split into
//! "is one" and "is other" bits and the other values, in pinned buffers of the device's pool,
//! for a proof that evaluates a, b, c on the device. Made in parallel blocks of
//! [`BLOCK_WORDS`] words: each block classifies its values and counts its others, the counts
//! become each block's first offset, and the others are copied out.

use crate::error::Result;
use cuzk_cuda::packed::PinnedPacked;
use cuzk_field::consts::FR_R;
use cuzk_field::{FrRepr, Scalar};
use cuzk_mem::{PinnedPool, PooledPinned};
use cuzk_synth::PackedAux;
use rayon::prelude::*;

/// Words (of 64 values) per block of the parallel packing.
const BLOCK_WORDS: usize = 1 << 10;

/// The limbs of ONE: R in Montgomery form.
const ONE: FrRepr = FrRepr { limbs: FR_R };

/// A packed aux assignment in pinned memory (see the module docs and [`PinnedPacked`]).
pub(crate) struct Packed {
    ones: PooledPinned<u64>,
    others: PooledPinned<u64>,
    offsets: PooledPinned<u32>,
    values: PooledPinned<FrRepr>,
    len: usize,
}

impl Packed {
    /// Packs `aux` into buffers taken from `pool` (waiting for them as the unpacked witness
    /// buffer did: the back-pressure that bounds the witnesses prepared ahead).
    pub fn new(pool: &PinnedPool, aux: &[Scalar]) -> Result<Packed> {
        let len = aux.len();
        let words = PinnedPacked::words_for(len);
        let mut ones = pool.acquire_blocking::<u64>(words, None)?;
        let mut others = pool.acquire_blocking::<u64>(words, None)?;
        let mut offsets = pool.acquire_blocking::<u32>(words, None)?;
        let counts = classify(
            aux,
            ones.as_mut_slice()?,
            others.as_mut_slice()?,
            offsets.as_mut_slice()?,
        );
        let count: usize = counts.iter().sum();
        let mut values = pool.acquire_blocking::<FrRepr>(count.max(1), None)?;
        copy_others(
            aux,
            others.as_slice()?,
            &counts,
            &mut values.as_mut_slice()?[..count],
        );
        Ok(Packed {
            ones,
            others,
            offsets,
            values,
            len,
        })
    }

    /// Copies `packed`, an aux assignment its synthesis packed already, into buffers taken
    /// from `pool` (waiting for them as [`Packed::new`] does), counting the others before
    /// each word.
    pub fn from_packed(pool: &PinnedPool, packed: &PackedAux) -> Result<Packed> {
        let len = packed.len();
        let words = PinnedPacked::words_for(len);
        let mut ones = pool.acquire_blocking::<u64>(words, None)?;
        let mut others = pool.acquire_blocking::<u64>(words, None)?;
        let mut offsets = pool.acquire_blocking::<u32>(words, None)?;
        let count = packed.values().len();
        let mut values = pool.acquire_blocking::<FrRepr>(count.max(1), None)?;
        // The words past the assignment's (one, for an empty one) stay clear.
        let copy = |out: &mut [u64], from: &[u64]| {
            let (head, tail) = out.split_at_mut(from.len());
            head.par_chunks_mut(BLOCK_WORDS)
                .zip(from.par_chunks(BLOCK_WORDS))
                .for_each(|(o, f)| o.copy_from_slice(f));
            tail.fill(0);
        };
        copy(&mut ones.as_mut_slice()?[..words], packed.ones());
        copy(&mut others.as_mut_slice()?[..words], packed.others());
        let mut before = 0u32;
        for (o, w) in offsets.as_mut_slice()?[..words]
            .iter_mut()
            .zip(others.as_slice()?[..words].iter())
        {
            *o = before;
            before = before.wrapping_add(w.count_ones());
        }
        values.as_mut_slice()?[..count]
            .par_iter_mut()
            .zip(packed.values().par_iter())
            .with_min_len(4096)
            .for_each(|(d, s)| *d = (*s).into());
        Ok(Packed {
            ones,
            others,
            offsets,
            values,
            len,
        })
    }

    /// The assignment's values by index (an index below its length).
    pub fn reader(&self) -> Result<impl Fn(usize) -> FrRepr + '_> {
        let (ones, others) = (self.ones.as_slice()?, self.others.as_slice()?);
        let (offsets, values) = (self.offsets.as_slice()?, self.values.as_slice()?);
        Ok(move |i: usize| value_at(ones, others, offsets, values, i))
    }

    /// Values in the assignment.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Bytes of the buffers of a packed witness of `len` values whatever the values, in the
    /// order [`Packed::new`] takes them: the two bit arrays and the counts (the other
    /// values' buffer comes last and depends on the values).
    pub fn bit_buffer_bytes(len: usize) -> [u64; 3] {
        let words = PinnedPacked::words_for(len) as u64;
        [8 * words, 8 * words, 4 * words]
    }

    /// The buffers as the device's upload takes them.
    pub fn pinned(&self) -> PinnedPacked<'_> {
        PinnedPacked {
            ones: &self.ones,
            others: &self.others,
            offsets: &self.offsets,
            values: &self.values,
            len: self.len,
        }
    }

    /// Bytes that cross to the device.
    pub fn bytes(&self) -> u64 {
        self.pinned().bytes()
    }
}

/// Value `i` of a packed assignment (the host model of `cuzk_eval_unpack` for one value).
fn value_at(ones: &[u64], others: &[u64], offsets: &[u32], values: &[FrRepr], i: usize) -> FrRepr {
    let (w, bit) = (i / 64, i % 64);
    if others[w] >> bit & 1 == 1 {
        let below = (others[w] & ((1u64 << bit) - 1)).count_ones();
        values[(offsets[w] + below) as usize]
    } else if ones[w] >> bit & 1 == 1 {
        ONE
    } else {
        FrRepr::default()
    }
}

/// Writes the ones and others bits of `aux` and, for each word, the count of others before
/// it; returns the count of others of each block. Every word is written (the bits past the
/// last value clear), so the buffers may come from a pool with stale contents.
fn classify(
    aux: &[Scalar],
    ones: &mut [u64],
    others: &mut [u64],
    offsets: &mut [u32],
) -> Vec<usize> {
    let block_values = BLOCK_WORDS * 64;
    let mut counts: Vec<usize> = ones
        .par_chunks_mut(BLOCK_WORDS)
        .zip(others.par_chunks_mut(BLOCK_WORDS))
        .zip(offsets.par_chunks_mut(BLOCK_WORDS))
        .enumerate()
        .map(|(block, ((ones, others), offsets))| {
            let start = (block * block_values).min(aux.len());
            let values = &aux[start..(start + block_values).min(aux.len())];
            let mut count = 0usize;
            for (w, ((one, other), offset)) in ones.iter_mut().zip(others).zip(offsets).enumerate()
            {
                let (mut o, mut x) = (0u64, 0u64);
                let from = (w * 64).min(values.len());
                for (bit, &v) in values[from..(from + 64).min(values.len())]
                    .iter()
                    .enumerate()
                {
                    let r = FrRepr::from(v);
                    if r == ONE {
                        o |= 1 << bit;
                    } else if r != FrRepr::default() {
                        x |= 1 << bit;
                    }
                }
                // The block's own count for now; the block's start is added below.
                *offset = count as u32;
                (*one, *other) = (o, x);
                count += x.count_ones() as usize;
            }
            count
        })
        .collect();
    let mut start = 0usize;
    let starts: Vec<usize> = counts
        .iter()
        .map(|&c| {
            let s = start;
            start += c;
            s
        })
        .collect();
    offsets
        .par_chunks_mut(BLOCK_WORDS)
        .zip(&starts)
        .for_each(|(offsets, &s)| {
            for o in offsets {
                // Fits: the device's check refuses a witness of 2^32 others or more before
                // any kernel reads these, and such a witness is 128 GiB unpacked.
                *o = (*o as usize + s) as u32;
            }
        });
    counts.shrink_to_fit();
    counts
}

/// Copies the others of `aux` (the set bits of `others`) into `out`, block by block at the
/// blocks' starts (`counts` as [`classify`] returned them).
fn copy_others(aux: &[Scalar], others: &[u64], counts: &[usize], out: &mut [FrRepr]) {
    let block_values = BLOCK_WORDS * 64;
    let mut parts = Vec::with_capacity(counts.len());
    let mut rest = out;
    for &c in counts {
        let (part, tail) = rest.split_at_mut(c);
        parts.push(part);
        rest = tail;
    }
    parts
        .into_par_iter()
        .zip(others.par_chunks(BLOCK_WORDS))
        .enumerate()
        .for_each(|(block, (part, words))| {
            let start = block * block_values;
            let mut at = 0;
            for (w, &word) in words.iter().enumerate() {
                let mut bits = word;
                while bits != 0 {
                    let bit = bits.trailing_zeros() as usize;
                    part[at] = aux[start + w * 64 + bit].into();
                    at += 1;
                    bits &= bits - 1;
                }
            }
        });
}

#[cfg(test)]
mod tests {
    use super::*;
    use cuzk_field::Field;
    use proptest::prelude::*;
    use rand::SeedableRng;

    /// The host model of `cuzk_eval_unpack`.
    fn unpack(
        ones: &[u64],
        others: &[u64],
        offsets: &[u32],
        values: &[FrRepr],
        len: usize,
    ) -> Vec<FrRepr> {
        (0..len)
            .map(|i| value_at(ones, others, offsets, values, i))
            .collect()
    }

    fn witness(len: usize, others_share: f64, seed: u64) -> Vec<Scalar> {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        (0..len)
            .map(|_| {
                let x: f64 = rand::Rng::gen(&mut rng);
                if x < others_share {
                    Scalar::random(&mut rng)
                } else if rand::Rng::gen::<bool>(&mut rng) {
                    Scalar::ONE
                } else {
                    Scalar::ZERO
                }
            })
            .collect()
    }

    /// Packs as [`Packed::new`] does, into plain vectors full of stale bits.
    fn pack(aux: &[Scalar]) -> (Vec<u64>, Vec<u64>, Vec<u32>, Vec<FrRepr>) {
        let words = PinnedPacked::words_for(aux.len());
        let (mut ones, mut others) = (vec![u64::MAX; words], vec![u64::MAX; words]);
        let mut offsets = vec![u32::MAX; words];
        let counts = classify(aux, &mut ones, &mut others, &mut offsets);
        let mut values = vec![FrRepr::default(); counts.iter().sum()];
        copy_others(aux, &others, &counts, &mut values);
        (ones, others, offsets, values)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]
        #[test]
        fn packing_then_unpacking_gives_the_witness_back(
            len in prop_oneof![0usize..200, 65_500usize..65_600, 131_000usize..200_000],
            share in prop_oneof![Just(0.0), Just(1.0), 0.0f64..0.2],
            seed in any::<u64>(),
        ) {
            let aux = witness(len, share, seed);
            let (ones, others, offsets, values) = pack(&aux);
            let expected: Vec<FrRepr> = aux.iter().map(|&s| s.into()).collect();
            prop_assert_eq!(unpack(&ones, &others, &offsets, &values, len), expected);
            let trivial = aux.iter().filter(|s| **s == Scalar::ZERO || **s == Scalar::ONE).count();
            prop_assert_eq!(values.len(), len - trivial);
            // Past the last value nothing is set, and the offsets count the others before.
            let words = PinnedPacked::words_for(len);
            if len % 64 != 0 || len == 0 {
                prop_assert_eq!(ones[words - 1] >> (len % 64), 0);
                prop_assert_eq!(others[words - 1] >> (len % 64), 0);
            }
            let mut before = 0u32;
            for w in 0..words {
                prop_assert_eq!(offsets[w], before);
                before += others[w].count_ones();
            }
        }
    }

    /// Packs `aux` from a pool of `device` (from the values, and from the form a synthesis
    /// packs, which must agree), uploads, unpacks on the device and downloads.
    fn device_round_trip(device: &cuzk_cuda::Device, aux: &[Scalar]) -> Vec<FrRepr> {
        let pool = PinnedPool::new(device, 1 << 30, None);
        let packed = Packed::new(&pool, aux).unwrap();
        let copied = Packed::from_packed(&pool, &PackedAux::from_values(aux)).unwrap();
        let buffers = |p: &Packed| {
            let words = PinnedPacked::words_for(p.len);
            let count: usize = p.others.as_slice().unwrap()[..words]
                .iter()
                .map(|w| w.count_ones() as usize)
                .sum();
            (
                p.ones.as_slice().unwrap()[..words].to_vec(),
                p.others.as_slice().unwrap()[..words].to_vec(),
                p.offsets.as_slice().unwrap()[..words].to_vec(),
                p.values.as_slice().unwrap()[..count].to_vec(),
            )
        };
        assert!(buffers(&packed) == buffers(&copied), "both packings agree");
        let read = copied.reader().unwrap();
        for i in (0..aux.len()).step_by((aux.len() / 97).max(1)) {
            assert_eq!(
                read(i),
                FrRepr::from(aux[i]),
                "value {i} read from the packed form"
            );
        }
        let (copy, stream) = (device.new_stream().unwrap(), device.new_stream().unwrap());
        let on_device = cuzk_cuda::packed::DevicePacked::upload(&copy, &packed.pinned()).unwrap();
        copy.synchronize().unwrap();
        // One element more than the witness, so a write past its end would show.
        let mut out = stream
            .upload(&vec![FrRepr { limbs: [7; 4] }; aux.len() + 1])
            .unwrap();
        cuzk_cuda::packed::unpack(&stream, &on_device, &mut out.slice_mut(..aux.len())).unwrap();
        let mut got = stream.download(&out).unwrap();
        assert_eq!(
            got.pop(),
            Some(FrRepr { limbs: [7; 4] }),
            "the element past the end"
        );
        got
    }

    fn gpu_device() -> cuzk_cuda::Device {
        cuzk_cuda::Device::open(0).expect("a CUDA device (this test needs a GPU)")
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(32))]
        #[test]
        #[ignore = "needs a CUDA GPU"]
        fn gpu_the_device_unpacks_the_witness_the_host_packed(
            len in prop_oneof![1usize..200, 65_500usize..65_600, 131_000usize..140_000],
            share in prop_oneof![Just(0.0), Just(1.0), 0.0f64..0.2],
            seed in any::<u64>(),
        ) {
            let aux = witness(len, share, seed);
            let expected: Vec<FrRepr> = aux.iter().map(|&s| s.into()).collect();
            prop_assert_eq!(device_round_trip(&gpu_device(), &aux), expected);
        }
    }

    #[test]
    #[ignore = "needs a CUDA GPU"]
    fn gpu_unpacking_covers_word_edges_and_several_grid_rounds() {
        let device = gpu_device();
        for (len, share) in [
            (63, 0.5),
            (64, 0.0),
            (65, 1.0),
            (1 << 22, 0.01),
            ((1 << 22) + 5, 0.3),
        ] {
            let aux = witness(len, share, len as u64);
            let expected: Vec<FrRepr> = aux.iter().map(|&s| s.into()).collect();
            assert_eq!(device_round_trip(&device, &aux), expected, "length {len}");
        }
    }

    #[test]
    fn one_and_zero_are_bits_and_everything_else_travels_whole() {
        let two = Scalar::ONE.double();
        let aux = [Scalar::ZERO, Scalar::ONE, two, -Scalar::ONE, Scalar::ONE];
        let (ones, others, offsets, values) = pack(&aux);
        assert_eq!(ones, [0b10010]);
        assert_eq!(others, [0b01100]);
        assert_eq!(offsets, [0]);
        assert_eq!(values, [two.into(), (-Scalar::ONE).into()]);
    }
}
