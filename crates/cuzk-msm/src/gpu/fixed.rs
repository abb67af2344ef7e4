//! Fixed-base multiplication on the device: `sᵢ·G` for many scalars and one base `G`, from a
//! table of `G`'s signed-window multiples (kernels/curve/fixed_base.cu), results in blst's
//! affine layout. Parameter generation multiplies the generators by hundreds of millions of
//! scalars this way.
//!
//! ```no_run
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use cuzk_cuda::Device;
//! use cuzk_field::{G1Affine, PrimeCurveAffine};
//! use cuzk_msm::gpu::FixedBaseEngine;
//! use cuzk_msm::{testing, G1};
//! let device = Device::open(0)?;
//! let stream = device.new_stream()?;
//! let engine = FixedBaseEngine::new(&device)?;
//! let table = engine.table::<G1>(&stream, &G1Affine::generator(), None)?;
//! let scalars = testing::to_reprs(&testing::random_scalars(1 << 20, 1));
//! let points = engine.mul_host::<G1>(&stream, &table, &scalars)?; // sᵢ·G, affine
//! # let _ = points; Ok(()) }
//! ```
#![allow(unsafe_code)] // The kernel launch; it states why it is sound.

use super::Bases;
use crate::curve::MsmCurve;
use crate::MsmError;
use cuzk_cuda::{Device, DeviceBuffer, DeviceView, DeviceViewMut, Kernel, LaunchConfig, Stream};
use cuzk_field::{FrRepr, PrimeCurveAffine};
use group::{Curve, Group};
use rayon::prelude::*;
use std::fmt;
use std::marker::PhantomData;

/// Narrowest table window, in bits.
pub const FIXED_MIN_BITS: u32 = 2;
/// Widest table window, in bits (the kernel reads a digit from two 32-bit words).
pub const FIXED_MAX_BITS: u32 = 16;
/// Most points one thread makes (they share one inversion): MAX_PER_THREAD in the kernel.
pub const FIXED_MAX_PER_THREAD: u32 = 16;

/// Threads per block of the fixed-base kernels.
const BLOCK: u32 = 128;
/// Points per launch: bounds a launch's grid, no other effect.
const LAUNCH_POINTS: usize = 1 << 26;

/// Windows of `bits` bits that cover a 255-bit scalar and the carry of its signed recoding.
pub fn fixed_windows(bits: u32) -> u32 {
    256u32.div_ceil(bits.max(1))
}

/// The default window width of a group: the widest whose table (windows · 2^{bits−1} points)
/// stays near 16 MiB, so that it lives in L2 beside the streams of scalars and points.
/// G1: 14 bits (19 windows, 14.9 MiB); G2: 13 bits (20 windows, 15.7 MiB).
pub fn default_fixed_bits<C: MsmCurve>() -> u32 {
    let point = std::mem::size_of::<C::AffineRepr>();
    (FIXED_MIN_BITS..=FIXED_MAX_BITS)
        .rev()
        .find(|&b| table_len(b) * point <= 16 << 20)
        .unwrap_or(FIXED_MIN_BITS)
}

/// Points in a table of `bits`-bit windows.
fn table_len(bits: u32) -> usize {
    fixed_windows(bits) as usize * (1usize << (bits - 1))
}

/// `d·2^{bits·w}·base` for every window `w` and `d = 1..=2^{bits−1}`, entry
/// `w·2^{bits−1} + d − 1`, in the kernels' layout: the table the device reads. Built on the
/// host, one window per task.
pub fn fixed_table_host<C: MsmCurve>(
    base: &C::Affine,
    bits: u32,
) -> Result<Vec<C::AffineRepr>, MsmError> {
    check_bits(bits)?;
    if bool::from(base.is_identity()) {
        return Err(MsmError::IdentityBase { group: C::NAME });
    }
    let half = 1usize << (bits - 1);
    let mut window_bases = Vec::with_capacity(fixed_windows(bits) as usize);
    let mut b = base.to_curve();
    for _ in 0..fixed_windows(bits) {
        window_bases.push(b);
        for _ in 0..bits {
            b = b.double();
        }
    }
    let table: Vec<C::AffineRepr> = window_bases
        .par_iter()
        .flat_map_iter(|wb| {
            let step = wb.to_affine();
            let mut acc = *wb;
            let multiples: Vec<C::Projective> = (0..half)
                .map(|_| {
                    let out = acc;
                    acc += &step;
                    out
                })
                .collect();
            C::batch_to_affine(&multiples)
                .into_iter()
                .map(|p| C::to_repr(&p))
        })
        .collect();
    debug_assert_eq!(table.len(), table_len(bits));
    Ok(table)
}

fn check_bits(bits: u32) -> Result<(), MsmError> {
    if !(FIXED_MIN_BITS..=FIXED_MAX_BITS).contains(&bits) {
        return Err(MsmError::BadWindow {
            bits,
            min: FIXED_MIN_BITS,
            max: FIXED_MAX_BITS,
        });
    }
    Ok(())
}

/// A base point's window table, resident on the device.
pub struct FixedBaseTable<C: MsmCurve> {
    /// `fixed_windows(bits) · 2^{bits−1}` points, none the identity.
    points: DeviceBuffer<C::AffineRepr>,
    bits: u32,
    _group: PhantomData<C>,
}

impl<C: MsmCurve> FixedBaseTable<C> {
    /// Window width in bits.
    pub fn bits(&self) -> u32 {
        self.bits
    }

    /// Number of windows.
    pub fn windows(&self) -> u32 {
        fixed_windows(self.bits)
    }

    /// Size of the table on the device, in bytes.
    pub fn size_bytes(&self) -> usize {
        self.points.size_bytes()
    }
}

impl<C: MsmCurve> fmt::Debug for FixedBaseTable<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FixedBaseTable")
            .field("group", &C::NAME)
            .field("bits", &self.bits)
            .field("points", &self.points.len())
            .finish()
    }
}

/// The fixed-base kernels of one device.
#[derive(Clone)]
pub struct FixedBaseEngine {
    g1: Kernel,
    g2: Kernel,
    per_thread: u32,
}

impl fmt::Debug for FixedBaseEngine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FixedBaseEngine")
            .field("per_thread", &self.per_thread)
            .finish_non_exhaustive()
    }
}

impl FixedBaseEngine {
    /// Looks up the kernels (the image must hold kernels/curve/fixed_base.cu).
    pub fn new(device: &Device) -> Result<Self, MsmError> {
        Ok(FixedBaseEngine {
            g1: device.kernel("cuzk_curve_g1_fixed_base")?,
            g2: device.kernel("cuzk_curve_g2_fixed_base")?,
            per_thread: FIXED_MAX_PER_THREAD,
        })
    }

    /// The same engine with `per` points per thread (1..=16; default 16): fewer means more
    /// field inversions, one per thread, which is how their cost is measured.
    pub fn with_points_per_thread(mut self, per: u32) -> Result<Self, MsmError> {
        if !(1..=FIXED_MAX_PER_THREAD).contains(&per) {
            return Err(MsmError::BadPointsPerThread {
                per,
                max: FIXED_MAX_PER_THREAD,
            });
        }
        self.per_thread = per;
        Ok(self)
    }

    /// Points each thread makes.
    pub fn points_per_thread(&self) -> u32 {
        self.per_thread
    }

    /// Builds `base`'s table on the host ([`fixed_table_host`]) with `bits`-bit windows
    /// (default: [`default_fixed_bits`]) and uploads it.
    pub fn table<C: MsmCurve>(
        &self,
        stream: &Stream,
        base: &C::Affine,
        bits: Option<u32>,
    ) -> Result<FixedBaseTable<C>, MsmError> {
        let bits = bits.unwrap_or_else(default_fixed_bits::<C>);
        let host = fixed_table_host::<C>(base, bits)?;
        Ok(FixedBaseTable {
            points: stream.upload(&host)?,
            bits,
            _group: PhantomData,
        })
    }

    /// `out[i] = scalars[i]·G` in affine form (identity all zeros), for `G` the table's base
    /// and scalars in Montgomery form (`FrRepr::from`). Queued on `stream`; the host does not
    /// wait.
    pub fn mul<C: MsmCurve>(
        &self,
        stream: &Stream,
        table: &FixedBaseTable<C>,
        scalars: &DeviceView<'_, FrRepr>,
        out: &mut DeviceViewMut<'_, C::AffineRepr>,
    ) -> Result<(), MsmError> {
        let n = scalars.len();
        if out.len() != n {
            return Err(MsmError::OutputLength {
                scalars: n,
                out: out.len(),
            });
        }
        let kernel = if C::NAME == "g1" { &self.g1 } else { &self.g2 };
        let (bits, windows, per) = (table.bits, table.windows(), self.per_thread);
        debug_assert_eq!(table.points.len(), table_len(bits));
        for begin in (0..n).step_by(LAUNCH_POINTS) {
            let end = (begin + LAUNCH_POINTS).min(n);
            let threads = (end - begin).div_ceil(per as usize);
            let blocks = u32::try_from(threads.div_ceil(BLOCK as usize))
                .expect("a launch of 2^26 points has few blocks");
            let (begin64, end64) = (begin as u64, end as u64);
            // SAFETY: `cuzk_curve_{g1,g2}_fixed_base(affine_t<F>* out, const fr_t* scalars,
            // uint64_t begin, uint64_t end, const affine_t<F>* table, uint32_t c, uint32_t
            // windows, uint32_t per)` gets these arguments, in this order and layout (the point
            // layout is `C::AffineRepr`, the kernel of `C`'s group). It reads scalars[i] and
            // writes out[i] only for begin ≤ i < end ≤ n, the length of both views (checked
            // above). It reads table[w·2^{c−1} + d − 1] for w < windows and 1 ≤ d ≤ 2^{c−1}:
            // below windows·2^{c−1}, the table's length, since a `FixedBaseTable` is only made
            // by `table` from `fixed_table_host` with this `bits` (checked in 2..=16) and
            // `windows = fixed_windows(bits)`. per is in 1..=16, the kernel's limit; the grid of
            // blocks·128 ≥ ceil((end − begin)/per) threads covers the range. `out` is written
            // and no input aliases it (it is borrowed mutably here).
            unsafe {
                stream
                    .launch(kernel)
                    .view_mut(out)
                    .view(scalars)
                    .arg(&begin64)
                    .arg(&end64)
                    .buf(&table.points)
                    .arg(&bits)
                    .arg(&windows)
                    .arg(&per)
                    .launch(LaunchConfig::linear(blocks, BLOCK))
            }?;
        }
        Ok(())
    }

    /// [`mul`](Self::mul) into newly allocated device memory, as resident MSM [`Bases`].
    pub fn mul_to_bases<C: MsmCurve>(
        &self,
        stream: &Stream,
        table: &FixedBaseTable<C>,
        scalars: &DeviceView<'_, FrRepr>,
    ) -> Result<Bases<C>, MsmError> {
        let n = scalars.len();
        if n == 0 {
            // The driver refuses empty allocations: keep one spare point, as `Bases` does.
            let points = stream.alloc_zeroed(1)?;
            return Ok(Bases {
                len: 0,
                ..Bases::from_device(points)
            });
        }
        let mut points = stream.alloc::<C::AffineRepr>(n)?;
        self.mul(stream, table, scalars, &mut points.as_view_mut())?;
        Ok(Bases::from_device(points))
    }

    /// Uploads `scalars`, multiplies, and downloads the points (waiting for them).
    pub fn mul_host<C: MsmCurve>(
        &self,
        stream: &Stream,
        table: &FixedBaseTable<C>,
        scalars: &[FrRepr],
    ) -> Result<Vec<C::AffineRepr>, MsmError> {
        if scalars.is_empty() {
            return Ok(Vec::new());
        }
        let on_device = stream.upload(scalars)?;
        let mut points = stream.alloc::<C::AffineRepr>(scalars.len())?;
        self.mul(
            stream,
            table,
            &on_device.as_view(),
            &mut points.as_view_mut(),
        )?;
        Ok(stream.download(&points)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{G1, G2};
    use cuzk_field::{Field, G1Affine, G2Affine, Scalar};

    #[test]
    fn default_tables_fit_the_budget() {
        assert_eq!(default_fixed_bits::<G1>(), 14);
        assert_eq!(default_fixed_bits::<G2>(), 13);
        assert_eq!(fixed_windows(14), 19);
        assert_eq!(fixed_windows(13), 20);
        assert_eq!(fixed_windows(16), 16);
        for bits in FIXED_MIN_BITS..=FIXED_MAX_BITS {
            assert!(fixed_windows(bits) * bits >= 256);
        }
    }

    fn table_holds_the_multiples<C: MsmCurve>() {
        let g = C::Affine::generator();
        let bits = 3;
        let table = fixed_table_host::<C>(&g, bits).unwrap();
        assert_eq!(table.len(), table_len(bits));
        for (k, p) in table.iter().enumerate() {
            let (w, d) = (k / 4, k % 4 + 1);
            let s = Scalar::from(d as u64) * Scalar::from(2u64).pow_vartime([3 * w as u64]);
            assert_eq!(*p, C::to_repr(&(g * s).to_affine()), "entry {k}");
        }
    }

    #[test]
    fn tables_hold_the_window_multiples() {
        table_holds_the_multiples::<G1>();
        table_holds_the_multiples::<G2>();
    }

    #[test]
    fn tables_refuse_bad_bases_and_widths() {
        assert!(matches!(
            fixed_table_host::<G1>(&G1Affine::identity(), 8),
            Err(MsmError::IdentityBase { group: "g1" })
        ));
        assert!(matches!(
            fixed_table_host::<G2>(&G2Affine::generator(), 17),
            Err(MsmError::BadWindow { bits: 17, .. })
        ));
        assert!(matches!(
            fixed_table_host::<G1>(&G1Affine::generator(), 1),
            Err(MsmError::BadWindow { bits: 1, .. })
        ));
    }
}
