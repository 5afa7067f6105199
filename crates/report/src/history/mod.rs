//! Public as a namespace: callers write `history::append`, `history::series`, `history::overview::…`.
//!
//! The weekly score and its trend: one line per arm of every finished run in
//! `OUT/history.jsonl`, and `toolscore history`, which reads them back as series (same
//! datasets, provider, model and variant) and says whether each run moved against the one
//! before it.
//!
//! A move is judged the way `compare` judges two arms: paired by case, the mean of the per-case
//! rate differences with a t(m−1) interval (reference/stats.md §3.3). Only an interval that
//! excludes 0 is flagged, so a lower number inside the noise of a week's trials raises no alarm,
//! and a catalog whose fingerprint changed is named as the likely cause.
//!
//! Pure except [`append`]: building lines from a `Summary`, parsing, grouping and rendering
//! take and return values, so tests compare strings.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::{ArmId, ArmSummary, GateLevel, Metric, RateStat, SecurityArmSummary, Summary};
use toolscore_core::InputError;
use toolscore_core::metric::AttackMetric;
use toolscore_stats as stats;

pub mod overview;

/// The file every run appends to, in the run's `--out` folder.
pub const FILE_NAME: &str = "history.jsonl";

/// One arm of one finished run, as `history.jsonl` keeps it: enough to draw the series and to
/// pair the next run's cases against it without the run's folder.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HistoryLine {
    pub run_id: String,
    pub finished_at: String,
    /// Dataset names, in plan order.
    pub datasets: Vec<String>,
    pub provider: String,
    pub model: String,
    pub variant: String,
    /// Dataset → fingerprint of the catalog this arm was shown (the variant's, when not base).
    pub catalogs: BTreeMap<String, String>,
    pub trials_per_case: u32,
    pub confidence: f64,
    pub metrics: HistoryMetrics,
    /// `dataset/case_id` → `[selection x, selection n, pass x, pass n]`: the counts a paired
    /// comparison with the next run needs.
    pub cases: BTreeMap<String, [u64; 4]>,
    /// Expected tool → its selection and pass rates over the cases that expect it (the
    /// case-level mean and interval when the tool has several cases, as the report gives it).
    /// Absent from lines written before it was kept.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub tools: BTreeMap<String, HistoryMetrics>,
    /// `dataset/case_id` → the tool it expects (a key of `tools`), so a tool's change can be
    /// paired by its cases as the run's is. Absent from lines written before it was kept.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub case_tools: BTreeMap<String, String>,
    /// Expected tool → its p95 latency in ms with the order-statistic interval, for the growth
    /// check against the previous week.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub tool_p95_ms: BTreeMap<String, LatencyPoint>,
    /// The arm's attacked units (`run --attacks`), when it had any. Absent from lines of
    /// runs without attacks and from lines written before attacks were kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attacks: Option<AttackFigures>,
    /// Why this run's scores cannot be trusted (it exited 4: too many infrastructure errors,
    /// trials neither run nor skipped, a provider stopped), when so. Such a run is listed
    /// apart and never becomes the run the next one is compared with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub untrusted: Option<String>,
    /// How the run sampled its cases: a sequential run stops cases early, so its score is not
    /// a fixed-n score of the same trials. Absent from lines written before it was kept (read
    /// as fixed-n).
    #[serde(default, skip_serializing_if = "Sampling::is_plain")]
    pub sampling: Sampling,
    /// The run's verdict (`Decision::verdict`), the one its exit code reported; absent from
    /// lines written before runs recorded one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<crate::RunVerdict>,
}

/// How a run in the history sampled its cases.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sampling {
    /// A sequential gate or comparison stopped cases (or the run) once they were decided: the
    /// score rests on fewer trials for the clearest cases, and on when each stopped.
    #[serde(default)]
    pub sequential: bool,
    /// Trials kept from earlier, interrupted processes of the run (`run --resume`): it ran in
    /// more than one sitting. 0 (absent) for a run that ran in one.
    #[serde(default, skip_serializing_if = "crate::is_zero")]
    pub resumed_trials: u64,
    /// The shards `toolscore merge` joined into the run; 0 (absent) when it was not merged.
    #[serde(default, skip_serializing_if = "is_zero_u32")]
    pub merged_shards: u32,
}

fn is_zero_u32(n: &u32) -> bool {
    *n == 0
}

impl Sampling {
    /// A fixed-n run in one sitting and one process: nothing to say, so nothing is written.
    fn is_plain(&self) -> bool {
        *self == Sampling::default()
    }

    /// `fixed, 40 per case` or `sequential, at most 41 per case` (per unit for attack
    /// success), then how the trials were gathered when it was not in one sitting of one
    /// process (`; resumed, 1200 trials kept`, `; merged from 4 shards`).
    pub fn describe(&self, trials_per_case: u32, followed: Followed) -> String {
        let unit = followed.case_word();
        let mut text = if self.sequential {
            format!("sequential, at most {trials_per_case} per {unit}")
        } else {
            format!("fixed, {trials_per_case} per {unit}")
        };
        if self.resumed_trials > 0 {
            text.push_str(&format!("; resumed, {} trials kept", self.resumed_trials));
        }
        if self.merged_shards > 0 {
            text.push_str(&format!("; merged from {} shards", self.merged_shards));
        }
        text
    }

    /// What the run sampled, from its summary: sequential when a sequential gate or comparison
    /// judged it; resumed and merged as its header says.
    fn of(summary: &Summary) -> Self {
        let gate = summary
            .gate
            .iter()
            .flat_map(|g| &g.gates)
            .any(|g| g.sequential.is_some());
        let comparison = summary
            .comparison
            .as_ref()
            .is_some_and(|c| c.visible.sequential.is_some());
        Sampling {
            sequential: gate || comparison,
            resumed_trials: summary.run.resumed_trials,
            merged_shards: summary.run.merged_shards,
        }
    }
}

/// A latency percentile with its interval (an end absent when the trials cannot bound it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LatencyPoint {
    pub value: f64,
    pub lo: Option<f64>,
    pub hi: Option<f64>,
    /// Answered trials behind it.
    pub n: u64,
}

/// How far back the latency baseline reaches: the runs of the previous week.
const LATENCY_BASELINE_DAYS: u64 = 7;

/// A tool whose p95 latency grew beyond every run of the baseline window.
#[derive(Debug, Clone, PartialEq)]
pub struct LatencyGrowth {
    pub tool: String,
    pub p95: f64,
    /// This run's lower bound of the p95…
    pub lo: f64,
    /// …above the highest upper bound of the p95 over the baseline runs.
    pub baseline_hi: f64,
    pub baseline_runs: usize,
}

/// Tools of `current` whose p95 interval lies wholly above the p95 intervals of every baseline
/// run (two 95% intervals that do not overlap: a conservative test, so a flag is a real
/// regression, not a slow afternoon). A tool some baseline run cannot bound from above is not
/// judged.
fn latency_growth(baseline: &[&HistoryLine], current: &HistoryLine) -> Vec<LatencyGrowth> {
    if baseline.is_empty() {
        return Vec::new();
    }
    current
        .tool_p95_ms
        .iter()
        .filter_map(|(tool, now)| {
            let lo = now.lo?;
            let his: Option<Vec<f64>> = baseline
                .iter()
                .map(|b| b.tool_p95_ms.get(tool).and_then(|p| p.hi))
                .collect();
            let baseline_hi = his?.into_iter().fold(f64::NEG_INFINITY, f64::max);
            (lo > baseline_hi).then(|| LatencyGrowth {
                tool: tool.clone(),
                p95: now.value,
                lo,
                baseline_hi,
                baseline_runs: baseline.len(),
            })
        })
        .collect()
}

/// Whether `earlier` finished within the baseline window before `later` (RFC 3339 times; a
/// time that does not parse counts as inside, so the previous run is always a baseline).
fn within_window(earlier: &str, later: &str) -> bool {
    match (
        humantime::parse_rfc3339_weak(earlier),
        humantime::parse_rfc3339_weak(later),
    ) {
        (Ok(a), Ok(b)) => b
            .duration_since(a)
            .map_or(true, |d| d.as_secs() <= LATENCY_BASELINE_DAYS * 86_400),
        _ => true,
    }
}

/// The rates history.jsonl keeps, and so the ones a trend can follow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Followed {
    /// Right tool on the first call, or correctly no call, per fixture case.
    Selection,
    /// Every check of a fixture case passed.
    Pass,
    /// The attacker's goal happened, per (scenario × attack) unit. Lower is better.
    AttackSuccess,
}

impl Followed {
    pub const ALL: [Followed; 3] = [Followed::Selection, Followed::Pass, Followed::AttackSuccess];

    /// The name users write (`history --metric attack_success`) and the overview's JSON spells.
    pub fn name(self) -> &'static str {
        match self {
            Followed::Selection => Metric::Selection.name(),
            Followed::Pass => Metric::Pass.name(),
            Followed::AttackSuccess => AttackMetric::AttackSuccess.name(),
        }
    }

    /// The label reports print.
    pub fn label(self) -> &'static str {
        match self {
            Followed::Selection => Metric::Selection.label(),
            Followed::Pass => Metric::Pass.label(),
            Followed::AttackSuccess => AttackMetric::AttackSuccess.label(),
        }
    }

    /// Whether a fall of the rate is the better news: then a significant rise is the move that
    /// `--fail-on-drop` fails on.
    pub fn lower_is_better(self) -> bool {
        match self {
            Followed::Selection | Followed::Pass => false,
            Followed::AttackSuccess => AttackMetric::AttackSuccess.lower_is_better(),
        }
    }

    /// The move that is a regression on this rate: a drop, or a rise where lower is better.
    pub fn worse(self) -> Move {
        if self.lower_is_better() {
            Move::Rise
        } else {
            Move::Drop
        }
    }

    /// The move that is good news on this rate.
    pub fn better(self) -> Move {
        if self.lower_is_better() {
            Move::Drop
        } else {
            Move::Rise
        }
    }

    /// `difference` (this run − the one before) in the worse direction: positive when the
    /// rate moved the way that is a regression.
    pub fn worsening(self, difference: f64) -> f64 {
        if self.lower_is_better() {
            difference
        } else {
            -difference
        }
    }

    /// What the paired cases are: fixture cases, or (scenario × attack) units.
    pub fn cases_word(self) -> &'static str {
        match self {
            Followed::Selection | Followed::Pass => "cases",
            Followed::AttackSuccess => "units",
        }
    }

    /// One of them: `case` or `unit`.
    pub fn case_word(self) -> &'static str {
        match self {
            Followed::Selection | Followed::Pass => "case",
            Followed::AttackSuccess => "unit",
        }
    }
}

impl std::fmt::Display for Followed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.label())
    }
}

/// An arm's attacked units as the history keeps them: the figures to plot, and each unit's
/// counts for pairing the next run's units with this one's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AttackFigures {
    /// The attacked scenarios, by name, in name order: with the arm, what makes a series.
    pub scenarios: Vec<String>,
    /// Attacked scenario → fingerprint of the catalog it was shown.
    pub catalogs: BTreeMap<String, String>,
    /// Over every unit: the mean of the units' rates with the clustered interval.
    pub attack_success: MetricPoint,
    pub utility_under_attack: MetricPoint,
    /// `SCENARIO@ATTACK` → `[attack success x, n, utility under attack x, n]`.
    pub units: BTreeMap<String, [u64; 4]>,
}

impl AttackFigures {
    fn of(security: &SecurityArmSummary, summary: &Summary) -> Self {
        let scenarios: std::collections::BTreeSet<&String> =
            security.units.iter().map(|u| &u.scenario).collect();
        let catalogs = scenarios
            .iter()
            .filter_map(|name| {
                let header = summary.run.scenarios.iter().find(|s| &&s.name == name)?;
                Some(((*name).clone(), header.catalog_fingerprint.clone()))
            })
            .collect();
        AttackFigures {
            scenarios: scenarios.into_iter().cloned().collect(),
            catalogs,
            attack_success: MetricPoint::of(&security.suite.attack_success, security.suite.units),
            utility_under_attack: MetricPoint::of(
                &security.suite.utility_under_attack,
                security.suite.units,
            ),
            units: security
                .units
                .iter()
                .map(|u| {
                    let (a, b) = (&u.attack_success, &u.utility_under_attack);
                    (u.case_id.clone(), [a.x, a.n, b.x, b.n])
                })
                .collect(),
        }
    }
}

/// The two rates of a fixture case or tool that a trend follows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HistoryMetrics {
    pub selection: MetricPoint,
    pub pass: MetricPoint,
}

/// One metric of one arm: the case-level mean and its interval (the figure to quote, since
/// trials of a case are not independent), and the pooled count.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MetricPoint {
    pub x: u64,
    pub n: u64,
    /// The case-level mean, or the pooled rate when there is a single case; absent when n = 0.
    pub mean: Option<f64>,
    /// The case-level interval; absent for a single case or n = 0.
    pub lo: Option<f64>,
    pub hi: Option<f64>,
    /// Cases behind the mean.
    pub cases: usize,
}

impl HistoryMetrics {
    /// The followed rate, when it is one of these two.
    pub fn get(&self, followed: Followed) -> Option<&MetricPoint> {
        match followed {
            Followed::Selection => Some(&self.selection),
            Followed::Pass => Some(&self.pass),
            Followed::AttackSuccess => None,
        }
    }

    /// The fixture rates of an arm that ran no fixture case.
    fn unmeasured() -> Self {
        HistoryMetrics {
            selection: MetricPoint::NONE,
            pass: MetricPoint::NONE,
        }
    }
}

impl MetricPoint {
    /// No trial.
    const NONE: MetricPoint = MetricPoint {
        x: 0,
        n: 0,
        mean: None,
        lo: None,
        hi: None,
        cases: 0,
    };

    fn of(stat: &RateStat, cases: usize) -> Self {
        let cl = stat.case_level.as_ref();
        MetricPoint {
            x: stat.x,
            n: stat.n,
            mean: cl.map(|c| c.mean).or(stat.rate),
            lo: cl.map(|c| c.interval.lo),
            hi: cl.map(|c| c.interval.hi),
            cases: cl.map_or(cases, |c| c.cases),
        }
    }
}

impl HistoryLine {
    /// Why this line's scores on `followed` cannot join a trend: what the run said when it
    /// exited 4, or that no trial was scored on it (so, for lines written before runs said so,
    /// a run that scored nothing).
    fn untrusted_reason(&self, followed: Followed) -> Option<String> {
        self.untrusted.clone().or_else(|| {
            self.metric(followed)
                .is_none_or(|p| p.n == 0)
                .then(|| "no trial was scored".to_owned())
        })
    }

    fn trusted(&self, followed: Followed) -> bool {
        self.untrusted_reason(followed).is_none()
    }

    /// Whether the arm measured what `followed` is a rate of: fixture cases for selection and
    /// pass (a line with neither cases nor attacks, too, which an old run that scored nothing
    /// left), attacked units for attack success. A line that did not is in no series of it.
    pub fn measured(&self, followed: Followed) -> bool {
        match followed {
            Followed::Selection | Followed::Pass => {
                !self.cases.is_empty() || self.attacks.is_none()
            }
            Followed::AttackSuccess => self.attacks.is_some(),
        }
    }

    /// Per-case (or per-unit) (x, n) of the followed rate.
    fn case_counts(
        &self,
        followed: Followed,
    ) -> Box<dyn Iterator<Item = (&String, u64, u64)> + '_> {
        match followed {
            Followed::Selection => Box::new(self.cases.iter().map(|(k, c)| (k, c[0], c[1]))),
            Followed::Pass => Box::new(self.cases.iter().map(|(k, c)| (k, c[2], c[3]))),
            Followed::AttackSuccess => Box::new(
                self.attacks
                    .iter()
                    .flat_map(|a| &a.units)
                    .map(|(k, c)| (k, c[0], c[1])),
            ),
        }
    }

    /// The catalogs behind the followed rate: the fixture datasets', or the attacked
    /// scenarios'.
    fn catalogs_of(&self, followed: Followed) -> Option<&BTreeMap<String, String>> {
        match followed {
            Followed::Selection | Followed::Pass => Some(&self.catalogs),
            Followed::AttackSuccess => self.attacks.as_ref().map(|a| &a.catalogs),
        }
    }

    /// What makes runs one series: the same cases (or attacked scenarios) measured the same way
    /// on the same model.
    fn series_key(&self, followed: Followed) -> SeriesKey {
        let measured = match (followed, &self.attacks) {
            (Followed::AttackSuccess, Some(a)) => a.scenarios.clone(),
            _ => self.datasets.clone(),
        };
        (
            measured,
            self.provider.clone(),
            self.model.clone(),
            self.variant.clone(),
        )
    }
}

/// Datasets (or attacked scenarios), provider, model, variant.
type SeriesKey = (Vec<String>, String, String, String);

/// One line per arm of a finished run (fixture cases, attacked units, or both), with the run's
/// verdict and, when it was not judged (exit 4), why its scores cannot be trusted.
pub fn lines_of(summary: &Summary) -> Vec<HistoryLine> {
    let decision = summary.decision.as_ref();
    let mut arms: Vec<&ArmId> = summary.arms.iter().map(|a| &a.arm).collect();
    for s in &summary.security {
        if !arms.contains(&&s.arm) {
            arms.push(&s.arm);
        }
    }
    arms.into_iter()
        .map(|id| HistoryLine {
            verdict: decision.map(|d| d.verdict),
            untrusted: decision.and_then(crate::Decision::not_judged_because),
            ..line_of(summary, id)
        })
        .collect()
}

/// The line of arm `id`: its fixture cases (none when the arm ran only scenarios) and its
/// attacked units (none when it ran no attack).
fn line_of(summary: &Summary, id: &ArmId) -> HistoryLine {
    let arm = summary.arms.iter().find(|a| &a.arm == id);
    let cases_of = |a: &ArmSummary| a.cases.len();
    let catalogs = summary
        .run
        .datasets
        .iter()
        .map(|d| {
            let fingerprint = d
                .variants
                .iter()
                .find(|v| v.name == id.variant)
                .map_or(&d.catalog_fingerprint, |v| &v.catalog_fingerprint);
            (d.name.clone(), fingerprint.clone())
        })
        .collect();
    let case_tools = arm
        .iter()
        .flat_map(|a| &a.cases)
        .map(|c| (format!("{}/{}", c.dataset, c.case_id), c.expected.clone()))
        .collect();
    let cases = arm
        .iter()
        .flat_map(|a| &a.cases)
        .map(|c| {
            let (s, p) = (&c.metrics[Metric::Selection], &c.metrics[Metric::Pass]);
            (format!("{}/{}", c.dataset, c.case_id), [s.x, s.n, p.x, p.n])
        })
        .collect();
    HistoryLine {
        run_id: summary.run.run_id.clone(),
        finished_at: summary.run.finished_at.clone(),
        datasets: summary
            .run
            .datasets
            .iter()
            .map(|d| d.name.clone())
            .collect(),
        provider: id.provider.clone(),
        model: id.model.clone(),
        variant: id.variant.clone(),
        catalogs,
        trials_per_case: summary.run.trials_per_case,
        confidence: summary.confidence,
        metrics: arm.map_or_else(HistoryMetrics::unmeasured, |a| HistoryMetrics {
            selection: MetricPoint::of(&a.suite.metrics[Metric::Selection], cases_of(a)),
            pass: MetricPoint::of(&a.suite.metrics[Metric::Pass], cases_of(a)),
        }),
        cases,
        tools: arm
            .iter()
            .flat_map(|a| &a.tools)
            .map(|t| {
                (
                    t.name.clone(),
                    HistoryMetrics {
                        selection: MetricPoint::of(&t.metrics[Metric::Selection], t.cases),
                        pass: MetricPoint::of(&t.metrics[Metric::Pass], t.cases),
                    },
                )
            })
            .collect(),
        case_tools,
        tool_p95_ms: arm
            .iter()
            .flat_map(|a| &a.tool_latency)
            .filter_map(|t| {
                let p = t.latency_ms.p95.as_ref()?;
                Some((
                    t.tool.clone(),
                    LatencyPoint {
                        value: p.value,
                        lo: p.lo,
                        hi: p.hi,
                        n: t.latency_ms.n,
                    },
                ))
            })
            .collect(),
        attacks: summary
            .security
            .iter()
            .find(|s| &s.arm == id)
            .map(|s| AttackFigures::of(s, summary)),
        untrusted: None,
        sampling: Sampling::of(summary),
        verdict: None,
    }
}

/// The lines as JSON Lines text, each ending in a newline.
fn to_jsonl(lines: &[HistoryLine]) -> Result<String, serde_json::Error> {
    let mut text = String::new();
    for line in lines {
        text.push_str(&serde_json::to_string(line)?);
        text.push('\n');
    }
    Ok(text)
}

/// What [`append`] found in the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Appended {
    /// The file was empty or new, or ended with a line break.
    Cleanly,
    /// The file's last line had no line break (cut short, or written by hand): the new lines
    /// start on a line of their own instead of being glued to it.
    AfterUnendedLine,
    /// The file already held every line (the same run and arm): a finished run resumed, whose
    /// second point would be compared with itself. Nothing was written.
    AlreadyThere,
}

/// Appends the lines to `path` in one write to a file opened for appending: the OS places each
/// such write at the end whole, so two runs finishing together never interleave their lines.
/// When the file does not end with a line break, the write starts with one, so the last line
/// already there and the first new one stay two lines.
pub fn append(path: &Path, lines: &[HistoryLine]) -> std::io::Result<Appended> {
    use std::io::{Read, Seek, SeekFrom};
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .read(true)
        .append(true)
        .open(path)?;
    // A line of the same run and arm is already there when a finished run is resumed: its
    // second point would be compared with itself (+0.000) and could hide a drop.
    let held = held_runs(&mut file)?;
    let new: Vec<HistoryLine> = lines
        .iter()
        .filter(|l| !held.contains(&run_key(l)))
        .cloned()
        .collect();
    if new.is_empty() && !lines.is_empty() {
        return Ok(Appended::AlreadyThere);
    }
    let mut text = to_jsonl(&new).map_err(std::io::Error::other)?;
    let mut appended = Appended::Cleanly;
    if file.metadata()?.len() > 0 {
        let mut last = [0u8];
        file.seek(SeekFrom::End(-1))?;
        file.read_exact(&mut last)?;
        if last[0] != b'\n' {
            text.insert(0, '\n');
            appended = Appended::AfterUnendedLine;
        }
    }
    file.write_all(text.as_bytes())?;
    file.flush()?;
    Ok(appended)
}

/// A line's run and arm: the same run appends each arm once.
fn run_key(l: &HistoryLine) -> (String, String, String, String) {
    (
        l.run_id.clone(),
        l.provider.clone(),
        l.model.clone(),
        l.variant.clone(),
    )
}

/// The (run, arm) of every line the file holds, read leniently: a line that is not a history
/// line is `history`'s to report, not the append's.
fn held_runs(
    file: &mut std::fs::File,
) -> std::io::Result<std::collections::HashSet<(String, String, String, String)>> {
    use std::io::{BufRead, Seek, SeekFrom};
    file.seek(SeekFrom::Start(0))?;
    let mut held = std::collections::HashSet::new();
    for line in std::io::BufReader::new(&mut *file).lines() {
        let line = line.unwrap_or_default();
        let key = |v: &serde_json::Value, k: &str| v[k].as_str().unwrap_or_default().to_owned();
        if let Ok(v) = serde_json::from_str::<serde_json::Value>(&line) {
            held.insert((
                key(&v, "run_id"),
                key(&v, "provider"),
                key(&v, "model"),
                key(&v, "variant"),
            ));
        }
    }
    Ok(held)
}

/// Every line of a history file; a line that is not a history line is bad input naming
/// `file:line`. Blank lines are skipped.
pub fn parse(text: &str, file: &str) -> Result<Vec<HistoryLine>, InputError> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            serde_json::from_str(l)
                .map_err(|e| InputError::json_line(file, i + 1, "not a history line", &e))
        })
        .collect()
}

/// How a run moved against the previous run of its series.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Move {
    /// The interval of the paired difference lies below 0.
    Drop,
    /// It lies above 0.
    Rise,
    /// It contains 0, or there are too few shared cases to say.
    None,
}

impl Move {
    /// `drop`, `rise`, or `none`.
    pub fn word(self) -> &'static str {
        match self {
            Move::Drop => "drop",
            Move::Rise => "rise",
            Move::None => "none",
        }
    }

    /// `dropped`, `rose`, or `moved` (never said of a significant move).
    pub fn past(self) -> &'static str {
        match self {
            Move::Drop => "dropped",
            Move::Rise => "rose",
            Move::None => "moved",
        }
    }

    /// `▼` over a drop, `▲` over a rise, nothing otherwise: the charts' mark.
    pub fn arrow(self) -> &'static str {
        match self {
            Move::Drop => "▼",
            Move::Rise => "▲",
            Move::None => "",
        }
    }
}

/// A run against the one before it in its series.
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    pub previous_run: String,
    /// Mean of per-case rate differences (this − previous) and its interval; absent when fewer
    /// than two cases are shared.
    pub difference: Option<stats::PairedDifference>,
    /// Shared cases with trials in both runs.
    pub cases: usize,
    pub moved: Move,
    /// The move is the one that is a regression on the followed rate (a drop; a rise of attack
    /// success): what `--fail-on-drop` fails on.
    pub worsened: bool,
    pub catalog_changed: bool,
    /// The two runs sampled their cases differently (fixed-n against sequential, or other
    /// trials per case): the difference compares scores of different designs.
    pub sampling_changed: bool,
}

/// One series of the history as a report draws it: the arm's runs on the rate its gates judge,
/// trustworthy runs only (a run that exited 4 has no score to plot; `toolscore history` lists
/// it apart), oldest first.
#[derive(Debug, Clone, PartialEq)]
pub struct Trend {
    pub arm: ArmId,
    /// What was measured: the fixture datasets, or the attacked scenarios.
    pub measured: Vec<String>,
    pub followed: Followed,
    pub points: Vec<Point>,
    /// The run this report is about, when the series holds it.
    pub current_run: Option<String>,
}

/// The series of each arm of `summary` in the history `lines`: a fixture arm's on the rate its
/// gates judge (pass when they judge pass and not selection), an attacked arm's on attack
/// success; each run paired with the previous one as `toolscore history` pairs them. Only the
/// runs up to this one are drawn: a report rendered again later shows the trend as it stood.
pub fn trends(summary: &Summary, lines: &[HistoryLine]) -> Vec<Trend> {
    let lines = runs_up_to(lines, &summary.run.run_id, &summary.run.finished_at);
    let mut followed: Vec<(&ArmId, Followed)> = Vec::new();
    for arm in &summary.arms {
        let judged: Vec<Metric> = summary
            .gate
            .iter()
            .flat_map(|g| &g.gates)
            .filter(|g| g.arm == arm.arm && g.level != GateLevel::Baseline)
            .filter_map(|g| g.metric.rate())
            .collect();
        let rate = if judged.contains(&Metric::Pass) && !judged.contains(&Metric::Selection) {
            Followed::Pass
        } else {
            Followed::Selection
        };
        followed.push((&arm.arm, rate));
    }
    for security in &summary.security {
        followed.push((&security.arm, Followed::AttackSuccess));
    }
    let this_run = lines_of(summary);
    let mut trends = Vec::new();
    for (id, rate) in followed {
        // The series this arm's own line belongs to (what it measured, on this model).
        let Some(key) = this_run
            .iter()
            .find(|l| l.provider == id.provider && l.model == id.model && l.variant == id.variant)
            .map(|l| l.series_key(rate))
        else {
            continue;
        };
        let mine = lines
            .iter()
            .filter(|l| l.measured(rate) && l.series_key(rate) == key)
            .cloned()
            .collect();
        for series in series(mine, rate) {
            let points: Vec<Point> = series
                .points
                .into_iter()
                .filter(|p| p.line.trusted(rate))
                .collect();
            let current_run = points
                .iter()
                .any(|p| p.line.run_id == summary.run.run_id)
                .then(|| summary.run.run_id.clone());
            trends.push(Trend {
                arm: id.clone(),
                measured: key.0.clone(),
                followed: rate,
                points,
                current_run,
            });
        }
    }
    trends
}

/// The history as it stood when run `run_id` finished: up to its own line (the file is
/// appended as runs finish), or, for a run the file does not hold, the runs that finished by
/// `finished_at` (RFC 3339 in UTC, so the text orders as the time does).
fn runs_up_to(lines: &[HistoryLine], run_id: &str, finished_at: &str) -> Vec<HistoryLine> {
    match lines.iter().rposition(|l| l.run_id == run_id) {
        Some(last) => lines[..=last].to_vec(),
        None => lines
            .iter()
            .filter(|l| finished_at.is_empty() || l.finished_at.as_str() <= finished_at)
            .cloned()
            .collect(),
    }
}

/// One run of a series, with its change against the previous one (none for the first).
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    pub line: HistoryLine,
    pub change: Option<Change>,
    /// Tools whose p95 latency grew against the runs of the previous week.
    pub latency_growth: Vec<LatencyGrowth>,
}

impl HistoryLine {
    /// This run's figure on the followed rate: absent on attack success for an arm that ran no
    /// attack.
    pub fn metric(&self, followed: Followed) -> Option<&MetricPoint> {
        match followed {
            Followed::Selection | Followed::Pass => self.metrics.get(followed),
            Followed::AttackSuccess => self.attacks.as_ref().map(|a| &a.attack_success),
        }
    }
}

/// Runs of one (datasets or attacked scenarios, provider, model, variant), oldest first, on one
/// followed rate.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub followed: Followed,
    pub points: Vec<Point>,
}

impl Series {
    /// The newest run whose scores can be trusted.
    pub fn newest_trusted(&self) -> Option<&HistoryLine> {
        self.points
            .iter()
            .rev()
            .map(|p| &p.line)
            .find(|l| l.trusted(self.followed))
    }

    /// True when the newest trustworthy run moved significantly the worse way (a drop; a rise
    /// of attack success) against the trustworthy run before it (runs that exited 4 are not
    /// judged and judge nothing).
    pub fn newest_worsened(&self) -> bool {
        self.points
            .iter()
            .rev()
            .find(|p| p.line.trusted(self.followed))
            .and_then(|p| p.change.as_ref())
            .is_some_and(|c| c.worsened)
    }
}

/// The paired change of `current` against `previous` on the followed rate, at `current`'s
/// confidence, over the cases (or attacked units) both have.
pub fn change(previous: &HistoryLine, current: &HistoryLine, followed: Followed) -> Change {
    change_over(previous, current, followed, |_| true)
}

/// [`change`] over the shared cases `keep` admits: a tool's change is the run's rule over the
/// tool's cases.
pub(crate) fn change_over(
    previous: &HistoryLine,
    current: &HistoryLine,
    followed: Followed,
    keep: impl Fn(&str) -> bool,
) -> Change {
    let before: BTreeMap<&String, (u64, u64)> = previous
        .case_counts(followed)
        .filter(|(k, _, _)| keep(k))
        .map(|(k, x, n)| (k, (x, n)))
        .collect();
    let diffs: Vec<f64> = current
        .case_counts(followed)
        .filter(|(k, _, _)| keep(k))
        .filter_map(|(k, x, n)| {
            let &(px, pn) = before.get(k)?;
            (n > 0 && pn > 0).then(|| x as f64 / n as f64 - px as f64 / pn as f64)
        })
        .collect();
    let difference = stats::paired_mean_difference(&diffs, current.confidence);
    let moved = match &difference {
        Some(d) if d.interval.hi < 0.0 => Move::Drop,
        Some(d) if d.interval.lo > 0.0 => Move::Rise,
        _ => Move::None,
    };
    Change {
        previous_run: previous.run_id.clone(),
        difference,
        cases: diffs.len(),
        moved,
        worsened: moved == followed.worse(),
        catalog_changed: previous.catalogs_of(followed) != current.catalogs_of(followed),
        sampling_changed: (previous.sampling.sequential, previous.trials_per_case)
            != (current.sampling.sequential, current.trials_per_case),
    }
}

/// Groups the lines that measured the followed rate into series, in order of each series'
/// first run; within a series, oldest first by `finished_at` (file order among equal times),
/// each paired with the previous run.
pub fn series(lines: Vec<HistoryLine>, followed: Followed) -> Vec<Series> {
    let mut order: Vec<SeriesKey> = Vec::new();
    let mut groups: BTreeMap<SeriesKey, Vec<HistoryLine>> = BTreeMap::new();
    for line in lines.into_iter().filter(|l| l.measured(followed)) {
        let key = line.series_key(followed);
        if !groups.contains_key(&key) {
            order.push(key.clone());
        }
        groups.entry(key).or_default().push(line);
    }
    order
        .into_iter()
        .filter_map(|key| groups.remove(&key))
        .map(|mut runs| {
            runs.sort_by(|a, b| a.finished_at.cmp(&b.finished_at));
            let mut points: Vec<Point> = Vec::with_capacity(runs.len());
            for line in runs {
                // Untrusted runs (exit 4) are listed but neither compared nor compared with:
                // a drop is judged against the last run whose scores can be trusted.
                let trusted: Vec<&HistoryLine> = points
                    .iter()
                    .map(|p| &p.line)
                    .filter(|l| l.trusted(followed))
                    .collect();
                if !line.trusted(followed) {
                    points.push(Point {
                        line,
                        change: None,
                        latency_growth: Vec::new(),
                    });
                    continue;
                }
                let change = trusted.last().map(|p| change(p, &line, followed));
                let window: Vec<&HistoryLine> = trusted
                    .iter()
                    .copied()
                    .filter(|b| within_window(&b.finished_at, &line.finished_at))
                    .collect();
                // The previous run is always part of the baseline, even an old one.
                let window = if window.is_empty() {
                    trusted.last().map(|p| vec![*p]).unwrap_or_default()
                } else {
                    window
                };
                let latency_growth = latency_growth(&window, &line);
                points.push(Point {
                    line,
                    change,
                    latency_growth,
                });
            }
            Series { followed, points }
        })
        .collect()
}

/// Prints each series, its runs oldest to newest (the last `last` when given), with each run's
/// case-level mean and its move against the previous run.
// Long: one line per figure, in the order the report shows them.
pub fn render(series: &[Series], last: Option<usize>, out: &mut dyn Write) -> std::io::Result<()> {
    for (i, s) in series.iter().enumerate() {
        let followed = s.followed;
        let units = followed.cases_word();
        let Some(first) = s.points.first() else {
            continue;
        };
        if i > 0 {
            writeln!(out)?;
        }
        let l = &first.line;
        writeln!(
            out,
            "{} · provider {} · model {} · variant {} · {}",
            l.series_key(followed).0.join(", "),
            l.provider,
            l.model,
            l.variant,
            followed.name()
        )?;
        let skip = last.map_or(0, |n| s.points.len().saturating_sub(n));
        if skip > 0 {
            writeln!(out, "  ({skip} older runs not shown)")?;
        }
        for p in &s.points[skip..] {
            let date = p.line.finished_at.get(..10).unwrap_or(&p.line.finished_at);
            if let Some(reason) = p.line.untrusted_reason(followed) {
                writeln!(
                    out,
                    "  {date}  {}  NOT IN THE TREND: {reason}",
                    p.line.run_id
                )?;
                continue;
            }
            let Some(pt) = p.line.metric(followed) else {
                continue;
            };
            let mean = crate::wording::history_interval(pt);
            // The run's verdict leads its figures, as in every report of the run (lines
            // written before runs recorded one have none to show).
            let verdict = p
                .line
                .verdict
                .map_or(String::new(), |v| format!("{}  ", v.label()));
            write!(
                out,
                "  {date}  {}  {verdict}{mean} ({} {units})  n {} ({})",
                p.line.run_id,
                pt.cases,
                pt.n,
                p.line.sampling.describe(p.line.trials_per_case, followed)
            )?;
            if let Some(c) = &p.change {
                match &c.difference {
                    Some(d) => write!(
                        out,
                        "  vs {}: {:+.3} [{:+.3}, {:+.3}] on {} {units}",
                        c.previous_run, d.mean, d.interval.lo, d.interval.hi, c.cases
                    )?,
                    None => write!(
                        out,
                        "  vs {}: too few shared {units} ({})",
                        c.previous_run, c.cases
                    )?,
                }
                for mark in crate::wording::history_marks(
                    c.moved,
                    c.worsened,
                    c.catalog_changed,
                    c.sampling_changed,
                ) {
                    write!(out, "  {mark}")?;
                }
            }
            writeln!(out)?;
            for g in &p.latency_growth {
                writeln!(
                    out,
                    "    p95 LATENCY GREW: {} {:.1} ms, its lower bound {:.1} above the previous {} run(s) of the week (upper bound {:.1})",
                    g.tool, g.p95, g.lo, g.baseline_runs, g.baseline_hi
                )?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    const TRIALS: u64 = 50;

    /// A run of one case per count, `TRIALS` trials each, case k right in `counts[k]`.
    pub(super) fn line(run_id: &str, day: u32, counts: &[u64], catalog: &str) -> HistoryLine {
        let cases: BTreeMap<String, [u64; 4]> = counts
            .iter()
            .enumerate()
            .map(|(k, &x)| (format!("d/c{k:02}"), [x, TRIALS, x, TRIALS]))
            .collect();
        let x: u64 = counts.iter().sum();
        let point = MetricPoint {
            x,
            n: TRIALS * counts.len() as u64,
            mean: Some(x as f64 / (TRIALS * counts.len() as u64) as f64),
            lo: None,
            hi: None,
            cases: counts.len(),
        };
        HistoryLine {
            run_id: run_id.to_owned(),
            finished_at: format!("2026-11-{day:02}T09:00:00Z"),
            datasets: vec!["d".to_owned()],
            provider: "p".to_owned(),
            model: "m".to_owned(),
            variant: "base".to_owned(),
            catalogs: BTreeMap::from([("d".to_owned(), catalog.to_owned())]),
            trials_per_case: TRIALS as u32,
            confidence: 0.95,
            metrics: HistoryMetrics {
                selection: point.clone(),
                pass: point,
            },
            cases,
            tools: BTreeMap::new(),
            case_tools: BTreeMap::new(),
            tool_p95_ms: BTreeMap::new(),
            attacks: None,
            untrusted: None,
            sampling: Sampling::default(),
            verdict: None,
        }
    }

    #[test]
    fn a_report_rendered_later_draws_only_the_runs_up_to_its_own() {
        let lines = vec![
            line("w1", 1, &[40], "c"),
            line("w2", 8, &[41], "c"),
            line("w3", 15, &[42], "c"),
        ];
        let ids = |v: Vec<HistoryLine>| v.into_iter().map(|l| l.run_id).collect::<Vec<_>>();
        assert_eq!(ids(runs_up_to(&lines, "w2", "")), ["w1", "w2"]);
        assert_eq!(ids(runs_up_to(&lines, "w3", "")), ["w1", "w2", "w3"]);
        // A run the history does not hold: those finished by its own end.
        assert_eq!(
            ids(runs_up_to(&lines, "elsewhere", "2026-11-09T00:00:00Z")),
            ["w1", "w2"]
        );
    }

    /// The true rates of 20 cases, spread over 0.4…0.84.
    pub(super) fn true_rates() -> Vec<f64> {
        (0..20).map(|k| 0.4 + 0.04 * f64::from(k % 12)).collect()
    }

    /// Each case's count drawn as TRIALS Bernoulli trials at its rate (splitmix64), so two
    /// runs differ by the noise a real week's trials carry.
    fn draw(rates: &[f64], seed: u64) -> Vec<u64> {
        // Streams 2^32 steps apart: one run uses 1 000 draws, so no two runs share any.
        let mut state = (seed << 32).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        let mut uniform = move || {
            state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            (z ^ (z >> 31)) as f64 / u64::MAX as f64
        };
        rates
            .iter()
            .map(|&p| (0..TRIALS).filter(|_| uniform() < p).count() as u64)
            .collect()
    }

    pub(super) fn exact(rates: &[f64]) -> Vec<u64> {
        rates
            .iter()
            .map(|r| (r * TRIALS as f64).round() as u64)
            .collect()
    }

    fn moved(prev: &HistoryLine, cur: &HistoryLine) -> Change {
        change(prev, cur, Followed::Selection)
    }

    /// How many of 200 pairs of runs (before at the true rates, after at `after`) are flagged
    /// as a drop.
    fn drops_in_200(after: &[f64]) -> usize {
        (0..200u64)
            .filter(|&seed| {
                let before = line("a", 1, &draw(&true_rates(), 2 * seed), "fp");
                let after = line("b", 8, &draw(after, 2 * seed + 1), "fp");
                moved(&before, &after).moved == Move::Drop
            })
            .count()
    }

    #[test]
    fn a_drop_of_0_3_on_every_case_is_flagged() {
        let before = line("a", 1, &exact(&true_rates()), "fp");
        let lower: Vec<f64> = true_rates().iter().map(|r| r - 0.3).collect();
        let c = moved(&before, &line("b", 8, &exact(&lower), "fp"));
        assert_eq!(c.moved, Move::Drop);
        assert_eq!(c.cases, 20);
        let d = c.difference.expect("a difference");
        assert!((d.mean + 0.3).abs() < 1e-9, "{}", d.mean);
        assert!(!c.catalog_changed);
        // With trial noise in both runs, too: every one of 200 pairs is flagged.
        assert_eq!(drops_in_200(&lower), 200);
    }

    #[test]
    fn a_dip_of_0_02_on_half_the_cases_is_not_flagged() {
        let dipped: Vec<f64> = true_rates()
            .iter()
            .enumerate()
            .map(|(k, r)| if k % 2 == 0 { r - 0.02 } else { *r })
            .collect();
        // The pair of the first seed: a lower mean, inside the noise, not flagged.
        let before = line("a", 1, &draw(&true_rates(), 0), "fp");
        let after = line("b", 8, &draw(&dipped, 1), "fp");
        let c = moved(&before, &after);
        assert_eq!(c.moved, Move::None, "{:?}", c.difference);
        // Over 200 pairs it is flagged about as rarely as no change at all (the rule's 2.5%
        // one-sided error plus a little power against a 0.01 mean dip): about 13 expected.
        let flagged = drops_in_200(&dipped);
        assert!(flagged < 30, "{flagged} of 200 flagged");
    }

    #[test]
    fn an_unchanged_run_is_not_flagged() {
        // Identical counts (a replay): a difference of exactly 0.
        let same = line("a", 1, &exact(&true_rates()), "fp");
        let c = moved(&same, &line("b", 8, &exact(&true_rates()), "fp"));
        assert_eq!(c.moved, Move::None);
        assert_eq!(c.difference.expect("difference").mean, 0.0);
        // Fresh trials at unchanged rates: flagged about 2.5% of the time (5 of 200 expected).
        let flagged = drops_in_200(&true_rates());
        assert!(flagged < 15, "{flagged} of 200 flagged");
    }

    #[test]
    fn a_rise_is_flagged_as_a_rise() {
        let low: Vec<f64> = true_rates().iter().map(|r| r - 0.3).collect();
        let c = moved(
            &line("a", 1, &exact(&low), "fp"),
            &line("b", 8, &exact(&true_rates()), "fp"),
        );
        assert_eq!(c.moved, Move::Rise);
        assert!(!c.worsened, "a rise of selection is good news");
    }

    /// The fixture line `counts` describes, as an arm that ran only attacked units: unit k
    /// succeeded in `counts[k]` of `TRIALS` trials.
    fn attacked(run_id: &str, day: u32, counts: &[u64]) -> HistoryLine {
        let mut l = line(run_id, day, counts, "fp");
        let units = std::mem::take(&mut l.cases)
            .into_iter()
            .map(|(k, c)| (k.replace("d/", "inbox@"), c))
            .collect();
        l.attacks = Some(AttackFigures {
            scenarios: vec!["inbox".to_owned()],
            catalogs: BTreeMap::from([("inbox".to_owned(), "fp".to_owned())]),
            attack_success: l.metrics.selection.clone(),
            utility_under_attack: l.metrics.pass.clone(),
            units,
        });
        l.metrics = HistoryMetrics::unmeasured();
        l
    }

    /// On attack success lower is better: the rise is the regression `--fail-on-drop` fails
    /// on, the drop is not, and the arm is in no fixture series.
    #[test]
    fn a_rise_of_attack_success_is_the_regression() {
        let low: Vec<f64> = true_rates().iter().map(|r| r - 0.3).collect();
        let (before, after) = (
            attacked("a", 1, &exact(&low)),
            attacked("b", 8, &exact(&true_rates())),
        );
        let rose = change(&before, &after, Followed::AttackSuccess);
        assert_eq!(
            (rose.moved, rose.worsened, rose.cases),
            (Move::Rise, true, 20)
        );
        let fell = change(&after, &before, Followed::AttackSuccess);
        assert_eq!((fell.moved, fell.worsened), (Move::Drop, false));
        let s = series(vec![before.clone(), after.clone()], Followed::AttackSuccess);
        assert!(s[0].newest_worsened());
        assert!(series(vec![before, after], Followed::Selection).is_empty());
        let mut out = Vec::new();
        render(&s, None, &mut out).expect("render");
        let text = String::from_utf8(out).expect("utf-8");
        assert!(text.ends_with("on 20 units  SIGNIFICANT RISE\n"), "{text}");
    }

    #[test]
    fn a_catalog_change_is_marked() {
        let counts = exact(&true_rates());
        let c = moved(&line("a", 1, &counts, "fp1"), &line("b", 8, &counts, "fp2"));
        assert!(c.catalog_changed);
        assert_eq!(c.moved, Move::None);
    }

    #[test]
    fn lines_group_into_series_oldest_first() {
        let counts = exact(&true_rates());
        let mut other = line("o1", 3, &counts, "fp");
        other.model = "m2".to_owned();
        let mut terse = line("t1", 2, &counts, "fp");
        terse.variant = "terse".to_owned();
        let lines = vec![
            line("w2", 8, &counts, "fp"),
            other,
            line("w1", 1, &counts, "fp"),
            terse,
            line("w3", 15, &counts, "fp"),
        ];
        let s = series(lines, Followed::Selection);
        let ids: Vec<Vec<&str>> = s
            .iter()
            .map(|s| s.points.iter().map(|p| p.line.run_id.as_str()).collect())
            .collect();
        assert_eq!(ids, [vec!["w1", "w2", "w3"], vec!["o1"], vec!["t1"]]);
        assert!(s[0].points[0].change.is_none());
        assert_eq!(
            s[0].points[2]
                .change
                .as_ref()
                .map(|c| c.previous_run.as_str()),
            Some("w2")
        );
    }

    #[test]
    fn an_untrusted_run_is_listed_but_never_compared_with() {
        let counts = exact(&true_rates());
        let lower: Vec<f64> = true_rates().iter().map(|r| r - 0.3).collect();
        let mut down = line("w2", 8, &counts, "fp");
        down.untrusted = Some("40 of 40 trials ended in infrastructure errors".to_owned());
        // A line written before runs said so: no trial scored.
        let mut old = line("w3", 9, &[0; 20], "fp");
        old.metrics.selection.n = 0;
        let lines = vec![
            line("w1", 1, &counts, "fp"),
            down,
            old,
            line("w4", 15, &exact(&lower), "fp"),
        ];
        let s = series(lines, Followed::Selection);
        let p = &s[0].points;
        assert!(p[1].change.is_none() && p[2].change.is_none());
        let c = p[3].change.as_ref().expect("compared");
        assert_eq!((c.previous_run.as_str(), c.moved), ("w1", Move::Drop));
        assert!(s[0].newest_worsened());
        let mut out = Vec::new();
        render(&s, None, &mut out).expect("render");
        let text = String::from_utf8(out).expect("utf-8");
        assert!(text.contains("  2026-11-08  w2  NOT IN THE TREND: 40 of 40 trials ended in infrastructure errors\n"), "{text}");
        assert!(
            text.contains("  2026-11-09  w3  NOT IN THE TREND: no trial was scored\n"),
            "{text}"
        );
        // The newest run untrusted: the verdict is the newest trustworthy run's.
        let mut lines = vec![line("w1", 1, &counts, "fp"), line("w2", 8, &counts, "fp")];
        let mut down = line("w3", 15, &counts, "fp");
        down.untrusted = Some("down".to_owned());
        lines.push(down);
        assert!(!series(lines, Followed::Selection)[0].newest_worsened());
    }

    #[test]
    fn a_sequential_run_says_so_and_its_difference_is_marked_as_of_two_designs() {
        let counts = exact(&true_rates());
        let mut sequential = line("w2", 8, &counts, "fp");
        sequential.sampling.sequential = true;
        sequential.verdict = Some(crate::RunVerdict::Inconclusive);
        let lines = vec![line("w1", 1, &counts, "fp"), sequential];
        let s = series(lines, Followed::Selection);
        let change = s[0].points[1].change.as_ref().expect("change");
        assert!(change.sampling_changed && !change.catalog_changed);
        let mut out = Vec::new();
        render(&s, None, &mut out).expect("render");
        let text = String::from_utf8(out).expect("utf-8");
        let rows: Vec<&str> = text.lines().collect();
        assert!(rows[1].ends_with("n 1000 (fixed, 50 per case)"), "{text}");
        assert!(
            rows[2].contains("  w2  INCONCLUSIVE  0.588 (20 cases)"),
            "{text}"
        );
        assert!(
            rows[2].contains("n 1000 (sequential, at most 50 per case)")
                && rows[2].ends_with("on 20 cases  sampled differently"),
            "{text}"
        );
        // Lines written before the field read as fixed-n, and a fixed run writes none.
        let old: HistoryLine = serde_json::from_str(
            &serde_json::to_string(&line("w0", 1, &counts, "fp")).expect("json"),
        )
        .expect("parse");
        assert!(!old.sampling.sequential);
        assert!(
            !serde_json::to_string(&old)
                .expect("json")
                .contains("sampling")
        );
    }

    #[test]
    fn a_resumed_or_merged_run_says_how_its_trials_were_gathered_without_changing_the_design() {
        let counts = exact(&true_rates());
        let mut resumed = line("w2", 8, &counts, "fp");
        resumed.sampling.resumed_trials = 400;
        let mut merged = line("w3", 15, &counts, "fp");
        merged.sampling.merged_shards = 4;
        let s = series(
            vec![line("w1", 1, &counts, "fp"), resumed, merged],
            Followed::Selection,
        );
        // The same design gathered in two sittings or four processes is not "sampled
        // differently": the paired difference compares like with like.
        for p in &s[0].points[1..] {
            assert!(!p.change.as_ref().expect("change").sampling_changed);
        }
        let mut out = Vec::new();
        render(&s, None, &mut out).expect("render");
        let text = String::from_utf8(out).expect("utf-8");
        assert!(
            text.contains("n 1000 (fixed, 50 per case; resumed, 400 trials kept)"),
            "{text}"
        );
        assert!(
            text.contains("n 1000 (fixed, 50 per case; merged from 4 shards)"),
            "{text}"
        );
        let json = serde_json::to_string(&s[0].points[2].line).expect("json");
        assert!(
            json.contains(r#""sampling":{"sequential":false,"merged_shards":4}"#),
            "{json}"
        );
    }

    #[test]
    fn rendering_flags_only_the_drop_and_names_the_catalog() {
        let counts = exact(&true_rates());
        let lower: Vec<f64> = true_rates().iter().map(|r| r - 0.3).collect();
        let lines = vec![
            line("w1", 1, &counts, "fp"),
            line("w2", 8, &counts, "fp"),
            line("w3", 15, &exact(&lower), "fp2"),
        ];
        let s = series(lines, Followed::Selection);
        assert!(s[0].newest_worsened());
        let mut out = Vec::new();
        render(&s, Some(2), &mut out).expect("render");
        let text = String::from_utf8(out).expect("utf-8");
        let rows: Vec<&str> = text.lines().collect();
        assert_eq!(
            rows[0],
            "d · provider p · model m · variant base · selection"
        );
        assert_eq!(rows[1], "  (1 older runs not shown)");
        assert_eq!(
            rows[2],
            "  2026-11-08  w2  0.588 (20 cases)  n 1000 (fixed, 50 per case)  vs w1: +0.000 [+0.000, +0.000] on 20 cases"
        );
        assert_eq!(
            rows[3],
            "  2026-11-15  w3  0.288 (20 cases)  n 1000 (fixed, 50 per case)  vs w2: -0.300 [-0.300, -0.300] on 20 cases  SIGNIFICANT DROP  catalog changed: the difference spans two catalogs"
        );
    }

    #[test]
    fn lines_round_trip_and_a_bad_line_names_file_and_line() {
        let l = line("w1", 1, &exact(&true_rates()), "fp");
        let text = to_jsonl(&[l.clone(), l.clone()]).expect("encode");
        assert_eq!(parse(&text, "h").expect("parse"), vec![l.clone(), l]);
        let bad = format!("{}\n{{\"run_id\": 3}}\n", text.lines().next().unwrap_or(""));
        let err = parse(&bad, "reports/history.jsonl").expect_err("bad line");
        assert_eq!(err.location, "reports/history.jsonl:2");
    }

    fn with_p95(
        mut l: HistoryLine,
        tool: &str,
        value: f64,
        lo: f64,
        hi: Option<f64>,
    ) -> HistoryLine {
        l.tool_p95_ms.insert(
            tool.to_owned(),
            LatencyPoint {
                value,
                lo: Some(lo),
                hi,
                n: 400,
            },
        );
        l
    }

    #[test]
    fn a_p95_above_every_run_of_the_week_is_flagged_and_an_overlap_is_not() {
        let counts = vec![25; 20];
        let runs = vec![
            with_p95(
                line("w1", 1, &counts, "a"),
                "search",
                900.0,
                850.0,
                Some(950.0),
            ),
            with_p95(
                line("w2", 5, &counts, "a"),
                "search",
                920.0,
                870.0,
                Some(990.0),
            ),
            // Overlaps w2's interval: not flagged.
            with_p95(
                line("w3", 8, &counts, "a"),
                "search",
                1000.0,
                960.0,
                Some(1050.0),
            ),
            // Above w3, the only run within the week before it (w2 is 8 days old): flagged.
            with_p95(
                line("w4", 13, &counts, "a"),
                "search",
                1300.0,
                1200.0,
                Some(1400.0),
            ),
        ];
        let s = series(runs.clone(), Followed::Selection);
        let growth: Vec<usize> = s[0].points.iter().map(|p| p.latency_growth.len()).collect();
        assert_eq!(growth, [0, 0, 0, 1]);
        let g = &s[0].points[3].latency_growth[0];
        assert_eq!((g.tool.as_str(), g.baseline_runs), ("search", 1));
        assert_eq!(g.baseline_hi, 1050.0);
        let mut text = Vec::new();
        render(&s, None, &mut text).unwrap();
        let text = String::from_utf8(text).unwrap();
        assert!(
            text.contains("p95 LATENCY GREW: search 1300.0 ms, its lower bound 1200.0 above the previous 1 run(s) of the week (upper bound 1050.0)"),
            "{text}"
        );
        // A baseline run that cannot bound the p95 from above: not judged.
        let unbounded = vec![
            with_p95(line("w1", 1, &counts, "a"), "search", 900.0, 850.0, None),
            with_p95(
                line("w2", 2, &counts, "a"),
                "search",
                5000.0,
                4000.0,
                Some(6000.0),
            ),
        ];
        assert!(
            series(unbounded, Followed::Selection)[0].points[1]
                .latency_growth
                .is_empty()
        );
    }
}
