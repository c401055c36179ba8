package gateway

import (
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"switchboard/internal/apperr"
	"switchboard/internal/throttle"
)

// refusal is a connection answered with plain HTTP instead of an upgrade.
// Its body has the REST API's error shape, so a client that can see the
// status (anything but a browser's WebSocket) reads it like any API error.
type refusal struct {
	status  int
	code    string
	message string
	header  http.Header
	err     error // the cause, for the log only
	// expected marks a 5xx that is no fault of the server (it is shutting
	// down): logged at Info, not Error.
	expected bool
}

// refusalFor classifies err, an error of the store or of call control
// that is not a not-found (the caller decides what a missing call or
// assistant means), by the one table from error kind to HTTP status
// (apperr.Kind.HTTPStatus) that the REST API uses too. An error that is
// not classified, or whose kind is a server failure, is a 500 that shows
// nothing of the cause. nil for nil.
func refusalFor(err error) *refusal {
	if err == nil {
		return nil
	}
	var e *apperr.Error
	if !errors.As(err, &e) {
		return internalError(err)
	}
	status := e.Kind.HTTPStatus()
	if status == http.StatusInternalServerError {
		return internalError(err)
	}
	ref := &refusal{status: status, code: e.ErrorCode(), message: e.Message, err: err}
	if e.Kind == apperr.RateLimited && e.RetryAfter > 0 {
		ref.header = http.Header{"Retry-After": {throttle.RetryAfter(e.RetryAfter)}}
	}
	return ref
}

// unknownCall is the one answer to a call id that is not the caller's:
// unknown, not an id at all, another organization's, another assistant's,
// not a web call. It names no id, so every such answer is the same bytes
// but for the request id. err is the cause, for the log.
func unknownCall(err error) *refusal {
	return &refusal{status: http.StatusNotFound, code: apperr.NotFound.Code(), err: err,
		message: "no web call matches this call_id and assistant_id; use gateway.url from POST /v1/calls/initiate"}
}

// tooManyRefusals answers a client that has spent its refusal budget.
func tooManyRefusals(wait time.Duration) *refusal {
	return &refusal{status: http.StatusTooManyRequests, code: apperr.RateLimited.Code(),
		message: "too many refused connections from this address; retry later",
		header:  http.Header{"Retry-After": {throttle.RetryAfter(wait)}}}
}

func notFound(msg string) *refusal {
	return &refusal{status: http.StatusNotFound, code: apperr.NotFound.Code(), message: msg}
}

func conflict(msg string) *refusal {
	return &refusal{status: http.StatusConflict, code: apperr.Conflict.Code(), message: msg}
}

func internalError(err error) *refusal {
	return &refusal{status: http.StatusInternalServerError, code: apperr.Internal.Code(), message: "internal server error", err: err}
}

// errorBody is the REST API's error body, request id included.
type errorBody struct {
	Status  bool   `json:"status"`
	Message string `json:"message"`
	Error   struct {
		Code   string              `json:"code"`
		Fields []apperr.FieldError `json:"fields"`
	} `json:"error"`
	RequestID string `json:"requestId"`
}

func writeRefusal(w http.ResponseWriter, reqID string, ref *refusal) {
	b := errorBody{Message: ref.message, RequestID: reqID}
	if ref.status == http.StatusInternalServerError {
		b.Message += "; quote requestId " + reqID + " when reporting it"
	}
	b.Error.Code = ref.code
	b.Error.Fields = []apperr.FieldError{}
	body, _ := json.Marshal(b)
	for k, v := range ref.header {
		w.Header()[k] = v
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Request-Id", reqID)
	w.WriteHeader(ref.status)
	_, _ = w.Write(append(body, '\n'))
}
