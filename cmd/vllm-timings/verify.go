package main

import (
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/vllm-timings/vllm-timings/patcher/verify"
)

// verifyClock, if set, is the clock verify measures wall times with. Only the
// end-to-end tests set it, so their tables are the same on every run.
var verifyClock func() time.Time

func newCmdVerify() *cobra.Command {
	var o verify.Options
	cmd := &cobra.Command{
		Use:   "verify --url http://127.0.0.1:PORT",
		Short: "Check that a running server's responses carry correct timings",
		Long: `verify sends a few small requests to an OpenAI-compatible server (patched vLLM,
llama-server, or llama-swap in front of either): chat and completions, streaming and
not, and one prompt twice so a prefix cache can show in cache_n. It checks the
timings of every response against usage, against themselves and against the time
it waited, prints a table, and exits 0 only if every check passed.

Exit codes:
` + verify.ExitCodes.Text(),
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.URL == "" {
				return usageErrorf("verify: --url is required, e.g. --url http://127.0.0.1:8000")
			}
			if _, err := verify.NormalizeURL(o.URL); err != nil {
				return usageErrorf("verify: %v", err)
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
	f.StringVar(&o.Model, "model", "", "model name to request (default: the first id /v1/models lists)")
	f.StringVar(&o.APIKey, "api-key", "", "bearer token (default: $VLLM_API_KEY)")
	f.BoolVar(&o.JSON, "json", false, "print a JSON report instead of the table")
	f.DurationVar(&o.Timeout, "timeout", verify.DefaultTimeout, "time allowed for each request")
	return cmd
}
