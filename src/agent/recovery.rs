//! Recovering from failed and cut-off model calls within one turn.
//!
//! Owns: the turn's streaks (failed calls, answers cut off at the output limit), the
//! output limit in force, and what follows each setback: wait and send the call again,
//! ask again with a higher limit, ask the model to continue, or give up with a message
//! that says what to check.
//! Does not own: classifying errors or computing waits ([`RetryPolicy`]), waiting,
//! the conversation, or events (the turn loop acts on the decisions).
//! Invariant: every path is bounded and none calls the model: failures in a row stop
//! after the policy's retries, and cut-offs in a row after one raise of the limit and
//! [`MAX_CONTINUATIONS`] continuations.

use std::time::Duration;

use crate::provider::{ProviderError, RetryDecision, RetryPolicy};

/// The output limit is raised to at most this (double the configured one, once per
/// turn); every current model accepts it.
pub(crate) const MAX_RAISED_OUTPUT_TOKENS: u32 = 32_768;

/// Cut-off answers continued in a row before the turn gives up.
pub(crate) const MAX_CONTINUATIONS: u32 = 3;

/// What failure messages name: the model and where its API key comes from.
#[derive(Clone, Debug)]
pub(crate) struct CallSite {
    pub(crate) model: String,
    /// The environment variable the key is read from, when known.
    pub(crate) api_key_env: Option<String>,
}

/// What to do after a failed call.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum AfterFailure {
    /// Wait `delay`, then call again; `attempt` of `max_attempts` retries.
    Retry {
        attempt: u32,
        max_attempts: u32,
        delay: Duration,
        reason: String,
    },
    /// End the turn with this message.
    GiveUp(String),
}

/// What to do after an answer stopped at the output limit.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum AfterCutOff {
    /// Drop the answer and ask again with the limit raised from `from` to `to`.
    AskAgain { from: u32, to: u32 },
    /// Keep the answer and add this user-role note asking the model to go on.
    Continue { note: String },
    /// End the turn with this message.
    GiveUp(String),
}

/// The recovery state of one turn.
#[derive(Debug)]
pub(crate) struct Recovery {
    policy: RetryPolicy,
    output_limit: u32,
    limit_raised: bool,
    /// Retries made since the last call that succeeded.
    retries: u32,
    /// Continuations asked for since the last answer that was not cut off.
    continuations: u32,
}

impl Recovery {
    pub(crate) fn new(policy: RetryPolicy, max_tokens: u32) -> Self {
        Self {
            policy,
            output_limit: max_tokens,
            limit_raised: false,
            retries: 0,
            continuations: 0,
        }
    }

    /// The `max_tokens` of the next request.
    pub(crate) fn output_limit(&self) -> u32 {
        self.output_limit
    }

    /// A call streamed to its end and was not cut off: both streaks end.
    pub(crate) fn answer_complete(&mut self) {
        self.retries = 0;
        self.continuations = 0;
    }

    /// Decides what follows `error`. `jitter` is a random number in `[0, 1)`.
    pub(crate) fn after_failure(
        &mut self,
        error: &ProviderError,
        site: &CallSite,
        jitter: f64,
    ) -> AfterFailure {
        let attempts = self.retries + 1;
        match self.policy.decide(error, self.retries, jitter) {
            RetryDecision::Retry { attempt, delay } => {
                self.retries = attempt;
                AfterFailure::Retry {
                    attempt,
                    max_attempts: self.policy.max_retries,
                    delay,
                    reason: error.to_string(),
                }
            }
            RetryDecision::Permanent => {
                AfterFailure::GiveUp(format!("model call failed: {error}.{}", hint(error, site)))
            }
            RetryDecision::Exhausted if attempts > 1 => AfterFailure::GiveUp(format!(
                "model call failed {attempts} times in a row, last: {error}.{}",
                hint(error, site)
            )),
            RetryDecision::Exhausted => {
                AfterFailure::GiveUp(format!("model call failed: {error}.{}", hint(error, site)))
            }
            RetryDecision::WaitTooLong(wait) => AfterFailure::GiveUp(format!(
                "model call failed: {error}. The provider asks to wait {} s before the next \
                 request; try again later.",
                wait.as_secs()
            )),
        }
    }

    /// Decides what follows an answer that stopped at the output limit. `kept_calls`:
    /// tool calls of the answer completed (and ran), so it cannot be dropped.
    pub(crate) fn after_cut_off(&mut self, kept_calls: bool) -> AfterCutOff {
        // The call itself worked.
        self.retries = 0;
        let limit = self.output_limit;
        if !self.limit_raised && limit < MAX_RAISED_OUTPUT_TOKENS {
            self.limit_raised = true;
            self.output_limit = limit.saturating_mul(2).min(MAX_RAISED_OUTPUT_TOKENS);
            if !kept_calls {
                return AfterCutOff::AskAgain {
                    from: limit,
                    to: self.output_limit,
                };
            }
        }
        if self.continuations >= MAX_CONTINUATIONS {
            return AfterCutOff::GiveUp(format!(
                "the model's answer stopped at the output limit ({limit} tokens) {} times in a \
                 row; ask for a smaller step, or raise `max_tokens` in the config file",
                self.continuations + 1
            ));
        }
        self.continuations += 1;
        AfterCutOff::Continue {
            note: continuation_note(limit),
        }
    }
}

/// The user-role note that asks a cut-off model to go on.
fn continuation_note(limit: u32) -> String {
    format!(
        "[duet] Your previous answer was cut off at the output limit ({limit} tokens). A tool \
         call that was cut off was not run. Continue exactly where you stopped, without \
         repeating what you already wrote. To write a large file, write a first part and add \
         the rest with edits."
    )
}

/// What the user should check after `error`, with a leading space; empty when there is
/// nothing to suggest.
fn hint(error: &ProviderError, site: &CallSite) -> String {
    match error {
        ProviderError::Connect { .. } => {
            " Is the server running and the base URL right?".to_string()
        }
        ProviderError::Http {
            status: 401 | 403, ..
        } => match &site.api_key_env {
            Some(var) => format!(
                " The provider refused the API key: check {var}, the variable duet reads it from."
            ),
            None => " The provider refused the API key: check it.".to_string(),
        },
        ProviderError::Http { status: 404, .. } => {
            format!(" Check the model name (`{}`) and the base URL.", site.model)
        }
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    fn policy(max_retries: u32) -> RetryPolicy {
        RetryPolicy {
            max_retries,
            initial_delay: Duration::from_millis(10),
            max_delay: Duration::from_millis(40),
        }
    }

    fn site() -> CallSite {
        CallSite {
            model: "claude-x".into(),
            api_key_env: Some("WORK_KEY".into()),
        }
    }

    fn http(status: u16) -> ProviderError {
        ProviderError::Http {
            url: "https://api.example/v1/messages".into(),
            status,
            message: "nope".into(),
            retry_after: None,
        }
    }

    fn overloaded() -> ProviderError {
        http(529)
    }

    #[test]
    fn failures_are_retried_until_the_policy_says_stop() {
        let mut recovery = Recovery::new(policy(2), 1000);
        let retry = |attempt, delay| AfterFailure::Retry {
            attempt,
            max_attempts: 2,
            delay: Duration::from_millis(delay),
            reason: overloaded().to_string(),
        };
        assert_eq!(
            recovery.after_failure(&overloaded(), &site(), 1.0),
            retry(1, 10)
        );
        assert_eq!(
            recovery.after_failure(&overloaded(), &site(), 1.0),
            retry(2, 20)
        );
        let AfterFailure::GiveUp(message) = recovery.after_failure(&overloaded(), &site(), 1.0)
        else {
            panic!("a third retry");
        };
        assert!(
            message.starts_with("model call failed 3 times in a row"),
            "{message}"
        );
    }

    #[test]
    fn a_complete_answer_ends_the_failure_streak() {
        let mut recovery = Recovery::new(policy(1), 1000);
        recovery.after_failure(&overloaded(), &site(), 0.0);
        recovery.answer_complete();
        assert!(matches!(
            recovery.after_failure(&overloaded(), &site(), 0.0),
            AfterFailure::Retry { attempt: 1, .. }
        ));
    }

    #[test]
    fn auth_errors_fail_at_once_naming_the_key_variable() {
        let mut recovery = Recovery::new(policy(5), 1000);
        let AfterFailure::GiveUp(message) = recovery.after_failure(&http(401), &site(), 0.0) else {
            panic!("retried a refused key");
        };
        assert!(message.contains("HTTP 401"), "{message}");
        assert!(message.contains("check WORK_KEY"), "{message}");
    }

    #[test]
    fn an_unknown_model_names_the_model() {
        let mut recovery = Recovery::new(policy(5), 1000);
        let AfterFailure::GiveUp(message) = recovery.after_failure(&http(404), &site(), 0.0) else {
            panic!("retried a 404");
        };
        assert!(message.contains("`claude-x`"), "{message}");
        assert!(
            message.contains("https://api.example/v1/messages"),
            "{message}"
        );
    }

    #[test]
    fn a_long_requested_wait_is_reported_not_waited() {
        let mut recovery = Recovery::new(policy(5), 1000);
        let error = ProviderError::Http {
            url: "u".into(),
            status: 429,
            message: "slow down".into(),
            retry_after: Some(Duration::from_secs(3600)),
        };
        let AfterFailure::GiveUp(message) = recovery.after_failure(&error, &site(), 0.0) else {
            panic!("waited an hour");
        };
        assert!(message.contains("wait 3600 s"), "{message}");
    }

    #[test]
    fn a_cut_off_answer_is_asked_again_once_with_double_the_limit() {
        let mut recovery = Recovery::new(policy(5), 4096);
        assert_eq!(
            recovery.after_cut_off(false),
            AfterCutOff::AskAgain {
                from: 4096,
                to: 8192
            }
        );
        assert_eq!(recovery.output_limit(), 8192);
        assert_eq!(
            recovery.after_cut_off(false),
            AfterCutOff::Continue {
                note: continuation_note(8192)
            }
        );
        assert_eq!(recovery.output_limit(), 8192, "raised once only");
    }

    #[test]
    fn the_raise_is_capped_and_skipped_at_the_cap() {
        let mut recovery = Recovery::new(policy(5), 20_000);
        assert_eq!(
            recovery.after_cut_off(false),
            AfterCutOff::AskAgain {
                from: 20_000,
                to: MAX_RAISED_OUTPUT_TOKENS
            }
        );
        let mut at_cap = Recovery::new(policy(5), MAX_RAISED_OUTPUT_TOKENS);
        assert!(matches!(
            at_cap.after_cut_off(false),
            AfterCutOff::Continue { .. }
        ));
    }

    #[test]
    fn kept_tool_calls_continue_with_the_raised_limit() {
        let mut recovery = Recovery::new(policy(5), 4096);
        assert!(matches!(
            recovery.after_cut_off(true),
            AfterCutOff::Continue { .. }
        ));
        assert_eq!(recovery.output_limit(), 8192);
    }

    #[test]
    fn repeated_cut_offs_give_up() {
        let mut recovery = Recovery::new(policy(5), MAX_RAISED_OUTPUT_TOKENS);
        for _ in 0..MAX_CONTINUATIONS {
            assert!(matches!(
                recovery.after_cut_off(false),
                AfterCutOff::Continue { .. }
            ));
        }
        let AfterCutOff::GiveUp(message) = recovery.after_cut_off(false) else {
            panic!("continued forever");
        };
        assert!(message.contains("4 times in a row"), "{message}");

        let mut recovered = Recovery::new(policy(5), MAX_RAISED_OUTPUT_TOKENS);
        for _ in 0..MAX_CONTINUATIONS {
            recovered.after_cut_off(false);
        }
        recovered.answer_complete();
        assert!(matches!(
            recovered.after_cut_off(false),
            AfterCutOff::Continue { .. }
        ));
    }
}
