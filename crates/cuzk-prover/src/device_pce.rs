//! A circuit's PCE on the device, so that a proof evaluates a, b, c there instead of on the
//! host ([`DevicePce`]): its three matrices and the density bitmaps that pick the A and B
//! scalars out of the witness. Placed once per circuit and device, shared by the lanes.

use crate::error::{Error, Result};
use cuzk_cuda::sparse::{DeviceBitmap, DeviceCsr};
use cuzk_cuda::Stream;
use cuzk_field::{Bitmap, FrRepr};
use cuzk_mem::Reservation;
use cuzk_synth::{Csr, Density, Pce};
use std::fmt;

/// One circuit's constraint matrices and density bitmaps in device memory (see the module
/// docs). Freed, and its VRAM reservation (if any) released, when dropped.
pub struct DevicePce {
    pub(crate) a: DeviceCsr,
    pub(crate) b: DeviceCsr,
    pub(crate) c: DeviceCsr,
    pub(crate) a_aux: DeviceBitmap,
    pub(crate) b_input: DeviceBitmap,
    pub(crate) b_aux: DeviceBitmap,
    pub(crate) num_inputs: usize,
    pub(crate) num_aux: usize,
    pub(crate) ordinal: usize,
    bytes: u64,
    // Dropped after the buffers above (fields drop in order).
    _reservation: Option<Reservation>,
}

impl fmt::Debug for DevicePce {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DevicePce")
            .field("device", &self.ordinal)
            .field("rows", &self.a.rows())
            .field("inputs", &self.num_inputs)
            .field("aux", &self.num_aux)
            .field("bytes", &self.bytes)
            .finish_non_exhaustive()
    }
}

impl DevicePce {
    /// Device bytes the PCE of `pce` takes on a device, or `None` when it cannot go there:
    /// a matrix of 2^32 entries or more (the device's row pointers are 32-bit).
    pub fn bytes_for(pce: &Pce) -> Option<u64> {
        let mut bytes = 0u64;
        for m in [&pce.a, &pce.b, &pce.c] {
            u32::try_from(m.nnz()).ok()?;
            bytes += DeviceCsr::bytes_for(m.num_rows(), m.nnz(), m.table.len());
        }
        let (inputs, aux) = (pce.num_inputs, pce.num_aux);
        Some(bytes + 2 * DeviceBitmap::bytes_for(aux) + DeviceBitmap::bytes_for(inputs))
    }

    /// Uploads `pce` and `density` on `stream` and waits for the copies; `reservation`
    /// (if any) holds the bytes and is released with the result.
    pub(crate) fn upload(
        stream: &Stream,
        pce: &Pce,
        density: &Density,
        reservation: Option<Reservation>,
    ) -> Result<DevicePce> {
        let cols = pce.num_inputs + pce.num_aux;
        let matrix = |m: &Csr| -> Result<DeviceCsr> {
            let row_ptr = row_pointers(m)?;
            let table: Vec<FrRepr> = m.table.iter().map(|&s| s.into()).collect();
            Ok(DeviceCsr::upload(
                stream, &row_ptr, &m.cols, &m.coeffs, &table, cols,
            )?)
        };
        let bitmap = |what: &'static str, bits: &Bitmap, len: usize| -> Result<DeviceBitmap> {
            if bits.len() != len {
                return Err(Error::shape(what, len, bits.len()));
            }
            Ok(DeviceBitmap::upload(stream, bits.words(), len)?)
        };
        let placed = DevicePce {
            a: matrix(&pce.a)?,
            b: matrix(&pce.b)?,
            c: matrix(&pce.c)?,
            a_aux: bitmap("A density bitmap (aux)", &density.a_aux, pce.num_aux)?,
            b_input: bitmap(
                "B density bitmap (inputs)",
                &density.b_input,
                pce.num_inputs,
            )?,
            b_aux: bitmap("B density bitmap (aux)", &density.b_aux, pce.num_aux)?,
            num_inputs: pce.num_inputs,
            num_aux: pce.num_aux,
            ordinal: stream.device().ordinal(),
            bytes: 0,
            _reservation: reservation,
        };
        stream.synchronize()?;
        let bytes = [&placed.a, &placed.b, &placed.c]
            .iter()
            .map(|m| m.bytes())
            .chain([&placed.a_aux, &placed.b_input, &placed.b_aux].map(|b| b.bytes()))
            .sum();
        Ok(DevicePce { bytes, ..placed })
    }

    /// Device bytes held.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// The device it lives on.
    pub fn ordinal(&self) -> usize {
        self.ordinal
    }

    /// Rows of its matrices (constraints and input rows).
    pub fn rows(&self) -> usize {
        self.a.rows()
    }

    /// Scalars of the A query: every input, then the aux A uses.
    pub(crate) fn a_len(&self) -> usize {
        self.num_inputs + self.a_aux.ones()
    }

    /// Scalars of the B queries: the inputs B uses, then its aux.
    pub(crate) fn b_len(&self) -> usize {
        self.b_input.ones() + self.b_aux.ones()
    }
}

/// Device bytes a proof that evaluates on the device needs beyond the host path's working
/// set: the witness (inputs and aux) and one MSM scalar buffer, as large as the larger of A's
/// and B's, plus the failing-row slot.
pub fn device_eval_bytes(inputs: usize, aux: usize, a: usize, b: usize) -> u64 {
    let elem = std::mem::size_of::<FrRepr>() as u64;
    elem * (inputs.max(1) + aux.max(1) + a.max(b).max(1)) as u64 + 4
}

/// `m`'s row pointers as the device holds them (32-bit).
fn row_pointers(m: &Csr) -> Result<Vec<u32>> {
    u32::try_from(m.nnz()).map_err(|_| Error::PceTooLarge { entries: m.nnz() })?;
    // Each pointer is at most the entry count (the PCE's invariant, and the upload checks
    // it), so none is truncated.
    Ok(m.row_ptr.iter().map(|&p| p as u32).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use cuzk_synth::testing::RandomCircuit;

    #[test]
    fn planned_bytes_count_the_matrices_and_bitmaps() {
        let pce = Pce::record(RandomCircuit::new(3, 200)).unwrap();
        let matrices: u64 = [&pce.a, &pce.b, &pce.c]
            .iter()
            .map(|m| DeviceCsr::bytes_for(m.num_rows(), m.nnz(), m.table.len()))
            .sum();
        let bitmaps =
            2 * DeviceBitmap::bytes_for(pce.num_aux) + DeviceBitmap::bytes_for(pce.num_inputs);
        assert_eq!(DevicePce::bytes_for(&pce), Some(matrices + bitmaps));
    }

    #[test]
    fn device_evaluation_adds_the_witness_and_the_larger_scalar_buffer() {
        assert_eq!(device_eval_bytes(3, 100, 60, 80), 32 * (3 + 100 + 80) + 4);
        assert_eq!(device_eval_bytes(0, 0, 0, 0), 32 * 3 + 4);
    }

    #[test]
    fn row_pointers_narrow_to_32_bits() {
        let pce = Pce::record(RandomCircuit::new(4, 50)).unwrap();
        let narrow = row_pointers(&pce.a).unwrap();
        assert_eq!(narrow.len(), pce.a.row_ptr.len());
        assert!(narrow
            .iter()
            .zip(&pce.a.row_ptr)
            .all(|(&n, &w)| u64::from(n) == w));
    }
}
