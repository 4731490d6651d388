//! Programs that wait for each other (issue 14, bug 3): spin locks and flags set by a
//! later program run to completion on the interpreter and the simulators, which run
//! one program at a time, by interleaving the programs as a GPU's scheduler would; a
//! wait no program can end is a located diagnostic naming the loop and the programs,
//! never a hang; `TILEWISE_STEP_LIMIT` bounds loops that never touch memory.
//!
//! wgpu is left out on purpose: WebGPU promises no forward progress between
//! workgroups, and lavapipe on a 2-core runner may run them one after another.

mod common;

use common::{module, Rng};
use std::sync::OnceLock;
use tilewise::{Device, DeviceKind};

const SRC: &str = r#"
import triton
import triton.language as tl

@triton.jit
def reverse_turns(turn_ptr, order_ptr, N: tl.constexpr):
    # Program p waits until N - 1 - p programs have had their turn: the last program
    # goes first, so in grid order every program but the last waits for a later one.
    pid = tl.program_id(0)
    while tl.atomic_add(turn_ptr, 0) != N - 1 - pid:
        pass
    tl.store(order_ptr + pid, tl.atomic_add(turn_ptr, 1))

@triton.jit
def locked_sums(lock_ptr, count_ptr, acc_ptr, x_ptr, BLOCK: tl.constexpr):
    # Each program adds its row into one accumulator under a spin lock, as the layer
    # norm backward does; the first program to arrive initializes it.
    pid = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + pid * BLOCK + offs)
    while tl.atomic_cas(lock_ptr, 0, 1) == 1:
        pass
    count = tl.load(count_ptr)
    if count == 0:
        tl.store(acc_ptr + offs, x)
    else:
        tl.store(acc_ptr + offs, tl.load(acc_ptr + offs) + x)
    tl.store(count_ptr, count + 1)
    tl.atomic_xchg(lock_ptr, 0)

@triton.jit
def wait_for_flag(flag_ptr, out_ptr):
    pid = tl.program_id(0)
    if pid == 0:
        # An atomic read (acquire): a volatile load would not order the load below.
        while tl.atomic_add(flag_ptr, 0) == 0:
            pass
        tl.store(out_ptr, tl.load(out_ptr + 1) * 2)
    else:
        tl.store(out_ptr + 1, 21)
        tl.atomic_xchg(flag_ptr, 1)

@triton.jit
def never_set(flag_ptr, out_ptr):
    pid = tl.program_id(0)
    while tl.load(flag_ptr + pid % 2, volatile=True) == 0:
        pass
    tl.store(out_ptr + pid, 1)

@triton.jit
def counts_forever(out_ptr, n):
    i = n * 0
    while i >= 0:
        i = (i + 1) % n
    tl.store(out_ptr, i)
"#;

fn cuda() -> Option<Device> {
    static DEV: OnceLock<Option<Device>> = OnceLock::new();
    DEV.get_or_init(|| match Device::cuda(0) {
        Ok(d) => Some(d),
        Err(e) => {
            if std::env::var("TILEWISE_REQUIRE_CUDA").as_deref() == Ok("1") {
                panic!("TILEWISE_REQUIRE_CUDA=1 but there is no CUDA device: {e}");
            }
            eprintln!("SKIPPED (cuda leg): {e}");
            None
        }
    })
    .clone()
}

/// The interpreter, the three simulators, and CUDA where present.
fn executors() -> Vec<Device> {
    let mut d = vec![
        Device::interpreter(),
        Device::simulator(),
        Device::simulator_ptx(),
        Device::simulator_coop(),
    ];
    d.extend(cuda());
    d
}

#[test]
fn programs_wait_for_later_programs() {
    let m = module("spin", SRC);
    let k = m.kernel("reverse_turns").unwrap();
    for n in [2u32, 5, 16] {
        for dev in executors() {
            let turn = dev.upload(&[0i32]).unwrap();
            let order = dev.upload(&vec![-1i32; n as usize]).unwrap();
            k.launch(&dev, [n, 1, 1])
                .arg(&turn)
                .arg(&order)
                .constexpr("N", n as i64)
                .num_warps(1)
                .run()
                .unwrap_or_else(|e| panic!("{} (n = {n}): {}", dev.name(), e.render()));
            let got: Vec<i32> = dev.download(&order).unwrap();
            let want: Vec<i32> = (0..n as i32).map(|p| n as i32 - 1 - p).collect();
            assert_eq!(got, want, "{} (n = {n})", dev.name());
            assert_eq!(dev.download::<i32>(&turn).unwrap(), vec![n as i32]);
        }
    }
}

#[test]
fn spin_locks_serialize_the_programs() {
    let m = module("spin", SRC);
    let k = m.kernel("locked_sums").unwrap();
    let (programs, block) = (6usize, 32usize);
    let mut r = Rng::new(3);
    // Small integers: the sum is exact in any order.
    let x: Vec<f32> = (0..programs * block).map(|_| r.int(-8, 8) as f32).collect();
    let want: Vec<f32> = (0..block)
        .map(|j| (0..programs).map(|p| x[p * block + j]).sum())
        .collect();
    for dev in executors() {
        let lock = dev.upload(&[0i32]).unwrap();
        let count = dev.upload(&[0i32]).unwrap();
        let acc = dev.upload(&vec![f32::NAN; block]).unwrap();
        let xb = dev.upload(&x).unwrap();
        k.launch(&dev, [programs as u32, 1, 1])
            .arg(&lock)
            .arg(&count)
            .arg(&acc)
            .arg(&xb)
            .constexpr("BLOCK", block as i64)
            .run()
            .unwrap_or_else(|e| panic!("{}: {}", dev.name(), e.render()));
        assert_eq!(dev.download::<f32>(&acc).unwrap(), want, "{}", dev.name());
        assert_eq!(dev.download::<i32>(&count).unwrap(), vec![programs as i32]);
        assert_eq!(dev.download::<i32>(&lock).unwrap(), vec![0]);
    }
}

#[test]
fn a_flag_set_by_a_later_program() {
    let m = module("spin", SRC);
    let k = m.kernel("wait_for_flag").unwrap();
    for dev in executors() {
        let flag = dev.upload(&[0i32]).unwrap();
        let out = dev.upload(&[-1i32, -1]).unwrap();
        k.launch(&dev, [2, 1, 1])
            .arg(&flag)
            .arg(&out)
            .run()
            .unwrap_or_else(|e| panic!("{}: {}", dev.name(), e.render()));
        assert_eq!(
            dev.download::<i32>(&out).unwrap(),
            vec![42, 21],
            "{}",
            dev.name()
        );
    }
}

/// Every program waits for a flag nobody sets: a diagnostic at the loop's line naming
/// the programs, on every CPU executor (CUDA would hang: not run there).
#[test]
fn a_wait_nobody_ends_is_a_located_diagnostic() {
    let m = module("spin", SRC);
    let k = m.kernel("never_set").unwrap();
    let line = SRC
        .lines()
        .position(|l| l.contains("while tl.load(flag_ptr + pid % 2"))
        .unwrap()
        + 1;
    for dev in executors()
        .into_iter()
        .filter(|d| d.kind() != DeviceKind::Cuda)
    {
        let flag = dev.upload(&[0i32, 0]).unwrap();
        let out = dev.upload(&[0i32; 3]).unwrap();
        let e = k
            .launch(&dev, [3, 1, 1])
            .arg(&flag)
            .arg(&out)
            .run()
            .expect_err("a deadlock must be reported");
        let text = e.render();
        assert!(
            text.contains("no program can progress"),
            "{}: {text}",
            dev.name()
        );
        assert!(
            text.contains(&format!("line {line}")),
            "{}: {text}",
            dev.name()
        );
        assert!(
            text.contains("(0, 0, 0), (1, 0, 0), (2, 0, 0)"),
            "{}: {text}",
            dev.name()
        );
    }
}

/// `TILEWISE_STEP_LIMIT` stops a loop that never touches memory. The variable is set
/// in a child process (the test binary run again on the ignored test below), so that
/// no other test sees it.
#[test]
fn the_step_limit_stops_a_loop_that_never_ends() {
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--ignored", "--exact", "step_limit_child", "--nocapture"])
        .env("TILEWISE_STEP_LIMIT", "5000")
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("1 passed"), "{text}");
}

#[test]
#[ignore = "run by the_step_limit_stops_a_loop_that_never_ends with TILEWISE_STEP_LIMIT set"]
fn step_limit_child() {
    assert_eq!(std::env::var("TILEWISE_STEP_LIMIT").as_deref(), Ok("5000"));
    let m = module("spin", SRC);
    let k = m.kernel("counts_forever").unwrap();
    for dev in [
        Device::interpreter(),
        Device::simulator(),
        Device::simulator_ptx(),
    ] {
        let out = dev.upload(&[0i32]).unwrap();
        let e = k
            .launch(&dev, [1, 1, 1])
            .arg(&out)
            .arg(1000i32)
            .run()
            .expect_err("the step limit must stop the loop");
        let text = e.render();
        assert!(
            text.contains("5000 loop iterations"),
            "{}: {text}",
            dev.name()
        );
        assert!(
            text.contains("TILEWISE_STEP_LIMIT"),
            "{}: {text}",
            dev.name()
        );
    }
}
