# vLLM with the chat_completion/ and completion/ packages under
# vllm/entrypoints/openai/ (v0.15 on). Written against the nightly images
# 07351e088 and 1acd67a and checked on every release since (see
# docs/compatibility.md). Two sets, told apart by the chat stream: up to
# 0.32 the SSE generator itself walks the engine's outputs; from 0.33 on it
# wraps chat_completion_stream_generator_raw, which does. The completion
# anchors name only the class, so they hold whether the non-streaming path
# is create_completion (up to 0.20) or _create_completion (0.21 on).
patchset "openai-packages" {
  description = "timings for /v1/chat/completions and /v1/completions (chat_completion/ and completion/ packages)"
  covers      = ["v0.15.0 to v0.25.1 (every release)", "0.26.0 to 0.32.0 (PyPI)", "nightly-07351e088 (0.19.2rc1.dev205)", "nightly-1acd67a"]

  file "vllm/_llamacpp_timings.py" {
    create = builtin("llamacpp_timings.py")
  }

  file "vllm/entrypoints/openai/chat_completion/serving.py" {
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

  file "vllm/entrypoints/openai/completion/serving.py" {
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

patchset "openai-packages-raw-stream" {
  description = "timings for /v1/chat/completions and /v1/completions (packages; the chat stream in chat_completion_stream_generator_raw)"
  covers      = ["0.33.0", "0.34.0"]

  file "vllm/_llamacpp_timings.py" {
    create = builtin("llamacpp_timings.py")
  }

  file "vllm/entrypoints/openai/chat_completion/serving.py" {
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
      in    = "OpenAIServingChat.chat_completion_stream_generator_raw"
      match = "async for res in result_generator:"
      at    = "before"
      code  = "_llamacpp_tracker = _llamacpp_timings.StreamTracker()"
    }
    edit "stream-observe" {
      in    = "OpenAIServingChat.chat_completion_stream_generator_raw"
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
      in    = "OpenAIServingChat.chat_completion_stream_generator_raw"
      after = "finish_reason_sent[i] = True"
      match = "chunk = ChatCompletionStreamResponse("
      at    = "after"
      code  = <<-PY
        if not include_usage and choice_data.finish_reason is not None and all(finish_reason_sent):
            _llamacpp_tracker.attach(chunk, num_prompt_tokens, sum(p.num_output_tokens for p in processors))
      PY
    }

    # With include_usage, the final usage chunk gets them; counts come from
    # its own usage.
    edit "stream-usage-chunk" {
      in    = "OpenAIServingChat.chat_completion_stream_generator_raw"
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

  file "vllm/entrypoints/openai/completion/serving.py" {
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
