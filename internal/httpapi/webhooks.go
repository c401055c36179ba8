package httpapi

import (
	"context"
	"net/http"
	"strings"

	"switchboard/internal/callctl"
	"switchboard/internal/id"
	"switchboard/internal/store"
	"switchboard/internal/webhook"
)

type webhookView struct {
	ID        string   `json:"id"`
	URL       string   `json:"url"`
	Events    []string `json:"events"`
	CreatedAt ts       `json:"createdAt"`
	// Secret is shown once, when the endpoint is created or its secret rotated.
	Secret string `json:"secret,omitempty"`
}

func viewWebhook(w store.Webhook) webhookView {
	return webhookView{ID: w.ID, URL: w.URL, Events: w.Events, CreatedAt: ts(w.CreatedAt)}
}

func (s *Server) createWebhook(ctx context.Context, r *request) (response, error) {
	o, err := parseObject(r.body)
	if err != nil {
		return response{}, err
	}
	u := strings.TrimSpace(o.Str("url", true))
	events := o.Strings("events", true)
	o.Done()
	s.cfg.Webhooks.CheckEndpoint(ctx, u, events, callctl.EventTypes, o.Errs)
	if err := o.Errs.Err(); err != nil {
		return response{}, err
	}
	w := store.Webhook{ID: id.New(id.Webhook), OrgID: r.orgID, URL: u, Events: events, Secrets: []string{webhook.NewSecret()}, CreatedAt: s.now()}
	if err := s.store.CreateWebhook(ctx, w); err != nil {
		return response{}, err
	}
	v := viewWebhook(w)
	v.Secret = w.Secrets[0]
	return ok(http.StatusCreated, "webhook created; store its secret now, it is not shown again", v), nil
}

func (s *Server) listWebhooks(ctx context.Context, r *request) (response, error) {
	if err := newQuery(r.URL.Query()).errs.Err(); err != nil {
		return response{}, err
	}
	ws, err := s.store.ListWebhooks(ctx, r.orgID)
	if err != nil {
		return response{}, err
	}
	return ok(http.StatusOK, "webhooks", viewAll(ws, viewWebhook)), nil
}

func (s *Server) deleteWebhook(ctx context.Context, r *request) (response, error) {
	wid, err := pathID(r, "id", id.Webhook, "webhook")
	if err != nil {
		return response{}, err
	}
	if err := s.store.DeleteWebhook(ctx, r.orgID, wid, s.now()); err != nil {
		return response{}, err
	}
	return ok(http.StatusOK, "webhook deleted", nil), nil
}

// rotateWebhookSecret issues a new secret; the previous one keeps signing
// alongside it until the next rotation, so receivers can switch over.
func (s *Server) rotateWebhookSecret(ctx context.Context, r *request) (response, error) {
	if err := emptyBody(r); err != nil {
		return response{}, err
	}
	wid, err := pathID(r, "id", id.Webhook, "webhook")
	if err != nil {
		return response{}, err
	}
	w, err := s.store.GetWebhook(ctx, r.orgID, wid)
	if err != nil {
		return response{}, err
	}
	secret := webhook.NewSecret()
	w.Secrets = []string{secret, w.Secrets[0]}
	if err := s.store.UpdateWebhookSecrets(ctx, r.orgID, w.ID, w.Secrets); err != nil {
		return response{}, err
	}
	v := viewWebhook(w)
	v.Secret = secret
	return ok(http.StatusOK, "secret rotated; deliveries are signed with the new and the previous secret until the next rotation", v), nil
}

type deliveryView struct {
	ID         string `json:"id"`
	MessageID  string `json:"messageId"`
	Event      string `json:"event"`
	Attempt    int    `json:"attempt"`
	Status     int    `json:"status"`
	Response   string `json:"response"`
	Error      string `json:"error,omitempty"`
	DurationMs int64  `json:"durationMs"`
	At         ts     `json:"at"`
}

func (s *Server) listDeliveries(ctx context.Context, r *request) (response, error) {
	q := newQuery(r.URL.Query(), "page", "pageSize")
	pg := q.page()
	if err := q.errs.Err(); err != nil {
		return response{}, err
	}
	wid, err := pathID(r, "id", id.Webhook, "webhook")
	if err != nil {
		return response{}, err
	}
	ds, total, err := s.store.ListDeliveries(ctx, r.orgID, wid, pg)
	if err != nil {
		return response{}, err
	}
	resp := ok(http.StatusOK, "deliveries", viewAll(ds, func(d store.Delivery) deliveryView {
		return deliveryView{ID: d.ID, MessageID: d.MessageID, Event: d.Type, Attempt: d.Attempt, Status: d.Status, Response: d.Response,
			Error: d.Error, DurationMs: d.Duration.Milliseconds(), At: ts(d.At)}
	}))
	resp.body.Pagination = pageOf(pg, total)
	return resp, nil
}

func (s *Server) redeliver(ctx context.Context, r *request) (response, error) {
	// Both path ids are checked before any query.
	wid, err := pathID(r, "id", id.Webhook, "webhook")
	if err != nil {
		return response{}, err
	}
	mid, err := pathID(r, "messageId", id.Message, "webhook message")
	if err != nil {
		return response{}, err
	}
	if _, err := s.store.GetWebhook(ctx, r.orgID, wid); err != nil {
		return response{}, err
	}
	if err := s.store.Redeliver(ctx, r.orgID, wid, mid, s.now()); err != nil {
		return response{}, err
	}
	return ok(http.StatusOK, "message queued for redelivery", nil), nil
}
