package patcher

import (
	"github.com/vllm-timings/vllm-timings/patcher/find"
	"github.com/vllm-timings/vllm-timings/patcher/write"
)

// Names of things that live in the lower packages, for callers of this
// one.
type (
	// Install is a vLLM package found on disk (find.Install).
	Install = find.Install
	// FindOptions say where to look for vLLM (find.Options).
	FindOptions = find.Options
)

// LockName is the lock file inside the vllm package (write.LockName).
const LockName = write.LockName

// DefaultLockWait is how long a run waits for another to finish
// (write.DefaultLockWait).
const DefaultLockWait = write.DefaultLockWait
