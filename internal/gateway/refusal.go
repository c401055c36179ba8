package gateway

import (
	"encoding/json"
	"errors"
	"net/http"

	"switchboard/internal/apperr"
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
}

// kindStatus is the one table from an error kind (of the store or of call
// control) to the status and code of the refusal.
var kindStatus = map[apperr.Kind]int{
	apperr.NotFound:    http.StatusNotFound,
	apperr.Conflict:    http.StatusConflict,
	apperr.Unavailable: http.StatusServiceUnavailable,
}

// refusalFor classifies err; notFoundMsg replaces the message of a
// not-found error so the client learns which id was not found. nil for nil.
func refusalFor(err error, notFoundMsg string) *refusal {
	if err == nil {
		return nil
	}
	var e *apperr.Error
	if !errors.As(err, &e) {
		return internalError(err)
	}
	status, ok := kindStatus[e.Kind]
	if !ok {
		return internalError(err)
	}
	msg := e.Message
	if e.Kind == apperr.NotFound {
		msg = notFoundMsg
	}
	return &refusal{status: status, code: e.ErrorCode(), message: msg, err: err}
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

// errorBody is the REST API's error body. There is no request id: the
// gateway is not behind the API's middleware.
type errorBody struct {
	Status  bool   `json:"status"`
	Message string `json:"message"`
	Error   struct {
		Code   string              `json:"code"`
		Fields []apperr.FieldError `json:"fields"`
	} `json:"error"`
	RequestID string `json:"requestId"`
}

func writeRefusal(w http.ResponseWriter, ref *refusal) {
	b := errorBody{Message: ref.message}
	b.Error.Code = ref.code
	b.Error.Fields = []apperr.FieldError{}
	body, _ := json.Marshal(b)
	for k, v := range ref.header {
		w.Header()[k] = v
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(ref.status)
	_, _ = w.Write(append(body, '\n'))
}
