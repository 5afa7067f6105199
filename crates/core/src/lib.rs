//! The types every layer of toolscore shares: neutral conversation messages (`message`), the
//! trial record and its values (`record`), the run's event stream (`event`), tool catalogs
//! (`catalog`), canonical JSON (`json`), reading user files (`input`), atomic writes
//! (`atomic`), the rate metrics (`metric`), text made safe to show and commands safe to paste
//! (`text`), the near name a typo meant (`suggest`), and the errors and exit codes (`error`).
//!
//! `catalog` and `metric` are public as namespaces; the other modules are private and the root
//! re-exports what other crates name (`toolscore_core::TrialRecord`, `toolscore_core::Error`).

mod atomic;
pub mod catalog;
mod error;
mod event;
mod input;
mod json;
mod message;
pub mod metric;
mod record;
mod suggest;
mod text;

pub use atomic::{write_file, write_json};
pub use error::{Error, ExitCode, InputError, is_broken_pipe, strip_position};
pub use event::{
    ArmStart, BatchProgress, Control, Notice, Observer, Observers, RawResponse, RawStep, RunEvent,
    RunTotals, StopScope, TrialKey,
};
pub use input::{
    BoundedLines, TIMEOUT_RANGE, jsonl_lines, line_error, open_regular_file, read_text,
    timeout_from_seconds,
};
pub use json::{
    canonical_json, compact_len, cut_text, hex, json_equal, sha256_of, thousands, value_at_path,
};
pub use message::{FinishReason, Message, ModelTurn, ToolCall, Usage};
pub use record::{
    ATTACK_SEPARATOR, ArgFailure, ArgFailureKind, ArmId, AttackTrial, BASE_VARIANT, BatchRef,
    CallKind, ErrorClass, ExecutedCall, FailureKind, LoopStop, MAX_ARG_FAILURES,
    MAX_RECORD_LINE_BYTES, ModelIdentity, OmittedSetting, Outcome, Price, SCENARIO_DATASET,
    ScenarioScore, SchemaViolation, ToolChoice, Trajectory, TrialCost, TrialRecord, TrialScore,
    attacked_case_id, attacked_scenario,
};
pub use suggest::did_you_mean;
pub use text::{command, inert, inert_cut, is_hidden, shell_word};
