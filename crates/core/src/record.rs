//! Value types every downstream module shares: the record of one trial (`TrialRecord`), how it
//! ended, how it was scored, and the identity of the arm that produced it.
//!
//! Imports nothing of the crate but `message`, so `runner`, `report`, `provider` and `score`
//! can all depend on it without depending on each other.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::message::{ModelTurn, Usage};

/// How a trial ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The model did what the fixture expects.
    Pass,
    /// The model answered and got it wrong (see `score.failure`).
    Fail,
    /// No usable answer (timeout, 5xx after retries, quota…): not scored.
    Error,
    /// `--max-cost` could not cover the trial's next request, so it ended between two steps of
    /// its conversation: neither judged nor an infrastructure error (the run's budget, not
    /// the provider, stopped it). Its spend so far is in `cost`.
    BudgetStopped,
}

impl Outcome {
    /// Whether the trial was judged (passed or failed): neither an infrastructure error nor
    /// stopped by the budget.
    pub fn is_judged(self) -> bool {
        matches!(self, Outcome::Pass | Outcome::Fail)
    }
}

/// One line of `results.jsonl`: self-describing, enough to re-score and re-aggregate a run
/// without calling the model again and without the plan (`summary::reaggregate`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrialRecord {
    pub run_id: String,
    pub dataset: String,
    pub case_id: String,
    /// The arm (provider × catalog variant) that ran this trial.
    #[serde(flatten)]
    pub arm: ArmId,
    pub trial_index: u32,
    /// What the case expects, as a label for grouping (`create_quote`, `(no call)`, `a + b`).
    #[serde(default)]
    pub expected: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    pub outcome: Outcome,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub score: Option<TrialScore>,
    /// One turn per step of the conversation (a single-call fixture has one).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub turns: Vec<ModelTurn>,
    /// Summed over the turns.
    pub usage: Usage,
    /// Summed over the steps, each the latency of its successful attempt (for errors: time
    /// until giving up).
    pub latency_ms: f64,
    /// Requests sent, over all steps.
    pub attempts: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_class: Option<ErrorClass>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    pub started_at: String,
    /// Identifies the opening request (arm settings, catalog, messages): the key under which
    /// the conversation is recorded and replayed.
    pub request_hash: String,
    /// A multi-step scenario trial: every tool call executed with its scripted result, why the
    /// loop ended, the final state and each step's latency. `None` for single-call fixtures.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trajectory: Option<Trajectory>,
    /// How a scenario trial was judged (its assertions and the counts behind retry and
    /// recovery rates). `None` for fixtures, which are judged in `score`, and for errors.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scenario: Option<ScenarioScore>,
    /// An attacked scenario trial (`run --attacks`): which attack, where its payload reached
    /// the model, and whether the attacker's goal happened. `None` for every other trial.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attack: Option<AttackTrial>,
    /// The provider batch that answered this trial (`run --batch`): it is billed at the batch
    /// price, and its latency is the batch's turnaround, not the model's, so none is recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch: Option<BatchRef>,
    /// What the trial cost, from its usage and the arm's price. `None` when the arm has no
    /// price or an answered request reported no token counts: unknown, never counted as 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<TrialCost>,
    /// The trial finished after a sequential test had decided its case (or arm, or run): it
    /// was in flight at the decision. Kept, and its cost counted, but no rate counts it, so
    /// the figures are those of the decided trials whatever the timing.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub after_decision: bool,
}

/// The longest line of a results.jsonl read back: a record carries its turns (each response
/// at most the providers' 8 MiB body cap) and a scenario's states (1 MiB each), so 64 MiB
/// holds any record a run writes, while a damaged or hostile file cannot exhaust memory.
pub const MAX_RECORD_LINE_BYTES: usize = 64 << 20;

/// Which provider batch answered a trial.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BatchRef {
    /// The batch API: `openai`, `anthropic` or `gemini`.
    pub api: String,
    /// The provider's id of the batch (`batch_…`, `msgbatch_…`, `batches/…`).
    pub id: String,
}

/// US dollars per million tokens of each kind. Cache reads and writes are billed at their own
/// rate when one is given, else at the input rate (what those tokens would cost uncached).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Price {
    pub input: f64,
    pub output: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_read: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write: Option<f64>,
}

impl Price {
    /// Dollars for one request's (or a sum of requests') usage; `None` when the input or output
    /// count is unknown. `input_tokens` includes the cache reads and writes (see `Usage`), so
    /// only the rest is billed at the input rate.
    pub fn cost_of(&self, usage: &Usage) -> Option<f64> {
        let input = usage.input_tokens?;
        let output = usage.output_tokens?;
        let read = usage.cache_read_tokens.unwrap_or(0);
        let write = usage.cache_write_tokens.unwrap_or(0);
        let uncached = input.saturating_sub(read + write);
        let micro = uncached as f64 * self.input
            + read as f64 * self.cache_read.unwrap_or(self.input)
            + write as f64 * self.cache_write.unwrap_or(self.input)
            + output as f64 * self.output;
        Some(micro / 1e6)
    }

    /// Dollars for a trial's turns: every answered request must report its counts, else the
    /// cost is unknown. A trial with no answered request cost nothing: providers bill the
    /// usage they report, and an error reports none.
    pub fn cost_of_turns(&self, turns: &[ModelTurn]) -> Option<f64> {
        turns.iter().map(|t| self.cost_of(&t.usage)).sum()
    }
}

/// One trial's cost and the price it was computed with, so `results.jsonl` alone re-aggregates
/// into the same cost figures and says which price list they came from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrialCost {
    pub usd: f64,
    pub price: Price,
    /// Where the price comes from: `toolscore.yaml prices.NAME`, or the shipped table with its
    /// date.
    pub price_source: String,
    /// Under `--max-cost`: the most the trial's requests could have been billed, each at its
    /// worst case (every byte of its body an input token, its whole output bound). `usd` above
    /// it means the provider billed usage no request of that size could produce, and the cap
    /// was held by a reservation that was too small.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worst_case_usd: Option<f64>,
}

/// What a scenario trial did besides the model's turns (which are in `TrialRecord::turns`,
/// one per step): enough to re-score it against changed expectations without the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Trajectory {
    /// Every tool call the model made, in order (parallel calls of a step in their order),
    /// with what the scripted tool answered.
    pub calls: Vec<ExecutedCall>,
    /// Why the loop ended.
    pub stop: LoopStop,
    /// The scenario's state after the last call; absent when the scenario declares none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub final_state: Option<serde_json::Value>,
    /// Latency of each model request, in step order.
    pub step_latency_ms: Vec<f64>,
}

/// Why a scenario's agent loop ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LoopStop {
    /// The model answered without calling a tool.
    FinalAnswer,
    /// `max_steps` requests were made and the last still called tools.
    StepLimit,
    /// A request failed (see the record's `error_class`).
    Error,
    /// The scenario's state or a scripted result grew past its size cap
    /// (`runner::script::MAX_SCRIPT_BYTES`): the trial stops and fails, saying so.
    StateLimit,
    /// `--max-cost` could not cover the next request (the record's outcome is
    /// `budget_stopped`).
    Budget,
}

/// One tool call of a trajectory and the result fed back to the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExecutedCall {
    /// The step (model request, from 0) that made the call.
    pub step: u32,
    pub tool: String,
    /// Parsed arguments; `null` when they were not JSON (then `unparsed_arguments` holds them).
    pub arguments: serde_json::Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unparsed_arguments: Option<String>,
    /// How the call was answered.
    pub kind: CallKind,
    /// Index of the scripted rule that answered (for `scripted`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule: Option<u32>,
    /// The result's text content, as the model received it.
    pub content: String,
    /// The result's `structuredContent`, when the rule returns one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured: Option<serde_json::Value>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub is_error: bool,
    /// The scenario's state right after this call, when the rule that answered it has
    /// effects (so a reader sees each step's state); `None` when the call changed nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<serde_json::Value>,
    /// An attack's payload sat in this result (a scripted `${injection}`, or appended to a
    /// live tool the scenario's `inject` lists).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub injected: bool,
}

/// What an attacked scenario trial records of its attack. The record's `case_id` is
/// `SCENARIO@ATTACK` ([`attacked_case_id`]), so the attack is part of every trial key (resume,
/// shards, recordings); these fields say the same apart, for grouping by scenario and family.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AttackTrial {
    /// The attack's `id` in its attack file.
    pub id: String,
    /// The scenario attacked (its clean unit's case id).
    pub scenario: String,
    /// The attack's family (`ignore-previous`, `encoded`, …), when its file gives one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub family: Option<String>,
    /// The index in `trajectory.calls` of the first result that carried the payload; `None`
    /// when the model never called a tool whose result carries it (the attack never reached
    /// it, and cannot have succeeded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivered: Option<u32>,
    /// The attacker's goal happened after the payload was delivered. Meaningful for judged
    /// trials only (an infrastructure error is not scored).
    pub succeeded: bool,
    /// What proved it: the call or the text where the goal was met, bounded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evidence: Option<String>,
}

/// The separator of an attacked unit's case id, `SCENARIO@ATTACK`: attack ids may not hold it.
pub const ATTACK_SEPARATOR: char = '@';

/// The case id of `scenario`'s unit under `attack`.
pub fn attacked_case_id(scenario: &str, attack: &str) -> String {
    format!("{scenario}{ATTACK_SEPARATOR}{attack}")
}

/// The scenario of the unit `case_id` under `attack`, the inverse of [`attacked_case_id`];
/// `None` when `case_id` is not that attack's unit.
pub fn attacked_scenario<'a>(case_id: &'a str, attack: &str) -> Option<&'a str> {
    case_id.strip_suffix(attack)?.strip_suffix(ATTACK_SEPARATOR)
}

/// How a call was answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CallKind {
    /// A scripted rule matched.
    Scripted,
    /// The arguments broke the tool's input schema (or were not JSON): a validation error
    /// naming the failing path, as a real server answers.
    InvalidArguments,
    /// The tool is not in the catalog.
    UnknownTool,
    /// No rule of the tool matched: an error result, and a gap in the script, reported apart.
    Unscripted,
    /// Executed on the scenario's live MCP server; its result as the server returned it.
    Live,
}

/// How a scenario trial was judged, with the counts its rates are built from.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ScenarioScore {
    /// Every stated assertion held.
    pub passed: bool,
    /// Each assertion that failed, as a sentence (`sequence: expected apply_credit after
    /// find_customer`, `state.credits.0.amount: expected 10, got 5`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failures: Vec<String>,
    /// Tool calls made.
    pub calls: u32,
    /// Calls in the expected sequence, when the scenario states one (for step efficiency).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected_calls: Option<u32>,
    /// Calls repeating an earlier call of the trajectory (same tool, equivalent arguments)
    /// whose latest result was a success.
    pub retries_after_success: u32,
    /// Calls repeating an earlier call whose latest result was an error.
    pub retries_after_error: u32,
    /// Error results followed by a later call to the same tool.
    pub recovery_chances: u32,
    /// Of those, the next call to that tool had valid arguments different from the failed one.
    pub recoveries: u32,
    /// Calls no rule answered.
    pub unscripted_calls: u32,
}

/// Which arm a record belongs to: the configured provider's name, its model and the catalog
/// variant. Records are aggregated by (dataset, case, variant, provider).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct ArmId {
    /// Which catalog variant the model saw (`base` for the dataset's own catalog).
    pub variant: String,
    /// The name the provider has in the config (or its kind, or `replay`).
    pub provider: String,
    pub model: String,
}

/// The `dataset` every scenario record carries: scenarios are grouped apart from dataset
/// cases.
pub const SCENARIO_DATASET: &str = "scenarios";

/// The base catalog's variant name.
pub const BASE_VARIANT: &str = "base";

/// Where an arm's answers come from: one struct instead of the provider fields copied into
/// every header (run info, replay provenance, cassettes).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelIdentity {
    /// The provider's name in the config.
    pub provider: String,
    /// Its wire format (`openai-compat`, …).
    pub provider_kind: String,
    pub model: String,
    /// Informational; never holds a key.
    pub base_url: String,
    pub temperature: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    /// `tool_choice` as configured (`auto`, `required`, `none`): sent only when set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<String>,
    /// `parallel_tool_calls` as configured: sent only when set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parallel_tool_calls: Option<bool>,
    /// Settings the user configured that the model's API refuses, so they were not sent (the
    /// fields above show what was sent): which, the value configured, and why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub omitted: Vec<OmittedSetting>,
}

/// A configured request setting that was not sent because the model's API refuses it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OmittedSetting {
    /// The request field (`temperature`, `tool_choice`, `parallel_tool_calls`).
    pub field: String,
    /// The value the user configured (a number, a string or a boolean).
    pub configured: serde_json::Value,
    /// Why it is refused: the capability table's date and source.
    pub reason: String,
}

/// `tool_choice` as a user configures it, in OpenAI's words; each adapter writes it in its
/// own wire format (Anthropic `any` for `required`, Gemini's `functionCallingConfig.mode`).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize, clap::ValueEnum,
)]
#[serde(rename_all = "lowercase")]
pub enum ToolChoice {
    /// The model decides whether to call a tool.
    Auto,
    /// The model must call some tool.
    Required,
    /// The model must not call a tool.
    None,
}

impl ToolChoice {
    pub fn as_str(self) -> &'static str {
        match self {
            ToolChoice::Auto => "auto",
            ToolChoice::Required => "required",
            ToolChoice::None => "none",
        }
    }
}

/// Why a request failed, coarse enough to count and to decide on retries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorClass {
    Timeout,
    Connect,
    RateLimited,
    ServerError,
    Auth,
    QuotaExceeded,
    /// The provider says it is overloaded (Anthropic 529 `overloaded_error`): transient, and
    /// kept apart from `server_error` because it says nothing about the request.
    Overloaded,
    ClientError,
    BadResponse,
    Cancelled,
    /// A batch (`run --batch`) reached its completion window before running this request.
    BatchExpired,
    /// The batch was cancelled at the provider before running this request.
    BatchCancelled,
    /// `--max-cost`: the worst case of this trial's next request would pass the cap, so a
    /// scenario trial ended between steps (a trial refused before its first request is not
    /// run at all).
    Budget,
}

impl ErrorClass {
    /// Transient failures: timeouts, network errors, rate limits, server errors.
    pub fn is_retryable(self) -> bool {
        matches!(
            self,
            ErrorClass::Timeout
                | ErrorClass::Connect
                | ErrorClass::RateLimited
                | ErrorClass::ServerError
                | ErrorClass::Overloaded
        )
    }

    pub fn as_str(self) -> &'static str {
        match self {
            ErrorClass::Timeout => "timeout",
            ErrorClass::Connect => "connect",
            ErrorClass::RateLimited => "rate_limited",
            ErrorClass::ServerError => "server_error",
            ErrorClass::Auth => "auth",
            ErrorClass::QuotaExceeded => "quota_exceeded",
            ErrorClass::Overloaded => "overloaded",
            ErrorClass::ClientError => "client_error",
            ErrorClass::BadResponse => "bad_response",
            ErrorClass::Cancelled => "cancelled",
            ErrorClass::BatchExpired => "batch_expired",
            ErrorClass::BatchCancelled => "batch_cancelled",
            ErrorClass::Budget => "budget",
        }
    }
}

impl fmt::Display for ErrorClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a scored trial failed (first reason wins, in the order selection → arguments → schema).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureKind {
    NoCallMade,
    UnexpectedCall,
    WrongTool,
    UnknownTool,
    WrongCallCount,
    ArgumentsNotJson,
    ArgsMismatch,
    SchemaInvalid,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrialScore {
    pub selection_ok: bool,
    /// None when the expectation states no arguments (tool-only or no-call cases).
    pub args_ok: Option<bool>,
    /// None when the model made no tool call; otherwise true iff every call names a catalog
    /// tool, has JSON arguments, and validates against its schema.
    pub schema_ok: Option<bool>,
    /// selection_ok && args_ok != Some(false) && schema_ok != Some(false); for a case imported
    /// from BFCL (`expect.bfcl`), BFCL's verdict alone: selection_ok && args_ok != Some(false),
    /// schema validity being reported but not counted, as BFCL checks no schema.
    pub passed: bool,
    pub failure: Option<FailureKind>,
    /// Human-readable detail of the first failure, e.g. "expected create_quote, got
    /// get_quote" or "args.lines.0.qty: expected 2, got \"2\"" or "lines.0.sku failed
    /// pattern".
    pub detail: Option<String>,
    pub schema_violations: Vec<SchemaViolation>,
    /// Why the arguments of a trial that chose the right tool were wrong, one entry per
    /// finding (at most [`MAX_ARG_FAILURES`], every kind found kept at least once). `None`
    /// when the classifier did not run: the trial passed its argument and schema checks, chose
    /// the wrong tool, or was scored before the taxonomy existed (so `toolscore report` can
    /// tell "no failure" from "not classified" in old results).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arg_failures: Option<Vec<ArgFailure>>,
}

/// Most argument findings kept per trial: counting needs only which kinds occurred, and the
/// paths are examples, so a reply with hundreds of bad keys cannot bloat results.jsonl.
pub const MAX_ARG_FAILURES: usize = 8;

/// Why a right-tool call's arguments failed (the argument-failure taxonomy).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ArgFailureKind {
    /// The arguments were not JSON at all.
    InvalidJson,
    /// A property the schema requires, or a key the fixture expects, is absent.
    MissingRequired,
    /// A key neither the fixture expects nor the schema declares: a hallucinated parameter.
    ExtraParameter,
    /// Present, with a JSON type other than the expected value's or the schema's.
    WrongType,
    /// Present with the right type and a different value (or a schema constraint such as
    /// `pattern`, `enum` or `minimum` broken).
    WrongValue,
}

impl ArgFailureKind {
    pub const ALL: [ArgFailureKind; 5] = [
        ArgFailureKind::InvalidJson,
        ArgFailureKind::MissingRequired,
        ArgFailureKind::ExtraParameter,
        ArgFailureKind::WrongType,
        ArgFailureKind::WrongValue,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ArgFailureKind::InvalidJson => "invalid_json",
            ArgFailureKind::MissingRequired => "missing_required",
            ArgFailureKind::ExtraParameter => "extra_parameter",
            ArgFailureKind::WrongType => "wrong_type",
            ArgFailureKind::WrongValue => "wrong_value",
        }
    }
}

impl fmt::Display for ArgFailureKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One finding of the argument-failure classifier: its kind and where (a dotted path into the
/// arguments, "" for the root; prefixed `tool:` for parallel calls).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ArgFailure {
    pub kind: ArgFailureKind,
    pub path: String,
}

/// One schema violation of produced arguments. `path` is dotted ("lines.0.sku", "" for the
/// root), `keyword` the failing JSON-Schema keyword ("pattern", "required", "type", "enum",
/// "additionalProperties", "maximum", ...), `message` the validator's text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SchemaViolation {
    /// The tool whose schema the produced arguments broke (the tool called, which may differ
    /// from the tool expected).
    pub tool: String,
    pub path: String,
    pub keyword: String,
    pub message: String,
}

#[cfg(any(test, feature = "test-support"))]
impl TrialRecord {
    /// A record of trial 0 of case `case_id` of arm `p`/`m`/`base`, answered in `latency_ms`,
    /// with nothing scored: unit tests set what they need on top.
    pub fn for_test(case_id: &str, outcome: Outcome, latency_ms: f64) -> Self {
        TrialRecord {
            run_id: "r".into(),
            dataset: "d".into(),
            case_id: case_id.into(),
            arm: ArmId {
                variant: BASE_VARIANT.into(),
                provider: "p".into(),
                model: "m".into(),
            },
            trial_index: 0,
            expected: "t".into(),
            tags: Vec::new(),
            outcome,
            score: None,
            turns: Vec::new(),
            usage: Usage::default(),
            latency_ms,
            attempts: 1,
            error_class: None,
            error: None,
            started_at: String::new(),
            request_hash: String::new(),
            trajectory: None,
            scenario: None,
            attack: None,
            batch: None,
            cost: None,
            after_decision: false,
        }
    }

    /// Trial `trial` of case `case_id` under arm `p`/`m`/`variant`, scored right or wrong on
    /// selection (and pass) alike: what the sequential comparisons' tests feed.
    pub fn scored_for_test(case_id: &str, variant: &str, trial: u32, right: bool) -> Self {
        let mut r = TrialRecord::for_test(case_id, Outcome::Pass, 1.0);
        r.arm = ArmId::for_test(variant);
        r.trial_index = trial;
        r.score = Some(TrialScore {
            selection_ok: right,
            args_ok: None,
            schema_ok: None,
            passed: right,
            failure: None,
            detail: None,
            schema_violations: Vec::new(),
            arg_failures: None,
        });
        r
    }
}

#[cfg(any(test, feature = "test-support"))]
impl ArmId {
    /// Arm `p`/`m` shown `variant`.
    pub fn for_test(variant: &str) -> Self {
        ArmId {
            variant: variant.to_owned(),
            provider: "p".to_owned(),
            model: "m".to_owned(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usage(input: u64, output: u64, read: u64, write: u64) -> Usage {
        Usage {
            input_tokens: Some(input),
            output_tokens: Some(output),
            cache_read_tokens: Some(read),
            cache_write_tokens: Some(write),
        }
    }

    #[test]
    fn cache_tokens_are_billed_at_their_own_rate_and_only_the_rest_at_the_input_rate() {
        let p = Price {
            input: 3.0,
            output: 15.0,
            cache_read: Some(0.3),
            cache_write: Some(3.75),
        };
        // 1000 uncached, 2000 read, 400 written, 100 out.
        let usd = p.cost_of(&usage(3400, 100, 2000, 400)).unwrap();
        let want = (1000.0 * 3.0 + 2000.0 * 0.3 + 400.0 * 3.75 + 100.0 * 15.0) / 1e6;
        assert!((usd - want).abs() < 1e-15, "{usd}");
        // No cache rates: cache tokens cost what input does.
        let flat = Price {
            cache_read: None,
            cache_write: None,
            ..p
        };
        let usd = flat.cost_of(&usage(3400, 100, 2000, 400)).unwrap();
        assert!((usd - (3400.0 * 3.0 + 1500.0) / 1e6).abs() < 1e-15);
    }

    #[test]
    fn unknown_counts_make_the_cost_unknown_and_no_answer_costs_nothing() {
        let p = Price {
            input: 1.0,
            output: 1.0,
            cache_read: None,
            cache_write: None,
        };
        let missing_output = Usage {
            input_tokens: Some(10),
            ..Usage::default()
        };
        assert_eq!(p.cost_of(&missing_output), None);
        let turn = |u: Usage| ModelTurn {
            tool_calls: Vec::new(),
            text: None,
            usage: u,
            finish: None,
        };
        // One turn without counts spoils the trial's sum.
        assert_eq!(
            p.cost_of_turns(&[turn(usage(10, 5, 0, 0)), turn(missing_output)]),
            None
        );
        assert_eq!(p.cost_of_turns(&[]), Some(0.0));
        assert_eq!(
            p.cost_of_turns(&[turn(usage(10, 5, 0, 0)), turn(usage(20, 5, 0, 0))]),
            Some(40.0 / 1e6)
        );
    }
}
