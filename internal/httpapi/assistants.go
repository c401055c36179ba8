package httpapi

import (
	"context"
	"fmt"
	"net/http"

	"switchboard/internal/assistant"
	"switchboard/internal/assistantjson"
	"switchboard/internal/id"
	"switchboard/internal/webhook"
)

// assistants reads assistants' documents (package assistantjson, shared
// with the dashboard).
func (s *Server) assistants() assistantjson.Config {
	return assistantjson.Config{Providers: s.cfg.Providers, URLs: s.cfg.Webhooks}
}

// withWarnings adds an assistant's warnings to its create or update
// answer: always there, [] when there are none, and said in the message.
func withWarnings(resp response, w []assistant.Warning) response {
	if w == nil {
		w = []assistant.Warning{}
	}
	resp.body.Warnings = w
	switch len(w) {
	case 0:
	case 1:
		resp.body.Message += " with a warning (see warnings)"
	default:
		resp.body.Message += fmt.Sprintf(" with %d warnings (see warnings)", len(w))
	}
	return resp
}

func (s *Server) createAssistant(ctx context.Context, r *request) (response, error) {
	a, warnings, err := s.assistants().Create(ctx, r.body)
	if err != nil {
		return response{}, err
	}
	now := s.now().UTC()
	a.ID, a.OrgID, a.CreatedAt, a.UpdatedAt = id.New(id.Assistant), r.orgID, now, now
	a.ToolSecret = webhook.NewSecret()
	if err := s.store.CreateAssistant(ctx, a); err != nil {
		return response{}, err
	}
	return withWarnings(ok(http.StatusCreated, "assistant created", viewAssistant(a)), warnings), nil
}

func (s *Server) listAssistants(ctx context.Context, r *request) (response, error) {
	q := newQuery(r.URL.Query(), "page", "pageSize")
	pg := q.page()
	if err := q.errs.Err(); err != nil {
		return response{}, err
	}
	list, total, err := s.store.ListAssistants(ctx, r.orgID, pg)
	if err != nil {
		return response{}, err
	}
	resp := ok(http.StatusOK, "assistants", viewAll(list, viewAssistant))
	resp.body.Pagination = pageOf(pg, total)
	return resp, nil
}

func (s *Server) getAssistant(ctx context.Context, r *request) (response, error) {
	aid, err := pathID(r, "id", id.Assistant, "assistant")
	if err != nil {
		return response{}, err
	}
	a, err := s.store.GetAssistant(ctx, r.orgID, aid)
	if err != nil {
		return response{}, err
	}
	return ok(http.StatusOK, "assistant", viewAssistant(a)), nil
}

func (s *Server) updateAssistant(ctx context.Context, r *request) (response, error) {
	if _, err := parseObject(r.body); err != nil { // a bad body is reported before the path
		return response{}, err
	}
	aid, err := pathID(r, "id", id.Assistant, "assistant")
	if err != nil {
		return response{}, err
	}
	a, err := s.store.GetAssistant(ctx, r.orgID, aid)
	if err != nil {
		return response{}, err
	}
	warnings, err := s.assistants().Update(ctx, r.body, &a)
	if err != nil {
		return response{}, err
	}
	a.UpdatedAt = s.now().UTC()
	if a.ToolSecret == "" { // created before tool secrets existed
		a.ToolSecret = webhook.NewSecret()
	}
	if err := s.store.UpdateAssistant(ctx, a); err != nil {
		return response{}, err
	}
	return withWarnings(ok(http.StatusOK, "assistant updated", viewAssistant(a)), warnings), nil
}

// listProviders shows what an assistant may name on this server: the
// model providers, voices and transcribers it runs, the defaults, and how
// to enable the others.
func (s *Server) listProviders(ctx context.Context, r *request) (response, error) {
	if err := newQuery(r.URL.Query()).errs.Err(); err != nil {
		return response{}, err
	}
	return ok(http.StatusOK, "providers", s.cfg.Providers.Choices()), nil
}

func (s *Server) deleteAssistant(ctx context.Context, r *request) (response, error) {
	aid, err := pathID(r, "id", id.Assistant, "assistant")
	if err != nil {
		return response{}, err
	}
	if err := s.store.DeleteAssistant(ctx, r.orgID, aid); err != nil {
		return response{}, err
	}
	return ok(http.StatusOK, "assistant deleted", nil), nil
}
