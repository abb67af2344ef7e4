//! Parameters on a device: the five query point vectors uploaded once and kept resident for
//! every proof, or (when they do not fit the VRAM budget) kept on the host and streamed
//! through the device in chunks by each MSM.

use super::stage::{HostPoint, Stager};
use crate::error::{Error, Result};
use crate::params::{PreparedParameters, VerifyingKey};
use crate::prover::Shape;
use cuzk_cuda::{Device, Stream};
use cuzk_mem::{Budget, Reservation};
use cuzk_msm::gpu::Bases;
use cuzk_msm::{MsmCurve, G1, G2};
use std::fmt;
use std::sync::Arc;
use std::time::Instant;

/// Where the query points are.
pub(crate) enum Store {
    /// On the device, for the parameters' whole life. H is padded with the identity to the
    /// domain size, so the device-resident H scalars (one per domain point) pair with it.
    Resident(Box<Queries>),
    /// On the host; every MSM streams its bases through the device in chunks.
    Streamed,
}

/// The five queries on the device.
pub(crate) struct Queries {
    pub h: Bases<G1>,
    pub l: Bases<G1>,
    pub a: Bases<G1>,
    pub b_g1: Bases<G1>,
    pub b_g2: Bases<G2>,
}

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
/// Holds the host parameters (for the verifying key, the shape checks and, when streamed,
/// the points) and, when resident, the device copies of the queries together with their
/// reservation in the device's VRAM budget.
pub struct DeviceParameters {
    pub(crate) ordinal: usize,
    pub(crate) host: Arc<PreparedParameters>,
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
            (Store::Streamed, None)
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
            host: params,
            shape,
            store,
            _reservation: reservation,
            upload_ms,
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
        self.host.vk()
    }

    /// The host parameters.
    pub fn host(&self) -> &Arc<PreparedParameters> {
        &self.host
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
