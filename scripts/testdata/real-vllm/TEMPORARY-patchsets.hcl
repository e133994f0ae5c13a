# TEMPORARY patch sets for scripts/real-vllm, until the versions branch
# brings embedded sets for vLLM 0.26 and later. Only scripts/real-vllm
# passes this file (--patchset), and only after the embedded sets fail;
# delete it once the embedded sets fit 0.26.0-0.34.0. The sets are the
# embedded "openai-packages" with the anchors moved where these releases
# moved the code:
#   temporary-create-completion  0.26.0-0.32.0: OpenAIServingCompletion's
#                                body is in _create_completion
#   temporary-raw-stream         0.33.0, 0.34.0: the same, and the chat
#                                stream loop is in chat_completion_stream_generator_raw,
#                                whose per-choice counts are on its stream processors

patchset "temporary-create-completion" {
  description = "TEMPORARY (scripts/real-vllm): timings for /v1/chat/completions and /v1/completions (chat_completion/ and completion/ packages)"
  covers      = ["0.26.0", "0.27.0", "0.27.1", "0.28.0", "0.29.0", "0.30.0", "0.31.0", "0.32.0"]

  file "vllm/_llamacpp_timings.py" {
    create = builtin("llamacpp_timings.py")
  }

  file "vllm/entrypoints/openai/chat_completion/serving.py" {
    edit "import" {
      at   = "after_imports"
      code = "from vllm import _llamacpp_timings"
    }

    # Streaming: one tracker per response sees every RequestOutput.
    edit "stream-tracker" {
      in    = "OpenAIServingChat.chat_completion_stream_generator"
      match = "async for res in result_generator:"
      at    = "before"
      code  = "_llamacpp_tracker = _llamacpp_timings.StreamTracker()"
    }
    edit "stream-observe" {
      in    = "OpenAIServingChat.chat_completion_stream_generator"
      match = "async for res in result_generator:"
      at    = "body_start"
      code  = "_llamacpp_tracker.observe(res)"
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
      code  = "_llamacpp_timings.attach(response, final_res.metrics, final_res.num_cached_tokens)"
    }
  }

  file "vllm/entrypoints/openai/completion/serving.py" {
    edit "import" {
      at   = "after_imports"
      code = "from vllm import _llamacpp_timings"
    }

    # Non-streaming: one RequestOutput per prompt; counts from usage.
    edit "full-response" {
      in    = "OpenAIServingCompletion._create_completion"
      match = "response = self.request_output_to_completion_response("
      at    = "after"
      code  = "_llamacpp_timings.attach_batch(response, final_res_batch_checked)"
    }

    edit "stream-tracker" {
      in    = "OpenAIServingCompletion.completion_stream_generator"
      match = "async for prompt_idx, res in result_generator:"
      at    = "before"
      code  = "_llamacpp_tracker = _llamacpp_timings.StreamTracker()"
    }
    edit "stream-observe" {
      in    = "OpenAIServingCompletion.completion_stream_generator"
      match = "async for prompt_idx, res in result_generator:"
      at    = "body_start"
      code  = "_llamacpp_tracker.observe(res)"
    }
    edit "stream-finish-chunk" {
      in    = "OpenAIServingCompletion.completion_stream_generator"
      match = "chunk = CompletionStreamResponse("
      at    = "after"
      code  = <<-PY
        if not include_usage and finish_reason is not None and _llamacpp_tracker.finished(num_choices * num_prompts):
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
}

patchset "temporary-raw-stream" {
  description = "TEMPORARY (scripts/real-vllm): timings for /v1/chat/completions and /v1/completions (chat_completion/ and completion/ packages)"
  covers      = ["0.33.0", "0.34.0"]

  file "vllm/_llamacpp_timings.py" {
    create = builtin("llamacpp_timings.py")
  }

  file "vllm/entrypoints/openai/chat_completion/serving.py" {
    edit "import" {
      at   = "after_imports"
      code = "from vllm import _llamacpp_timings"
    }

    # Streaming: one tracker per response sees every RequestOutput.
    edit "stream-tracker" {
      in    = "OpenAIServingChat.chat_completion_stream_generator_raw"
      match = "async for res in result_generator:"
      at    = "before"
      code  = "_llamacpp_tracker = _llamacpp_timings.StreamTracker()"
    }
    edit "stream-observe" {
      in    = "OpenAIServingChat.chat_completion_stream_generator_raw"
      match = "async for res in result_generator:"
      at    = "body_start"
      code  = "_llamacpp_tracker.observe(res)"
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
      code  = "_llamacpp_timings.attach(response, final_res.metrics, final_res.num_cached_tokens)"
    }
  }

  file "vllm/entrypoints/openai/completion/serving.py" {
    edit "import" {
      at   = "after_imports"
      code = "from vllm import _llamacpp_timings"
    }

    # Non-streaming: one RequestOutput per prompt; counts from usage.
    edit "full-response" {
      in    = "OpenAIServingCompletion._create_completion"
      match = "response = self.request_output_to_completion_response("
      at    = "after"
      code  = "_llamacpp_timings.attach_batch(response, final_res_batch_checked)"
    }

    edit "stream-tracker" {
      in    = "OpenAIServingCompletion.completion_stream_generator"
      match = "async for prompt_idx, res in result_generator:"
      at    = "before"
      code  = "_llamacpp_tracker = _llamacpp_timings.StreamTracker()"
    }
    edit "stream-observe" {
      in    = "OpenAIServingCompletion.completion_stream_generator"
      match = "async for prompt_idx, res in result_generator:"
      at    = "body_start"
      code  = "_llamacpp_tracker.observe(res)"
    }
    edit "stream-finish-chunk" {
      in    = "OpenAIServingCompletion.completion_stream_generator"
      match = "chunk = CompletionStreamResponse("
      at    = "after"
      code  = <<-PY
        if not include_usage and finish_reason is not None and _llamacpp_tracker.finished(num_choices * num_prompts):
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
}
