//! Software prefetch: asks the CPU to start loading cache lines that a lookup is about to
//! read, so that their misses overlap instead of arriving one after another. Pure hints: a
//! prefetch never faults and never changes what the program reads.

/// Bytes of a cache line on the CPUs we target.
pub(crate) const LINE: usize = 64;

/// Starts loading the cache line at `p`, whatever `p` is.
#[inline(always)]
pub(crate) fn line<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: SSE is part of the x86_64 baseline, and a prefetch reads nothing the program
    // sees and cannot fault, whatever the address.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p.cast::<i8>())
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// Starts loading every cache line of `bytes`, at most `max_lines` of them.
#[inline]
pub(crate) fn bytes(bytes: &[u8], max_lines: usize) {
    let start = bytes.as_ptr() as usize;
    let first = start & !(LINE - 1);
    let end = start + bytes.len();
    let mut at = first;
    let mut n = 0;
    while at < end && n < max_lines {
        line(at as *const u8);
        at += LINE;
        n += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefetching_any_slice_or_pointer_is_harmless() {
        let v = vec![7u8; 1000];
        bytes(&v, 64);
        bytes(&v[3..5], 1);
        bytes(&v[999..], 0);
        bytes(&[], 64);
        line(std::ptr::null::<u8>());
        line(usize::MAX as *const u64);
        assert!(v.iter().all(|&b| b == 7));
    }
}
