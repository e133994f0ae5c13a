package main

import (
	_ "embed"
	"strings"
)

// languageHelp is the patch set language as patcher/doc.go documents it
// (its "The patch set language" section, as plain text), for users of the
// binary, who have no source: "vllm-timings patchsets --help" prints it,
// and a bad --patchset's message points there. TestPatchsetsHelpLanguage
// keeps it equal to doc.go (go test ./cmd/vllm-timings -run
// TestPatchsetsHelpLanguage -u rewrites it).
//
//go:embed patchsets_language.txt
var languageHelp string

// docsURL is a page of docs/ at the tag of this build (main for a build
// without a version).
func docsURL(page string) string {
	ref := "main"
	if version != "dev" && version != "" {
		ref = version
		if !strings.HasPrefix(ref, "v") {
			ref = "v" + ref
		}
	}
	return "https://github.com/vllm-timings/vllm-timings/blob/" + ref + "/docs/" + page
}

func patchsetsLong() string {
	return `List the patch sets apply chooses from: the embedded ones and those given
with --patchset, with the vLLM versions each covers and the files each
creates, edits or checks. --print NAME prints a set's HCL, a starting point
for your own; "vllm-timings doctor" writes one adapted to the installed vLLM.

The patch set language

` + languageHelp + `
A set patches one part: chat (the default: /v1/chat/completions and
/v1/completions), responses (/v1/responses) or messages (/v1/messages).
More, with examples: ` + docsURL("patch-sets.md#writing-a-patch-set")
}
