//! The README's main command: the billing dataset replayed from the shipped cassette of
//! SmolLM2-135M responses, on a machine with no key, no server and no model.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

const CASSETTE: &str = "datasets/billing/recordings/smollm2-135m-2026-12-02.cassette.jsonl.gz";

#[test]
fn quickstart_replays_the_shipped_recording_and_says_so() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = tempfile::tempdir().unwrap();
    let run = Command::new(env!("CARGO_BIN_EXE_toolscore"))
        .current_dir(root)
        .args([
            "run",
            "--provider",
            &format!("replay:{CASSETTE}"),
            "--dataset",
            "datasets/billing",
            "--progress",
            "off",
            "--run-id",
            "quickstart",
        ])
        .arg("--out")
        .arg(out.path())
        .output()
        .expect("run toolscore");
    let stdout = String::from_utf8_lossy(&run.stdout);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(
        stdout.contains(&format!(
            "REPLAY: no model was called. Responses replayed from {CASSETTE}"
        )),
        "{stdout}"
    );
    assert!(
        stdout.contains("recorded 2026-12-02T") && stdout.contains("from model `smollm2`"),
        "{stdout}"
    );
    assert!(stdout.contains("SmolLM2-135M-Instruct Q4_1"), "{stdout}");

    let summary: Value = serde_json::from_str(
        &std::fs::read_to_string(out.path().join("quickstart/summary.json")).unwrap(),
    )
    .unwrap();
    let per_case = summary["run"]["trials_per_case"].as_u64().unwrap();
    assert!(
        per_case >= 25,
        "the shipped recording has {per_case} trials per case"
    );
    assert_eq!(summary["planned_trials"], 61 * per_case);
    assert_eq!(summary["completed_trials"], 61 * per_case);
    assert_eq!(summary["arms"][0]["suite"]["cases"], 61);
    let selection = &summary["arms"][0]["suite"]["metrics"]["selection"];
    assert_eq!(
        selection["n"].as_u64().unwrap() + summary["arms"][0]["infra"]["errors"].as_u64().unwrap(),
        61 * per_case
    );
    assert!(selection["case_level"]["cases"].as_u64().unwrap() >= 30);
}
