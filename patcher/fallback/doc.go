// Package fallback is vllm-timings' second way to timings: for the parts of
// a vLLM that no patch set fits, it adds them through vLLM's official
// extension points, editing no vLLM file.
//
// The work is done by a Python module embedded here
// (vllm_timings_fallback.py; its docstring defines every number): an ASGI
// middleware that vLLM mounts with `--middleware
// vllm_timings_fallback.TimingsMiddleware`, and a stat logger that vLLM
// loads from the `vllm.stat_logger_plugins` entry-point group (0.12 on),
// registered by a `*.dist-info/entry_points.txt` on the server's
// PYTHONPATH rather than by pip.
//
// This package does three things, in the order a start needs them:
//
//   - [Detect] reads, from an installed vLLM's source and without
//     importing it, which of those extension points and flags it has
//     ([Features]);
//   - [Plan] decides, purely, from the features, the parts that need the
//     fallback and the `vllm serve` command line, what to add to that
//     command line and whether to register the stat logger (a [Serve]), or
//     why the fallback stays off; [Serve.Env] tells the module, through the
//     server's environment ([RoutesEnv]), the routes of those parts, so
//     that it leaves the routes the patch covers to vLLM, unread;
//   - [Write] puts the module and the entry point on disk ([Layout]), once
//     per content, atomically, and [Layout.PythonPath] says what goes on
//     PYTHONPATH.
//
// Nothing here may stop vLLM from starting: every problem is a reason for
// the fallback to stay off, which the caller reports as a warning.
package fallback
