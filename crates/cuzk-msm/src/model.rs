//! A CPU model of the GPU engine's data flow, kernel by kernel (prepare, histogram, scan,
//! scatter, the reduction levels, bucket sums) and host step by step (passes, chunks, the 0/1
//! split, window combination), over blstrs points. It checks the parts a wrong index would
//! break (slot bookkeeping of the levels, segment weights, carries across chunks and passes)
//! against the reference on machines without a GPU; the point formulas are checked in `xyzz`.

use crate::curve::MsmCurve;
use crate::digits::{canonical_limbs, signed_digits};
use crate::plan::{level_outputs, Plan, SPAN_ONES, SPAN_XYZZ};
use cuzk_field::PrimeCurveAffine as _;
use cuzk_field::Scalar;
use group::Group;

/// Where a reduction level's entries come from.
enum Entries<'a, C: MsmCurve> {
    /// Sorted base indices with the sign in the top bit.
    Affine(&'a [u32], &'a [C::Affine]),
    /// Partial sums of an earlier level.
    Points(&'a [C::Projective]),
}

/// One level of the segmented reduction, thread by thread as `level` in kernels/msm/level.cuh.
fn level<C: MsmCurve>(
    keys: Option<&[u32]>,
    key_div: u32,
    entries: Entries<'_, C>,
    m: usize,
    span: u32,
    buckets: &mut [C::Projective],
) -> (Vec<u32>, Vec<C::Projective>) {
    let key = |i: usize| keys.map_or(i as u32 / key_div, |k| k[i]);
    let point = |i: usize| match &entries {
        Entries::Affine(vals, bases) => {
            let v = vals[i];
            let p = bases[(v & 0x7fff_ffff) as usize].to_curve();
            if v >> 31 == 1 {
                -p
            } else {
                p
            }
        }
        Entries::Points(p) => p[i],
    };
    let span = span as usize;
    let threads = m.div_ceil(span);
    let mut out_keys = vec![0u32; 2 * threads];
    let mut out_pts = vec![C::Projective::identity(); 2 * threads];
    for t in 0..threads {
        let (s, e) = (t * span, ((t + 1) * span).min(m));
        let first_key = key(s);
        let head_partial = s > 0 && key(s - 1) == first_key;
        let (mut cur, mut first_run) = (first_key, true);
        let (mut wrote_a, mut wrote_b) = (false, false);
        let mut acc = C::Projective::identity();
        for i in s..e {
            let k = key(i);
            if k != cur {
                if first_run && head_partial {
                    out_keys[2 * t] = cur;
                    out_pts[2 * t] = acc;
                    wrote_a = true;
                } else {
                    buckets[cur as usize] += acc;
                }
                first_run = false;
                cur = k;
                acc = C::Projective::identity();
            }
            acc += point(i);
        }
        let tail_partial = e < m && key(e) == cur;
        if if first_run {
            head_partial || tail_partial
        } else {
            tail_partial
        } {
            let slot = if first_run { 2 * t } else { 2 * t + 1 };
            out_keys[slot] = cur;
            out_pts[slot] = acc;
            if first_run {
                wrote_a = true;
            } else {
                wrote_b = true;
            }
        } else {
            buckets[cur as usize] += acc;
        }
        if !wrote_a {
            out_keys[2 * t] = first_key;
        }
        if !wrote_b {
            out_keys[2 * t + 1] = cur;
        }
    }
    assert_eq!(out_keys.len(), level_outputs(m, span as u32));
    (out_keys, out_pts)
}

/// A whole chain of levels, as the host launches it, until one thread remains.
fn chain<C: MsmCurve>(
    keys: Option<&[u32]>,
    key_div: u32,
    first: Entries<'_, C>,
    m: usize,
    span: u32,
    buckets: &mut [C::Projective],
) {
    let (mut k, mut p) = level::<C>(keys, key_div, first, m, span, buckets);
    let mut threads = m.div_ceil(span as usize);
    while threads > 1 {
        let (k2, p2) = level::<C>(
            Some(&k),
            1,
            Entries::Points(&p),
            k.len(),
            SPAN_XYZZ,
            buckets,
        );
        threads = k.len().div_ceil(SPAN_XYZZ as usize);
        (k, p) = (k2, p2);
    }
}

/// Σ (j + 1)·B_j per window, in segments as `bucket_sums` computes it, then summed by a chain.
fn window_sums<C: MsmCurve>(
    buckets: &[C::Projective],
    windows: usize,
    nb: usize,
    seg_log: u32,
) -> Vec<C::Projective> {
    let len = 1usize << seg_log;
    let segs = nb >> seg_log;
    let mut out = Vec::with_capacity(windows * segs);
    for w in 0..windows {
        for k in 0..segs {
            let b = &buckets[w * nb + k * len..w * nb + (k + 1) * len];
            let (mut run, mut tot) = (C::Projective::identity(), C::Projective::identity());
            for j in (0..len).rev() {
                run += b[j];
                tot += run;
            }
            out.push(tot + run * Scalar::from((k * len) as u64));
        }
    }
    let mut sums = vec![C::Projective::identity(); windows];
    chain::<C>(
        None,
        segs as u32,
        Entries::Points(&out),
        out.len(),
        SPAN_XYZZ,
        &mut sums,
    );
    sums
}

/// The engine's answer for `plan`, modelled on the CPU.
pub fn msm<C: MsmCurve>(
    bases: &[C::Affine],
    scalars: &[Scalar],
    plan: &Plan,
    split: bool,
) -> C::Projective {
    let n = scalars.len();
    let nb = plan.buckets as usize;
    let mut all_windows = vec![C::Projective::identity(); plan.windows as usize];
    let mut ones = [C::Projective::identity()];
    for pass in 0..plan.passes() {
        let w_begin = pass * plan.pass_windows;
        let w_count = plan.pass_windows.min(plan.windows - w_begin) as usize;
        let mut buckets = vec![C::Projective::identity(); w_count * nb];
        for chunk in 0..plan.chunks(n) {
            let range = chunk * plan.chunk..((chunk + 1) * plan.chunk).min(n);
            // prepare: canonical scalars, with the split's index lists.
            let mut tail: Vec<([u64; 4], u32)> = Vec::new();
            let mut one_idx: Vec<u32> = Vec::new();
            for i in range.clone() {
                let s = canonical_limbs(&scalars[i]);
                if !split {
                    tail.push((s, i as u32));
                } else if s == [1, 0, 0, 0] {
                    one_idx.push(i as u32);
                } else if s != [0; 4] {
                    tail.push((s, i as u32));
                }
            }
            if split && pass == 0 {
                // The engine sums each piece's ones in a chain of its own.
                for piece in one_idx.chunks(plan.piece) {
                    let entries = Entries::Affine(piece, bases);
                    chain::<C>(None, u32::MAX, entries, piece.len(), SPAN_ONES, &mut ones);
                }
            }
            // histogram, scan, scatter.
            let mut hist = vec![0u32; w_count * nb];
            let digits: Vec<Vec<i32>> = tail
                .iter()
                .map(|(s, _)| signed_digits(s, plan.bits))
                .collect();
            let each = |f: &mut dyn FnMut(usize, i32, u32)| {
                for ((_, idx), d) in tail.iter().zip(&digits) {
                    for w in 0..w_count {
                        let dw = d[w_begin as usize + w];
                        if dw != 0 {
                            f(w * nb + dw.unsigned_abs() as usize - 1, dw, *idx);
                        }
                    }
                }
            };
            each(&mut |key, _, _| hist[key] += 1);
            let mut cursor: Vec<u32> = hist
                .iter()
                .scan(0u32, |acc, &h| {
                    let at = *acc;
                    *acc += h;
                    Some(at)
                })
                .collect();
            let m: u32 = hist.iter().sum();
            let mut keys = vec![0u32; m as usize];
            let mut vals = vec![0u32; m as usize];
            each(&mut |key, d, idx| {
                let pos = cursor[key] as usize;
                cursor[key] += 1;
                keys[pos] = key as u32;
                vals[pos] = idx | if d < 0 { 1 << 31 } else { 0 };
            });
            chain::<C>(
                Some(&keys),
                1,
                Entries::Affine(&vals, bases),
                m as usize,
                plan.span_affine,
                &mut buckets,
            );
        }
        let sums = window_sums::<C>(&buckets, w_count, nb, plan.seg_log);
        all_windows[w_begin as usize..w_begin as usize + w_count].copy_from_slice(&sums);
    }
    let mut acc = C::Projective::identity();
    for w in all_windows.iter().rev() {
        for _ in 0..plan.bits {
            acc = acc.double();
        }
        acc += w;
    }
    acc + ones[0]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::curve::{G1, G2};
    use crate::plan::PlanInput;
    use crate::testing::{random_bases, random_scalars, sparse_scalars};
    use cuzk_field::PrimeCurveAffine;
    use ff::Field;

    fn input(n: usize, bits: u32) -> PlanInput {
        PlanInput {
            n,
            tail: n,
            bits: Some(bits),
            split: true,
            staged: true,
            xyzz_bytes: 192,
            sm_count: 1,
            allowance: 1 << 30,
        }
    }

    fn plan(n: usize, bits: u32, allowance: usize, split: bool) -> Plan {
        Plan::new(&PlanInput {
            allowance,
            split,
            ..input(n, bits)
        })
        .unwrap()
    }

    fn check<C: MsmCurve>(bases: &[C::Affine], scalars: &[Scalar], p: &Plan, what: &str) {
        let want = crate::cpu::msm::<C>(bases, scalars).unwrap();
        for split in [false, true] {
            assert_eq!(
                msm::<C>(bases, scalars, p, split),
                want,
                "{what}, split {split}, {p:?}"
            );
        }
    }

    #[test]
    fn model_matches_reference_on_random_inputs() {
        for (n, bits) in [(1, 4), (2, 5), (3, 8), (100, 4), (1000, 7), (3000, 10)] {
            let bases = random_bases::<G1>(n, n as u64);
            let scalars = random_scalars(n, 7 + n as u64);
            check::<G1>(
                &bases,
                &scalars,
                &plan(n, bits, 1 << 30, true),
                &format!("n {n}"),
            );
        }
        let bases = random_bases::<G2>(300, 1);
        check::<G2>(
            &bases,
            &random_scalars(300, 2),
            &plan(300, 6, 1 << 30, true),
            "g2",
        );
    }

    #[test]
    fn heavy_buckets_cross_many_slices() {
        let n = 2000;
        let bases = random_bases::<G1>(n, 3);
        let p = plan(n, 6, 1 << 30, true);
        assert!(
            p.span_affine as usize * 4 < n,
            "the heavy bucket must cross slices"
        );
        // All-one scalars: one bucket of window 0 holds every point.
        check::<G1>(&bases, &vec![Scalar::ONE; n], &p, "all ones");
        // Repeated bases and one repeated scalar: equal points meet in every bucket.
        let same = vec![bases[0]; n];
        check::<G1>(&same, &vec![-Scalar::ONE; n], &p, "r - 1 on one base");
        let mut with_identity = bases.clone();
        for i in (0..n).step_by(3) {
            with_identity[i] = PrimeCurveAffine::identity();
        }
        check::<G1>(&with_identity, &random_scalars(n, 4), &p, "identity bases");
        check::<G1>(&bases, &vec![Scalar::ZERO; n], &p, "all zero");
    }

    #[test]
    fn chunks_and_passes_give_the_same_result() {
        let n = 1500;
        let bases = random_bases::<G1>(n, 5);
        let scalars = sparse_scalars(n, 0.3, 0.3, 6);
        let roomy = plan(n, 9, 1 << 30, true);
        assert_eq!(roomy.passes(), 1);
        let least = match Plan::new(&PlanInput {
            allowance: 0,
            ..input(n, 9)
        }) {
            Err(crate::MsmError::AllowanceTooSmall { needed, .. }) => needed,
            other => panic!("{other:?}"),
        };
        for allowance in [least, least * 3 / 2, least * 4] {
            let p = plan(n, 9, allowance, true);
            assert!(p.chunks(n) > 1 || p.passes() > 1, "{allowance}: {p:?}");
            check::<G1>(&bases, &scalars, &p, &format!("allowance {allowance}"));
        }
    }
}
