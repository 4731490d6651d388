//! Scheduling the programs of a grid on one CPU: sequential where that is enough,
//! interleaved where a program waits for another.
//!
//! A GPU runs the programs of a grid concurrently, so a program may spin until another
//! one sets a flag or frees a lock (`while tl.atomic_cas(lock, 0, 1) == 1: pass`).
//! The interpreter and the simulators run one program at a time; run in grid order, a
//! program waiting for a later one would spin forever. Kernels with a `while` loop
//! therefore run each program on its own OS thread, and exactly one of them holds the
//! launch's memory (the [`Baton`]) at a time, so execution stays deterministic and
//! single-threaded in effect. When an iteration of a `while` loop reads memory but
//! changes none, its program hands the baton back ([`Handle::wait`]) and the
//! scheduler runs another: first a waiting program whose memory may have changed since
//! it waited (something was written since), else a program not started yet. When every
//! unfinished program waits and nothing was written since, no program can progress: the
//! launch stops with a diagnostic naming the loop and the programs waiting in it.
//!
//! The baton also counts loop iterations, for the optional step limit
//! (`TILEWISE_STEP_LIMIT`), which guards loops that never touch memory.

use super::HostBuffer;
use crate::diag::{Diagnostic, ErrorKind, Result, Span};
use crate::launch::Grid;
use std::sync::mpsc::{channel, Receiver, Sender};

/// The launch's memory and counters, held by the program that runs.
pub struct Baton<'m> {
    pub bufs: &'m mut [HostBuffer],
    /// Writes that changed memory so far (a store or atomic whose bytes differ).
    pub writes: u64,
    /// Memory reads so far (loads and atomics).
    pub reads: u64,
    /// Loop iterations so far, all programs together.
    pub steps: u64,
}

/// The optional limit on loop iterations a launch may run (`TILEWISE_STEP_LIMIT`).
pub fn step_limit() -> Option<u64> {
    std::env::var("TILEWISE_STEP_LIMIT")
        .ok()
        .and_then(|v| v.trim().replace('_', "").parse().ok())
        .filter(|&n: &u64| n > 0)
}

/// How many programs may be started and unfinished at once (each is a thread).
const MAX_LIVE: usize = 4096;

enum Event<'m> {
    /// The program waits; `span` is its loop.
    Wait(Baton<'m>, Span),
    /// The program ended (or failed).
    Done(Baton<'m>, Result<()>),
    /// The program panicked (a bug); the memory is lost with it.
    Panicked,
}

/// A program's link to the scheduler.
pub struct Handle<'m> {
    index: usize,
    events: Sender<(usize, Event<'m>)>,
    resume: Receiver<Baton<'m>>,
}

impl<'m> Handle<'m> {
    /// Hands the memory back while the program waits in the loop at `span`; returns
    /// it when the program may go on, `None` when the launch was abandoned.
    pub fn wait(&self, baton: Baton<'m>, span: Span) -> Option<Baton<'m>> {
        self.events
            .send((self.index, Event::Wait(baton, span)))
            .ok()?;
        self.resume.recv().ok()
    }
}

/// How a deadlock is described: the loop and the programs waiting in it.
pub type DeadlockReport<'r> = &'r dyn Fn(Span, &[[u32; 3]]) -> Diagnostic;

/// A program started and not finished.
struct Live<'m> {
    pid: [u32; 3],
    resume: Sender<Baton<'m>>,
    /// Waiting in the loop at `.1` since `.0` writes; `None` while it runs.
    waiting: Option<(u64, Span)>,
}

/// Runs the programs of `grid` (in grid order when none waits) with `run_one`, each on
/// its own thread, one at a time. `run_one(pid, baton, handle)` returns the baton and
/// the program's result; a program that waits ([`Handle::wait`]) and is given `None`
/// must return an error (the launch was abandoned).
pub fn run_interleaved<'m, F>(
    grid: Grid,
    baton: Baton<'m>,
    run_one: F,
    deadlock: DeadlockReport<'_>,
) -> Result<()>
where
    F: Fn([u32; 3], Baton<'m>, Handle<'m>) -> (Baton<'m>, Result<()>) + Sync,
{
    let (events_tx, events) = channel::<(usize, Event<'m>)>();
    let total = grid.total();
    // Live programs by slot; a finished program's slot is reused.
    let mut live: Vec<Option<Live<'m>>> = vec![];
    let mut baton = Some(baton);
    let mut next_new = 0u64;
    let mut cursor = 0usize;
    let run_one = &run_one;
    std::thread::scope(|scope| -> Result<()> {
        let outcome = (|| -> Result<()> {
            loop {
                let writes = baton.as_ref().map_or(0, |b| b.writes);
                // A waiting program whose memory may have changed, round robin.
                let n = live.len();
                let woken = (0..n).map(|i| (cursor + i) % n.max(1)).find(|&i| {
                    matches!(&live[i], Some(Live { waiting: Some((w, _)), .. }) if *w < writes)
                });
                let pick = if let Some(i) = woken {
                    i
                } else if next_new < total {
                    let slot = match live.iter().position(Option::is_none) {
                        Some(s) => s,
                        None if live.len() < MAX_LIVE => {
                            live.push(None);
                            live.len() - 1
                        }
                        None => {
                            return Err(Diagnostic::new(
                                ErrorKind::Runtime,
                                format!("more than {MAX_LIVE} programs wait at once; the CPU executors interleave at most that many"),
                            ))
                        }
                    };
                    let pid = grid.pid(next_new);
                    next_new += 1;
                    let (tx, rx) = channel::<Baton<'m>>();
                    let handle = Handle {
                        index: slot,
                        events: events_tx.clone(),
                        resume: rx,
                    };
                    std::thread::Builder::new()
                        .name(format!("tilewise program {pid:?}"))
                        .stack_size(16 << 20)
                        .spawn_scoped(scope, move || {
                            let Ok(b) = handle.resume.recv() else { return };
                            let (events, index) = (handle.events.clone(), handle.index);
                            let run = std::panic::AssertUnwindSafe(|| run_one(pid, b, handle));
                            let event = match std::panic::catch_unwind(run) {
                                Ok((b, r)) => Event::Done(b, r),
                                Err(_) => Event::Panicked,
                            };
                            let _ = events.send((index, event));
                        })
                        .map_err(|e| {
                            Diagnostic::new(
                                ErrorKind::Runtime,
                                format!("could not start a thread for program {pid:?}: {e}"),
                            )
                        })?;
                    live[slot] = Some(Live {
                        pid,
                        resume: tx,
                        waiting: None,
                    });
                    slot
                } else {
                    let waiting: Vec<(Span, [u32; 3])> = live
                        .iter()
                        .flatten()
                        .filter_map(|l| l.waiting.map(|(_, s)| (s, l.pid)))
                        .collect();
                    if waiting.is_empty() {
                        return Ok(());
                    }
                    let span = waiting[0].0;
                    let mut stuck: Vec<[u32; 3]> = waiting
                        .iter()
                        .filter(|(s, _)| *s == span)
                        .map(|(_, p)| *p)
                        .collect();
                    stuck.sort_by_key(|p| [p[2], p[1], p[0]]);
                    return Err(deadlock(span, &stuck));
                };
                cursor = pick + 1;
                let l = live[pick].as_mut().expect("a live program");
                l.waiting = None;
                if l.resume
                    .send(baton.take().expect("the scheduler holds the baton"))
                    .is_err()
                {
                    return Err(Diagnostic::internal("a program thread ended early"));
                }
                match events.recv() {
                    Ok((i, Event::Wait(b, span))) => {
                        if let Some(l) = live[i].as_mut() {
                            l.waiting = Some((b.writes, span));
                        }
                        baton = Some(b);
                    }
                    Ok((i, Event::Done(b, r))) => {
                        live[i] = None;
                        baton = Some(b);
                        r?;
                    }
                    Ok((i, Event::Panicked)) => {
                        let pid = live[i].as_ref().map(|l| l.pid).unwrap_or_default();
                        return Err(Diagnostic::internal(format!(
                            "the CPU executor panicked in program {pid:?}"
                        )));
                    }
                    Err(_) => return Err(Diagnostic::internal("a program thread vanished")),
                }
            }
        })();
        // Dropping the resume channels ends the threads still waiting.
        live.clear();
        outcome
    })
}
