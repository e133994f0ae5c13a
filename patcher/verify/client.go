package verify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"time"
)

// maxBody bounds what verify reads of one response. Its requests ask for a
// few tokens; anything this large is not an answer to them.
const maxBody = 32 << 20

// NormalizeURL turns what the user gave as --url into the base that /v1/...
// paths are appended to. It accepts the server root or its /v1, with or
// without a trailing slash, and keeps any other path (llama-swap's
// /upstream/NAME, a reverse proxy's prefix).
func NormalizeURL(raw string) (string, error) {
	if raw == "" {
		return "", errors.New("--url is required, e.g. --url http://127.0.0.1:8000")
	}
	if !strings.Contains(raw, "://") {
		return "", fmt.Errorf("--url %q: want an http:// or https:// URL, e.g. http://%s", raw, strings.TrimLeft(raw, "/"))
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("--url %q: %v", raw, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", fmt.Errorf("--url %q: want an http:// or https:// URL, e.g. http://127.0.0.1:8000", raw)
	}
	if u.Host == "" {
		return "", fmt.Errorf("--url %q: no host", raw)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("--url %q: a query or fragment cannot be part of the server's base URL", raw)
	}
	u.Path = strings.TrimSuffix(strings.TrimRight(u.Path, "/"), "/v1")
	u.RawPath = ""
	return strings.TrimRight(u.String(), "/"), nil
}

// client sends verify's requests and turns transport failures into Errors.
type client struct {
	base    string
	apiKey  string
	timeout time.Duration
	http    *http.Client
	now     func() time.Time
}

// response is one complete answer.
type response struct {
	status int
	header http.Header
	body   []byte
	wallMS float64 // from just before sending to the end of the body
}

// do sends one request and reads the whole answer. Non-2xx statuses become
// Errors, as do all transport failures.
func (c *client) do(ctx context.Context, method, path string, payload any) (*response, error) {
	what := method + " " + path
	var body io.Reader
	if payload != nil {
		b, err := json.Marshal(payload)
		if err != nil {
			return nil, err
		}
		body = bytes.NewReader(b)
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return nil, err
	}
	if payload != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json, text/event-stream")
	if c.apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.apiKey)
	}

	start := c.now()
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, c.transportError(ctx, what, err, false)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	end := c.now()
	if err != nil {
		return nil, c.transportError(ctx, what, err, true)
	}
	if len(data) > maxBody {
		return nil, errorf(ExitNotJSON, nil, "%s: the response is larger than %d MiB; that is not an answer to a %d-token request", what, maxBody>>20, maxTokens)
	}
	r := &response{
		status: resp.StatusCode,
		header: resp.Header,
		body:   data,
		wallMS: float64(end.Sub(start)) / float64(time.Millisecond),
	}
	switch {
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		hint := "pass the server's key with --api-key (or VLLM_API_KEY)"
		if c.apiKey != "" {
			hint = "the server rejected the key given with --api-key (or VLLM_API_KEY)"
		}
		return nil, errorf(ExitAuth, nil, "%s: HTTP %d %s: %s%s", what, resp.StatusCode, http.StatusText(resp.StatusCode), hint, excerpt(data))
	case resp.StatusCode < 200 || resp.StatusCode > 299:
		return nil, errorf(ExitHTTP, nil, "%s: HTTP %d %s%s", what, resp.StatusCode, http.StatusText(resp.StatusCode), excerpt(data))
	}
	return r, nil
}

// transportError classifies a failure to get a complete answer.
func (c *client) transportError(ctx context.Context, what string, err error, readingBody bool) error {
	var nerr net.Error
	if errors.Is(ctx.Err(), context.DeadlineExceeded) || errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &nerr) && nerr.Timeout()) {
		return errorf(ExitTimeout, err, "%s: no complete answer within %s (raise --timeout if the server is still loading the model)", what, c.timeout)
	}
	var op *net.OpError
	if !readingBody && errors.As(err, &op) && op.Op == "dial" {
		return errorf(ExitUnreachable, err, "cannot connect to %s: %v; is the server running and listening there?", c.base, unwrapAll(err))
	}
	if readingBody {
		return errorf(ExitBroken, err, "%s: the connection broke before the response ended: %v", what, unwrapAll(err))
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) {
		return errorf(ExitBroken, err, "%s: the server closed the connection without answering", what)
	}
	return errorf(ExitUnreachable, err, "%s: %v", what, unwrapAll(err))
}

// unwrapAll drops url.Error's "Post \"http://...\": " prefix, which repeats
// what the message already says.
func unwrapAll(err error) error {
	var uerr *url.Error
	if errors.As(err, &uerr) {
		return uerr.Err
	}
	return err
}

// excerpt quotes the start of an error body: the OpenAI error message if the
// body has one, else its first line.
func excerpt(body []byte) string {
	var e struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
		Detail  any             `json:"detail"`
	}
	msg := ""
	if json.Unmarshal(body, &e) == nil {
		var inner struct {
			Message string `json:"message"`
		}
		switch {
		case json.Unmarshal(e.Error, &inner) == nil && inner.Message != "":
			msg = inner.Message
		case len(e.Error) > 0 && e.Error[0] == '"':
			_ = json.Unmarshal(e.Error, &msg)
		case e.Message != "":
			msg = e.Message
		case e.Detail != nil:
			msg = fmt.Sprint(e.Detail)
		}
	}
	if msg == "" {
		msg = strings.TrimSpace(string(body))
		if i := strings.IndexByte(msg, '\n'); i >= 0 {
			msg = msg[:i]
		}
	}
	if len(msg) > 200 {
		msg = msg[:200] + "…"
	}
	if msg == "" {
		return ""
	}
	return ": " + msg
}
