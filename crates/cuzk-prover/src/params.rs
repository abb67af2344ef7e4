//! Parameters on a device: the five query point vectors uploaded once and kept resident for
//! every proof, or (when they do not fit the VRAM budget) kept on the host and streamed
//! through the device in chunks by each MSM.

use crate::error::{Error, Result};
use crate::stage::{HostPoint, Stager};
use cuzk_cuda::{Device, Stream};
use cuzk_groth16::parts::Shape;
use cuzk_groth16::{PreparedParameters, VerifyingKey};
use cuzk_mem::{Budget, Reservation};
use cuzk_msm::gpu::Bases;
use cuzk_msm::{MsmCurve, G1, G2};
use cuzk_synth::{Density, Pce};
use std::fmt;
use std::sync::Arc;
use std::time::Instant;

/// Where the query points are.
pub(crate) enum Store {
    /// On the device, for the parameters' whole life. H is padded with the identity to the
    /// domain size, so the device-resident H scalars (one per domain point) pair with it.
    Resident(Box<Queries>),
    /// On the host; every MSM streams its bases through the device in chunks.
    Streamed(Arc<PreparedParameters>),
}

/// The five queries on the device (H padded with the identity to the domain size).
pub(crate) use crate::paramgen::DeviceQueries as Queries;

/// How to place parameters on a device.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Residency {
    /// Resident when the points and one proof's working set fit the budget, else streamed.
    #[default]
    Auto,
    /// Always upload the points (fails if they do not fit).
    Resident,
    /// Never upload them: every MSM streams its bases from host memory.
    Streamed,
}

/// Groth16 parameters prepared for one device's prover.
///
/// Holds the verifying key and the queries' sizes, and either the device copies of the
/// queries (resident, with their reservation in the device's VRAM budget; the host copy is
/// released, so a caller that drops its own handle frees the host memory) or the host
/// parameters (streamed).
pub struct DeviceParameters {
    pub(crate) ordinal: usize,
    pub(crate) vk: VerifyingKey,
    pub(crate) shape: Shape,
    pub(crate) store: Store,
    /// Held while the points are resident.
    _reservation: Option<Reservation>,
    upload_ms: f64,
}

impl fmt::Debug for DeviceParameters {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeviceParameters")
            .field("device", &self.ordinal)
            .field("resident", &self.is_resident())
            .field("bytes", &self.bytes())
            .finish()
    }
}

/// Device bytes the queries of parameters for the circuit of `pce` (with `density`, on a
/// domain of `domain` points) take when resident: what [`DeviceParameters::bytes`] reports
/// once they exist, with the query sizes the prover checks them against (H one point a domain
/// element but one, L one an aux variable, A and B one a variable they use).
pub fn resident_query_bytes(pce: &Pce, density: &Density, domain: usize) -> u64 {
    let b = density.b_input.count_ones() + density.b_aux.count_ones();
    query_bytes(&Shape {
        ic: pce.num_inputs,
        h: domain.saturating_sub(1),
        l: pce.num_aux,
        a: pce.num_inputs + density.a_aux.count_ones(),
        b_g1: b,
        b_g2: b,
    })
}

/// Device bytes of the five queries (H padded by one point).
pub(crate) fn query_bytes(shape: &Shape) -> u64 {
    let g1 = std::mem::size_of::<<G1 as MsmCurve>::AffineRepr>() as u64;
    let g2 = std::mem::size_of::<<G2 as MsmCurve>::AffineRepr>() as u64;
    g1 * (shape.h as u64 + 1 + shape.l as u64 + shape.a as u64 + shape.b_g1 as u64)
        + g2 * shape.b_g2 as u64
}

impl DeviceParameters {
    /// Places `params` on `device` as `residency` says. `working_set` is the device memory
    /// one proof needs besides the points; with a `budget`, the points are resident only if
    /// points and working set fit in its capacity, and the points' bytes stay reserved in it
    /// while resident.
    pub(crate) fn load(
        device: &Device,
        stream: &Stream,
        params: Arc<PreparedParameters>,
        residency: Residency,
        budget: Option<&Budget>,
        working_set: u64,
    ) -> Result<Self> {
        let shape = Shape::of(&params);
        let bytes = query_bytes(&shape);
        let capacity = match budget {
            Some(b) => b.capacity(),
            None => {
                let (free, _) = device.memory_info()?;
                free as u64
            }
        };
        let resident = match residency {
            Residency::Resident => true,
            Residency::Streamed => false,
            Residency::Auto => bytes + working_set <= capacity,
        };
        let start = Instant::now();
        let (store, reservation) = if resident {
            let reservation = budget.map(|b| b.try_reserve(bytes)).transpose()?;
            let store = upload(device, stream, &params)?;
            (store, reservation)
        } else {
            (Store::Streamed(params.clone()), None)
        };
        let upload_ms = start.elapsed().as_secs_f64() * 1e3;
        tracing::info!(
            device = device.ordinal(),
            resident,
            bytes,
            upload_ms,
            "parameters placed on the device"
        );
        Ok(DeviceParameters {
            ordinal: device.ordinal(),
            vk: params.vk().clone(),
            shape,
            store,
            _reservation: reservation,
            upload_ms,
        })
    }

    /// Parameters whose queries are already on `device` (made there by the GPU parameter
    /// generator with `keep_on_device`): `params` gives the verifying key and the query
    /// sizes, its host points are not used. With a `budget`, the points' bytes are reserved
    /// in it for as long as they stay resident.
    pub fn adopt(
        device: &Device,
        params: &cuzk_groth16::Parameters,
        queries: Queries,
        budget: Option<&Budget>,
    ) -> Result<Self> {
        let shape = Shape {
            ic: params.vk.ic.len(),
            h: params.h.len(),
            l: params.l.len(),
            a: params.a.len(),
            b_g1: params.b_g1.len(),
            b_g2: params.b_g2.len(),
        };
        let lens = [
            (queries.h.len(), shape.h + 1),
            (queries.l.len(), shape.l),
            (queries.a.len(), shape.a),
            (queries.b_g1.len(), shape.b_g1),
            (queries.b_g2.len(), shape.b_g2),
        ];
        for (found, expected) in lens {
            // Empty queries keep one spare point on the device.
            if found != expected && !(expected == 0 && found <= 1) {
                return Err(Error::shape("device query size", expected, found));
            }
        }
        let reservation = budget
            .map(|b| b.try_reserve(query_bytes(&shape)))
            .transpose()?;
        Ok(DeviceParameters {
            ordinal: device.ordinal(),
            vk: params.vk.clone(),
            shape,
            store: Store::Resident(Box::new(queries)),
            _reservation: reservation,
            upload_ms: 0.0,
        })
    }

    /// Whether the query points are resident on the device.
    pub fn is_resident(&self) -> bool {
        matches!(self.store, Store::Resident(_))
    }

    /// Device bytes the query points take when resident.
    pub fn bytes(&self) -> u64 {
        query_bytes(&self.shape)
    }

    /// Milliseconds the upload took (0 when streamed).
    pub fn upload_ms(&self) -> f64 {
        self.upload_ms
    }

    /// The verifying key.
    pub fn vk(&self) -> &VerifyingKey {
        &self.vk
    }

    /// The H query's bases when resident (with any shifted copies of them).
    pub fn h_bases(&self) -> Option<&Bases<G1>> {
        match &self.store {
            Store::Resident(q) => Some(&q.h),
            Store::Streamed(_) => None,
        }
    }

    pub(crate) fn h_bases_mut(&mut self) -> Option<&mut Bases<G1>> {
        match &mut self.store {
            Store::Resident(q) => Some(&mut q.h),
            Store::Streamed(_) => None,
        }
    }

    /// Ordinal of the device the parameters were placed on.
    pub fn device_ordinal(&self) -> usize {
        self.ordinal
    }
}

fn upload(device: &Device, stream: &Stream, params: &PreparedParameters) -> Result<Store> {
    let mut g1 = Stager::<<G1 as MsmCurve>::AffineRepr>::new(device)?;
    let mut g2 = Stager::<<G2 as MsmCurve>::AffineRepr>::new(device)?;
    let h = points(stream, &mut g1, params.h(), 1)?;
    let l = points(stream, &mut g1, params.l(), 0)?;
    let a = points(stream, &mut g1, params.a(), 0)?;
    let b_g1 = points(stream, &mut g1, params.b_g1(), 0)?;
    let b_g2 = points(stream, &mut g2, params.b_g2(), 0)?;
    g1.finish()?;
    g2.finish()?;
    stream.synchronize()?;
    Ok(Store::Resident(Box::new(Queries {
        h,
        l,
        a,
        b_g1,
        b_g2,
    })))
}

/// Uploads `src` followed by `pad` identities (all-zero points). An empty query still gets
/// one (identity) point, since the driver refuses empty allocations; MSMs over it have no
/// scalars and give the identity.
fn points<P: HostPoint>(
    stream: &Stream,
    stager: &mut Stager<<P::Curve as MsmCurve>::AffineRepr>,
    src: &[P],
    pad: usize,
) -> Result<Bases<P::Curve>> {
    let mut buf = stream.alloc_zeroed((src.len() + pad).max(1))?;
    stager.copy(stream, src, &mut buf, P::repr)?;
    Ok(Bases::from_device(buf))
}

impl Error {
    /// The error for device-resident parameters used on another device.
    pub(crate) fn wrong_device(params: usize, prover: usize) -> Error {
        Error::WrongDevice { params, prover }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cuzk_circuits::SyntheticPoRep;
    use rand_chacha::rand_core::SeedableRng;

    /// The estimate from a circuit is the byte count of the parameters made for it.
    #[test]
    fn resident_query_bytes_match_the_generated_parameters() {
        for n in [(1 << 10) - 2, 300] {
            let pce = SyntheticPoRep::new(n, 1).pce();
            let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(n as u64);
            let params = cuzk_groth16::generate_parameters(&pce, &mut rng).unwrap();
            let prepared = PreparedParameters::from(params);
            let domain = prepared.h().len() + 1;
            assert_eq!(
                resident_query_bytes(&pce, &pce.density(), domain),
                query_bytes(&Shape::of(&prepared)),
                "synthetic PoRep of {n} constraints"
            );
        }
    }
}
