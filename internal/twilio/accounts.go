package twilio

import (
	"context"
	"errors"
	"fmt"

	"switchboard/internal/apperr"
	"switchboard/internal/phone"
	"switchboard/internal/telephony"
)

// Opener opens what the server's secret key sealed (internal/secret.Sealer).
type Opener interface {
	Open(sealed, aad []byte) ([]byte, error)
}

// Accounts does the REST API's work in organizations' Twilio accounts
// (httpapi.TwilioAccounts): credentials checked when a connection is
// created, numbers searched, bought, imported and released. It opens each
// connection's sealed auth token with the server's key, and turns Twilio's
// errors into the API's answers: a 400 naming the field to blame, or a
// 503 naming the cause.
type Accounts struct {
	p       *Provider
	secrets Opener
}

// NewAccounts returns the accounts of p's connections; secrets opens
// their auth tokens.
func NewAccounts(p *Provider, secrets Opener) *Accounts { return &Accounts{p: p, secrets: secrets} }

// Account opens connection conn's account (its SID and auth token).
func (a *Accounts) Account(conn phone.Connection) (Account, error) {
	if conn.Provider != phone.ProviderTwilio || !conn.Twilio.HasAuthToken() {
		return Account{}, apperr.New(apperr.Unavailable, "connection %s is not a Twilio connection with an auth token", conn.ID)
	}
	if a.secrets == nil {
		return Account{}, apperr.New(apperr.Unavailable, "the server has no secret key to open connection %s's auth token", conn.ID)
	}
	token, err := a.secrets.Open(conn.Twilio.SealedAuthToken, []byte(conn.ID))
	if err != nil {
		return Account{}, apperr.Wrap(apperr.Unavailable, fmt.Errorf("connection %s: %w", conn.ID, err),
			"the auth token of connection %s does not open with this server's secret key (was the key changed?)", conn.ID)
	}
	return Account{SID: conn.Twilio.AccountSID, Token: string(token)}, nil
}

func (a *Accounts) client(conn phone.Connection) (*Client, error) {
	acct, err := a.Account(conn)
	if err != nil {
		return nil, err
	}
	c, err := a.p.Client(acct)
	if err != nil {
		return nil, apperr.Wrap(apperr.Unavailable, err, "connection %s cannot reach Twilio", conn.ID)
	}
	return c, nil
}

// Check asks Twilio whether sid and token are an account's credentials.
func (a *Accounts) Check(ctx context.Context, sid, token string) error {
	c, err := a.p.Client(Account{SID: sid, Token: token})
	if err != nil {
		return apperr.Invalidf("twilio.accountSid", "%s", err.Error())
	}
	if _, err := c.CheckCredentials(ctx); err != nil {
		return apiError(err, "twilio.")
	}
	return nil
}

// Search lists local voice numbers for sale in conn's account.
func (a *Accounts) Search(ctx context.Context, conn phone.Connection, q phone.NumberSearch) ([]telephony.Number, error) {
	c, err := a.client(conn)
	if err != nil {
		return nil, err
	}
	nums, err := c.SearchNumbers(ctx, NumberQuery{Country: q.Country, AreaCode: q.AreaCode, Contains: q.Contains})
	if err != nil {
		return nil, apiError(err, "")
	}
	return nums, nil
}

// Buy buys number into conn's account, its calls pointed at this server.
func (a *Accounts) Buy(ctx context.Context, conn phone.Connection, number string) error {
	c, err := a.client(conn)
	if err != nil {
		return err
	}
	if _, err := c.BuyNumber(ctx, number, a.p.VoiceURL(conn.ID), a.p.StatusURL(conn.ID)); err != nil {
		return apiError(err, "")
	}
	return nil
}

// Import points number, already in conn's account, at this server.
func (a *Accounts) Import(ctx context.Context, conn phone.Connection, number string) error {
	c, err := a.client(conn)
	if err != nil {
		return err
	}
	n, err := c.FindNumber(ctx, number)
	if errors.Is(err, ErrNotOwned) {
		return apperr.Invalidf("number", "%s is not a number of Twilio account %s; buy it (leave import out) or import one the account has", number, conn.Twilio.AccountSID)
	}
	if err != nil {
		return apiError(err, "")
	}
	if _, err := c.SetVoiceURL(ctx, n.SID, a.p.VoiceURL(conn.ID), a.p.StatusURL(conn.ID)); err != nil {
		return apiError(err, "")
	}
	return nil
}

// Release releases a bought number at Twilio; an imported one stays in
// the account with its voice URL cleared. A number the account no longer
// has counts as released.
func (a *Accounts) Release(ctx context.Context, conn phone.Connection, number string, imported bool) error {
	c, err := a.client(conn)
	if err != nil {
		return err
	}
	n, err := c.FindNumber(ctx, number)
	if errors.Is(err, ErrNotOwned) {
		return nil
	}
	if err != nil {
		return apiError(err, "")
	}
	if imported {
		_, err = c.SetVoiceURL(ctx, n.SID, "", "")
	} else {
		err = c.ReleaseNumber(ctx, n.SID)
	}
	if err != nil {
		return apiError(err, "")
	}
	return nil
}

// apiError is the API's answer to a failed Twilio request (ClassifyError's
// table): a 400 naming the field to blame (prefixed by prefix, "twilio."
// for a connection's credentials), or a 503 naming the cause. Twilio's own
// code and message are kept for the client: they name no secret.
func apiError(err error, prefix string) error {
	cl := ClassifyError(err)
	cause := "Twilio did not answer"
	var ae *APIError
	if errors.As(err, &ae) {
		cause = fmt.Sprintf("Twilio answered %d", ae.Status)
		if ae.Code != 0 {
			cause += fmt.Sprintf(" (code %d: %s)", ae.Code, ae.Message)
		}
	}
	switch cl.Kind {
	case KindCredentials:
		if prefix != "" {
			return apperr.Invalidf(prefix+"authToken", "Twilio refused the account SID and auth token: %s", cause)
		}
		return apperr.Wrap(apperr.Unavailable, err, "Twilio refused the connection's credentials (%s); if the auth token changed, create the connection again", cause)
	case KindNumberUnavailable:
		return apperr.Invalidf("number", "the number is not available at Twilio: %s; see GET /v1/phone/numbers?provider=twilio", cause)
	case KindRejected, KindNotFound, KindFrom, KindTo:
		return apperr.Wrap(apperr.Unavailable, err, "Twilio refused the request: %s", cause)
	}
	e := apperr.Wrap(apperr.Unavailable, err, "Twilio is unavailable: %s; try again", cause)
	if cl.Kind == KindRateLimited {
		e.Message = "Twilio is rate limiting this account: " + cause + "; try again later"
	}
	return e
}
