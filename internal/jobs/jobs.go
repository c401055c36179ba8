// Package jobs is the durable job queue (River) behind scheduled calls and
// the periodic housekeeping. River's client is generic over the database's
// transaction type; this package hides that behind Queue so the rest of the
// service is the same on SQLite and PostgreSQL.
package jobs

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/riverdriver/riversqlite"
	"github.com/riverqueue/river/rivermigrate"
)

// Handlers is the work the queue runs. Fields are set before Start.
type Handlers struct {
	// DialAttempt places the call of one scheduled attempt.
	DialAttempt func(ctx context.Context, attemptID string) error
	// Every runs housekeeping that only one node at a time needs to do
	// (the leader): end lost calls, purge.
	Every func(ctx context.Context) error
}

// Config tunes the queue.
type Config struct {
	// Workers is the number of dial jobs run at once per node.
	Workers int
	// Poll is how often a node looks for due jobs (lateness bound).
	Poll time.Duration
	// HousekeepingEvery is the interval of Handlers.Every.
	HousekeepingEvery time.Duration
	Logger            *slog.Logger
}

// DialArgs is the job that dials one attempt under one lease. Unique by
// both, so inserting a lease's job twice makes one job, while the attempt's
// next lease (its previous one ran out undialed) makes a new one even if
// River still holds the old one as running on a dead node.
type DialArgs struct {
	AttemptID string `json:"attempt_id" river:"unique"`
	Lease     int    `json:"lease,omitempty" river:"unique"`
}

// Kind names the job in the queue's table.
func (DialArgs) Kind() string { return "dial_attempt" }

// InsertOpts makes a dial job unique by its attempt and lease. River's own
// retries (after 1 s, then 16 s) cover a transient error within the lease;
// past it, the attempt's next lease is the retry.
func (DialArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{MaxAttempts: 3, UniqueOpts: river.UniqueOpts{ByArgs: true}}
}

type dialWorker struct {
	river.WorkerDefaults[DialArgs]
	h *Handlers
}

func (w *dialWorker) Work(ctx context.Context, job *river.Job[DialArgs]) error {
	return w.h.DialAttempt(ctx, job.Args.AttemptID)
}

func (w *dialWorker) Timeout(*river.Job[DialArgs]) time.Duration { return time.Minute }

// HousekeepingArgs is the periodic housekeeping job.
type HousekeepingArgs struct{}

// Kind names the job in the queue's table.
func (HousekeepingArgs) Kind() string { return "housekeeping" }

type housekeepingWorker struct {
	river.WorkerDefaults[HousekeepingArgs]
	h *Handlers
}

func (w *housekeepingWorker) Work(ctx context.Context, _ *river.Job[HousekeepingArgs]) error {
	return w.h.Every(ctx)
}

// Queue is a started or startable River client of either database.
type Queue struct {
	insert func(ctx context.Context, params []river.InsertManyParams) error
	start  func(ctx context.Context) error
	stop   func(ctx context.Context) error
	cancel func(ctx context.Context) error
	// stopped returns the channel closed once the queue has stopped.
	stopped func() <-chan struct{}
}

func newQueue[TTx any](driver riverdriver.Driver[TTx], h *Handlers, cfg Config) (*Queue, error) {
	if cfg.Workers <= 0 {
		cfg.Workers = 50
	}
	if cfg.Poll <= 0 {
		cfg.Poll = 200 * time.Millisecond
	}
	if cfg.HousekeepingEvery <= 0 {
		cfg.HousekeepingEvery = 10 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	// River reports its producers' job counts at info every few seconds:
	// only its warnings and errors are worth an operator's log.
	cfg.Logger = slog.New(warnOnly{cfg.Logger.Handler()})
	workers := river.NewWorkers()
	river.AddWorker(workers, &dialWorker{h: h})
	river.AddWorker(workers, &housekeepingWorker{h: h})
	client, err := river.NewClient(driver, &river.Config{
		Queues:            map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: cfg.Workers}},
		Workers:           workers,
		FetchPollInterval: cfg.Poll,
		FetchCooldown:     min(cfg.Poll, 50*time.Millisecond),
		// A job that a dead process left running is retried after this
		// (River's default is an hour). Dials do not wait for it: their
		// attempt's lease runs out first and the attempt is handed out
		// again (internal/scheduling); this only tidies the queue's table
		// sooner. It must exceed the longest job timeout (a minute).
		RescueStuckJobsAfter: 5 * time.Minute,
		Logger:               cfg.Logger,
		PeriodicJobs: []*river.PeriodicJob{
			river.NewPeriodicJob(river.PeriodicInterval(cfg.HousekeepingEvery),
				func() (river.JobArgs, *river.InsertOpts) {
					return HousekeepingArgs{}, &river.InsertOpts{MaxAttempts: 1}
				}, &river.PeriodicJobOpts{RunOnStart: true}),
		},
	})
	if err != nil {
		return nil, fmt.Errorf("jobs: %w", err)
	}
	return &Queue{
		insert: func(ctx context.Context, params []river.InsertManyParams) error {
			_, err := client.InsertMany(ctx, params)
			return err
		},
		start:   client.Start,
		stop:    client.Stop,
		cancel:  client.StopAndCancel,
		stopped: client.Stopped,
	}, nil
}

// NewSQLite makes a queue over the SQLite writer pool.
func NewSQLite(db *sql.DB, h *Handlers, cfg Config) (*Queue, error) {
	return newQueue(riversqlite.New(db), h, cfg)
}

// NewPostgres makes a queue over a pgx pool.
func NewPostgres(pool *pgxpool.Pool, h *Handlers, cfg Config) (*Queue, error) {
	return newQueue[pgx.Tx](riverpgxv5.New(pool), h, cfg)
}

// MigrateSQLite applies River's own migrations.
func MigrateSQLite(ctx context.Context, db *sql.DB) error {
	return migrate(ctx, riversqlite.New(db))
}

// MigratePostgres applies River's own migrations.
func MigratePostgres(ctx context.Context, pool *pgxpool.Pool) error {
	return migrate[pgx.Tx](ctx, riverpgxv5.New(pool))
}

func migrate[TTx any](ctx context.Context, d riverdriver.Driver[TTx]) error {
	m, err := rivermigrate.New(d, nil)
	if err != nil {
		return err
	}
	_, err = m.Migrate(ctx, rivermigrate.DirectionUp, nil)
	return err
}

// Enqueue inserts dial jobs that run at once. (River's own scheduled jobs
// wait for its scheduler, which wakes every 5 s; the scheduling package
// promotes attempts when they come due instead.)
func (q *Queue) Enqueue(ctx context.Context, jobs []DialArgs) error {
	const batch = 500
	for start := 0; start < len(jobs); start += batch {
		chunk := jobs[start:min(start+batch, len(jobs))]
		params := make([]river.InsertManyParams, len(chunk))
		for i, j := range chunk {
			opts := DialArgs{}.InsertOpts()
			params[i] = river.InsertManyParams{Args: j, InsertOpts: &opts}
		}
		if err := q.insert(ctx, params); err != nil {
			return err
		}
	}
	return nil
}

// Start begins working jobs; it returns at once.
func (q *Queue) Start(ctx context.Context) error { return q.start(ctx) }

// Stop waits for running jobs to finish, up to ctx's deadline.
func (q *Queue) Stop(ctx context.Context) error {
	err := q.stop(ctx)
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("jobs: stop: running jobs did not finish in time: %w", err)
	}
	return err
}

// StopAndCancel cancels the context of the jobs still running and waits
// for them to return, up to ctx's deadline: for after a Stop that ran out
// of time, so that no job outlives the queue's database.
func (q *Queue) StopAndCancel(ctx context.Context) error {
	err := q.cancel(ctx)
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("jobs: stop: canceled jobs did not return in time: %w", err)
	}
	return err
}

// Stopped is closed once the started queue has stopped and every job
// returned, whenever that is (after Stop or StopAndCancel ran out of time).
func (q *Queue) Stopped() <-chan struct{} { return q.stopped() }

// warnOnly passes on records of level warn and above.
type warnOnly struct{ slog.Handler }

func (w warnOnly) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelWarn && w.Handler.Enabled(ctx, l)
}

func (w warnOnly) WithAttrs(attrs []slog.Attr) slog.Handler {
	return warnOnly{w.Handler.WithAttrs(attrs)}
}

func (w warnOnly) WithGroup(name string) slog.Handler { return warnOnly{w.Handler.WithGroup(name)} }
