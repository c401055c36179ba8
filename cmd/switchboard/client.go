package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// apiClient is the REST client of the commands that talk to a running
// server (webhooks listen, call web) rather than to its database.
type apiClient struct {
	base string // http(s)://host:port, no trailing slash
	key  string
	http *http.Client
}

// DefaultServerURL is the server the client commands talk to by default:
// `switchboard serve`'s default --addr.
const DefaultServerURL = "http://127.0.0.1:8080"

// clientFlags adds --url and --api-key to fs; call the returned function
// after parsing for the client.
func clientFlags(fs *flag.FlagSet) func() (*apiClient, error) {
	base := fs.String("url", env("SWITCHBOARD_URL", DefaultServerURL), "the server's `URL` (env SWITCHBOARD_URL)")
	key := fs.String("api-key", "", "the API key (sbk_…); prefer the environment variable SWITCHBOARD_API_KEY: flags show in ps")
	return func() (*apiClient, error) {
		k := *key
		if k == "" {
			k = env("SWITCHBOARD_API_KEY", "")
		}
		if k == "" {
			return nil, errors.New("no API key: set SWITCHBOARD_API_KEY (the key `make run` printed, or one from `switchboard key create`)")
		}
		u, err := url.Parse(strings.TrimRight(*base, "/"))
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("--url: want the server's http(s) URL, e.g. %s, got %q", DefaultServerURL, *base)
		}
		return &apiClient{base: u.String(), key: k, http: &http.Client{Timeout: 30 * time.Second}}, nil
	}
}

// apiError is the server's error answer, as its envelope says it.
type apiError struct {
	Status  int
	Message string
	Code    string
	Fields  []struct{ Field, Message string }
}

func (e *apiError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d %s: %s", e.Status, e.Code, e.Message)
	for _, f := range e.Fields {
		if fm := f.Field + ": " + f.Message; !strings.Contains(e.Message, fm) {
			fmt.Fprintf(&b, "; %s", fm)
		}
	}
	return b.String()
}

// do sends a request with the key and decodes the envelope into out.
func (c *apiClient) do(ctx context.Context, method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("X-API-Key", c.key)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(res.Body, 4<<20))
	if err != nil {
		return fmt.Errorf("%s %s: reading the answer: %w", method, path, err)
	}
	if res.StatusCode >= 300 {
		var env struct {
			Message string
			Error   struct {
				Code   string
				Fields []struct{ Field, Message string }
			}
		}
		_ = json.Unmarshal(raw, &env)
		return fmt.Errorf("%s %s: %w", method, path, &apiError{Status: res.StatusCode, Message: env.Message, Code: env.Error.Code, Fields: env.Error.Fields})
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			return fmt.Errorf("%s %s: the answer is not the API's JSON: %w", method, path, err)
		}
	}
	return nil
}

// wsURL is the websocket URL of a path on the server.
func (c *apiClient) wsURL(path string) string {
	return "ws" + strings.TrimPrefix(c.base, "http") + path
}
