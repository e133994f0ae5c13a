// Package pysrc finds places in Python source without running Python.
//
// The model is deliberately small. Parse splits a file into statements
// (Python's logical lines): it follows brackets, string literals (including
// triple-quoted ones), comments and backslash continuations, so a statement
// such as
//
//	response = ChatCompletionResponse(
//	    id=request_id,
//	    ...
//	)
//
// is one Stmt spanning several physical lines. Each statement knows its
// indentation, whether it opens a block (it ends in ':'), its enclosing block
// and, for def and class statements, the name it defines.
//
// An Anchor then names a place structurally: a scope ("Class.method", any
// depth), an optional statement the search starts after, the statement to
// match by the prefix of its first line (or a regular expression), and a
// position relative to it: before it, after it (after its whole block when
// it opens one), at the start or end of its body, or after the module's
// imports. Locate resolves an anchor to an insertion Point or explains why it
// cannot: NotFoundError carries the nearest candidate statement, and
// AmbiguousError every line that matched. Line numbers never appear in
// anchors, so unrelated changes elsewhere in a file do not break them.
package pysrc
