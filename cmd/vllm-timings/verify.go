package main

import (
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/vllm-timings/vllm-timings/patcher/verify"
)

// verifyClock, if set, is the clock verify measures wall times with. Only the
// end-to-end tests set it, so their tables are the same on every run.
var verifyClock func() time.Time

func newCmdVerify() *cobra.Command {
	var o verify.Options
	var endpoints []string
	cmd := &cobra.Command{
		Use:   "verify --url http://127.0.0.1:PORT | --llama-swap http://127.0.0.1:8080 --model NAME",
		Short: "Check that a running server's responses carry correct timings",
		Long: `verify sends a few small requests to an OpenAI-compatible server (patched vLLM,
llama-server, or llama-swap in front of either): chat and completions, streaming and
not, and one prompt twice so a prefix cache can show in cache_n. It checks the
timings of every response against usage, against themselves and against the time
it waited, prints a table, and exits 0 only if every check passed.

--endpoints picks the endpoints (default chat,completions): responses sends
/v1/responses requests (full, repeated, streamed) and checks prompt_n + cache_n
against usage.input_tokens and cache_n against input_tokens_details.cached_tokens;
messages sends /v1/messages requests and checks prompt_n + cache_n against
input_tokens + cache_read_input_tokens + cache_creation_input_tokens (Anthropic's
input_tokens leaves out what the cache read and wrote) and cache_n against
cache_read_input_tokens.

--multi adds requests with n=2 (chat and completions, full and streaming with and
without usage) and a two-prompt completion, so several engine requests share one
response.

--llama-swap URL sends the requests through that llama-swap (instead of --url) to
the model --model names, reads the row each one adds to llama-swap's activity
(GET /api/metrics/activity) and checks it against the truth of the response's
timings: input tokens (the uncached prompt tokens), cached tokens, prompt and
generation speed, and a duration covering prompt_ms + predicted_ms. A second table
puts the truth beside what llama-swap recorded. When a response carries vLLM's own
per-request metrics beside timings, verify says what llama-swap makes of them.

Exit codes:
` + verify.ExitCodes.Text(),
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch {
			case o.URL == "" && o.LlamaSwap == "":
				return usageErrorf("verify: --url is required, e.g. --url http://127.0.0.1:8000 (or --llama-swap URL --model NAME)")
			case o.URL != "" && o.LlamaSwap != "":
				return usageErrorf("verify: give --url or --llama-swap, not both: with --llama-swap the requests go through llama-swap")
			case o.LlamaSwap != "" && o.Model == "":
				return usageErrorf("verify: --llama-swap needs --model, the llama-swap model to send the requests to")
			}
			flag := "--url"
			if o.LlamaSwap != "" {
				flag = "--llama-swap"
			}
			if _, err := verify.NormalizeURL(o.URL + o.LlamaSwap); err != nil {
				return usageErrorf("verify: %v", strings.Replace(err.Error(), "--url", flag, 1))
			}
			if cmd.Flags().Changed("endpoints") {
				list, err := verify.CheckEndpoints(endpoints)
				if err != nil {
					return usageErrorf("verify: %v", err)
				}
				o.Endpoints = list
				if o.Multi && !slices.Contains(list, verify.EndpointChat) && !slices.Contains(list, verify.EndpointCompletions) {
					return usageErrorf("verify: --multi adds n=2 and two-prompt requests to chat and completions, and --endpoints has neither")
				}
			}
			if o.Timeout <= 0 {
				return usageErrorf("verify: --timeout must be positive, got %s", o.Timeout)
			}
			if !cmd.Flags().Changed("api-key") {
				o.APIKey = os.Getenv("VLLM_API_KEY")
			}
			o.Stdout = cmd.OutOrStdout()
			o.Now = verifyClock
			return verify.Run(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.URL, "url", "", "server base URL, e.g. http://127.0.0.1:8000 (a trailing /v1 is fine)")
	f.StringVar(&o.LlamaSwap, "llama-swap", "", "llama-swap's base URL: send the requests through it and check its activity rows")
	f.StringVar(&o.Model, "model", "", "model name to request (default: the first id /v1/models lists; required with --llama-swap)")
	f.BoolVar(&o.Multi, "multi", false, "also send n=2 and two-prompt requests")
	f.StringSliceVar(&endpoints, "endpoints", verify.DefaultEndpoints, "endpoints to send requests to: "+strings.Join(verify.AllEndpoints, ","))
	f.StringVar(&o.APIKey, "api-key", "", "bearer token (default: $VLLM_API_KEY)")
	f.BoolVar(&o.JSON, "json", false, "print a JSON report instead of the table")
	f.DurationVar(&o.Timeout, "timeout", verify.DefaultTimeout, "time allowed for each request")
	return cmd
}
