// Package install puts the running vllm-timings binary into a directory:
// what `vllm-timings install DIR` does in a Kubernetes init container,
// which has no shell and no cp, to hand the binary to the vLLM container
// through a shared emptyDir volume.
//
// It is planned, then written. Plan reads the directory and the file there
// and decides: create, replace (the bytes or the mode differ, or a link or
// an older binary is in the way) or nothing (the same bytes are already
// there: a restarted init container writes nothing). Every refusal is an
// *exit.Error with its own code (ExitCodes), found before anything is
// written. Do writes a temporary file in the same directory, syncs it and
// renames it over the name: a reader sees the old file or the whole new
// one, never a part, and a failed write leaves no temporary file behind.
package install
