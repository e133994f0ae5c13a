// Command vllm-timings patches an installed vLLM so that its OpenAI-compatible
// responses carry a llama.cpp-style "timings" object. See the patcher package
// for the model; this file only wires the process to the command tree.
package main

import "os"

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}
