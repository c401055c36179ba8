// Package wire holds what the cloud speech clients share above the
// vendor API Endpoint (internal/vendorapi) and below their protocols:
// checking a base URL, and streaming a PCM reply to the caller at the rate
// it asked for.
package wire

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"switchboard/internal/speech"
	"switchboard/internal/vendorapi"
)

// Endpoint returns the provider endpoint of a speech client: its failures
// read as the speech clients' always have ("canceled"; a cause past its own
// deadline, such as a socket write that timed out, is a retryable
// deadline_exceeded).
func Endpoint(name, apiKey string, h http.Header, hc *http.Client, parse vendorapi.ErrorParser) vendorapi.Endpoint {
	return vendorapi.Endpoint{
		Provider:      name,
		Header:        h,
		Secret:        apiKey,
		HTTP:          hc,
		ParseError:    parse,
		DeadlineCause: true,
	}
}

// BaseURL checks a configured base URL: empty means def; the scheme must be
// http or https (ws and wss read as them); a trailing slash is dropped.
func BaseURL(raw, def string) (string, error) {
	if strings.TrimSpace(raw) == "" {
		raw = def
	}
	u, err := url.Parse(strings.TrimRight(strings.TrimSpace(raw), "/"))
	if err != nil {
		return "", fmt.Errorf("base URL %q: %v", raw, err)
	}
	switch u.Scheme {
	case "http", "https":
	case "ws":
		u.Scheme = "http"
	case "wss":
		u.Scheme = "https"
	default:
		return "", fmt.Errorf("base URL %q: scheme must be http or https", raw)
	}
	if u.Host == "" {
		return "", fmt.Errorf("base URL %q: no host", raw)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("base URL %q: must not have a query or fragment", raw)
	}
	return u.String(), nil
}

// Speak is the part of a synthesis request every cloud voice checks the
// same way: the client's configuration error, a positive sample rate, text
// that says something (skip: speak nothing, send nothing), the rate to ask
// for (opts' when the provider offers it, else fallbackRate) and the voice
// (opts', else the first non-empty of defaults).
func Speak(ep *vendorapi.Endpoint, config error, text string, opts speech.VoiceOptions, rates []int, fallbackRate int, defaults ...string) (rate int, voice string, skip bool, err error) {
	if config != nil {
		return 0, "", false, ep.Config("%v", config)
	}
	if opts.SampleRate <= 0 {
		return 0, "", false, ep.Invalid("sampleRate: must be positive, got %d", opts.SampleRate)
	}
	if strings.TrimSpace(text) == "" {
		return 0, "", true, nil
	}
	rate = fallbackRate
	if slices.Contains(rates, opts.SampleRate) {
		rate = opts.SampleRate
	}
	voice = opts.Voice
	for _, d := range defaults {
		if voice != "" {
			break
		}
		voice = d
	}
	return rate, voice, false, nil
}
