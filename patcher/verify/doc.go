// Package verify checks, against a live OpenAI-compatible server, that the
// responses carry llama.cpp-style timings and that those timings are right.
// It backs "vllm-timings verify".
//
// # Why
//
// llama-swap shows cached tokens, prompt speed and generation speed from the
// "timings" object llama-server adds to its answers. Wrong numbers look as
// plausible on its activity page as right ones, so after deploying the
// patched vLLM a user needs a yes or no with reasons. The same checks run
// against llama-server, the reference, so the two can be compared.
//
// # What is sent
//
// Six small requests (max_tokens 16, temperature 0), in this order:
//
//   - chat: /v1/chat/completions, not streaming;
//   - chat repeat: the same request again, so a prefix cache can show up in
//     cache_n;
//   - chat stream+usage: streaming with stream_options.include_usage;
//   - chat stream: streaming without it;
//   - completion: /v1/completions, not streaming;
//   - completion stream+usage: streaming with include_usage.
//
// With Endpoints (--endpoints, default chat,completions), the chat or
// completion requests can be left out, and three requests each can be
// added for the Responses API and the Anthropic Messages API:
//
//   - responses, responses repeat, responses stream: /v1/responses with
//     instructions and input, not streamed, the same again, and streamed;
//   - messages, messages repeat, messages stream: /v1/messages with a
//     system prompt and one user message, likewise.
//
// Their streams name each event on an event: line and end without [DONE]
// (no no-done note); timings are read from the data: lines as llama-swap
// reads them: on the top level of any event (vLLM puts them beside type
// and response on a Responses stream's terminal event, and on a Messages
// stream's message_delta). Usage comes from the last event with one where
// llama-swap looks (usage, response.usage, message.usage), and is read in
// the endpoint's meaning (Usage): the Responses API's input_tokens is the
// whole prompt and input_tokens_details.cached_tokens the cached part; the
// Messages API's input_tokens leaves out what the cache read
// (cache_read_input_tokens) and wrote (cache_creation_input_tokens), so
// the whole prompt is their sum. The count checks below then compare
// prompt_n + cache_n with that whole prompt, cache_n with the cached part
// and predicted_n with output_tokens, and name the endpoint's fields.
//
// With Multi (--multi), eight more: n=2 for chat and completions, each full,
// streaming with include_usage and without it, and a two-prompt completion,
// full and streaming with include_usage (n=2 is sampled: temperature 1,
// seed 7). There several engine requests stand behind one response.
//
// Every prompt starts with a random nonce and a paragraph several KV-cache
// blocks long (vLLM caches in blocks of 16 tokens): the first request is new
// to the cache, and the ones after it share a prefix the cache can hit.
// Without --model, the model is the first id /v1/models lists.
//
// # How answers are read
//
// A full response is one JSON object with "timings" and "usage" at the top.
// A stream is read the way llama-swap reads it: every line that starts with
// "data:" (after trimming space) is an event, "[DONE]" ends it, other lines
// are ignored. Timings may be on any event; the last event that has a
// timings key is checked, and usage comes from the last event with a
// non-null usage.
//
// # The checks, and why each exists
//
// Each failure is a Finding with a check name (the constants Check*):
//
//   - timings-missing: no timings in the body or on any data: line. The
//     patch is not installed or not reached (an unpatched vLLM sends none).
//   - field-missing, field-type: all nine llama.cpp fields (prompt_n,
//     prompt_ms, prompt_per_token_ms, prompt_per_second, predicted_n,
//     predicted_ms, predicted_per_token_ms, predicted_per_second, cache_n)
//     must be present; the _n fields integers, the others numbers. llama-swap
//     reads them by name and silently shows zero for a field it cannot read.
//   - not-finite, negative: nothing may be NaN, infinite or negative. A rate
//     divided by a zero duration gives infinity; a duration taken from two
//     clocks can come out negative. pydantic writes NaN as null (a
//     field-type failure); Python's json.dumps writes a bare NaN.
//   - non-standard-json: the bare NaN/Infinity words are not JSON; llama-swap
//     rejects the whole body and records nothing for the request. verify
//     still parses such a body to name the field.
//   - prompt-count, cache-in-prompt-n: prompt_n + cache_n must equal
//     usage.prompt_tokens. prompt_n counts only the tokens evaluated, so
//     the prompt speed is not inflated by tokens the cache supplied.
//     prompt_n equal to prompt_tokens while cache_n > 0 is named
//     cache-in-prompt-n, the likeliest mistake.
//   - cache-count: where usage has prompt_tokens_details.cached_tokens (vLLM
//     with --enable-prompt-tokens-details, llama-server), cache_n must equal
//     it. This catches cached tokens counted in prompt_n even when cache_n is
//     0 and the sum above holds.
//   - predicted-count: predicted_n must equal usage.completion_tokens.
//   - per-second, per-token-ms: x_per_second ≈ x_n·1000/x_ms and
//     x_per_token_ms ≈ x_ms/x_n, for x = prompt and predicted, with 0 the
//     defined value when x_n or x_ms is 0 (a full cache hit evaluates no
//     prompt token). The tolerance is 0.005 + 0.1 % of the expected value,
//     room for rounding and no more. llama-swap shows the rates as sent, so
//     a unit slip (seconds for milliseconds) shows up only here.
//   - wall-time: prompt_ms + predicted_ms must not exceed the time the client
//     waited from sending the request to the end of the body, plus 5 ms and
//     1 %. The server's intervals lie inside the client's; a longer sum means
//     timestamps from different clocks (vLLM's arrival_time is wall-clock,
//     its engine timestamps monotonic) or from another request.
//   - draft: with speculative decoding, draft_n and draft_n_accepted come
//     together, as integers, and draft_n_accepted ≤ draft_n.
//   - llama-swap-line: llama-swap takes the last data: line that has a usage
//     or a timings key. If timings sit on an earlier event and a later one
//     carries usage without them, llama-swap shows no speeds. This is why the
//     patch puts timings on the final usage chunk when include_usage is set.
//   - content-type: llama-swap parses a body as a stream only if its
//     Content-Type contains text/event-stream.
//   - usage: a usage count that is not an integer.
//   - llama-swap-metrics: the response carries vLLM's own per-request
//     "metrics" (vLLM 0.25 on, --enable-per-request-metrics) beside timings,
//     with time_to_first_token_ms or mean_itl_ms, from which llama-swap
//     recomputes the speeds (llamaswap.go's predictSwap follows its
//     buildMetrics), and the speeds come out wrong: the prompt speed
//     (prompt_n - cache_n) / time_to_first_token_ms subtracts the cache a
//     second time, the generation speed is 1000 / mean_itl_ms. The patch
//     clears those two fields where it adds timings; without them there is
//     a note (vllm-metrics) saying llama-swap shows the speeds of timings.
//   - llama-swap-row (with --llama-swap): the activity row llama-swap
//     recorded for the request differs from the truth of the response's
//     timings: input tokens = prompt_n, cached = cache_n, output =
//     predicted_n, prompt and generation speed = x_n·1000/x_ms, duration at
//     least prompt_ms + predicted_ms. llamaswap.go says how rows are found.
//
// Notes are printed but do not fail the run: no usage where one was expected
// (no-usage), cache_n 0 on the repeated prompt (no-cache-hit; prefix caching
// may be off), a stream without "data: [DONE]" (no-done), a two-prompt
// completion whose usage.prompt_tokens_details.cached_tokens counts one
// prompt only, as vLLM reports it, so cache-count is not applied
// (one-prompt-cached).
//
// # Failures to get an answer
//
// These stop the run at once, since the checks cannot mean anything
// without answers; each has its own exit code (see ExitCodes):
// server unreachable 21, HTTP error 22 (also an "error" event inside a
// stream, vLLM's way of failing after the 200 status), 401/403 23, timeout (per request,
// --timeout) 24, a body or data: line that is not JSON 25, a connection
// that broke mid-response 26, no model listed 27, and with --llama-swap no
// usable activity API (404, not JSON, rows without the numbers: not a
// llama-swap, or one too old) or no row recorded for a request 28. Every
// answer received but failing a check gives 20.
package verify
