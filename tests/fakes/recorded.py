"""Replies for the fake server in the exact shapes real servers were recorded sending.

Each function returns a reply (see llm_server's docstring: `sse` streams events verbatim,
`require` makes a follow-up fail the way the real server does when what it needs is missing).
Texts, ids and signatures are shortened; field names, nesting and event order are as recorded.
"""

from __future__ import annotations

import json
from typing import Any

Reply = dict[str, Any]


def _chunk(model: str, delta: dict[str, Any] | None, finish: str | None = None,
           **extra: Any) -> dict[str, Any]:
    choices = [] if delta is None else [
        {"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}]
    return {"id": "gen-1", "object": "chat.completion.chunk", "created": 1760000000,
            "model": model, "choices": choices, **extra}


def _chat(model: str, deltas: list[dict[str, Any]], *, finish: str | None,
          usage: dict[str, Any] | None, done: bool = True) -> Reply:
    events = [{"data": _chunk(model, {"role": "assistant", "content": ""})}]
    events += [{"data": _chunk(model, d)} for d in deltas]
    if finish is not None:
        events.append({"data": _chunk(model, {}, finish)})
    if usage is not None:
        events.append({"data": _chunk(model, None, usage=usage)})
    if done:
        events.append({"data": "[DONE]"})
    return {"sse": events}


# ---- Chat Completions ------------------------------------------------------------------

def mistral_list_content() -> Reply:
    """magistral: thinking as typed parts inside `content`, then plain strings; usage rides
    on the finishing chunk."""
    model = "magistral-medium-2509"
    thinking = [{"content": [{"type": "thinking", "thinking": [{"type": "text", "text": t}]}]}
                for t in ("The user asks for 2+2.", " Simple arithmetic.")]
    events = [{"data": _chunk(model, {"role": "assistant", "content": ""})}]
    events += [{"data": _chunk(model, d)} for d in thinking]
    events += [{"data": _chunk(model, {"content": "The answer"})},
               {"data": _chunk(model, {"content": " is 4."}, "stop",
                               usage={"prompt_tokens": 12, "completion_tokens": 30,
                                      "total_tokens": 42})},
               {"data": "[DONE]"}]
    return {"sse": events}


def no_finish_reason_tool_call() -> Reply:
    """OpenRouter → Novita kimi-k2: a tool call, usage and [DONE], never a finish_reason."""
    model = "moonshotai/kimi-k2"
    args = json.dumps({"filename": "notes.txt"})
    head = {"index": 0, "id": "functions.readfile:0", "type": "function",
            "function": {"name": "readfile", "arguments": ""}}
    deltas: list[dict[str, Any]] = [{"content": None, "tool_calls": [head]}]
    deltas += [{"tool_calls": [{"index": 0, "function": {"arguments": args[i:i + 9]}}]}
               for i in range(0, len(args), 9)]
    return _chat(model, deltas, finish=None,
                 usage={"prompt_tokens": 80, "completion_tokens": 20, "total_tokens": 100})


DEEPSEEK_THOUGHT = "Let me read the file first."


def deepseek_reasoning_tool_call() -> Reply:
    """deepseek-reasoner (thinking): reasoning_content deltas, then a call."""
    model = "deepseek-reasoner"
    deltas: list[dict[str, Any]] = [
        {"content": None, "reasoning_content": w} for w in ("Let me read ", "the file first.")]
    deltas.append({"content": None, "reasoning_content": None, "tool_calls": [
        {"index": 0, "id": "call_00_abc", "type": "function",
         "function": {"name": "readfile", "arguments": '{"filename": "notes.txt"}'}}]})
    return _chat(model, deltas, finish="tool_calls", usage={
        "prompt_tokens": 300, "completion_tokens": 40, "total_tokens": 340,
        "prompt_cache_hit_tokens": 256, "prompt_cache_miss_tokens": 44,
        "completion_tokens_details": {"reasoning_tokens": 25}})


def deepseek_followup(text: str = "The file says hello.") -> Reply:
    """The next request must carry the reasoning_content back, or DeepSeek answers 400."""
    return {"require": [f"\"reasoning_content\":{json.dumps(DEEPSEEK_THOUGHT)}"],
            "status": 400,
            "message": "Missing `reasoning_content` field in the assistant message at message "
                       "index 2. For more information, please refer to "
                       "https://api-docs.deepseek.com/guides/thinking_mode#tool-calls",
            "text": text}


def chat_length_stop() -> Reply:
    return _chat("gpt-4o-mini", [{"content": "The first part of a long"}], finish="length",
                 usage={"prompt_tokens": 5, "completion_tokens": 7, "total_tokens": 12})


OPENROUTER_RAW = ("moonshotai/kimi-k2 is temporarily rate-limited upstream. Please retry "
                  "shortly, or add your own key to accumulate your rate limits")


def openrouter_429() -> Reply:
    return {"error": 429, "body": {
        "error": {"message": "Provider returned error", "code": 429,
                  "metadata": {"raw": OPENROUTER_RAW, "provider_name": "Novita"}},
        "user_id": "user_2abc"}}


# ---- Responses -------------------------------------------------------------------------

ENCRYPTED = "gAAAAABo-fake-encrypted-reasoning-0123456789"


def _responses(output: list[list[dict[str, Any]]], done_output: list[dict[str, Any]],
               *, status: str = "completed", incomplete: str | None = None) -> Reply:
    seq = iter(range(10_000))
    resp = {"id": "resp_1", "object": "response", "created_at": 1760000000, "model": "gpt-5-mini",
            "status": "in_progress", "output": [], "error": None, "incomplete_details": None,
            "tools": [], "parallel_tool_calls": True, "tool_choice": "auto", "usage": None}

    def ev(kind: str, **data: Any) -> dict[str, Any]:
        return {"event": kind, "data": {"type": kind, **data, "sequence_number": next(seq)}}

    events = [ev("response.created", response=resp), ev("response.in_progress", response=resp)]
    for group in output:
        events += [ev(e.pop("type"), **e) for e in group]
    final = {**resp, "status": status, "output": done_output,
             "incomplete_details": {"reason": incomplete} if incomplete else None,
             "usage": {"input_tokens": 200, "output_tokens": 90, "total_tokens": 290,
                       "input_tokens_details": {"cached_tokens": 128},
                       "output_tokens_details": {"reasoning_tokens": 64}}}
    events.append(ev("response.completed" if status == "completed" else "response.incomplete",
                     response=final))
    return {"sse": events}


def _reasoning_item(summary: str) -> dict[str, Any]:
    return {"id": "rs_1", "type": "reasoning", "status": "completed",
            "summary": [{"type": "summary_text", "text": summary}],
            "encrypted_content": ENCRYPTED}


def _message_events(index: int, mid: str, text: list[str], phase: str | None
                    ) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    item = {"id": mid, "type": "message", "status": "in_progress", "role": "assistant",
            "content": [], "phase": phase}
    full = "".join(text)
    part = {"type": "output_text", "text": full, "annotations": []}
    done = {**item, "status": "completed", "content": [part]}
    evs = [{"type": "response.output_item.added", "output_index": index, "item": item}]
    evs += [{"type": "response.output_text.delta", "item_id": mid, "output_index": index,
             "content_index": 0, "delta": d, "logprobs": []} for d in text]
    evs += [{"type": "response.output_text.done", "item_id": mid, "output_index": index,
             "content_index": 0, "text": full, "logprobs": []},
            {"type": "response.output_item.done", "output_index": index, "item": done}]
    return evs, done


def responses_reasoning_tool_call() -> Reply:
    """gpt-5-mini: a reasoning item (summary streamed, encrypted content on item.done), a
    commentary message, then a function call."""
    summary = ["**Reading the file**", "\n\nI should open notes.txt."]
    added = {"id": "rs_1", "type": "reasoning", "summary": [], "encrypted_content": "gAAA"}
    reasoning = [{"type": "response.output_item.added", "output_index": 0, "item": added},
                 {"type": "response.reasoning_summary_part.added", "item_id": "rs_1",
                  "output_index": 0, "summary_index": 0,
                  "part": {"type": "summary_text", "text": ""}}]
    reasoning += [{"type": "response.reasoning_summary_text.delta", "item_id": "rs_1",
                   "output_index": 0, "summary_index": 0, "delta": d} for d in summary]
    item = _reasoning_item("".join(summary))
    reasoning.append({"type": "response.output_item.done", "output_index": 0, "item": item})
    msg_events, msg = _message_events(1, "msg_1", ["Reading it now."], "commentary")
    fc = {"id": "fc_1", "type": "function_call", "status": "completed", "call_id": "call_r1",
          "name": "readfile", "arguments": '{"filename": "notes.txt"}'}
    call = [{"type": "response.output_item.added", "output_index": 2,
             "item": {**fc, "arguments": "", "status": "in_progress"}},
            {"type": "response.function_call_arguments.delta", "item_id": "fc_1",
             "output_index": 2, "delta": fc["arguments"]},
            {"type": "response.output_item.done", "output_index": 2, "item": fc}]
    return _responses([reasoning, msg_events, call], [item, msg, fc])


def responses_followup(text: str = "It says hello.") -> Reply:
    """The follow-up must carry the reasoning item with its encrypted content, and asks for
    it through include (store is false)."""
    return {"require": [f'"encrypted_content":"{ENCRYPTED}"', '"type":"reasoning"',
                        '"include":["reasoning.encrypted_content"]', '"phase":"commentary"'],
            "status": 400,
            "message": "fake: the reasoning item of the previous step is missing",
            "text": text}


def responses_two_messages() -> Reply:
    """gpt-5.5: a commentary message and the final answer in one reply."""
    first, m1 = _message_events(0, "msg_a", ["I'll answer", " with links."], "commentary")
    second, m2 = _message_events(1, "msg_b", ["Here are", " a few."], "final_answer")
    return _responses([first, second], [m1, m2])


def responses_incomplete(reason: str = "content_filter") -> Reply:
    events, msg = _message_events(0, "msg_c", ["Partial"], None)
    return _responses([events], [msg], status="incomplete", incomplete=reason)


# ---- Anthropic -------------------------------------------------------------------------

SIGNATURE = "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"
REDACTED = "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP"


def _anthropic(blocks: list[list[dict[str, Any]]], stop: str) -> Reply:
    def ev(kind: str, **data: Any) -> dict[str, Any]:
        return {"event": kind, "data": {"type": kind, **data}}

    message = {"id": "msg_01", "type": "message", "role": "assistant",
               "model": "claude-sonnet-4-5", "content": [], "stop_reason": None,
               "stop_sequence": None,
               "usage": {"input_tokens": 50, "cache_read_input_tokens": 1000,
                         "cache_creation_input_tokens": 0, "output_tokens": 1}}
    events = [ev("message_start", message=message)]
    for group in blocks:
        events += [ev(e.pop("type"), **e) for e in group]
    events += [ev("message_delta", delta={"stop_reason": stop, "stop_sequence": None},
                  usage={"output_tokens": 120}),
               ev("message_stop")]
    return {"sse": events}


def _text_block(index: int, text: list[str]) -> list[dict[str, Any]]:
    return [{"type": "content_block_start", "index": index,
             "content_block": {"type": "text", "text": ""}},
            *({"type": "content_block_delta", "index": index,
               "delta": {"type": "text_delta", "text": t}} for t in text),
            {"type": "content_block_stop", "index": index}]


def anthropic_thinking_tool_use() -> Reply:
    thinking = [{"type": "content_block_start", "index": 0,
                 "content_block": {"type": "thinking", "thinking": "", "signature": ""}},
                {"type": "content_block_delta", "index": 0,
                 "delta": {"type": "thinking_delta", "thinking": "I need the file "}},
                {"type": "content_block_delta", "index": 0,
                 "delta": {"type": "thinking_delta", "thinking": "to answer."}},
                {"type": "content_block_delta", "index": 0,
                 "delta": {"type": "signature_delta", "signature": SIGNATURE}},
                {"type": "content_block_stop", "index": 0},
                {"type": "content_block_start", "index": 1,
                 "content_block": {"type": "redacted_thinking", "data": REDACTED}},
                {"type": "content_block_stop", "index": 1}]
    tool = [{"type": "content_block_start", "index": 3,
             "content_block": {"type": "tool_use", "id": "toolu_01", "name": "readfile",
                               "input": {}}},
            {"type": "content_block_delta", "index": 3,
             "delta": {"type": "input_json_delta", "partial_json": '{"filename": "notes.txt"}'}},
            {"type": "content_block_stop", "index": 3}]
    return _anthropic([thinking, _text_block(2, ["Let me look."]), tool], "tool_use")


def anthropic_followup(text: str = "It says hello.") -> Reply:
    return {"require": [f'"signature":"{SIGNATURE}"', f'"data":"{REDACTED}"'],
            "status": 400,
            "message": "messages.1.content.0.type: Expected `thinking` or `redacted_thinking`, "
                       "but found `text`. When `thinking` is enabled, a final `assistant` "
                       "message must start with a thinking block.",
            "text": text}


def anthropic_stop(stop: str, text: list[str]) -> Reply:
    """A reply that ends with `stop` ("refusal", "pause_turn", "max_tokens"…)."""
    return _anthropic([_text_block(0, text)] if text else [], stop)


# ---- round three: shapes from services that broke (bodies as quoted in public trackers) ----

def openai_rejects_include() -> Reply:
    """gpt-4o / gpt-4.1 / gpt-5-chat-latest on Responses, asked for encrypted reasoning."""
    return {"error": 400, "body": {"error": {
        "message": "Encrypted content is not supported with this model.",
        "type": "invalid_request_error", "param": "include", "code": None}}}


def openai_rejects(param: str) -> Reply:
    """gpt-4.1 given a reasoning option (`reasoning.summary`, `reasoning.effort`)."""
    return {"error": 400, "body": {"error": {
        "message": f"Unsupported parameter: '{param}' is not supported with this model.",
        "type": "invalid_request_error", "param": param, "code": "unsupported_parameter"}}}


def openai_orphan_reasoning_item() -> Reply:
    """A 400 about an input item, not about a parameter kep chose to send."""
    return {"error": 400, "body": {"error": {
        "message": "Item 'rs_0c3876fcd4da19ef00692a14046bc8819eba6941c05c5ab7e7' of type "
                   "'reasoning' was provided without its required following item.",
        "type": "invalid_request_error", "param": "input", "code": None}}}


def hf_router_cerebras(tool_call: bool = False) -> Reply:
    """Hugging Face's router in front of Cerebras: usage and time_info ride on the finishing
    chunk, and the body ends there: no `data: [DONE]`."""
    model = "openai/gpt-oss-120b:cerebras"
    if tool_call:
        deltas: list[dict[str, Any]] = [{"tool_calls": [
            {"index": 0, "id": "e6f1a9b3c", "type": "function",
             "function": {"name": "readfile", "arguments": '{"filename": "notes.txt"}'}}]}]
        finish = "tool_calls"
    else:
        deltas = [{"content": w} for w in ("Hello", " from", " Cerebras.")]
        finish = "stop"
    events = [{"data": _chunk(model, {"role": "assistant", "content": ""},
                              system_fingerprint="fp_c8a9b1")}]
    events += [{"data": _chunk(model, d, system_fingerprint="fp_c8a9b1")} for d in deltas]
    events.append({"data": _chunk(
        model, {}, finish, system_fingerprint="fp_c8a9b1",
        usage={"prompt_tokens": 88, "completion_tokens": 12, "total_tokens": 100},
        time_info={"queue_time": 0.0002, "prompt_time": 0.003, "completion_time": 0.01,
                   "total_time": 0.015, "created": 1760000000})})
    return {"sse": events}


GEMINI_SIGNATURE = "EjQKMgEMOdbHJChLX75QUCJjyYlmFxB8fakeSignature0123456789"


def gemini3_tool_call() -> Reply:
    """Gemini 3 on its OpenAI-compatible endpoint: the whole call in one delta, no `index`,
    and the thought signature under `extra_content.google`."""
    model = "gemini-3-flash-preview"
    call = {"function": {"arguments": '{"filename":"notes.txt"}', "name": "readfile"},
            "id": "function-call-5093271", "type": "function",
            "extra_content": {"google": {"thought_signature": GEMINI_SIGNATURE}}}
    return _chat(model, [{"role": "assistant", "tool_calls": [call]}], finish="tool_calls",
                 usage={"prompt_tokens": 60, "completion_tokens": 14, "total_tokens": 120})


def gemini3_followup(text: str = "The notes say hello.") -> Reply:
    return {"require": [f'"thought_signature":"{GEMINI_SIGNATURE}"'], "status": 400,
            "message": "Function call is missing a thought_signature in functionCall parts. "
                       "This is required for tools to work correctly, and missing "
                       "thought_signature may lead to degraded model performance. Additional "
                       "data, function call `default_api:readfile` , position 2. please refer "
                       "to https://ai.google.dev/gemini-api/docs/thought-signatures for more "
                       "details.",
            "text": text}


DEEPSEEK_RS_TEXT = "The user wants the file; I will read it."


def deepseek_responses_tool_call() -> Reply:
    """DeepSeek's Responses endpoint: reasoning as plain `reasoning_text` content, no
    encrypted_content, then a call."""
    rs = {"id": "rs_ds1", "type": "reasoning", "summary": [],
          "content": [{"type": "reasoning_text", "text": DEEPSEEK_RS_TEXT}], "status": None}
    reasoning = [{"type": "response.output_item.added", "output_index": 0,
                  "item": {**rs, "content": []}},
                 {"type": "response.reasoning_text.delta", "item_id": "rs_ds1",
                  "output_index": 0, "content_index": 0, "delta": DEEPSEEK_RS_TEXT},
                 {"type": "response.output_item.done", "output_index": 0, "item": rs}]
    fc = {"id": "fc_ds1", "type": "function_call", "status": "completed", "call_id": "call_ds1",
          "name": "readfile", "arguments": '{"filename": "notes.txt"}'}
    call = [{"type": "response.output_item.added", "output_index": 1,
             "item": {**fc, "arguments": "", "status": "in_progress"}},
            {"type": "response.output_item.done", "output_index": 1, "item": fc}]
    return _responses([reasoning, call], [rs, fc])


def deepseek_responses_followup(text: str = "It says hello.") -> Reply:
    return {"require": ['"type":"reasoning"', f'"text":"{DEEPSEEK_RS_TEXT}"',
                        '"type":"reasoning_text"'],
            "status": 400, "message": "reasoning content of the previous turn is missing",
            "text": text}


def bedrock_responses_call(name: str = "readfile", filename: str = "notes.txt",
                           fc_id: str = "fc_b1") -> Reply:
    """Bedrock's Responses endpoint: unique `fc_…` item ids, but `call_id` restarts at
    `call_0` in every response."""
    fc = {"id": fc_id, "type": "function_call", "status": "completed", "call_id": "call_0",
          "name": name, "arguments": json.dumps({"filename": filename})}
    call = [{"type": "response.output_item.added", "output_index": 0,
             "item": {**fc, "arguments": "", "status": "in_progress"}},
            {"type": "response.function_call_arguments.delta", "item_id": fc_id,
             "output_index": 0, "delta": fc["arguments"]},
            {"type": "response.output_item.done", "output_index": 0, "item": fc}]
    return _responses([call], [fc])


def think_tags(deltas: list[str], model: str = "deepseek-r1-distill-llama-70b") -> Reply:
    """Groq / Together / local servers: the thinking inline in `content` between
    <think> and </think>."""
    return _chat(model, [{"content": d} for d in deltas], finish="stop",
                 usage={"prompt_tokens": 10, "completion_tokens": 40, "total_tokens": 50})
