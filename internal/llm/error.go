package llm

import "switchboard/internal/provider"

// Error is a provider failure (provider.Error, shared with the speech clients).
type Error = provider.Error

// Codes for failures that carry no provider code.
const (
	CodeInvalidRequest = provider.CodeInvalidRequest
	CodeConfig         = provider.CodeConfig
	CodeNetwork        = provider.CodeNetwork
	// CodeTruncated: the stream ended before its terminating event.
	CodeTruncated   = "truncated_stream"
	CodeBadResponse = provider.CodeBadResponse
	CodeTooLarge    = provider.CodeTooLarge
	CodeCanceled    = provider.CodeCanceled
	CodeDeadline    = provider.CodeDeadline
)

// IsRetryable reports whether err is an *Error the provider may not repeat.
func IsRetryable(err error) bool { return provider.IsRetryable(err) }

// RetryableStatus reports whether a request that got status may succeed later.
func RetryableStatus(status int) bool { return provider.RetryableStatus(status) }
