//! OpenAI Batch (reference/providers.md §2 "Batch API"): the requests go up as a JSONL file
//! (`POST /v1/files`, `purpose=batch`), a batch is created over it (`POST /v1/batches`), polled
//! (`GET /v1/batches/{id}`), and its output and error files are downloaded
//! (`GET /v1/files/{id}/content`). Pure functions over the wire shapes; the calls are in
//! `super`.

use bytes::Bytes;
use serde_json::{Value, json};

use super::{
    BatchEnd, BatchLine, BatchStatus, BatchWireError, Counts, LineResult, Output, ParsedLines,
};
use crate::wire::{ErrorInfo, class_from_code};
use crate::{Adapter, ErrorClass, ProviderError};

/// The input file: one `{"custom_id","method","url","body"}` line per request, `url` the
/// endpoint every line targets (`/v1/chat/completions` or `/v1/responses`).
pub(crate) fn input_file(lines: &[BatchLine], url: &str) -> Result<Vec<u8>, BatchWireError> {
    let mut out = Vec::new();
    for line in lines {
        let body: Value = serde_json::from_slice(&line.body).map_err(|source| {
            BatchWireError::RequestNotJson {
                custom_id: line.custom_id.clone(),
                source,
            }
        })?;
        let wire = json!({"custom_id": line.custom_id, "method": "POST", "url": url, "body": body});
        out.extend_from_slice(wire.to_string().as_bytes());
        out.push(b'\n');
    }
    Ok(out)
}

/// A `multipart/form-data` body with the `purpose` field and the file, and its content type.
pub(crate) fn upload_form(file_name: &str, jsonl: &[u8], boundary: &str) -> (Vec<u8>, String) {
    let mut body = Vec::with_capacity(jsonl.len() + 512);
    body.extend_from_slice(
        format!(
            "--{boundary}\r\nContent-Disposition: form-data; name=\"purpose\"\r\n\r\nbatch\r\n\
             --{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{file_name}\"\r\n\
             Content-Type: application/jsonl\r\n\r\n"
        )
        .as_bytes(),
    );
    body.extend_from_slice(jsonl);
    body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
    (body, format!("multipart/form-data; boundary={boundary}"))
}

/// `POST /v1/batches` over an uploaded file.
pub(crate) fn create_body(input_file_id: &str, url: &str, label: &str) -> Value {
    json!({
        "input_file_id": input_file_id,
        "endpoint": url,
        "completion_window": "24h",
        "metadata": {"toolscore_run": label},
    })
}

/// A `Batch` object as a neutral status.
pub fn status(body: &[u8]) -> Result<BatchStatus, BatchWireError> {
    let (value, state) = super::status_state(body, &["/status"])?;
    let end = match state.as_str() {
        "validating" | "in_progress" | "finalizing" | "cancelling" => None,
        "completed" => Some(BatchEnd::Completed),
        "expired" => Some(BatchEnd::Expired),
        "cancelled" => Some(BatchEnd::Cancelled),
        "failed" => {
            let why: Vec<String> = value
                .pointer("/errors/data")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|e| {
                    let message = e.get("message").and_then(Value::as_str)?;
                    Some(match e.get("line").and_then(Value::as_u64) {
                        Some(line) => format!("line {line}: {message}"),
                        None => message.to_owned(),
                    })
                })
                .collect();
            Some(BatchEnd::Failed(if why.is_empty() {
                "the batch failed (no reason given)".to_owned()
            } else {
                why.join("; ")
            }))
        }
        other => {
            return Err(BatchWireError::UnknownState {
                field: "status",
                state: other.to_owned(),
            });
        }
    };
    let count = |k: &str| {
        value
            .pointer(&format!("/request_counts/{k}"))
            .and_then(Value::as_u64)
    };
    let file = |k: &str| {
        value
            .get(k)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
    };
    Ok(BatchStatus {
        state,
        end,
        counts: Counts {
            total: count("total"),
            succeeded: count("completed").unwrap_or(0),
            failed: count("failed").unwrap_or(0),
        },
        output: Output::OpenAiFiles {
            output: file("output_file_id"),
            error: file("error_file_id"),
        },
    })
}

/// The lines of an output or error file. A line that cannot be read is reported, not
/// guessed at: its trial is then one the batch did not return.
pub(crate) fn result_lines(text: &[u8], adapter: &dyn Adapter) -> ParsedLines {
    let mut parsed = ParsedLines::default();
    for (i, line) in text.split(|&b| b == b'\n').enumerate() {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match result_line(line, adapter) {
            Ok(answer) => parsed.answers.push(answer),
            Err(e) => parsed.problems.push(format!("line {}: {e}", i + 1)),
        }
    }
    parsed
}

fn result_line(line: &[u8], adapter: &dyn Adapter) -> Result<(String, LineResult), String> {
    let (value, custom_id) = super::line_with_custom_id(line)?;
    let response = value.get("response").filter(|r| !r.is_null());
    let error = value.get("error").filter(|e| !e.is_null());
    let result = match (response, error) {
        (Some(r), _) => {
            let status = r
                .get("status_code")
                .and_then(Value::as_u64)
                .and_then(|s| u16::try_from(s).ok())
                .ok_or("`response` has no `status_code`")?;
            let body = r.get("body").cloned().unwrap_or(Value::Null);
            let bytes = Bytes::from(body.to_string());
            if (200..300).contains(&status) {
                LineResult::Body(bytes)
            } else {
                LineResult::Failed(adapter.error_from_status(status, &bytes))
            }
        }
        (None, Some(e)) => LineResult::Failed(line_error(e)),
        (None, None) => return Err("neither `response` nor `error`".to_owned()),
    };
    Ok((custom_id, result))
}

/// A line's own `error` (`batch_expired`, `batch_cancelled`, or a request the batch could
/// not run).
fn line_error(error: &Value) -> ProviderError {
    let info = ErrorInfo::from_json(&json!({ "error": error }));
    let class = match info.code.as_deref() {
        Some("batch_expired") => ErrorClass::BatchExpired,
        Some("batch_cancelled") => ErrorClass::BatchCancelled,
        _ => class_from_code(&info).unwrap_or(ErrorClass::ServerError),
    };
    ProviderError::new(
        class,
        None,
        format!(
            "batch request failed{}: {}",
            info.code_suffix(),
            info.message_excerpt()
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::openai_compat;

    fn line(id: &str, body: &str) -> BatchLine {
        BatchLine {
            custom_id: id.into(),
            body: Bytes::from(body.to_owned()),
        }
    }

    #[test]
    fn input_lines_wrap_each_body_with_its_custom_id_and_url() {
        let file = input_file(
            &[line("t0-a0-c0", r#"{"model":"m"}"#), line("t0-a0-c1", "{}")],
            "/v1/responses",
        )
        .unwrap();
        let text = String::from_utf8(file).unwrap();
        let lines: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(
            lines[0],
            json!({"custom_id":"t0-a0-c0","method":"POST","url":"/v1/responses","body":{"model":"m"}})
        );
        assert_eq!(lines[1]["custom_id"], "t0-a0-c1");
        assert!(input_file(&[line("x", "not json")], "/v1/responses").is_err());
    }

    #[test]
    fn the_upload_is_a_multipart_form_with_purpose_batch() {
        let (body, content_type) = upload_form("in.jsonl", b"{}\n", "XYZ");
        assert_eq!(content_type, "multipart/form-data; boundary=XYZ");
        let text = String::from_utf8(body).unwrap();
        assert!(text.contains("name=\"purpose\"\r\n\r\nbatch\r\n"), "{text}");
        assert!(text.contains("filename=\"in.jsonl\""), "{text}");
        assert!(text.ends_with("{}\n\r\n--XYZ--\r\n"), "{text}");
    }

    #[test]
    fn statuses_map_to_running_or_an_end() {
        let s = status(br#"{"id":"batch_1","status":"in_progress","request_counts":{"total":4,"completed":1,"failed":1}}"#).unwrap();
        assert_eq!(s.end, None);
        assert_eq!(s.counts.total, Some(4));
        assert_eq!((s.counts.succeeded, s.counts.failed), (1, 1));
        let s = status(br#"{"status":"completed","output_file_id":"file-o","error_file_id":null}"#)
            .unwrap();
        assert_eq!(s.end, Some(BatchEnd::Completed));
        assert_eq!(
            s.output,
            Output::OpenAiFiles {
                output: Some("file-o".into()),
                error: None
            }
        );
        let s = status(br#"{"status":"failed","errors":{"object":"list","data":[{"code":"invalid_json_line","message":"bad line","line":2}]}}"#).unwrap();
        assert_eq!(s.end, Some(BatchEnd::Failed("line 2: bad line".into())));
        assert_eq!(
            status(br#"{"status":"expired"}"#).unwrap().end,
            Some(BatchEnd::Expired)
        );
        assert!(status(br#"{"status":"exploded"}"#).is_err());
        assert!(status(b"<html>").is_err());
    }

    #[test]
    fn result_lines_become_bodies_errors_or_problems() {
        let adapter = openai_compat::KIND.adapter();
        let text = concat!(
            r#"{"id":"batch_req_1","custom_id":"t0-a0-c1","response":{"status_code":200,"request_id":"req_1","body":{"choices":[]}},"error":null}"#,
            "\n",
            r#"{"id":"batch_req_2","custom_id":"t0-a0-c0","response":{"status_code":429,"request_id":"req_2","body":{"error":{"message":"Rate limit reached","type":"tokens","param":null,"code":"rate_limit_exceeded"}}},"error":null}"#,
            "\n",
            r#"{"id":"batch_req_3","custom_id":"t1-a0-c0","response":null,"error":{"code":"batch_expired","message":"This request could not be executed before the completion window expired."}}"#,
            "\n\n",
            "garbage\n",
        );
        let parsed = result_lines(text.as_bytes(), adapter);
        assert_eq!(parsed.answers.len(), 3);
        assert_eq!(parsed.answers[0].0, "t0-a0-c1");
        assert!(
            matches!(&parsed.answers[0].1, LineResult::Body(b) if &b[..] == br#"{"choices":[]}"#)
        );
        match &parsed.answers[1].1 {
            LineResult::Failed(e) => {
                assert_eq!(e.class, ErrorClass::RateLimited);
                assert_eq!(e.status, Some(429));
            }
            other @ LineResult::Body(_) => panic!("{other:?}"),
        }
        match &parsed.answers[2].1 {
            LineResult::Failed(e) => assert_eq!(e.class, ErrorClass::BatchExpired),
            other @ LineResult::Body(_) => panic!("{other:?}"),
        }
        assert_eq!(parsed.problems.len(), 1);
        assert!(parsed.problems[0].starts_with("line 5: not JSON"));
    }
}
