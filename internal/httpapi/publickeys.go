package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"

	"switchboard/internal/apperr"
	"switchboard/internal/auth"
	"switchboard/internal/id"
)

// maxPublicKeyName bounds a publishable key's name, in bytes.
const maxPublicKeyName = 200

type publicKeyView struct {
	ID           string   `json:"id"`
	Name         string   `json:"name"`
	KeyPrefix    string   `json:"keyPrefix"`
	AssistantIDs []string `json:"assistantIds"`
	Origins      []string `json:"origins"`
	CreatedAt    ts       `json:"createdAt"`
	RevokedAt    ts       `json:"revokedAt"`
	// Key is the key itself, shown once: in the answer that creates it.
	Key string `json:"key,omitempty"`
}

func viewPublicKey(k auth.PublicKey) publicKeyView {
	v := publicKeyView{ID: k.ID, Name: k.Name, KeyPrefix: k.KeyPrefix, AssistantIDs: k.AssistantIDs, Origins: k.Origins,
		CreatedAt: ts(k.CreatedAt), RevokedAt: ts(k.RevokedAt)}
	if v.AssistantIDs == nil {
		v.AssistantIDs = []string{}
	}
	if v.Origins == nil {
		v.Origins = []string{}
	}
	return v
}

// createPublicKey makes a publishable key. It takes no Idempotency-Key: a
// stored answer would keep the key itself, which is kept nowhere.
func (s *Server) createPublicKey(ctx context.Context, r *request) (response, error) {
	o, err := parseObject(r.body)
	if err != nil {
		return response{}, err
	}
	name := o.Str("name", false)
	assistants := o.Strings("assistantIds", true)
	rawOrigins := o.Strings("origins", true)
	o.Done()
	if len(name) > maxPublicKeyName {
		o.Errs.Add("name", "must be at most %d bytes", maxPublicKeyName)
	}
	if len(assistants) > auth.MaxPublicKeyAssistants {
		o.Errs.Add("assistantIds", "must list at most %d assistants", auth.MaxPublicKeyAssistants)
	}
	for i, a := range assistants {
		field := fmt.Sprintf("assistantIds[%d]", i)
		switch {
		case !id.Valid(id.Assistant, a):
			o.Errs.Add(field, "assistant not found")
		case slices.Index(assistants, a) < i:
			o.Errs.Add(field, "repeats %s (assistantIds[%d])", a, slices.Index(assistants, a))
		}
	}
	if len(rawOrigins) > auth.MaxPublicKeyOrigins {
		o.Errs.Add("origins", "must list at most %d origins", auth.MaxPublicKeyOrigins)
	}
	origins := make([]string, 0, len(rawOrigins))
	for i, raw := range rawOrigins {
		field := fmt.Sprintf("origins[%d]", i)
		norm, err := auth.NormalizeOrigin(raw)
		if err != nil {
			o.Errs.Add(field, "%s", err.Error())
			continue
		}
		if j := slices.Index(origins, norm); j >= 0 {
			o.Errs.Add(field, "repeats %s", norm)
			continue
		}
		origins = append(origins, norm)
	}
	if err := o.Errs.Err(); err != nil {
		return response{}, err
	}
	k, key := auth.NewPublicKey(r.orgID, name, assistants, origins, s.now())
	if err := s.store.CreatePublicKey(ctx, k); err != nil {
		// An assistant that is not the organization's is an input error
		// here, like an unknown assistantId of POST /v1/calls/initiate.
		var e *apperr.Error
		if errors.As(err, &e) && e.Kind == apperr.NotFound && len(e.Fields) > 0 {
			return response{}, &apperr.Error{Kind: apperr.Invalid, Message: e.Message, Fields: e.Fields}
		}
		return response{}, err
	}
	v := viewPublicKey(k)
	v.Key = key
	return ok(http.StatusCreated, "publishable key created; copy data.key now, it is not shown again", v), nil
}

func (s *Server) listPublicKeys(ctx context.Context, r *request) (response, error) {
	q := newQuery(r.URL.Query(), "page", "pageSize")
	pg := q.page()
	if err := q.errs.Err(); err != nil {
		return response{}, err
	}
	ks, total, err := s.store.ListPublicKeys(ctx, r.orgID, pg)
	if err != nil {
		return response{}, err
	}
	resp := ok(http.StatusOK, "publishable keys", viewAll(ks, viewPublicKey))
	resp.body.Pagination = pageOf(pg, total)
	return resp, nil
}

func (s *Server) getPublicKey(ctx context.Context, r *request) (response, error) {
	kid, err := pathID(r, "id", id.PublicKey, "publishable key")
	if err != nil {
		return response{}, err
	}
	k, err := s.store.GetPublicKey(ctx, kid)
	if err != nil {
		return response{}, err
	}
	if k.OrgID != r.orgID {
		return response{}, apperr.NotFoundf("publishable key not found")
	}
	return ok(http.StatusOK, "publishable key", viewPublicKey(k)), nil
}

// revokePublicKey revokes a key at once: the next request with it is a
// 401, on every node (each request reads its key).
func (s *Server) revokePublicKey(ctx context.Context, r *request) (response, error) {
	kid, err := pathID(r, "id", id.PublicKey, "publishable key")
	if err != nil {
		return response{}, err
	}
	k, err := s.store.RevokePublicKey(ctx, r.orgID, kid, s.now())
	if err != nil {
		return response{}, err
	}
	s.accepted.Delete(k.ID)
	return ok(http.StatusOK, "publishable key revoked", viewPublicKey(k)), nil
}
