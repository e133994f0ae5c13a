// Package patchsets holds the patch sets and assets built into vllm-timings.
//
// Each *.hcl file here is parsed when patcher/patchsets_gen.go is generated
// (go generate ./patcher), so no run parses them; builtin("name") in a patch set
// reads an asset from this directory (llamacpp_timings.py is the module the
// patch installs as vllm/_llamacpp_timings.py).
package patchsets

import "embed"

// FS holds the embedded patch sets and their assets.
//
//go:embed *.hcl *.py
var FS embed.FS
