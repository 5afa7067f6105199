//! The README's quick start, `toolscore run`: the billing dataset replayed from the shipped
//! cassette of SmolLM2-135M responses, on a machine with no key, no server and no model.

use crate::support;

use std::path::Path;

use serde_json::Value;
use support::toolscore;

const CASSETTE: &str = "datasets/billing/recordings/smollm2-135m-2026-12-02.cassette.jsonl.gz";

#[test]
fn quickstart_replays_the_shipped_recording_and_says_so() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = tempfile::tempdir().unwrap();
    // Runs in the repository (the dataset and cassette paths are relative to it), so the
    // filter replaces the repository path, not the temp folder the output goes to.
    let out_dir = out.path().to_str().expect("utf-8 temp path");
    let run = toolscore(
        root,
        &[
            "run",
            "--provider",
            &format!("replay:{CASSETTE}"),
            "--dataset",
            "datasets/billing",
            "--progress",
            "off",
            "--run-id",
            "quickstart",
            "--out",
            out_dir,
        ],
    );
    let (stdout, stderr) = (&run.stdout, &run.stderr);
    assert_eq!(run.code, 0, "{stdout}\n{stderr}");
    assert!(
        stdout.contains(&format!(
            "REPLAY: no model was called. Responses replayed from {CASSETTE}"
        )),
        "{stdout}"
    );
    assert!(
        stdout.contains("recorded [TIME] from model `smollm2`"),
        "{stdout}"
    );
    assert!(stdout.contains("SmolLM2-135M-Instruct Q4_1"), "{stdout}");

    let summary: Value = serde_json::from_str(
        &std::fs::read_to_string(out.path().join("quickstart/summary.json")).unwrap(),
    )
    .unwrap();
    // The terminal shows the recording time as `[TIME]` once filtered; its date is checked here.
    let recorded_at = summary["run"]["arms"][0]["replay"]["recorded_at"]
        .as_str()
        .expect("recorded_at");
    assert!(recorded_at.starts_with("2026-12-02T"), "{recorded_at}");
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

    // "Cases needed" is solved with t(m−1), not z (250 with z, 253 with t at these rates).
    let suite_warning = summary["arms"][0]["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["kind"] == "suite_imprecise" && w["metric"] == "selection")
        .expect("a suite-level warning for selection");
    assert_eq!(suite_warning["cases_needed"], 253, "{suite_warning}");

    // The report a newcomer sees (the decision first, the detail behind --detail), which the
    // README and docs/getting-started/quick-start.md quote in excerpt: a change is a reviewed
    // snapshot diff.
    insta::assert_snapshot!("quickstart_report", stdout.replace(out_dir, "[OUT]"));
}

/// The first command a newcomer types, `toolscore run` with no flags in the repository, does
/// the main job offline: toolscore.yaml's default provider replays the shipped recording.
#[test]
fn run_with_no_flags_replays_the_configured_demo() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = tempfile::tempdir().unwrap();
    let out_dir = out.path().to_str().expect("utf-8 temp path");
    let run = toolscore(
        root,
        &[
            "run",
            "--progress",
            "off",
            "--run-id",
            "bare",
            "--out",
            out_dir,
        ],
    );
    assert_eq!(run.code, 0, "{}", run.transcript());
    assert!(
        run.stdout.contains(&format!(
            "REPLAY: no model was called. Responses replayed from {CASSETTE}"
        )),
        "{}",
        run.stdout
    );
    let summary: Value = serde_json::from_str(
        &std::fs::read_to_string(out.path().join("bare/summary.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(summary["arms"][0]["arm"]["provider"], "demo");
    assert_eq!(summary["completed_trials"], 2440);
}
