#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| mhdb_fuzz::wal_replay(data));
