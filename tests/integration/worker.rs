//! The GPU worker's lifecycle without a GPU: the client and the backend's restarts, driven by the
//! fake worker (`gridlab worker --fake`, `src/backend/gpu/fake.rs`), which crashes, hangs or
//! writes garbage when asked to launch a kernel named for it.

use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use gridlab::backend::gpu::GpuBackend;
use gridlab::backend::gpu::client::{CLOSE_GRACE, Worker, WorkerCommand, WorkerError};
use gridlab::backend::gpu::fake::CRASH_STATUS;
use gridlab::backend::gpu::libs::Libraries;
use gridlab::backend::gpu::protocol::{LaunchRequest, Request, Response, WireArg, WireBuffer};
use gridlab::backend::{Arg, Backend, BackendError, Dim3, LaunchBuffers, LaunchSpec};
use gridlab::buffer::{Buffer, Shape};
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
        buffers: vec![WireBuffer { bytes: vec![1, 2, 3, 4], elem_size: 4 }],
        repeat: 1,
        symbols: Vec::new(),
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
            assert_eq!(r.buffers, vec![vec![1, 2, 3, 4]]);
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

fn run(gpu: &mut GpuBackend, module: &Module, kernel: &str, buffer: &mut Buffer) -> Result<String, BackendError> {
    let spec = LaunchSpec {
        kernel: kernel.into(),
        grid: Dim3::linear(1),
        block: Dim3::linear(4),
        shared_bytes: 0,
        args: vec![Arg::Buffer(0)],
        symbols: Vec::new(),
    };
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

#[test]
fn the_backend_survives_garbage_from_its_worker() {
    let (mut gpu, module) = backend(ANSWER);
    let mut a = Buffer::zeros(DType::I32, Shape::D1(4));
    let err = run(&mut gpu, &module, "fake_garbage", &mut a).unwrap_err();
    assert!(matches!(&err, BackendError::Aborted(m) if m.contains("gridlab restarted the GPU worker")), "{err:?}");
    assert_eq!(run(&mut gpu, &module, "add", &mut a).unwrap(), "fake worker ran add");
}
