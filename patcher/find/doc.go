// Package find locates the installed vLLM package the way the server
// will run it, without importing it (importing vllm loads torch and costs
// seconds).
//
// Locate tries, in order: Options.Dir (--vllm-dir), $VLLM_DIR, then the
// vllm program (Options.Bin, --vllm-bin, or the one on PATH) followed
// through its #! line to its interpreter's site-packages (vllmbin.go),
// then $VIRTUAL_ENV, $CONDA_PREFIX, well-known install paths (Docker
// images, /opt/venv, /opt/conda), and last python3's
// importlib.util.find_spec. When nothing is found, the error lists every
// place and method tried. The result, an Install, is data: the package
// directory, its parent (the root target paths are relative to), the
// version vLLM's build wrote and how it was found.
package find
