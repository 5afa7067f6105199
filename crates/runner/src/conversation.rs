//! The multi-step loop of a scenario trial: the model asked one step at a time, every tool
//! call it makes answered from the script or a live MCP server, the results fed back, until
//! it answers without a call or reaches `max_steps`.

use super::compile::ArmUnit;
use super::script::ScriptRun;
use super::{
    Shared, TrialKey, TrialState, cover_request, record_step, settle_request, total_usage,
};
use toolscore_core::ErrorClass;
use toolscore_core::catalog::Catalog;
use toolscore_core::{AttackTrial, ExecutedCall, LoopStop, Outcome, Trajectory};
use toolscore_core::{Message, ToolCall};
use toolscore_mcp::McpSession;
use toolscore_provider::{PreparedRequest, StepKey};
use toolscore_score::ToolValidators;
use toolscore_score::judge_goal;
use toolscore_score::score_trajectory;
use toolscore_suite::Scenario;

/// What a scenario trial's arm reads and is judged by: the scenario, the catalog of the arm's
/// variant, the variant (its opening and its wording of the script's results, where the
/// scenario has them), and the catalog's validators.
pub(super) struct ScenarioView<'a> {
    pub(super) scenario: &'a Scenario,
    pub(super) catalog: &'a Catalog,
    /// The arm's variant: its opening and its result wording.
    pub(super) variant: &'a str,
    pub(super) validators: &'a ToolValidators,
}

/// The agent loop of one scenario trial: ask the model, answer every tool call it makes (in
/// order) from the script, feed the results back, and repeat until it answers without a tool
/// call or `max_steps` requests were made. Every step is keyed (conversation, trial, step) so
/// a recording replays it exactly. `None` when Ctrl-C abandoned the trial.
// Long: the agent loop in one place; every exit of a step (budget, error, answer, state limit,
// live failure, Ctrl-C) must close the same trajectory.
pub(super) async fn run_scenario_loop(
    shared: &Shared,
    key: TrialKey,
    (arm, opening): (&ArmUnit, &PreparedRequest),
    ScenarioView {
        scenario,
        catalog,
        variant,
        validators,
    }: ScenarioView<'_>,
    TrialState { record, raw, hold }: TrialState<'_, '_>,
) -> Option<()> {
    let mut messages = scenario.messages_for(variant).to_vec();
    let payload = scenario.attack.as_ref().map(|a| a.attack.payload.as_str());
    let mut script = ScriptRun::new(&scenario.script, scenario.wording_for(variant), payload);
    // A fresh session of the live server per trial: no state leaks between trials.
    let session = match open_session(scenario, shared).await? {
        Ok(session) => session,
        Err(e) => {
            record.error_class = Some(ErrorClass::ServerError);
            record.error = Some(format!("live tools: {e}"));
            record.trajectory = Some(Trajectory {
                calls: Vec::new(),
                stop: LoopStop::Error,
                final_state: script.into_final_state(),
                step_latency_ms: Vec::new(),
            });
            return Some(());
        }
    };
    let mut calls = Vec::new();
    let mut step_latency_ms = Vec::new();
    let mut stop = LoopStop::StepLimit;
    let mut later: Option<PreparedRequest> = None;
    for step in 0..scenario.max_steps {
        let request = later.as_ref().unwrap_or(opening);
        // Each request is covered by the trial's hold on `--max-cost` now that its body (the
        // conversation so far) is known, and settled as soon as it is billed.
        if !cover_request(hold, arm, request, record, step) {
            stop = LoopStop::Budget;
            break;
        }
        let step_key = StepKey {
            conversation: &opening.request_hash,
            trial: key.trial,
            step,
        };
        let (result, latency) = arm.backend.step(request, step_key, &shared.cancel).await;
        step_latency_ms.push(latency.as_secs_f64() * 1000.0);
        let answered = record_step(shared, record, raw, step, result, latency)?;
        settle_request(hold, arm, record, answered);
        if !answered {
            stop = LoopStop::Error;
            break;
        }
        let Some(turn) = record.turns.last() else {
            break;
        };
        if turn.tool_calls.is_empty() {
            stop = LoopStop::FinalAnswer;
            break;
        }
        // The calls go back as the model issued them: a call without an id keeps none, and its
        // result (call id "") is paired by position by each adapter, which gives the wire the
        // ids its format needs (OpenAI, Anthropic) and sends none where the model sent none
        // (Gemini must not be sent back ids it never issued).
        let tool_calls: Vec<ToolCall> = turn.tool_calls.clone();
        messages.push(Message::Assistant {
            content: turn.text.clone(),
            tool_calls: tool_calls.clone(),
        });
        let mut turn_calls = TurnCalls {
            step,
            session: session.as_ref(),
            scenario,
            validators,
            cancel: &shared.cancel,
        };
        match turn_calls
            .answer(&tool_calls, &mut script, &mut messages, &mut calls)
            .await
        {
            Answered::All => {}
            Answered::StateLimit => {
                stop = LoopStop::StateLimit;
                break;
            }
            Answered::LiveFailed(error) => {
                record.error_class = Some(ErrorClass::ServerError);
                record.error = Some(error);
                stop = LoopStop::Error;
                break;
            }
            Answered::Cancelled => {
                if let Some(live) = session {
                    live.shutdown().await;
                }
                return None;
            }
        }
        if step + 1 < scenario.max_steps {
            later = Some(arm.backend.prepare(&messages, catalog));
        }
    }
    if let Some(live) = session {
        live.shutdown().await;
    }
    record.usage = total_usage(&record.turns);
    let trajectory = Trajectory {
        calls,
        stop,
        final_state: script.into_final_state(),
        step_latency_ms,
    };
    let answer = match trajectory.stop {
        LoopStop::FinalAnswer => record.turns.last().map(|t| t.text.as_deref().unwrap_or("")),
        _ => None,
    };
    if record.error_class.is_none() {
        let score = score_trajectory(&scenario.expect, &trajectory, answer, validators);
        record.outcome = if score.passed {
            Outcome::Pass
        } else {
            Outcome::Fail
        };
        record.scenario = Some(score);
    }
    // An attacked trial says which attack it ran even when it ended in an error, so its unit
    // counts the error apart instead of losing it.
    record.attack = scenario.attack.as_ref().map(|by| {
        let goal = judge_goal(&by.attack.goal, &trajectory.calls, answer);
        AttackTrial {
            id: by.attack.id.clone(),
            scenario: by.scenario.clone(),
            family: by.attack.family.clone(),
            delivered: goal.delivered,
            succeeded: goal.succeeded,
            evidence: goal.evidence,
        }
    });
    record.trajectory = Some(trajectory);
    Some(())
}

/// The scenario's live server, connected for this trial (`Ok(None)` without one); `None`
/// when Ctrl-C came first.
async fn open_session(
    scenario: &Scenario,
    shared: &Shared,
) -> Option<Result<Option<McpSession>, toolscore_mcp::McpError>> {
    let Some(live) = &scenario.server else {
        return Some(Ok(None));
    };
    let env = |n: &str| std::env::var(n).ok();
    tokio::select! {
        s = McpSession::connect(&live.spec.spec, live.spec.timeout, &env) => Some(s.map(Some)),
        () = shared.cancel.cancelled() => None,
    }
}

/// How answering one turn's calls ended.
enum Answered {
    All,
    /// The script's state passed its bound.
    StateLimit,
    /// The live server failed: the trial is an infrastructure error.
    LiveFailed(String),
    Cancelled,
}

/// What answers one step's tool calls: the live server for its tools, the script otherwise.
struct TurnCalls<'a> {
    step: u32,
    session: Option<&'a McpSession>,
    scenario: &'a Scenario,
    validators: &'a ToolValidators,
    cancel: &'a toolscore_provider::Cancel,
}

impl TurnCalls<'_> {
    /// Answers each call in order, adding its result to the conversation and the trajectory.
    async fn answer(
        &mut self,
        tool_calls: &[ToolCall],
        script: &mut ScriptRun<'_>,
        messages: &mut Vec<Message>,
        calls: &mut Vec<ExecutedCall>,
    ) -> Answered {
        for c in tool_calls {
            let executed = match self.session {
                Some(live) if self.scenario.is_live(&c.name) => {
                    match execute_live(live, self.step, c, self.cancel).await {
                        LiveOutcome::Answered(e) => self.injected(*e),
                        LiveOutcome::Cancelled => return Answered::Cancelled,
                        LiveOutcome::Failed(message) => {
                            return Answered::LiveFailed(format!(
                                "live tool {}: {message}",
                                c.name
                            ));
                        }
                    }
                }
                _ => script.execute(self.step, c, self.validators),
            };
            messages.push(Message::Tool {
                call_id: c.id.clone().unwrap_or_default(),
                content: executed.content.clone(),
                is_error: executed.is_error,
            });
            calls.push(executed);
            if script.over_limit() {
                return Answered::StateLimit;
            }
        }
        Answered::All
    }
}

impl TurnCalls<'_> {
    /// A live tool's real result with the attack's payload appended, when the scenario's
    /// `inject` lists the tool: data an attacker controls, after what the tool returned. An
    /// error result carries no data, so nothing is planted in it.
    fn injected(&self, mut call: ExecutedCall) -> ExecutedCall {
        let Some(by) = &self.scenario.attack else {
            return call;
        };
        if call.is_error || !self.scenario.inject.contains(&call.tool) {
            return call;
        }
        if !call.content.is_empty() {
            call.content.push_str("\n\n");
        }
        call.content.push_str(&by.attack.payload);
        call.injected = true;
        call
    }
}

enum LiveOutcome {
    Answered(Box<toolscore_core::ExecutedCall>),
    /// The server failed (not a tool-execution error, which is an answer): the trial is an
    /// infrastructure error, not a model failure.
    Failed(String),
    Cancelled,
}

/// One call executed on the live server. A tool-execution error (`isError`) is an answer the
/// model reads; a broken connection or protocol error is the server's failure.
async fn execute_live(
    session: &McpSession,
    step: u32,
    call: &ToolCall,
    cancel: &toolscore_provider::Cancel,
) -> LiveOutcome {
    let mut out = toolscore_core::ExecutedCall {
        step,
        tool: call.name.clone(),
        arguments: call.arguments.clone(),
        unparsed_arguments: call.unparsed_arguments.clone(),
        kind: toolscore_core::CallKind::Live,
        rule: None,
        content: String::new(),
        structured: None,
        is_error: true,
        state: None,
        injected: false,
    };
    if call.arguments_not_json() {
        // Nothing a server could parse was produced; answer as a server's validation would.
        out.content = "Invalid arguments: not valid JSON".to_owned();
        return LiveOutcome::Answered(Box::new(out));
    }
    let result = tokio::select! {
        r = session.call_tool(&call.name, &call.arguments) => r,
        () = cancel.cancelled() => return LiveOutcome::Cancelled,
    };
    match result {
        Ok(r) => {
            out.content = r.text();
            out.structured = r.structured_content;
            out.is_error = r.is_error;
            LiveOutcome::Answered(Box::new(out))
        }
        Err(e) => LiveOutcome::Failed(e.to_string()),
    }
}
