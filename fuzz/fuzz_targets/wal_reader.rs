#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| rialto_fuzzing::wal_reader(data));
