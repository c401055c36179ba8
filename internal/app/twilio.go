package app

import (
	"context"
	"log/slog"

	"switchboard/internal/callctl"
	"switchboard/internal/secret"
	"switchboard/internal/store"
	"switchboard/internal/twilio"
)

// newTwilio makes the Twilio provider: organizations' Twilio accounts are
// their connections (auth tokens opened with the server's key), Twilio
// reaches this server at cfg.PublicURL, and the stream tokens are signed
// with a key derived from the secret key, so that any node (and a
// restarted one) accepts them.
func newTwilio(cfg Config, db store.Store, sealer *secret.Sealer, calls *callctl.Service, log *slog.Logger) (*twilio.Provider, error) {
	tc := cfg.Twilio
	tc.PublicURL = cfg.PublicURL
	tc.Sink, tc.Admit, tc.Log = calls.HandleEvent, calls.Admit, log
	if sealer != nil {
		tc.TokenKey = sealer.Digest([]byte("twilio media stream tokens"))
	}
	accounts := twilio.NewAccounts(nil, sealer)
	tc.Accounts = func(ctx context.Context, connID string) (twilio.Account, error) {
		conn, err := db.GetConnectionAnyOrg(ctx, connID)
		if err != nil {
			return twilio.Account{}, err
		}
		return accounts.Account(conn)
	}
	return twilio.New(tc)
}
