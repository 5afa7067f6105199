//! `toolscore plan`, through the binary: its numbers are the reference vectors of
//! reference/stats.md (§2.2 Wilson sample size, §2.3 exact gate sample size for the exact
//! (Clopper–Pearson) gate, recomputed by direct binomial sums in Python, §6.3 expected
//! trials of the SPRT, and of the default sequential gate against a separate implementation),
//! and `--from` plans from an earlier run's spread and token usage.

use crate::support;

use std::path::Path;

use support::toolscore;

const TOOLS: &str = r#"{"tools": [{"name": "lookup", "description": "Look something up.", "inputSchema": {"type": "object", "properties": {}}}]}"#;
const ONE_CASE: &str = r#"{"id": "only", "messages": [{"role": "user", "content": "look it up"}], "expect": {"tool": "lookup"}}
"#;

#[test]
fn the_plan_for_one_case_reproduces_the_reference_vectors() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir_all(dir.path().join("data")).expect("mkdir");
    std::fs::write(dir.path().join("data/tools.json"), TOOLS).expect("tools");
    std::fs::write(dir.path().join("data/cases.jsonl"), ONE_CASE).expect("cases");
    let run = toolscore(
        dir.path(),
        &[
            "plan",
            "--dataset",
            "data",
            "--gate",
            "pass>=0.9",
            "--max-trials",
            "1000",
            "--json",
            "plan.json",
        ],
    );
    assert_eq!(run.code, 0, "{}", run.transcript());
    let plan = support::read_json(&dir.path().join("plan.json"));
    // §2.2: ±0.05 at 95% needs 381 trials at p = 0.5, 141 at p = 0.9, 83 at p = 0.95.
    let rows = plan["precision_rows"].as_array().expect("rows");
    let at = |p: f64| {
        rows.iter()
            .find(|r| r["rate"] == p)
            .map(|r| r["trials_per_case"].clone())
    };
    assert_eq!(at(0.5), Some(381.into()));
    assert_eq!(at(0.9), Some(141.into()));
    assert_eq!(at(0.95), Some(83.into()));
    // §2.3's search for the exact gate: t = 0.90, true p = 0.95, 80% power: first n 179
    // (168 successes, false-pass 0.0486 at t), stable 203. (The Wilson gate's were 164/154/188.)
    let gate = &plan["gates"][0];
    let row = gate["rows"]
        .as_array()
        .expect("gate rows")
        .iter()
        .find(|r| r["true_rate"] == 0.95)
        .expect("row at 0.95");
    assert_eq!(
        (&row["first"], &row["stable"], &row["min_successes"]),
        (&179.into(), &203.into(), &168.into())
    );
    // §6.3 (t 0.90, p1 0.95, alpha = beta = 0.05 with one case, N_max 1000): Wald's SPRT on
    // both sides, `--sprt-p1 0.95 --fail-below 0.95`, has E[N] 34.4 at 0.80, 143.1 at 0.90,
    // 167.0 at 0.95 (stopping a case once it cannot decide by 1,000 trials changes these by
    // less than 0.001); the fixed-n exact gate with the same guarantees needs 298 trials.
    let expected = |test: &str, p: f64| {
        gate[test]
            .as_array()
            .expect("rows")
            .iter()
            .find(|r| r["true_rate"] == p)
            .and_then(|r| r["expected_trials"].as_f64())
            .expect("row")
    };
    assert!((expected("sprt_fail_below", 0.8) - 34.4).abs() < 0.05);
    assert!((expected("sprt_fail_below", 0.9) - 143.1).abs() < 0.05);
    assert!((expected("sprt_fail_below", 0.95) - 167.0).abs() < 0.05);
    assert_eq!(gate["sequential_fixed_trials"], 298);
    // The default of --sequential (PASS by the mixture SPRT, FAIL only when the anytime-valid
    // upper bound is below the bar) and --sprt-p1 0.95 (PASS by the SPRT, the same FAIL),
    // against a separate Python dynamic program of the gate as it runs (a case stops once it
    // cannot decide by 1,000 trials). At the bar neither side may decide often, so a case
    // there runs long: 893 trials.
    for (test, p, want) in [
        ("sequential", 0.8, 83.0905),
        ("sequential", 0.9, 893.1025),
        ("sequential", 0.95, 189.1553),
        ("sequential", 0.975, 74.4623),
        ("sprt", 0.9, 895.6720),
        ("sprt", 0.95, 180.3397),
    ] {
        let got = expected(test, p);
        assert!((got - want).abs() < 5e-4, "{test} at {p}: {got}");
    }
    let fails_at_bar = gate["sequential"]
        .as_array()
        .expect("rows")
        .iter()
        .find(|r| r["true_rate"] == 0.9)
        .and_then(|r| r["p_fail"].as_f64())
        .expect("row");
    assert!((fails_at_bar - 0.033441).abs() < 5e-7, "{fails_at_bar}");
    assert!(
        run.stdout
            .contains("--sequential (mixture SPRT, no guess of the true rate)"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains(
            "both: pass a case at or below 0.9 at most 0.050 of the time, fail one at or above it at most 0.0500 (anytime-valid); the fixed-n gate with these guarantees and power 0.9500 at 0.95 needs 298 trials per case"
        ),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains(
            "--sequential --sprt-p1 0.95 --fail-below 0.95 (Wald's SPRT; an indifference zone"
        ),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("stable from    203"), "{}", run.stdout);

    // --compare: the sequential comparison with A at 0.8 on the one case, exact (one case and
    // 300 rounds are well within the dynamic program's work limit).
    let compare = toolscore(
        dir.path(),
        &[
            "plan",
            "--dataset",
            "data",
            "--compare",
            "--min-effect",
            "0.2",
            "--max-trials",
            "300",
            "--json",
            "cmp.json",
        ],
    );
    assert_eq!(compare.code, 0, "{}", compare.transcript());
    let c = &support::read_json(&dir.path().join("cmp.json"))["comparison"];
    assert_eq!(
        (
            c["min_effect"].as_f64(),
            c["a_rate"].as_f64(),
            c["exact"].as_bool()
        ),
        (Some(0.2), Some(0.8), Some(true))
    );
    let rows = c["rows"].as_array().expect("rows");
    let of = |d: f64| -> Vec<f64> {
        let r = rows.iter().find(|r| r["true_value"] == d).expect("row");
        r["shares"]
            .as_array()
            .expect("shares")
            .iter()
            .map(|x| x.as_f64().expect("share"))
            .collect()
    };
    // No difference: "better" or "worse" at most α of the time, and the shares sum to 1.
    let none = of(0.0);
    assert!(none[0] + none[1] <= 0.05, "{none:?}");
    assert!((none.iter().sum::<f64>() - 1.0).abs() < 1e-9, "{none:?}");
    // B 0.4 below A: found worse nearly always.
    assert!(of(-0.4)[1] > 0.95, "{:?}", of(-0.4));
    assert!(
        compare.stdout.contains(
            "run --compare --sequential at --min-effect 0.2, A at 0.8 on every case (exact: a dynamic program over the counts after each round):"
        ),
        "{}",
        compare.stdout
    );
    // An exact row has no Monte Carlo error to show.
    assert!(
        compare
            .stdout
            .lines()
            .filter(|l| l.starts_with("  B − A"))
            .all(|l| l.contains("expected rounds") && !l.contains('±')),
        "{}",
        compare.stdout
    );
    assert!(run.stdout.contains("give --from RUN_DIR"), "{}", run.stdout);
}

#[test]
fn planning_from_an_earlier_run_uses_its_spread_and_token_usage() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = tempfile::tempdir().expect("tempdir");
    let out_dir = out.path().to_str().expect("utf-8");
    let run = toolscore(
        root,
        &[
            "run",
            "--progress",
            "off",
            "--run-id",
            "week",
            "--out",
            out_dir,
        ],
    );
    assert_eq!(run.code, 0, "{}", run.transcript());
    let from = out.path().join("week");
    let plan = toolscore(
        root,
        &[
            "plan",
            "--from",
            from.to_str().expect("utf-8"),
            "--json",
            out.path().join("plan.json").to_str().expect("utf-8"),
        ],
    );
    assert_eq!(plan.code, 0, "{}", plan.transcript());
    let p = support::read_json(&out.path().join("plan.json"));
    assert_eq!(p["tokens"]["source"], "run week");
    assert!(p["tokens"]["input_per_request"].as_f64().expect("tokens") > 100.0);
    let summary = support::read_json(&from.join("summary.json"));
    let suite = &summary["arms"][0]["suite"]["metrics"]["selection"]["case_level"];
    // The spread is the earlier run's: s = se * sqrt(m).
    let spread = suite["se"].as_f64().expect("se") * 61f64.sqrt();
    assert!((p["suite_cases"]["spread"].as_f64().expect("spread") - spread).abs() < 1e-9);
    assert_eq!(p["suite_cases"]["cases_now"], 61);
    // The spread of SmolLM2's case rates is wide: far more cases than 61 for ±0.05.
    assert!(p["suite_cases"]["cases_needed"].as_u64().expect("cases") > 61);
    assert!(
        plan.stdout.contains("observed median case rate"),
        "{}",
        plan.stdout
    );
}
