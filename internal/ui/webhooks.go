package ui

import (
	"net/http"
	"strings"

	"switchboard/internal/apperr"
	"switchboard/internal/event"
	"switchboard/internal/id"
	"switchboard/internal/store"
	"switchboard/internal/webhook"
)

const deliveriesPageSize = 50

type webhooksPage struct {
	Webhooks []webhookRow
	Events   []string
	Form     webhookForm
	Errs     *formErrors
	// Secret is a new endpoint's signing secret, shown this once.
	Secret, SecretID string
}

type webhookRow struct {
	store.Webhook
	Name   string // endpointName
	Delete *confirmForm
}

// endpointName is how the dashboard names an endpoint: its URL, or for a
// listener (no URL: a developer's `switchboard webhooks listen`) what
// receives its deliveries.
func endpointName(wh store.Webhook) string {
	if wh.Kind == store.WebhookListener {
		return "switchboard webhooks listen (a terminal's stream)"
	}
	return wh.URL
}

type webhookForm struct {
	URL    string
	Events map[string]bool
}

func (s *Server) listWebhooks(w http.ResponseWriter, r *request) error {
	p := webhooksPage{Form: webhookForm{Events: map[string]bool{}}}
	p.Secret, p.SecretID = s.revealed(r)
	return s.webhooksPage(w, r, http.StatusOK, p)
}

func (s *Server) webhooksPage(w http.ResponseWriter, r *request, status int, p webhooksPage) error {
	ws, err := s.st.ListWebhooks(r.Context(), r.op.OrgID)
	if err != nil {
		return err
	}
	for _, wh := range ws {
		p.Webhooks = append(p.Webhooks, webhookRow{Webhook: wh, Name: endpointName(wh), Delete: &confirmForm{Label: "Delete", Action: "/ui/webhooks/" + wh.ID + "/delete",
			Question: "Delete the endpoint " + endpointName(wh) + "? Its undelivered messages are dropped."}})
	}
	p.Events = event.Types
	s.render(w, r, status, view{Name: "webhooks", Nav: "webhooks", Title: "Webhooks", Data: p})
	return nil
}

// createWebhook registers an endpoint with the REST API's checks
// (webhook.Guard.CheckEndpoint) and shows its signing secret once, after
// the redirect.
func (s *Server) createWebhook(w http.ResponseWriter, r *request) error {
	f := webhookForm{URL: strings.TrimSpace(r.PostForm.Get("url")), Events: map[string]bool{}}
	events := r.PostForm["events"]
	for _, e := range events {
		f.Events[e] = true
	}
	var errs apperr.Fields
	if f.URL == "" {
		errs.Add("url", "is required")
	}
	if len(events) == 0 {
		errs.Add("events", "choose at least one event")
	}
	s.cfg.Webhooks.CheckEndpoint(r.Context(), f.URL, events, event.Types, &errs)
	if err := errs.Err(); err != nil {
		fe, _ := userError(err, func(field string) (string, string) {
			if strings.HasPrefix(field, "events") {
				return "events", ""
			}
			return field, ""
		})
		return s.webhooksPage(w, r, http.StatusBadRequest, webhooksPage{Form: f, Errs: fe})
	}
	wh := store.Webhook{ID: id.New(id.Webhook), OrgID: r.op.OrgID, URL: f.URL, Events: events, Secrets: []string{webhook.NewSecret()}, CreatedAt: s.cfg.Now()}
	if err := s.st.CreateWebhook(r.Context(), wh); err != nil {
		return err
	}
	t := s.reveals.put(r.ses.TokenHash, wh.Secrets[0], s.cfg.Now())
	return seeOther(w, r, "/ui/webhooks?created="+t+"&id="+wh.ID)
}

// ownWebhook reads the path's endpoint of the operator's organization.
func (s *Server) ownWebhook(r *request) (store.Webhook, error) {
	return own(r, id.Webhook, "webhook", s.st.GetWebhook)
}

func (s *Server) deleteWebhook(w http.ResponseWriter, r *request) error {
	wh, err := s.ownWebhook(r)
	if err != nil {
		return err
	}
	if err := s.st.DeleteWebhook(r.Context(), r.op.OrgID, wh.ID, s.cfg.Now()); err != nil {
		return err
	}
	return seeOther(w, r, "/ui/webhooks")
}

type deliveriesPage struct {
	Webhook          store.Webhook
	Name             string // endpointName
	Deliveries       []deliveryRow
	Total            int
	PrevURL, NextURL string
	Redelivered      bool
}

type deliveryRow struct {
	store.Delivery
	OK bool
	// Redeliver queues the delivery's message again.
	Redeliver string
}

func (s *Server) showWebhook(w http.ResponseWriter, r *request) error {
	wh, err := s.ownWebhook(r)
	if err != nil {
		return err
	}
	n := pageParam(r)
	ds, total, err := s.st.ListDeliveries(r.Context(), r.op.OrgID, wh.ID, store.Page{Page: n, PageSize: deliveriesPageSize})
	if err != nil {
		return err
	}
	p := deliveriesPage{Webhook: wh, Name: endpointName(wh), Total: total, Redelivered: r.URL.Query().Get("redelivered") != ""}
	for _, d := range ds {
		p.Deliveries = append(p.Deliveries, deliveryRow{Delivery: d, OK: d.Status >= 200 && d.Status < 300,
			Redeliver: "/ui/webhooks/" + wh.ID + "/deliveries/" + d.MessageID + "/redeliver"})
	}
	p.PrevURL, p.NextURL = pager("/ui/webhooks/"+wh.ID, n, deliveriesPageSize, len(ds), total)
	s.render(w, r, http.StatusOK, view{Name: "webhook", Nav: "webhooks", Title: "Webhook " + p.Name, Data: p})
	return nil
}

// redeliver queues a message of the endpoint again, now.
func (s *Server) redeliver(w http.ResponseWriter, r *request) error {
	wh, err := s.ownWebhook(r)
	if err != nil {
		return err
	}
	mid := r.PathValue("message")
	if !id.Valid(id.Message, mid) {
		return apperr.NotFoundf("no such message")
	}
	if err := s.st.Redeliver(r.Context(), r.op.OrgID, wh.ID, mid, s.cfg.Now()); err != nil {
		return err
	}
	return seeOther(w, r, "/ui/webhooks/"+wh.ID+"?redelivered=1")
}
