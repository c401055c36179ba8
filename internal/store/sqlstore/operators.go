package sqlstore

import (
	"context"
	"database/sql"
	"time"

	"switchboard/internal/apperr"
	"switchboard/internal/operator"
)

// CreateOperator stores an operator of an existing organization; its email
// is unique across organizations.
func (s *Store) CreateOperator(ctx context.Context, op operator.Operator) error {
	err := s.tx(ctx, func(tx *sql.Tx) error {
		var one int
		if err := s.row(ctx, tx, `SELECT 1 FROM orgs WHERE id = ?`, op.OrgID).Scan(&one); err != nil {
			return notFound(err, "organization")
		}
		_, err := s.exec(ctx, tx, `INSERT INTO operators (id, org_id, email, name, password_hash, created_at) VALUES (?, ?, ?, ?, ?, ?)`,
			op.ID, op.OrgID, op.Email, op.Name, string(op.PasswordHash), ms(op.CreatedAt))
		return err
	})
	if err != nil && s.d.IsUnique(err) {
		return apperr.Conflictf("an operator with email %s already exists", op.Email)
	}
	return wrap("CreateOperator", err)
}

const operatorCols = `id, org_id, email, name, password_hash, created_at`

func scanOperator(sc interface{ Scan(...any) error }) (operator.Operator, error) {
	var op operator.Operator
	var hash string
	var created int64
	if err := sc.Scan(&op.ID, &op.OrgID, &op.Email, &op.Name, &hash, &created); err != nil {
		return op, err
	}
	op.PasswordHash, op.CreatedAt = []byte(hash), fromMS(created)
	return op, nil
}

// GetOperatorByEmail reads an operator by its normalized email.
func (s *Store) GetOperatorByEmail(ctx context.Context, email string) (operator.Operator, error) {
	op, err := scanOperator(s.row(ctx, s.r, `SELECT `+operatorCols+` FROM operators WHERE email = ?`, email))
	return op, wrap("GetOperatorByEmail", notFound(err, "operator"))
}

// ListOperators lists an organization's operators, oldest first.
func (s *Store) ListOperators(ctx context.Context, orgID string) ([]operator.Operator, error) {
	rows, err := s.query(ctx, s.r, `SELECT `+operatorCols+` FROM operators WHERE org_id = ? ORDER BY created_at, id`, orgID)
	if err != nil {
		return nil, wrap("ListOperators", err)
	}
	defer rows.Close()
	var out []operator.Operator
	for rows.Next() {
		op, err := scanOperator(rows)
		if err != nil {
			return nil, wrap("ListOperators", err)
		}
		out = append(out, op)
	}
	return out, wrap("ListOperators", rows.Err())
}

// DeleteOperator deletes an operator and its sessions in one transaction.
func (s *Store) DeleteOperator(ctx context.Context, id string) error {
	return wrap("DeleteOperator", s.tx(ctx, func(tx *sql.Tx) error {
		if _, err := s.exec(ctx, tx, `DELETE FROM operator_sessions WHERE operator_id = ?`, id); err != nil {
			return err
		}
		res, err := s.exec(ctx, tx, `DELETE FROM operators WHERE id = ?`, id)
		return affected(res, err, "operator")
	}))
}

// CreateOperatorSession stores a session of an existing operator.
func (s *Store) CreateOperatorSession(ctx context.Context, ses operator.Session) error {
	return wrap("CreateOperatorSession", s.tx(ctx, func(tx *sql.Tx) error {
		var one int
		if err := s.row(ctx, tx, `SELECT 1 FROM operators WHERE id = ? AND org_id = ?`+s.forShare(), ses.OperatorID, ses.OrgID).Scan(&one); err != nil {
			return notFound(err, "operator")
		}
		_, err := s.exec(ctx, tx, `INSERT INTO operator_sessions (token_hash, operator_id, org_id, created_at, idle_until, expires_at) VALUES (?, ?, ?, ?, ?, ?)`,
			ses.TokenHash, ses.OperatorID, ses.OrgID, ms(ses.CreatedAt), ms(ses.IdleUntil), ms(ses.ExpiresAt))
		return err
	}))
}

// GetOperatorSession reads a session and its operator.
func (s *Store) GetOperatorSession(ctx context.Context, tokenHash string) (operator.Session, operator.Operator, error) {
	var ses operator.Session
	var created, idle, expires int64
	var op operator.Operator
	var hash string
	var opCreated int64
	err := s.row(ctx, s.r, `SELECT s.token_hash, s.operator_id, s.org_id, s.created_at, s.idle_until, s.expires_at,
		o.id, o.org_id, o.email, o.name, o.password_hash, o.created_at
		FROM operator_sessions s JOIN operators o ON o.id = s.operator_id WHERE s.token_hash = ?`, tokenHash).
		Scan(&ses.TokenHash, &ses.OperatorID, &ses.OrgID, &created, &idle, &expires,
			&op.ID, &op.OrgID, &op.Email, &op.Name, &hash, &opCreated)
	if err != nil {
		return operator.Session{}, operator.Operator{}, wrap("GetOperatorSession", notFound(err, "session"))
	}
	ses.CreatedAt, ses.IdleUntil, ses.ExpiresAt = fromMS(created), fromMS(idle), fromMS(expires)
	op.PasswordHash, op.CreatedAt = []byte(hash), fromMS(opCreated)
	return ses, op, nil
}

// TouchOperatorSession moves idle_until, capped at expires_at.
func (s *Store) TouchOperatorSession(ctx context.Context, tokenHash string, idleUntil time.Time) error {
	v := ms(idleUntil)
	res, err := s.exec(ctx, s.w, `UPDATE operator_sessions SET idle_until = CASE WHEN ? < expires_at THEN ? ELSE expires_at END WHERE token_hash = ?`,
		v, v, tokenHash)
	return wrap("TouchOperatorSession", affected(res, err, "session"))
}

// DeleteOperatorSession deletes one session.
func (s *Store) DeleteOperatorSession(ctx context.Context, tokenHash string) error {
	res, err := s.exec(ctx, s.w, `DELETE FROM operator_sessions WHERE token_hash = ?`, tokenHash)
	return wrap("DeleteOperatorSession", affected(res, err, "session"))
}

// PurgeOperatorSessions deletes the sessions that have ended by now.
func (s *Store) PurgeOperatorSessions(ctx context.Context, now time.Time) (int, error) {
	res, err := s.exec(ctx, s.w, `DELETE FROM operator_sessions WHERE idle_until <= ? OR expires_at <= ?`, ms(now), ms(now))
	if err != nil {
		return 0, wrap("PurgeOperatorSessions", err)
	}
	n, err := res.RowsAffected()
	return int(n), wrap("PurgeOperatorSessions", err)
}
