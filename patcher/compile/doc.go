// Package compile checks the planned Python before anything is written:
// every file's vllm-timings markers must be lines of their own, and its
// new content must compile where its old content did (python3's
// compile(), or, without an interpreter, the project's scanner). A file
// that fails is refused with exit 31 (codes.Compile); its old content
// failing too means the interpreter cannot judge it, and the scanner does.
package compile
