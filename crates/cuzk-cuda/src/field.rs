//! Element-wise arithmetic on device arrays of Fr, Fp and Fp2 (`kernels/field/field_ops.cu`):
//! the check that the GPU field code agrees with blstrs, and a building block for callers.
//!
//! Elements are the Montgomery-form layouts of `cuzk_field` (`FrRepr`, `FpRepr`, `Fp2Repr`),
//! which the kernels read as little-endian `u32` limbs.
#![allow(unsafe_code)] // The launches of this module's kernels, each checked against its signature.

use crate::{CudaError, DeviceBuffer, LaunchConfig, Result, Stream};
use bytemuck::Pod;
use cuzk_field::{Fp2Repr, FpRepr, FrRepr};

/// A field the kernel image has element-wise kernels for.
pub trait GpuField: Pod + sealed::Sealed {
    /// Short name used in kernel names: `fr`, `fp` or `fp2`.
    const NAME: &'static str;
}

mod sealed {
    /// Only the fields whose kernels exist in the image.
    pub trait Sealed {}
}

impl sealed::Sealed for FrRepr {}
impl sealed::Sealed for FpRepr {}
impl sealed::Sealed for Fp2Repr {}

impl GpuField for FrRepr {
    const NAME: &'static str = "fr";
}
impl GpuField for FpRepr {
    const NAME: &'static str = "fp";
}
impl GpuField for Fp2Repr {
    const NAME: &'static str = "fp2";
}

/// An operation of two operands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BinaryOp {
    /// `a + b`
    Add,
    /// `a - b`
    Sub,
    /// `a · b`
    Mul,
}

/// An operation of one operand.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UnaryOp {
    /// `a²`
    Square,
    /// `a⁻¹`, with `0⁻¹ = 0` (blstrs reports no inverse for 0; the kernels map it to 0).
    Inverse,
}

impl BinaryOp {
    /// The exported kernel for this operation on `F`, such as `cuzk_fr_add`.
    pub fn kernel_name<F: GpuField>(self) -> String {
        let op = match self {
            BinaryOp::Add => "add",
            BinaryOp::Sub => "sub",
            BinaryOp::Mul => "mul",
        };
        format!("cuzk_{}_{op}", F::NAME)
    }
}

impl UnaryOp {
    /// The exported kernel for this operation on `F`, such as `cuzk_fp2_inv`.
    pub fn kernel_name<F: GpuField>(self) -> String {
        let op = match self {
            UnaryOp::Square => "sqr",
            UnaryOp::Inverse => "inv",
        };
        format!("cuzk_{}_{op}", F::NAME)
    }
}

/// Threads per block of the element-wise kernels: small blocks, many of them, since each
/// thread holds a few field elements in registers.
const BLOCK: u32 = 256;

fn config(stream: &Stream, n: usize) -> LaunchConfig {
    // Grid-stride kernels: a few waves of blocks per SM keep every SM busy for any `n`.
    let max_grid = stream.device().info().sm_count.max(1) * 8;
    LaunchConfig::for_items(n, BLOCK, max_grid)
}

pub(crate) fn same_len(what: &'static str, expected: usize, got: usize) -> Result<()> {
    if expected != got {
        return Err(CudaError::LengthMismatch {
            what,
            expected,
            got,
        });
    }
    Ok(())
}

/// Queues `out[i] = a[i] op b[i]` for every `i` on `stream`; all three of equal length.
pub fn binary<F: GpuField>(
    stream: &Stream,
    op: BinaryOp,
    a: &DeviceBuffer<F>,
    b: &DeviceBuffer<F>,
    out: &mut DeviceBuffer<F>,
) -> Result<()> {
    same_len("second operand", a.len(), b.len())?;
    same_len("output", a.len(), out.len())?;
    let kernel = stream.device().kernel(&op.kernel_name::<F>())?;
    let n = a.len() as u64;
    let cfg = config(stream, a.len());
    // SAFETY: every binary field kernel is `(F* out, const F* a, const F* b, uint64_t n)` over
    // elements of F's layout; all three buffers hold exactly `n` elements and the kernels'
    // grid-stride loops stay below `n`; `a` and `b` are only read; no shared memory is used.
    unsafe {
        stream
            .launch(&kernel)
            .buf_mut(out)
            .buf(a)
            .buf(b)
            .arg(&n)
            .launch(cfg)
    }
}

/// Queues `out[i] = op(a[i])` for every `i` on `stream`; both of equal length.
pub fn unary<F: GpuField>(
    stream: &Stream,
    op: UnaryOp,
    a: &DeviceBuffer<F>,
    out: &mut DeviceBuffer<F>,
) -> Result<()> {
    same_len("output", a.len(), out.len())?;
    let kernel = stream.device().kernel(&op.kernel_name::<F>())?;
    let n = a.len() as u64;
    let cfg = config(stream, a.len());
    // SAFETY: every unary field kernel is `(F* out, const F* a, uint64_t n)` over elements of
    // F's layout; both buffers hold exactly `n` elements and the grid-stride loops stay below
    // `n`; `a` is only read; no shared memory is used.
    unsafe {
        stream
            .launch(&kernel)
            .buf_mut(out)
            .buf(a)
            .arg(&n)
            .launch(cfg)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_names_match_the_exports() {
        assert_eq!(BinaryOp::Add.kernel_name::<FrRepr>(), "cuzk_fr_add");
        assert_eq!(BinaryOp::Mul.kernel_name::<Fp2Repr>(), "cuzk_fp2_mul");
        assert_eq!(UnaryOp::Inverse.kernel_name::<FpRepr>(), "cuzk_fp_inv");
        assert_eq!(UnaryOp::Square.kernel_name::<FrRepr>(), "cuzk_fr_sqr");
    }
}
