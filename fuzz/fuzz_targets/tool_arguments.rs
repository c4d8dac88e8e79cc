#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| duet::fuzzing::tool_arguments(data));
