//! Which failed model calls are worth sending again, and how long to wait first.
//!
//! Owns: classifying [`ProviderError`]s as transient or not, and the backoff schedule
//! (exponential, capped, jittered, and the provider's own `retry-after` when it sends
//! one).
//! Does not own: the retry loop, the waiting, or what becomes of a partial response
//! (the agent's turn loop), nor randomness: the jitter comes in as an argument, so every
//! function here is pure and tested without a clock.
//! Invariant: a decision stays inside the policy: at most `max_retries` retries in a
//! row, no computed wait above `max_delay`, and a provider-requested wait above
//! [`MAX_RETRY_AFTER`] is reported instead of waited out.

use std::time::Duration;

use super::ProviderError;

/// A provider asking for a longer wait than this is not waited for: the call fails and
/// says how long the provider wants.
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(120);

/// Mid-stream error kinds that mean "try again later": Anthropic's overloaded, API,
/// rate-limit and timeout errors; the server errors and rate limits of OpenAI-compatible
/// servers.
const TRANSIENT_API_KINDS: [&str; 7] = [
    "overloaded_error",
    "api_error",
    "rate_limit_error",
    "timeout_error",
    "server_error",
    "rate_limit_exceeded",
    "overloaded",
];

impl ProviderError {
    /// Whether sending the same request again may succeed: the network, an overloaded
    /// or rate-limited provider, a stalled or cut stream. A request the provider
    /// rejected (400, 401, 403, 404, ...) or a stream duet cannot read would fail the
    /// same way again.
    pub fn is_transient(&self) -> bool {
        match self {
            ProviderError::Connect { .. }
            | ProviderError::Network(_)
            | ProviderError::Truncated(_)
            | ProviderError::Idle(_) => true,
            ProviderError::Http { status, .. } => is_transient_status(*status),
            ProviderError::Api { kind, .. } => TRANSIENT_API_KINDS.contains(&kind.as_str()),
            ProviderError::Malformed(_) | ProviderError::Setup(_) | ProviderError::Replay(_) => {
                false
            }
        }
    }

    /// The wait the provider asked for, if it did.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            ProviderError::Http { retry_after, .. } => *retry_after,
            _ => None,
        }
    }
}

/// 408 (request timeout), 409 (conflict), 429 (rate limit) and every 5xx, Anthropic's
/// 529 (overloaded) included.
fn is_transient_status(status: u16) -> bool {
    matches!(status, 408 | 409 | 429 | 500..=599)
}

/// How often and how patiently a failed model call is sent again.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Retries after the first attempt; 0 turns retrying off.
    pub max_retries: u32,
    /// The longest wait before the first retry; each later retry may wait twice as long.
    pub initial_delay: Duration,
    /// No computed wait is longer (a provider's `retry-after` may be).
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_retries: 5,
            initial_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(30),
        }
    }
}

/// What to do about a failed call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RetryDecision {
    /// Send it again after `delay`; `attempt` numbers this retry from 1.
    Retry { attempt: u32, delay: Duration },
    /// The error is not transient: the same request would fail again.
    Permanent,
    /// `max_retries` retries in a row already failed.
    Exhausted,
    /// The provider asks for a wait longer than [`MAX_RETRY_AFTER`].
    WaitTooLong(Duration),
}

impl RetryPolicy {
    /// What to do after `error`, when `failed_retries` retries in a row have already
    /// failed. `jitter` is a random number in `[0, 1)`.
    pub fn decide(&self, error: &ProviderError, failed_retries: u32, jitter: f64) -> RetryDecision {
        if !error.is_transient() {
            return RetryDecision::Permanent;
        }
        if failed_retries >= self.max_retries {
            return RetryDecision::Exhausted;
        }
        let attempt = failed_retries + 1;
        let delay = match error.retry_after() {
            Some(wait) if wait > MAX_RETRY_AFTER => return RetryDecision::WaitTooLong(wait),
            Some(wait) => wait,
            None => self.backoff(attempt, jitter),
        };
        RetryDecision::Retry { attempt, delay }
    }

    /// The wait before retry `attempt` (from 1): `initial_delay` doubled for each
    /// earlier retry and capped at `max_delay`, then placed in the upper half of that by
    /// `jitter` (in `[0, 1)`), so clients that failed together do not retry together.
    pub fn backoff(&self, attempt: u32, jitter: f64) -> Duration {
        let doublings = attempt.saturating_sub(1).min(31);
        let ceiling = self
            .initial_delay
            .saturating_mul(1 << doublings)
            .min(self.max_delay);
        ceiling.mul_f64(0.5 + 0.5 * jitter.clamp(0.0, 1.0))
    }
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    fn http(status: u16, retry_after: Option<Duration>) -> ProviderError {
        ProviderError::Http {
            url: "http://x/v1/messages".into(),
            status,
            message: "m".into(),
            retry_after,
        }
    }

    fn api(kind: &str) -> ProviderError {
        ProviderError::Api {
            kind: kind.into(),
            message: "m".into(),
        }
    }

    fn policy() -> RetryPolicy {
        RetryPolicy {
            max_retries: 3,
            initial_delay: Duration::from_millis(100),
            max_delay: Duration::from_millis(300),
        }
    }

    #[test]
    fn transient_failures_are_the_network_the_load_and_cut_streams() {
        let transient = [
            ProviderError::Connect {
                url: "u".into(),
                detail: "connection refused".into(),
            },
            ProviderError::Network("connection reset".into()),
            ProviderError::Truncated("no message_stop".into()),
            ProviderError::Idle(Duration::from_secs(90)),
            http(429, None),
            http(529, None),
            http(500, None),
            http(503, None),
            http(408, None),
            api("overloaded_error"),
            api("api_error"),
            api("server_error"),
        ];
        for error in &transient {
            assert!(error.is_transient(), "{error:?}");
        }
    }

    #[test]
    fn rejected_requests_and_unreadable_streams_are_permanent() {
        let permanent = [
            http(400, None),
            http(401, None),
            http(403, None),
            http(404, None),
            http(413, None),
            api("invalid_request_error"),
            api("error"),
            ProviderError::Malformed("bad json".into()),
            ProviderError::Setup("bad key".into()),
        ];
        for error in &permanent {
            assert!(!error.is_transient(), "{error:?}");
            assert_eq!(
                policy().decide(error, 0, 0.5),
                RetryDecision::Permanent,
                "{error:?}"
            );
        }
    }

    #[test]
    fn backoff_doubles_up_to_the_cap() {
        let policy = policy();
        let ceilings: Vec<_> = (1..=5)
            .map(|attempt| policy.backoff(attempt, 1.0))
            .collect();
        assert_eq!(
            ceilings,
            [100, 200, 300, 300, 300].map(Duration::from_millis)
        );
    }

    #[test]
    fn jitter_keeps_the_wait_in_the_upper_half() {
        let policy = policy();
        assert_eq!(policy.backoff(2, 0.0), Duration::from_millis(100));
        assert_eq!(policy.backoff(2, 0.5), Duration::from_millis(150));
        assert_eq!(
            policy.backoff(2, 2.0),
            Duration::from_millis(200),
            "clamped"
        );
        assert_eq!(policy.backoff(u32::MAX, 1.0), Duration::from_millis(300));
    }

    #[test]
    fn retries_are_numbered_until_the_limit() {
        let policy = policy();
        let error = http(529, None);
        assert_eq!(
            policy.decide(&error, 0, 1.0),
            RetryDecision::Retry {
                attempt: 1,
                delay: Duration::from_millis(100)
            }
        );
        assert_eq!(
            policy.decide(&error, 2, 0.0),
            RetryDecision::Retry {
                attempt: 3,
                delay: Duration::from_millis(150)
            }
        );
        assert_eq!(policy.decide(&error, 3, 0.0), RetryDecision::Exhausted);
    }

    #[test]
    fn zero_retries_means_never() {
        let policy = RetryPolicy {
            max_retries: 0,
            ..RetryPolicy::default()
        };
        assert_eq!(
            policy.decide(&ProviderError::Network("reset".into()), 0, 0.0),
            RetryDecision::Exhausted
        );
    }

    #[test]
    fn the_providers_retry_after_wins_over_the_schedule() {
        let wait = Duration::from_secs(7);
        assert_eq!(
            policy().decide(&http(429, Some(wait)), 0, 0.0),
            RetryDecision::Retry {
                attempt: 1,
                delay: wait
            }
        );
        let too_long = MAX_RETRY_AFTER + Duration::from_secs(1);
        assert_eq!(
            policy().decide(&http(429, Some(too_long)), 0, 0.0),
            RetryDecision::WaitTooLong(too_long)
        );
    }
}
