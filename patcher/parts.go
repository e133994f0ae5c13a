package patcher

import (
	"sort"

	"github.com/vllm-timings/vllm-timings/patcher/spec"
)

// PartLabel names a part's endpoints for messages.
func PartLabel(part string) string {
	switch part {
	case spec.DefaultPart:
		return "/v1/chat/completions and /v1/completions"
	case "responses":
		return "/v1/responses"
	case "messages":
		return "/v1/messages"
	}
	return "part " + part
}

// partOrder is the order parts are chosen and reported in: chat, the
// endpoints the embedded sets know, then any other in name order.
func partOrder(parts []string) {
	rank := map[string]int{spec.DefaultPart: 0, "responses": 1, "messages": 2}
	sort.SliceStable(parts, func(i, j int) bool {
		ri, oki := rank[parts[i]]
		rj, okj := rank[parts[j]]
		switch {
		case oki && okj:
			return ri < rj
		case oki != okj:
			return oki
		}
		return parts[i] < parts[j]
	})
}
