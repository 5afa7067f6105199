//! Anthropic Message Batches (reference/providers.md §1 "Batch API"): `POST
//! /v1/messages/batches` with every request inline, poll `GET /v1/messages/batches/{id}` until
//! `processing_status` is `ended`, then read the JSONL at `results_url`. Pure functions over
//! the wire shapes; the calls are in `super`.

use bytes::Bytes;
use serde_json::{Value, json};

use super::{
    BatchEnd, BatchLine, BatchStatus, BatchWireError, Counts, LineResult, Output, ParsedLines,
};
use crate::{ErrorClass, ProviderError};

/// The create body: each request's Messages body as its `params`.
pub(crate) fn create_body(lines: &[BatchLine]) -> Result<Value, BatchWireError> {
    let requests = lines
        .iter()
        .map(|line| {
            let params: Value = serde_json::from_slice(&line.body).map_err(|source| {
                BatchWireError::RequestNotJson {
                    custom_id: line.custom_id.clone(),
                    source,
                }
            })?;
            Ok(json!({"custom_id": line.custom_id, "params": params}))
        })
        .collect::<Result<Vec<Value>, BatchWireError>>()?;
    Ok(json!({ "requests": requests }))
}

/// A `MessageBatch` as a neutral status. An ended batch is `Completed` whatever happened to
/// its requests: each result line says that on its own.
pub fn status(body: &[u8]) -> Result<BatchStatus, BatchWireError> {
    let (value, state) = super::status_state(body, &["/processing_status"])?;
    let end = match state.as_str() {
        "in_progress" | "canceling" => None,
        "ended" => Some(BatchEnd::Completed),
        other => {
            return Err(BatchWireError::UnknownState {
                field: "processing_status",
                state: other.to_owned(),
            });
        }
    };
    let count = |k: &str| {
        value
            .pointer(&format!("/request_counts/{k}"))
            .and_then(Value::as_u64)
            .unwrap_or(0)
    };
    let failed = count("errored") + count("canceled") + count("expired");
    let succeeded = count("succeeded");
    let output = match value.get("results_url").and_then(Value::as_str) {
        Some(url) if !url.is_empty() => Output::ResultsUrl(url.to_owned()),
        _ => Output::None,
    };
    Ok(BatchStatus {
        state,
        end,
        counts: Counts {
            total: Some(count("processing") + succeeded + failed),
            succeeded,
            failed,
        },
        output,
    })
}

/// The lines of the results file.
pub(crate) fn result_lines(text: &[u8]) -> ParsedLines {
    let mut parsed = ParsedLines::default();
    for (i, line) in text.split(|&b| b == b'\n').enumerate() {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match result_line(line) {
            Ok(answer) => parsed.answers.push(answer),
            Err(e) => parsed.problems.push(format!("line {}: {e}", i + 1)),
        }
    }
    parsed
}

fn result_line(line: &[u8]) -> Result<(String, LineResult), String> {
    let (value, custom_id) = super::line_with_custom_id(line)?;
    let result = value.get("result").ok_or("no `result`")?;
    let kind = result
        .get("type")
        .and_then(Value::as_str)
        .ok_or("no `result.type`")?;
    let answer = match kind {
        "succeeded" => LineResult::Body(Bytes::from(
            result
                .get("message")
                .ok_or("a succeeded result without `message`")?
                .to_string(),
        )),
        "errored" => LineResult::Failed(crate::anthropic::batch_error(
            result.get("error").unwrap_or(&Value::Null),
        )),
        "canceled" => LineResult::Failed(ProviderError::new(
            ErrorClass::BatchCancelled,
            None,
            "the batch was cancelled before this request ran".to_owned(),
        )),
        "expired" => LineResult::Failed(ProviderError::new(
            ErrorClass::BatchExpired,
            None,
            "the batch expired (24 h) before this request ran".to_owned(),
        )),
        other => return Err(format!("unknown result type `{other}`")),
    };
    Ok((custom_id, answer))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_request_goes_inline_as_params() {
        let body = create_body(&[BatchLine {
            custom_id: "t0-a0-c0".into(),
            body: Bytes::from_static(br#"{"model":"claude","max_tokens":1024}"#),
        }])
        .unwrap();
        assert_eq!(
            body,
            json!({"requests":[{"custom_id":"t0-a0-c0","params":{"model":"claude","max_tokens":1024}}]})
        );
    }

    #[test]
    fn processing_status_and_counts() {
        let s = status(br#"{"id":"msgbatch_1","type":"message_batch","processing_status":"in_progress","request_counts":{"processing":3,"succeeded":1,"errored":0,"canceled":0,"expired":0},"results_url":null}"#).unwrap();
        assert_eq!(s.end, None);
        assert_eq!(s.counts.total, Some(4));
        assert_eq!(s.output, Output::None);
        let s = status(br#"{"processing_status":"ended","request_counts":{"processing":0,"succeeded":2,"errored":1,"canceled":0,"expired":1},"results_url":"https://api.anthropic.com/v1/messages/batches/msgbatch_1/results"}"#).unwrap();
        assert_eq!(s.end, Some(BatchEnd::Completed));
        assert_eq!((s.counts.succeeded, s.counts.failed), (2, 2));
        assert!(matches!(s.output, Output::ResultsUrl(u) if u.ends_with("/results")));
        assert!(status(br#"{"processing_status":"paused"}"#).is_err());
    }

    #[test]
    fn result_types_map_to_bodies_and_error_classes() {
        let text = concat!(
            r#"{"custom_id":"t0-a0-c1","result":{"type":"succeeded","message":{"id":"msg_1","content":[]}}}"#,
            "\n",
            r#"{"custom_id":"t0-a0-c0","result":{"type":"errored","error":{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: Field required"}}}}"#,
            "\n",
            r#"{"custom_id":"t1-a0-c0","result":{"type":"expired"}}"#,
            "\n",
            r#"{"custom_id":"t1-a0-c1","result":{"type":"canceled"}}"#,
            "\n",
            r#"{"custom_id":"t2-a0-c1","result":{"type":"exploded"}}"#,
            "\n",
        );
        let parsed = result_lines(text.as_bytes());
        let classes: Vec<Option<ErrorClass>> = parsed
            .answers
            .iter()
            .map(|(_, r)| match r {
                LineResult::Body(_) => None,
                LineResult::Failed(e) => Some(e.class),
            })
            .collect();
        assert_eq!(
            classes,
            [
                None,
                Some(ErrorClass::ClientError),
                Some(ErrorClass::BatchExpired),
                Some(ErrorClass::BatchCancelled)
            ]
        );
        assert_eq!(parsed.problems, ["line 5: unknown result type `exploded`"]);
    }
}
