//! OpenAI Responses request checks (see the parent module for the contract), and the
//! ledger that checks reasoning items come back as the server sent them.

use std::collections::HashMap;

use serde_json::{Map, Value};

use super::{
    Mode, Problems, check_model_and_stream, check_tool_name, positive_integer,
    require_non_empty_string,
};

pub(super) fn body(body: &Value, mode: Mode) -> Vec<String> {
    let Some(request) = body.as_object() else {
        return vec!["the request body must be a JSON object".into()];
    };
    let mut problems = Problems::default();
    check_model_and_stream(request, &mut problems);
    positive_integer(
        request.get("max_output_tokens"),
        "max_output_tokens",
        &mut problems,
    );
    if request.get("messages").is_some() {
        problems.add(
            "messages",
            "unknown parameter (the Responses API takes `input`)",
        );
    }
    if let Some(instructions) = request.get("instructions")
        && !instructions.is_string()
    {
        problems.add("instructions", "must be a string");
    }
    if let Some(include) = request.get("include")
        && !include
            .as_array()
            .is_some_and(|items| items.iter().all(Value::is_string))
    {
        problems.add("include", "must be an array of strings");
    }
    if let Some(tools) = request.get("tools") {
        check_tools(tools, mode, &mut problems);
    }
    let stateless = request.get("store") == Some(&Value::Bool(false));
    match request.get("input") {
        Some(Value::Array(items)) if items.is_empty() => problems.add("input", "must not be empty"),
        Some(Value::Array(items)) => {
            for (index, item) in items.iter().enumerate() {
                check_item(index, item, stateless, mode, &mut problems);
            }
            check_pairing(items, &mut problems);
        }
        Some(_) => problems.add("input", "must be an array of input items"),
        None => problems.add("input", "required"),
    }
    problems.into_vec()
}

fn check_tools(tools: &Value, mode: Mode, problems: &mut Problems) {
    let Some(tools) = tools.as_array() else {
        problems.add("tools", "must be an array");
        return;
    };
    for (index, tool) in tools.iter().enumerate() {
        let at = format!("tools[{index}]");
        let kind = tool.get("type").and_then(Value::as_str);
        match (kind, mode) {
            (Some("function"), _) => {}
            (Some("custom"), Mode::Peer) => {
                check_tool_name(tool.get("name"), &at, problems);
                continue;
            }
            // Built-in tools (web_search, tool_search, ...) carry no name or schema.
            (Some(_), Mode::Peer) => continue,
            _ => problems.add(&at, "type must be \"function\""),
        }
        if tool.get("function").is_some() {
            problems.add(
                &at,
                "unknown parameter `function` (Responses tools are flat: name, parameters, ...)",
            );
        }
        check_tool_name(tool.get("name"), &at, problems);
        if tool.get("parameters").is_some_and(|p| !p.is_object()) {
            problems.add(&at, "parameters must be a JSON Schema object");
        }
        if tool
            .get("strict")
            .is_some_and(|strict| !strict.is_boolean())
        {
            problems.add(&at, "strict must be a boolean");
        }
    }
}

fn check_item(index: usize, item: &Value, stateless: bool, mode: Mode, problems: &mut Problems) {
    let at = format!("input[{index}]");
    let Some(item) = item.as_object() else {
        problems.add(&at, "must be an object");
        return;
    };
    let field_at = format!("{at}.");
    match item.get("type").and_then(Value::as_str) {
        Some("message") => check_message(&at, item, problems),
        Some("function_call") => {
            require_non_empty_string(item, "call_id", &field_at, problems);
            check_tool_name(item.get("name"), &at, problems);
            if !item.get("arguments").is_some_and(Value::is_string) {
                problems.add(&at, "arguments must be a string (JSON text, not an object)");
            }
        }
        Some("function_call_output") => {
            require_non_empty_string(item, "call_id", &field_at, problems);
            if !item.get("output").is_some_and(Value::is_string) {
                problems.add(&at, "output must be a string");
            }
        }
        Some("custom_tool_call") if mode == Mode::Peer => {
            require_non_empty_string(item, "call_id", &field_at, problems);
            check_tool_name(item.get("name"), &at, problems);
            if !item.get("input").is_some_and(Value::is_string) {
                problems.add(&at, "input must be a string");
            }
        }
        Some("custom_tool_call_output") if mode == Mode::Peer => {
            require_non_empty_string(item, "call_id", &field_at, problems);
            if !item
                .get("output")
                .is_some_and(|output| output.is_string() || output.is_array())
            {
                problems.add(&at, "output must be a string or an array of content parts");
            }
        }
        Some("reasoning") => {
            require_non_empty_string(item, "id", &field_at, problems);
            if !item.get("summary").is_some_and(Value::is_array) {
                problems.add(&at, "summary must be an array (possibly empty)");
            }
            match item.get("encrypted_content") {
                Some(Value::String(_)) => {}
                None if !stateless => {}
                _ => problems.add(
                    &at,
                    "with store: false a reasoning item must carry its encrypted_content string",
                ),
            }
        }
        Some(other) => problems.add(
            &at,
            format!(
                "type `{other}` must be message, function_call, function_call_output or reasoning"
            ),
        ),
        None => problems.add(&at, "`type` is required"),
    }
}

/// User (and system) parts are `input_text`; the assistant's are `output_text`.
fn check_message(at: &str, item: &Map<String, Value>, problems: &mut Problems) {
    let part_type = match item.get("role").and_then(Value::as_str) {
        Some("user" | "system" | "developer") => "input_text",
        Some("assistant") => "output_text",
        other => {
            problems.add(
                at,
                format!("role {other:?} must be user, system, developer or assistant"),
            );
            return;
        }
    };
    let Some(parts) = item.get("content").and_then(Value::as_array) else {
        if !item.get("content").is_some_and(Value::is_string) {
            problems.add(
                format_args!("{at}.content"),
                "must be a string or an array of parts",
            );
        }
        return;
    };
    if parts.is_empty() {
        problems.add(format_args!("{at}.content"), "must not be empty");
    }
    for (index, part) in parts.iter().enumerate() {
        let kind = part.get("type").and_then(Value::as_str);
        // The user's images: `{"type": "input_image", "image_url": URL}` (a `data:`
        // URL or a fetchable one) or a `file_id`.
        if part_type == "input_text" && kind == Some("input_image") {
            let has_source = part.get("image_url").is_some_and(Value::is_string)
                || part.get("file_id").is_some_and(Value::is_string);
            if !has_source {
                problems.add(
                    format_args!("{at}.content[{index}]"),
                    "an input_image part needs a string `image_url` or `file_id`",
                );
            }
            continue;
        }
        if kind != Some(part_type) || !part.get("text").is_some_and(Value::is_string) {
            problems.add(
                format_args!("{at}.content[{index}]"),
                format!("this role's text parts are {{\"type\": \"{part_type}\", \"text\": ...}}"),
            );
        }
    }
}

/// Every `function_call` has exactly one `function_call_output` after it, and every
/// output answers a call made before it; the same for custom tool calls (which only peer
/// mode lets through [`check_item`]).
fn check_pairing(items: &[Value], problems: &mut Problems) {
    let mut calls: Vec<(&str, usize, usize)> = Vec::new();
    for (index, item) in items.iter().enumerate() {
        let call_id = item.get("call_id").and_then(Value::as_str).unwrap_or("");
        match item.get("type").and_then(Value::as_str) {
            Some("function_call" | "custom_tool_call") => {
                if calls.iter().any(|(id, _, _)| *id == call_id) {
                    problems.add(
                        format_args!("input[{index}]"),
                        format!("call_id `{call_id}` is used by two function calls"),
                    );
                } else {
                    calls.push((call_id, index, 0));
                }
            }
            Some("function_call_output" | "custom_tool_call_output") => {
                match calls.iter_mut().find(|(id, _, _)| *id == call_id) {
                    Some((_, _, outputs)) => {
                        *outputs += 1;
                        if *outputs == 2 {
                            problems.add(
                                format_args!("input[{index}]"),
                                format!("call `{call_id}` has more than one function_call_output"),
                            );
                        }
                    }
                    None => problems.add(
                        format_args!("input[{index}]"),
                        format!(
                            "No tool call found for function call output with call_id {call_id}."
                        ),
                    ),
                }
            }
            _ => {}
        }
    }
    for (call_id, index, outputs) in calls {
        if outputs == 0 {
            problems.add(
                format_args!("input[{index}]"),
                format!("No tool output found for function call {call_id}."),
            );
        }
    }
}

/// The reasoning items the server streamed, and which calls each one led to.
///
/// A client that keeps no state on the server (`store: false`) must send a step's
/// reasoning items back verbatim, in order, before that step's function calls: the
/// model then continues its own train of thought. [`ReasoningLedger::check`] holds a
/// request to that.
#[derive(Debug, Default)]
pub struct ReasoningLedger {
    /// Every reasoning item sent, by id.
    items: HashMap<String, Value>,
    /// For each call id sent: the ids of the reasoning items streamed before it in the
    /// same response, in order.
    reasoning_before_call: HashMap<String, Vec<String>>,
}

impl ReasoningLedger {
    /// Records the `output` items of one streamed response, in their order.
    pub fn record(&mut self, output: &[Value]) {
        let mut reasoning_so_far = Vec::new();
        for item in output {
            match item["type"].as_str() {
                Some("reasoning") => {
                    let id = item["id"].as_str().unwrap_or_default().to_owned();
                    self.items.insert(id.clone(), item.clone());
                    reasoning_so_far.push(id);
                }
                Some("function_call") => {
                    let call_id = item["call_id"].as_str().unwrap_or_default().to_owned();
                    self.reasoning_before_call
                        .insert(call_id, reasoning_so_far.clone());
                }
                _ => {}
            }
        }
    }

    /// Problems with how `body` carries the reasoning items the server sent.
    pub fn check(&self, body: &Value) -> Vec<String> {
        let mut problems = Problems::default();
        let items = body["input"].as_array().map(Vec::as_slice).unwrap_or(&[]);
        let mut reasoning_seen: Vec<&str> = Vec::new();
        for (index, item) in items.iter().enumerate() {
            let at = format!("input[{index}]");
            match item["type"].as_str() {
                Some("reasoning") => {
                    let id = item["id"].as_str().unwrap_or_default();
                    match self.items.get(id) {
                        Some(sent) if sent == item => reasoning_seen.push(id),
                        Some(sent) => problems.add(
                            &at,
                            format!("reasoning item `{id}` must come back verbatim: sent {sent}, got {item}"),
                        ),
                        None => problems.add(
                            &at,
                            format!("reasoning item `{id}` was never sent by this server"),
                        ),
                    }
                }
                Some("function_call") => {
                    let call_id = item["call_id"].as_str().unwrap_or_default();
                    let Some(expected) = self.reasoning_before_call.get(call_id) else {
                        continue;
                    };
                    let present: Vec<&str> = reasoning_seen
                        .iter()
                        .copied()
                        .filter(|id| expected.iter().any(|wanted| wanted == id))
                        .collect();
                    if present != *expected {
                        problems.add(
                            &at,
                            format!(
                                "function call `{call_id}` must be preceded by its step's reasoning items {expected:?} in order, found {present:?}"
                            ),
                        );
                    }
                }
                _ => {}
            }
        }
        problems.into_vec()
    }
}
