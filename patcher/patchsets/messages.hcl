# Timings for /v1/messages (the Anthropic Messages API, vLLM v0.11.1 on).
#
# vLLM serves a message by converting it to a chat completion request and
# running its own chat code (AnthropicServingMessages derives from
# OpenAIServingChat), which the chat part of the patch gives timings. These
# edits copy them: from the ChatCompletionResponse onto the message, and
# from the chat stream's final usage chunk onto the message_delta event
# built from it (the only event with the final usage). So /v1/messages has
# timings only where the chat part is applied too, with its counts:
# prompt_n + cache_n is the chat usage's prompt_tokens, which is
# input_tokens + cache_read_input_tokens + cache_creation_input_tokens
# (absent ones 0) in the message's usage.
#
# Two sets, by file: anthropic/serving_messages.py (v0.11.1 to v0.14.1) and
# anthropic/serving.py (v0.15.0 on).
patchset "messages-module" {
  part        = "messages"
  description = "timings for /v1/messages, copied from the chat completion it runs (anthropic/serving_messages.py)"
  covers      = ["v0.11.1", "v0.11.2", "v0.12.0", "v0.13.0", "v0.14.0", "v0.14.1"]

  file "vllm/_llamacpp_timings.py" {
    create = builtin("llamacpp_timings.py")
  }

  file "vllm/entrypoints/anthropic/serving_messages.py" {
    edit "import" {
      at   = "after_imports"
      code = "from vllm import _llamacpp_timings"
    }

    edit "full-message" {
      in    = "AnthropicServingMessages.messages_full_converter"
      match = "return result"
      at    = "before"
      code  = "result = _llamacpp_timings.attach_message(result, generator)"
    }

    edit "stream-message-delta" {
      in       = "AnthropicServingMessages.message_stream_converter"
      match    = "chunk = AnthropicStreamEvent("
      contains = "\"message_delta\""
      at       = "after"
      code     = "chunk = _llamacpp_timings.attach_message_delta(chunk, origin_chunk)"
    }
  }
}

patchset "messages-package" {
  part        = "messages"
  description = "timings for /v1/messages, copied from the chat completion it runs (anthropic/serving.py)"
  covers      = ["v0.15.0 to v0.25.1 (every release)", "0.26.0 to 0.34.0 (PyPI)", "nightly-07351e088", "nightly-1acd67a"]

  file "vllm/_llamacpp_timings.py" {
    create = builtin("llamacpp_timings.py")
  }

  file "vllm/entrypoints/anthropic/serving.py" {
    edit "import" {
      at   = "after_imports"
      code = "from vllm import _llamacpp_timings"
    }

    edit "full-message" {
      in    = "AnthropicServingMessages.messages_full_converter"
      match = "return result"
      at    = "before"
      code  = "result = _llamacpp_timings.attach_message(result, generator)"
    }

    edit "stream-message-delta" {
      in       = "AnthropicServingMessages.message_stream_converter"
      match    = "chunk = AnthropicStreamEvent("
      contains = "\"message_delta\""
      at       = "after"
      code     = "chunk = _llamacpp_timings.attach_message_delta(chunk, origin_chunk)"
    }
  }
}
