//! The published MCP servers the tests talk to, installed once per machine by
//! `scripts/mcp-servers.sh install` (pinned by scripts/mcp/package-lock.json) with the
//! machine's Node.js and npm.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The node_modules folder holding the servers, or None when Node.js or npm is missing on a
/// developer's machine (the test then returns early and says so). Under `CI=true` a missing
/// Node.js, npm or install fails the test: CI must exercise the real servers.
pub(crate) fn published_servers() -> Option<PathBuf> {
    static INSTALLED: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    let installed = INSTALLED.get_or_init(|| {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let out = std::process::Command::new("bash")
            .arg(root.join("scripts/mcp-servers.sh"))
            .arg("install")
            .output()
            .map_err(|e| format!("cannot run scripts/mcp-servers.sh: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "scripts/mcp-servers.sh install failed: {}",
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        let path = String::from_utf8_lossy(&out.stdout).trim().to_owned();
        Ok(PathBuf::from(path))
    });
    match installed {
        Ok(path) => Some(path.clone()),
        Err(e) if std::env::var("CI").is_ok_and(|v| v == "true") => {
            panic!("the MCP server tests need Node.js and npm under CI: {e}")
        }
        Err(e) => {
            eprintln!("skipped: {e}");
            None
        }
    }
}

/// `node ENTRY` for a server package under `modules` (`@modelcontextprotocol/server-everything`).
pub(crate) fn server_command(modules: &Path, package: &str) -> Vec<String> {
    vec![
        "node".to_owned(),
        modules
            .join(package)
            .join("dist/index.js")
            .display()
            .to_string(),
    ]
}
