//! The sharding recipes in examples/shards/ run as written: the GitHub Actions workflow's shell
//! steps (matrix job per shard, artifacts, merge job posting the report to the step summary) and
//! the Kubernetes manifests' container scripts (one pod per JOB_COMPLETION_INDEX on a shared
//! volume, a retried pod resuming its folder, then the merge Job), each as separate processes
//! against a fake OpenAI-compatible provider.

use crate::support;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;
use support::{FakeResponse, FakeServer, copy_dir, fake_project, tool_call_body};

const TOOLS: &str = r#"{"tools": [
  {"name": "get_job_status", "description": "Status of a job.", "inputSchema": {"type": "object", "properties": {"job_id": {"type": "string"}}, "required": ["job_id"]}}
]}"#;

const CASES: &str = r#"{"id": "a", "messages": [{"role": "user", "content": "Is job job_1 done?"}], "expect": {"tool": "get_job_status"}}
{"id": "b", "messages": [{"role": "user", "content": "Job job_1 status?"}], "expect": {"tool": "get_job_status"}}
{"id": "c", "messages": [{"role": "user", "content": "Where is job job_1?"}], "expect": {"tool": "get_job_status"}}
"#;

fn recipe(name: &str) -> String {
    std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("examples/shards")
            .join(name),
    )
    .expect("recipe")
}

/// A suite whose config names the recipes' provider, `openai`, at the fake.
fn project(server: &FakeServer) -> tempfile::TempDir {
    let dir = fake_project(&server.base_url, TOOLS, CASES, &[]);
    std::fs::write(
        dir.path().join("toolscore.yaml"),
        format!(
            "providers:\n  openai:\n    kind: openai-compat\n    base_url: {}\n    model: m\n    api_key_env: OPENAI_API_KEY\ndatasets: [data]\n",
            server.base_url
        ),
    )
    .expect("config");
    dir
}

/// `toolscore` on PATH and at `$HOME/.toolscore/bin/toolscore`, as the recipes install it.
fn install(home: &Path) -> PathBuf {
    let bin = home.join(".toolscore/bin");
    std::fs::create_dir_all(&bin).expect("bin");
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_toolscore"), bin.join("toolscore"))
        .expect("symlink");
    bin
}

struct Shell<'a> {
    home: &'a Path,
    bin: &'a Path,
}

impl Shell<'_> {
    fn run(&self, dir: &Path, script: &str, env: &[(&str, &str)]) -> (i32, String, String) {
        let path = format!(
            "{}:{}",
            self.bin.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let mut cmd = Command::new("/bin/sh");
        support::clear_user_env(&mut cmd)
            .arg("-c")
            .arg(script)
            .current_dir(dir)
            .env("HOME", self.home)
            .env("PATH", path);
        for (k, v) in env {
            cmd.env(k, v);
        }
        let out = cmd.output().expect("sh");
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(!stderr.contains("panicked"), "{stderr}");
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr,
        )
    }
}

/// `${{ … }}` expressions of a workflow replaced with what GitHub would put there.
fn expand(text: &str, shard: Option<&str>) -> String {
    text.replace("${{ matrix.shard }}", shard.unwrap_or(""))
        .replace("${{ github.run_id }}", "7")
        .replace("${{ secrets.OPENAI_API_KEY }}", "test-key")
}

/// Runs one job's steps in `workspace`: shell steps as written (the build step is the test's
/// own binary), artifacts through `artifacts/`.
fn run_job(
    job: &Value,
    shard: Option<&str>,
    workspace: &Path,
    artifacts: &Path,
    sh: &Shell<'_>,
    summary: &Path,
) -> i32 {
    for step in job["steps"].as_array().expect("steps") {
        let uses = step["uses"].as_str().unwrap_or("");
        let with = &step["with"];
        if uses.starts_with("actions/upload-artifact") {
            let name = expand(with["name"].as_str().expect("name"), shard);
            let path = expand(with["path"].as_str().expect("path"), shard);
            copy_dir(&workspace.join(path), &artifacts.join(name));
        } else if uses.starts_with("actions/download-artifact") {
            let pattern = with["pattern"].as_str().expect("pattern");
            let prefix = pattern.trim_end_matches('*');
            let into = workspace.join(with["path"].as_str().expect("path"));
            for entry in std::fs::read_dir(artifacts).expect("artifacts") {
                let name = entry
                    .expect("entry")
                    .file_name()
                    .to_string_lossy()
                    .into_owned();
                if name.starts_with(prefix) {
                    copy_dir(&artifacts.join(&name), &into.join(&name));
                }
            }
        } else if let Some(script) = step["run"].as_str() {
            if script.contains("cargo install") {
                continue;
            }
            let mut env: Vec<(String, String)> = Vec::new();
            if let Some(vars) = step["env"].as_object() {
                for (k, v) in vars {
                    env.push((k.clone(), expand(v.as_str().unwrap_or(""), shard)));
                }
            }
            env.push(("GITHUB_STEP_SUMMARY".into(), summary.display().to_string()));
            let env: Vec<(&str, &str)> =
                env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
            let (code, stdout, stderr) = sh.run(workspace, &expand(script, shard), &env);
            if code != 0 {
                eprintln!("step {:?} exited {code}\n{stdout}\n{stderr}", step["name"]);
                return code;
            }
        }
    }
    0
}

#[test]
fn the_github_actions_matrix_recipe_runs_shards_then_merges_and_posts_the_report() {
    let server = FakeServer::start_in_background(|_| {
        FakeResponse::ok(tool_call_body(&[(
            "get_job_status",
            r#"{"job_id":"job_1"}"#,
        )]))
    });
    let text = recipe("github-shards.yml");
    let workflow: Value = serde_saphyr::from_str(&text).expect("valid YAML");
    let home = tempfile::tempdir().expect("home");
    let bin = install(home.path());
    let sh = Shell {
        home: home.path(),
        bin: &bin,
    };
    let artifacts = tempfile::tempdir().expect("artifacts");
    let summary = home.path().join("step-summary.md");

    let shards = workflow["jobs"]["shard"]["strategy"]["matrix"]["shard"]
        .as_array()
        .expect("matrix")
        .clone();
    assert_eq!(shards.len(), 4);
    for shard in &shards {
        // Every matrix job on its own machine: a fresh checkout.
        let checkout = project(&server);
        let index = shard.to_string();
        let code = run_job(
            &workflow["jobs"]["shard"],
            Some(&index),
            checkout.path(),
            artifacts.path(),
            &sh,
            &summary,
        );
        assert_eq!(code, 0, "shard {index}");
    }
    assert_eq!(workflow["jobs"]["merge"]["needs"], "shard");
    let checkout = project(&server);
    let code = run_job(
        &workflow["jobs"]["merge"],
        None,
        checkout.path(),
        artifacts.path(),
        &sh,
        &summary,
    );
    assert_eq!(code, 0, "merge job");
    let merged: Value = serde_json::from_str(
        &std::fs::read_to_string(checkout.path().join("reports/week-7/summary.json"))
            .expect("merged"),
    )
    .expect("json");
    // 3 cases × 40 trials, all there once, every one right.
    assert_eq!(merged["completed_trials"], 120);
    assert_eq!(merged["planned_trials"], 120);
    assert_eq!(merged["arms"][0]["suite"]["metrics"]["selection"]["x"], 120);
    let posted = std::fs::read_to_string(&summary).expect("step summary");
    assert!(posted.contains("selection"), "{posted}");
    assert!(artifacts.path().join("merged/summary.json").is_file());
}

#[test]
fn the_kubernetes_indexed_job_recipe_runs_pods_on_a_shared_volume_then_the_merge_job() {
    let server = FakeServer::start_in_background(|_| {
        FakeResponse::ok(tool_call_body(&[(
            "get_job_status",
            r#"{"job_id":"job_1"}"#,
        )]))
    });
    let text = recipe("kubernetes-indexed-job.yaml");
    let docs: Vec<Value> = text
        .split("\n---\n")
        .map(|d| serde_saphyr::from_str(d).expect("valid YAML document"))
        .collect();
    let kinds: Vec<&str> = docs.iter().map(|d| d["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["PersistentVolumeClaim", "Job", "Job"]);
    let shards = &docs[1];
    assert_eq!(shards["spec"]["completionMode"], "Indexed");
    let completions = shards["spec"]["completions"].as_u64().expect("completions");
    let container = &shards["spec"]["template"]["spec"]["containers"][0];
    let script = container["args"][0].as_str().expect("script");
    assert!(script.contains(&format!("--shard-count {completions}")));
    let mount = container["volumeMounts"][0]["mountPath"].as_str().unwrap();
    assert_eq!(
        Path::new(mount)
            .strip_prefix(container["workingDir"].as_str().unwrap())
            .unwrap(),
        Path::new("runs")
    );

    // The image's /suite is the project; the shared volume is its runs/ folder.
    let suite = project(&server);
    std::fs::create_dir_all(suite.path().join("runs")).expect("volume");
    let home = tempfile::tempdir().expect("home");
    let bin = install(home.path());
    let sh = Shell {
        home: home.path(),
        bin: &bin,
    };
    for index in 0..completions {
        let index = index.to_string();
        let (code, _, stderr) = sh.run(
            suite.path(),
            script,
            &[
                ("JOB_COMPLETION_INDEX", index.as_str()),
                ("OPENAI_API_KEY", "test-key"),
            ],
        );
        assert_eq!(code, 0, "pod {index}: {stderr}");
    }
    // A retried pod finds its folder and resumes it (nothing left to run).
    let (code, _, stderr) = sh.run(
        suite.path(),
        script,
        &[
            ("JOB_COMPLETION_INDEX", "1"),
            ("OPENAI_API_KEY", "test-key"),
        ],
    );
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("resuming: "), "{stderr}");

    let merge = docs[2]["spec"]["template"]["spec"]["containers"][0]["args"][0]
        .as_str()
        .expect("merge script");
    let (code, stdout, stderr) = sh.run(suite.path(), merge, &[]);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert!(stderr.contains("merged 4 shards (120 trials)"), "{stderr}");
    assert!(suite.path().join("runs/week/merged/report.md").is_file());
}
