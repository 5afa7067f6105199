//! Stops a provider's arm at its first `auth` or `quota_exceeded` error: every later request
//! would fail the same way, so its remaining trials are not run (counted as skipped, never as
//! failures), while the other providers of the run go on.

use std::io::Write;

use toolscore_core::Error;
use toolscore_core::ErrorClass;
use toolscore_core::{Control, Observer, RunEvent, StopScope};

/// One arm stopped, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderStop {
    pub arm: usize,
    pub provider: String,
    pub variant: String,
    pub class: ErrorClass,
    /// The error as recorded (already redacted).
    pub message: String,
}

impl ProviderStop {
    /// One line for the terminal, naming the key variable on an auth failure.
    pub fn describe(&self, key_env: Option<&str>) -> String {
        let hint = match (self.class, key_env) {
            (ErrorClass::Auth, Some(var)) => format!("; check the key in {var}"),
            (ErrorClass::QuotaExceeded, _) => "; waiting will not lift it".to_owned(),
            _ => String::new(),
        };
        format!(
            "provider `{}` (variant {}) stopped at its first {} error{hint}. {}. Its remaining trials are not run; the other providers go on.",
            self.provider, self.variant, self.class, self.message
        )
    }
}

/// The observer: one stop per arm, announced on the command's stream (stderr) when it
/// happens.
pub struct ProviderStops {
    /// Per arm: the environment variable its key comes from, if any.
    key_env: Vec<Option<String>>,
    variants: Vec<String>,
    stopped: Vec<ProviderStop>,
    out: Box<dyn Write + Send>,
}

impl ProviderStops {
    /// `key_env[arm]` names the variable each arm's key is read from; each stop is told on
    /// `out` as it happens.
    pub fn new(key_env: Vec<Option<String>>, out: Box<dyn Write + Send>) -> Self {
        ProviderStops {
            key_env,
            variants: Vec::new(),
            stopped: Vec::new(),
            out,
        }
    }

    pub fn stops(&self) -> &[ProviderStop] {
        &self.stopped
    }

    fn key_env(&self, arm: usize) -> Option<&str> {
        self.key_env.get(arm).and_then(|v| v.as_deref())
    }
}

impl Observer for ProviderStops {
    fn on_event(&mut self, event: &RunEvent<'_>) -> Result<Control, Error> {
        match event {
            RunEvent::Started { arms, .. } => {
                self.variants = arms.iter().map(|a| a.variant.to_owned()).collect();
                Ok(Control::Continue)
            }
            RunEvent::Trial { key, record, .. } => {
                let Some(class @ (ErrorClass::Auth | ErrorClass::QuotaExceeded)) =
                    record.error_class
                else {
                    return Ok(Control::Continue);
                };
                if self.stopped.iter().any(|s| s.arm == key.arm) {
                    return Ok(Control::Stop(StopScope::Arm(key.arm)));
                }
                let stop = ProviderStop {
                    arm: key.arm,
                    provider: record.arm.provider.clone(),
                    variant: self
                        .variants
                        .get(key.arm)
                        .cloned()
                        .unwrap_or_else(|| record.arm.variant.clone()),
                    class,
                    message: record.error.clone().unwrap_or_default(),
                };
                writeln!(self.out, "{}", stop.describe(self.key_env(key.arm)))
                    .map_err(|e| Error::io("cannot write a provider's stop", e))?;
                self.stopped.push(stop);
                Ok(Control::Stop(StopScope::Arm(key.arm)))
            }
            RunEvent::Notice(_) | RunEvent::Finished(_) => Ok(Control::Continue),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use toolscore_core::TrialKey;
    use toolscore_core::{Outcome, TrialRecord};

    /// One trial of `arm` seen by the observer, and its answer.
    fn trial(stops: &mut ProviderStops, arm: usize, record: &TrialRecord) -> Control {
        let key = TrialKey {
            arm,
            case: 0,
            trial: 0,
        };
        stops
            .on_event(&RunEvent::Trial {
                key,
                record,
                raw: &[],
            })
            .unwrap()
    }

    #[test]
    fn auth_and_quota_stop_their_arm_only() {
        let mut stops = ProviderStops::new(
            vec![Some("ANTHROPIC_API_KEY".into()), None],
            Box::new(std::io::sink()),
        );
        let mut record = TrialRecord::for_test("c", Outcome::Error, 1.0);
        record.error_class = Some(ErrorClass::RateLimited);
        assert_eq!(trial(&mut stops, 0, &record), Control::Continue);
        record.error_class = Some(ErrorClass::Auth);
        record.error =
            Some("HTTP 401 Unauthorized (authentication_error): invalid x-api-key".into());
        assert_eq!(
            trial(&mut stops, 0, &record),
            Control::Stop(StopScope::Arm(0))
        );
        assert_eq!(stops.stops().len(), 1);
        let line = stops.stops()[0].describe(Some("ANTHROPIC_API_KEY"));
        assert!(
            line.contains("ANTHROPIC_API_KEY") && line.contains("invalid x-api-key"),
            "{line}"
        );
        record.error_class = Some(ErrorClass::QuotaExceeded);
        assert_eq!(
            trial(&mut stops, 1, &record),
            Control::Stop(StopScope::Arm(1))
        );
        assert_eq!(stops.stops().len(), 2);
    }
}
