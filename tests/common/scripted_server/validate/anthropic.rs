//! Anthropic Messages request checks (see the parent module for the contract).

use std::collections::{HashMap, HashSet};

use serde_json::{Map, Value};

use super::{
    Mode, Problems, check_model_and_stream, check_tool_name, positive_integer,
    require_non_empty_string,
};

/// The API allows at most this many `cache_control` breakpoints per request.
const MAX_CACHE_BREAKPOINTS: usize = 4;
/// Smallest `thinking.budget_tokens` the API accepts.
const MIN_THINKING_BUDGET: u64 = 1024;

pub(super) fn body(body: &Value, mode: Mode) -> Vec<String> {
    let Some(request) = body.as_object() else {
        return vec!["the request body must be a JSON object".into()];
    };
    let mut check = Check {
        mode,
        ..Check::default()
    };
    check_model_and_stream(request, &mut check.problems);
    match request.get("max_tokens") {
        None => check.problems.add("max_tokens", "required"),
        max_tokens => positive_integer(max_tokens, "max_tokens", &mut check.problems),
    }
    if let Some(system) = request.get("system") {
        check.system(system);
    }
    let tools_defined = request.get("tools").is_some_and(|tools| check.tools(tools));
    if let Some(thinking) = request.get("thinking") {
        check.thinking(thinking, request.get("max_tokens").and_then(Value::as_u64));
    }
    if let Some(cache_control) = request.get("cache_control") {
        check.cache_control("cache_control", cache_control);
    }
    match request.get("messages") {
        Some(Value::Array(messages)) if messages.is_empty() => {
            check.problems.add("messages", "must not be empty");
        }
        Some(Value::Array(messages)) => check.messages(messages, tools_defined),
        Some(_) => check.problems.add("messages", "must be an array"),
        None => check.problems.add("messages", "required"),
    }
    if check.cache_breakpoints > MAX_CACHE_BREAKPOINTS {
        check.problems.add(
            "cache_control",
            format!(
                "a maximum of {MAX_CACHE_BREAKPOINTS} blocks with cache_control may be provided, found {}",
                check.cache_breakpoints
            ),
        );
    }
    check.problems.into_vec()
}

#[derive(Default)]
struct Check {
    problems: Problems,
    cache_breakpoints: usize,
    mode: Mode,
}

/// What the pairing checks need from one message.
#[derive(Default)]
struct Turn<'a> {
    /// Position in `messages`.
    at: usize,
    role: Option<&'a str>,
    tool_uses: Vec<&'a str>,
    tool_results: Vec<&'a str>,
    /// A non-tool_result block has been seen (tool_results must come first).
    other_content: bool,
}

impl Check {
    fn cache_control(&mut self, at: &str, value: &Value) {
        self.cache_breakpoints += 1;
        let kind = value.get("type").and_then(Value::as_str);
        let ttl = value.get("ttl");
        if kind != Some("ephemeral") {
            self.problems
                .add(at, "cache_control must be {\"type\": \"ephemeral\"}");
        } else if ttl.is_some_and(|ttl| ttl != "5m" && ttl != "1h") {
            self.problems
                .add(at, "cache_control.ttl must be \"5m\" or \"1h\"");
        }
    }

    fn block_cache_control(&mut self, at: &str, block: &Value) {
        if let Some(cache_control) = block.get("cache_control") {
            self.cache_control(at, cache_control);
        }
    }

    fn system(&mut self, system: &Value) {
        match system {
            Value::String(_) => {}
            Value::Array(blocks) => {
                for (index, block) in blocks.iter().enumerate() {
                    let at = format!("system[{index}]");
                    if block.get("type").and_then(Value::as_str) != Some("text") {
                        self.problems.add(&at, "system blocks must be text blocks");
                    }
                    self.text_block(&at, block);
                }
            }
            _ => self
                .problems
                .add("system", "must be a string or an array of text blocks"),
        }
    }

    fn text_block(&mut self, at: &str, block: &Value) {
        match block.get("text") {
            Some(Value::String(text)) if !text.is_empty() => {}
            Some(Value::String(_)) => self
                .problems
                .add(at, "text content blocks must be non-empty"),
            _ => self.problems.add(at, "a text block needs a string `text`"),
        }
        self.block_cache_control(at, block);
    }

    /// Returns whether the request defines at least one tool.
    fn tools(&mut self, tools: &Value) -> bool {
        let Some(tools) = tools.as_array() else {
            self.problems.add("tools", "must be an array");
            return false;
        };
        let mut names = HashSet::new();
        for (index, tool) in tools.iter().enumerate() {
            let at = format!("tools[{index}]");
            check_tool_name(tool.get("name"), &at, &mut self.problems);
            if let Some(name) = tool.get("name").and_then(Value::as_str)
                && !names.insert(name)
            {
                self.problems
                    .add(&at, format!("tool names must be unique; `{name}` repeats"));
            }
            // Versioned server tools (`web_search_20250305`, ...) carry no schema.
            let custom = matches!(
                tool.get("type").and_then(Value::as_str),
                None | Some("custom")
            );
            if custom {
                let schema_type = tool
                    .get("input_schema")
                    .and_then(|schema| schema.get("type"))
                    .and_then(Value::as_str);
                if schema_type != Some("object") {
                    self.problems.add(
                        &at,
                        "input_schema is required and must be a JSON Schema with \"type\": \"object\"",
                    );
                }
                if tool.get("description").is_some_and(|d| !d.is_string()) {
                    self.problems.add(&at, "description must be a string");
                }
            }
            self.block_cache_control(&at, tool);
        }
        !tools.is_empty()
    }

    fn thinking(&mut self, thinking: &Value, max_tokens: Option<u64>) {
        match thinking.get("type").and_then(Value::as_str) {
            Some("enabled") => {
                let budget = thinking.get("budget_tokens").and_then(Value::as_u64);
                let fits = budget.is_some_and(|budget| {
                    budget >= MIN_THINKING_BUDGET && max_tokens.is_none_or(|max| budget < max)
                });
                if !fits {
                    self.problems.add(
                        "thinking.budget_tokens",
                        format!(
                            "must be an integer ≥ {MIN_THINKING_BUDGET} and less than max_tokens"
                        ),
                    );
                }
            }
            Some("disabled" | "adaptive") => {}
            _ => self.problems.add(
                "thinking.type",
                "must be \"enabled\", \"disabled\" or \"adaptive\"",
            ),
        }
    }

    fn messages(&mut self, messages: &[Value], tools_defined: bool) {
        let last = messages.len() - 1;
        let mut turns: Vec<Turn> = messages
            .iter()
            .enumerate()
            .map(|(index, message)| self.message(index, message, index == last))
            .collect();
        // Peer mode: system text between turns (Claude Code sends some) stands apart
        // from the user/assistant alternation and the call/result pairing.
        turns.retain(|turn| turn.role != Some("system"));
        self.roles(&turns);
        self.pairing(&turns);
        self.unique_tool_use_ids(&turns);
        let uses_tools = turns
            .iter()
            .any(|turn| !turn.tool_uses.is_empty() || !turn.tool_results.is_empty());
        if uses_tools && !tools_defined {
            self.problems.add(
                "tools",
                "requests that include tool_use or tool_result blocks must define tools",
            );
        }
    }

    fn message<'a>(&mut self, index: usize, message: &'a Value, is_last: bool) -> Turn<'a> {
        let at = format!("messages[{index}]");
        let Some(object) = message.as_object() else {
            self.problems
                .add(&at, "must be an object with `role` and `content`");
            return Turn::default();
        };
        let mut turn = Turn {
            at: index,
            role: self.role(&at, object),
            ..Turn::default()
        };
        match object.get("content") {
            Some(Value::String(text)) if text.is_empty() => self.problems.add(
                format_args!("{at}.content"),
                "text content must be non-empty",
            ),
            Some(Value::String(_)) => {}
            Some(Value::Array(blocks)) => {
                let final_assistant = is_last && turn.role == Some("assistant");
                if blocks.is_empty() && !final_assistant {
                    self.problems.add(
                        &at,
                        "all messages must have non-empty content except for the optional final assistant message",
                    );
                }
                for (position, block) in blocks.iter().enumerate() {
                    let block_at = format!("{at}.content[{position}]");
                    self.content_block(&block_at, block, &mut turn);
                }
            }
            Some(_) => self.problems.add(
                format_args!("{at}.content"),
                "must be a string or an array of content blocks",
            ),
            None => self.problems.add(format_args!("{at}.content"), "required"),
        }
        turn
    }

    fn role<'a>(&mut self, at: &str, message: &'a Map<String, Value>) -> Option<&'a str> {
        match message.get("role").and_then(Value::as_str) {
            Some(role @ ("user" | "assistant")) => Some(role),
            Some(role @ "system") if self.mode == Mode::Peer => Some(role),
            Some(other) => {
                self.problems.add(
                    at,
                    format!("role `{other}` must be `user` or `assistant` (system text goes in the top-level `system`)"),
                );
                None
            }
            None => {
                self.problems.add(at, "`role` is required");
                None
            }
        }
    }

    /// An image's `source`: `base64` with one of the four media types the API takes and
    /// its data, or a `url`.
    fn image_source(&mut self, at: &str, source: &Value) {
        match source.get("type").and_then(Value::as_str) {
            Some("base64") => {
                let media_type = source.get("media_type").and_then(Value::as_str);
                if !matches!(
                    media_type,
                    Some("image/jpeg" | "image/png" | "image/gif" | "image/webp")
                ) {
                    self.problems.add(
                        format_args!("{at}.source.media_type"),
                        "must be image/jpeg, image/png, image/gif or image/webp",
                    );
                }
                let data = source.get("data").and_then(Value::as_str).unwrap_or("");
                let base64 = |c: char| c.is_ascii_alphanumeric() || matches!(c, '+' | '/' | '=');
                if data.is_empty() || !data.chars().all(base64) {
                    self.problems
                        .add(format_args!("{at}.source.data"), "must be base64 data");
                }
            }
            Some("url") if source.get("url").is_some_and(Value::is_string) => {}
            _ => self.problems.add(
                format_args!("{at}.source"),
                "an image source is {\"type\": \"base64\", \"media_type\", \"data\"} or {\"type\": \"url\", \"url\"}",
            ),
        }
    }

    fn content_block<'a>(&mut self, at: &str, block: &'a Value, turn: &mut Turn<'a>) {
        let Some(kind) = block.get("type").and_then(Value::as_str) else {
            self.problems
                .add(at, "a content block needs a string `type`");
            return;
        };
        let allowed_role = match kind {
            "text" => None,
            "image" | "document" | "tool_result" => Some("user"),
            "thinking" | "redacted_thinking" | "tool_use" => Some("assistant"),
            other => {
                self.problems
                    .add(at, format!("unknown content block type `{other}`"));
                return;
            }
        };
        if let (Some(allowed), Some(role)) = (allowed_role, turn.role)
            && allowed != role
        {
            self.problems.add(
                at,
                format!("`{kind}` blocks are only allowed in `{allowed}` messages"),
            );
        }
        let Some(object) = block.as_object() else {
            return;
        };
        match kind {
            "text" => self.text_block(at, block),
            "image" | "document" => {
                match object.get("source") {
                    Some(source) if source.is_object() && kind == "image" => {
                        self.image_source(at, source);
                    }
                    Some(source) if source.is_object() => {}
                    _ => self
                        .problems
                        .add(at, format!("a `{kind}` block needs a `source` object")),
                }
                self.block_cache_control(at, block);
            }
            "thinking" => {
                for key in ["thinking", "signature"] {
                    if !object.get(key).is_some_and(Value::is_string) {
                        self.problems
                            .add(at, format!("a thinking block needs a string `{key}`"));
                    }
                }
            }
            "redacted_thinking" => {
                if !object.get("data").is_some_and(Value::is_string) {
                    self.problems
                        .add(at, "a redacted_thinking block needs a string `data`");
                }
            }
            "tool_use" => self.tool_use(at, object, turn),
            _ => self.tool_result(at, object, turn),
        }
        if kind != "tool_result" {
            turn.other_content = true;
        }
    }

    fn tool_use<'a>(&mut self, at: &str, block: &'a Map<String, Value>, turn: &mut Turn<'a>) {
        let field = format!("{at}.");
        require_non_empty_string(block, "id", &field, &mut self.problems);
        if let Some(id) = block.get("id").and_then(Value::as_str) {
            turn.tool_uses.push(id);
        }
        check_tool_name(block.get("name"), at, &mut self.problems);
        if !block.get("input").is_some_and(Value::is_object) {
            self.problems.add(
                format_args!("{at}.input"),
                "tool_use.input must be an object",
            );
        }
        if let Some(cache_control) = block.get("cache_control") {
            self.cache_control(at, cache_control);
        }
    }

    fn tool_result<'a>(&mut self, at: &str, block: &'a Map<String, Value>, turn: &mut Turn<'a>) {
        if turn.other_content {
            self.problems.add(
                at,
                "tool_result blocks must come first in the user message's content, before any other block",
            );
        }
        let field = format!("{at}.");
        require_non_empty_string(block, "tool_use_id", &field, &mut self.problems);
        if let Some(id) = block.get("tool_use_id").and_then(Value::as_str) {
            turn.tool_results.push(id);
        }
        match block.get("content") {
            None | Some(Value::String(_)) => {}
            Some(Value::Array(parts)) => {
                for (index, part) in parts.iter().enumerate() {
                    let part_at = format!("{at}.content[{index}]");
                    match part.get("type").and_then(Value::as_str) {
                        Some("text") => self.text_block(&part_at, part),
                        Some("image" | "document") => self.block_cache_control(&part_at, part),
                        _ => self.problems.add(
                            &part_at,
                            "tool_result content blocks must be text, image or document",
                        ),
                    }
                }
            }
            Some(_) => self.problems.add(
                format_args!("{at}.content"),
                "must be a string or an array of content blocks",
            ),
        }
        if block.get("is_error").is_some_and(|flag| !flag.is_boolean()) {
            self.problems
                .add(format_args!("{at}.is_error"), "must be a boolean");
        }
        if let Some(cache_control) = block.get("cache_control") {
            self.cache_control(at, cache_control);
        }
    }

    fn roles(&mut self, turns: &[Turn]) {
        if turns.first().and_then(|turn| turn.role) == Some("assistant") {
            self.problems
                .add("messages[0]", "the first message must use the `user` role");
        }
        for pair in turns.windows(2) {
            if let (Some(first), Some(second)) = (pair[0].role, pair[1].role)
                && first == second
            {
                self.problems.add(
                    format_args!("messages[{}]", pair[1].at),
                    format!(
                        "roles must alternate, but messages[{}] is also `{first}`",
                        pair[0].at
                    ),
                );
            }
        }
    }

    /// Every tool_use is answered by exactly one tool_result in the next (user)
    /// message, and every tool_result answers a tool_use of the previous (assistant) one.
    fn pairing(&mut self, turns: &[Turn]) {
        for (index, turn) in turns.iter().enumerate() {
            let next = turns
                .get(index + 1)
                .filter(|next| next.role == Some("user"));
            for id in &turn.tool_uses {
                let answers = next.map_or(0, |next| {
                    next.tool_results
                        .iter()
                        .filter(|result| *result == id)
                        .count()
                });
                match answers {
                    1 => {}
                    0 => self.problems.add(
                        format_args!("messages[{}]", turn.at),
                        format!("tool_use `{id}` has no tool_result in the immediately following user message"),
                    ),
                    many => self.problems.add(
                        format_args!("messages[{}]", turn.at + 1),
                        format!("tool_use `{id}` is answered by {many} tool_result blocks; exactly one is allowed"),
                    ),
                }
            }
            let previous = index
                .checked_sub(1)
                .and_then(|previous| turns.get(previous))
                .filter(|previous| previous.role == Some("assistant"));
            for id in &turn.tool_results {
                if !previous.is_some_and(|previous| previous.tool_uses.contains(id)) {
                    self.problems.add(
                        format_args!("messages[{}]", turn.at),
                        format!("tool_result for `{id}` does not answer a tool_use in the immediately preceding assistant message"),
                    );
                }
            }
        }
    }

    fn unique_tool_use_ids(&mut self, turns: &[Turn]) {
        let mut counts: HashMap<&str, usize> = HashMap::new();
        for id in turns.iter().flat_map(|turn| &turn.tool_uses) {
            *counts.entry(id).or_default() += 1;
        }
        let mut repeated: Vec<_> = counts.into_iter().filter(|(_, n)| *n > 1).collect();
        repeated.sort();
        for (id, count) in repeated {
            self.problems.add(
                "messages",
                format!("tool_use ids must be unique, but `{id}` appears {count} times"),
            );
        }
    }
}
