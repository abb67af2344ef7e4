//! `cuzk-bench paramgen --synthetic … --gpu`: the GPU parameter generator with its phase
//! times, optionally over several G1 window widths and points per thread (one point per thread
//! inverts once per point, which measures what the shared inversion saves).

use anyhow::{Context, Result};
use cuzk_cuda::Device;
use cuzk_groth16::{Parameters, ParamgenTimings, ToxicWaste};
use cuzk_msm::gpu::FixedBaseEngine;
use cuzk_prover::{generate_parameters_gpu_config, GpuParamgenConfig};
use cuzk_synth::Pce;

/// The GPU options of `cuzk-bench paramgen`.
#[derive(clap::Args, Debug)]
pub struct GpuArgs {
    /// With `--synthetic`: run the GPU generator.
    #[arg(long)]
    gpu: bool,
    /// G1 table window widths to run, in bits (default: the engine's, 14).
    #[arg(long, value_delimiter = ',')]
    g1_bits: Vec<u32>,
    /// G2 table window width in bits (default: the engine's, 13).
    #[arg(long)]
    g2_bits: Option<u32>,
    /// Points per GPU thread to run, 1..=16 (default 16; they share one inversion).
    #[arg(long, value_delimiter = ',')]
    per_thread: Vec<u32>,
    /// Keep the query points on the device too, as for a prover that starts right away.
    #[arg(long)]
    keep: bool,
    /// GPU runs of each configuration.
    #[arg(long, default_value_t = 1)]
    runs: usize,
}

impl GpuArgs {
    /// Whether `--gpu` was given.
    pub fn enabled(&self) -> bool {
        self.gpu
    }
}

/// Opens device 0 and loads the kernel image, outside every timing.
pub fn open() -> Result<Device> {
    let device = Device::open(0).context("opening CUDA device 0")?;
    FixedBaseEngine::new(&device).context("loading the fixed-base kernels")?;
    eprintln!("    device: {}", device.info());
    Ok(device)
}

/// Every configuration's runs: a label, the timings, and the first run's parameters when
/// `keep_params` (for the comparison with the CPU generator).
pub fn run(
    args: &GpuArgs,
    device: &Device,
    pce: &Pce,
    toxic: &ToxicWaste,
    keep_params: bool,
) -> Result<Vec<(String, ParamgenTimings, Option<Parameters>)>> {
    let or_default = |v: &[u32]| -> Vec<Option<u32>> {
        if v.is_empty() {
            vec![None]
        } else {
            v.iter().copied().map(Some).collect()
        }
    };
    let mut out = Vec::new();
    for g1_bits in or_default(&args.g1_bits) {
        for per in or_default(&args.per_thread) {
            let config = GpuParamgenConfig {
                g1_window_bits: g1_bits,
                g2_window_bits: args.g2_bits,
                points_per_thread: per,
                keep_on_device: args.keep,
            };
            let mut label = "gpu".to_string();
            if let Some(b) = g1_bits {
                label += &format!(" g1 {b} bits");
            }
            if let Some(p) = per {
                label += &format!(" {p}/thread");
            }
            if args.keep {
                label += " kept";
            }
            for _ in 0..args.runs.max(1) {
                eprintln!("==> {label}: {config:?}");
                let generated = generate_parameters_gpu_config(device, pce, toxic, &config)
                    .context("cuzk generating parameters on the GPU")?;
                eprintln!("    {:.1} s", generated.timings.total.as_secs_f64());
                let params = (keep_params && out.is_empty()).then_some(generated.params);
                out.push((label.clone(), generated.timings, params));
            }
        }
    }
    Ok(out)
}
