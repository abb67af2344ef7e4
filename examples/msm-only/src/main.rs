//! Computes one G1 and one G2 multi-scalar multiplication with cuzk-msm's CPU engine and checks
//! them against a sum of single multiplications, using nothing but that crate's API.

use cuzk_msm::{cpu, testing, G1, G2};

fn main() {
    let n = 1000;
    let scalars = testing::random_scalars(n, 1);
    let g1 = testing::random_bases::<G1>(n, 2);
    let g2 = testing::random_bases::<G2>(n, 3);
    let s1 = cpu::msm::<G1>(&g1, &scalars).expect("one scalar per base");
    let s2 = cpu::msm::<G2>(&g2, &scalars).expect("one scalar per base");
    assert_eq!(s1, cpu::naive::<G1>(&g1, &scalars).expect("same lengths"));
    assert_eq!(s2, cpu::naive::<G2>(&g2, &scalars).expect("same lengths"));
    println!("msm-only: G1 and G2 MSMs of {n} points agree with the naive sums");
}
