package sqlstore

import (
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"switchboard/internal/apperr"
	"switchboard/internal/phone"
	"switchboard/internal/store"
)

const connectionCols = `id, org_id, provider, name, address, transport, username, password_sealed, numbers, inbound_sources, created_at, updated_at`

func scanConnection(sc interface{ Scan(...any) error }) (phone.Connection, error) {
	var c phone.Connection
	var sealed, numbers, sources string
	var created, updated int64
	err := sc.Scan(&c.ID, &c.OrgID, &c.Provider, &c.Name, &c.SIP.Address, &c.SIP.Transport, &c.SIP.Username, &sealed,
		&numbers, &sources, &created, &updated)
	if err != nil {
		return c, err
	}
	if sealed != "" {
		if c.SIP.SealedPassword, err = base64.StdEncoding.DecodeString(sealed); err != nil {
			return c, fmt.Errorf("connection %s: stored password: %w", c.ID, err)
		}
	}
	if c.Provider == phone.ProviderTwilio {
		// The same columns keep a Twilio account (migration 00007).
		c.Twilio = phone.TwilioConnection{AccountSID: c.SIP.Username, SealedAuthToken: c.SIP.SealedPassword}
		c.SIP = phone.SIPConnection{}
	}
	if err := json.Unmarshal([]byte(numbers), &c.SIP.Numbers); err != nil {
		return c, fmt.Errorf("connection %s: stored numbers: %w", c.ID, err)
	}
	if err := json.Unmarshal([]byte(sources), &c.SIP.InboundSources); err != nil {
		return c, fmt.Errorf("connection %s: stored inbound sources: %w", c.ID, err)
	}
	c.CreatedAt, c.UpdatedAt = fromMS(created), fromMS(updated)
	return c, nil
}

// jsonList is a string list as stored: a JSON array, [] when empty.
func jsonList(xs []string) string {
	if len(xs) == 0 {
		return "[]"
	}
	b, _ := json.Marshal(xs)
	return string(b)
}

// CreateConnection stores a connection and claims its numbers; numbers
// already on a connection make it a Conflict naming each one's field.
func (s *Store) CreateConnection(ctx context.Context, c phone.Connection) error {
	if c.Provider == phone.ProviderTwilio {
		// A Twilio account in the SIP columns (migration 00007).
		c.SIP = phone.SIPConnection{Username: c.Twilio.AccountSID, SealedPassword: c.Twilio.SealedAuthToken}
	}
	return wrap("CreateConnection", s.tx(ctx, func(tx *sql.Tx) error {
		sealed := ""
		if len(c.SIP.SealedPassword) > 0 {
			sealed = base64.StdEncoding.EncodeToString(c.SIP.SealedPassword)
		}
		if _, err := s.exec(ctx, tx, `INSERT INTO phone_connections (`+connectionCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			c.ID, c.OrgID, c.Provider, c.Name, c.SIP.Address, c.SIP.Transport, c.SIP.Username, sealed,
			jsonList(c.SIP.Numbers), jsonList(c.SIP.InboundSources), ms(c.CreatedAt), ms(c.UpdatedAt)); err != nil {
			return err
		}
		var taken apperr.Fields
		for i, n := range c.SIP.Numbers {
			// DO NOTHING rather than a unique error: PostgreSQL would abort
			// the transaction at the first, and every taken number is named.
			res, err := s.exec(ctx, tx, `INSERT INTO phone_connection_numbers (provider, number, connection_id, org_id, seq) VALUES (?, ?, ?, ?, ?)
				ON CONFLICT (provider, number) DO NOTHING`, c.Provider, n, c.ID, c.OrgID, i)
			if err != nil {
				return err
			}
			if k, err := res.RowsAffected(); err != nil {
				return err
			} else if k == 1 {
				continue
			}
			var owner, org string
			err = s.row(ctx, tx, `SELECT connection_id, org_id FROM phone_connection_numbers WHERE provider = ? AND number = ?`, c.Provider, n).Scan(&owner, &org)
			field := fmt.Sprintf("sip.numbers[%d]", i)
			switch {
			case err == nil && org == c.OrgID:
				taken.Add(field, "%s is already on this organization's connection %s", n, owner)
			case err == nil || errors.Is(err, sql.ErrNoRows):
				// (No row: its connection was deleted since; still taken
				// for this transaction.)
				taken.Add(field, "%s is already on a %s connection of another organization", n, c.Provider)
			default:
				return err
			}
		}
		if len(taken) > 0 {
			return &apperr.Error{Kind: apperr.Conflict, Code: "number_taken",
				Message: "a number of the connection is already on another connection: inbound calls to it must reach one organization", Fields: taken}
		}
		return nil
	}))
}

// GetConnection reads one of the organization's connections.
func (s *Store) GetConnection(ctx context.Context, orgID, id string) (phone.Connection, error) {
	c, err := scanConnection(s.row(ctx, s.r, `SELECT `+connectionCols+` FROM phone_connections WHERE org_id = ? AND id = ?`, orgID, id))
	return c, wrap("GetConnection", notFound(err, "connection"))
}

// GetConnectionAnyOrg reads a connection by id, whoever's it is.
func (s *Store) GetConnectionAnyOrg(ctx context.Context, id string) (phone.Connection, error) {
	c, err := scanConnection(s.row(ctx, s.r, `SELECT `+connectionCols+` FROM phone_connections WHERE id = ?`, id))
	return c, wrap("GetConnectionAnyOrg", notFound(err, "connection"))
}

// ListConnections lists the organization's connections, newest first.
func (s *Store) ListConnections(ctx context.Context, orgID string, p store.Page) ([]phone.Connection, int, error) {
	var total int
	if err := s.row(ctx, s.r, `SELECT COUNT(*) FROM phone_connections WHERE org_id = ?`, orgID).Scan(&total); err != nil {
		return nil, 0, wrap("ListConnections", err)
	}
	out := []phone.Connection{}
	if p.Offset() >= total {
		return out, total, nil
	}
	rows, err := s.query(ctx, s.r, `SELECT `+connectionCols+` FROM phone_connections WHERE org_id = ? ORDER BY created_at DESC, id DESC LIMIT ? OFFSET ?`,
		orgID, p.PageSize, p.Offset())
	if err != nil {
		return nil, 0, wrap("ListConnections", err)
	}
	defer rows.Close()
	for rows.Next() {
		c, err := scanConnection(rows)
		if err != nil {
			return nil, 0, wrap("ListConnections", err)
		}
		out = append(out, c)
	}
	return out, total, wrap("ListConnections", rows.Err())
}

// DeleteConnection frees the connection's numbers, then deletes it unless
// one of them is purchased. Locking the connection row and deleting the
// number rows first is what orders it against a concurrent CreatePurchase
// (which reads one of them FOR SHARE): that purchase either committed
// before (and is found below) or finds its row gone.
func (s *Store) DeleteConnection(ctx context.Context, orgID, id string) error {
	return wrap("DeleteConnection", s.tx(ctx, func(tx *sql.Tx) error {
		if _, err := s.exec(ctx, tx, `UPDATE phone_connections SET updated_at = updated_at WHERE org_id = ? AND id = ?`, orgID, id); err != nil {
			return err
		}
		if _, err := s.exec(ctx, tx, `DELETE FROM phone_connection_numbers WHERE org_id = ? AND connection_id = ?`, orgID, id); err != nil {
			return err
		}
		rows, err := s.query(ctx, tx, `SELECT id, number FROM purchases WHERE org_id = ? AND connection_id = ? AND released_at = 0 ORDER BY created_at, id`, orgID, id)
		if err != nil {
			return err
		}
		var held []string
		for rows.Next() {
			var pid, number string
			if err := rows.Scan(&pid, &number); err != nil {
				rows.Close()
				return err
			}
			held = append(held, number+" ("+pid+")")
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		if len(held) > 0 {
			return apperr.Conflictf("numbers of this connection are purchased: %s; release them first (DELETE /v1/phone/purchases/{id})", strings.Join(held, ", "))
		}
		res, err := s.exec(ctx, tx, `DELETE FROM phone_connections WHERE org_id = ? AND id = ?`, orgID, id)
		return affected(res, err, "connection")
	}))
}

// ConnectionNumbers lists the organization's numbers on connections of a
// provider with the purchase holding each.
func (s *Store) ConnectionNumbers(ctx context.Context, orgID, provider string) ([]phone.ConnectionNumber, error) {
	rows, err := s.query(ctx, s.r, `SELECT n.number, n.connection_id, COALESCE(p.id, '')
		FROM phone_connection_numbers n
		JOIN phone_connections c ON c.id = n.connection_id
		LEFT JOIN purchases p ON p.provider = n.provider AND p.number = n.number AND p.released_at = 0
		WHERE n.org_id = ? AND n.provider = ?
		ORDER BY c.created_at, c.id, n.seq`, orgID, provider)
	if err != nil {
		return nil, wrap("ConnectionNumbers", err)
	}
	defer rows.Close()
	out := []phone.ConnectionNumber{}
	for rows.Next() {
		var n phone.ConnectionNumber
		if err := rows.Scan(&n.Number, &n.ConnectionID, &n.PurchaseID); err != nil {
			return nil, wrap("ConnectionNumbers", err)
		}
		out = append(out, n)
	}
	return out, wrap("ConnectionNumbers", rows.Err())
}

// FindInboundNumber finds the held purchase of a number on a connection of
// provider, of any organization, and its connection.
func (s *Store) FindInboundNumber(ctx context.Context, provider, number string) (phone.Purchase, phone.Connection, error) {
	p, err := scanPurchase(s.row(ctx, s.r, `SELECT `+purchaseCols+` FROM purchases WHERE provider = ? AND number = ? AND released_at = 0 AND connection_id <> ''`,
		provider, number))
	if err != nil {
		return phone.Purchase{}, phone.Connection{}, wrap("FindInboundNumber", notFound(err, "purchased number"))
	}
	c, err := s.GetConnection(ctx, p.OrgID, p.ConnectionID)
	if err != nil {
		return phone.Purchase{}, phone.Connection{}, wrap("FindInboundNumber", err)
	}
	return p, c, nil
}
