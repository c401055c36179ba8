package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"slices"

	"switchboard/internal/apperr"
	"switchboard/internal/assistant"
	"switchboard/internal/store"
)

// CreateAssistant stores a new assistant.
func (s *Store) CreateAssistant(ctx context.Context, a assistant.Assistant) error {
	cfg, err := json.Marshal(a)
	if err != nil {
		return wrap("CreateAssistant", err)
	}
	_, err = s.exec(ctx, s.w, `INSERT INTO assistants (id, org_id, name, config, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)`,
		a.ID, a.OrgID, a.Name, string(cfg), ms(a.CreatedAt), ms(a.UpdatedAt))
	return wrap("CreateAssistant", err)
}

func scanAssistant(sc interface{ Scan(...any) error }) (assistant.Assistant, error) {
	var a assistant.Assistant
	var orgID, cfg string
	if err := sc.Scan(&orgID, &cfg); err != nil {
		return a, err
	}
	if err := json.Unmarshal([]byte(cfg), &a); err != nil {
		return a, err
	}
	a.OrgID = orgID
	if a.Tools == nil { // stored before assistants had tools
		a.Tools = []assistant.Tool{}
	}
	if a.EndCallPhrases == nil {
		a.EndCallPhrases = []string{}
	}
	if a.OptOutPhrases == nil { // stored before assistants had them
		a.OptOutPhrases = assistant.DefaultOptOutPhrases()
	}
	return a, nil
}

// GetAssistant reads one of the organization's assistants.
func (s *Store) GetAssistant(ctx context.Context, orgID, id string) (assistant.Assistant, error) {
	a, err := scanAssistant(s.row(ctx, s.r, `SELECT org_id, config FROM assistants WHERE org_id = ? AND id = ?`, orgID, id))
	return a, wrap("GetAssistant", notFound(err, "assistant"))
}

// ListAssistants lists the organization's assistants, newest first.
func (s *Store) ListAssistants(ctx context.Context, orgID string, p store.Page) ([]assistant.Assistant, int, error) {
	var total int
	if err := s.row(ctx, s.r, `SELECT COUNT(*) FROM assistants WHERE org_id = ?`, orgID).Scan(&total); err != nil {
		return nil, 0, wrap("ListAssistants", err)
	}
	rows, err := s.query(ctx, s.r, `SELECT org_id, config FROM assistants WHERE org_id = ? ORDER BY created_at DESC, id DESC LIMIT ? OFFSET ?`,
		orgID, p.PageSize, p.Offset())
	if err != nil {
		return nil, 0, wrap("ListAssistants", err)
	}
	defer rows.Close()
	out := []assistant.Assistant{}
	for rows.Next() {
		a, err := scanAssistant(rows)
		if err != nil {
			return nil, 0, wrap("ListAssistants", err)
		}
		out = append(out, a)
	}
	return out, total, wrap("ListAssistants", rows.Err())
}

// UpdateAssistant replaces an assistant's configuration.
func (s *Store) UpdateAssistant(ctx context.Context, a assistant.Assistant) error {
	cfg, err := json.Marshal(a)
	if err != nil {
		return wrap("UpdateAssistant", err)
	}
	res, err := s.exec(ctx, s.w, `UPDATE assistants SET name = ?, config = ?, updated_at = ? WHERE org_id = ? AND id = ?`,
		a.Name, string(cfg), ms(a.UpdatedAt), a.OrgID, a.ID)
	return wrap("UpdateAssistant", affected(res, err, "assistant"))
}

// DeleteAssistant deletes an assistant that no held number uses.
//
// The row is deleted first and the purchases checked after, in the same
// transaction: on PostgreSQL the DELETE waits for any AllocateAssistants
// holding the row (FOR SHARE) to commit, so the check then sees its
// allocation; checking first would let both commit.
func (s *Store) DeleteAssistant(ctx context.Context, orgID, id string) error {
	return wrap("DeleteAssistant", s.tx(ctx, func(tx *sql.Tx) error {
		res, err := s.exec(ctx, tx, `DELETE FROM assistants WHERE org_id = ? AND id = ?`, orgID, id)
		if err := affected(res, err, "assistant"); err != nil {
			return err
		}
		var number string
		err = s.row(ctx, tx, `SELECT number FROM purchases WHERE org_id = ? AND released_at = 0 AND (inbound_assistant_id = ? OR outbound_assistant_id = ?) LIMIT 1`,
			orgID, id, id).Scan(&number)
		if err == nil {
			return apperr.Conflictf("assistant is allocated to %s; allocate another assistant to it first", number)
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		return nil
	}))
}

// AssistantNames reads the names of the organization's assistants among
// ids, 500 to a statement.
func (s *Store) AssistantNames(ctx context.Context, orgID string, ids []string) (map[string]string, error) {
	out := map[string]string{}
	ids = slices.Compact(slices.Sorted(slices.Values(ids)))
	for chunk := range slices.Chunk(ids, 500) {
		args := []any{orgID}
		for _, id := range chunk {
			args = append(args, id)
		}
		rows, err := s.query(ctx, s.r, `SELECT id, name FROM assistants WHERE org_id = ? AND id IN (`+placeholders(len(chunk))+`)`, args...)
		if err != nil {
			return nil, wrap("AssistantNames", err)
		}
		for rows.Next() {
			var id, name string
			if err := rows.Scan(&id, &name); err != nil {
				rows.Close()
				return nil, wrap("AssistantNames", err)
			}
			out[id] = name
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, wrap("AssistantNames", err)
		}
	}
	return out, nil
}
