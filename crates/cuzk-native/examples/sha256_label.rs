//! Native vs generic witness of the SHA-256 in a PoRep label: µs per compression.
//!
//! The input is `create_label_circuit`'s (storage-proofs-porep 19.1): the replica id's 255
//! bits and a constant zero, byte-reversed; the layer index as 32 constants; the challenged
//! node's 64 allocated bits; 160 constant zeros; 37 parents of 256 bits as the replica id.
//! That is 9,984 bits, 20 compressions. `cargo run --release -p cuzk-native --example
//! sha256_label [iterations]`; medians of `iterations` generic and ten times as many native
//! runs, the native ones into a fresh vector and into one reused.

use bellpepper::gadgets::sha256::sha256;
use bellpepper_core::boolean::{AllocatedBit, Boolean};
use bellpepper_core::ConstraintSystem;
use cuzk_field::Scalar;
use cuzk_native::Bit;
use cuzk_synth::WitnessCs;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::time::{Duration, Instant};

/// A field element's 255 allocated bits as storage-proofs orders them for hashing.
fn element_bits(rng: &mut ChaCha8Rng) -> Vec<Bit> {
    let mut le: Vec<Bit> = (0..255).map(|_| Bit::Is(rng.gen())).collect();
    le.push(Bit::Constant(false));
    le.chunks(8).flat_map(|c| c.iter().rev().copied()).collect()
}

fn label_input(rng: &mut ChaCha8Rng) -> Vec<Bit> {
    let mut bits = element_bits(rng);
    let layer = 3u32;
    bits.extend((0..32).rev().map(|i| Bit::Constant((layer >> i) & 1 == 1)));
    bits.extend((0..64).map(|_| Bit::Is(rng.gen())));
    bits.resize(512, Bit::Constant(false));
    for _ in 0..37 {
        bits.extend(element_bits(rng));
    }
    assert_eq!(bits.len(), 39 * 256);
    bits
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

fn main() {
    let iterations: usize = std::env::args()
        .nth(1)
        .map(|s| s.parse().expect("iterations"))
        .unwrap_or(20);
    let mut rng = ChaCha8Rng::seed_from_u64(18);
    let input = label_input(&mut rng);
    let compressions = (input.len() + 65).div_ceil(512);

    let mut generic_aux = 0;
    let generic: Vec<Duration> = (0..iterations)
        .map(|_| {
            let mut cs = WitnessCs::with_one();
            let bits: Vec<Boolean> = input
                .iter()
                .map(|&b| match b {
                    Bit::Constant(v) => Boolean::Constant(v),
                    b => Boolean::Is(
                        AllocatedBit::alloc(cs.namespace(|| "in"), Some(b.value())).unwrap(),
                    ),
                })
                .collect();
            let before = cs.aux_slice().len();
            let start = Instant::now();
            sha256(cs.namespace(|| "hash"), &bits).unwrap();
            let t = start.elapsed();
            generic_aux = cs.aux_slice().len() - before;
            t
        })
        .collect();

    let mut native_aux = 0;
    let native: Vec<Duration> = (0..iterations * 10)
        .map(|_| {
            let mut aux: Vec<Scalar> = Vec::new();
            let start = Instant::now();
            cuzk_native::sha256(&input, &mut aux).unwrap();
            let t = start.elapsed();
            native_aux = aux.len();
            std::hint::black_box(aux);
            t
        })
        .collect();
    assert_eq!(generic_aux, native_aux);
    // Into memory already touched, as a service reusing its witness buffers writes.
    let mut aux: Vec<Scalar> = Vec::with_capacity(native_aux);
    let reused: Vec<Duration> = (0..iterations * 10)
        .map(|_| {
            aux.clear();
            let start = Instant::now();
            cuzk_native::sha256(&input, &mut aux).unwrap();
            start.elapsed()
        })
        .collect();

    let per = |d: Duration| d.as_secs_f64() * 1e6 / compressions as f64;
    let (g, n) = (median(generic), median(native));
    println!(
        "label sha256: {} bits, {compressions} compressions, {native_aux} aux variables",
        input.len()
    );
    println!(
        "generic (bellpepper into WitnessCs): {:.1} µs/compression ({:.3} µs/variable)",
        per(g),
        g.as_secs_f64() * 1e6 / native_aux as f64
    );
    println!(
        "native: {:.1} µs/compression ({:.4} µs/variable), {:.1}x",
        per(n),
        n.as_secs_f64() * 1e6 / native_aux as f64,
        g.as_secs_f64() / n.as_secs_f64()
    );
    let r = median(reused);
    println!(
        "native into a reused buffer: {:.1} µs/compression ({:.4} µs/variable), {:.1}x",
        per(r),
        r.as_secs_f64() * 1e6 / native_aux as f64,
        g.as_secs_f64() / r.as_secs_f64()
    );
}
