// Package webhook signs and delivers Switchboard's outbound webhooks in the
// Standard Webhooks format (https://www.standardwebhooks.com), so that an
// integrator can verify them with any of that specification's libraries
// instead of a Switchboard-specific one.
//
// # Payload
//
// Every delivery is an HTTP POST with Content-Type application/json and this
// body (see [NewMessage]):
//
//	{
//	  "type": "call.ended",
//	  "timestamp": "2026-03-01T14:05:09.123Z",
//	  "data": { ... }
//	}
//
// type is a full-stop delimited event type; timestamp is when the event
// happened (RFC 3339, UTC), which stays the same on every retry; data is the
// event's object.
//
// # Headers and signature
//
//	webhook-id:        msg_…   the message id, the same on every retry: dedupe on it
//	webhook-timestamp: 1740837909   Unix seconds of this attempt (not of the event)
//	webhook-signature: v1,<base64> [v1,<base64> …]
//
// Each signature is base64(HMAC-SHA256(key, "{webhook-id}.{webhook-timestamp}.{raw body}")),
// where key is the base64-decoded part of an endpoint secret "whsec_<base64>".
// While a secret is being rotated, a delivery carries one signature per
// active secret, space-separated, and a receiver accepts the delivery if any
// of them matches a secret it knows ([SignAll], [Verify]).
//
// A receiver must verify the raw body bytes (not re-serialized JSON), compare
// in constant time, and reject timestamps more than 5 minutes from its clock,
// which is what keeps a captured delivery from being replayed later.
//
// # Delivery
//
// [Sender.Deliver] makes one attempt: success is a 2xx answer within the
// timeout; a redirect, any other status, or a network error is a failure, and
// the caller schedules the next attempt with [Backoff]. The receiver's answer
// is read bounded (a gzip answer decoded, bounded too) and kept only as a
// printable excerpt ([Result].Body), so no answer can keep the attempt from
// being recorded; [Dispatcher] records an attempt without the answer if the
// store still refuses it, so a message never loops on its lease. Endpoint URLs are
// vetted by [Guard] when they are registered and again, for every resolved
// address, when the delivery client connects, so a webhook cannot be aimed at
// the server's own network (SSRF).
package webhook
