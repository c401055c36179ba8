package sqlstore

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"switchboard/internal/apperr"
	"switchboard/internal/call"
	"switchboard/internal/id"
	"switchboard/internal/store"
)

// turnCols are the columns of a turn, in scanTurn's order.
const turnCols = `id, org_id, call_id, seq, role, text, started_at, ended_at, interrupted, latency_us,
	has_breakdown, endpointing_us, transcriber_us, model_us, voice_us, platform_us, total_us`

// AppendTurn stores one transcript turn, with its breakdown when it has
// one. The turns of a node's concurrent calls are stored in groups
// (groupcommit, insertTurns): a turn that arrives while a group is being
// stored waits and is stored with the next, in one statement and one
// commit; AppendTurn returns once its own turn is stored.
func (s *Store) AppendTurn(ctx context.Context, t call.Turn) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return s.turns.Do(t)
}

// turnTimeout bounds the storing of one group of turns.
const turnTimeout = 10 * time.Second

// insertTurns stores a group of turns in one INSERT per 100 (one
// transaction): a turn whose (call, seq) is taken, by an earlier turn or
// one before it in the group, is a Conflict; the others are stored.
func (s *Store) insertTurns(ts []call.Turn) []error {
	ctx, cancel := context.WithTimeout(context.Background(), turnTimeout)
	defer cancel()
	errs := make([]error, len(ts))
	row := "(" + placeholders(strings.Count(turnCols, ",")+1) + ")"
	stored := map[string]bool{}
	err := s.tx(ctx, func(tx *sql.Tx) error {
		clear(stored)
		for chunk := range slices.Chunk(ts, 100) {
			rows, args := values(chunk, row, func(t call.Turn) []any {
				var b call.Breakdown
				if t.Breakdown != nil {
					b = *t.Breakdown
				}
				return []any{t.ID, t.OrgID, t.CallID, t.Seq, t.Role, t.Text, ms(t.StartedAt), ms(t.EndedAt), t.Interrupted, t.Latency.Microseconds(),
					t.Breakdown != nil, b.Endpointing.Microseconds(), b.Transcriber.Microseconds(), b.Model.Microseconds(),
					b.Voice.Microseconds(), b.Platform.Microseconds(), b.Total.Microseconds()}
			})
			ids, err := s.querySet(ctx, tx, `INSERT INTO turns (`+turnCols+`) VALUES `+rows+`
				ON CONFLICT DO NOTHING RETURNING id`, args...)
			if err != nil {
				return err
			}
			maps.Copy(stored, ids)
		}
		return nil
	})
	for i, t := range ts {
		switch {
		case err != nil:
			errs[i] = err
		case !stored[t.ID]:
			errs[i] = apperr.Conflictf("turn %d of call %s already stored", t.Seq, t.CallID)
		}
	}
	return errs
}

// ListTurns returns a call's turns in order.
func (s *Store) ListTurns(ctx context.Context, orgID, callID string) ([]call.Turn, error) {
	rows, err := s.query(ctx, s.r, `SELECT `+turnCols+` FROM turns WHERE org_id = ? AND call_id = ? ORDER BY seq`, orgID, callID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []call.Turn{}
	for rows.Next() {
		t, err := scanTurn(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

func scanTurn(sc interface{ Scan(...any) error }) (call.Turn, error) {
	var t call.Turn
	var started, ended, lat int64
	var has bool
	var us [6]int64
	if err := sc.Scan(&t.ID, &t.OrgID, &t.CallID, &t.Seq, &t.Role, &t.Text, &started, &ended, &t.Interrupted, &lat,
		&has, &us[0], &us[1], &us[2], &us[3], &us[4], &us[5]); err != nil {
		return t, err
	}
	t.StartedAt, t.EndedAt, t.Latency = fromMS(started), fromMS(ended), micros(lat)
	if has {
		t.Breakdown = &call.Breakdown{
			Endpointing: micros(us[0]), Transcriber: micros(us[1]), Model: micros(us[2]),
			Voice: micros(us[3]), Platform: micros(us[4]), Total: micros(us[5]),
		}
	}
	return t, nil
}

func micros(v int64) time.Duration { return time.Duration(v) * time.Microsecond }

const analysisCols = `call_id, org_id, state, result, error, attempts, created_at, updated_at`

func scanAnalysis(sc interface{ Scan(...any) error }) (store.Analysis, error) {
	var a store.Analysis
	var result string
	var created, updated int64
	err := sc.Scan(&a.CallID, &a.OrgID, &a.State, &result, &a.Error, &a.Attempts, &created, &updated)
	a.Result, a.CreatedAt, a.UpdatedAt = []byte(result), fromMS(created), fromMS(updated)
	return a, err
}

// GetAnalysis reads a call's analysis.
func (s *Store) GetAnalysis(ctx context.Context, orgID, callID string) (store.Analysis, error) {
	a, err := scanAnalysis(s.row(ctx, s.r, `SELECT `+analysisCols+` FROM analyses WHERE org_id = ? AND call_id = ?`, orgID, callID))
	return a, notFound(err, "analysis")
}

// ClaimAnalyses leases pending analyses whose lease expired.
func (s *Store) ClaimAnalyses(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]store.Analysis, error) {
	c := claim{Table: "analyses", Alias: "analyses", Key: "call_id", Lease: "locked_until", Count: "attempts",
		Select: `SELECT ` + analysisCols + ` FROM analyses WHERE state = ? AND locked_until < ? ORDER BY created_at LIMIT ?`}
	var out []store.Analysis
	err := s.tx(ctx, func(tx *sql.Tx) error {
		out = nil
		_, err := c.run(ctx, s, tx, now, lease, limit, func(rows *sql.Rows) (string, error) {
			a, err := scanAnalysis(rows)
			a.Attempts++
			out = append(out, a)
			return a.CallID, err
		}, store.AnalysisPending, ms(now))
		return err
	})
	return out, err
}

// FinishAnalysis stores a claimed analysis's outcome. It filters by the
// organization too: the events are queued for a.OrgID's endpoints.
func (s *Store) FinishAnalysis(ctx context.Context, a store.Analysis, events ...store.Event) error {
	return s.tx(ctx, func(tx *sql.Tx) error {
		res, err := s.exec(ctx, tx, `UPDATE analyses SET state = ?, result = ?, error = ?, locked_until = 0, updated_at = ? WHERE call_id = ? AND org_id = ? AND state = ?`,
			a.State, string(a.Result), a.Error, ms(a.UpdatedAt), a.CallID, a.OrgID, store.AnalysisPending)
		if err := affected(res, err, "pending analysis"); err != nil {
			return err
		}
		if err := s.rollUpAnalysis(ctx, tx, a); err != nil {
			return err
		}
		return s.queueEvents(ctx, tx, a.OrgID, events)
	})
}

// CreateWebhook stores an endpoint.
func (s *Store) CreateWebhook(ctx context.Context, w store.Webhook) error {
	events, _ := json.Marshal(w.Events)
	secrets, _ := json.Marshal(w.Secrets)
	kind := cmp.Or(w.Kind, store.WebhookHTTP)
	var expires int64
	if kind == store.WebhookListener {
		expires = ms(w.ExpiresAt)
	}
	_, err := s.exec(ctx, s.w, `INSERT INTO webhooks (id, org_id, kind, url, events, secrets, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
		w.ID, w.OrgID, kind, w.URL, string(events), string(secrets), ms(w.CreatedAt), expires)
	return err
}

const webhookCols = `id, org_id, kind, url, events, secrets, created_at, expires_at`

func scanWebhook(sc interface{ Scan(...any) error }) (store.Webhook, error) {
	var w store.Webhook
	var events, secrets string
	var created, expires int64
	if err := sc.Scan(&w.ID, &w.OrgID, &w.Kind, &w.URL, &events, &secrets, &created, &expires); err != nil {
		return w, err
	}
	_ = json.Unmarshal([]byte(events), &w.Events)
	_ = json.Unmarshal([]byte(secrets), &w.Secrets)
	w.CreatedAt, w.ExpiresAt = fromMS(created), fromMS(expires)
	return w, nil
}

// ListWebhooks lists an organization's endpoints, oldest first.
func (s *Store) ListWebhooks(ctx context.Context, orgID string) ([]store.Webhook, error) {
	rows, err := s.query(ctx, s.r, `SELECT `+webhookCols+` FROM webhooks WHERE org_id = ? AND deleted_at = 0 ORDER BY created_at, id`, orgID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []store.Webhook{}
	for rows.Next() {
		w, err := scanWebhook(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, w)
	}
	return out, rows.Err()
}

// GetWebhook reads one endpoint.
func (s *Store) GetWebhook(ctx context.Context, orgID, id string) (store.Webhook, error) {
	w, err := scanWebhook(s.row(ctx, s.r, `SELECT `+webhookCols+` FROM webhooks WHERE org_id = ? AND id = ? AND deleted_at = 0`, orgID, id))
	return w, notFound(err, "webhook")
}

// UpdateWebhookSecrets replaces an endpoint's secrets.
func (s *Store) UpdateWebhookSecrets(ctx context.Context, orgID, id string, secrets []string) error {
	b, _ := json.Marshal(secrets)
	res, err := s.exec(ctx, s.w, `UPDATE webhooks SET secrets = ? WHERE org_id = ? AND id = ? AND deleted_at = 0`, string(b), orgID, id)
	return affected(res, err, "webhook")
}

// DeleteWebhook deletes an endpoint and drops its undelivered messages.
func (s *Store) DeleteWebhook(ctx context.Context, orgID, id string, at time.Time) error {
	return s.tx(ctx, func(tx *sql.Tx) error {
		res, err := s.exec(ctx, tx, `UPDATE webhooks SET deleted_at = ? WHERE org_id = ? AND id = ? AND deleted_at = 0`, ms(at), orgID, id)
		if err := affected(res, err, "webhook"); err != nil {
			return err
		}
		_, err = s.exec(ctx, tx, `UPDATE webhook_outbox SET state = ?, updated_at = ? WHERE webhook_id = ? AND state = ?`,
			store.OutboxFailed, ms(at), id, store.OutboxPending)
		return err
	})
}

// queueEvents fans events out to the organization's endpoints that
// subscribe to them, inside the caller's transaction.
func (s *Store) queueEvents(ctx context.Context, tx *sql.Tx, orgID string, events []store.Event) error {
	if len(events) == 0 {
		return nil
	}
	rows, err := s.query(ctx, tx, `SELECT id, events FROM webhooks WHERE org_id = ? AND deleted_at = 0`, orgID)
	if err != nil {
		return err
	}
	type endpoint struct {
		id     string
		events map[string]bool
	}
	var eps []endpoint
	for rows.Next() {
		var wid, evs string
		if err := rows.Scan(&wid, &evs); err != nil {
			rows.Close()
			return err
		}
		var list []string
		_ = json.Unmarshal([]byte(evs), &list)
		ep := endpoint{id: wid, events: map[string]bool{}}
		for _, e := range list {
			ep.events[e] = true
		}
		eps = append(eps, ep)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, ev := range events {
		payload, err := json.Marshal(struct {
			Type      string          `json:"type"`
			Timestamp string          `json:"timestamp"`
			Data      json.RawMessage `json:"data"`
		}{ev.Type, ev.At.UTC().Format("2006-01-02T15:04:05.000Z"), ev.Data})
		if err != nil {
			return err
		}
		for _, ep := range eps {
			if !ep.events[ev.Type] {
				continue
			}
			if _, err := s.exec(ctx, tx, `INSERT INTO webhook_outbox (id, org_id, webhook_id, type, payload, state, next_at, created_at, updated_at, call_id)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
				id.New(id.Message), orgID, ep.id, ev.Type, string(payload), store.OutboxPending, ms(ev.At), ms(ev.At), ms(ev.At), ev.CallID); err != nil {
				return err
			}
		}
	}
	return nil
}

// ListCallMessages lists the webhook messages about a call.
func (s *Store) ListCallMessages(ctx context.Context, orgID, callID string, limit int) ([]store.CallMessage, error) {
	rows, err := s.query(ctx, s.r, `SELECT o.id, o.webhook_id, w.url, o.type, o.state, o.attempts, o.last_status, o.created_at, o.updated_at
		FROM webhook_outbox o JOIN webhooks w ON w.id = o.webhook_id
		WHERE o.org_id = ? AND o.call_id = ? AND o.call_id <> '' ORDER BY o.created_at, o.id LIMIT ?`, orgID, callID, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []store.CallMessage{}
	for rows.Next() {
		var m store.CallMessage
		var created, updated int64
		if err := rows.Scan(&m.ID, &m.WebhookID, &m.URL, &m.Type, &m.State, &m.Attempts, &m.LastStatus, &created, &updated); err != nil {
			return nil, err
		}
		m.CreatedAt, m.UpdatedAt = fromMS(created), fromMS(updated)
		out = append(out, m)
	}
	return out, rows.Err()
}

// QueueEvent queues one event outside a call update.
func (s *Store) QueueEvent(ctx context.Context, orgID string, ev store.Event, at time.Time) error {
	return s.tx(ctx, func(tx *sql.Tx) error { return s.queueEvents(ctx, tx, orgID, []store.Event{ev}) })
}

// ClaimOutbox leases due messages of HTTP endpoints; a listener's are
// its stream's (ClaimListener).
func (s *Store) ClaimOutbox(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]store.OutboxMessage, error) {
	return s.claimMessages(ctx, `w.kind = ?`, now, lease, limit, store.WebhookHTTP)
}

// outboxSelect reads the claimable messages of the endpoints that where
// (on webhooks w) picks; claimMessages adds its arguments after the
// outbox's own.
const outboxSelect = `SELECT o.id, o.org_id, o.webhook_id, w.url, w.secrets, o.type, o.payload, o.state, o.attempts, o.created_at
	FROM webhook_outbox o JOIN webhooks w ON w.id = o.webhook_id
	WHERE o.state = ? AND o.next_at <= ? AND o.locked_until < ? AND `

// claimMessages leases due messages of the endpoints where picks, earliest
// due first.
func (s *Store) claimMessages(ctx context.Context, where string, now time.Time, lease time.Duration, limit int, args ...any) ([]store.OutboxMessage, error) {
	c := claim{Table: "webhook_outbox", Alias: "o", Key: "id", Lease: "locked_until",
		Select: outboxSelect + where + ` ORDER BY o.next_at LIMIT ?`}
	var out []store.OutboxMessage
	err := s.tx(ctx, func(tx *sql.Tx) error {
		out = nil
		_, err := c.run(ctx, s, tx, now, lease, limit, func(rows *sql.Rows) (string, error) {
			var m store.OutboxMessage
			var secrets, payload string
			var created int64
			if err := rows.Scan(&m.ID, &m.OrgID, &m.WebhookID, &m.URL, &secrets, &m.Type, &payload, &m.State, &m.Attempts, &created); err != nil {
				return "", err
			}
			_ = json.Unmarshal([]byte(secrets), &m.Secrets)
			m.Payload, m.CreatedAt = []byte(payload), fromMS(created)
			out = append(out, m)
			return m.ID, nil
		}, append([]any{store.OutboxPending, ms(now), ms(now)}, args...)...)
		return err
	})
	return out, err
}

// skipLockedOf lets several nodes claim rows of table (an alias in the
// query) without waiting on each other; SQLite has one writer.
func (s *Store) skipLockedOf(table string) string {
	if s.d.Name == "postgres" {
		return " FOR UPDATE OF " + table + " SKIP LOCKED"
	}
	return ""
}

// RecordDelivery logs an attempt and moves the message on. The receiver's
// answer and error are stored as text whatever bytes they hold (see
// store.Delivery), so a receiver cannot make the record fail on PostgreSQL.
func (s *Store) RecordDelivery(ctx context.Context, m store.OutboxMessage, d store.Delivery, state string, next time.Time) error {
	return s.tx(ctx, func(tx *sql.Tx) error {
		if _, err := s.exec(ctx, tx, `INSERT INTO webhook_deliveries (id, org_id, webhook_id, message_id, attempt, status, response, error, duration_ms, at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			d.ID, m.OrgID, m.WebhookID, m.ID, d.Attempt, d.Status, deliveryText(d.Response), deliveryText(d.Error), d.Duration.Milliseconds(), ms(d.At)); err != nil {
			return err
		}
		_, err := s.exec(ctx, tx, `UPDATE webhook_outbox SET state = ?, attempts = ?, next_at = ?, locked_until = 0, last_status = ?, updated_at = ? WHERE id = ?`,
			state, d.Attempt, ms(next), d.Status, ms(d.At), m.ID)
		return err
	})
}

// deliveryText makes s storable as TEXT on both databases: each NUL and each
// byte of invalid UTF-8 (PostgreSQL refuses both) becomes U+FFFD, and the
// result is cut to store.MaxDeliveryText bytes at a rune boundary.
func deliveryText(s string) string {
	if len(s) <= store.MaxDeliveryText && utf8.ValidString(s) && !strings.ContainsRune(s, 0) {
		return s
	}
	var b strings.Builder
	for len(s) > 0 {
		r, n := utf8.DecodeRuneInString(s) // (RuneError, 1) for each invalid byte
		s = s[n:]
		if r == 0 {
			r = utf8.RuneError
		}
		if b.Len()+utf8.RuneLen(r) > store.MaxDeliveryText {
			break
		}
		b.WriteRune(r)
	}
	return b.String()
}

// ListDeliveries lists an endpoint's delivery attempts, newest first.
func (s *Store) ListDeliveries(ctx context.Context, orgID, webhookID string, p store.Page) ([]store.Delivery, int, error) {
	if _, err := s.GetWebhook(ctx, orgID, webhookID); err != nil {
		return nil, 0, err
	}
	var total int
	if err := s.row(ctx, s.r, `SELECT COUNT(*) FROM webhook_deliveries WHERE webhook_id = ?`, webhookID).Scan(&total); err != nil {
		return nil, 0, err
	}
	rows, err := s.query(ctx, s.r, `SELECT d.id, d.message_id, d.webhook_id, d.org_id, o.type, d.attempt, d.status, d.response, d.error, d.duration_ms, d.at
		FROM webhook_deliveries d JOIN webhook_outbox o ON o.id = d.message_id
		WHERE d.org_id = ? AND d.webhook_id = ? ORDER BY d.at DESC, d.id DESC LIMIT ? OFFSET ?`, orgID, webhookID, p.PageSize, p.Offset())
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	out := []store.Delivery{}
	for rows.Next() {
		var d store.Delivery
		var dur, at int64
		if err := rows.Scan(&d.ID, &d.MessageID, &d.WebhookID, &d.OrgID, &d.Type, &d.Attempt, &d.Status, &d.Response, &d.Error, &dur, &at); err != nil {
			return nil, 0, err
		}
		d.Duration, d.At = time.Duration(dur)*time.Millisecond, fromMS(at)
		out = append(out, d)
	}
	return out, total, rows.Err()
}

// Redeliver queues a message again. It reads the endpoint FOR SHARE first:
// a DeleteWebhook racing it either waits, then drops the requeued message,
// or wins and the redelivery is NotFound; a deleted endpoint's message is
// never queued again.
func (s *Store) Redeliver(ctx context.Context, orgID, webhookID, messageID string, at time.Time) error {
	return s.tx(ctx, func(tx *sql.Tx) error {
		var one int
		if err := s.row(ctx, tx, `SELECT 1 FROM webhooks WHERE org_id = ? AND id = ? AND deleted_at = 0`+s.forShare(), orgID, webhookID).Scan(&one); err != nil {
			return notFound(err, "webhook")
		}
		res, err := s.exec(ctx, tx, `UPDATE webhook_outbox SET state = ?, next_at = ?, locked_until = 0, updated_at = ?
			WHERE org_id = ? AND webhook_id = ? AND id = ?`, store.OutboxPending, ms(at), ms(at), orgID, webhookID, messageID)
		return affected(res, err, "webhook message")
	})
}
