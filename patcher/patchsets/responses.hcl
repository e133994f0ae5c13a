# Timings for /v1/responses (the OpenAI Responses API, vLLM v0.10 on).
#
# Every Responses call runs its engine requests through one generator
# (_generate_with_builtin_tools, from v0.10.1; a tool loop runs several);
# observe_turn sees each RequestOutput there, keyed by the call's
# conversation context. The non-streamed response gets timings where it is
# built; a stream gets them on its terminal event (response.completed, or
# response.incomplete), set in the stream's one helper every event passes
# through before it is sent (_send_event in v0.10.1 to v0.10.2, then
# _increment_sequence_number_and_return): at the event's top level, where
# llama-swap reads them, and on the response it carries, where the openai
# SDK's stream helper (get_final_response) reads them. responses_full_generator
# also builds the final response of a stream; attaching there would also
# clear vLLM's metrics inside it, which llama-swap does not read in a
# stream: hence "if not request.stream".
#
# Six sets, one per shape; the files they edit and the requires tell them
# apart:
#   responses-v0.10.0   v0.10.0: serving_responses.py, no stream, no context
#   responses-modules-no-stream
#                       nightlies of 2025-08-06 to 2025-08-11 and ROCm/vllm
#                       builds of then: a context and the generator in
#                       serving_engine.py, but no stream yet
#   responses-modules   v0.10.1 to v0.14.1: serving_responses.py, the
#                       generator in serving_engine.py (OpenAIServing)
#   responses-modules-stream-events
#                       nightlies of 2025-08-27 to 2025-09-04 and the ROCm
#                       7.x builds: as responses-modules, but the stream's
#                       _send_event is in _process_streaming_events
#   responses-engine    v0.15.0 to v0.18.1: responses/serving.py, the
#                       generator in engine/serving.py (OpenAIServing)
#   responses-packages  v0.19.0 on: responses/serving.py holds both
patchset "responses-v0.10.0" {
  part        = "responses"
  description = "timings for /v1/responses, non-streamed only (serving_responses.py, one engine request per call)"
  covers      = ["v0.10.0"]

  file "vllm/_llamacpp_timings.py" {
    create = builtin("llamacpp_timings.py")
  }

  file "vllm/entrypoints/openai/serving_responses.py" {
    edit "import" {
      at   = "after_imports"
      code = "from vllm import _llamacpp_timings"
    }

    # v0.10.0 reads the engine's outputs itself, in the full generator; later
    # versions read a conversation context there.
    require "single-request" {
      in    = "OpenAIServingResponses.responses_full_generator"
      match = "final_res = res"
    }

    edit "full-response" {
      in    = "OpenAIServingResponses.responses_full_generator"
      match = "response = ResponsesResponse.from_request("
      at    = "after"
      code  = "_llamacpp_timings.attach_response_output(response, final_res)"
    }
  }
}

patchset "responses-modules-no-stream" {
  part        = "responses"
  description = "timings for /v1/responses, non-streamed only (serving_responses.py, whose create_responses refuses a stream; the engine requests in OpenAIServing._generate_with_builtin_tools, serving_engine.py)"
  covers      = ["nightlies from ec7cb1922 (2025-08-06) to before 95a935fc4 (2025-08-11)", "ROCm/vllm builds of that period (temp, amd/out_of_place_layernorm, greg_test, dllehr_gpt_oss and 2 more branches)"]

  file "vllm/_llamacpp_timings.py" {
    create = builtin("llamacpp_timings.py")
  }

  file "vllm/entrypoints/openai/serving_engine.py" {
    edit "import" {
      at   = "after_imports"
      code = "from vllm import _llamacpp_timings"
    }

    edit "observe-turn" {
      in    = "OpenAIServing._generate_with_builtin_tools"
      match = "async for res in generator:"
      at    = "body_start"
      code  = "_llamacpp_timings.observe_turn(context, res)"
    }
  }

  file "vllm/entrypoints/openai/serving_responses.py" {
    edit "import" {
      at   = "after_imports"
      code = "from vllm import _llamacpp_timings"
    }

    # These nightlies read a conversation context as later versions do,
    # but refuse a stream, as v0.10.0 does; from 95a935fc4 on they stream.
    require "no-stream" {
      in       = "OpenAIServingResponses.create_responses"
      match    = "raise NotImplementedError("
      contains = "Streaming responses are not supported"
    }

    # No stream, so the full generator builds only non-streamed responses
    # (a background one's too, stored for a later GET).
    edit "full-response" {
      in    = "OpenAIServingResponses.responses_full_generator"
      match = "response = ResponsesResponse.from_request("
      at    = "after"
      code  = "_llamacpp_timings.attach_response(response, context)"
    }
  }
}

patchset "responses-modules" {
  part        = "responses"
  description = "timings for /v1/responses (serving_responses.py; the engine requests in OpenAIServing._generate_with_builtin_tools, serving_engine.py)"
  covers      = ["v0.10.1", "v0.10.1.1", "v0.10.2", "v0.11.0", "v0.11.1", "v0.11.2", "v0.12.0", "v0.13.0", "v0.14.0", "v0.14.1"]

  file "vllm/_llamacpp_timings.py" {
    create = builtin("llamacpp_timings.py")
  }

  file "vllm/entrypoints/openai/serving_engine.py" {
    edit "import" {
      at   = "after_imports"
      code = "from vllm import _llamacpp_timings"
    }

    edit "observe-turn" {
      in    = "OpenAIServing._generate_with_builtin_tools"
      match = "async for res in generator:"
      at    = "body_start"
      code  = "_llamacpp_timings.observe_turn(context, res)"
    }
  }

  file "vllm/entrypoints/openai/serving_responses.py" {
    edit "import" {
      at   = "after_imports"
      code = "from vllm import _llamacpp_timings"
    }

    edit "full-response" {
      in    = "OpenAIServingResponses.responses_full_generator"
      match = "response = ResponsesResponse.from_request("
      at    = "after"
      code  = <<-PY
        if not request.stream:
            _llamacpp_timings.attach_response(response, context)
      PY
    }

    edit "stream-terminal-event" {
      in    = "OpenAIServingResponses.responses_stream_generator"
      regex = "^def (_send_event|_increment_sequence_number_and_return)\\("
      at    = "body_start"
      code  = "_llamacpp_timings.attach_response_event(event, context)"
    }
  }
}

patchset "responses-modules-stream-events" {
  part        = "responses"
  description = "timings for /v1/responses (serving_responses.py, the stream's events sent by _process_streaming_events; the engine requests in OpenAIServing._generate_with_builtin_tools, serving_engine.py)"
  covers      = ["nightlies from 6891205b1 (2025-08-27) to before 8f423e5f4 (2025-09-04)", "ROCm/vllm ROCm-7.1, 0902_rc1, 0909_rc2, 0909_rc3 (ROCm 7.x builds) and 6 more branches"]

  file "vllm/_llamacpp_timings.py" {
    create = builtin("llamacpp_timings.py")
  }

  file "vllm/entrypoints/openai/serving_engine.py" {
    edit "import" {
      at   = "after_imports"
      code = "from vllm import _llamacpp_timings"
    }

    edit "observe-turn" {
      in    = "OpenAIServing._generate_with_builtin_tools"
      match = "async for res in generator:"
      at    = "body_start"
      code  = "_llamacpp_timings.observe_turn(context, res)"
    }
  }

  file "vllm/entrypoints/openai/serving_responses.py" {
    edit "import" {
      at   = "after_imports"
      code = "from vllm import _llamacpp_timings"
    }

    edit "full-response" {
      in    = "OpenAIServingResponses.responses_full_generator"
      match = "response = ResponsesResponse.from_request("
      at    = "after"
      code  = <<-PY
        if not request.stream:
            _llamacpp_timings.attach_response(response, context)
      PY
    }

    # responses_stream_generator only opens the tool sessions and hands
    # the stream to _process_streaming_events, which defines the helper.
    edit "stream-terminal-event" {
      in    = "OpenAIServingResponses._process_streaming_events"
      match = "def _send_event("
      at    = "body_start"
      code  = "_llamacpp_timings.attach_response_event(event, context)"
    }
  }
}

patchset "responses-engine" {
  part        = "responses"
  description = "timings for /v1/responses (responses/serving.py; the engine requests in OpenAIServing._generate_with_builtin_tools, engine/serving.py)"
  covers      = ["v0.15.0", "v0.15.1", "v0.16.0", "v0.17.0", "v0.17.1", "v0.18.0", "v0.18.1"]

  file "vllm/_llamacpp_timings.py" {
    create = builtin("llamacpp_timings.py")
  }

  file "vllm/entrypoints/openai/engine/serving.py" {
    edit "import" {
      at   = "after_imports"
      code = "from vllm import _llamacpp_timings"
    }

    edit "observe-turn" {
      in    = "OpenAIServing._generate_with_builtin_tools"
      match = "async for res in generator:"
      at    = "body_start"
      code  = "_llamacpp_timings.observe_turn(context, res)"
    }
  }

  file "vllm/entrypoints/openai/responses/serving.py" {
    edit "import" {
      at   = "after_imports"
      code = "from vllm import _llamacpp_timings"
    }

    edit "full-response" {
      in    = "OpenAIServingResponses.responses_full_generator"
      match = "response = ResponsesResponse.from_request("
      at    = "after"
      code  = <<-PY
        if not request.stream:
            _llamacpp_timings.attach_response(response, context)
      PY
    }

    edit "stream-terminal-event" {
      in    = "OpenAIServingResponses.responses_stream_generator"
      match = "def _increment_sequence_number_and_return("
      at    = "body_start"
      code  = "_llamacpp_timings.attach_response_event(event, context)"
    }
  }
}

patchset "responses-packages" {
  part        = "responses"
  description = "timings for /v1/responses (responses/serving.py, which runs the engine requests itself)"
  covers      = ["v0.19.0 to v0.25.1 (every release)", "0.26.0 to 0.34.0 (PyPI)", "nightly-07351e088", "nightly-1acd67a"]

  file "vllm/_llamacpp_timings.py" {
    create = builtin("llamacpp_timings.py")
  }

  file "vllm/entrypoints/openai/responses/serving.py" {
    edit "import" {
      at   = "after_imports"
      code = "from vllm import _llamacpp_timings"
    }

    edit "observe-turn" {
      in    = "OpenAIServingResponses._generate_with_builtin_tools"
      match = "async for res in generator:"
      at    = "body_start"
      code  = "_llamacpp_timings.observe_turn(context, res)"
    }

    edit "full-response" {
      in    = "OpenAIServingResponses.responses_full_generator"
      match = "response = ResponsesResponse.from_request("
      at    = "after"
      code  = <<-PY
        if not request.stream:
            _llamacpp_timings.attach_response(response, context)
      PY
    }

    edit "stream-terminal-event" {
      in    = "OpenAIServingResponses.responses_stream_generator"
      match = "def _increment_sequence_number_and_return("
      at    = "body_start"
      code  = "_llamacpp_timings.attach_response_event(event, context)"
    }
  }
}
