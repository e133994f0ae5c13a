// Package write is the patcher's all-or-nothing write: the changes a
// plan makes, staged and renamed into place so that every file is whole
// at every instant, undone by renames when one fails, and recorded in a
// journal, the manifest, whose path and contents the caller gives as
// data (Txn); and the lock (lock.go) that keeps two runs on one tree
// from interleaving. Commit says how, step by step.
//
// It knows nothing of patch sets: a Change is a path with its old and new
// bytes, mode and owner. The helpers the overlay writes with (WriteTemp,
// SyncDir, DropPycache) are here too.
package write
