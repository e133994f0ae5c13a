# vLLM with the OpenAI serving code in single modules under
# vllm/entrypoints/openai/ (serving_chat.py, serving_completion.py): v0.10.0
# to v0.14.1. Two sets, told apart by vLLM's v1 output processor: before
# v0.11.1 it builds RequestOutputs without the request's stats (metrics),
# so "openai-modules-v0.10" also edits it to pass them on; from v0.11.1 on
# vLLM passes them itself. Each set requires its own shape of that call, so
# exactly one of them fits any of these versions.
patchset "openai-modules-v0.10" {
  description = "timings for /v1/chat/completions and /v1/completions (serving_chat.py, serving_completion.py), and the request's stats passed on by the v1 output processor"
  covers      = ["v0.10.0", "v0.10.1", "v0.10.1.1", "v0.10.2", "v0.11.0"]

  file "vllm/_llamacpp_timings.py" {
    create = builtin("llamacpp_timings.py")
  }

  file "vllm/entrypoints/openai/serving_chat.py" {
    edit "import" {
      at   = "after_imports"
      code = "from vllm import _llamacpp_timings"
    }

    # Streaming: one tracker per response. With one choice it is shown only
    # the outputs that finish it: vLLM updates the request's stats object in
    # place, so the finishing output's holds its final values, the cached
    # tokens are the request's, and spec_decode_metrics come only then; the
    # outputs in between cost an attribute test, not a call. With n>1 it is
    # shown every output: a child's finishing output can reach the loop
    # merged into another child's RequestOutput, whose stats it carries, so
    # each child's stats object is taken from its own earlier outputs, and
    # the cached tokens from the first (where vLLM's usage reads them). The
    # test sits first in the loop, before anything in it can skip the
    # output.
    edit "stream-tracker" {
      in    = "OpenAIServingChat.chat_completion_stream_generator"
      match = "async for res in result_generator:"
      at    = "before"
      code  = "_llamacpp_tracker = _llamacpp_timings.StreamTracker()"
    }
    edit "stream-observe" {
      in    = "OpenAIServingChat.chat_completion_stream_generator"
      match = "for output in res.outputs:"
      at    = "body_start"
      code  = <<-PY
        if num_choices > 1 or output.finish_reason is not None:
            _llamacpp_tracker.observe(res)
      PY
    }

    # Without include_usage, the chunk that carries the last finish_reason
    # gets the timings, as llama-server does.
    edit "stream-finish-chunk" {
      in    = "OpenAIServingChat.chat_completion_stream_generator"
      after = "finish_reason_sent[i] = True"
      match = "chunk = ChatCompletionStreamResponse("
      at    = "after"
      code  = <<-PY
        if not include_usage and choice_data.finish_reason is not None and all(finish_reason_sent):
            _llamacpp_tracker.attach(chunk, num_prompt_tokens, sum(previous_num_tokens))
      PY
    }

    # With include_usage, the final usage chunk gets them; counts come from
    # its own usage.
    edit "stream-usage-chunk" {
      in    = "OpenAIServingChat.chat_completion_stream_generator"
      match = "final_usage_chunk = ChatCompletionStreamResponse("
      at    = "after"
      code  = "_llamacpp_tracker.attach(final_usage_chunk)"
    }

    edit "full-response" {
      in    = "OpenAIServingChat.chat_completion_full_generator"
      match = "response = ChatCompletionResponse("
      at    = "after"
      code  = "_llamacpp_timings.attach_output(response, final_res)"
    }
  }

  file "vllm/entrypoints/openai/serving_completion.py" {
    edit "import" {
      at   = "after_imports"
      code = "from vllm import _llamacpp_timings"
    }

    # Non-streaming: one RequestOutput per prompt; counts from usage.
    edit "full-response" {
      in    = "OpenAIServingCompletion"
      match = "response = self.request_output_to_completion_response("
      at    = "after"
      code  = "_llamacpp_timings.attach_batch(response, final_res_batch_checked)"
    }

    # Streaming: as in the chat stream, the outputs that finish a choice,
    # and every output where n>1.
    edit "stream-tracker" {
      in    = "OpenAIServingCompletion.completion_stream_generator"
      match = "async for prompt_idx, res in result_generator:"
      at    = "before"
      code  = "_llamacpp_tracker = _llamacpp_timings.StreamTracker()"
    }
    edit "stream-observe" {
      in    = "OpenAIServingCompletion.completion_stream_generator"
      match = "for output in res.outputs:"
      at    = "body_start"
      code  = <<-PY
        if num_choices > 1 or output.finish_reason is not None:
            _llamacpp_tracker.observe(res)
      PY
    }
    edit "stream-finish-chunk" {
      in    = "OpenAIServingCompletion.completion_stream_generator"
      match = "chunk = CompletionStreamResponse("
      at    = "after"
      code  = <<-PY
        if finish_reason is not None and not include_usage and _llamacpp_tracker.finish_chunk(num_choices * num_prompts):
            _llamacpp_tracker.attach(chunk, sum(num_prompt_tokens), sum(previous_num_tokens))
      PY
    }
    edit "stream-usage-chunk" {
      in    = "OpenAIServingCompletion.completion_stream_generator"
      match = "final_usage_chunk = CompletionStreamResponse("
      at    = "after"
      code  = "_llamacpp_tracker.attach(final_usage_chunk)"
    }
  }

  file "vllm/v1/engine/output_processor.py" {
    # The set fits only where the output processor does not pass the request's
    # stats to RequestOutput (before v0.11.1).
    require "request-output-without-metrics" {
      in    = "RequestState._new_request_output"
      match = "return RequestOutput("
      lacks = "metrics="
    }

    edit "import" {
      at   = "after_imports"
      code = "from vllm import _llamacpp_timings"
    }

    # Pass the request's live RequestStateStats on as RequestOutput.metrics,
    # as vLLM does itself from v0.11.1 on; every output of the request, to
    # the AsyncLLM queue or the LLMEngine list, goes through here.
    edit "request-metrics" {
      in    = "OutputProcessor.process_outputs"
      match = "if request_output := req_state.make_request_output("
      at    = "body_start"
      code  = "_llamacpp_timings.link_metrics(request_output, req_state.stats)"
    }

    # Where vLLM keeps no per-request stats (--disable-log-stats), each
    # request gets a RequestClock on the API server's monotonic clock: t0
    # when the request is registered here (handed to the engine), t1 and t2
    # at its first and last outputs that carry tokens, which this loop
    # receives whether the serving code asked for every output (streams) or
    # the final one only. The RequestOutputs carry it to the serving code.
    edit "request-clock" {
      in    = "RequestState.__init__"
      match = "self.stats = RequestStateStats("
      at    = "after"
      code  = "self._llamacpp_clock = _llamacpp_timings.start_clock(self.stats)"
    }
    edit "clock-tokens" {
      in    = "OutputProcessor.process_outputs"
      match = "new_token_ids = engine_core_output.new_token_ids"
      at    = "after"
      code  = <<-PY
        if req_state._llamacpp_clock is not None:
            req_state._llamacpp_clock.tokens(new_token_ids)
      PY
    }
    edit "clock-output" {
      in    = "OutputProcessor.process_outputs"
      match = "if request_output := req_state.make_request_output("
      at    = "body_start"
      code  = <<-PY
        if req_state._llamacpp_clock is not None:
            _llamacpp_timings.link_clock(request_output, req_state._llamacpp_clock)
      PY
    }
  }
}

patchset "openai-modules" {
  description = "timings for /v1/chat/completions and /v1/completions (serving_chat.py, serving_completion.py)"
  covers      = ["v0.11.1", "v0.11.2", "v0.12.0", "v0.13.0", "v0.14.0", "v0.14.1"]

  file "vllm/_llamacpp_timings.py" {
    create = builtin("llamacpp_timings.py")
  }

  file "vllm/entrypoints/openai/serving_chat.py" {
    edit "import" {
      at   = "after_imports"
      code = "from vllm import _llamacpp_timings"
    }

    # Streaming: one tracker per response. With one choice it is shown only
    # the outputs that finish it: vLLM updates the request's stats object in
    # place, so the finishing output's holds its final values, the cached
    # tokens are the request's, and spec_decode_metrics come only then; the
    # outputs in between cost an attribute test, not a call. With n>1 it is
    # shown every output: a child's finishing output can reach the loop
    # merged into another child's RequestOutput, whose stats it carries, so
    # each child's stats object is taken from its own earlier outputs, and
    # the cached tokens from the first (where vLLM's usage reads them). The
    # test sits first in the loop, before anything in it can skip the
    # output.
    edit "stream-tracker" {
      in    = "OpenAIServingChat.chat_completion_stream_generator"
      match = "async for res in result_generator:"
      at    = "before"
      code  = "_llamacpp_tracker = _llamacpp_timings.StreamTracker()"
    }
    edit "stream-observe" {
      in    = "OpenAIServingChat.chat_completion_stream_generator"
      match = "for output in res.outputs:"
      at    = "body_start"
      code  = <<-PY
        if num_choices > 1 or output.finish_reason is not None:
            _llamacpp_tracker.observe(res)
      PY
    }

    # Without include_usage, the chunk that carries the last finish_reason
    # gets the timings, as llama-server does.
    edit "stream-finish-chunk" {
      in    = "OpenAIServingChat.chat_completion_stream_generator"
      after = "finish_reason_sent[i] = True"
      match = "chunk = ChatCompletionStreamResponse("
      at    = "after"
      code  = <<-PY
        if not include_usage and choice_data.finish_reason is not None and all(finish_reason_sent):
            _llamacpp_tracker.attach(chunk, num_prompt_tokens, sum(previous_num_tokens))
      PY
    }

    # With include_usage, the final usage chunk gets them; counts come from
    # its own usage.
    edit "stream-usage-chunk" {
      in    = "OpenAIServingChat.chat_completion_stream_generator"
      match = "final_usage_chunk = ChatCompletionStreamResponse("
      at    = "after"
      code  = "_llamacpp_tracker.attach(final_usage_chunk)"
    }

    edit "full-response" {
      in    = "OpenAIServingChat.chat_completion_full_generator"
      match = "response = ChatCompletionResponse("
      at    = "after"
      code  = "_llamacpp_timings.attach_output(response, final_res)"
    }
  }

  file "vllm/entrypoints/openai/serving_completion.py" {
    edit "import" {
      at   = "after_imports"
      code = "from vllm import _llamacpp_timings"
    }

    # Non-streaming: one RequestOutput per prompt; counts from usage.
    edit "full-response" {
      in    = "OpenAIServingCompletion"
      match = "response = self.request_output_to_completion_response("
      at    = "after"
      code  = "_llamacpp_timings.attach_batch(response, final_res_batch_checked)"
    }

    # Streaming: as in the chat stream, the outputs that finish a choice,
    # and every output where n>1.
    edit "stream-tracker" {
      in    = "OpenAIServingCompletion.completion_stream_generator"
      match = "async for prompt_idx, res in result_generator:"
      at    = "before"
      code  = "_llamacpp_tracker = _llamacpp_timings.StreamTracker()"
    }
    edit "stream-observe" {
      in    = "OpenAIServingCompletion.completion_stream_generator"
      match = "for output in res.outputs:"
      at    = "body_start"
      code  = <<-PY
        if num_choices > 1 or output.finish_reason is not None:
            _llamacpp_tracker.observe(res)
      PY
    }
    edit "stream-finish-chunk" {
      in    = "OpenAIServingCompletion.completion_stream_generator"
      match = "chunk = CompletionStreamResponse("
      at    = "after"
      code  = <<-PY
        if finish_reason is not None and not include_usage and _llamacpp_tracker.finish_chunk(num_choices * num_prompts):
            _llamacpp_tracker.attach(chunk, sum(num_prompt_tokens), sum(previous_num_tokens))
      PY
    }
    edit "stream-usage-chunk" {
      in    = "OpenAIServingCompletion.completion_stream_generator"
      match = "final_usage_chunk = CompletionStreamResponse("
      at    = "after"
      code  = "_llamacpp_tracker.attach(final_usage_chunk)"
    }
  }

  file "vllm/v1/engine/output_processor.py" {
    # The set fits only where the output processor passes the request's stats
    # to RequestOutput itself (v0.11.1 on).
    require "request-output-with-metrics" {
      in       = "RequestState._new_request_output"
      match    = "return RequestOutput("
      contains = "metrics="
    }

    edit "import" {
      at   = "after_imports"
      code = "from vllm import _llamacpp_timings"
    }

    # Where vLLM keeps no per-request stats (--disable-log-stats), each
    # request gets a RequestClock on the API server's monotonic clock: t0
    # when the request is registered here (handed to the engine), t1 and t2
    # at its first and last outputs that carry tokens, which this loop
    # receives whether the serving code asked for every output (streams) or
    # the final one only. The RequestOutputs carry it to the serving code.
    edit "request-clock" {
      in    = "RequestState.__init__"
      match = "self.stats = RequestStateStats("
      at    = "after"
      code  = "self._llamacpp_clock = _llamacpp_timings.start_clock(self.stats)"
    }
    edit "clock-tokens" {
      in    = "OutputProcessor.process_outputs"
      match = "new_token_ids = engine_core_output.new_token_ids"
      at    = "after"
      code  = <<-PY
        if req_state._llamacpp_clock is not None:
            req_state._llamacpp_clock.tokens(new_token_ids)
      PY
    }
    edit "clock-output" {
      in    = "OutputProcessor.process_outputs"
      match = "if request_output := req_state.make_request_output("
      at    = "body_start"
      code  = <<-PY
        if req_state._llamacpp_clock is not None:
            _llamacpp_timings.link_clock(request_output, req_state._llamacpp_clock)
      PY
    }
  }
}
