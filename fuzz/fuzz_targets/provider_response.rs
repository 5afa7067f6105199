//! Response and error bodies of the OpenAI-compatible adapter.
#![no_main]

use libfuzzer_sys::fuzz_target;
use toolscore_provider::Adapter;
use toolscore_provider::OPENAI_COMPAT_KIND;

fuzz_target!(|data: &[u8]| {
    let adapter: &dyn Adapter = OPENAI_COMPAT_KIND.adapter();
    let _ = adapter.decode_response(data);
    let _ = adapter.error_from_status(500, data);
});
