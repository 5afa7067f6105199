//! Before the first request: a provider served from this machine (a local model, Ollama) that
//! nothing answers for is said in one line, with its URL and how to start it, instead of a
//! run whose every trial retries into a refused connection.
//!
//! Only loopback hosts are checked: a remote API may sit behind a proxy the client knows and a
//! plain connection does not, and its failures are what infrastructure errors are for.

use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::time::Duration;

use super::RunSetup;
use crate::cli::{Error, LocalServerDown};

/// How long one connection attempt may take: a server on this machine answers in far less.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

/// Fails with one line per unreachable server, naming the provider, its URL and how to start
/// it (the config's `start:`, else the kind's usual command when it has one).
pub(crate) fn check_local_servers(setup: &RunSetup) -> Result<(), Error> {
    if setup.plan.batch.is_some() {
        return Ok(());
    }
    let mut down = Vec::new();
    let mut checked = Vec::new();
    for arm in setup.plan.arms.iter().filter(|a| a.replay.is_none()) {
        let s = &arm.settings;
        let Some(addr) = loopback_address(&s.base_url) else {
            continue;
        };
        if checked.contains(&(s.name.clone(), addr)) {
            continue;
        }
        checked.push((s.name.clone(), addr));
        if let Err(e) = TcpStream::connect_timeout(&addr, CONNECT_TIMEOUT) {
            let start = setup
                .start_hints
                .get(&s.name)
                .map(String::as_str)
                .or_else(|| s.kind.adapter().local_start_command());
            down.push(LocalServerDown {
                base_url: s.base_url.clone(),
                provider: s.name.clone(),
                source: e,
                start: start.map(str::to_owned),
            });
        }
    }
    if down.is_empty() {
        Ok(())
    } else {
        Err(Error::Unreachable(down))
    }
}

/// The socket address of a URL whose host is this machine (`localhost`, `127.0.0.1`, `[::1]`),
/// with the scheme's port when none is given.
fn loopback_address(url: &str) -> Option<SocketAddr> {
    let parsed = reqwest::Url::parse(url).ok()?;
    let host = parsed.host_str()?;
    let port = parsed.port_or_known_default()?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let is_loopback = host == "localhost"
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback());
    if !is_loopback {
        return None;
    }
    (host, port)
        .to_socket_addrs()
        .ok()?
        .find(|a| a.ip().is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_this_machine_is_checked() {
        assert_eq!(
            loopback_address("http://127.0.0.1:8089/v1"),
            Some("127.0.0.1:8089".parse().unwrap())
        );
        assert_eq!(
            loopback_address("http://[::1]:11434"),
            Some("[::1]:11434".parse().unwrap())
        );
        assert!(
            loopback_address("http://localhost/v1").is_some_and(|a| a.port() == 80),
            "the scheme's port"
        );
        assert_eq!(loopback_address("https://api.openai.com/v1"), None);
        assert_eq!(loopback_address("http://10.0.0.5:8080/v1"), None);
        assert_eq!(loopback_address("not a url"), None);
    }
}
