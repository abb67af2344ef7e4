//! GPU tests of the pinned pool and the VRAM budget. Ignored where there is no GPU; run them
//! with `cargo xtask test --gpu` (or the bundle's `run-tests`).
//!
//! The tests take one lock each, so that the driver's memory figures one of them samples are
//! not moved by another running beside it.
#![cfg(feature = "cuda")]

use cuzk_cuda::{Device, DeviceBuffer, Stream};
use cuzk_mem::{Budget, MemError, PinnedPool, Plan, VramBudget, VramPolicy, DEFAULT_VRAM_MARGIN};
use std::sync::{Arc, Barrier, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(PoisonError::into_inner)
}

fn device() -> Device {
    Device::open(0).expect("GPU tests need a CUDA device")
}

fn pattern(n: usize, salt: u32) -> Vec<u32> {
    (0..n as u32)
        .map(|i| (i ^ salt).wrapping_mul(2_654_435_761))
        .collect()
}

/// Queues roughly ten milliseconds of device work on `stream`, so that a copy queued after it
/// is certainly still pending when the host acts next.
fn delay(stream: &Stream, scratch: &mut DeviceBuffer<u8>) {
    for _ in 0..16 {
        stream.zero(scratch).unwrap();
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_pool_reuse_returns_the_same_buffer_without_pinning() {
    let _serial = serial();
    let device = device();
    let stream = device.new_stream().unwrap();
    let host = Budget::new("host", 4 * GIB);
    let pool = PinnedPool::new(&device, GIB, Some(host.clone()));
    let n = 1 << 20;
    let mut dev = stream.alloc::<u32>(n).unwrap();

    let first = pool.acquire::<u32>(n).unwrap();
    let addr = first.as_slice().unwrap().as_ptr() as usize;
    assert_eq!(first.len(), n);
    assert_eq!(first.class_bytes(), 4 * MIB);
    assert_eq!(host.used(), 4 * MIB);
    drop(first);

    // Every later proof-sized request of the class finds the same buffer: nothing is pinned
    // or freed, whatever the element type.
    for round in 0..20u32 {
        let mut buf = pool.acquire::<u32>(n - round as usize).unwrap();
        assert_eq!(buf.as_slice().unwrap().as_ptr() as usize, addr);
        let data = pattern(buf.len(), round);
        buf.as_mut_slice().unwrap().copy_from_slice(&data);
        let mut part = dev.slice_mut(..buf.len());
        stream.copy_pinned_to_device(&buf, &mut part).unwrap();
        drop(buf);
        let wide = pool.acquire::<[u64; 4]>(n / 8).unwrap();
        assert_eq!(wide.as_slice().unwrap().as_ptr() as usize, addr);
    }
    let stats = pool.stats();
    assert_eq!(stats.misses, 1, "{stats:?}");
    assert_eq!(stats.hits, 40);
    assert_eq!(stats.pinned_total, 4 * MIB);
    assert_eq!((stats.lent_buffers, stats.idle_buffers), (0, 1));
    assert_eq!(host.used(), 4 * MIB, "idle buffers stay charged");
    assert_eq!(
        stream.download(&dev.slice(..4)).unwrap(),
        pattern(n - 19, 19)[..4]
    );

    // Worker threads share the pool; the pool never pins more than its capacity.
    let threads: Vec<_> = (0..4u64)
        .map(|t| {
            let pool = pool.clone();
            std::thread::spawn(move || {
                for i in 0..50u64 {
                    let len = (((i * 7 + t * 13) % 9 + 1) * 24 * MIB / 4) as usize;
                    let mut buf = pool
                        .acquire_blocking::<u32>(len, Some(Duration::from_secs(60)))
                        .unwrap();
                    buf.as_mut_slice().unwrap()[len - 1] = i as u32;
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let stats = pool.stats();
    assert!(stats.high_water_bytes <= GIB, "{stats:?}");
    assert_eq!(stats.lent_bytes, 0);
    assert_eq!(host.used(), stats.pinned_bytes);
    assert_eq!(pool.trim(), stats.pinned_bytes);
    assert_eq!(host.used(), 0);

    // Larger than the pool: refused at once.
    let err = pool.acquire::<u8>(2 * GIB as usize).unwrap_err();
    assert!(matches!(err, MemError::ExceedsCapacity { .. }), "{err}");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_pooled_drop_after_an_async_copy_is_safe() {
    let _serial = serial();
    let device = device();
    let stream = device.new_stream().unwrap();
    let mut scratch = stream.alloc::<u8>(GIB as usize).unwrap();
    let pool = PinnedPool::new(&device, 2 * GIB, None);
    let n = 64 << 20; // 256 MiB of u32
    let (first, second) = (pattern(n, 1), pattern(n, 2));
    let mut dev = stream.alloc::<u32>(n).unwrap();

    // Host to device behind a delay, then the buffer goes back to the pool at once.
    let mut buf = pool.acquire::<u32>(n).unwrap();
    buf.as_mut_slice().unwrap().copy_from_slice(&first);
    delay(&stream, &mut scratch);
    stream.copy_pinned_to_device(&buf, &mut dev).unwrap();
    drop(buf);
    // The next user gets the same buffer; writing it waits for the copy still reading it.
    let mut again = pool.acquire::<u32>(n).unwrap();
    again.as_mut_slice().unwrap().copy_from_slice(&second);
    assert_eq!(stream.download(&dev).unwrap(), first);
    assert_eq!(pool.stats().misses, 1);

    // Device to host behind a delay, dropped before it lands; the next reader sees the data.
    let from = stream.upload(&second).unwrap();
    delay(&stream, &mut scratch);
    stream.copy_to_pinned(&from, &mut again).unwrap();
    drop(again);
    let back = pool.acquire::<u32>(n).unwrap();
    assert_eq!(back.as_slice().unwrap(), &second[..]);
    drop(back);

    // Trimming with a copy in flight frees only after the copy.
    let mut buf = pool.acquire::<u32>(n).unwrap();
    buf.as_mut_slice().unwrap().copy_from_slice(&first);
    delay(&stream, &mut scratch);
    let before_copy = device.new_event().unwrap();
    stream.record(&before_copy).unwrap();
    stream.copy_pinned_to_device(&buf, &mut dev).unwrap();
    drop(buf);
    assert_eq!(pool.trim(), 256 * MIB);
    assert!(before_copy.is_complete(), "freed before the copy ran");
    assert_eq!(stream.download(&dev).unwrap(), first);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_two_workers_never_exceed_the_vram_budget() {
    let _serial = serial();
    let device = device();
    let budget = VramBudget::fixed(&device, 2 * GIB).unwrap();
    assert_eq!(
        (budget.capacity(), budget.budget().name()),
        (2 * GIB, "vram 0")
    );
    let sampler = budget.sampler(Duration::from_millis(1)).unwrap();
    let start = Arc::new(Barrier::new(2));
    let workers: Vec<_> = (0..2u64)
        .map(|w| {
            let (budget, start) = (budget.clone(), Arc::clone(&start));
            std::thread::spawn(move || {
                let stream = budget.device().new_stream().unwrap();
                let mut peak = 0;
                start.wait();
                for i in 0..30u64 {
                    // 256 MiB to 1.5 GiB: two at once often exceed the budget, so workers wait.
                    let bytes = ((i * 5 + w * 3) % 6 + 1) * 256 * MIB;
                    let held = budget
                        .reserve_blocking(bytes, Some(Duration::from_secs(60)))
                        .unwrap();
                    let buf = stream.alloc_zeroed::<u8>(bytes as usize).unwrap();
                    stream.synchronize().unwrap();
                    peak = peak.max(budget.driver_memory().unwrap().used());
                    std::thread::sleep(Duration::from_millis(2));
                    // Device frees are stream-ordered: the bytes are free only once the stream
                    // has passed the free, so the reservation outlives the synchronisation.
                    drop(buf);
                    stream.synchronize().unwrap();
                    drop(held);
                }
                peak
            })
        })
        .collect();
    let worker_peak = workers
        .into_iter()
        .map(|w| w.join().unwrap())
        .max()
        .unwrap();
    let report = sampler.stop().unwrap();
    let capacity = budget.capacity();
    // Allocation granularity and the driver's pool bookkeeping, above the ledger's figures.
    let slack = 256 * MIB;
    println!(
        "ledger high water {} MiB; driver peak above baseline {} MiB (sampler, {} samples), {} MiB (workers)",
        budget.high_water() / MIB,
        report.peak_above_baseline() / MIB,
        report.samples,
        worker_peak.saturating_sub(report.baseline_used) / MIB
    );
    assert!(budget.high_water() <= capacity);
    assert!(
        budget.high_water() > capacity / 2,
        "reservations large enough to contend"
    );
    assert!(report.samples > 10);
    assert!(
        report.peak_above_baseline() <= capacity + slack,
        "{report:?}"
    );
    assert!(worker_peak.saturating_sub(report.baseline_used) <= capacity + slack);
    assert_eq!(budget.used(), 0);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_vram_budgets_are_sized_from_the_driver_and_fall_back_to_smaller_plans() {
    let _serial = serial();
    let device = device();
    let before = cuzk_mem::DriverMemory::read(&device).unwrap();
    let auto = VramBudget::new(&device, VramPolicy::default()).unwrap();
    assert!(auto.capacity() <= before.total - DEFAULT_VRAM_MARGIN);
    assert!(auto.capacity() > 0);
    let whole = VramBudget::new(&device, VramPolicy::Total { margin: GIB }).unwrap();
    assert_eq!(whole.capacity(), before.total - GIB);
    let err = VramBudget::fixed(&device, before.total + 1).unwrap_err();
    assert!(
        matches!(err, MemError::FixedExceedsDevice { device: 0, .. }),
        "{err}"
    );

    // A prover's layouts, most preferred first: under a 2 GiB budget the resident one never
    // fits, the chunked one does.
    let budget = VramBudget::fixed(&device, 2 * GIB).unwrap();
    let resident = Plan::new().with("bases", 2 * GIB).with("scalars", GIB);
    let chunked = Plan::new()
        .with("base chunk", 512 * MIB)
        .with("scalar chunk", 256 * MIB);
    let plans = [resident, chunked];
    assert_eq!(budget.budget().choose(&plans).unwrap(), 1);
    let (chosen, held) = budget.try_reserve_first(&plans).unwrap();
    assert_eq!((chosen, held.bytes()), (1, 768 * MIB));
    let allowance = budget.try_reserve_up_to(256 * MIB, 4 * GIB).unwrap();
    assert_eq!(allowance.bytes(), 2 * GIB - 768 * MIB);
    drop((held, allowance));
    assert!(matches!(
        budget.budget().choose(&plans[..1]),
        Err(MemError::NoPlanFits { .. })
    ));
}
