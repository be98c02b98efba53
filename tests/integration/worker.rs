//! The GPU worker's lifecycle without a GPU: the client and the backend's restarts, driven by the
//! fake worker (`gridlab worker --fake`, `src/backend/gpu/fake.rs`), which crashes, hangs or
//! writes garbage when asked to launch a kernel named for it, and the data path for large
//! buffers (shared regions, device copies kept under stamps), which the fake takes as the real
//! worker does.

use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use gridlab::backend::gpu::GpuBackend;
use gridlab::backend::gpu::client::{CLOSE_GRACE, Worker, WorkerCommand, WorkerError};
use gridlab::backend::gpu::fake::CRASH_STATUS;
use gridlab::backend::gpu::libs::Libraries;
use gridlab::backend::gpu::protocol::{
    LaunchRequest, ReadItem, Request, Response, SharedBuffer, WireArg, WireBuffer, WireData,
};
use gridlab::backend::{Arg, Backend, BackendError, Dim3, LaunchBuffers, LaunchSpec};
use gridlab::buffer::shared::{SHARED_MIN_BYTES, SharedBytes};
use gridlab::buffer::{Buffer, Num, Shape};
use gridlab::cuda::Module;
use gridlab::diag::SourceMap;
use gridlab::dtype::DType;

use super::harness::binary;

/// Long enough for a loaded CI machine to answer, short enough that a hang fails fast.
const ANSWER: Duration = Duration::from_secs(20);

fn fake() -> Worker {
    Worker::spawn(&WorkerCommand::fake(binary())).expect("the fake worker starts")
}

fn launch(kernel: &str) -> Request {
    Request::Launch(LaunchRequest {
        kernel: kernel.into(),
        grid: [1, 1, 1],
        block: [1, 1, 1],
        shared_bytes: 0,
        args: vec![WireArg::Buffer(0)],
        buffers: vec![WireBuffer { data: WireData::Inline(vec![1, 2, 3, 4]), elem_size: 4, keep: None }],
        repeat: 1,
        symbols: Vec::new(),
        released: Vec::new(),
        drop_after: Vec::new(),
    })
}

fn compile() -> Request {
    Request::Compile { source: "__global__ void add(int *a) {}".into(), options: Vec::new(), names: Vec::new() }
}

/// A process that was reaped is gone from the process table: not running, not a zombie.
fn gone(pid: u32) -> bool {
    !Path::new(&format!("/proc/{pid}")).exists()
}

#[test]
fn the_fake_worker_answers_like_a_worker() {
    let mut w = fake();
    let hello = w.request(&Request::Hello, ANSWER, None).unwrap();
    assert!(matches!(&hello, Response::Hello(info) if info.name.contains("fake")), "{hello:?}");
    let early = w.request(&launch("add"), ANSWER, None).unwrap();
    assert!(matches!(early, Response::Failed { sticky: false, .. }), "{early:?}");
    assert!(matches!(w.request(&compile(), ANSWER, None).unwrap(), Response::Compiled { .. }));
    match w.request(&launch("add"), ANSWER, None).unwrap() {
        Response::Launched(r) => {
            assert_eq!(r.buffers.len(), 1);
            assert_eq!(r.buffers[0].as_ref(), [1, 2, 3, 4]);
            assert_eq!(r.printf, "fake worker ran add\n");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_worker_that_crashes_mid_request_is_died_with_its_last_words() {
    let mut w = fake();
    let pid = w.id();
    let err = w.request(&launch("fake_crash"), ANSWER, None).unwrap_err();
    assert!(matches!(&err, WorkerError::Died { .. }), "{err:?}");
    let message = err.to_string();
    assert!(message.starts_with("the GPU worker stopped: "), "{message}");
    assert!(message.contains("crashed on purpose, launching `fake_crash`"), "{message}");
    assert_eq!(w.exit_status().and_then(|s| s.code()), Some(i32::from(CRASH_STATUS)));
    assert!(gone(pid));
    // The next request finds the pipe closed: the same error, at once, not a hang.
    let again = w.request(&Request::Hello, ANSWER, None).unwrap_err();
    assert!(again.to_string().contains("crashed on purpose"), "{again}");
}

#[test]
fn a_hanging_worker_times_out_and_is_gone() {
    let mut w = fake();
    let pid = w.id();
    let start = Instant::now();
    let err = w.request(&launch("fake_hang"), Duration::from_millis(300), None).unwrap_err();
    assert!(matches!(err, WorkerError::TimedOut(t) if t == Duration::from_millis(300)), "{err:?}");
    assert!(start.elapsed() < Duration::from_secs(5), "{:?}", start.elapsed());
    assert_eq!(w.exit_status().and_then(|s| s.signal()), Some(libc::SIGKILL));
    assert!(gone(pid), "the killed worker was not reaped");
}

#[test]
fn ctrl_c_stops_a_hanging_worker() {
    let mut w = fake();
    let pid = w.id();
    let cancel = std::sync::atomic::AtomicBool::new(true);
    let err = w.request(&launch("fake_hang"), ANSWER, Some(&cancel)).unwrap_err();
    assert!(matches!(err, WorkerError::Interrupted), "{err:?}");
    assert!(gone(pid));
}

#[test]
fn garbage_from_the_worker_is_died_not_a_panic_or_a_hang() {
    let mut w = fake();
    let pid = w.id();
    // On another thread, so that a client that hangs fails the test instead of hanging it.
    let (tx, rx) = mpsc::channel();
    thread::Builder::new()
        .name("garbage-request".into())
        .spawn(move || {
            let _ = tx.send(w.request(&launch("fake_garbage"), ANSWER, None).map_err(|e| e.to_string()));
        })
        .unwrap();
    let answer = rx.recv_timeout(Duration::from_secs(5)).expect("an answer, not a hang");
    let err = answer.unwrap_err();
    assert_eq!(err, "the GPU worker stopped");
    // The fake was still running after its garbage: the client killed and reaped it.
    assert!(gone(pid));
}

#[test]
fn a_closed_worker_leaves_on_its_own_without_being_killed() {
    let mut w = fake();
    w.request(&Request::Hello, ANSWER, None).unwrap();
    let start = Instant::now();
    let status = w.close().expect("the worker was reaped");
    assert!(status.success(), "{status:?}");
    assert!(start.elapsed() < CLOSE_GRACE, "{:?}", start.elapsed());

    // Dropping does the same; the worker has answered once, so it is past its start-up.
    let mut w = fake();
    w.request(&Request::Hello, ANSWER, None).unwrap();
    let pid = w.id();
    let start = Instant::now();
    drop(w);
    assert!(start.elapsed() < CLOSE_GRACE, "{:?}", start.elapsed());
    assert!(gone(pid));
}

#[test]
fn a_worker_that_stays_after_close_is_killed_after_the_grace_period() {
    let mut w = fake();
    w.request(&compile(), ANSWER, None).unwrap();
    w.request(&launch("fake_linger"), ANSWER, None).unwrap();
    let start = Instant::now();
    let status = w.close().expect("the worker was reaped");
    assert_eq!(status.signal(), Some(libc::SIGKILL), "{status:?}");
    assert!(start.elapsed() >= CLOSE_GRACE && start.elapsed() < CLOSE_GRACE * 4, "{:?}", start.elapsed());

    let mut w = fake();
    w.request(&compile(), ANSWER, None).unwrap();
    w.request(&launch("fake_linger"), ANSWER, None).unwrap();
    let pid = w.id();
    let start = Instant::now();
    drop(w);
    assert!(start.elapsed() < CLOSE_GRACE * 4, "{:?}", start.elapsed());
    assert!(gone(pid));
}

#[test]
fn a_worker_that_cannot_start_is_a_spawn_error() {
    let missing = WorkerCommand::Program { program: "/nonexistent/gridlab".into(), args: Vec::new() };
    let err = Worker::spawn(&missing).err().expect("no such program");
    assert!(matches!(err, WorkerError::Spawn(_)), "{err:?}");
}

/// A backend on the fake worker, with one kernel loaded.
fn backend(timeout: Duration) -> (GpuBackend, Module) {
    let mut gpu = GpuBackend::with_worker(Libraries::default(), WorkerCommand::fake(binary()), timeout)
        .expect("the backend starts on the fake worker");
    assert_eq!(gpu.info().name, "gridlab fake worker");
    let mut sources = SourceMap::new();
    let text = "__global__ void add(int *a) { a[threadIdx.x] += 1; }";
    let id = sources.add("add", text, 1);
    let mut module = Module::new();
    module.add(id, text).expect("the kernel checks");
    gpu.load(&module, &sources).expect("the fake compiles anything");
    (gpu, module)
}

/// `kernel<<<1, 4>>>` over one buffer.
fn one_block(kernel: &str) -> LaunchSpec {
    LaunchSpec {
        kernel: kernel.into(),
        grid: Dim3::linear(1),
        block: Dim3::linear(4),
        shared_bytes: 0,
        args: vec![Arg::Buffer(0)],
        symbols: Vec::new(),
    }
}

fn run(gpu: &mut GpuBackend, module: &Module, kernel: &str, buffer: &mut Buffer) -> Result<String, BackendError> {
    let spec = one_block(kernel);
    let mut buffers = LaunchBuffers { names: vec!["a".into()], buffers: vec![buffer] };
    let report = gpu.launch(module, &spec, &mut buffers)?;
    Ok(report.output.iter().map(|l| l.text.clone()).collect::<Vec<_>>().join("\n"))
}

#[test]
fn the_backend_restarts_a_crashed_worker_and_gives_it_the_module_again() {
    let (mut gpu, module) = backend(ANSWER);
    let mut a = Buffer::zeros(DType::I32, Shape::D1(4));
    assert_eq!(run(&mut gpu, &module, "add", &mut a).unwrap(), "fake worker ran add");
    let err = run(&mut gpu, &module, "fake_crash", &mut a).unwrap_err();
    let BackendError::Aborted(message) = err else { panic!("{err:?}") };
    assert!(message.contains("`fake_crash` took the GPU worker down"), "{message}");
    assert!(message.contains("crashed on purpose"), "{message}");
    assert!(message.contains("gridlab restarted the GPU worker and gave it your kernels again"), "{message}");
    // The new worker answers, and has the module: the fake refuses launches before a compile.
    assert_eq!(run(&mut gpu, &module, "add", &mut a).unwrap(), "fake worker ran add");
}

#[test]
fn the_backend_stops_a_hanging_kernel_at_its_timeout_and_goes_on() {
    let (mut gpu, module) = backend(Duration::from_millis(300));
    let mut a = Buffer::zeros(DType::I32, Shape::D1(4));
    let err = run(&mut gpu, &module, "fake_hang", &mut a).unwrap_err();
    let BackendError::Aborted(message) = err else { panic!("{err:?}") };
    assert!(message.contains("`fake_hang` ran longer than 0.3 s (the --timeout)"), "{message}");
    assert!(message.contains("gridlab restarted the GPU worker"), "{message}");
    assert_eq!(run(&mut gpu, &module, "add", &mut a).unwrap(), "fake worker ran add");
}

/// A failing device-side `assert` is the kernel's trap, as on the simulator: a finding (so
/// `expect finding trap` holds on both backends), the buffers as they were, and a new worker
/// for the next launch without a word.
#[test]
fn a_failing_device_assert_is_a_trap_finding_and_the_worker_restarts_silently() {
    let mut w = fake();
    assert!(matches!(w.request(&compile(), ANSWER, None).unwrap(), Response::Compiled { .. }));
    let answer = w.request(&launch("fake_assert"), ANSWER, None).unwrap();
    assert!(matches!(&answer, Response::Trapped { printed } if printed.contains("Assertion `a[i] >= 0` failed")));
    // It leaves on its own, as after any sticky error (closing finds it gone already).
    assert_eq!(w.close().and_then(|s| s.code()), Some(i32::from(gridlab::backend::gpu::fake::STICKY_STATUS)));

    let (mut gpu, module) = backend(ANSWER);
    let mut a = Buffer::from_nums(DType::I32, Shape::D1(4), (1..=4).map(Num::Int));
    let spec = LaunchSpec {
        kernel: "fake_assert".into(),
        grid: Dim3::linear(2),
        block: Dim3::linear(8),
        shared_bytes: 0,
        args: vec![Arg::Buffer(0)],
        symbols: Vec::new(),
    };
    let mut buffers = LaunchBuffers { names: vec!["a".into()], buffers: vec![&mut a] };
    let report = gpu.launch(&module, &spec, &mut buffers).expect("a trap is a finding, not an error");
    assert!(report.aborted);
    match &report.findings[..] {
        [f @ gridlab::finding::Finding::Trap { site, message }] => {
            assert_eq!(f.kind(), gridlab::finding::FindingKind::Trap);
            assert_eq!(message, "assertion failed: `a[i] >= 0`");
            assert_eq!((site.thread.block, site.thread.thread), ([1, 0, 0], [5, 0, 0]));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(a.to_f64_vec(), [1.0, 2.0, 3.0, 4.0]);
    // The next launch finds a new worker with the module, as if nothing had happened.
    assert_eq!(run(&mut gpu, &module, "add", &mut a).unwrap(), "fake worker ran add");
}

#[test]
fn the_backend_survives_garbage_from_its_worker() {
    let (mut gpu, module) = backend(ANSWER);
    let mut a = Buffer::zeros(DType::I32, Shape::D1(4));
    let err = run(&mut gpu, &module, "fake_garbage", &mut a).unwrap_err();
    assert!(matches!(&err, BackendError::Aborted(m) if m.contains("gridlab restarted the GPU worker")), "{err:?}");
    assert_eq!(run(&mut gpu, &module, "add", &mut a).unwrap(), "fake worker ran add");
}

/// A launch of `kernel` over one shared buffer in `region` (or, `device_only`, the device copy
/// stamped `stamp`), its results kept on the device under `result`.
fn shared_launch(
    kernel: &str,
    region: &SharedBytes,
    (stamp, fresh, device_only): (u64, bool, bool),
    result: Option<u64>,
) -> Request {
    Request::Launch(LaunchRequest {
        kernel: kernel.into(),
        grid: [1, 1, 1],
        block: [1, 1, 1],
        shared_bytes: 0,
        args: vec![WireArg::Buffer(0)],
        buffers: vec![WireBuffer {
            data: WireData::Shared(SharedBuffer {
                region: region.id(),
                len: region.len() as u64,
                stamp,
                fresh,
                device_only,
                // Contents only the device has are their own "before"; no other is kept here.
                snapshot: device_only.then_some(stamp),
                result,
            }),
            elem_size: 1,
            keep: None,
        }],
        repeat: 1,
        symbols: Vec::new(),
        released: Vec::new(),
        drop_after: Vec::new(),
    })
}

fn launched(answer: Response) -> gridlab::backend::gpu::protocol::LaunchResult {
    match answer {
        Response::Launched(r) => *r,
        other => panic!("{other:?}"),
    }
}

/// Read the device copies `(stamp, keep)` into `regions`; the stamps the worker lacked.
fn read(w: &mut Worker, items: &[(u64, bool)], regions: &[&SharedBytes]) -> Vec<u64> {
    let items = items
        .iter()
        .zip(regions)
        .map(|((stamp, keep), r)| ReadItem { stamp: *stamp, len: r.len() as u64, region: r.id(), keep: *keep })
        .collect();
    match w.request(&Request::Read { items }, ANSWER, None).unwrap() {
        Response::Read { missing } => missing,
        other => panic!("{other:?}"),
    }
}

#[test]
fn results_stay_on_the_device_until_read_and_unchanged_bytes_are_not_uploaded_again() {
    let mut w = fake();
    w.request(&compile(), ANSWER, None).unwrap();
    let mut a = SharedBytes::zeroed(SHARED_MIN_BYTES).unwrap();
    a[7] = 40;
    let (b, c) = (SharedBytes::zeroed(a.len()).unwrap(), SharedBytes::zeroed(a.len()).unwrap());
    for r in [&a, &b, &c] {
        w.send_region(r.id(), r.fd()).unwrap();
    }
    // First launch: the device has nothing, so the whole buffer goes up; the results stay there.
    let r = launched(w.request(&shared_launch("fake_bump", &a, (0, false, false), Some(11)), ANSWER, None).unwrap());
    assert_eq!(r.uploaded_bytes, a.len() as u64);
    assert!(r.buffers[0].is_empty(), "a shared buffer's bytes do not come back in the message");
    assert_eq!((a[7], b[7]), (40, 0), "nothing is written to the host until it is read");
    assert!(read(&mut w, &[(11, true)], &[&b]).is_empty());
    assert_eq!((b[7], b[0]), (41, 1));
    // The same bytes (stamp 11, unchanged): the device copy is used, nothing goes up.
    let r = launched(w.request(&shared_launch("fake_bump", &b, (11, true, false), Some(12)), ANSWER, None).unwrap());
    assert_eq!(r.uploaded_bytes, 0);
    // Launched again before being read: the device's contents are used, and kept as the
    // launch's "before", which a read brings back once.
    let r = launched(w.request(&shared_launch("fake_bump", &c, (12, true, true), Some(13)), ANSWER, None).unwrap());
    assert_eq!(r.uploaded_bytes, 0);
    assert_eq!(c[7], 0, "the region of contents only the device has is never read");
    assert!(read(&mut w, &[(13, true), (12, false)], &[&c, &b]).is_empty());
    assert_eq!((c[7], b[7]), (43, 42));
    assert_eq!(read(&mut w, &[(12, false)], &[&b]), [12], "a \"before\" is read once");
    // Changed on the host since stamp 13: uploaded again, and computed from the new bytes.
    let mut c = c;
    c[7] = 0;
    let r = launched(w.request(&shared_launch("fake_bump", &c, (13, false, false), Some(14)), ANSWER, None).unwrap());
    assert_eq!(r.uploaded_bytes, c.len() as u64);
    assert!(read(&mut w, &[(14, true)], &[&b]).is_empty());
    assert_eq!(b[7], 1);
    // Contents the device no longer holds cannot be launched.
    let answer = w.request(&shared_launch("fake_bump", &b, (99, true, true), Some(15)), ANSWER, None).unwrap();
    assert!(
        matches!(&answer, Response::Failed { message, sticky: false } if message.contains("no longer holds")),
        "{answer:?}"
    );
    // A region that was never sent is a failure, not a wait.
    let unsent = SharedBytes::zeroed(a.len()).unwrap();
    let answer = w.request(&shared_launch("fake_bump", &unsent, (0, false, false), Some(16)), ANSWER, None).unwrap();
    assert!(
        matches!(&answer, Response::Failed { message, sticky: false } if message.contains("never reached")),
        "{answer:?}"
    );
}

/// `kernel` over one large `u8` buffer on `gpu`, its results left on the device; returns the
/// buffer as it was before (deferred too, until [`settle`]).
fn launch_large(
    gpu: &mut GpuBackend,
    module: &Module,
    kernel: &str,
    buffer: &mut Buffer,
) -> Result<Buffer, BackendError> {
    let spec = one_block(kernel);
    let mut buffers = LaunchBuffers { names: vec!["a".into()], buffers: vec![buffer] };
    let report = gpu.launch(module, &spec, &mut buffers)?;
    Ok(report.before.expect("the GPU keeps the buffers as they were").remove(0))
}

/// Read `buffer`'s results and its "before" back, as the session does.
fn settle(gpu: &mut GpuBackend, buffer: &mut Buffer, before: &mut Buffer) -> Result<(), BackendError> {
    gpu.settle(&mut [("a", buffer)])?;
    gpu.settle_befores(&mut [("a", before)])
}

/// A launch read back at once, returning the "before".
fn run_large(gpu: &mut GpuBackend, module: &Module, kernel: &str, buffer: &mut Buffer) -> Result<Buffer, BackendError> {
    let mut before = launch_large(gpu, module, kernel, buffer)?;
    settle(gpu, buffer, &mut before)?;
    assert_eq!((buffer.on_device(), before.on_device()), (None, None));
    Ok(before)
}

#[test]
fn a_large_buffer_stays_on_the_device_until_the_host_changes_it() {
    let (mut gpu, module) = backend(ANSWER);
    let len = 2 * SHARED_MIN_BYTES;
    let mut a = Buffer::zeros(DType::U8, Shape::D1(len));
    assert!(a.shared().is_some());
    let before = run_large(&mut gpu, &module, "fake_bump", &mut a).unwrap();
    assert_eq!(gpu.last_uploaded_bytes, len as u64);
    assert_eq!((before.get(0), a.get(0), a.get(len - 1)), (Num::Int(0), Num::Int(1), Num::Int(1)));
    for round in 2..=4 {
        let before = run_large(&mut gpu, &module, "fake_bump", &mut a).unwrap();
        assert_eq!(gpu.last_uploaded_bytes, 0, "round {round}: unchanged on the host, so not uploaded");
        assert_eq!((before.get(5), a.get(5)), (Num::Int(round - 1), Num::Int(round)));
    }
    // A change on the host is uploaded, and the kernel sees it.
    a.set(5, Num::Int(100));
    run_large(&mut gpu, &module, "fake_bump", &mut a).unwrap();
    assert_eq!(gpu.last_uploaded_bytes, len as u64);
    assert_eq!((a.get(5), a.get(6)), (Num::Int(101), Num::Int(5)));
    // A copy has the same bytes; launched, it gets results of its own.
    let mut b = a.clone();
    run_large(&mut gpu, &module, "fake_bump", &mut b).unwrap();
    assert_eq!((a.get(5), b.get(5)), (Num::Int(101), Num::Int(102)));
}

#[test]
fn a_run_of_launches_crosses_the_bus_once_each_way() {
    let (mut gpu, module) = backend(ANSWER);
    let len = SHARED_MIN_BYTES;
    let mut a = Buffer::zeros(DType::U8, Shape::D1(len));
    let mut before = launch_large(&mut gpu, &module, "fake_bump", &mut a).unwrap();
    assert_eq!(gpu.last_uploaded_bytes, len as u64);
    assert!(a.on_device().is_some());
    assert!(before.on_device().is_some(), "kept on the device until asked for");
    for _ in 2..=5 {
        before = launch_large(&mut gpu, &module, "fake_bump", &mut a).unwrap();
        assert_eq!(gpu.last_uploaded_bytes, 0, "the device's own results are launched again");
        assert!(before.on_device().is_some(), "kept on the device");
    }
    settle(&mut gpu, &mut a, &mut before).unwrap();
    assert!(a.iter().all(|x| x == Num::Int(5)), "five launches, read once");
    assert!(before.iter().all(|x| x == Num::Int(4)), "the last launch's before");
    // Read back, the buffer is on the device still: not uploaded again.
    run_large(&mut gpu, &module, "fake_bump", &mut a).unwrap();
    assert_eq!(gpu.last_uploaded_bytes, 0);
    assert!(a.iter().all(|x| x == Num::Int(6)));
}

#[test]
fn a_crash_after_a_run_of_launches_runs_them_again_and_loses_nothing() {
    let (mut gpu, module) = backend(ANSWER);
    let mut a = Buffer::zeros(DType::U8, Shape::D1(SHARED_MIN_BYTES));
    let mut before = Buffer::zeros(DType::U8, Shape::D1(0));
    for _ in 0..3 {
        before = launch_large(&mut gpu, &module, "fake_bump", &mut a).unwrap();
    }
    let err = launch_large(&mut gpu, &module, "fake_crash", &mut a).unwrap_err();
    assert!(
        matches!(&err, BackendError::Aborted(m) if m.contains("ran again the 3 launches before this one")),
        "{err:?}"
    );
    // A failing `assert` ends the worker too: the launches are run again at once, in silence.
    run(&mut gpu, &module, "fake_assert", &mut a).unwrap();
    // The results are on the new worker, made again: read back as if nothing had happened.
    settle(&mut gpu, &mut a, &mut before).unwrap();
    assert!(a.iter().all(|x| x == Num::Int(3)));
    assert!(before.iter().all(|x| x == Num::Int(2)));
}

#[test]
fn a_worker_that_dies_while_copying_results_back_is_an_error_and_the_next_launch_goes_on() {
    let (mut gpu, module) = backend(ANSWER);
    let mut a = Buffer::zeros(DType::U8, Shape::D1(SHARED_MIN_BYTES));
    launch_large(&mut gpu, &module, "fake_bump", &mut a).unwrap();
    // The worker dies while copying results out, every time it is asked.
    let mut before = launch_large(&mut gpu, &module, "fake_crash_mid_copy", &mut a).unwrap();
    let err = settle(&mut gpu, &mut a, &mut before).unwrap_err();
    assert!(
        matches!(&err, BackendError::Aborted(m) if m.contains("copying the results of the last 2 launches back, so `a` may hold part of them")),
        "{err:?}"
    );
    assert!(a.on_device().is_some(), "the caller decides what the buffer holds now");
    a.drop_deferred();
    a.fill(Num::Int(7));
    run_large(&mut gpu, &module, "fake_bump", &mut a).unwrap();
    assert!(a.iter().all(|x| x == Num::Int(8)), "a new worker goes on");
}

#[test]
fn a_crash_leaves_a_large_buffer_as_it_was_and_the_new_worker_uploads_it_again() {
    let (mut gpu, module) = backend(ANSWER);
    let len = SHARED_MIN_BYTES;
    let mut a = Buffer::zeros(DType::U8, Shape::D1(len));
    run_large(&mut gpu, &module, "fake_bump", &mut a).unwrap();
    run_large(&mut gpu, &module, "fake_bump", &mut a).unwrap();
    let err = launch_large(&mut gpu, &module, "fake_crash", &mut a).unwrap_err();
    assert!(matches!(&err, BackendError::Aborted(m) if m.contains("gridlab restarted the GPU worker")), "{err:?}");
    assert!(a.iter().all(|x| x == Num::Int(2)), "the buffer is as it was before the launch");
    // The device copy died with the worker: the new one is given the buffer again.
    run_large(&mut gpu, &module, "fake_bump", &mut a).unwrap();
    assert_eq!(gpu.last_uploaded_bytes, len as u64);
    assert!(a.iter().all(|x| x == Num::Int(3)));
}

#[test]
fn a_hang_leaves_a_large_buffer_as_it_was() {
    let (mut gpu, module) = backend(Duration::from_millis(300));
    let mut a = Buffer::zeros(DType::U8, Shape::D1(SHARED_MIN_BYTES));
    let mut before = launch_large(&mut gpu, &module, "fake_bump", &mut a).unwrap();
    let err = launch_large(&mut gpu, &module, "fake_hang", &mut a).unwrap_err();
    assert!(matches!(&err, BackendError::Aborted(m) if m.contains("ran longer than 0.3 s")), "{err:?}");
    settle(&mut gpu, &mut a, &mut before).unwrap();
    assert!(a.iter().all(|x| x == Num::Int(1)));
    run_large(&mut gpu, &module, "fake_bump", &mut a).unwrap();
    assert!(a.iter().all(|x| x == Num::Int(2)));
}

/// A whole script on the fake GPU: results stay on the device between launches, are read back
/// for the first statement that looks, and a crash after a run of launches loses none of them.
#[test]
fn a_script_reads_results_back_only_when_it_looks_and_a_crash_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("deferred.gridlab");
    std::fs::write(
        &script,
        "__global__ void fake_bump(unsigned char *a) { }\n\
         __global__ void fake_crash(unsigned char *a) { }\n\
         let a = zeros(2 << 20, u8)\n\
         fake_bump<<<1, 1>>>(a)\n\
         fake_bump<<<1, 1>>>(a)\n\
         fake_bump<<<1, 1>>>(a)\n\
         expect a[0] == 3\n\
         expect a[2097151] == 3\n\
         fake_bump<<<1, 1>>>(a)\n\
         fake_bump<<<1, 1>>>(a)\n\
         fake_crash<<<1, 1>>>(a)\n\
         expect a[5] == 5\n\
         fake_bump<<<1, 1>>>(a)\n\
         a\n",
    )
    .unwrap();
    let run = super::harness::gridlab()
        .env("GRIDLAB_FAKE_GPU", "1")
        .args(["replay", script.to_str().unwrap(), "--backend", "gpu", "--color", "never"])
        .run();
    assert!(run.stdout.contains("backend: gpu (gridlab fake worker)"), "{}", run.stdout);
    assert!(
        run.stdout.contains("ran again the 2 launches before this one, whose results were still on the GPU"),
        "{}",
        run.stdout
    );
    assert_eq!(run.stdout.matches("\nok\n").count(), 3, "{}", run.stdout);
    assert!(run.stdout.contains("a: u8[2097152]  [6 6 6 ... 6 6 6]"), "{}", run.stdout);
    // The crash is the one error.
    assert!(run.stdout.contains("1 error(s)"), "{}", run.stdout);
}

/// `fake_bump` over the small buffers `bufs` on `gpu`, their results written back at once.
fn run_small(gpu: &mut GpuBackend, module: &Module, kernel: &str, bufs: Vec<&mut Buffer>) -> Result<(), BackendError> {
    let spec = LaunchSpec { args: (0..bufs.len()).map(Arg::Buffer).collect(), ..one_block(kernel) };
    let names = (0..bufs.len()).map(|i| format!("b{i}")).collect();
    let mut buffers = LaunchBuffers { names, buffers: bufs };
    gpu.launch(module, &spec, &mut buffers).map(|_| ())
}

#[test]
fn a_small_buffer_the_host_did_not_change_is_not_sent_again() {
    let (mut gpu, module) = backend(ANSWER);
    let mut a = Buffer::zeros(DType::U8, Shape::D1(64));
    assert!(a.shared().is_none());
    run_small(&mut gpu, &module, "fake_bump", vec![&mut a]).unwrap();
    assert_eq!(gpu.last_uploaded_bytes, 64);
    for round in 2..=4 {
        run_small(&mut gpu, &module, "fake_bump", vec![&mut a]).unwrap();
        assert_eq!(gpu.last_uploaded_bytes, 0, "round {round}: the worker's own copy is launched again");
        assert!(a.iter().all(|x| x == Num::Int(round)), "round {round}: the results come back each time");
    }
    // A change on the host is sent, and the kernel sees it.
    a.set(5, Num::Int(100));
    run_small(&mut gpu, &module, "fake_bump", vec![&mut a]).unwrap();
    assert_eq!(gpu.last_uploaded_bytes, 64);
    assert_eq!((a.get(5), a.get(6)), (Num::Int(101), Num::Int(5)));
    // A copy launched beside its original has the same stamp, and gets a device copy of its own.
    let mut b = a.clone();
    run_small(&mut gpu, &module, "fake_bump", vec![&mut a, &mut b]).unwrap();
    assert_eq!(gpu.last_uploaded_bytes, 64, "the original is kept, the copy's bytes go");
    assert_eq!((a.get(5), b.get(5), a.get(6), b.get(6)), (Num::Int(102), Num::Int(102), Num::Int(6), Num::Int(6)));
    run_small(&mut gpu, &module, "fake_bump", vec![&mut a, &mut b]).unwrap();
    assert_eq!(gpu.last_uploaded_bytes, 0);
    assert_eq!((a.get(5), b.get(5)), (Num::Int(103), Num::Int(103)));
    // `:time` launches the kept copy without writing back: the buffer keeps its bytes, and its
    // next launch finds the copy gone (the worker ran on it) and sends the bytes.
    let spec = one_block("fake_bump");
    gpu.time(&spec, &LaunchBuffers { names: vec!["a".into()], buffers: vec![&mut a] }, 3).unwrap();
    assert_eq!(a.get(5), Num::Int(103));
    run_small(&mut gpu, &module, "fake_bump", vec![&mut a]).unwrap();
    assert_eq!(gpu.last_uploaded_bytes, 64);
    assert_eq!(a.get(5), Num::Int(104));
}

#[test]
fn a_small_buffer_whose_device_copy_is_gone_is_sent_again_and_nothing_is_lost() {
    use gridlab::backend::gpu::fake::SMALL_KEPT;
    let (mut gpu, module) = backend(ANSWER);
    // More buffers than the worker keeps copies of: the oldest copies go, and their buffers'
    // bytes are sent again when next launched.
    let mut bufs: Vec<Buffer> = (0..SMALL_KEPT + 2).map(|_| Buffer::zeros(DType::U8, Shape::D1(16))).collect();
    for b in &mut bufs {
        run_small(&mut gpu, &module, "fake_bump", vec![b]).unwrap();
    }
    run_small(&mut gpu, &module, "fake_bump", vec![&mut bufs[SMALL_KEPT + 1]]).unwrap();
    assert_eq!(gpu.last_uploaded_bytes, 0, "the newest copy is still kept");
    run_small(&mut gpu, &module, "fake_bump", vec![&mut bufs[0]]).unwrap();
    assert_eq!(gpu.last_uploaded_bytes, 16, "the oldest copy went: its bytes were sent");
    assert!(bufs[0].iter().all(|x| x == Num::Int(2)));
    // A crash takes every device copy with the worker; the buffer is as it was, and the new
    // worker is sent its bytes.
    let mut a = Buffer::zeros(DType::U8, Shape::D1(16));
    run_small(&mut gpu, &module, "fake_bump", vec![&mut a]).unwrap();
    let err = run_small(&mut gpu, &module, "fake_crash", vec![&mut a]).unwrap_err();
    assert!(matches!(&err, BackendError::Aborted(m) if m.contains("gridlab restarted the GPU worker")), "{err:?}");
    assert!(a.iter().all(|x| x == Num::Int(1)), "as before the crashed launch");
    run_small(&mut gpu, &module, "fake_bump", vec![&mut a]).unwrap();
    assert_eq!(gpu.last_uploaded_bytes, 16);
    assert!(a.iter().all(|x| x == Num::Int(2)));
    run_small(&mut gpu, &module, "fake_bump", vec![&mut a]).unwrap();
    assert_eq!(gpu.last_uploaded_bytes, 0);
    assert!(a.iter().all(|x| x == Num::Int(3)));
}

/// The worker answers a launch that names a small buffer by a stamp it does not hold, or names
/// one twice, with `NotKept`, and does nothing else.
#[test]
fn a_worker_asked_for_a_small_copy_it_does_not_hold_says_so() {
    let mut w = fake();
    assert!(matches!(w.request(&compile(), ANSWER, None).unwrap(), Response::Compiled { .. }));
    let small = |data: WireData, keep: Option<u64>| small_launch("fake_bump", data, keep);
    let answer = w.request(&small(WireData::Kept { stamp: 41, len: 4 }, Some(42)), ANSWER, None).unwrap();
    assert_eq!(answer, Response::NotKept { stamps: vec![41] });
    let bumped = launched(w.request(&small(WireData::Inline(vec![1, 2, 3, 4]), Some(42)), ANSWER, None).unwrap());
    assert_eq!((bumped.buffers[0].as_ref(), bumped.uploaded_bytes), ([2, 3, 4, 5].as_slice(), 4));
    // Named by the stamp it was kept under: nothing goes up, and the kept results are run on.
    let again = launched(w.request(&small(WireData::Kept { stamp: 42, len: 4 }, Some(43)), ANSWER, None).unwrap());
    assert_eq!((again.buffers[0].as_ref(), again.uploaded_bytes), ([3, 4, 5, 6].as_slice(), 0));
    // The copy under 42 was run on: it is 43 now.
    let stale = w.request(&small(WireData::Kept { stamp: 42, len: 4 }, None), ANSWER, None).unwrap();
    assert_eq!(stale, Response::NotKept { stamps: vec![42] });
    // The same copy twice in one launch cannot be two buffers.
    let mut twice = small(WireData::Kept { stamp: 43, len: 4 }, None);
    if let Request::Launch(l) = &mut twice {
        l.buffers.push(l.buffers[0].clone());
        l.args.push(WireArg::Buffer(1));
    }
    assert_eq!(w.request(&twice, ANSWER, None).unwrap(), Response::NotKept { stamps: vec![43] });
}

/// `kernel` over `buffer`, sent with [`GpuBackend::begin_launch`] and taken with
/// [`GpuBackend::end_launch`], as a replayed script runs a launch while it checks the next input.
fn run_pipelined(gpu: &mut GpuBackend, module: &Module, kernel: &str, buffer: &mut Buffer) -> Result<(), BackendError> {
    let spec = one_block(kernel);
    let mut buffers = LaunchBuffers { names: vec!["a".into()], buffers: vec![buffer] };
    assert!(gpu.begin_launch(&spec, &buffers, &[])?, "nothing ahead: sent");
    assert!(gpu.launch_in_flight());
    let taken = gpu.end_launch(module, &spec, &mut buffers);
    assert!(!gpu.launch_in_flight(), "the answer is taken, whatever it was");
    taken.map(|_| ())
}

#[test]
fn a_launch_answered_later_gives_what_a_waited_one_gives_and_a_crash_in_flight_loses_nothing() {
    let (mut gpu, module) = backend(Duration::from_millis(500));
    let mut a = Buffer::zeros(DType::U8, Shape::D1(64));
    run_pipelined(&mut gpu, &module, "fake_bump", &mut a).unwrap();
    assert_eq!(gpu.last_uploaded_bytes, 64);
    run_pipelined(&mut gpu, &module, "fake_bump", &mut a).unwrap();
    assert_eq!(gpu.last_uploaded_bytes, 0, "the worker's own copy, named by its stamp");
    assert!(a.iter().all(|x| x == Num::Int(2)));
    // A crash and a hang while in flight: the buffer is as it was, and the next launch goes on.
    for (kernel, says) in [("fake_crash", "took the GPU worker down"), ("fake_hang", "ran longer than 0.5 s")] {
        let err = run_pipelined(&mut gpu, &module, kernel, &mut a).unwrap_err();
        let BackendError::Aborted(message) = err else { panic!("{err:?}") };
        assert!(message.contains(says) && message.contains("gridlab restarted the GPU worker"), "{message}");
        assert!(a.iter().all(|x| x == Num::Int(2)), "{kernel}: the buffer as before it");
    }
    // The new worker holds no copy: it says so, and the launch goes again with the bytes.
    run_pipelined(&mut gpu, &module, "fake_bump", &mut a).unwrap();
    assert_eq!(gpu.last_uploaded_bytes, 64);
    assert!(a.iter().all(|x| x == Num::Int(3)));
    // A large buffer's results stay on the device, as a waited launch leaves them.
    let len = SHARED_MIN_BYTES;
    let mut b = Buffer::zeros(DType::U8, Shape::D1(len));
    run_pipelined(&mut gpu, &module, "fake_bump", &mut b).unwrap();
    run_pipelined(&mut gpu, &module, "fake_bump", &mut b).unwrap();
    assert!(b.on_device().is_some());
    let err = run_pipelined(&mut gpu, &module, "fake_crash", &mut b).unwrap_err();
    let BackendError::Aborted(message) = err else { panic!("{err:?}") };
    assert!(message.contains("ran again the 2 launches before this one"), "{message}");
    gpu.settle(&mut [("b", &mut b)]).unwrap();
    assert!(b.iter().all(|x| x == Num::Int(2)), "two launches, their results made again");
}

/// A replayed script's launches run while the next input is checked: each report still comes
/// under its own launch, an argument that reads a buffer's element sees the launch before it,
/// and a crash is reported against the launch that crashed, with nothing lost.
#[test]
fn a_script_checks_its_next_launch_while_the_gpu_runs_one_and_reports_each_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("pipelined.gridlab");
    std::fs::write(
        &script,
        "__global__ void fake_bump(unsigned char *a) { }\n\
         __global__ void fake_crash(unsigned char *a) { }\n\
         let a = zeros(16, u8)\n\
         fake_bump<<<1, 1>>>(a)\n\
         fake_bump<<<a[0] + 1, 1>>>(a)\n\
         fake_bump<<<1, 1>>>(a)\n\
         fake_crash<<<1, 1>>>(a)\n\
         fake_bump<<<a[0] + 4, 1>>>(a)\n\
         fake_crash<<<2, 1>>>(a)\n\
         fake_bump<<<5, 1>>>(a)\n\
         expect a[15] == 5\n\
         let big = zeros(2 << 20, u8)\n\
         fake_bump<<<1, 1>>>(big)\n\
         fake_bump<<<big[0] + 10, 1>>>(big)\n\
         expect big[0] == 2\n",
    )
    .unwrap();
    let run = super::harness::gridlab()
        .env("GRIDLAB_FAKE_GPU", "1")
        .args(["replay", script.to_str().unwrap(), "--backend", "gpu", "--color", "never"])
        .run();
    let out = &run.stdout;
    // The second launch's grid read a[0] after the first launch; the fifth after the crash,
    // which left `a` as the third launch made it.
    assert!(out.contains("fake_bump<<<2, 1>>>"), "{out}");
    assert!(out.contains("fake_bump<<<7, 1>>>"), "{out}");
    // A large buffer's results stay on the device from one launch to the next, but a launch
    // that reads its elements reads them back first.
    assert!(out.contains("fake_bump<<<11, 1>>>"), "{out}");
    // Each launch's line right under its own input.
    let lines: Vec<&str> = out.lines().collect();
    let echo = |text: &str| lines.iter().position(|l| *l == format!(">>> {text}")).unwrap_or_else(|| panic!("{out}"));
    for (input, line) in [
        ("fake_bump<<<1, 1>>>(a)", "fake_bump<<<1, 1>>>"),
        ("fake_bump<<<a[0] + 1, 1>>>(a)", "fake_bump<<<2, 1>>>"),
        ("fake_bump<<<a[0] + 4, 1>>>(a)", "fake_bump<<<7, 1>>>"),
        ("fake_bump<<<5, 1>>>(a)", "fake_bump<<<5, 1>>>"),
    ] {
        let at = echo(input);
        assert!(lines[at + 1].starts_with(line), "{input}:\n{out}");
    }
    // Each crash under its own launch; the launch sent behind the second one, which never ran,
    // ran on the new worker from the bytes as they were.
    for input in ["fake_crash<<<1, 1>>>(a)", "fake_crash<<<2, 1>>>(a)"] {
        let crash = echo(input);
        assert!(lines[crash + 1].contains("`fake_crash` took the GPU worker down"), "{input}:\n{out}");
    }
    assert_eq!(out.matches("\nok\n").count(), 2, "{out}");
    assert!(out.contains("2 error(s)"), "{out}");
}

/// The body of a transcript: from the first echoed input to the verdict, exclusive.
fn body(out: &str) -> String {
    let lines: Vec<&str> = out.lines().collect();
    let start = lines.iter().position(|l| l.starts_with(">>> ")).unwrap_or(0);
    let end = lines.iter().rposition(|l| l.starts_with("PASS ") || l.starts_with("FAIL ")).unwrap_or(lines.len());
    lines[start..end].join("\n")
}

/// A replayed script's runs of launches go behind each other, many deep, and a fault, a hang, a
/// refused launch and a mistake among them change nothing a learner sees: the transcript is the
/// one each launch waited for makes (piped input, which waits for every launch), byte for byte.
#[test]
fn a_script_whose_launches_go_many_deep_reads_as_if_each_was_waited_for() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("deep.gridlab");
    let mut text = String::from(
        "__global__ void fake_bump(unsigned char *a) { }\n\
         __global__ void fake_crash(unsigned char *a) { }\n\
         __global__ void fake_hang(unsigned char *a) { }\n\
         __global__ void fake_refused(unsigned char *a) { }\n\
         let a = zeros(16, u8)\n\
         let b = zeros(16, u8)\n",
    );
    // Twelve in a row, more than go in flight at once, then the two buffers in turns, with a
    // refusal, a crash, a hang and a launch with a wrong argument count among them.
    text.push_str(&"fake_bump<<<1, 1>>>(a)\n".repeat(12));
    for (kernel, buffer) in [
        ("fake_bump", "b"),
        ("fake_bump", "a"),
        ("fake_refused", "a"),
        ("fake_bump", "a"),
        ("fake_bump", "b"),
        ("fake_crash", "b"),
        ("fake_bump", "b"),
        ("fake_bump", "a"),
        ("fake_hang", "a"),
        ("fake_bump", "a"),
        ("fake_bump", "b, 3"),
        ("fake_bump", "b"),
    ] {
        text.push_str(&format!("{kernel}<<<len(a), 1>>>({buffer})\n"));
    }
    text.push_str("expect a[0] == 16\nexpect b[15] == 4\na\nfake_bump<<<1, 1>>>(a)\nfake_bump<<<1, 1>>>(b)\n");
    std::fs::write(&script, &text).unwrap();
    let flags = ["--backend", "gpu", "--color", "never", "--timeout", "0.5"];
    let replayed = super::harness::gridlab()
        .env("GRIDLAB_FAKE_GPU", "1")
        .args(["replay", script.to_str().unwrap()])
        .args(flags)
        .run();
    let waited = super::harness::gridlab().env("GRIDLAB_FAKE_GPU", "1").args(flags).stdin(&text).run();
    let (replayed, waited) = (body(&replayed.stdout), body(&waited.stdout));
    assert_eq!(replayed.matches("fake worker ran fake_bump").count(), 12 + 8 + 2, "{replayed}");
    assert_eq!(replayed.matches("\nok\n").count(), 2, "{replayed}");
    assert_eq!(replayed, waited.replace("<stdin>", script.to_str().unwrap()));
}

/// Launches over fresh buffers of 900 KB one after another: each request carries its buffer's
/// bytes and each answer brings them back, many times what a pipe holds, and the session never
/// waits to write a request while the worker waits to write an answer (it once did, for ever).
#[test]
fn launches_over_buffers_larger_than_a_pipe_go_one_after_another_without_waiting_for_ever() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("wide.gridlab");
    std::fs::write(
        &script,
        "__global__ void fake_bump(unsigned char *a) { }\n\
         let a = zeros(900000, u8)\n\
         let b = zeros(900000, u8)\n\
         let c = zeros(900000, u8)\n\
         fake_bump<<<1, 1>>>(a)\n\
         fake_bump<<<1, 1>>>(b)\n\
         fake_bump<<<1, 1>>>(c)\n\
         fake_bump<<<1, 1>>>(a)\n\
         fake_bump<<<1, 1>>>(b)\n\
         expect a[0] == 2\n\
         expect c[899999] == 1\n",
    )
    .unwrap();
    let child = std::process::Command::new(binary())
        .args(["replay", script.to_str().unwrap(), "--backend", "gpu"])
        .env("GRIDLAB_FAKE_GPU", "1")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let (code, out) = super::harness::wait(child, ANSWER);
    assert_eq!(code, 0, "{out}");
}

/// `fake_bump` over `a`, sent behind a launch of `ahead` over it that is still in flight, and
/// both answers taken: the first's result, then the second's.
fn run_behind(
    gpu: &mut GpuBackend,
    module: &Module,
    ahead: &str,
    a: &mut Buffer,
) -> (Result<(), BackendError>, Result<(), BackendError>) {
    let (first, second) = (one_block(ahead), one_block("fake_bump"));
    let mut buffers = LaunchBuffers { names: vec!["a".into()], buffers: vec![a] };
    assert!(gpu.begin_launch(&first, &buffers, &[]).unwrap());
    assert!(gpu.begin_launch(&second, &buffers, &[Some((0, 0))]).unwrap());
    let one = gpu.end_launch(module, &first, &mut buffers).map(|_| ());
    assert!(gpu.launch_in_flight(), "the second is still to be taken");
    let two = gpu.end_launch(module, &second, &mut buffers).map(|_| ());
    assert!(!gpu.launch_in_flight());
    (one, two)
}

#[test]
fn a_launch_sent_behind_another_runs_after_it_and_a_fault_ahead_leaves_it_to_run_on_the_bytes_before() {
    let (mut gpu, module) = backend(Duration::from_millis(500));
    let mut a = Buffer::zeros(DType::U8, Shape::D1(64));
    let (one, two) = run_behind(&mut gpu, &module, "fake_bump", &mut a);
    one.unwrap();
    two.unwrap();
    assert!(a.iter().all(|x| x == Num::Int(2)), "the second ran on the first's results, on the device");
    assert_eq!(gpu.last_uploaded_bytes, 0, "named by the stamp the first kept its results under");
    // The launch ahead crashes, hangs or fails: the one behind runs on the bytes from before it.
    for (ahead, says) in [("fake_crash", "took the GPU worker down"), ("fake_hang", "ran longer than 0.5 s")] {
        let before = a.get(0);
        let (one, two) = run_behind(&mut gpu, &module, ahead, &mut a);
        let err = one.unwrap_err();
        let BackendError::Aborted(message) = err else { panic!("{err:?}") };
        assert!(message.contains(says), "{message}");
        two.unwrap();
        assert_eq!(a.get(0).as_f64(), before.as_f64() + 1.0, "{ahead}: one bump, from the bytes before");
    }
    // Refused ahead, the worker going on: the one behind named results never kept, is told so,
    // and goes again with the bytes.
    let (one, two) = run_behind(&mut gpu, &module, "fake_refused", &mut a);
    assert!(matches!(&one, Err(BackendError::Launch(m)) if m.contains("OUT_OF_RESOURCES")), "{one:?}");
    two.unwrap();
    assert!(a.iter().all(|x| x == Num::Int(5)));
    // A new worker holds no copy: the launch ahead is told so, and so is the one behind; both go
    // again with their bytes, in order.
    let err = run_pipelined(&mut gpu, &module, "fake_crash", &mut a).unwrap_err();
    assert!(matches!(err, BackendError::Aborted(_)), "{err:?}");
    let (one, two) = run_behind(&mut gpu, &module, "fake_bump", &mut a);
    one.unwrap();
    two.unwrap();
    assert!(a.iter().all(|x| x == Num::Int(7)));
}

/// `kernels` over `a`, each sent behind the ones before it while they are all in flight, then
/// every answer taken, in order.
fn run_deep(gpu: &mut GpuBackend, module: &Module, kernels: &[&str], a: &mut Buffer) -> Vec<Result<(), BackendError>> {
    let specs: Vec<LaunchSpec> = kernels.iter().map(|k| one_block(k)).collect();
    let mut buffers = LaunchBuffers { names: vec!["a".into()], buffers: vec![a] };
    for (k, spec) in specs.iter().enumerate() {
        // The buffer was launched last by the launch just before, in flight, at its place 0.
        let after = [k.checked_sub(1).map(|ahead| (ahead, 0))];
        assert!(gpu.begin_launch(spec, &buffers, &after).unwrap(), "{}: sent behind the others", spec.kernel);
    }
    specs.iter().map(|spec| gpu.end_launch(module, spec, &mut buffers).map(|_| ())).collect()
}

#[test]
fn a_run_of_launches_sent_behind_each_other_runs_in_order_and_a_fault_in_it_is_its_own_alone() {
    let (mut gpu, module) = backend(Duration::from_millis(500));
    let mut a = Buffer::zeros(DType::U8, Shape::D1(64));
    let all = run_deep(&mut gpu, &module, &["fake_bump"; 5], &mut a);
    assert!(all.iter().all(Result::is_ok), "{all:?}");
    assert!(a.iter().all(|x| x == Num::Int(5)), "each ran on the results of the one before, on the device");
    assert_eq!(gpu.last_uploaded_bytes, 0, "named by the stamps the launches ahead kept their results under");
    // A crash, a hang or a refusal third of five: the first two count, the third fails alone,
    // and the two behind it run on the bytes the second left, not on anything the third did.
    for (third, says) in [
        ("fake_crash", "took the GPU worker down"),
        ("fake_hang", "ran longer than 0.5 s"),
        ("fake_refused", "OUT_OF_RESOURCES"),
    ] {
        let before = a.get(0).as_f64();
        let r = run_deep(&mut gpu, &module, &["fake_bump", "fake_bump", third, "fake_bump", "fake_bump"], &mut a);
        assert!([0, 1, 3, 4].iter().all(|&i| r[i].is_ok()), "{third}: {r:?}");
        let message = match &r[2] {
            Err(BackendError::Aborted(m) | BackendError::Launch(m)) => m,
            other => panic!("{third}: {other:?}"),
        };
        assert!(message.contains(says), "{message}");
        assert_eq!(a.get(0).as_f64(), before + 4.0, "{third}: four bumps");
        assert!(a.iter().all(|x| x == a.get(0)));
    }
    // A request that would not fit in the pipe behind the launches in flight is not sent: the
    // caller takes their answers first, then sends it.
    let mut big = Buffer::zeros(DType::U8, Shape::D1(gridlab::backend::gpu::BEHIND_BYTES));
    let spec = one_block("fake_bump");
    let mut small = LaunchBuffers { names: vec!["a".into()], buffers: vec![&mut a] };
    assert!(gpu.begin_launch(&spec, &small, &[]).unwrap());
    let mut large = LaunchBuffers { names: vec!["big".into()], buffers: vec![&mut big] };
    assert!(!gpu.begin_launch(&spec, &large, &[None]).unwrap(), "its bytes would not fit behind");
    gpu.end_launch(&module, &spec, &mut small).unwrap();
    assert!(gpu.begin_launch(&spec, &large, &[]).unwrap(), "alone, it goes");
    gpu.end_launch(&module, &spec, &mut large).unwrap();
    assert!(big.iter().all(|x| x == Num::Int(1)));
}

/// A launch of `kernel` over one small buffer, its results kept under `keep`.
fn small_launch(kernel: &str, data: WireData, keep: Option<u64>) -> Request {
    Request::Launch(LaunchRequest {
        kernel: kernel.into(),
        grid: [1, 1, 1],
        block: [1, 1, 1],
        shared_bytes: 0,
        args: vec![WireArg::Buffer(0)],
        buffers: vec![WireBuffer { data, elem_size: 1, keep }],
        repeat: 1,
        symbols: Vec::new(),
        released: Vec::new(),
        drop_after: Vec::new(),
    })
}

/// The worker's request loop (`serve.rs`, the fake's as the real worker's) begins a launch that
/// arrives while the one ahead still runs, on the results the one ahead keeps, and answers both
/// in order; a request that cannot go behind waits, and a launch behind one that takes the worker
/// down is never answered, while the one ahead is.
#[test]
fn the_worker_begins_a_launch_sent_while_one_runs_and_answers_each_in_order() {
    let mut w = fake();
    assert!(matches!(w.request(&compile(), ANSWER, None).unwrap(), Response::Compiled { .. }));
    w.send(&small_launch("fake_slow", WireData::Inline(vec![1, 2, 3, 4]), Some(1))).unwrap();
    w.send(&small_launch("fake_bump", WireData::Kept { stamp: 1, len: 4 }, Some(2))).unwrap();
    let one = launched(w.answer(ANSWER, None).unwrap());
    assert_eq!(one.buffers[0].as_ref(), [2, 3, 4, 5]);
    assert_eq!(one.printf, "fake worker ran fake_slow, a launch behind it\n");
    let two = launched(w.answer(ANSWER, None).unwrap());
    assert_eq!((two.buffers[0].as_ref(), two.uploaded_bytes), ([3, 4, 5, 6].as_slice(), 0));
    // Alone, or followed by a request that is not a launch: nothing goes behind it.
    let alone = launched(
        w.request(&small_launch("fake_slow", WireData::Kept { stamp: 2, len: 4 }, Some(3)), ANSWER, None).unwrap(),
    );
    assert_eq!(
        (alone.buffers[0].as_ref(), alone.printf.as_str()),
        ([4, 5, 6, 7].as_slice(), "fake worker ran fake_slow, no launch behind it\n")
    );
    w.send(&small_launch("fake_slow", WireData::Kept { stamp: 3, len: 4 }, Some(4))).unwrap();
    w.send(&Request::Hello).unwrap();
    assert!(launched(w.answer(ANSWER, None).unwrap()).printf.contains("no launch behind it"));
    assert!(matches!(w.answer(ANSWER, None).unwrap(), Response::Hello(_)));
    // Refused ahead: answered in its turn, and the launch behind, which named its results, is
    // told they are not kept.
    w.send(&small_launch("fake_refused", WireData::Kept { stamp: 4, len: 4 }, Some(5))).unwrap();
    w.send(&small_launch("fake_bump", WireData::Kept { stamp: 5, len: 4 }, Some(6))).unwrap();
    assert!(matches!(w.answer(ANSWER, None).unwrap(), Response::Failed { sticky: false, .. }));
    assert_eq!(w.answer(ANSWER, None).unwrap(), Response::NotKept { stamps: vec![5] });
    // A crash behind a slow launch: the slow one is answered whole, then the worker is gone.
    w.send(&small_launch("fake_slow", WireData::Kept { stamp: 4, len: 4 }, Some(7))).unwrap();
    w.send(&small_launch("fake_crash", WireData::Kept { stamp: 7, len: 4 }, None)).unwrap();
    let slow = launched(w.answer(ANSWER, None).unwrap());
    assert_eq!(
        (slow.buffers[0].as_ref(), slow.printf.as_str()),
        ([6, 7, 8, 9].as_slice(), "fake worker ran fake_slow, a launch behind it\n")
    );
    let err = w.answer(ANSWER, None).unwrap_err();
    assert!(matches!(&err, WorkerError::Died { stderr } if stderr.contains("crashed on purpose")), "{err:?}");
    assert_eq!(w.exit_status().and_then(|s| s.code()), Some(CRASH_STATUS.into()));
}

/// `GRIDLAB_WORKER_PROFILE` names a file, and the worker adds to it, as it leaves, how many
/// times each phase of its loop ran and for how long: a replayed run of launches begins and
/// finishes each launch once, and answers each request once.
#[test]
fn the_worker_profile_counts_each_launch_once_in_each_phase() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("profiled.gridlab");
    let profile = dir.path().join("phases.txt");
    let launches = 40;
    let text = format!(
        "__global__ void fake_bump(unsigned char *a) {{ }}\nlet a = zeros(16, u8)\n{}",
        "fake_bump<<<1, 1>>>(a)\n".repeat(launches)
    );
    std::fs::write(&script, &text).unwrap();
    let run = super::harness::gridlab()
        .env("GRIDLAB_FAKE_GPU", "1")
        .env("GRIDLAB_WORKER_PROFILE", profile.to_str().unwrap())
        .args(["replay", script.to_str().unwrap(), "--backend", "gpu", "--color", "never"])
        .run();
    assert!(run.stdout.contains("1 passed"), "{}", run.stdout);
    let summary = std::fs::read_to_string(&profile).unwrap();
    // The worker that ran the script is the last to leave; a worker started to look at the
    // device (`Hello`) may have written its own summary before it.
    let last = summary.rsplit("gridlab worker ").next().unwrap();
    let count = |phase: &str| -> usize {
        let line = last.lines().find(|l| l.split_whitespace().next() == Some(phase));
        line.and_then(|l| l.split_whitespace().nth(1)?.parse().ok()).unwrap_or_else(|| panic!("{phase}:\n{summary}"))
    };
    assert_eq!(count("Begin"), launches, "{summary}");
    assert_eq!(count("Finish"), launches, "{summary}");
    // Every launch's answer, and the compile's (and the greeting's, where this worker gave it).
    assert!((launches + 1..=launches + 2).contains(&count("Send")), "{summary}");
    // The fake worker has no device: its launches have no steps of their own.
    assert!(!last.contains("BeginKernel"), "{summary}");
}
