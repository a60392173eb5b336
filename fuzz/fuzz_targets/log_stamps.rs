#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| server::fuzzing::log_stamps(data));
