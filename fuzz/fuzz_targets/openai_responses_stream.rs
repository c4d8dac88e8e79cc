#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| duet::fuzzing::openai_responses_stream(data));
