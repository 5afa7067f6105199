//! Responses captured from the real local model (SmolLM2-135M behind llama-server, see
//! scripts/local-model.sh), decoded by the openai-compat adapter and scored. Each file in
//! tests/data/llama-server/ is one way the real model differed from the fakes; these tests
//! pin how the harness treats it.

use std::collections::BTreeMap;

use serde_json::{Value, json};
use toolscore_core::FailureKind;
use toolscore_core::catalog::{Catalog, parse_catalog};
use toolscore_core::{FinishReason, ModelTurn};
use toolscore_provider::{Provider, ProviderSettings, http_client};
use toolscore_score::{ArgMatcher, Expectation, ExpectedCall};
use toolscore_score::{ToolValidators, score_turn};

const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/llama-server");

fn decode(name: &str) -> ModelTurn {
    let body = std::fs::read(format!("{DATA}/{name}.json")).expect("captured response");
    let settings = ProviderSettings::new(
        toolscore_provider::OPENAI_COMPAT_KIND,
        "local",
        "http://127.0.0.1:9/v1",
        "smollm2",
    );
    let provider = Provider::new(settings, http_client(1).expect("client"));
    provider
        .decode(&body)
        .expect("a real llama-server body decodes")
}

/// The tools the probe offered (refund_payment, get_job_status, search_orders, get_weather),
/// optionally without some of them.
fn catalog(without: &[&str]) -> (Catalog, ToolValidators) {
    let text = std::fs::read_to_string(format!("{DATA}/probe-tools.json")).unwrap();
    let mut v: Value = serde_json::from_str(&text).unwrap();
    v["tools"]
        .as_array_mut()
        .unwrap()
        .retain(|t| !without.contains(&t["function"]["name"].as_str().unwrap()));
    let c = parse_catalog(&v.to_string(), "probe-tools.json").unwrap();
    let validators = ToolValidators::compile(&c).unwrap();
    (c, validators)
}

fn expect_call(tool: &str, args: Option<Value>) -> Expectation {
    Expectation::Calls {
        calls: vec![ExpectedCall {
            tool: tool.into(),
            args,
            matchers: BTreeMap::new(),
            family: None,
        }],
        parallel: false,
    }
}

#[test]
fn empty_string_content_beside_tool_calls_and_ids_without_call_prefix() {
    let turn = decode("tool-call-empty-content");
    assert_eq!(
        turn.text, None,
        "llama-server sends content \"\" with tool calls; that is no text"
    );
    assert_eq!(turn.finish, Some(FinishReason::ToolCalls));
    assert_eq!(turn.tool_calls.len(), 1);
    let call = &turn.tool_calls[0];
    assert_eq!(
        call.id.as_deref(),
        Some("pZ9tJYykpKVeq9I2AbLt4GVKxZwpr68S"),
        "ids are kept as sent, no call_ prefix assumed"
    );
    // `12.50` in the raw text parses to the number 12.5.
    assert_eq!(
        call.arguments,
        json!({"payment_id": "12.50", "amount": 12.5})
    );
    assert_eq!(turn.usage.input_tokens, Some(675));
    assert_eq!(turn.usage.output_tokens, Some(47));

    // A placeholder id copied from the user's text is a plain argument mismatch.
    let (_, v) = catalog(&[]);
    let s = score_turn(
        &expect_call(
            "refund_payment",
            Some(json!({"payment_id": "pay_ab12cd", "amount": 12.5})),
        ),
        &turn,
        &v,
    );
    assert!(s.selection_ok);
    assert_eq!(s.args_ok, Some(false));
    assert_eq!(s.failure, Some(FailureKind::ArgsMismatch));
    assert_eq!(s.schema_ok, Some(true));
}

#[test]
fn length_cut_arguments_are_a_scored_arguments_not_json_failure() {
    let turn = decode("length-truncated-arguments");
    assert_eq!(turn.finish, Some(FinishReason::Length));
    assert_eq!(turn.tool_calls.len(), 1);
    assert!(turn.tool_calls[0].arguments_not_json());
    let (_, v) = catalog(&[]);
    let s = score_turn(
        &expect_call(
            "refund_payment",
            Some(json!({"payment_id": "pay_ab12cd", "amount": 12.5})),
        ),
        &turn,
        &v,
    );
    assert!(
        s.selection_ok,
        "the right tool was named before the text ran out"
    );
    assert_eq!(s.failure, Some(FailureKind::ArgumentsNotJson));
    assert_eq!(s.schema_ok, Some(false));
    assert!(!s.passed);
}

#[test]
fn unparsed_tool_call_markup_in_text_is_not_a_call() {
    // max_tokens 8: the server could not parse `<tool_call>` and sent it as text. The harness
    // scores what the API returned: no tool call.
    let turn = decode("max-tokens-raw-tool-call-text");
    assert_eq!(turn.finish, Some(FinishReason::Length));
    assert!(turn.tool_calls.is_empty());
    assert_eq!(turn.text.as_deref(), Some("<tool_call>\n{\"name"));
    let (_, v) = catalog(&[]);
    let s = score_turn(&expect_call("get_job_status", None), &turn, &v);
    assert_eq!(s.failure, Some(FailureKind::NoCallMade));
    assert_eq!(s.schema_ok, None);
}

#[test]
fn duplicate_identical_calls_keep_selection_but_break_a_one_call_parallel_expectation() {
    let turn = decode("duplicate-calls");
    assert_eq!(turn.tool_calls.len(), 2);
    assert_eq!(turn.tool_calls[0].arguments, turn.tool_calls[1].arguments);
    assert_ne!(turn.tool_calls[0].id, turn.tool_calls[1].id);
    let (_, v) = catalog(&[]);
    let mut matchers = BTreeMap::new();
    matchers.insert("customer_email".to_owned(), ArgMatcher::CaseInsensitive);
    let single = Expectation::Calls {
        calls: vec![ExpectedCall {
            tool: "search_orders".into(),
            args: Some(json!({"customer_email": "alice@example.com", "limit": 1})),
            matchers,
            family: None,
        }],
        parallel: false,
    };
    let s = score_turn(&single, &turn, &v);
    assert!(
        s.passed,
        "first call right, `ci` matcher accepts Alice@…: {s:?}"
    );
    let Expectation::Calls { calls, .. } = single else {
        unreachable!()
    };
    let s = score_turn(
        &Expectation::Calls {
            calls,
            parallel: true,
        },
        &turn,
        &v,
    );
    assert_eq!(s.failure, Some(FailureKind::WrongCallCount));
}

#[test]
fn tool_copied_from_the_template_example_is_wrong_and_schema_invalid() {
    // The ChatML template's worked example uses get_time/get_weather; the model copies it.
    let turn = decode("template-example-tool");
    assert_eq!(turn.tool_calls[0].name, "get_weather");
    let (_, v) = catalog(&["get_weather"]);
    let s = score_turn(&Expectation::NoCall, &turn, &v);
    assert_eq!(s.failure, Some(FailureKind::UnexpectedCall));
    assert_eq!(
        s.schema_ok,
        Some(false),
        "a call to a tool outside the catalog cannot be schema-valid"
    );
}

#[test]
fn plain_text_answer_without_tool_calls_key() {
    let turn = decode("text-answer");
    assert!(turn.tool_calls.is_empty());
    assert_eq!(turn.finish, Some(FinishReason::Stop));
    assert!(
        turn.text
            .as_deref()
            .unwrap_or("")
            .starts_with("I'm just a chatbot")
    );
    let (_, v) = catalog(&[]);
    assert!(score_turn(&Expectation::NoCall, &turn, &v).passed);
}
