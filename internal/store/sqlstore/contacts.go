package sqlstore

import (
	"context"
	"database/sql"
	"time"

	"switchboard/internal/phone"
	"switchboard/internal/store"
)

// AddContacts adds a batch of contacts, skipping numbers already present.
func (s *Store) AddContacts(ctx context.Context, orgID, purchaseID string, cs []phone.Contact) ([]phone.Contact, []int, error) {
	var created []phone.Contact
	var dups []int
	err := s.tx(ctx, func(tx *sql.Tx) error {
		created, dups = nil, nil
		// Locked against a concurrent ReleasePurchase until commit.
		var one int
		if err := s.row(ctx, tx, `SELECT 1 FROM purchases WHERE org_id = ? AND id = ? AND released_at = 0`+s.forShare(), orgID, purchaseID).Scan(&one); err != nil {
			return notFound(err, "phone purchase")
		}
		seq := time.Now().UnixNano()
		for i, c := range cs {
			res, err := s.exec(ctx, tx, `INSERT INTO contacts (id, org_id, purchase_id, name, phone_number, timezone, metadata, created_at, seq)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (purchase_id, phone_number) DO NOTHING`,
				c.ID, orgID, purchaseID, c.Name, c.PhoneNumber, c.Timezone, string(c.Metadata), ms(c.CreatedAt), seq+int64(i))
			if err != nil {
				return err
			}
			if n, err := res.RowsAffected(); err != nil {
				return err
			} else if n == 0 {
				dups = append(dups, i)
				continue
			}
			c.OrgID, c.PurchaseID = orgID, purchaseID
			created = append(created, c)
		}
		return nil
	})
	return created, dups, wrap("AddContacts", err)
}

const contactCols = `id, org_id, purchase_id, name, phone_number, timezone, metadata, created_at`

func scanContact(sc interface{ Scan(...any) error }) (phone.Contact, error) {
	var c phone.Contact
	var meta string
	var created int64
	err := sc.Scan(&c.ID, &c.OrgID, &c.PurchaseID, &c.Name, &c.PhoneNumber, &c.Timezone, &meta, &created)
	if meta == "" {
		meta = "{}"
	}
	c.Metadata = []byte(meta)
	c.CreatedAt = fromMS(created)
	return c, err
}

// ListContacts lists a purchase's contacts in the order they were added.
func (s *Store) ListContacts(ctx context.Context, orgID, purchaseID string, p store.Page) ([]phone.Contact, int, error) {
	if _, err := s.getPurchase(ctx, s.r, orgID, purchaseID); err != nil {
		return nil, 0, wrap("ListContacts", err)
	}
	var total int
	if err := s.row(ctx, s.r, `SELECT COUNT(*) FROM contacts WHERE purchase_id = ?`, purchaseID).Scan(&total); err != nil {
		return nil, 0, wrap("ListContacts", err)
	}
	rows, err := s.query(ctx, s.r, `SELECT `+contactCols+` FROM contacts WHERE org_id = ? AND purchase_id = ? ORDER BY seq LIMIT ? OFFSET ?`,
		orgID, purchaseID, p.PageSize, p.Offset())
	if err != nil {
		return nil, 0, wrap("ListContacts", err)
	}
	defer rows.Close()
	out := []phone.Contact{}
	for rows.Next() {
		c, err := scanContact(rows)
		if err != nil {
			return nil, 0, wrap("ListContacts", err)
		}
		out = append(out, c)
	}
	return out, total, wrap("ListContacts", rows.Err())
}

// DeleteContact removes a contact from a purchase.
func (s *Store) DeleteContact(ctx context.Context, orgID, purchaseID, contactID string) error {
	return wrap("DeleteContact", s.tx(ctx, func(tx *sql.Tx) error {
		if _, err := s.getPurchase(ctx, tx, orgID, purchaseID); err != nil {
			return err
		}
		res, err := s.exec(ctx, tx, `DELETE FROM contacts WHERE org_id = ? AND purchase_id = ? AND id = ?`, orgID, purchaseID, contactID)
		return affected(res, err, "contact")
	}))
}

// GetContact reads one contact.
func (s *Store) GetContact(ctx context.Context, orgID, id string) (phone.Contact, error) {
	c, err := scanContact(s.row(ctx, s.r, `SELECT `+contactCols+` FROM contacts WHERE org_id = ? AND id = ?`, orgID, id))
	return c, wrap("GetContact", notFound(err, "contact"))
}

// ContactByNumber reads the purchase's contact with number (E.164), by
// the unique index contacts_number.
func (s *Store) ContactByNumber(ctx context.Context, orgID, purchaseID, number string) (phone.Contact, error) {
	c, err := scanContact(s.row(ctx, s.r, `SELECT `+contactCols+` FROM contacts WHERE purchase_id = ? AND phone_number = ? AND org_id = ?`, purchaseID, number, orgID))
	return c, wrap("ContactByNumber", notFound(err, "contact"))
}

// ContactZones returns the timezones of the ids that are contacts of the purchase.
func (s *Store) ContactZones(ctx context.Context, orgID, purchaseID string, ids []string) (map[string]string, error) {
	out := make(map[string]string, len(ids))
	const batch = 500
	for start := 0; start < len(ids); start += batch {
		chunk := ids[start:min(start+batch, len(ids))]
		args := []any{orgID, purchaseID}
		for _, id := range chunk {
			args = append(args, id)
		}
		rows, err := s.query(ctx, s.r, `SELECT id, timezone FROM contacts WHERE org_id = ? AND purchase_id = ? AND id IN (`+placeholders(len(chunk))+`)`, args...)
		if err != nil {
			return nil, wrap("ContactZones", err)
		}
		for rows.Next() {
			var id, tz string
			if err := rows.Scan(&id, &tz); err != nil {
				rows.Close()
				return nil, wrap("ContactZones", err)
			}
			out[id] = tz
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, wrap("ContactZones", err)
		}
	}
	return out, nil
}
