//! The request validator on good bodies and on each mistake the real APIs reject.

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::common::scripted_server::validate::{anthropic_body, openai_body, responses_body};

/// A mutation of a good body and exactly the problems it must produce.
type Case = (&'static str, fn(&mut Value), &'static [&'static str]);

fn array(value: &mut Value) -> &mut Vec<Value> {
    value.as_array_mut().expect("an array")
}

fn object(value: &mut Value) -> &mut serde_json::Map<String, Value> {
    value.as_object_mut().expect("an object")
}

fn check_cases(validate: fn(&Value) -> Vec<String>, good: &Value, cases: &[Case]) {
    assert_eq!(validate(good), Vec::<String>::new(), "the good body");
    for (name, mutate, expected) in cases {
        let mut body = good.clone();
        mutate(&mut body);
        assert_eq!(validate(&body), *expected, "case: {name}");
    }
}

/// A two-call tool round trip with thinking, cache breakpoints and an environment
/// block after the tool results: everything duet sends.
fn good_anthropic() -> Value {
    json!({
        "model": "claude-scripted",
        "max_tokens": 4096,
        "stream": true,
        "system": [{ "type": "text", "text": "You are duet.", "cache_control": { "type": "ephemeral" } }],
        "tools": [
            {
                "name": "read",
                "description": "Read a file.",
                "input_schema": { "type": "object", "properties": { "path": { "type": "string" } } },
            },
            { "name": "glob", "input_schema": { "type": "object" }, "cache_control": { "type": "ephemeral" } },
        ],
        "thinking": { "type": "enabled", "budget_tokens": 1024 },
        "messages": [
            { "role": "user", "content": "Read a.txt and b.txt." },
            {
                "role": "assistant",
                "content": [
                    { "type": "thinking", "thinking": "Two reads.", "signature": "sig" },
                    { "type": "text", "text": "Reading." },
                    { "type": "tool_use", "id": "toolu_1", "name": "read", "input": { "path": "a.txt" } },
                    { "type": "tool_use", "id": "toolu_2", "name": "read", "input": { "path": "b.txt" } },
                ],
            },
            {
                "role": "user",
                "content": [
                    { "type": "tool_result", "tool_use_id": "toolu_2", "content": "B" },
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_1",
                        "content": [{ "type": "text", "text": "no such file" }],
                        "is_error": true,
                        "cache_control": { "type": "ephemeral" },
                    },
                    { "type": "text", "text": "<environment>cwd: /work</environment>" },
                ],
            },
        ],
    })
}

#[test]
fn anthropic_accepts_other_valid_shapes() {
    let plain = json!({
        "model": "m",
        "max_tokens": 10,
        "stream": true,
        "system": "Be brief.",
        "messages": [
            { "role": "user", "content": [{ "type": "text", "text": "hi" }] },
            { "role": "assistant", "content": [] },
        ],
    });
    assert_eq!(anthropic_body(&plain), Vec::<String>::new());
}

#[test]
fn anthropic_rejects_what_the_api_rejects() {
    let cases: &[Case] = &[
        (
            "not an object",
            |b| *b = json!([1]),
            &["the request body must be a JSON object"],
        ),
        (
            "no model",
            |b| drop(object(b).remove("model")),
            &["model: required"],
        ),
        (
            "no max_tokens",
            |b| drop(object(b).remove("max_tokens")),
            &["max_tokens: required"],
        ),
        (
            "zero max_tokens",
            |b| b["max_tokens"] = json!(0),
            &[
                "max_tokens: must be a positive integer",
                "thinking.budget_tokens: must be an integer ≥ 1024 and less than max_tokens",
            ],
        ),
        (
            "not streaming",
            |b| b["stream"] = json!(false),
            &[
                "stream: must be true (duet always streams; this server only answers streaming requests)",
            ],
        ),
        (
            "no messages",
            |b| b["messages"] = json!([]),
            &["messages: must not be empty"],
        ),
        (
            "starts with assistant",
            |b| {
                b["messages"] = json!([
                    { "role": "assistant", "content": "hi" },
                    { "role": "user", "content": "x" },
                ])
            },
            &["messages[0]: the first message must use the `user` role"],
        ),
        (
            "two user messages in a row",
            |b| array(&mut b["messages"]).insert(0, json!({ "role": "user", "content": "again" })),
            &["messages[1]: roles must alternate, but messages[0] is also `user`"],
        ),
        (
            "system role in messages",
            |b| b["messages"][0]["role"] = json!("system"),
            &[
                "messages[0]: role `system` must be `user` or `assistant` (system text goes in the top-level `system`)",
            ],
        ),
        (
            "empty content array",
            |b| b["messages"][0]["content"] = json!([]),
            &[
                "messages[0]: all messages must have non-empty content except for the optional final assistant message",
            ],
        ),
        (
            "empty text block",
            |b| b["messages"][1]["content"][1]["text"] = json!(""),
            &["messages[1].content[1]: text content blocks must be non-empty"],
        ),
        (
            "thinking in a user message",
            |b| {
                b["messages"][0]["content"] =
                    json!([{ "type": "thinking", "thinking": "t", "signature": "s" }])
            },
            &["messages[0].content[0]: `thinking` blocks are only allowed in `assistant` messages"],
        ),
        (
            "tool_use input as a string",
            |b| b["messages"][1]["content"][2]["input"] = json!("{\"path\": \"a.txt\"}"),
            &["messages[1].content[2].input: tool_use.input must be an object"],
        ),
        (
            "a tool_use without its result",
            |b| drop(array(&mut b["messages"][2]["content"]).remove(0)),
            &[
                "messages[1]: tool_use `toolu_2` has no tool_result in the immediately following user message",
            ],
        ),
        (
            "a tool_use answered twice",
            |b| {
                let extra =
                    json!({ "type": "tool_result", "tool_use_id": "toolu_1", "content": "A" });
                array(&mut b["messages"][2]["content"]).insert(0, extra);
            },
            &[
                "messages[2]: tool_use `toolu_1` is answered by 2 tool_result blocks; exactly one is allowed",
            ],
        ),
        (
            "a result for an unknown tool_use",
            |b| b["messages"][2]["content"][0]["tool_use_id"] = json!("toolu_9"),
            &[
                "messages[1]: tool_use `toolu_2` has no tool_result in the immediately following user message",
                "messages[2]: tool_result for `toolu_9` does not answer a tool_use in the immediately preceding assistant message",
            ],
        ),
        (
            "text before a tool_result",
            |b| {
                let text = json!({ "type": "text", "text": "between" });
                array(&mut b["messages"][2]["content"]).insert(1, text);
            },
            &[
                "messages[2].content[2]: tool_result blocks must come first in the user message's content, before any other block",
            ],
        ),
        (
            "a reused tool_use id",
            |b| {
                let messages = array(&mut b["messages"]);
                messages.push(json!({
                    "role": "assistant",
                    "content": [{ "type": "tool_use", "id": "toolu_1", "name": "read", "input": {} }],
                }));
                messages.push(json!({
                    "role": "user",
                    "content": [{ "type": "tool_result", "tool_use_id": "toolu_1", "content": "A" }],
                }));
            },
            &["messages: tool_use ids must be unique, but `toolu_1` appears 2 times"],
        ),
        (
            "tool blocks without tools",
            |b| drop(object(b).remove("tools")),
            &["tools: requests that include tool_use or tool_result blocks must define tools"],
        ),
        (
            "a malformed tool name",
            |b| b["tools"][0]["name"] = json!("read file"),
            &["tools[0]: tool name `read file` must match ^[a-zA-Z0-9_-]{1,64}$"],
        ),
        (
            "duplicate tool names",
            |b| b["tools"][1]["name"] = json!("read"),
            &["tools[1]: tool names must be unique; `read` repeats"],
        ),
        (
            "a tool without input_schema",
            |b| drop(object(&mut b["tools"][0]).remove("input_schema")),
            &[
                "tools[0]: input_schema is required and must be a JSON Schema with \"type\": \"object\"",
            ],
        ),
        (
            "a thinking budget below the minimum",
            |b| b["thinking"]["budget_tokens"] = json!(512),
            &["thinking.budget_tokens: must be an integer ≥ 1024 and less than max_tokens"],
        ),
        (
            "more than four cache breakpoints",
            |b| {
                let breakpoint = json!({ "type": "ephemeral" });
                b["messages"][1]["content"][1]["cache_control"] = breakpoint.clone();
                b["messages"][2]["content"][2]["cache_control"] = breakpoint;
            },
            &["cache_control: a maximum of 4 blocks with cache_control may be provided, found 5"],
        ),
    ];
    check_cases(anthropic_body, &good_anthropic(), cases);
}

/// A two-call tool round trip answered in reverse order, then the environment block.
fn good_openai() -> Value {
    json!({
        "model": "gpt-scripted",
        "stream": true,
        "stream_options": { "include_usage": true },
        "max_completion_tokens": 1024,
        "tools": [{
            "type": "function",
            "function": {
                "name": "read",
                "description": "Read a file.",
                "parameters": { "type": "object", "properties": { "path": { "type": "string" } } },
            },
        }],
        "messages": [
            { "role": "system", "content": "You are duet." },
            { "role": "user", "content": "Read a.txt and b.txt." },
            {
                "role": "assistant",
                "content": null,
                "tool_calls": [
                    { "id": "call_1", "type": "function", "function": { "name": "read", "arguments": "{\"path\":\"a.txt\"}" } },
                    { "id": "call_2", "type": "function", "function": { "name": "read", "arguments": "{\"path\":\"b.txt\"}" } },
                ],
            },
            { "role": "tool", "tool_call_id": "call_2", "content": "B" },
            { "role": "tool", "tool_call_id": "call_1", "content": [{ "type": "text", "text": "A" }] },
            { "role": "user", "content": "<environment>cwd: /work</environment>" },
        ],
    })
}

#[test]
fn openai_rejects_what_the_api_rejects() {
    let cases: &[Case] = &[
        (
            "not an object",
            |b| *b = json!("hi"),
            &["the request body must be a JSON object"],
        ),
        (
            "no model",
            |b| drop(object(b).remove("model")),
            &["model: required"],
        ),
        (
            "not streaming",
            |b| drop(object(b).remove("stream")),
            &[
                "stream: must be true (duet always streams; this server only answers streaming requests)",
            ],
        ),
        (
            "no messages",
            |b| drop(object(b).remove("messages")),
            &["messages: required"],
        ),
        (
            "empty messages",
            |b| b["messages"] = json!([]),
            &["messages: must not be empty"],
        ),
        (
            "an unknown role",
            |b| b["messages"][0]["role"] = json!("function"),
            &["messages[0]: role `function` must be system, developer, user, assistant or tool"],
        ),
        (
            "a tool message without tool_call_id",
            |b| drop(object(&mut b["messages"][3]).remove("tool_call_id")),
            &[
                "messages[3].tool_call_id: required",
                "messages[3]: tool_call_id `` does not match any tool call of messages[2]",
                "messages[2]: tool call `call_2` is not answered by a `tool` message before messages[5]",
            ],
        ),
        (
            "an unanswered call",
            |b| drop(array(&mut b["messages"]).remove(3)),
            &[
                "messages[2]: tool call `call_2` is not answered by a `tool` message before messages[4]",
            ],
        ),
        (
            "a call answered twice",
            |b| {
                let again = json!({ "role": "tool", "tool_call_id": "call_1", "content": "A" });
                array(&mut b["messages"]).insert(5, again);
            },
            &[
                "messages[5]: tool call `call_1` is answered more than once; exactly one tool message is allowed",
            ],
        ),
        (
            "an answer to an unknown call",
            |b| b["messages"][3]["tool_call_id"] = json!("call_9"),
            &[
                "messages[3]: tool_call_id `call_9` does not match any tool call of messages[2]",
                "messages[2]: tool call `call_2` is not answered by a `tool` message before messages[5]",
            ],
        ),
        (
            "a tool message after a user message",
            |b| {
                let late = json!({ "role": "tool", "tool_call_id": "call_1", "content": "A" });
                array(&mut b["messages"]).push(late);
            },
            &[
                "messages[6]: a `tool` message must follow an assistant message with tool_calls (or another tool message answering it)",
            ],
        ),
        (
            "a conversation ending with open calls",
            |b| array(&mut b["messages"]).truncate(3),
            &[
                "messages[2]: tool call `call_1` is not answered by a `tool` message before the end of the conversation",
                "messages[2]: tool call `call_2` is not answered by a `tool` message before the end of the conversation",
            ],
        ),
        (
            "arguments as an object",
            |b| {
                b["messages"][2]["tool_calls"][0]["function"]["arguments"] =
                    json!({ "path": "a.txt" })
            },
            &[
                "messages[2].tool_calls[0]: function.arguments must be a string (JSON text, not an object)",
            ],
        ),
        (
            "an empty tool_calls array",
            |b| {
                b["messages"][2]["tool_calls"] = json!([]);
                array(&mut b["messages"]).drain(3..5);
            },
            &[
                "messages[2].tool_calls: must be a non-empty array (omit it when there are no calls)",
            ],
        ),
        (
            "an assistant message with neither content nor calls",
            |b| array(&mut b["messages"]).push(json!({ "role": "assistant", "content": null })),
            &["messages[6].content: required (a string or an array of content parts)"],
        ),
        (
            "a malformed tool name",
            |b| b["tools"][0]["function"]["name"] = json!("read file"),
            &["tools[0].function: tool name `read file` must match ^[a-zA-Z0-9_-]{1,64}$"],
        ),
    ];
    check_cases(openai_body, &good_openai(), cases);
}

/// A stateless two-call round trip with a reasoning item before the calls.
fn good_responses() -> Value {
    json!({
        "model": "gpt-scripted",
        "instructions": "You are duet.",
        "stream": true,
        "store": false,
        "include": ["reasoning.encrypted_content"],
        "max_output_tokens": 1024,
        "parallel_tool_calls": true,
        "tools": [{
            "type": "function",
            "name": "read",
            "description": "Read a file.",
            "parameters": { "type": "object", "properties": { "path": { "type": "string" } } },
            "strict": false,
        }],
        "input": [
            { "type": "message", "role": "user",
              "content": [{ "type": "input_text", "text": "Read a.txt and b.txt." }] },
            { "type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAAA" },
            { "type": "message", "role": "assistant",
              "content": [{ "type": "output_text", "text": "Reading both." }] },
            { "type": "function_call", "call_id": "call_1", "name": "read", "arguments": "{\"path\":\"a.txt\"}" },
            { "type": "function_call", "call_id": "call_2", "name": "read", "arguments": "{\"path\":\"b.txt\"}" },
            { "type": "function_call_output", "call_id": "call_2", "output": "B" },
            { "type": "function_call_output", "call_id": "call_1", "output": "A" },
            { "type": "message", "role": "user",
              "content": [{ "type": "input_text", "text": "<environment>cwd: /work</environment>" }] },
        ],
    })
}

#[test]
fn responses_rejects_what_the_api_rejects() {
    let cases: &[Case] = &[
        (
            "a call without its output",
            |b| {
                array(&mut b["input"]).remove(5);
            },
            &["input[4]: No tool output found for function call call_2."],
        ),
        (
            "an output without its call",
            |b| {
                array(&mut b["input"]).remove(3);
            },
            &["input[5]: No tool call found for function call output with call_id call_1."],
        ),
        (
            "an output answered twice",
            |b| {
                let again = b["input"][5].clone();
                array(&mut b["input"]).insert(6, again);
            },
            &["input[6]: call `call_2` has more than one function_call_output"],
        ),
        (
            "an output before its call",
            |b| {
                let output = array(&mut b["input"]).remove(6);
                array(&mut b["input"]).insert(1, output);
            },
            &[
                "input[1]: No tool call found for function call output with call_id call_1.",
                "input[4]: No tool output found for function call call_1.",
            ],
        ),
        (
            "a stateless reasoning item without its encrypted content",
            |b| {
                object(&mut b["input"][1]).remove("encrypted_content");
            },
            &[
                "input[1]: with store: false a reasoning item must carry its encrypted_content string",
            ],
        ),
        (
            "chat completions shapes",
            |b| {
                b["tools"][0] = json!({ "type": "function", "function": { "name": "read" } });
                b["messages"] = json!([]);
            },
            &[
                "messages: unknown parameter (the Responses API takes `input`)",
                "tools[0]: unknown parameter `function` (Responses tools are flat: name, parameters, ...)",
                "tools[0]: `name` is required and must be a string",
            ],
        ),
        (
            "an assistant message with input_text parts",
            |b| b["input"][2]["content"][0]["type"] = json!("input_text"),
            &[
                "input[2].content[0]: this role's text parts are {\"type\": \"output_text\", \"text\": ...}",
            ],
        ),
        (
            "arguments as an object and an unknown item type",
            |b| {
                b["input"][3]["arguments"] = json!({ "path": "a.txt" });
                b["input"][7]["type"] = json!("user_message");
            },
            &[
                "input[3]: arguments must be a string (JSON text, not an object)",
                "input[7]: type `user_message` must be message, function_call, function_call_output or reasoning",
            ],
        ),
        (
            "not streaming, no input",
            |b| {
                b["stream"] = json!(false);
                object(b).remove("input");
            },
            &[
                "stream: must be true (duet always streams; this server only answers streaming requests)",
                "input: required",
            ],
        ),
    ];
    check_cases(responses_body, &good_responses(), cases);
}
