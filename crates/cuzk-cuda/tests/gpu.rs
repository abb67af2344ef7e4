//! GPU tests of the runtime and of the field kernels against blstrs. Ignored where there is no
//! GPU; run them with `cargo xtask test --gpu` (or the bundle's `run-tests`).
//!
//! Inputs are fresh random each run, after the edge values; the seed is printed, and
//! `CUZK_TEST_SEED=<seed>` replays a run.

use cuzk_cuda::field::{self, BinaryOp, GpuField, UnaryOp};
use cuzk_cuda::{CudaError, Device, DeviceBuffer, Stream, Timeline};
use cuzk_field::{Field, Fp, Fp2, Fp2Repr, FpRepr, FrRepr, Scalar};
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use std::fmt::Debug;

/// Elements per case: enough to cover every lane pattern of the kernels many times over.
const N: usize = 1 << 16;

fn device() -> Device {
    Device::open(0).expect("GPU tests need a CUDA device")
}

fn rng(test: &str) -> ChaCha20Rng {
    let seed = std::env::var("CUZK_TEST_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(rand::random::<u64>);
    println!("{test}: seed {seed} (replay with CUZK_TEST_SEED={seed})");
    ChaCha20Rng::seed_from_u64(seed)
}

/// Operand vectors: every ordered pair of edge values first, then random elements.
fn operands<F: Field>(edges: &[F], rng: &mut ChaCha20Rng) -> (Vec<F>, Vec<F>) {
    let (mut a, mut b) = (Vec::with_capacity(N), Vec::with_capacity(N));
    for x in edges {
        for y in edges {
            a.push(*x);
            b.push(*y);
        }
    }
    while a.len() < N {
        a.push(F::random(&mut *rng));
        b.push(F::random(&mut *rng));
    }
    (a, b)
}

fn upload<F, R>(stream: &Stream, xs: &[F]) -> DeviceBuffer<R>
where
    F: Copy + Into<R>,
    R: GpuField,
{
    let reprs: Vec<R> = xs.iter().map(|x| (*x).into()).collect();
    stream.upload(&reprs).expect("upload")
}

fn compare<F, R>(what: &str, got: &[R], want: &[F], a: &[F], b: Option<&[F]>)
where
    F: Field + Debug,
    R: GpuField + TryInto<F>,
    R::Error: Debug,
{
    assert_eq!(got.len(), want.len(), "{what}: length");
    let wrong: Vec<usize> = (0..want.len())
        .filter(|&i| got[i].try_into().ok().as_ref() != Some(&want[i]))
        .collect();
    if let Some(&i) = wrong.first() {
        panic!(
            "{what}: {} of {} elements wrong; first at {i}: a = {:?}, b = {:?}, gpu = {:?}, blstrs = {:?}",
            wrong.len(),
            want.len(),
            a[i],
            b.map(|b| b[i]),
            got[i].try_into(),
            want[i]
        );
    }
}

/// A CPU reference of a two-operand operation, and of a one-operand one.
type Binary<F> = (BinaryOp, fn(&F, &F) -> F);
type Unary<F> = (UnaryOp, fn(&F) -> F);

/// Runs all five kernels of one field on the same operands and compares with blstrs.
fn check_field<F, R>(test: &str, edges: &[F])
where
    F: Field + Debug + Into<R>,
    R: GpuField + TryInto<F> + Debug,
    R::Error: Debug,
{
    let mut rng = rng(test);
    let (a, b) = operands(edges, &mut rng);
    let device = device();
    let stream = device.new_stream().unwrap();
    let (da, db) = (upload::<F, R>(&stream, &a), upload::<F, R>(&stream, &b));
    let mut out = stream.alloc::<R>(N).unwrap();

    let binary: [Binary<F>; 3] = [
        (BinaryOp::Add, |x, y| *x + y),
        (BinaryOp::Sub, |x, y| *x - y),
        (BinaryOp::Mul, |x, y| *x * y),
    ];
    for (op, cpu) in binary {
        field::binary(&stream, op, &da, &db, &mut out).unwrap();
        let want: Vec<F> = a.iter().zip(&b).map(|(x, y)| cpu(x, y)).collect();
        compare(
            &format!("{test} {op:?}"),
            &stream.download(&out).unwrap(),
            &want,
            &a,
            Some(&b),
        );
    }
    let unary: [Unary<F>; 2] = [
        (UnaryOp::Square, |x| x.square()),
        // blstrs has no inverse of zero; the kernels define it as zero.
        (UnaryOp::Inverse, |x| x.invert().unwrap_or(F::ZERO)),
    ];
    for (op, cpu) in unary {
        field::unary(&stream, op, &da, &mut out).unwrap();
        let want: Vec<F> = a.iter().map(cpu).collect();
        compare(
            &format!("{test} {op:?}"),
            &stream.download(&out).unwrap(),
            &want,
            &a,
            None,
        );
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_fr_ops_match_blstrs() {
    check_field::<Scalar, FrRepr>("gpu_fr", &[Scalar::ZERO, Scalar::ONE, -Scalar::ONE]);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_fp_ops_match_blstrs() {
    check_field::<Fp, FpRepr>("gpu_fp", &[Fp::ZERO, Fp::ONE, -Fp::ONE]);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_fp2_ops_match_blstrs() {
    let parts = [Fp::ZERO, Fp::ONE, -Fp::ONE];
    let edges: Vec<Fp2> = parts
        .iter()
        .flat_map(|c0| parts.iter().map(|c1| Fp2::new(*c0, *c1)))
        .collect();
    check_field::<Fp2, Fp2Repr>("gpu_fp2", &edges);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_devices_are_discovered() {
    assert!(cuzk_cuda::cuda_available());
    let devices = Device::all().unwrap();
    assert!(!devices.is_empty());
    for d in &devices {
        let info = d.info();
        println!("{info}");
        assert!(!info.name.is_empty());
        assert!(info.sm_count > 0 && info.total_memory > 0 && info.max_threads_per_block >= 256);
        assert!(info.compute_capability.0 >= 7);
        let (free, total) = d.memory_info().unwrap();
        assert!(free <= total && total > 0);
    }
    // One context per device: opening again shares it, and its loaded image.
    let path = Device::open(0).unwrap().load_kernels().unwrap();
    assert_eq!(devices[0].load_kernels().unwrap(), path);
    println!("kernel image: {}", path.display());
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_copies_views_and_pinned_memory_round_trip() {
    let device = device();
    let stream = device.new_stream().unwrap();
    let host: Vec<u32> = (0..10_000u32)
        .map(|i| i.wrapping_mul(2_654_435_761))
        .collect();
    let mut buf = stream.upload(&host).unwrap();
    assert_eq!(stream.download(&buf).unwrap(), host);
    assert_eq!(
        stream.download(&buf.slice(100..200)).unwrap(),
        &host[100..200]
    );

    // Device-to-device into a view, then zeroing part of it.
    let mut other = stream.alloc_zeroed::<u32>(host.len()).unwrap();
    stream
        .copy_on_device(&buf.slice(..5000), &mut other.slice_mut(5000..))
        .unwrap();
    stream.zero(&mut buf.slice_mut(..10)).unwrap();
    let back = stream.download(&other).unwrap();
    assert!(back[..5000].iter().all(|&x| x == 0));
    assert_eq!(&back[5000..], &host[..5000]);
    assert!(stream
        .download(&buf.slice(..10))
        .unwrap()
        .iter()
        .all(|&x| x == 0));

    // Pinned host memory both ways, asynchronously.
    let mut pinned = device.alloc_pinned::<u32>(host.len()).unwrap();
    assert!(pinned.as_slice().unwrap().iter().all(|&x| x == 0));
    pinned.as_mut_slice().unwrap().copy_from_slice(&host);
    let mut dev = stream.alloc::<u32>(host.len()).unwrap();
    stream.copy_pinned_to_device(&pinned, &mut dev).unwrap();
    let mut back = device.alloc_pinned::<u32>(host.len()).unwrap();
    stream.copy_to_pinned(&dev, &mut back).unwrap();
    assert_eq!(back.as_slice().unwrap(), &host[..]);

    // Lengths are checked, not trusted.
    let err = stream.copy_to_device(&host[..3], &mut dev).unwrap_err();
    assert!(
        matches!(
            err,
            CudaError::LengthMismatch {
                expected: 10_000,
                got: 3,
                ..
            }
        ),
        "{err}"
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_events_time_device_work() {
    let device = device();
    let stream = device.new_stream().unwrap();
    let n = 1 << 20;
    let xs: Vec<FrRepr> = (0..n as u64).map(|i| Scalar::from(i + 2).into()).collect();
    let a = stream.upload(&xs).unwrap();
    let mut out = stream.alloc::<FrRepr>(n).unwrap();
    let (start, end) = (device.new_event().unwrap(), device.new_event().unwrap());
    stream.record(&start).unwrap();
    field::binary(&stream, BinaryOp::Mul, &a, &a, &mut out).unwrap();
    stream.record(&end).unwrap();
    let ms = start.elapsed_ms(&end).unwrap();
    assert!(end.is_complete());
    println!("Fr mul of 2^20 elements: {ms:.3} ms");
    assert!(ms > 0.0 && ms < 10_000.0);

    // A second stream orders itself after the first through an event.
    let other = device.new_stream().unwrap();
    other.wait(&end).unwrap();
    let back: Vec<FrRepr> = other.download(&out.slice(..4)).unwrap();
    assert_eq!(
        Scalar::try_from(back[3]).unwrap(),
        Scalar::from(5u64).square()
    );
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_timeline_names_phases_in_order_and_sums_them() {
    let device = device();
    let stream = device.new_stream().unwrap();
    let n = 1 << 20;
    let xs: Vec<FrRepr> = (0..n as u64).map(|i| Scalar::from(i + 3).into()).collect();
    let a = stream.upload(&xs).unwrap();
    let mut out = stream.alloc::<FrRepr>(n).unwrap();
    let mut t = Timeline::new(&device);
    // begin/end, span, and after (first call marks only).
    t.begin(&stream, "mul").unwrap();
    field::binary(&stream, BinaryOp::Mul, &a, &a, &mut out).unwrap();
    t.end(&stream).unwrap();
    t.span(&stream, "mul", || {
        field::binary(&stream, BinaryOp::Mul, &a, &a, &mut out)
    })
    .unwrap();
    t.after(&stream, "between").unwrap();
    field::binary(&stream, BinaryOp::Add, &a, &a, &mut out).unwrap();
    t.after(&stream, "add").unwrap();
    stream.synchronize().unwrap();
    let phases = t.phases().unwrap();
    let names: Vec<&str> = phases.iter().map(|(n, _)| *n).collect();
    // "between" is the interval from the span's end mark to its own mark (no work).
    assert_eq!(names, ["mul", "mul", "between", "add"]);
    assert!(phases.iter().all(|(_, ms)| *ms >= 0.0 && *ms < 10_000.0));
    let mul = t.total("mul").unwrap();
    assert!((mul - f64::from(phases[0].1 + phases[1].1)).abs() < 1e-6);
    assert!(mul > 0.0);
    assert_eq!(t.total("none").unwrap(), 0.0);
    assert!(t.last().unwrap().is_complete());
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_unknown_kernels_and_bad_lengths_are_typed_errors() {
    let device = device();
    let err = device.kernel("cuzk_no_such_kernel").unwrap_err();
    assert!(
        matches!(&err, CudaError::KernelNotFound { kernel, .. } if kernel == "cuzk_no_such_kernel")
    );
    assert!(err.to_string().contains("cuzk_no_such_kernel"));

    let stream = device.new_stream().unwrap();
    let a = stream.alloc_zeroed::<FpRepr>(8).unwrap();
    let mut out = stream.alloc::<FpRepr>(7).unwrap();
    let err = field::unary(&stream, UnaryOp::Square, &a, &mut out).unwrap_err();
    assert!(matches!(
        err,
        CudaError::LengthMismatch {
            expected: 8,
            got: 7,
            ..
        }
    ));
}

/// A kernel looked up on one thread answers its attribute calls on another, where no context
/// is current yet (the test harness runs each test on a fresh thread, and engines built there
/// query and set their kernels' attributes before they make a stream).
#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_kernel_attributes_answer_on_a_thread_without_a_current_context() {
    let device = device();
    let kernel = device.kernel("cuzk_fr_mul").unwrap();
    let elsewhere = std::thread::spawn(move || {
        let regs = kernel.num_registers().unwrap();
        let most = kernel.max_threads_per_block().unwrap();
        kernel.set_max_dynamic_shared_mem(64 << 10).unwrap();
        let blocks = kernel.max_active_blocks_per_sm(128, 64 << 10).unwrap();
        (regs, most, blocks)
    });
    let (regs, most, blocks) = elsewhere.join().unwrap();
    assert!(regs > 0 && regs <= 255, "{regs} registers");
    assert!(most >= 128, "{most} threads a block at most");
    assert!(
        blocks >= 1,
        "{blocks} blocks of 128 threads with 64 KiB each an SM"
    );
}

/// Queues roughly ten milliseconds of device work on `stream` (zeroing 16 × 1 GiB), so that a
/// copy queued after it is certainly still pending when the host acts next.
fn delay(stream: &Stream, scratch: &mut DeviceBuffer<u8>) {
    for _ in 0..16 {
        stream.zero(scratch).unwrap();
    }
}

fn pattern(n: usize, salt: u32) -> Vec<u32> {
    (0..n as u32)
        .map(|i| (i ^ salt).wrapping_mul(2_654_435_761))
        .collect()
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_pinned_drop_waits_for_in_flight_copies() {
    let device = device();
    let stream = device.new_stream().unwrap();
    let mut scratch = stream.alloc::<u8>(1 << 30).unwrap();
    let n = 32 << 20; // 128 MiB of u32
    let host = pattern(n, 7);

    // Host to device: the copy waits behind the delay; dropping the buffer must wait for it.
    let mut pinned = device.alloc_pinned::<u32>(n).unwrap();
    pinned.as_mut_slice().unwrap().copy_from_slice(&host);
    let mut dev = stream.alloc::<u32>(n).unwrap();
    delay(&stream, &mut scratch);
    let before_copy = device.new_event().unwrap();
    stream.record(&before_copy).unwrap();
    stream.copy_pinned_to_device(&pinned, &mut dev).unwrap();
    drop(pinned);
    // The copy started after `before_copy`; a drop that waited for the copy saw it complete.
    assert!(
        before_copy.is_complete(),
        "drop returned before the copy ran"
    );
    assert_eq!(stream.download(&dev).unwrap(), host);

    // Device to host, the same way.
    let mut back = device.alloc_pinned::<u32>(n).unwrap();
    delay(&stream, &mut scratch);
    stream.record(&before_copy).unwrap();
    stream.copy_to_pinned(&dev, &mut back).unwrap();
    assert_eq!(back.as_slice().unwrap(), &host[..]);
    assert!(before_copy.is_complete());
    stream.copy_to_pinned(&dev, &mut back).unwrap();
    drop(back);
    stream.synchronize().unwrap();

    // A recast buffer is the same allocation: it keeps the data and the capacity.
    let mut bytes = device.alloc_pinned::<u8>(4096).unwrap();
    bytes.as_mut_slice().unwrap()[..8].copy_from_slice(&[1, 0, 0, 0, 2, 0, 0, 0]);
    let words = bytes.recast::<u32>(2).unwrap();
    assert_eq!(words.as_slice().unwrap(), &[1, 2]);
    assert_eq!(words.capacity_bytes(), 4096);
    let err = words.recast::<u64>(513).unwrap_err();
    assert!(matches!(
        err,
        CudaError::PinnedTooSmall {
            requested: 4104,
            capacity: 4096
        }
    ));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_copies_on_one_pinned_buffer_are_ordered_across_streams() {
    let device = device();
    let (a, b) = (device.new_stream().unwrap(), device.new_stream().unwrap());
    let mut scratch = a.alloc::<u8>(1 << 30).unwrap();
    let n = 8 << 20;
    let (first, second) = (pattern(n, 1), pattern(n, 2));
    let mut pinned = device.alloc_pinned::<u32>(n).unwrap();
    pinned.as_mut_slice().unwrap().copy_from_slice(&first);
    let mut read_on_a = a.alloc::<u32>(n).unwrap();
    let from_b = b.upload(&second).unwrap();
    b.synchronize().unwrap();

    // Stream a reads the buffer late (behind the delay); stream b then writes it. Without the
    // buffer's event b's write would land first and a would read `second`.
    delay(&a, &mut scratch);
    a.copy_pinned_to_device(&pinned, &mut read_on_a).unwrap();
    b.copy_to_pinned(&from_b, &mut pinned).unwrap();
    assert_eq!(pinned.as_slice().unwrap(), &second[..]);
    assert_eq!(a.download(&read_on_a).unwrap(), first);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gpu_registered_memory_copies_round_trip() {
    let device = device();
    let stream = device.new_stream().unwrap();
    let mut scratch = stream.alloc::<u8>(1 << 30).unwrap();
    let n = 16 << 20;
    let original = pattern(n, 3);

    // Host to device from the caller's own Vec, registered in place.
    let mut data = original.clone();
    let mut dev = stream.alloc::<u32>(n).unwrap();
    let reg = device.register_host(&mut data).unwrap();
    assert_eq!((reg.len(), reg.device_ordinal()), (n, 0));
    delay(&stream, &mut scratch);
    let before_copy = device.new_event().unwrap();
    stream.record(&before_copy).unwrap();
    stream.copy_registered_to_device(&reg, &mut dev).unwrap();
    drop(reg); // waits for the copy, then unregisters
    assert!(
        before_copy.is_complete(),
        "unregistered before the copy ran"
    );
    data.iter_mut().for_each(|x| *x = 0); // the memory is ours again
    assert_eq!(stream.download(&dev).unwrap(), original);

    // Device to host into registered memory; host access waits for the copy.
    let mut out = vec![0u32; n];
    {
        let mut reg = device.register_host(&mut out).unwrap();
        delay(&stream, &mut scratch);
        stream.copy_to_registered(&dev, &mut reg).unwrap();
        assert_eq!(reg.as_slice().unwrap(), &original[..]);
        reg.as_mut_slice().unwrap()[0] = 42;
        stream.copy_registered_to_device(&reg, &mut dev).unwrap();
        reg.unregister().unwrap();
    }
    assert_eq!(out[0], 42);
    assert_eq!(stream.download(&dev.slice(..2)).unwrap(), [42, original[1]]);

    // Lengths are checked; empty registrations ask nothing of the driver.
    let mut short = vec![0u32; 3];
    let reg = device.register_host(&mut short).unwrap();
    let err = stream
        .copy_registered_to_device(&reg, &mut dev)
        .unwrap_err();
    assert!(matches!(err, CudaError::LengthMismatch { expected, got: 3, .. } if expected == n));
    drop(reg);
    let mut none: Vec<u32> = Vec::new();
    let mut empty = device.register_host(&mut none).unwrap();
    assert!(empty.as_slice().unwrap().is_empty());
    assert!(empty.as_mut_slice().unwrap().is_empty());
    empty.unregister().unwrap();
}
