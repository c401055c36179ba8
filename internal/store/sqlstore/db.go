// Package sqlstore implements store.Store over database/sql with one set of
// queries for SQLite and PostgreSQL. The queries are written with "?"
// placeholders and rewritten once per dialect; the schema (see
// internal/store/migrations) uses only types both databases share. Each
// aggregate of package store is implemented in the file of the same name
// (calls.go implements store.Calls, attempts.go store.Attempts, …); db.go
// holds the pools, transactions and statement cache, claim.go the lease
// claimer.
package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"strconv"
	"strings"
	"sync"
	"time"

	"switchboard/internal/apperr"
	"switchboard/internal/call"
	"switchboard/internal/groupcommit"
)

// Dialect is what differs between the databases.
type Dialect struct {
	// Name is "sqlite" or "postgres".
	Name string
	// Dollar rewrites ? placeholders to $1, $2, …
	Dollar bool
	// IsUnique reports whether err is a unique-constraint violation.
	IsUnique func(error) bool
	// IsBusy reports whether err is a transient lock conflict worth a retry.
	IsBusy func(error) bool
	// UncancelableReads runs reader-pool queries without the caller's
	// cancellation (see readCtx).
	UncancelableReads bool
	// SerializeTx is run first in transactions that must not interleave
	// across nodes (bootstrap); empty when transactions already serialize.
	SerializeTx string
	// CountShards is how many rows each (organization, type, status) call
	// total is spread over (bumpCount); 0 or 1: one.
	CountShards int
}

// DefaultPageCache is how many call-listing pages a Store keeps by default.
const DefaultPageCache = 4096

// Store is the database/sql implementation of store.Store.
type Store struct {
	w, r    *sql.DB // writer and reader pools; the same pool on PostgreSQL
	d       Dialect
	queries sync.Map // original query → rebound query
	stmts   sync.Map // stmtKey → *sql.Stmt
	pages   *pageCache
	// turns stores AppendTurn's turns in groups (insertTurns).
	turns *groupcommit.Group[call.Turn, error]
}

// New returns a Store writing through w and reading through r.
func New(w, r *sql.DB, d Dialect) *Store {
	if r == nil {
		r = w
	}
	s := &Store{w: w, r: r, d: d, pages: newPageCache(DefaultPageCache)}
	s.turns = &groupcommit.Group[call.Turn, error]{Save: s.insertTurns}
	return s
}

// Writer is the pool that writes; the job queue shares it on SQLite.
func (s *Store) Writer() *sql.DB { return s.w }

// Ping checks that both pools answer.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.w.PingContext(ctx); err != nil {
		return wrap("Ping", err)
	}
	return wrap("Ping", s.r.PingContext(ctx))
}

// Close closes the prepared statements and both pools.
func (s *Store) Close() error {
	s.stmts.Range(func(k, v any) bool {
		v.(*sql.Stmt).Close()
		return true
	})
	err := s.w.Close()
	if s.r != s.w {
		err = errors.Join(err, s.r.Close())
	}
	return wrap("Close", err)
}

// q rewrites a query for the dialect, once.
func (s *Store) q(query string) string {
	if !s.d.Dollar {
		return query
	}
	if v, ok := s.queries.Load(query); ok {
		return v.(string)
	}
	out := Rebind(query)
	s.queries.Store(query, out)
	return out
}

// Rebind turns the ? placeholders of query into PostgreSQL's $1, $2, ….
// Queries hold no ? inside string literals.
func Rebind(query string) string {
	var b strings.Builder
	n := 0
	for i := 0; i < len(query); i++ {
		if query[i] == '?' {
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
			continue
		}
		b.WriteByte(query[i])
	}
	return b.String()
}

// querier is what *sql.DB and *sql.Tx share.
type querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// tx runs fn in a write transaction, retrying a few times on lock conflicts.
func (s *Store) tx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	var err error
	for attempt := 0; attempt < 5; attempt++ {
		err = s.tx1(ctx, fn)
		if err == nil || s.d.IsBusy == nil || !s.d.IsBusy(err) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(time.Duration(attempt+1) * 20 * time.Millisecond):
		}
	}
	return err
}

func (s *Store) tx1(ctx context.Context, fn func(tx *sql.Tx) error) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	return tx.Commit()
}

// forShare ends a SELECT whose rows must stay as read until commit, against
// a concurrent UPDATE or DELETE: FOR SHARE on PostgreSQL; nothing on SQLite,
// whose single writer already serializes write transactions.
func (s *Store) forShare() string {
	if s.d.Name == "postgres" {
		return " FOR SHARE"
	}
	return ""
}

// prepared returns q itself inside a transaction, or for a pool a cached
// prepared statement of query (database/sql prepares it once per connection),
// so hot queries are not parsed again on every request.
func (s *Store) prepared(ctx context.Context, q querier, query string) (querier, string) {
	db, ok := q.(*sql.DB)
	if !ok {
		return q, s.q(query)
	}
	key := stmtKey{db, query}
	if v, ok := s.stmts.Load(key); ok {
		return stmtQuerier{v.(*sql.Stmt)}, ""
	}
	st, err := db.PrepareContext(ctx, s.q(query))
	if err != nil {
		return q, s.q(query) // let the query itself report the error
	}
	if v, loaded := s.stmts.LoadOrStore(key, st); loaded {
		st.Close()
		st = v.(*sql.Stmt)
	}
	return stmtQuerier{st}, ""
}

type stmtKey struct {
	db    *sql.DB
	query string
}

// stmtQuerier runs a prepared statement through the querier interface; the
// query text argument is ignored.
type stmtQuerier struct{ st *sql.Stmt }

func (q stmtQuerier) ExecContext(ctx context.Context, _ string, args ...any) (sql.Result, error) {
	return q.st.ExecContext(ctx, args...)
}

func (q stmtQuerier) QueryContext(ctx context.Context, _ string, args ...any) (*sql.Rows, error) {
	return q.st.QueryContext(ctx, args...)
}

func (q stmtQuerier) QueryRowContext(ctx context.Context, _ string, args ...any) *sql.Row {
	return q.st.QueryRowContext(ctx, args...)
}

// exec runs one statement on q (a pool or a transaction).
func (s *Store) exec(ctx context.Context, q querier, query string, args ...any) (sql.Result, error) {
	pq, text := s.prepared(ctx, q, query)
	return pq.ExecContext(ctx, text, args...)
}

func (s *Store) query(ctx context.Context, q querier, query string, args ...any) (*sql.Rows, error) {
	ctx = s.readCtx(ctx, q)
	pq, text := s.prepared(ctx, q, query)
	return pq.QueryContext(ctx, text, args...)
}

func (s *Store) row(ctx context.Context, q querier, query string, args ...any) *sql.Row {
	ctx = s.readCtx(ctx, q)
	pq, text := s.prepared(ctx, q, query)
	return pq.QueryRowContext(ctx, text, args...)
}

// readCtx drops cancellation from reads on an embedded database's reader
// pool: database/sql and the SQLite driver each start a goroutine per query
// to watch a cancelable context, which cost more than the indexed reads
// themselves. Those reads take microseconds to a few milliseconds and run
// to completion; writes and PostgreSQL keep the caller's context.
func (s *Store) readCtx(ctx context.Context, q querier) context.Context {
	if s.d.UncancelableReads && q == querier(s.r) {
		return context.WithoutCancel(ctx)
	}
	return ctx
}

// ms and fromMS convert between time.Time and the schema's Unix milliseconds;
// the zero time is 0 both ways.
func ms(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

func fromMS(v int64) time.Time {
	if v == 0 {
		return time.Time{}
	}
	return time.UnixMilli(v).UTC()
}

// opError is an error as a store method returns it: named by the method,
// so that a log line says which call failed; Unwrap gives the driver's
// error (errors.Is and errors.As see through it).
type opError struct {
	method string
	err    error
}

func (e *opError) Error() string { return "sqlstore: " + e.method + ": " + e.err.Error() }

func (e *opError) Unwrap() error { return e.err }

// wrap names method on err, the error a method of Store returns. nil, a
// classified error (apperr: its message is the client's, and says what
// failed) and one already named (a method that returns another's error)
// pass as they are.
func wrap(method string, err error) error {
	if err == nil {
		return nil
	}
	var classified *apperr.Error
	var named *opError
	if errors.As(err, &classified) || errors.As(err, &named) {
		return err
	}
	return &opError{method: method, err: err}
}

// notFound turns sql.ErrNoRows into apperr.NotFound.
func notFound(err error, what string) error {
	if errors.Is(err, sql.ErrNoRows) {
		return apperr.NotFoundf("%s not found", what)
	}
	return err
}

// affected is the NotFound check for an UPDATE or DELETE by id.
func affected(res sql.Result, err error, what string) error {
	if err != nil {
		return err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n == 0 {
		return apperr.NotFoundf("%s not found", what)
	}
	return nil
}

// values is a multi-row VALUES list, row once per item, and the items'
// arguments in order (each item's from args).
func values[T any](items []T, row string, args func(T) []any) (string, []any) {
	rows := make([]string, len(items))
	var all []any
	for i, it := range items {
		rows[i] = row
		all = append(all, args(it)...)
	}
	return strings.Join(rows, ", "), all
}

// placeholders returns "?, ?, …" n times.
func placeholders(n int) string {
	if n == 0 {
		return ""
	}
	return strings.Repeat("?, ", n-1) + "?"
}

func (s *Store) forUpdate() string {
	if s.d.Name == "postgres" {
		return " FOR UPDATE"
	}
	return ""
}
