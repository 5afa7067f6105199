//! The renderers of what `summary` holds: the terminal report, `report.md`, `report.html`,
//! `junit.xml`, `results.csv`, progress, the stress and probe reports, `history.jsonl` and its
//! trend, and the wording they share.
//!
//! A renderer formats: every figure, verdict and warning it shows is already in the
//! `Summary`, the `Decision` or the comparison it is given (types of `toolscore_summary`), and
//! warnings are data ([`Warning`]) that each renderer words for itself. Nothing here decides
//! or computes a statistic's verdict.
//!
//! `history` is public as a namespace; the other modules are private and the root re-exports
//! the renderers other crates call.

mod comparison;
mod csv;
pub mod history;
mod html;
mod junit;
mod markdown;
mod probe;
mod progress;
mod providers;
mod scenario;
mod security;
mod stress;
mod terminal;
mod tune;
mod wording;

pub use comparison::render_comparison;
pub use csv::ResultsCsv;
pub use html::{
    Html, HtmlContext, compared_cases, explored_cases, render_history_html, render_tune_html,
};
pub use junit::Junit;
pub use markdown::{MAX_CHARS as MARKDOWN_MAX_CHARS, Markdown, render_history_markdown};
pub use probe::{escapes_sarif, render_escapes, render_probe};
pub use progress::{Progress, ProgressMode};
pub use security::render_attack_comparison;
pub use stress::render_stress;
pub use terminal::{Terminal, render_decision, render_explanation, render_verdict};
pub use tune::{render_tune, render_tune_markdown};

// The model the renderers draw, named once here for the modules below (`crate::Summary`).
use toolscore_core::ArmId;
use toolscore_core::metric::{AttackMetric, Metric};
use toolscore_stats::{LatencySummary, Percentile};
use toolscore_summary::{
    ArmInfo, ArmSummary, AttackComparison, CaseComparison, CaseSummary, CaseVerdict, Comparison,
    ComparisonVerdict, CostFigures, Decision, GateLevel, GateReport, GateResult, GroupComparison,
    ProviderDiff, RateStat, RunInfo, RunVerdict, ScenarioArmSummary, ScenarioSummary,
    SecurityArmSummary, SequentialComparison, SequentialInfo, Summary, Verdict, Warning,
};

/// A run's report in one format: the terminal's text, `report.md`, `junit.xml`,
/// `report.html`. Every format renders the same summary through this one signature; what a
/// format shows beyond the summary (the HTML page's comparison and trend) is given to its
/// value before, and no renderer computes a statistic.
pub trait Render {
    fn render(&self, summary: &Summary, out: &mut dyn std::io::Write) -> std::io::Result<()>;
}

/// For `skip_serializing_if`: a count left out of JSON when zero.
pub(crate) fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// What every report says under a replay recorded before requests were sent as written.
pub(crate) const LEGACY_REQUESTS: &str = "recorded when requests sent catalog properties sorted by name and always sent tool_choice auto and parallel_tool_calls true; live runs now send the author's order and only configured fields";
