package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"switchboard/internal/apperr"
	"switchboard/internal/phone"
	"switchboard/internal/store"
)

// CreatePurchase stores a purchase; the number must not be held by anyone.
// A purchase on a connection first locks the connection's number row
// (against DeleteConnection) and checks it is the organization's.
func (s *Store) CreatePurchase(ctx context.Context, p phone.Purchase) error {
	insert := func(q querier) error {
		_, err := s.exec(ctx, q, `INSERT INTO purchases (`+purchaseCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			p.ID, p.OrgID, p.Number, p.Provider, p.InboundAssistantID, p.OutboundAssistantID, p.Message, ms(p.CreatedAt), ms(p.UpdatedAt), p.ConnectionID, p.Imported)
		if err != nil && s.d.IsUnique(err) {
			return &apperr.Error{Kind: apperr.Conflict, Code: "number_taken", Message: "number " + p.Number + " is already purchased"}
		}
		return err
	}
	if p.ConnectionID == "" {
		return wrap("CreatePurchase", insert(s.w))
	}
	return wrap("CreatePurchase", s.tx(ctx, func(tx *sql.Tx) error {
		var one int
		var err error
		if p.Provider == phone.ProviderTwilio {
			// A Twilio account's numbers are not listed on the
			// connection: the connection row itself is locked.
			err = s.row(ctx, tx, `SELECT 1 FROM phone_connections WHERE id = ? AND org_id = ? AND provider = ?`+s.forShare(),
				p.ConnectionID, p.OrgID, p.Provider).Scan(&one)
		} else {
			err = s.row(ctx, tx, `SELECT 1 FROM phone_connection_numbers WHERE provider = ? AND number = ? AND connection_id = ? AND org_id = ?`+s.forShare(),
				p.Provider, p.Number, p.ConnectionID, p.OrgID).Scan(&one)
		}
		if errors.Is(err, sql.ErrNoRows) {
			return apperr.NotFoundf("number %s is not on %s connection %s", p.Number, p.Provider, p.ConnectionID)
		}
		if err != nil {
			return err
		}
		return insert(tx)
	}))
}

const purchaseCols = `id, org_id, number, provider, inbound_assistant_id, outbound_assistant_id, message, created_at, updated_at, connection_id, imported`

func scanPurchase(sc interface{ Scan(...any) error }) (phone.Purchase, error) {
	var p phone.Purchase
	var created, updated int64
	err := sc.Scan(&p.ID, &p.OrgID, &p.Number, &p.Provider, &p.InboundAssistantID, &p.OutboundAssistantID, &p.Message, &created, &updated, &p.ConnectionID, &p.Imported)
	p.CreatedAt, p.UpdatedAt = fromMS(created), fromMS(updated)
	return p, err
}

func (s *Store) getPurchase(ctx context.Context, q querier, orgID, id string) (phone.Purchase, error) {
	p, err := scanPurchase(s.row(ctx, q, `SELECT `+purchaseCols+` FROM purchases WHERE org_id = ? AND id = ? AND released_at = 0`, orgID, id))
	return p, notFound(err, "phone purchase")
}

// GetPurchase reads one of the organization's held numbers.
func (s *Store) GetPurchase(ctx context.Context, orgID, id string) (phone.Purchase, error) {
	p, err := s.getPurchase(ctx, s.r, orgID, id)
	return p, wrap("GetPurchase", err)
}

// ListPurchases lists the organization's held numbers, oldest first.
func (s *Store) ListPurchases(ctx context.Context, orgID string) ([]phone.Purchase, error) {
	rows, err := s.query(ctx, s.r, `SELECT `+purchaseCols+` FROM purchases WHERE org_id = ? AND released_at = 0 ORDER BY created_at, id`, orgID)
	if err != nil {
		return nil, wrap("ListPurchases", err)
	}
	defer rows.Close()
	out := []phone.Purchase{}
	for rows.Next() {
		p, err := scanPurchase(rows)
		if err != nil {
			return nil, wrap("ListPurchases", err)
		}
		out = append(out, p)
	}
	return out, wrap("ListPurchases", rows.Err())
}

// FindInventoryNumber reads the organization's held inventory purchase of number.
func (s *Store) FindInventoryNumber(ctx context.Context, orgID, provider, number string) (phone.Purchase, error) {
	p, err := scanPurchase(s.row(ctx, s.r, `SELECT `+purchaseCols+` FROM purchases WHERE provider = ? AND number = ? AND org_id = ? AND released_at = 0 AND connection_id = ''`,
		provider, number, orgID))
	return p, wrap("FindInventoryNumber", notFound(err, "purchased number"))
}

// HeldNumbers lists a provider's numbers that someone holds.
func (s *Store) HeldNumbers(ctx context.Context, provider string) (map[string]bool, error) {
	rows, err := s.query(ctx, s.r, `SELECT number FROM purchases WHERE provider = ? AND released_at = 0`, provider)
	if err != nil {
		return nil, wrap("HeldNumbers", err)
	}
	defer rows.Close()
	out := map[string]bool{}
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return nil, wrap("HeldNumbers", err)
		}
		out[n] = true
	}
	return out, wrap("HeldNumbers", rows.Err())
}

// AllocateAssistants sets a purchase's assistants and message.
func (s *Store) AllocateAssistants(ctx context.Context, a store.Allocation) (phone.Purchase, error) {
	var out phone.Purchase
	err := s.tx(ctx, func(tx *sql.Tx) error {
		if _, err := s.getPurchase(ctx, tx, a.OrgID, a.PurchaseID); err != nil {
			return err
		}
		var missing apperr.Fields
		for field, aid := range map[string]string{"inboundAssistantId": a.InboundID, "outboundAssistantId": a.OutboundID} {
			if aid == "" {
				continue
			}
			// Locked against a concurrent DeleteAssistant until commit.
			var one int
			err := s.row(ctx, tx, `SELECT 1 FROM assistants WHERE org_id = ? AND id = ?`+s.forShare(), a.OrgID, aid).Scan(&one)
			if err == sql.ErrNoRows {
				missing.Add(field, "assistant %s not found", aid)
			} else if err != nil {
				return err
			}
		}
		if len(missing) > 0 {
			return &apperr.Error{Kind: apperr.NotFound, Message: "assistant not found", Fields: missing}
		}
		if _, err := s.exec(ctx, tx, `UPDATE purchases SET inbound_assistant_id = ?, outbound_assistant_id = ?, message = ?, updated_at = ? WHERE org_id = ? AND id = ?`,
			a.InboundID, a.OutboundID, a.Message, ms(a.At), a.OrgID, a.PurchaseID); err != nil {
			return err
		}
		var err error
		out, err = s.getPurchase(ctx, tx, a.OrgID, a.PurchaseID)
		return err
	})
	return out, wrap("AllocateAssistants", err)
}

// ReleasePurchase releases a number and deletes its contacts.
func (s *Store) ReleasePurchase(ctx context.Context, orgID, id string, at time.Time) error {
	return wrap("ReleasePurchase", s.tx(ctx, func(tx *sql.Tx) error {
		// Release first: the row lock makes a concurrent AddContacts either
		// commit before the contacts are deleted below or find no purchase.
		res, err := s.exec(ctx, tx, `UPDATE purchases SET released_at = ?, updated_at = ? WHERE org_id = ? AND id = ? AND released_at = 0`, ms(at), ms(at), orgID, id)
		if err := affected(res, err, "phone purchase"); err != nil {
			return err
		}
		var sid string
		err = s.row(ctx, tx, `SELECT s.id FROM schedules s JOIN attempts a ON a.schedule_id = s.id
			WHERE s.org_id = ? AND s.purchase_id = ? AND a.state = 'pending' LIMIT 1`, orgID, id).Scan(&sid)
		if err == nil {
			return apperr.Conflictf("schedule %s has pending calls on this number; cancel it first", sid)
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		_, err = s.exec(ctx, tx, `DELETE FROM contacts WHERE org_id = ? AND purchase_id = ?`, orgID, id)
		return err
	}))
}
