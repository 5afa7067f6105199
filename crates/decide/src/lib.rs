//! Decisions: what a run's numbers mean for the user's question. Each takes a `Summary` (or the
//! event stream) and the statistics of `stats`, and returns a verdict the reports show and the
//! CLI turns into an exit code; none formats a report beyond its own printer.
//!
//! - [`gate`]: `--gate` verdicts (suite, case, tool; rates and latency budgets), the sequential
//!   gate that stops decided cases, and the `--baseline` non-inferiority gate;
//! - `decision` ([`decide`], [`exit_code`]): the run's one verdict over gates, comparison,
//!   infrastructure and budget, and its exit code;
//! - `compare` ([`compare()`], [`compare_attacks`], [`SequentialCompare`]): `toolscore compare`
//!   and `run --compare`, two arms paired by case;
//! - `race` ([`Race`]): tune's race of candidates against a base;
//! - `rounds`: trials gathered into complete rounds for the sequential tests that judge a
//!   fixed set of cases together;
//! - `sample_size` ([`plan`]): `toolscore plan`, the trials and cases each option needs before
//!   anything is spent.
//!
//! Only [`gate`] is public, as a namespace; the other modules are private and the root
//! re-exports what other crates name.

mod compare;
mod decision;
pub mod gate;
mod race;
mod rounds;
mod sample_size;

pub use compare::attacks::compare_attacks;
pub use compare::sequential::{Rule as CompareRule, SequentialCompare, SequentialCompareSpec};
pub use compare::{
    CompareOptions, DEFAULT_MIN_EFFECT, HOLDOUT_TAG, Side as CompareSide, arm_list, axis_between,
    case_difference, choose_arms, compare, find_arm, plan_order,
};
pub use decision::{decide, decide_comparison, exit_code};
pub use race::{Race, RaceSpec};
pub use sample_size::{AttackGateRequest, PlanPrice, PlanRequest, TokenBasis, plan, render_plan};
