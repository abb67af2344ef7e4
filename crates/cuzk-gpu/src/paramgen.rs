//! Parameter generation on a GPU for circuits without supplied parameters: the query points
//! are multiplied on the device with the most VRAM free, under its budget, and kept there
//! for the circuit's proofs when they fit beside everything else the device holds.

use crate::backend::Inner;
use crate::sizes::{self, Queries};
use crate::GpuError;
use cuzk_groth16::{Parameters, ToxicWaste};
use cuzk_mem::Bytes;
use cuzk_plugin::{BackendError, ParameterGenerator};
use cuzk_prover::{generate_parameters_gpu_config, GpuParamgenConfig};
use cuzk_synth::Pce;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long generation waits for its VRAM (proofs hold it) before the registry falls back
/// to the CPU generator.
const VRAM_WAIT: Duration = Duration::from_secs(120);

/// The CUDA backend's parameter generator.
pub(crate) struct GpuParamgen {
    inner: Arc<Inner>,
}

impl GpuParamgen {
    pub fn new(inner: Arc<Inner>) -> GpuParamgen {
        GpuParamgen { inner }
    }
}

impl ParameterGenerator for GpuParamgen {
    fn name(&self) -> &str {
        "gpu"
    }

    fn generate(&self, circuit_key: &str, pce: &Pce) -> Result<Parameters, BackendError> {
        let device = self
            .inner
            .devices
            .iter()
            .max_by_key(|d| d.vram.available())
            .expect("the backend has at least one device");
        let ordinal = device.ordinal();
        let fail = |e: GpuError| e.into_backend(device.index);
        // Keep the points on the device if, as far as the circuit's size tells, they fit
        // there beside the generator's own work and what the device already holds.
        let vars = (pce.num_inputs + pce.num_aux) as u64;
        let n = (pce.num_rows() as u64).max(1).next_power_of_two();
        let estimate = Queries {
            h: n - 1,
            l: pce.num_aux as u64,
            a: vars,
            b_g1: vars,
            b_g2: vars,
        };
        let working = sizes::paramgen_vram(pce, false);
        let keep = device.would_keep(&estimate, working);
        let bytes = sizes::paramgen_vram(pce, keep);
        let _span =
            tracing::info_span!("paramgen", device = ordinal, circuit = %circuit_key).entered();
        let start = Instant::now();
        let reservation = device
            .vram
            .reserve_blocking(bytes, Some(VRAM_WAIT))
            .map_err(|e| fail(GpuError::budget(ordinal)(e)))?;
        let toxic = ToxicWaste::random(&mut rand::rngs::OsRng);
        let config = GpuParamgenConfig {
            keep_on_device: keep,
            ..GpuParamgenConfig::default()
        };
        let made = generate_parameters_gpu_config(&device.device, pce, &toxic, &config);
        // Its buffers are freed in stream order: wait before giving any bytes back.
        let synced = device.device.synchronize();
        let generated = made.map_err(|e| fail(e.into()))?;
        synced.map_err(|e| fail(GpuError::cuda(ordinal)(e)))?;
        let mut kept = false;
        if let Some(queries) = generated.on_device {
            let density = self.inner.density(circuit_key, pce);
            kept = device
                .adopt(
                    circuit_key,
                    &generated.params,
                    pce,
                    queries,
                    &density,
                    reservation,
                )
                .map_err(fail)?;
        }
        tracing::info!(
            device = ordinal,
            reserved = %Bytes(bytes),
            kept_on_device = kept,
            ms = start.elapsed().as_millis() as u64,
            "parameters generated on the GPU"
        );
        Ok(generated.params)
    }
}
