#![no_main]

// The counting allocator lets the target check its allocation bound.
#[global_allocator]
static ALLOC: rialto_fuzzing::alloc_meter::CountingAllocator =
    rialto_fuzzing::alloc_meter::CountingAllocator;

libfuzzer_sys::fuzz_target!(|data: &[u8]| rialto_fuzzing::resp_decode(data));
