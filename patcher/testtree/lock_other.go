//go:build !unix

package testtree

// lockFile does not lock where flock is missing: concurrent test processes
// may each build llama-swap, and each renames a whole binary into place.
func lockFile(string) (func(), error) { return func() {}, nil }
