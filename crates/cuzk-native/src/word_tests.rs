//! Each word operation against bellpepper's `UInt32` on words of every mix of bit forms,
//! including mixes `sha256` itself never produces (its IV is all constants).

use crate::word::Word;
use crate::Bit;
use bellpepper::gadgets::multieq::MultiEq;
use bellpepper::gadgets::uint32::UInt32;
use bellpepper_core::boolean::{AllocatedBit, Boolean};
use bellpepper_core::ConstraintSystem;
use cuzk_field::Scalar;
use cuzk_synth::WitnessCs;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// A random word: each bit a constant with probability `constants` / 4, else a variable,
/// negated half the time.
fn random_word(rng: &mut ChaCha8Rng, constants: u32) -> Word {
    let mut w = Word::constant(0);
    for i in 0..32 {
        let v = rng.gen::<bool>();
        let b = if rng.gen_range(0..4) < constants {
            Bit::Constant(v)
        } else if rng.gen() {
            Bit::Not(v)
        } else {
            Bit::Is(v)
        };
        w.value |= u32::from(v) << i;
        match b {
            Bit::Constant(_) => {}
            Bit::Is(_) => w.constant &= !(1 << i),
            Bit::Not(_) => {
                w.constant &= !(1 << i);
                w.negated |= 1 << i;
            }
        }
    }
    w
}

/// `w` as a `UInt32` whose variables are allocated in `cs`, and their values in `aux`.
fn generic_word(cs: &mut WitnessCs, aux: &mut Vec<Scalar>, w: Word) -> UInt32 {
    let bits: Vec<Boolean> = (0..32)
        .map(|i| match w.bit(i) {
            Bit::Constant(v) => Boolean::Constant(v),
            b => {
                let own = b.value() ^ matches!(b, Bit::Not(_));
                aux.push(Scalar::from(u64::from(own)));
                let a = AllocatedBit::alloc(cs.namespace(|| "bit"), Some(own)).unwrap();
                if matches!(b, Bit::Not(_)) {
                    Boolean::Is(a).not()
                } else {
                    Boolean::Is(a)
                }
            }
        })
        .collect();
    UInt32::from_bits(&bits)
}

/// Panics unless `generic`'s bits have the forms and values of `native`'s.
fn assert_same(generic: UInt32, native: Word, what: &str) {
    for (i, g) in generic.into_bits().iter().enumerate() {
        let form = match g {
            Boolean::Constant(v) => Bit::Constant(*v),
            Boolean::Is(a) => Bit::Is(a.get_value().unwrap()),
            Boolean::Not(a) => Bit::Not(!a.get_value().unwrap()),
        };
        assert_eq!(native.bit(i as u32), form, "{what}: bit {i}");
    }
}

#[test]
fn word_operations_are_the_gadgets_for_every_mix_of_forms() {
    let mut rng = ChaCha8Rng::seed_from_u64(0x5a5a);
    for case in 0..2000 {
        let constants = [0, 1, 2, 3, 4][case % 5];
        let words: Vec<Word> = (0..3).map(|_| random_word(&mut rng, constants)).collect();
        // Whole words of one form too, in every combination.
        let words: Vec<Word> = if case % 7 == 0 {
            words
                .iter()
                .enumerate()
                .map(|(k, w)| {
                    if ((case / 7) >> k) & 1 == 1 {
                        Word::constant(w.value)
                    } else {
                        *w
                    }
                })
                .collect()
        } else {
            words
        };
        let mut cs = WitnessCs::with_one();
        let mut aux = Vec::new();
        let g: Vec<UInt32> = words
            .iter()
            .map(|&w| generic_word(&mut cs, &mut aux, w))
            .collect();
        let (a, b, c) = (words[0], words[1], words[2]);

        let x = a.xor(b, &mut aux);
        assert_same(g[0].xor(cs.namespace(|| "xor"), &g[1]).unwrap(), x, "xor");
        let ch = Word::ch(a, b, c, &mut aux);
        let gch = UInt32::sha256_ch(cs.namespace(|| "ch"), &g[0], &g[1], &g[2]).unwrap();
        assert_same(gch, ch, "ch");
        let maj = Word::maj(a, b, c, &mut aux);
        let gmaj = UInt32::sha256_maj(cs.namespace(|| "maj"), &g[0], &g[1], &g[2]).unwrap();
        assert_same(gmaj, maj, "maj");
        let n = 2 + case % 9;
        let ops: Vec<Word> = (0..n).map(|k| words[k % 3].rotr(k as u32)).collect();
        let sum = Word::addmany(&ops, &mut aux);
        let gops: Vec<UInt32> = (0..n).map(|k| g[k % 3].rotr(k)).collect();
        let gsum = {
            let mut m = MultiEq::new(cs.namespace(|| "sum"));
            UInt32::addmany(m.namespace(|| "addmany"), &gops).unwrap()
        };
        assert_same(gsum, sum, "addmany");
        assert_same(g[0].shr(case % 32), a.shr((case % 32) as u32), "shr");

        assert_eq!(cs.into_witness().aux, aux, "case {case}");
    }
}
