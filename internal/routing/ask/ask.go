// Package ask puts inbound routing's question to an organization's
// endpoint over HTTP (docs/ARCHITECTURE.md, "Inbound routing"): signed as
// webhooks are (Standard Webhooks headers), sent through the webhooks' SSRF
// guard, redirects not followed, the answer bounded and read by
// routing.ParseAnswer.
package ask

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"switchboard/internal/apperr"
	"switchboard/internal/routing"
	"switchboard/internal/webhook"
)

// Client asks endpoints. HTTP must carry the SSRF guard (webhook.Guard's
// transport); its redirects are not followed.
type Client struct {
	HTTP *http.Client
	// Now is the signing clock; nil means time.Now.
	Now func() time.Time
}

// Ask puts req to e and returns its answer. The error, when there is one,
// is why the call falls back to its allocated assistant, as the record
// says it: "timeout", "status 500", "invalid answer: …".
func (c *Client) Ask(ctx context.Context, e routing.Endpoint, req routing.Request) (routing.Answer, error) {
	timeout := e.Timeout
	if timeout <= 0 {
		timeout = routing.DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	now := time.Now
	if c.Now != nil {
		now = c.Now
	}
	m, err := webhook.NewMessage(routing.EventType, now(), req)
	if err != nil {
		return routing.Answer{}, err
	}
	h, err := webhook.Headers([]string{e.Secret}, m, now())
	if err != nil {
		return routing.Answer{}, fmt.Errorf("signing: %v", err)
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, e.URL, bytes.NewReader(m.Body))
	if err != nil {
		return routing.Answer{}, fmt.Errorf("invalid endpoint URL: %v", err)
	}
	hr.Header = h
	hr.Header.Set("Accept", "application/json")
	hr.Header.Set("Accept-Encoding", "identity")
	client := *c.HTTP
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := client.Do(hr)
	if err != nil {
		if ctx.Err() != nil {
			return routing.Answer{}, errors.New("timeout")
		}
		if errors.Is(err, webhook.ErrUnsafeURL) {
			return routing.Answer{}, fmt.Errorf("refused address: %v", errors.Unwrap(err))
		}
		// url.Error quotes the endpoint's URL, which may carry a token of
		// the organization's: the reason (logged, stored) keeps the cause.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return routing.Answer{}, fmt.Errorf("no answer: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode >= 300 {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, routing.MaxAnswer))
		return routing.Answer{}, fmt.Errorf("status %d", resp.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, routing.MaxAnswer+1))
	switch {
	case ctx.Err() != nil:
		return routing.Answer{}, errors.New("timeout")
	case err != nil:
		return routing.Answer{}, fmt.Errorf("reading the answer: %v", err)
	case len(body) > routing.MaxAnswer:
		return routing.Answer{}, fmt.Errorf("invalid answer: over %d bytes", routing.MaxAnswer)
	}
	a, err := routing.ParseAnswer(body)
	if err != nil {
		return routing.Answer{}, fmt.Errorf("invalid answer: %v", err)
	}
	return a, nil
}

// NewEndpoint checks a routing endpoint as an organization sets it (the
// REST API and the dashboard alike) and returns it with a new signing
// secret: url against the webhooks' guard (field "url"), timeoutMs within
// routing's bounds (field "timeoutMs"; negative: not given, the default). Problems go to
// errs, named under prefix ("assistantRequest.").
func NewEndpoint(ctx context.Context, g webhook.Guard, orgID, url string, timeoutMs int, now time.Time, prefix string, errs *apperr.Fields) routing.Endpoint {
	if timeoutMs < 0 {
		timeoutMs = int(routing.DefaultTimeout.Milliseconds())
	}
	if timeoutMs < int(routing.MinTimeout.Milliseconds()) || timeoutMs > int(routing.MaxTimeout.Milliseconds()) {
		errs.Add(prefix+"timeoutMs", "must be an integer from %d to %d (milliseconds the caller waits for your answer; default %d)",
			routing.MinTimeout.Milliseconds(), routing.MaxTimeout.Milliseconds(), routing.DefaultTimeout.Milliseconds())
	}
	if url == "" {
		errs.Add(prefix+"url", "is required: your endpoint's URL")
	} else if err := g.CheckURL(ctx, url); err != nil {
		switch {
		case webhook.IsPrivateRefusal(err):
			// Not the webhooks' hint: `webhooks listen` forwards deliveries,
			// and a routing question needs an answer from the endpoint itself.
			errs.Add(prefix+"url", "%s; this server asks no endpoint on loopback or private addresses. "+
				"Give it a public URL (a tunnel to your machine works), or start a server whose endpoints are on its own trusted network "+
				"with --webhook-allow-private (SWITCHBOARD_WEBHOOK_ALLOW_PRIVATE=true)", err.Error())
		case errors.Is(err, webhook.ErrUnsafeURL):
			errs.Add(prefix+"url", "%s", err.Error())
		default:
			errs.Add(prefix+"url", "could not be checked: %s", err.Error())
		}
	}
	return routing.Endpoint{OrgID: orgID, URL: url, Timeout: time.Duration(timeoutMs) * time.Millisecond, Secret: webhook.NewSecret(), UpdatedAt: now}
}
