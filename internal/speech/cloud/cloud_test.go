package cloud_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"switchboard/internal/speech/cloud"
)

func TestRetryableStatus(t *testing.T) {
	for status, want := range map[int]bool{
		400: false, 401: false, 402: false, 403: false, 404: false, 413: false, 422: false,
		408: true, 409: true, 425: true, 429: true, 500: true, 502: true, 503: true, 504: true, 529: true,
	} {
		if got := cloud.RetryableStatus(status); got != want {
			t.Errorf("RetryableStatus(%d) = %v, want %v", status, got, want)
		}
	}
}

// The pipeline asks through one-method interfaces, as the conversation
// engine does of llm.Error; the error must answer them through wrapping.
func TestErrorAnswersThePipeline(t *testing.T) {
	base := &cloud.Error{Provider: "deepgram", Status: 429, Code: "TOO_MANY_REQUESTS", Message: "slow down", Retryable: true, RetryAfter: 3 * time.Second}
	err := fmt.Errorf("starting transcription: %w", base)
	var temp interface{ Temporary() bool }
	var delay interface{ RetryDelay() time.Duration }
	if !errors.As(err, &temp) || !temp.Temporary() || !errors.As(err, &delay) || delay.RetryDelay() != 3*time.Second {
		t.Errorf("wrapped %v: Temporary/RetryDelay not answered as true, 3s", err)
	}
	if !cloud.IsRetryable(err) || cloud.IsRetryable(errors.New("plain")) {
		t.Errorf("IsRetryable: wrong answer for a wrapped retryable error or a plain one")
	}
	if got, want := base.Error(), "deepgram: status 429 (TOO_MANY_REQUESTS) slow down (retry after 3s)"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	canceled := &cloud.Error{Provider: "openai", Code: cloud.CodeCanceled, Message: "canceled", Err: context.Canceled}
	if !errors.Is(canceled, context.Canceled) || canceled.Temporary() {
		t.Errorf("canceled error: errors.Is(context.Canceled) or Temporary wrong")
	}
	if got, want := canceled.Error(), "openai: (canceled) canceled: context canceled"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}
