package store

import (
	"context"
	"time"
)

// Webhooks is the organizations' webhook endpoints: HTTP ones and listeners.
type Webhooks interface {
	// CreateWebhook stores an endpoint.
	CreateWebhook(ctx context.Context, w Webhook) error
	ListWebhooks(ctx context.Context, orgID string) ([]Webhook, error)
	GetWebhook(ctx context.Context, orgID, id string) (Webhook, error)

	// UpdateWebhookSecrets replaces an endpoint's signing secrets (rotation).
	UpdateWebhookSecrets(ctx context.Context, orgID, id string, secrets []string) error

	// DeleteWebhook deletes an endpoint; its undelivered messages are dropped.
	DeleteWebhook(ctx context.Context, orgID, id string, at time.Time) error

	// RenewListener moves a listener endpoint's expiry to until, while a
	// stream is attached; NotFound once it is deleted (or expired).
	RenewListener(ctx context.Context, orgID, webhookID string, until time.Time) error

	// ExpireListeners deletes, as DeleteWebhook does, the listener
	// endpoints of any organization whose expiry is before now; it returns
	// how many.
	ExpireListeners(ctx context.Context, now time.Time) (int, error)
}

// Webhook is an organization's endpoint.
type Webhook struct {
	ID    string
	OrgID string
	// Kind is WebhookHTTP (deliveries POSTed to URL by the dispatcher) or
	// WebhookListener (no URL: streamed to `switchboard webhooks listen`);
	// "" is stored as WebhookHTTP.
	Kind      string
	URL       string
	Events    []string
	Secrets   []string // newest first; more than one during a rotation
	CreatedAt time.Time
	// ExpiresAt is when a listener that no stream renews is deleted
	// (ExpireListeners); zero for an HTTP endpoint.
	ExpiresAt time.Time
}

// Webhook kinds.
const (
	WebhookHTTP     = "http"
	WebhookListener = "listener"
)
