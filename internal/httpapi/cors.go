package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"switchboard/internal/apperr"
	"switchboard/internal/auth"
	"switchboard/internal/throttle"
)

// Publishable keys (pk_…) are the keys a web page holds. A request with one
// may only start a web call (routes marked publishable), from a page on
// one of the key's origins, within the key's and the client address's rate
// limits; its answers, errors included, carry CORS headers for that origin
// so the page can read them. Preflights of publishable routes are answered
// for origins of active publishable keys only. Secret keys (sbk_…) never
// get CORS headers: a page must not hold one.

// CORS answers.
const (
	corsAllowMethods  = "POST"
	corsAllowHeaders  = "X-API-Key, Content-Type, Idempotency-Key"
	corsExposeHeaders = "Retry-After, X-Request-Id, Idempotent-Replayed"
	// corsMaxAge is how long a browser may reuse a preflight's answer
	// (Chromium caps it at 2 hours). A key revoked meanwhile is still
	// refused: the POST itself is checked.
	corsMaxAge = "7200"
)

// allowOrigin adds the headers that let a page on origin read an answer.
func allowOrigin(h http.Header, origin string) {
	h.Set("Access-Control-Allow-Origin", origin)
	h.Add("Vary", "Origin")
	h.Set("Access-Control-Expose-Headers", corsExposeHeaders)
}

// hasPublishable reports whether a path has a route a publishable key may use.
func hasPublishable(rs []route) bool {
	for _, rt := range rs {
		if rt.publishable {
			return true
		}
	}
	return false
}

// preflight answers OPTIONS on a publishable route: 204 with the CORS
// headers when the Origin is an origin of an active publishable key (of
// any organization: a preflight carries no key), else 403 without them.
// A refused preflight spends the client's refusal budget, like a refused
// key, and a client that has spent it is answered 429 before the lookup.
func (s *Server) preflight(ctx context.Context, req *request) (int, []byte, http.Header) {
	origin := req.Header.Get("Origin")
	var adm throttle.Admission
	if s.cfg.Refusals != nil {
		req.client = s.cfg.Proxies.Client(req.Request)
		adm = s.cfg.Refusals.Admit(req.client)
		if adm.Blocked {
			req.refusal = "throttled"
			st, body, h := errorResponse(&apperr.Error{Kind: apperr.RateLimited, RetryAfter: adm.Wait,
				Message: "too many requests from this address were refused; retry later"}, req.id, s.log)
			h.Set("Vary", "Origin")
			return st, body, h
		}
	}
	allowed, err := s.originAllowed(ctx, origin)
	s.cfg.Refusals.Done(adm, err == nil && !allowed)
	if err != nil {
		return errorResponse(err, req.id, s.log)
	}
	h := http.Header{}
	h.Set("Vary", "Origin")
	if !allowed {
		req.refusal = "unknown_origin"
		if s.cfg.Refusals == nil {
			req.client = s.cfg.Proxies.Client(req.Request) // for the log line
		}
		msg := "not a CORS preflight: no Origin header"
		if origin != "" {
			msg = fmt.Sprintf("origin %q is not an origin of any active publishable key", origin)
		}
		st, body, eh := errorResponse(apperr.New(apperr.PermissionDenied, "%s", msg), req.id, s.log)
		for k, v := range eh {
			h[k] = v
		}
		return st, body, h
	}
	h.Set("Access-Control-Allow-Origin", origin)
	h.Set("Access-Control-Allow-Methods", corsAllowMethods)
	h.Set("Access-Control-Allow-Headers", corsAllowHeaders)
	h.Set("Access-Control-Max-Age", corsMaxAge)
	return http.StatusNoContent, nil, h
}

// originAllowed reports whether origin, as a browser sends it, is an
// origin of an active publishable key. Only an origin in the form keys
// store (NormalizeOrigin's, which is the form browsers send) is looked up:
// anything else (a path, NUL, invalid UTF-8, "null") matches no key.
func (s *Server) originAllowed(ctx context.Context, origin string) (bool, error) {
	if norm, err := auth.NormalizeOrigin(origin); err != nil || norm != origin {
		return false, nil
	}
	return s.store.PublicOriginAllowed(ctx, origin)
}

// admitPublic decides what a request with a valid publishable key may do:
// only a publishable route, only from one of the key's origins, within
// the key's and the client address's rate limits. From the origin check
// on, every answer carries the CORS headers of the request's origin.
func (s *Server) admitPublic(req *request, rt *route, k auth.PublicKey) error {
	req.orgID, req.pub = k.OrgID, &k
	if !rt.publishable {
		return apperr.New(apperr.PermissionDenied,
			"a publishable key (pk_…) may only start web calls (POST /v1/calls/initiate); use a secret key (sbk_…) from your server for %s %s", rt.method, rt.path)
	}
	origin := req.Header.Get("Origin")
	if origin == "" {
		return &apperr.Error{Kind: apperr.PermissionDenied, Message: "a publishable key is accepted only from a web page on one of its origins",
			Fields: []apperr.FieldError{{Field: "Origin", Message: "is required: this request has no Origin header"}}}
	}
	if !k.AllowsOrigin(origin) {
		// Both origins, so that a page refused can tell what to change:
		// the page's origin, as the browser sent it, or the key's list.
		allowed := strings.Join(k.Origins, ", ")
		return &apperr.Error{Kind: apperr.PermissionDenied,
			Message: fmt.Sprintf("this publishable key does not allow the origin %q; it allows %s", origin, allowed),
			Fields: []apperr.FieldError{{Field: "Origin", Message: fmt.Sprintf("%q is not one of the key's origins (%s): "+
				"use a key whose origins include the page's origin exactly as the browser sends it (scheme, host and port)", origin, allowed)}}}
	}
	req.cors = origin
	return s.limitPublic(req, k)
}

// limitPublic applies the publishable keys' rate limits: per key and per
// client address, each so many requests a minute with a burst of as many.
// The address's budget is checked first and spent last, so a request the
// key's limit refuses costs the address nothing.
func (s *Server) limitPublic(req *request, k auth.PublicKey) error {
	var adm throttle.Admission
	if s.pubAddrs != nil {
		if !req.client.IsValid() {
			req.client = s.cfg.Proxies.Client(req.Request)
		}
		adm = s.pubAddrs.Admit(req.client)
		if adm.Blocked {
			return &apperr.Error{Kind: apperr.RateLimited, RetryAfter: adm.Wait,
				Message: fmt.Sprintf("rate limit of %g web calls a minute from this address with publishable keys exceeded; retry later", s.cfg.PublicAddressRate)}
		}
	}
	if l := s.keyLimiters.public; l != nil {
		if ok, wait := l.allow(k.ID, s.now()); !ok {
			s.pubAddrs.Done(adm, false)
			return &apperr.Error{Kind: apperr.RateLimited, RetryAfter: wait,
				Message: fmt.Sprintf("rate limit of %g requests a minute for this publishable key exceeded; retry later", s.cfg.PublicKeyRate)}
		}
	}
	s.pubAddrs.Done(adm, true)
	return nil
}
