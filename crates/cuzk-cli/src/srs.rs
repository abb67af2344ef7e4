//! `cuzk preload` and `cuzk evict`: a circuit's parameters set up and placed on the daemon's
//! GPUs ahead of its first job, or freed.

use crate::client::Target;
use crate::emit;
use anyhow::{Context, Result};
use cuzk_proto::{EvictSrsRequest, PreloadSrsRequest};

/// Preloads circuit `id` (`porep-32g`, a `[[preload]]` circuit key, a key already set up).
pub async fn preload(target: &Target, id: &str) -> Result<()> {
    let r = target
        .client()
        .await?
        .preload_srs(PreloadSrsRequest {
            circuit_id: id.to_string(),
        })
        .await
        .with_context(|| format!("PreloadSRS {id}"))?
        .into_inner();
    emit(&if r.already_loaded {
        format!("{id}: already loaded\n")
    } else {
        format!("{id}: loaded in {} ms\n", r.load_time_ms)
    });
    Ok(())
}

/// Evicts circuit `id`'s parameters (devices and host).
pub async fn evict(target: &Target, id: &str) -> Result<()> {
    let r = target
        .client()
        .await?
        .evict_srs(EvictSrsRequest {
            circuit_id: id.to_string(),
        })
        .await
        .with_context(|| format!("EvictSRS {id}"))?
        .into_inner();
    emit(&if r.was_loaded {
        format!(
            "{id}: evicted, {:.1} MiB freed\n",
            r.freed_bytes as f64 / f64::from(1 << 20)
        )
    } else {
        format!("{id}: was not loaded\n")
    });
    Ok(())
}
