//! `toolscore probe --security` through the binary, against twins that differ only in whether
//! they are safe: a stdio server in Python (tests/data/mcp/escape_server.py: vulnerable, safe,
//! blind, hostile) and a streamable-HTTP server in process (rmcp's own). Every escape is found
//! on the vulnerable twin, nothing on the safe one; with its proof removed (blind) each check
//! passes, so the verdicts rest on proof; calls per tool stay within the bound; the evidence a
//! hostile server feeds it comes out bounded and inert; a server off this machine is refused.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::support::{self, toolscore, toolscore_env};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn fixture() -> PathBuf {
    root().join("tests/data/mcp/escape_server.py")
}

/// `toolscore probe --security [before…] -- python3 escape_server.py MODE`, in `dir`.
fn probe_stdio(dir: &Path, mode: &str, before: &[&str], env: &[(&str, &str)]) -> support::Run {
    let server = fixture().display().to_string();
    let mut args = vec!["probe", "--security"];
    args.extend_from_slice(before);
    args.extend(["--", "python3", &server, mode]);
    toolscore_env(dir, &args, env)
}

/// The block of one verdict: its `VERDICT check tool.parameter` line and the indented lines
/// under it.
fn verdict_block(stdout: &str, head: &str) -> String {
    let mut lines = stdout.lines().skip_while(|l| *l != head);
    let first = lines
        .next()
        .unwrap_or_else(|| panic!("no `{head}` in:\n{stdout}"));
    let mut block = vec![first];
    block.extend(lines.take_while(|l| l.starts_with("     ")));
    block.join("\n")
}

/// Tool name → calls, from the fixture's log.
fn logged_calls(log: &Path) -> BTreeMap<String, usize> {
    let mut counts = BTreeMap::new();
    for line in std::fs::read_to_string(log).unwrap_or_default().lines() {
        *counts.entry(line.to_owned()).or_default() += 1;
    }
    counts
}

#[test]
fn every_escape_of_the_vulnerable_stdio_twin_is_found_with_its_proof() {
    // As the guide runs it: from the repository, the fixture by its relative path.
    let command =
        "toolscore probe --security -- python3 tests/data/mcp/escape_server.py vulnerable";
    let words = support::shell_words(command);
    let args: Vec<&str> = words[1..].iter().map(String::as_str).collect();
    let run = toolscore(root(), &args);
    assert_eq!(run.code, 1, "{}", run.transcript());
    let out = &run.stdout;
    let traversal = verdict_block(out, "FAIL path-traversal read_note.path");
    assert!(
        traversal.contains("sent: read_note.path = \"../../../../../../../../etc/passwd\"")
            && traversal.contains("proof: the result holds \"root:"),
        "{traversal}"
    );
    let ssrf = verdict_block(out, "FAIL ssrf fetch_page.url");
    assert!(
        ssrf.contains("sent: fetch_page.url = \"http://127.0.0.1:")
            && ssrf.contains("proof: the probe's listener received \"GET /toolscore-probe/"),
        "{ssrf}"
    );
    // A bare host gets a listener of its own, so a request without a token is still its own.
    let host = verdict_block(out, "FAIL ssrf check_status.host");
    assert!(
        host.contains("proof: the probe's listener received \"GET /status HTTP/1.1\""),
        "{host}"
    );
    let shell = verdict_block(out, "FAIL shell-injection make_label.name");
    let token =
        regex::Regex::new(r#"sent: make_label\.name = "\$\(printf 'A%sB' ([a-z0-9]{16})\)""#)
            .unwrap()
            .captures(&shell)
            .unwrap_or_else(|| panic!("{shell}"))[1]
            .to_owned();
    assert!(
        shell.contains(&format!("proof: the result holds \"label: A{token}B\"")),
        "{shell}"
    );
    for warned in [
        "WARN schema-smuggling set_mode.toolscore_probe_extra",
        "WARN schema-smuggling set_mode.mode",
    ] {
        assert!(
            verdict_block(out, warned).contains("proof: accepted without an error"),
            "{out}"
        );
    }
    // A name that could be a file's also gets the traversal payloads; echoing them is no proof.
    assert!(
        out.contains("PASS path-traversal make_label.name\n"),
        "{out}"
    );
    // Nested parameters: a path in an array's objects, a URL in an object, each named by its
    // JSON path. The fixture reads only when every required property around the payload is
    // there (else a tool error), so this proof also says the arguments were valid.
    let nested = verdict_block(out, "FAIL path-traversal export_notes.files[].path");
    assert!(
        nested.contains(
            "sent: export_notes.files[].path = \"../../../../../../../../etc/passwd\"\n     proof: the result holds \"root:"
        ),
        "{nested}"
    );
    assert!(
        verdict_block(out, "FAIL ssrf export_notes.options.notify_url")
            .contains("proof: the probe's listener received \"GET /toolscore-probe/"),
        "{out}"
    );
    assert!(
        out.ends_with("\n14 verdicts: 6 pass, 2 warn, 6 fail, 0 skipped; 21 calls in total\n"),
        "{out}"
    );
    support::assert_guide_quotes_normalized(
        "docs/guides/security-gate.md",
        command,
        &normalized(out),
        normalized,
    );
}

/// Ports and tokens differ from run to run; the guide shows one run's.
fn normalized(text: &str) -> String {
    let port = regex::Regex::new(r"127\.0\.0\.1:\d+").unwrap();
    let token = regex::Regex::new(r"\b(A?)[a-z0-9]{16}(B?)\b").unwrap();
    let text = port.replace_all(text, "127.0.0.1:PORT");
    token.replace_all(&text, "${1}TOKEN${2}").into_owned()
}

#[test]
fn the_safe_stdio_twin_passes_and_its_echo_is_not_accused() {
    let dir = tempfile::tempdir().unwrap();
    let run = probe_stdio(dir.path(), "safe", &[], &[]);
    assert_eq!(run.code, 0, "{}", run.transcript());
    let out = &run.stdout;
    assert!(!out.contains("FAIL ") && !out.contains("WARN "), "{out}");
    let echo = verdict_block(out, "PASS shell-injection make_label.name");
    assert!(
        echo.contains("no proof in 4 calls: 4 answered without the expanded marker; last, an answer \"label: | printf 'A%sB\\n' "),
        "{echo}"
    );
    assert!(
        verdict_block(out, "PASS path-traversal read_note.path")
            .contains("refused with a tool error"),
        "{out}"
    );
    assert!(
        verdict_block(out, "PASS schema-smuggling set_mode.toolscore_probe_extra")
            .contains("a tool error \"unknown property `toolscore_probe_extra`\""),
        "{out}"
    );
    // The nested parameters get every payload, and the safe twin refuses each.
    let nested = verdict_block(out, "PASS path-traversal export_notes.files[].path");
    assert!(
        nested.contains("no proof in 8 calls: 8 refused with a tool error"),
        "{nested}"
    );
    assert!(
        verdict_block(out, "PASS ssrf export_notes.options.notify_url")
            .contains("a tool error \"that webhook's host is not on the allowlist\""),
        "{out}"
    );
    assert!(
        out.ends_with("\n14 verdicts: 14 pass, 0 warn, 0 fail, 0 skipped; 39 calls in total\n"),
        "{out}"
    );
}

/// The blind twin does every unsafe thing but returns no proof of it (and fetches nothing, as
/// a fetch is its own proof): each check passes, so a FAIL is never a guess.
#[test]
fn each_check_passes_once_its_proof_is_removed() {
    let dir = tempfile::tempdir().unwrap();
    let run = probe_stdio(dir.path(), "blind", &[], &[]);
    assert_eq!(run.code, 0, "{}", run.transcript());
    let out = &run.stdout;
    for (head, why) in [
        (
            "PASS path-traversal read_note.path",
            "answered without a line of /etc/passwd or win.ini",
        ),
        (
            "PASS ssrf fetch_page.url",
            "answered, and no request reached the listener",
        ),
        (
            "PASS ssrf check_status.host",
            "answered, and no request reached the listener",
        ),
        (
            "PASS shell-injection make_label.name",
            "4 answered without the expanded marker; last, an answer \"label made\"",
        ),
        (
            "PASS path-traversal export_notes.files[].path",
            "answered without a line of /etc/passwd or win.ini",
        ),
        (
            "PASS ssrf export_notes.options.notify_url",
            "answered, and no request reached the listener",
        ),
    ] {
        assert!(verdict_block(out, head).contains(why), "{head}: {out}");
    }
    assert!(!out.contains("FAIL "), "{out}");
}

#[test]
fn calls_per_tool_stay_within_the_bound_and_a_cut_is_said() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("calls.log");
    let log_env = log.display().to_string();
    let run = probe_stdio(
        dir.path(),
        "safe",
        &["--max-calls", "2", "--format", "json"],
        &[("ESCAPE_LOG", &log_env)],
    );
    assert_eq!(run.code, 0, "{}", run.transcript());
    let report: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let logged = logged_calls(&log);
    let tools = report["tools"].as_array().unwrap();
    assert_eq!(tools.len(), 6);
    for t in tools {
        let name = t["tool"].as_str().unwrap();
        let calls = t["calls"].as_u64().unwrap() as usize;
        assert!(calls <= 2, "{t}");
        assert_eq!(logged.get(name).copied().unwrap_or(0), calls, "{name}");
    }
    assert_eq!(report["calls"], logged.values().sum::<usize>());
    assert_eq!(report["max_calls"], 2);
    let make_label = tools.iter().find(|t| t["tool"] == "make_label").unwrap();
    assert_eq!(make_label["planned"], 13);
    assert_eq!(make_label["cut"], 11);
    // Round robin: the bound cuts depth, so the name's two checks each got a payload.
    let verdicts = report["verdicts"].as_array().unwrap();
    for check in ["path-traversal", "shell-injection"] {
        let v = verdicts
            .iter()
            .find(|v| v["tool"] == "make_label" && v["check"] == check)
            .unwrap();
        assert_eq!(v["calls"], 1, "{v}");
        assert_eq!(v["verdict"], "pass", "{v}");
    }
    // A check the bound left without a call is SKIP, and says why.
    let skipped: Vec<&serde_json::Value> =
        verdicts.iter().filter(|v| v["verdict"] == "skip").collect();
    assert!(!skipped.is_empty(), "{}", run.stdout);
    assert!(
        skipped[0]["evidence"]
            .as_str()
            .unwrap()
            .contains("the bound of 2 calls per tool was reached first")
    );

    // The text says so per tool; without the bound no tool reaches 20.
    std::fs::remove_file(&log).unwrap();
    let text = probe_stdio(
        dir.path(),
        "safe",
        &["--max-calls", "2"],
        &[("ESCAPE_LOG", &log_env)],
    );
    assert!(
        text.stdout.contains(
            "calls per tool (at most 2):\n  read_note       2  (7 of 9 payloads cut by the bound)\n"
        ),
        "{}",
        text.stdout
    );
    assert!(
        text.stdout
            .contains("  make_label      2  (11 of 13 payloads cut by the bound)\n"),
        "{}",
        text.stdout
    );
    std::fs::remove_file(&log).unwrap();
    let full = probe_stdio(dir.path(), "safe", &[], &[("ESCAPE_LOG", &log_env)]);
    assert_eq!(full.code, 0, "{}", full.transcript());
    let logged = logged_calls(&log);
    assert!(logged.values().all(|n| *n <= 20), "{logged:?}");
    assert_eq!(logged.get("make_label"), Some(&13), "{logged:?}");
}

/// A tool that stops answering costs two timeouts, not the bound: its other payloads are not
/// sent, the report says why, and the next tool is probed as usual.
#[test]
fn a_tool_that_stops_answering_is_given_up_on() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("calls.log");
    let log_env = log.display().to_string();
    let started = Instant::now();
    let run = probe_stdio(
        dir.path(),
        "silent",
        &["--timeout", "1"],
        &[("ESCAPE_LOG", &log_env)],
    );
    assert_eq!(run.code, 0, "{}", run.transcript());
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(logged_calls(&log).get("read_note"), Some(&2));
    let out = &run.stdout;
    assert!(
        verdict_block(out, "PASS path-traversal read_note.path").contains(
            "no proof in 1 call: 1 got no answer within the timeout; 7 more payloads not sent: the tool stopped answering"
        ),
        "{out}"
    );
    assert!(
        out.contains("  read_note       2  (7 not sent: the tool stopped answering)\n"),
        "{out}"
    );
    assert!(
        verdict_block(out, "PASS shell-injection make_label.name").contains("no proof in 4 calls"),
        "{out}"
    );
}

#[test]
fn json_and_sarif_read_back() {
    let dir = tempfile::tempdir().unwrap();
    let run = probe_stdio(
        dir.path(),
        "vulnerable",
        &["--format", "sarif", "--json", "escapes.json"],
        &[],
    );
    assert_eq!(run.code, 1, "{}", run.transcript());
    let sarif: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(sarif["version"], "2.1.0");
    let sarif_run = &sarif["runs"][0];
    let rules: Vec<&str> = sarif_run["tool"]["driver"]["rules"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        rules,
        [
            "path-traversal",
            "ssrf",
            "shell-injection",
            "schema-smuggling"
        ]
    );
    let results = sarif_run["results"].as_array().unwrap();
    let levels: Vec<(&str, &str, &str)> = results
        .iter()
        .map(|r| {
            let index = r["ruleIndex"].as_u64().unwrap() as usize;
            assert_eq!(rules[index], r["ruleId"]);
            (
                r["ruleId"].as_str().unwrap(),
                r["level"].as_str().unwrap(),
                r["locations"][0]["logicalLocations"][0]["fullyQualifiedName"]
                    .as_str()
                    .unwrap(),
            )
        })
        .collect();
    assert_eq!(
        levels,
        [
            ("path-traversal", "error", "read_note.path"),
            ("ssrf", "error", "fetch_page.url"),
            ("ssrf", "error", "check_status.host"),
            ("shell-injection", "error", "make_label.name"),
            (
                "schema-smuggling",
                "warning",
                "set_mode.toolscore_probe_extra"
            ),
            ("schema-smuggling", "warning", "set_mode.mode"),
            ("path-traversal", "error", "export_notes.files[].path"),
            ("ssrf", "error", "export_notes.options.notify_url"),
        ]
    );
    assert!(
        results[0]["message"]["text"].as_str().unwrap().starts_with(
            "read_note.path = \"../../../../../../../../etc/passwd\": the result holds \"root:"
        ),
        "{}",
        results[0]
    );

    // The fixture by an absolute path is no file of the repository: no physical location.
    assert!(results[0]["locations"][0]["physicalLocation"].is_null());
    // By a path under the current folder, code scanning can place each result in it.
    let here = toolscore(
        root(),
        &[
            "probe",
            "--security",
            "--format",
            "sarif",
            "--",
            "python3",
            "tests/data/mcp/escape_server.py",
            "vulnerable",
        ],
    );
    assert_eq!(here.code, 1, "{}", here.transcript());
    let placed: serde_json::Value = serde_json::from_str(&here.stdout).unwrap();
    for r in placed["runs"][0]["results"].as_array().unwrap() {
        assert_eq!(
            r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
            "tests/data/mcp/escape_server.py"
        );
    }

    // --json FILE and --format json write the same report.
    let file: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("escapes.json")).unwrap())
            .unwrap();
    assert_eq!(file["server"]["name"], "escape-vulnerable");
    let verdicts = file["verdicts"].as_array().unwrap();
    assert_eq!(verdicts.len(), 14);
    let fail = verdicts
        .iter()
        .find(|v| v["check"] == "shell-injection")
        .unwrap();
    assert_eq!(fail["verdict"], "fail");
    assert_eq!(fail["tool"], "make_label");
    assert_eq!(fail["parameter"], "name");
    assert!(
        fail["sent"]
            .as_str()
            .unwrap()
            .starts_with("make_label.name = \"$(printf")
    );
    assert_eq!(file["calls"], 21);
    let nested = verdicts
        .iter()
        .find(|v| v["tool"] == "export_notes" && v["check"] == "path-traversal")
        .unwrap();
    assert_eq!(nested["parameter"], "files[].path");
    assert_eq!(nested["verdict"], "fail");
    let json = probe_stdio(dir.path(), "vulnerable", &["--format", "json"], &[]);
    assert_eq!(json.code, 1, "{}", json.transcript());
    let again: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(again["verdicts"].as_array().unwrap().len(), 14);
    assert_eq!(again["max_calls"], 20);

    // SARIF holds escape findings; the edge checks have none.
    let edge = toolscore(
        dir.path(),
        &["probe", "--format", "sarif", "--", "python3", "x.py"],
    );
    assert_eq!(edge.code, 2, "{}", edge.transcript());
}

/// A dataset folder whose dataset.yaml names the server is probed the same way.
#[test]
fn a_datasets_live_server_is_probed() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("notes");
    std::fs::create_dir_all(&data).unwrap();
    std::fs::write(
        data.join("dataset.yaml"),
        format!(
            "catalog:\n  command: python3\n  args: [{}, vulnerable]\n",
            fixture().display()
        ),
    )
    .unwrap();
    let run = toolscore(dir.path(), &["probe", "--security", "notes"]);
    assert_eq!(run.code, 1, "{}", run.transcript());
    assert!(
        run.stdout.contains("FAIL path-traversal read_note.path\n"),
        "{}",
        run.stdout
    );
    let sarif = toolscore(
        dir.path(),
        &["probe", "--security", "notes/", "--format", "sarif"],
    );
    assert_eq!(sarif.code, 1, "{}", sarif.transcript());
    let v: serde_json::Value = serde_json::from_str(&sarif.stdout).unwrap();
    assert_eq!(
        v["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
        "notes/dataset.yaml"
    );
    // Expected calls belong to the edge checks.
    let both = toolscore(
        dir.path(),
        &["probe", "--security", "notes", "--dataset", "notes"],
    );
    assert_eq!(both.code, 2, "{}", both.transcript());
}

/// A test double of a vulnerable server on Windows (the fixture's `windows` mode resolves
/// paths as Windows does, on a folder standing for drive C: that holds win.ini and no
/// /etc/passwd): the POSIX payloads find nothing, and a Windows one proves the escape with
/// win.ini's own first line.
#[test]
fn a_windows_servers_win_ini_proves_a_traversal() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("calls.log");
    let log_env = log.display().to_string();
    let run = probe_stdio(dir.path(), "windows", &[], &[("ESCAPE_LOG", &log_env)]);
    assert_eq!(run.code, 1, "{}", run.transcript());
    let out = &run.stdout;
    let traversal = verdict_block(out, "FAIL path-traversal read_note.path");
    assert!(
        traversal.contains(
            "sent: read_note.path = \"..\\..\\..\\..\\..\\..\\..\\..\\Windows\\win.ini\"\n     proof: the result holds \"; for 16-bit app support\""
        ),
        "{traversal}"
    );
    // Round robin: the four POSIX payloads went first and proved nothing on Windows; the
    // first Windows one did (and a wrong type went between them).
    let report_calls = logged_calls(&log);
    assert_eq!(report_calls.get("read_note"), Some(&6), "{report_calls:?}");
    assert!(
        verdict_block(out, "FAIL path-traversal export_notes.files[].path")
            .contains("proof: the result holds \"; for 16-bit app support\""),
        "{out}"
    );
}

/// `--sarif-artifact PATH` points every result at a file of the repository, which a URL
/// SOURCE cannot name; without it, a URL's SARIF keeps only logical locations and stderr says
/// code scanning needs more; a path that is not the repository's is refused before any call.
#[test]
fn sarif_points_at_the_named_artifact_and_a_url_without_one_is_warned() {
    let notes = notes_folder();
    let folder = notes.path().canonicalize().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (url, _calls) = http_twin::start(false, folder);
    let sarif = |extra: &[&str]| {
        let mut args = vec!["probe", "--security", url.as_str(), "--format", "sarif"];
        args.extend_from_slice(extra);
        let run = toolscore(dir.path(), &args);
        assert_eq!(run.code, 1, "{}", run.transcript());
        let v: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
        (v, run.stderr)
    };

    let (placed, stderr) = sarif(&["--sarif-artifact", "./server//main.py"]);
    let results = placed["runs"][0]["results"].as_array().unwrap();
    assert_eq!(results.len(), 3, "{placed}");
    for r in results {
        assert_eq!(
            r["locations"][0]["physicalLocation"],
            serde_json::json!({"artifactLocation": {"uri": "server/main.py"},
                               "region": {"startLine": 1}}),
            "{r}"
        );
    }
    assert!(!stderr.contains("warning"), "{stderr}");

    let (unplaced, stderr) = sarif(&[]);
    let results = unplaced["runs"][0]["results"].as_array().unwrap();
    assert_eq!(results.len(), 3, "{unplaced}");
    for r in results {
        assert!(r["locations"][0]["physicalLocation"].is_null(), "{r}");
        assert!(r["locations"][0]["logicalLocations"][0]["fullyQualifiedName"].is_string());
    }
    assert!(
        stderr.contains(&format!("warning: {url} names no file of the repository, so the SARIF results have only a logical location (tool.parameter); GitHub code scanning needs a physical location: name the file that defines the server with --sarif-artifact PATH")),
        "{stderr}"
    );
    // The guide quotes that warning as it is, for a server at port 8000.
    let warning = stderr.lines().find(|l| l.starts_with("warning: ")).unwrap();
    let guide = std::fs::read_to_string(root().join("docs/guides/security-gate.md")).unwrap();
    let port = regex::Regex::new(r"127\.0\.0\.1:\d+").unwrap();
    assert!(
        guide.contains(&*port.replace_all(warning, "127.0.0.1:8000")),
        "the guide does not quote: {warning}"
    );

    // The flag wins over what toolscore infers from a stdio command.
    let here = toolscore(
        root(),
        &[
            "probe",
            "--security",
            "--format",
            "sarif",
            "--sarif-artifact",
            "server/main.py",
            "--",
            "python3",
            "tests/data/mcp/escape_server.py",
            "vulnerable",
        ],
    );
    assert_eq!(here.code, 1, "{}", here.transcript());
    let v: serde_json::Value = serde_json::from_str(&here.stdout).unwrap();
    assert_eq!(
        v["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
        "server/main.py"
    );

    // Refused with exit 2 before any call (port 9 has no server: a call would say so).
    for (path, why) in [
        ("/srv/app/main.py", "an absolute path"),
        ("../main.py", "a path with `..` may leave the repository"),
        (
            "server/../../main.py",
            "a path with `..` may leave the repository",
        ),
        ("C:/app/main.py", "a URL or a drive"),
        ("https://example.com/main.py", "a URL or a drive"),
        ("server\\main.py", "write the path with / between folders"),
        ("", "names no file"),
    ] {
        let run = toolscore(
            dir.path(),
            &[
                "probe",
                "--security",
                "--format",
                "sarif",
                "--sarif-artifact",
                path,
                "http://127.0.0.1:9/mcp",
            ],
        );
        assert_eq!(run.code, 2, "{path}: {}", run.transcript());
        assert!(
            run.stderr
                .contains(&format!("--sarif-artifact \"{path}\": {why}")),
            "{path}: {}",
            run.stderr
        );
        assert!(!run.stderr.contains("cannot connect"), "{}", run.stderr);
    }
    // It names SARIF's file: another format has none.
    let text = toolscore(
        dir.path(),
        &[
            "probe",
            "--security",
            "--sarif-artifact",
            "main.py",
            "http://127.0.0.1:9/mcp",
        ],
    );
    assert_eq!(text.code, 2, "{}", text.transcript());
    assert!(
        text.stderr.contains("it needs --format sarif"),
        "{}",
        text.stderr
    );
}

#[test]
fn a_server_off_this_machine_is_refused_before_any_call() {
    let dir = tempfile::tempdir().unwrap();
    let started = Instant::now();
    // 192.0.2.1 is TEST-NET-1: nothing answers there, so a call would hang until the timeout.
    let run = toolscore(
        dir.path(),
        &[
            "probe",
            "--security",
            "http://192.0.2.1:8080/mcp?key=secret",
        ],
    );
    assert_eq!(run.code, 2, "{}", run.transcript());
    assert!(started.elapsed() < Duration::from_secs(10));
    assert!(
        run.stderr.contains("http://192.0.2.1:8080/mcp: --security probes only a server on this machine (127.0.0.0/8, ::1, localhost); point it at a local test instance"),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains("secret") && !run.stderr.contains("cannot connect"));
    // --max-calls means nothing without --security.
    let stray = toolscore(
        dir.path(),
        &["probe", "--max-calls", "3", "http://127.0.0.1:9/mcp"],
    );
    assert_eq!(stray.code, 2, "{}", stray.transcript());
    let zero = toolscore(
        dir.path(),
        &[
            "probe",
            "--security",
            "--max-calls",
            "0",
            "http://127.0.0.1:9/mcp",
        ],
    );
    assert_eq!(zero.code, 2, "{}", zero.transcript());
}

#[test]
fn hostile_output_comes_out_bounded_and_inert() {
    let dir = tempfile::tempdir().unwrap();
    for format in ["text", "json", "sarif"] {
        let run = probe_stdio(dir.path(), "hostile", &["--format", format], &[]);
        assert_eq!(run.code, 1, "{}", run.transcript());
        let raw = &run.stdout;
        assert!(
            !raw.chars().any(|c| c.is_control() && c != '\n'),
            "{format}: a control character reached the output:\n{raw:?}"
        );
        assert!(
            raw.lines().all(|l| l.chars().count() < 700),
            "{format}: an unbounded line"
        );
        assert!(raw.len() < 20_000, "{format}: {} bytes", raw.len());
        // Parsed back, no string holds a control character either.
        if format != "text" {
            let v: serde_json::Value = serde_json::from_str(raw).unwrap();
            let text = v.to_string();
            assert!(
                !text.contains("\\u001b") && !text.contains("\\u0007"),
                "{text}"
            );
        }
    }
    let run = probe_stdio(dir.path(), "hostile", &[], &[]);
    assert!(
        run.stdout
            .contains("proof: the result holds \"root:x:0:0:\\u{1b}[5mroot:/root:/bin/sh\""),
        "{}",
        run.stdout
    );
    let shell = verdict_block(&run.stdout, "FAIL shell-injection make_label.name");
    assert!(shell.contains("proof: the result holds \"…yyyy"), "{shell}");
    // What the server says of itself, its tools' names and their parameters' are inert too.
    assert!(
        run.stdout
            .contains("server: escape-hostile\\u{1b}]0;owned\\u{7} 1.0.0"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout
            .contains("PASS path-traversal \\u{1b}[31mevil\\u{1b}[0m.file\\u{1b}[2J\n"),
        "{}",
        run.stdout
    );
}

// ---------------------------------------------------------------------------------------------
// The HTTP twins: rmcp's streamable-HTTP server, in process.

mod http_twin {
    use std::collections::BTreeMap;
    use std::path::PathBuf;
    use std::sync::{Arc, Mutex};

    use rmcp::model::{
        CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
        ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig,
    };
    use rmcp::service::{MaybeSendFuture, RequestContext};
    use rmcp::{ErrorData, RoleServer, ServerHandler};

    use crate::support::mcp_http::{mcp_tool, no_front, serve_mcp};

    pub(super) type Calls = Arc<Mutex<BTreeMap<String, usize>>>;

    /// read_note(path), fetch_page(url), make_label(name): unsafe or safe, counting calls.
    #[derive(Clone)]
    pub(super) struct Twin {
        pub safe: bool,
        pub notes: PathBuf,
        pub calls: Calls,
    }

    fn string_tool(name: &str, description: &str, param: &str) -> rmcp::model::Tool {
        mcp_tool(
            name,
            description,
            serde_json::json!({"type": "object",
                "properties": {param: {"type": "string"}}, "required": [param]}),
        )
    }

    fn answer(text: String, is_error: bool) -> Result<CallToolResponse, ErrorData> {
        let blocks = vec![ContentBlock::text(text)];
        Ok(CallToolResponse::Complete(if is_error {
            CallToolResult::error(blocks)
        } else {
            CallToolResult::success(blocks)
        }))
    }

    impl Twin {
        async fn call(
            &self,
            name: &str,
            arg: Option<String>,
        ) -> Result<CallToolResponse, ErrorData> {
            let Some(arg) = arg else {
                return answer("the argument must be a string".into(), true);
            };
            match name {
                "read_note" => {
                    let full = self.notes.join(&arg);
                    if self.safe {
                        let inside = full
                            .canonicalize()
                            .is_ok_and(|p| p.starts_with(&self.notes));
                        if !inside {
                            return answer("that note is outside the notes folder".into(), true);
                        }
                    }
                    match std::fs::read_to_string(&full) {
                        Ok(body) => answer(body, false),
                        Err(e) => answer(format!("no such note: {}", e.kind()), true),
                    }
                }
                "fetch_page" => {
                    if self.safe {
                        return answer("that host is not on the allowlist".into(), true);
                    }
                    let client = reqwest::Client::builder()
                        .no_proxy()
                        .timeout(std::time::Duration::from_secs(2))
                        .build()
                        .expect("client");
                    match client.get(&arg).send().await {
                        Ok(r) => answer(r.text().await.unwrap_or_default(), false),
                        Err(_) => answer("fetch failed".into(), true),
                    }
                }
                "make_label" => {
                    if self.safe {
                        return answer(format!("label: {arg}"), false);
                    }
                    let out = tokio::process::Command::new("sh")
                        .arg("-c")
                        .arg(format!("echo {arg}"))
                        .output()
                        .await
                        .expect("sh");
                    answer(
                        format!("label: {}", String::from_utf8_lossy(&out.stdout)),
                        false,
                    )
                }
                other => Err(ErrorData::invalid_params(
                    format!("Unknown tool: {other}"),
                    None,
                )),
            }
        }
    }

    impl ServerHandler for Twin {
        fn get_info(&self) -> ServerConfig {
            let name = if self.safe {
                "twin-safe"
            } else {
                "twin-vulnerable"
            };
            ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
                .with_server_info(Implementation::new(name, "1.0.0"))
        }

        fn list_tools(
            &self,
            _request: Option<PaginatedRequestParams>,
            _context: RequestContext<RoleServer>,
        ) -> impl Future<Output = Result<ListToolsResult, ErrorData>> + MaybeSendFuture + '_
        {
            std::future::ready(Ok(ListToolsResult::with_all_items(vec![
                string_tool("read_note", "Read a note.", "path"),
                string_tool("fetch_page", "Fetch a page.", "url"),
                string_tool("make_label", "Make a label.", "name"),
            ])))
        }

        async fn call_tool(
            &self,
            request: CallToolRequestParams,
            _context: RequestContext<RoleServer>,
        ) -> Result<CallToolResponse, ErrorData> {
            let name = request.name.to_string();
            *self.calls.lock().unwrap().entry(name.clone()).or_default() += 1;
            let arg = request
                .arguments
                .as_ref()
                .and_then(|a| a.values().next())
                .and_then(|v| v.as_str())
                .map(str::to_owned);
            self.call(&name, arg).await
        }
    }

    /// Serves a twin; returns its URL and its call counts.
    pub(super) fn start(safe: bool, notes: PathBuf) -> (String, Calls) {
        let calls: Calls = Arc::default();
        let twin = Twin {
            safe,
            notes,
            calls: Arc::clone(&calls),
        };
        (serve_mcp(move || twin.clone(), no_front()), calls)
    }
}

fn notes_folder() -> tempfile::TempDir {
    let notes = tempfile::tempdir().unwrap();
    std::fs::write(notes.path().join("welcome.txt"), "Welcome.\n").unwrap();
    notes
}

#[test]
fn the_http_twins_vulnerable_and_safe() {
    let notes = notes_folder();
    let folder = notes.path().canonicalize().unwrap();
    let dir = tempfile::tempdir().unwrap();

    let (url, calls) = http_twin::start(false, folder.clone());
    let run = toolscore(
        dir.path(),
        &["probe", "--security", &url, "--max-calls", "6"],
    );
    assert_eq!(run.code, 1, "{}", run.transcript());
    let out = &run.stdout;
    assert!(
        verdict_block(out, "FAIL path-traversal read_note.path")
            .contains("proof: the result holds \"root:"),
        "{out}"
    );
    assert!(
        verdict_block(out, "FAIL ssrf fetch_page.url")
            .contains("proof: the probe's listener received \"GET /toolscore-probe/"),
        "{out}"
    );
    assert!(
        verdict_block(out, "FAIL shell-injection make_label.name")
            .contains("proof: the result holds \"label: A"),
        "{out}"
    );
    assert!(out.starts_with(&format!(
        "escape probes of {url}\nserver: twin-vulnerable 1.0.0"
    )));
    let counted: BTreeMap<String, usize> = calls.lock().unwrap().clone();
    assert!(counted.values().all(|n| *n <= 6), "{counted:?}");

    let (url, calls) = http_twin::start(true, folder);
    let run = toolscore(
        dir.path(),
        &["probe", "--security", &url, "--max-calls", "6"],
    );
    assert_eq!(run.code, 0, "{}", run.transcript());
    let out = &run.stdout;
    assert!(!out.contains("FAIL ") && !out.contains("WARN "), "{out}");
    assert!(
        verdict_block(out, "PASS shell-injection make_label.name")
            .contains("answered without the expanded marker"),
        "{out}"
    );
    let counted: BTreeMap<String, usize> = calls.lock().unwrap().clone();
    // make_label has 13 payloads (8 traversal, 4 shell, a wrong type): the bound cuts 7.
    assert_eq!(counted.get("make_label"), Some(&6), "{counted:?}");
    assert!(
        out.contains("make_label    6  (7 of 13 payloads cut by the bound)"),
        "{out}"
    );
}
