package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strconv"

	"switchboard/internal/apperr"
	"switchboard/internal/assistant"
	"switchboard/internal/id"
	"switchboard/internal/throttle"
)

// StatusClientClosed is logged (never seen by a client) when the client
// disconnected before its answer was ready (nginx's 499).
const StatusClientClosed = 499

// envelope is every success body: the contract's fields plus pagination and requestId.
type envelope struct {
	Status     bool        `json:"status"`
	Message    string      `json:"message"`
	ID         string      `json:"id,omitempty"`
	CallID     string      `json:"callId,omitempty"`
	Gateway    *gateway    `json:"gateway,omitempty"`
	Data       any         `json:"data,omitempty"`
	Pagination *pagination `json:"pagination,omitempty"`
	// Warnings are an assistant's, on its create and update answers.
	Warnings  []assistant.Warning `json:"warnings,omitempty"`
	RequestID string              `json:"requestId"`
}

// appendJSON renders the envelope without reflection over its data when the
// data can render itself (call listings), so the hot path neither reflects
// nor re-validates JSON; other data goes through encoding/json.
func (e envelope) appendJSON(b []byte) ([]byte, error) {
	b = append(b, `{"status":`...)
	b = strconv.AppendBool(b, e.Status)
	b = append(b, `,"message":`...)
	b = appendString(b, e.Message)
	if e.ID != "" {
		b = append(b, `,"id":`...)
		b = appendString(b, e.ID)
	}
	if e.CallID != "" {
		b = append(b, `,"callId":`...)
		b = appendString(b, e.CallID)
	}
	for _, f := range []struct {
		key string
		val any
		set bool
	}{{"gateway", e.Gateway, e.Gateway != nil}, {"data", e.Data, e.Data != nil}, {"pagination", e.Pagination, e.Pagination != nil}, {"warnings", e.Warnings, e.Warnings != nil}} {
		if !f.set {
			continue
		}
		b = append(b, ',', '"')
		b = append(b, f.key...)
		b = append(b, '"', ':')
		switch v := f.val.(type) {
		case []callView:
			b = append(b, '[')
			for i := range v {
				if i > 0 {
					b = append(b, ',')
				}
				b = v[i].AppendJSON(b)
			}
			b = append(b, ']')
		case *pagination:
			b = append(b, `{"page":`...)
			b = strconv.AppendInt(b, int64(v.Page), 10)
			b = append(b, `,"pageSize":`...)
			b = strconv.AppendInt(b, int64(v.PageSize), 10)
			b = append(b, `,"total":`...)
			b = strconv.AppendInt(b, int64(v.Total), 10)
			b = append(b, '}')
		default:
			j, err := jsonMarshal(v)
			if err != nil {
				return nil, err
			}
			b = append(b, j...)
		}
	}
	b = append(b, `,"requestId":`...)
	b = appendString(b, e.RequestID)
	return append(b, '}'), nil
}

type pagination struct {
	Page     int `json:"page"`
	PageSize int `json:"pageSize"`
	Total    int `json:"total"`
}

type gateway struct {
	Transport string `json:"transport"`
	Path      string `json:"path"`
	URL       string `json:"url"`
}

// errorBody is every error body.
type errorBody struct {
	Status    bool      `json:"status"`
	Message   string    `json:"message"`
	Error     errorInfo `json:"error"`
	RequestID string    `json:"requestId"`
}

type errorInfo struct {
	Code   string              `json:"code"`
	Fields []apperr.FieldError `json:"fields"`
}

// response is what a handler returns: a status and an envelope.
type response struct {
	status int
	body   envelope
	// raw, when set, is sent as it is instead of the envelope.
	raw []byte
	// stream, when set, writes the whole response itself (a recording).
	stream func(w http.ResponseWriter, r *http.Request)
}

func ok(status int, message string, data any) response {
	return response{status: status, body: envelope{Status: true, Message: message, Data: data}}
}

// errorResponse renders err as a status and body; internal details stay in the log.
func errorResponse(err error, requestID string, log *slog.Logger) (int, []byte, http.Header) {
	var e *apperr.Error
	if !errors.As(err, &e) {
		if errors.Is(err, context.Canceled) {
			// The client went away; nobody reads this answer and it is not a server fault.
			body, _ := json.Marshal(errorBody{Message: "client closed the request", Error: errorInfo{Code: "client_closed_request", Fields: []apperr.FieldError{}}, RequestID: requestID})
			return StatusClientClosed, body, http.Header{}
		}
		e = &apperr.Error{Kind: apperr.Internal, Message: "internal server error", Err: err}
	}
	status := e.Kind.HTTPStatus()
	msg := e.Message
	if e.Kind == apperr.Internal {
		log.Error("internal error", "request_id", requestID, "err", err)
		msg = "internal server error; quote requestId " + requestID + " when reporting it"
	}
	fields := e.Fields
	if fields == nil {
		fields = []apperr.FieldError{}
	}
	body, _ := json.Marshal(errorBody{Message: msg, Error: errorInfo{Code: e.ErrorCode(), Fields: fields}, RequestID: requestID})
	h := http.Header{}
	if e.Kind == apperr.RateLimited {
		h.Set("Retry-After", throttle.RetryAfter(e.RetryAfter))
	}
	return status, body, h
}

// WriteError answers a request refused outside the API's routes (the
// metrics token check) exactly like the API refuses one: the error body
// with a new requestId, also in X-Request-Id, and Retry-After for
// RateLimited. err should be an *apperr.Error of a kind other than
// Internal (whose cause this has nowhere to log). It returns the request id.
func WriteError(w http.ResponseWriter, err error) string {
	reqID := id.New(id.Request)
	w.Header().Set("X-Request-Id", reqID)
	status, body, h := errorResponse(err, reqID, slog.New(slog.DiscardHandler))
	writeRaw(w, status, body, h)
	return reqID
}

func writeRaw(w http.ResponseWriter, status int, body []byte, h http.Header) {
	for k, v := range h {
		w.Header()[k] = v
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
	_, _ = w.Write([]byte("\n"))
}
