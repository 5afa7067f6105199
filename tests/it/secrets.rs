//! The API key never reaches a file, a log line or the terminal, whatever the provider does
//! with it: a server that echoes the Authorization header into error bodies (placed so that
//! the 300-character excerpt would cut the key in two) and into 200 bodies (text and
//! arguments), a recording, trace logging. Every 12-character piece of the canary is looked
//! for in everything written.

use crate::support;

use std::collections::HashMap;
use std::path::Path;
use std::sync::Mutex;

use support::{FakeRequest, FakeResponse, FakeServer, toolscore_env};

const TOOLS: &str = r#"{"tools": [{"name": "echo", "description": "Echo.", "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}}]}"#;
const CASES: &str = r#"{"id": "a", "messages": [{"role": "user", "content": "say a"}], "expect": {"tool": "echo"}}
{"id": "b", "messages": [{"role": "user", "content": "say b"}], "expect": {"tool": null}}
"#;

fn canary() -> String {
    // 158 characters, like the key that leaked 77 characters before this was fixed.
    let mut key = String::from("sk-canary-");
    let mut x: u64 = 0x2545_F491_4F6C_DD1D;
    while key.len() < 158 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        key.push(char::from(
            b"abcdefghijklmnopqrstuvwxyz0123456789"[(x % 36) as usize],
        ));
    }
    key
}

fn echoing_server() -> FakeServer {
    let seen: Mutex<HashMap<String, u32>> = Mutex::new(HashMap::new());
    FakeServer::start_in_background(move |req: &FakeRequest| {
        let auth = req.header("authorization").unwrap_or_default().to_owned();
        let user = support::last_user_message(req).unwrap_or_default();
        let n = {
            let mut seen = seen.lock().expect("lock");
            let n = seen.entry(user.clone()).or_insert(0);
            *n += 1;
            *n
        };
        match n % 3 {
            // A 500 whose message quotes the header 250 characters in: a 300-character excerpt
            // taken before redaction would keep the first 50 characters of the key.
            1 => FakeResponse::status(
                500,
                format!(
                    r#"{{"error":{{"message":"{} rejected header {auth}","type":"server_error"}}}}"#,
                    "x".repeat(230)
                ),
            ),
            // A 200 that echoes the key in its text and in a tool call's arguments.
            2 => FakeResponse::ok(support::tool_call_body(&[(
                "echo",
                &format!(r#"{{"text":"{auth}"}}"#),
            )])),
            _ => FakeResponse::ok(support::text_body(&format!("your key is {auth}"))),
        }
    })
}

fn every_file(dir: &Path, out: &mut Vec<(String, Vec<u8>)>) {
    for entry in std::fs::read_dir(dir).expect("read dir") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            every_file(&path, out);
        } else {
            let mut bytes = std::fs::read(&path).expect("read file");
            if path.extension().is_some_and(|e| e == "gz") {
                use std::io::Read;
                let mut text = Vec::new();
                flate2::read::MultiGzDecoder::new(&bytes[..])
                    .read_to_end(&mut text)
                    .expect("gunzip");
                bytes = text;
            }
            out.push((path.display().to_string(), bytes));
        }
    }
}

#[test]
fn no_piece_of_the_key_is_written_anywhere() {
    let server = echoing_server();
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir_all(dir.path().join("data")).expect("mkdir");
    std::fs::write(dir.path().join("data/tools.json"), TOOLS).expect("tools");
    std::fs::write(dir.path().join("data/cases.jsonl"), CASES).expect("cases");
    let key = canary();
    let run = toolscore_env(
        dir.path(),
        &[
            "run",
            "--provider",
            "openai-compat",
            "--base-url",
            &server.base_url,
            "--model",
            "m",
            "--api-key-env",
            "CANARY_KEY",
            "--dataset",
            "data",
            "--trials",
            "6",
            "--max-retries",
            "0",
            "--max-infra-error-rate",
            "1",
            "--record",
            "rec/canary.cassette.jsonl.gz",
            "--out",
            "out",
            "--progress",
            "lines",
        ],
        &[("CANARY_KEY", &key), ("TOOLSCORE_LOG", "trace")],
    );
    assert_eq!(run.code, 0, "{}", run.transcript());
    assert!(server.requests_seen() >= 12);

    let mut written = Vec::new();
    every_file(dir.path(), &mut written);
    written.push(("stdout".into(), run.stdout.clone().into_bytes()));
    written.push(("stderr".into(), run.stderr.clone().into_bytes()));
    let names: Vec<&str> = written.iter().map(|(n, _)| n.as_str()).collect();
    assert!(
        names.iter().any(|n| n.ends_with("results.jsonl")),
        "{names:?}"
    );
    assert!(
        names
            .iter()
            .any(|n| n.ends_with("canary.cassette.jsonl.gz")),
        "{names:?}"
    );
    // The server did echo it: the redaction marker is in the records.
    let results = written
        .iter()
        .find(|(n, _)| n.ends_with("results.jsonl"))
        .map(|(_, b)| String::from_utf8_lossy(b).into_owned())
        .unwrap_or_default();
    assert!(results.contains("[REDACTED]"), "{results}");
    let pieces: Vec<&str> = (0..=key.len() - 12)
        .map(|i| &key[i..i + 12])
        .filter(|p| !p.starts_with("sk-canary-"))
        .collect();
    for (name, bytes) in &written {
        let text = String::from_utf8_lossy(bytes);
        for piece in &pieces {
            assert!(!text.contains(piece), "{name} holds `{piece}` of the key");
        }
    }
}
