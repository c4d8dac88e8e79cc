//! What the two OpenAI wires (chat completions and Responses) share.
//!
//! Owns: the bearer-token header, turning an OpenAI error object met mid-stream into a
//! [`ProviderError::Api`], the marker that flags a failed tool's output (neither wire
//! has an `is_error` field), and joining text parts.
//! Does not own: anything specific to one wire's request body or event stream.
//! Invariant: both wires authenticate, report errors and mark failed tools the same
//! way, so a fix here fixes both.

use reqwest::header::{self, HeaderMap};
use serde_json::Value;

use super::http::{self, ErrorParts};
use super::{Block, Message, ProviderError, ToolResult};

/// Starts the content of a failed tool's result: these wires have no `is_error` flag.
pub(super) const TOOL_ERROR_MARKER: &str = "Error: ";

/// Separates joined text parts (system prompt parts, several text blocks).
const PARAGRAPH_BREAK: &str = "\n\n";

/// `Authorization: Bearer {key}`, or no header for the keyless local servers.
pub(super) fn bearer_headers(api_key: Option<&str>) -> Result<HeaderMap, ProviderError> {
    let mut headers = HeaderMap::new();
    if let Some(key) = api_key {
        headers.insert(
            header::AUTHORIZATION,
            http::secret_header(&format!("Bearer {key}"))?,
        );
    }
    Ok(headers)
}

/// The error an OpenAI error object (`{"type"|"code", "message"}` or a bare string)
/// stands for; its kind decides whether the call is retried.
pub(super) fn api_error(error: &Value) -> ProviderError {
    let parts = ErrorParts::of(error);
    ProviderError::Api {
        kind: parts.kind.unwrap_or_else(|| "error".to_owned()),
        message: parts.message.unwrap_or_else(|| error.to_string()),
    }
}

/// The text a tool result is sent as: failures carry [`TOOL_ERROR_MARKER`].
pub(super) fn tool_output(result: &ToolResult) -> String {
    if result.is_error {
        format!("{TOOL_ERROR_MARKER}{}", result.content)
    } else {
        result.content.clone()
    }
}

/// The message's text blocks, in order.
pub(super) fn texts(message: &Message) -> impl Iterator<Item = &str> {
    message.content.iter().filter_map(|block| match block {
        Block::Text { text } => Some(text.as_str()),
        _ => None,
    })
}

/// The images of a message as `data:` URLs, the form both OpenAI wires take inline.
pub(super) fn image_urls(message: &Message) -> impl Iterator<Item = String> + '_ {
    message.content.iter().filter_map(|block| match block {
        Block::Image { media_type, data } => Some(format!("data:{media_type};base64,{data}")),
        _ => None,
    })
}

/// The non-empty parts joined by a blank line, or `None` if there are none.
pub(super) fn join_non_empty<'a>(parts: impl Iterator<Item = &'a str>) -> Option<String> {
    let parts: Vec<&str> = parts.filter(|part| !part.is_empty()).collect();
    (!parts.is_empty()).then(|| parts.join(PARAGRAPH_BREAK))
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;
    use serde_json::json;

    use super::*;

    #[test]
    fn sends_a_bearer_token_only_with_a_key() {
        let headers = bearer_headers(Some("sk-test")).unwrap();
        assert_eq!(headers[header::AUTHORIZATION], "Bearer sk-test");
        assert!(headers[header::AUTHORIZATION].is_sensitive());
        assert!(bearer_headers(None).unwrap().is_empty());
    }

    #[test]
    fn reads_error_objects_of_every_shape() {
        let error = api_error(&json!({"code": "server_error", "message": "boom"}));
        assert!(
            matches!(&error, ProviderError::Api { kind, message } if kind == "server_error" && message == "boom"),
            "{error:?}"
        );
        let error = api_error(&json!("model crashed"));
        assert!(
            matches!(&error, ProviderError::Api { kind, message } if kind == "error" && message == "model crashed"),
            "{error:?}"
        );
    }

    #[test]
    fn marks_failed_tool_output_and_joins_texts() {
        let result = |is_error| ToolResult {
            call_id: "c".into(),
            content: "no such file".into(),
            is_error,
        };
        assert_eq!(tool_output(&result(false)), "no such file");
        assert_eq!(tool_output(&result(true)), "Error: no such file");
        assert_eq!(
            join_non_empty(["a", "", "b"].into_iter()),
            Some("a\n\nb".to_owned())
        );
        assert_eq!(join_non_empty(["", ""].into_iter()), None);
    }
}
