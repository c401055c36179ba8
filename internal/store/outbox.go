package store

import (
	"context"
	"time"

	"switchboard/internal/event"
)

// Outbox is the webhook messages: one per event and subscribed endpoint,
// and the log of their deliveries.
type Outbox interface {
	// QueueEvent queues an event outside a change of a call, schedule or
	// analysis (which queue theirs in their own transaction). Only tests
	// call it, to seed the outbox (TestCallers lists it).
	QueueEvent(ctx context.Context, orgID string, ev event.Event, at time.Time) error

	// ClaimOutbox leases up to limit messages due at now until now+lease.
	ClaimOutbox(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]OutboxMessage, error)

	// RecordDelivery logs one delivery attempt and sets the message's next
	// state: delivered, pending again at next (a retry), or failed.
	RecordDelivery(ctx context.Context, m OutboxMessage, d Delivery, state string, next time.Time) error
	ListDeliveries(ctx context.Context, orgID, webhookID string, p Page) ([]Delivery, int, error)

	// ListCallMessages lists the webhook messages about one of the
	// organization's calls, oldest first, at most limit.
	ListCallMessages(ctx context.Context, orgID, callID string, limit int) ([]CallMessage, error)

	// Redeliver queues a message of the endpoint again, now.
	Redeliver(ctx context.Context, orgID, webhookID, messageID string, at time.Time) error

	// ClaimListener leases up to limit messages due at now of one listener
	// endpoint (kind WebhookListener) of the organization, until
	// now+lease: the messages its stream sends (ClaimOutbox never claims
	// them). NotFound when the organization has no such listener.
	ClaimListener(ctx context.Context, orgID, webhookID string, now time.Time, lease time.Duration, limit int) ([]OutboxMessage, error)
}

// CallMessage is a webhook message about a call, as its page lists it:
// which endpoint, which event, and how its delivery stands.
type CallMessage struct {
	ID         string // msg_…, the webhook-id of its deliveries
	WebhookID  string
	URL        string
	Type       string
	State      string // OutboxPending, delivered, failed
	Attempts   int
	LastStatus int // the last attempt's HTTP status, 0 when none answered
	CreatedAt  time.Time
	UpdatedAt  time.Time
}

// Outbox message states.
const (
	OutboxPending   = "pending"
	OutboxDelivered = "delivered"
	OutboxFailed    = "failed"
)

// OutboxMessage is one event for one endpoint.
type OutboxMessage struct {
	ID        string
	OrgID     string
	WebhookID string
	URL       string
	Secrets   []string
	Type      string
	Payload   []byte
	State     string
	Attempts  int
	CreatedAt time.Time
}

// Delivery is one attempt to deliver a message.
type Delivery struct {
	ID        string
	MessageID string
	WebhookID string
	OrgID     string
	Type      string
	Attempt   int
	Status    int
	// Response and Error come from the receiver (its answer, its status
	// line), so they may hold any bytes. RecordDelivery stores them as text
	// whatever they hold, which PostgreSQL's TEXT would otherwise refuse:
	// each NUL and each byte of invalid UTF-8 becomes U+FFFD, and each is
	// cut to MaxDeliveryText bytes at a rune boundary.
	Response string
	Error    string
	Duration time.Duration
	At       time.Time
}

// MaxDeliveryText bounds a stored Delivery's Response and Error, in bytes.
const MaxDeliveryText = 8 << 10
