//! Gemini batch mode (reference/providers.md §4 "Batch API"): `POST
//! /v1beta/models/{model}:batchGenerateContent` with the requests inline, each tagged with
//! `metadata.key`; poll `GET /v1beta/{name}` (`batches/…`) until `metadata.state` ends; the
//! answers come back inline. Pure functions over the wire shapes; the calls are in `super`.
//!
//! providers.md marks the GET's envelope as derived from the SDK's mapping: the state and the
//! output are read from `metadata` as it documents, and from the operation's `response` too.

use bytes::Bytes;
use serde_json::{Value, json};

use super::{
    BatchEnd, BatchLine, BatchStatus, BatchWireError, Counts, LineResult, Output, ParsedLines,
};

/// The create body: every request inline with its key in `metadata`.
pub(crate) fn create_body(lines: &[BatchLine], label: &str) -> Result<Value, BatchWireError> {
    let requests = lines
        .iter()
        .map(|line| {
            let request: Value = serde_json::from_slice(&line.body).map_err(|source| {
                BatchWireError::RequestNotJson {
                    custom_id: line.custom_id.clone(),
                    source,
                }
            })?;
            Ok(json!({"request": request, "metadata": {"key": line.custom_id}}))
        })
        .collect::<Result<Vec<Value>, BatchWireError>>()?;
    Ok(json!({
        "batch": {
            "displayName": label,
            "inputConfig": {"requests": {"requests": requests}},
        }
    }))
}

/// The batch's resource name (`batches/…`), its id for polling.
pub(crate) fn batch_name(body: &[u8]) -> Result<String, BatchWireError> {
    let value: Value =
        serde_json::from_slice(body).map_err(|source| BatchWireError::AnswerNotJson {
            what: "batch answer",
            source,
        })?;
    value
        .get("name")
        .and_then(Value::as_str)
        .filter(|n| n.starts_with("batches/") && n.len() > "batches/".len())
        .map(str::to_owned)
        .ok_or(BatchWireError::NoField {
            what: "batch answer",
            field: "`name` of the form batches/…",
        })
}

/// An int64 in proto JSON: a string, or a number from lenient servers.
fn int64(v: Option<&Value>) -> Option<u64> {
    match v? {
        Value::String(s) => s.parse().ok(),
        other => other.as_u64(),
    }
}

/// The polled operation as a neutral status, with the inline answers once it has them.
pub fn status(body: &[u8]) -> Result<BatchStatus, BatchWireError> {
    let (value, state) = super::status_state(body, &["/metadata/state", "/state"])?;
    let word = state
        .strip_prefix("BATCH_STATE_")
        .or_else(|| state.strip_prefix("JOB_STATE_"))
        .unwrap_or(&state);
    let end = match word {
        "PENDING" | "RUNNING" | "QUEUED" | "UNSPECIFIED" => None,
        "SUCCEEDED" => Some(BatchEnd::Completed),
        "EXPIRED" => Some(BatchEnd::Expired),
        "CANCELLED" => Some(BatchEnd::Cancelled),
        "FAILED" => Some(BatchEnd::Failed(
            value
                .pointer("/error/message")
                .and_then(Value::as_str)
                .unwrap_or("the batch failed (no reason given)")
                .to_owned(),
        )),
        _ => {
            return Err(BatchWireError::UnknownState {
                field: "state",
                state,
            });
        }
    };
    let stats = value
        .pointer("/metadata/batchStats")
        .or_else(|| value.get("batchStats"));
    let stat = |k: &str| int64(stats.and_then(|s| s.get(k)));
    let inlined = [
        "/metadata/output/inlinedResponses/inlinedResponses",
        "/response/inlinedResponses/inlinedResponses",
        "/output/inlinedResponses/inlinedResponses",
    ]
    .iter()
    .find_map(|p| value.pointer(p))
    .and_then(Value::as_array);
    let file = [
        "/metadata/output/responsesFile",
        "/response/responsesFile",
        "/output/responsesFile",
    ]
    .iter()
    .find_map(|p| value.pointer(p))
    .and_then(Value::as_str);
    let output = match (inlined, file) {
        (Some(items), _) => Output::Inline(items.clone()),
        (None, Some(file)) => Output::File(file.to_owned()),
        (None, None) => Output::None,
    };
    Ok(BatchStatus {
        state,
        end,
        counts: Counts {
            total: stat("requestCount"),
            succeeded: stat("successfulRequestCount").unwrap_or(0),
            failed: stat("failedRequestCount").unwrap_or(0),
        },
        output,
    })
}

/// The inline answers, matched by `metadata.key`; an answer without one is matched by its
/// position, which the API keeps in request order.
pub(crate) fn inline_answers(items: &[Value], submitted: &[String]) -> ParsedLines {
    let mut parsed = ParsedLines::default();
    for (i, item) in items.iter().enumerate() {
        let key = item
            .pointer("/metadata/key")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .or_else(|| submitted.get(i).cloned());
        let Some(key) = key else {
            parsed.problems.push(format!(
                "response {i}: no metadata.key, and more responses than requests"
            ));
            continue;
        };
        let answer = match (item.get("response"), item.get("error")) {
            (_, Some(error)) if !error.is_null() => {
                LineResult::Failed(crate::gemini::batch_error(error))
            }
            (Some(response), _) if !response.is_null() => {
                LineResult::Body(Bytes::from(response.to_string()))
            }
            _ => {
                parsed.problems.push(format!(
                    "response {i} ({key}): neither `response` nor `error`"
                ));
                continue;
            }
        };
        parsed.answers.push((key, answer));
    }
    parsed
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorClass;

    #[test]
    fn requests_go_inline_with_their_key() {
        let body = create_body(
            &[BatchLine {
                custom_id: "t0-a0-c0".into(),
                body: Bytes::from_static(br#"{"contents":[]}"#),
            }],
            "run-1",
        )
        .unwrap();
        assert_eq!(
            body,
            json!({"batch":{"displayName":"run-1","inputConfig":{"requests":{"requests":[
                {"request":{"contents":[]},"metadata":{"key":"t0-a0-c0"}}]}}}})
        );
        assert_eq!(
            batch_name(br#"{"name":"batches/abc123","metadata":{}}"#).unwrap(),
            "batches/abc123"
        );
        assert!(batch_name(br#"{"name":"operations/x"}"#).is_err());
    }

    #[test]
    fn states_stats_and_inline_output() {
        let s = status(br#"{"name":"batches/1","metadata":{"state":"BATCH_STATE_RUNNING","batchStats":{"requestCount":"4","pendingRequestCount":"3","successfulRequestCount":"1"}}}"#).unwrap();
        assert_eq!(s.end, None);
        assert_eq!(s.counts.total, Some(4));
        assert_eq!(s.counts.succeeded, 1);
        let s = status(br#"{"name":"batches/1","done":true,"metadata":{"state":"BATCH_STATE_SUCCEEDED","output":{"inlinedResponses":{"inlinedResponses":[{"response":{"candidates":[]},"metadata":{"key":"k"}}]}}}}"#).unwrap();
        assert_eq!(s.end, Some(BatchEnd::Completed));
        assert!(matches!(&s.output, Output::Inline(items) if items.len() == 1));
        let s = status(br#"{"metadata":{"state":"BATCH_STATE_FAILED"},"error":{"code":3,"message":"bad input"}}"#).unwrap();
        assert_eq!(s.end, Some(BatchEnd::Failed("bad input".into())));
        assert_eq!(
            status(br#"{"metadata":{"state":"BATCH_STATE_EXPIRED"}}"#)
                .unwrap()
                .end,
            Some(BatchEnd::Expired)
        );
        assert!(status(br#"{"metadata":{"state":"BATCH_STATE_ODD"}}"#).is_err());
    }

    #[test]
    fn inline_answers_match_keys_or_positions() {
        let items: Vec<Value> = serde_json::from_str(
            r#"[{"response":{"candidates":[]},"metadata":{"key":"b"}},
                {"error":{"code":8,"message":"Resource has been exhausted"},"metadata":{"key":"a"}},
                {"response":{"candidates":[]}},
                {"metadata":{"key":"d"}}]"#,
        )
        .unwrap();
        let submitted = ["a", "b", "c", "d"].map(String::from);
        let parsed = inline_answers(&items, &submitted);
        assert_eq!(parsed.answers.len(), 3);
        assert_eq!(parsed.answers[0].0, "b");
        match &parsed.answers[1] {
            (key, LineResult::Failed(e)) => {
                assert_eq!(key, "a");
                assert_eq!(e.class, ErrorClass::RateLimited);
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(parsed.answers[2].0, "c");
        assert_eq!(parsed.problems.len(), 1);
    }
}
