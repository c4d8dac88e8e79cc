#!/usr/bin/env python3
"""Streams one scripted turn through the official Anthropic and OpenAI Python SDKs.

Usage: stream_check.py ANTHROPIC_BASE_URL OPENAI_BASE_URL RESPONSES_BASE_URL

The OpenAI SDK reads the turn twice: as chat completions and as a Responses stream.

Proves the scripted server speaks the real wire formats: each SDK's own streaming
helper accumulates the events into a final message, and every raw event is also
validated strictly against the SDK's pydantic model of it (the accumulators alone are
lenient). Prints one JSON object on stdout:
{"versions": {...}, "anthropic": summary, "openai": summary, "responses": summary}.

Exit status: 0 on success, 77 when the SDKs are not installed (the Rust test decides
whether that is a skip or a failure), anything else on a real failure.
"""

import json
import sys

MISSING_SDK = 77

try:
    import anthropic
    import openai
    import pydantic
    from anthropic.types import RawMessageStreamEvent
    from openai.types.chat import ChatCompletionChunk
    from openai.types.responses import ResponseStreamEvent
except ImportError as err:
    print(f"missing Python package: {err.name}", file=sys.stderr)
    sys.exit(MISSING_SDK)

PROMPT = "Read src/a.rs and notes/é.txt."
API_KEY = "scripted-test-key"
READ_SCHEMA = {
    "type": "object",
    "properties": {
        "path": {"type": "string"},
        "limit": {"type": ["integer", "null"]},
    },
    "required": ["path", "limit"],
    "additionalProperties": False,
}
RAW_ANTHROPIC_EVENTS = {
    "message_start",
    "content_block_start",
    "content_block_delta",
    "content_block_stop",
    "message_delta",
    "message_stop",
}


def strict(adapter, data, what):
    """Validates `data` against an SDK model, naming the event on failure."""
    try:
        adapter.validate_python(data)
    except pydantic.ValidationError as err:
        raise SystemExit(f"{what} does not match the SDK's schema: {err}\n{json.dumps(data)}")


def anthropic_summary(base_url):
    client = anthropic.Anthropic(base_url=base_url, api_key=API_KEY, max_retries=0)
    adapter = pydantic.TypeAdapter(RawMessageStreamEvent)
    raw_events = []
    with client.messages.stream(
        model="claude-scripted",
        max_tokens=2048,
        thinking={"type": "enabled", "budget_tokens": 1024},
        tools=[{"name": "read", "description": "Read a file.", "input_schema": READ_SCHEMA}],
        messages=[{"role": "user", "content": PROMPT}],
    ) as stream:
        for event in stream:
            if event.type in RAW_ANTHROPIC_EVENTS:
                raw_events.append(event.type)
                strict(adapter, event.to_dict(), f"anthropic {event.type} event")
        message = stream.get_final_message()
    return {
        "blocks": [block.type for block in message.content],
        "text": "".join(b.text for b in message.content if b.type == "text"),
        "thinking": [
            {"thinking": b.thinking, "signature": b.signature}
            for b in message.content
            if b.type == "thinking"
        ],
        "tool_calls": [
            {"id": b.id, "name": b.name, "arguments": b.input}
            for b in message.content
            if b.type == "tool_use"
        ],
        "stop_reason": message.stop_reason,
        "usage": {
            "input": message.usage.input_tokens,
            "output": message.usage.output_tokens,
            "cache_read": message.usage.cache_read_input_tokens,
            "cache_write": message.usage.cache_creation_input_tokens,
        },
        "first_and_last_events": [raw_events[0], raw_events[-1]],
    }


def openai_summary(base_url):
    client = openai.OpenAI(base_url=base_url, api_key=API_KEY, max_retries=0)
    adapter = pydantic.TypeAdapter(ChatCompletionChunk)
    tool = {
        "type": "function",
        "function": {
            "name": "read",
            "description": "Read a file.",
            "parameters": READ_SCHEMA,
            # The SDK parses arguments (parsed_arguments) only for strict tools.
            "strict": True,
        },
    }
    with client.chat.completions.stream(
        model="gpt-scripted",
        tools=[tool],
        stream_options={"include_usage": True},
        messages=[{"role": "user", "content": PROMPT}],
    ) as stream:
        for event in stream:
            if event.type == "chunk":
                strict(adapter, event.chunk.to_dict(), "openai chunk")
        completion = stream.get_final_completion()
    choice = completion.choices[0]
    message = choice.message
    calls = message.tool_calls or []
    for call in calls:
        if json.loads(call.function.arguments) != call.function.parsed_arguments:
            raise SystemExit(f"arguments and parsed_arguments disagree for {call.id}")
    extra = message.model_extra or {}
    return {
        "role": message.role,
        "text": message.content or "",
        "thinking": extra.get("reasoning_content"),
        "tool_calls": [
            {
                "id": call.id,
                "name": call.function.name,
                "arguments": call.function.parsed_arguments,
            }
            for call in calls
        ],
        "stop_reason": choice.finish_reason,
        "usage": {
            "prompt_tokens": completion.usage.prompt_tokens,
            "completion_tokens": completion.usage.completion_tokens,
            "total_tokens": completion.usage.total_tokens,
            "cached_tokens": completion.usage.prompt_tokens_details.cached_tokens,
        },
    }


def responses_summary(base_url):
    client = openai.OpenAI(base_url=base_url, api_key=API_KEY, max_retries=0)
    adapter = pydantic.TypeAdapter(ResponseStreamEvent)
    tool = {
        "type": "function",
        "name": "read",
        "description": "Read a file.",
        "parameters": READ_SCHEMA,
        "strict": False,
    }
    event_types = []
    sequence_numbers = []
    text_deltas = []
    argument_deltas = {}
    with client.responses.stream(
        model="gpt-scripted",
        tools=[tool],
        store=False,
        include=["reasoning.encrypted_content"],
        input=[{"type": "message", "role": "user", "content": [{"type": "input_text", "text": PROMPT}]}],
    ) as stream:
        for event in stream:
            event_types.append(event.type)
            sequence_numbers.append(event.sequence_number)
            # The helper's parsed snapshots warn when dumped; the data is what counts.
            strict(adapter, event.to_dict(warnings=False), f"responses {event.type} event")
            if event.type == "response.output_text.delta":
                text_deltas.append(event.delta)
            elif event.type == "response.function_call_arguments.delta":
                argument_deltas.setdefault(event.item_id, []).append(event.delta)
        response = stream.get_final_response()
    if sequence_numbers != list(range(len(sequence_numbers))):
        raise SystemExit(f"sequence numbers are not 0, 1, 2, ...: {sequence_numbers}")
    calls = [item for item in response.output if item.type == "function_call"]
    for call in calls:
        if "".join(argument_deltas.get(call.id, [])) != call.arguments:
            raise SystemExit(f"the argument deltas of {call.id} do not add up to its arguments")
    if "".join(text_deltas) != response.output_text:
        raise SystemExit("the text deltas do not add up to the output text")
    usage = response.usage
    return {
        "status": response.status,
        "items": [item.type for item in response.output],
        "text": response.output_text,
        "reasoning": [
            {
                "summary": [part.text for part in item.summary],
                "encrypted_content": item.encrypted_content,
            }
            for item in response.output
            if item.type == "reasoning"
        ],
        "tool_calls": [
            {"call_id": call.call_id, "name": call.name, "arguments": json.loads(call.arguments)}
            for call in calls
        ],
        "usage": {
            "input_tokens": usage.input_tokens,
            "output_tokens": usage.output_tokens,
            "total_tokens": usage.total_tokens,
            "cached_tokens": usage.input_tokens_details.cached_tokens,
            "cache_write_tokens": usage.input_tokens_details.cache_write_tokens,
        },
        "first_and_last_events": [event_types[0], event_types[-1]],
    }


def main():
    if len(sys.argv) != 4:
        raise SystemExit(__doc__)
    anthropic_base, openai_base, responses_base = sys.argv[1:]
    print(
        json.dumps(
            {
                "versions": {"anthropic": anthropic.__version__, "openai": openai.__version__},
                "anthropic": anthropic_summary(anthropic_base),
                "openai": openai_summary(openai_base),
                "responses": responses_summary(responses_base),
            },
            ensure_ascii=False,
        )
    )


if __name__ == "__main__":
    main()
