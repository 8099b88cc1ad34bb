//! Measures how many bytes a piece of code takes from the global allocator.
//!
//! [`CountingAllocator`] wraps the system allocator and keeps, per thread, the bytes currently
//! allocated by that thread and their high-water mark. [`measure`] runs a closure and reports
//! the peak growth during it. Install the allocator in the binary that runs the targets (the
//! cargo-fuzz `resp_decode` target and the corpus test do):
//!
//! ```ignore
//! #[global_allocator]
//! static ALLOC: rialto_fuzzing::alloc_meter::CountingAllocator =
//!     rialto_fuzzing::alloc_meter::CountingAllocator;
//! ```
//!
//! Counters are thread-local so that concurrent tests (the test harness runs several threads)
//! do not see each other's allocations. Bytes freed on another thread than the one that
//! allocated them move the counters of the freeing thread; peaks are taken relative to the
//! start of the measurement, so that only makes a measurement smaller, never larger.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

/// The system allocator, with per-thread byte counters. See the [module docs](self).
pub struct CountingAllocator;

thread_local! {
    // `const` initialisers and no destructors: accessing these never allocates, so the
    // allocator may touch them.
    static LIVE: Cell<isize> = const { Cell::new(0) };
    static PEAK: Cell<isize> = const { Cell::new(0) };
}

fn record(delta: isize) {
    // `try_with` fails only while the thread is being torn down; such allocations are not ours
    // to measure.
    let _ = LIVE.try_with(|live| {
        let now = live.get().wrapping_add(delta);
        live.set(now);
        let _ = PEAK.try_with(|peak| {
            if now > peak.get() {
                peak.set(now);
            }
        });
    });
}

fn signed(n: usize) -> isize {
    isize::try_from(n).unwrap_or(isize::MAX)
}

// SAFETY: every method forwards to `System` with the caller's arguments unchanged and only
// updates thread-local counters, which never allocate.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = System.alloc(layout);
        if !p.is_null() {
            record(signed(layout.size()));
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = System.alloc_zeroed(layout);
        if !p.is_null() {
            record(signed(layout.size()));
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout);
        record(-signed(layout.size()));
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = System.realloc(ptr, layout, new_size);
        if !p.is_null() {
            record(signed(new_size) - signed(layout.size()));
        }
        p
    }
}

fn live() -> isize {
    LIVE.with(Cell::get)
}

/// True when [`CountingAllocator`] is the global allocator of this binary: a probe allocation
/// moves the counter.
pub fn is_installed() -> bool {
    let before = live();
    let probe = std::hint::black_box(Box::new([0u8; 64]));
    let moved = live() - before >= 64;
    drop(probe);
    moved
}

/// Runs `f` and returns its result with the peak number of bytes allocated on this thread
/// during the call, above what was allocated when it started; `None` when the counting
/// allocator is not installed. Calls may nest.
pub fn measure<R>(f: impl FnOnce() -> R) -> (R, Option<usize>) {
    let installed = is_installed();
    let start = live();
    let outer_peak = PEAK.with(|p| p.replace(start));
    let result = f();
    let peak = PEAK.with(|p| p.replace(outer_peak.max(p.get())));
    let grown = usize::try_from(peak - start).unwrap_or(0);
    (result, installed.then_some(grown))
}
