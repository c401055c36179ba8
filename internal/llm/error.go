package llm

import "switchboard/internal/vendorapi"

// Error is a provider failure (vendorapi.Error, shared with the speech clients).
type Error = vendorapi.Error

// Codes for failures that carry no provider code.
const (
	CodeInvalidRequest = vendorapi.CodeInvalidRequest
	CodeConfig         = vendorapi.CodeConfig
	CodeNetwork        = vendorapi.CodeNetwork
	// CodeTruncated: the stream ended before its terminating event.
	CodeTruncated   = "truncated_stream"
	CodeBadResponse = vendorapi.CodeBadResponse
	CodeTooLarge    = vendorapi.CodeTooLarge
	CodeCanceled    = vendorapi.CodeCanceled
	CodeDeadline    = vendorapi.CodeDeadline
)

// IsRetryable reports whether err is an *Error the provider may not repeat.
func IsRetryable(err error) bool { return vendorapi.IsRetryable(err) }

// RetryableStatus reports whether a request that got status may succeed later.
func RetryableStatus(status int) bool { return vendorapi.RetryableStatus(status) }
