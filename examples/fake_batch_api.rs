//! A fake provider batch API on this machine, to try `toolscore run --batch` without an
//! account: the in-process fake the tests use (tests/it/support/fake_batch.rs), which follows the
//! documented wire format of OpenAI Batch, Anthropic Message Batches or Gemini batch mode and
//! answers every request as its online fake does (a call to get_weather for Paris).
//!
//! ```sh
//! cargo run --example fake_batch_api -- anthropic --polls 3 --fail t1-a0-c1
//! ```
//!
//! Prints the base URL and the key it expects, then serves until killed. `--polls N`: polls a
//! batch answers "in progress" before it ends (default 3); `--fail ID`: a request that fails
//! inside the batch; `--drop ID`: a request the results leave out; `--expire`: the batch
//! expires before running any request.

#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "a test or benchmark program reports what it measured on the terminal"
)]

// The fakes themselves, without the test helpers that need the binary's path.
#[path = "../tests/it/support/fake_batch.rs"]
mod fake_batch;
#[path = "../tests/it/support/fake_openai.rs"]
mod fake_openai;
#[path = "../tests/it/support/fake_providers.rs"]
mod fake_providers;

use fake_batch::{BatchApi, BatchScript, FakeBatch};

fn main() {
    let mut args = std::env::args().skip(1);
    let api = match args.next().as_deref() {
        Some("openai") => BatchApi::OpenAi,
        Some("anthropic") => BatchApi::Anthropic,
        Some("gemini") => BatchApi::Gemini,
        _ => {
            eprintln!(
                "usage: fake_batch_api openai|anthropic|gemini [--polls N] [--fail ID]… [--drop ID]… [--expire]"
            );
            std::process::exit(2);
        }
    };
    let mut script = BatchScript {
        polls_before_end: 3,
        ..Default::default()
    };
    while let Some(flag) = args.next() {
        let mut value = || {
            args.next().unwrap_or_else(|| {
                eprintln!("{flag} needs a value");
                std::process::exit(2);
            })
        };
        match flag.as_str() {
            "--polls" => {
                script.polls_before_end = value().parse().unwrap_or_else(|_| {
                    eprintln!("--polls needs a number");
                    std::process::exit(2);
                });
            }
            "--fail" => {
                script.fail.insert(value());
            }
            "--drop" => {
                script.drop.insert(value());
            }
            "--expire" => script.expire = true,
            other => {
                eprintln!("unknown flag {other}");
                std::process::exit(2);
            }
        }
    }
    let fake = FakeBatch::start(api, script);
    let addr = fake.server.addr;
    let base = match api {
        BatchApi::Gemini => format!("http://{addr}/v1beta"),
        _ => format!("http://{addr}/v1"),
    };
    println!("{base}");
    println!("key: {}", fake_providers::FAKE_KEY);
    loop {
        std::thread::sleep(std::time::Duration::from_secs(3600));
    }
}
