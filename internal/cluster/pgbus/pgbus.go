// Package pgbus is the cluster's Bus on PostgreSQL: a node's messages are
// NOTIFYs on its own channel (sb_<node id>), which the node LISTENs to on
// a connection of its own, outside the pool. Notifications are delivered
// at most once, to the sessions listening when the sending transaction
// commits, and carry under 8000 bytes (cluster.MaxMessage).
package pgbus

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"switchboard/internal/cluster"
)

// Bus sends through the pool and listens on connections of its own.
type Bus struct {
	pool *pgxpool.Pool
}

// New returns a bus over pool's database.
func New(pool *pgxpool.Pool) *Bus { return &Bus{pool: pool} }

// Channel is node's channel name.
func Channel(node string) string { return "sb_" + node }

// Send notifies node's channel.
func (b *Bus) Send(ctx context.Context, node string, msg []byte) error {
	_, err := b.pool.Exec(ctx, "SELECT pg_notify($1, $2)", Channel(node), string(msg))
	return err
}

// Subscribe opens a connection that listens to node's channel.
func (b *Bus) Subscribe(ctx context.Context, node string) (cluster.Subscription, error) {
	conn, err := pgx.ConnectConfig(ctx, b.pool.Config().ConnConfig.Copy())
	if err != nil {
		return nil, fmt.Errorf("pgbus: connect: %w", err)
	}
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{Channel(node)}.Sanitize()); err != nil {
		_ = conn.Close(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("pgbus: listen: %w", err)
	}
	return &subscription{conn: conn}, nil
}

type subscription struct {
	conn *pgx.Conn
}

// Next waits for the next notification.
func (s *subscription) Next(ctx context.Context) ([]byte, error) {
	n, err := s.conn.WaitForNotification(ctx)
	if err != nil {
		return nil, err
	}
	return []byte(n.Payload), nil
}

// Close closes the listening connection.
func (s *subscription) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return s.conn.Close(ctx)
}
