//! OpenAI chat completions request checks (see the parent module for the contract).

use serde_json::{Map, Value};

use super::{
    Problems, check_model_and_stream, check_tool_name, positive_integer, require_non_empty_string,
};

pub(super) fn body(body: &Value) -> Vec<String> {
    let Some(request) = body.as_object() else {
        return vec!["the request body must be a JSON object".into()];
    };
    let mut problems = Problems::default();
    check_model_and_stream(request, &mut problems);
    for key in ["max_tokens", "max_completion_tokens"] {
        positive_integer(request.get(key), key, &mut problems);
    }
    if let Some(options) = request.get("stream_options") {
        let include_usage = options.get("include_usage");
        if !options.is_object() || include_usage.is_some_and(|flag| !flag.is_boolean()) {
            problems.add(
                "stream_options",
                "must be an object whose include_usage is a boolean",
            );
        }
    }
    if let Some(tools) = request.get("tools") {
        check_tools(tools, &mut problems);
    }
    match request.get("messages") {
        Some(Value::Array(messages)) if messages.is_empty() => {
            problems.add("messages", "must not be empty");
        }
        Some(Value::Array(messages)) => {
            for (index, message) in messages.iter().enumerate() {
                check_message(index, message, &mut problems);
            }
            check_pairing(messages, &mut problems);
        }
        Some(_) => problems.add("messages", "must be an array"),
        None => problems.add("messages", "required"),
    }
    problems.into_vec()
}

fn check_tools(tools: &Value, problems: &mut Problems) {
    let Some(tools) = tools.as_array() else {
        problems.add("tools", "must be an array");
        return;
    };
    for (index, tool) in tools.iter().enumerate() {
        let at = format!("tools[{index}]");
        if tool.get("type").and_then(Value::as_str) != Some("function") {
            problems.add(&at, "type must be \"function\"");
        }
        let Some(function) = tool.get("function").and_then(Value::as_object) else {
            problems.add(&at, "`function` is required and must be an object");
            continue;
        };
        let function_at = format!("{at}.function");
        check_tool_name(function.get("name"), &function_at, problems);
        if function.get("parameters").is_some_and(|p| !p.is_object()) {
            problems.add(&function_at, "parameters must be a JSON Schema object");
        }
        if function.get("description").is_some_and(|d| !d.is_string()) {
            problems.add(&function_at, "description must be a string");
        }
    }
}

fn check_message(index: usize, message: &Value, problems: &mut Problems) {
    let at = format!("messages[{index}]");
    let Some(message) = message.as_object() else {
        problems.add(&at, "must be an object with `role`");
        return;
    };
    match message.get("role").and_then(Value::as_str) {
        Some("system" | "developer" | "user") => check_content(&at, message, false, problems),
        Some("assistant") => {
            let has_calls = message.get("tool_calls").is_some_and(|calls| {
                check_tool_calls(&at, calls, problems);
                true
            });
            check_content(&at, message, has_calls, problems);
        }
        Some("tool") => {
            require_non_empty_string(message, "tool_call_id", &format!("{at}."), problems);
            check_content(&at, message, false, problems);
        }
        Some(other) => problems.add(
            &at,
            format!("role `{other}` must be system, developer, user, assistant or tool"),
        ),
        None => problems.add(&at, "`role` is required"),
    }
}

/// `content` is a string or an array of parts; it may be null or absent only on an
/// assistant message that makes tool calls.
fn check_content(
    at: &str,
    message: &Map<String, Value>,
    may_be_null: bool,
    problems: &mut Problems,
) {
    match message.get("content") {
        Some(Value::String(_)) => {}
        Some(Value::Array(parts)) => {
            let user = message.get("role").and_then(Value::as_str) == Some("user");
            for (index, part) in parts.iter().enumerate() {
                let part_at = format!("{at}.content[{index}]");
                match part.get("type").and_then(Value::as_str) {
                    Some("text") if part.get("text").is_some_and(Value::is_string) => {}
                    Some("text") => problems.add(&part_at, "a text part needs a string `text`"),
                    // `{"type": "image_url", "image_url": {"url": ...}}`, user messages only.
                    Some("image_url") if user => {
                        if !part["image_url"].get("url").is_some_and(Value::is_string) {
                            problems.add(&part_at, "an image_url part needs `image_url.url`");
                        }
                    }
                    Some("image_url") => {
                        problems.add(&part_at, "image parts belong to user messages")
                    }
                    Some(_) => {}
                    None => problems.add(&part_at, "a content part needs a string `type`"),
                }
            }
        }
        None | Some(Value::Null) if may_be_null => {}
        None | Some(Value::Null) => problems.add(
            format_args!("{at}.content"),
            "required (a string or an array of content parts)",
        ),
        Some(_) => problems.add(
            format_args!("{at}.content"),
            "must be a string or an array of content parts",
        ),
    }
}

fn check_tool_calls(at: &str, calls: &Value, problems: &mut Problems) {
    let calls = match calls.as_array() {
        Some(calls) if !calls.is_empty() => calls,
        _ => {
            problems.add(
                format_args!("{at}.tool_calls"),
                "must be a non-empty array (omit it when there are no calls)",
            );
            return;
        }
    };
    for (index, call) in calls.iter().enumerate() {
        let call_at = format!("{at}.tool_calls[{index}]");
        let Some(call) = call.as_object() else {
            problems.add(&call_at, "must be an object");
            continue;
        };
        require_non_empty_string(call, "id", &format!("{call_at}."), problems);
        if call.get("type").and_then(Value::as_str) != Some("function") {
            problems.add(&call_at, "type must be \"function\"");
        }
        let function = call.get("function");
        check_tool_name(function.and_then(|f| f.get("name")), &call_at, problems);
        if !function
            .and_then(|f| f.get("arguments"))
            .is_some_and(Value::is_string)
        {
            problems.add(
                &call_at,
                "function.arguments must be a string (JSON text, not an object)",
            );
        }
    }
}

/// The assistant message whose tool calls the following `tool` messages answer.
struct OpenCalls<'a> {
    index: usize,
    answers: Vec<(&'a str, usize)>,
}

impl OpenCalls<'_> {
    fn close(self, closed_by: &str, problems: &mut Problems) {
        for (id, count) in self.answers {
            if count == 0 {
                problems.add(
                    format_args!("messages[{}]", self.index),
                    format!(
                        "tool call `{id}` is not answered by a `tool` message before {closed_by}"
                    ),
                );
            }
        }
    }
}

/// Every assistant tool call is answered by exactly one `tool` message before the next
/// non-tool message, and every `tool` message answers a call of that assistant message.
fn check_pairing(messages: &[Value], problems: &mut Problems) {
    let mut open: Option<OpenCalls> = None;
    for (index, message) in messages.iter().enumerate() {
        let role = message.get("role").and_then(Value::as_str);
        if role == Some("tool") {
            let id = message
                .get("tool_call_id")
                .and_then(Value::as_str)
                .unwrap_or_default();
            answer(open.as_mut(), index, id, problems);
            continue;
        }
        if let Some(calls) = open.take() {
            calls.close(&format!("messages[{index}]"), problems);
        }
        if role == Some("assistant") {
            open = assistant_calls(index, message);
        }
    }
    if let Some(calls) = open {
        calls.close("the end of the conversation", problems);
    }
}

fn assistant_calls(index: usize, message: &Value) -> Option<OpenCalls<'_>> {
    let calls = message.get("tool_calls")?.as_array()?;
    let mut answers: Vec<(&str, usize)> = Vec::new();
    for id in calls
        .iter()
        .filter_map(|call| call.get("id").and_then(Value::as_str))
    {
        if !answers.iter().any(|(seen, _)| *seen == id) {
            answers.push((id, 0));
        }
    }
    Some(OpenCalls { index, answers })
}

fn answer(open: Option<&mut OpenCalls>, index: usize, id: &str, problems: &mut Problems) {
    let at = format!("messages[{index}]");
    let Some(open) = open else {
        problems.add(
            at,
            "a `tool` message must follow an assistant message with tool_calls (or another tool message answering it)",
        );
        return;
    };
    let Some((_, count)) = open.answers.iter_mut().find(|(call, _)| *call == id) else {
        problems.add(
            at,
            format!(
                "tool_call_id `{id}` does not match any tool call of messages[{}]",
                open.index
            ),
        );
        return;
    };
    *count += 1;
    if *count == 2 {
        problems.add(
            at,
            format!(
                "tool call `{id}` is answered more than once; exactly one tool message is allowed"
            ),
        );
    }
}
