//! Tool catalogs (MCP / OpenAI shapes) and the JSON Schema validators compiled from them.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data)
        && let Ok(catalog) = toolscore_core::catalog::parse_catalog(text, "tools.json")
    {
        let _ = toolscore_score::ToolValidators::compile(&catalog);
    }
});
