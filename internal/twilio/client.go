package twilio

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"

	twclient "github.com/twilio/twilio-go/client"
	api "github.com/twilio/twilio-go/rest/api/v2010"

	"switchboard/internal/telephony"
)

// DefaultAPIBaseURL is Twilio's REST API.
const DefaultAPIBaseURL = "https://api.twilio.com"

// DefaultRequestTimeout bounds one REST request when the caller's context
// has no earlier deadline.
const DefaultRequestTimeout = 10 * time.Second

// maxResponse bounds a REST response body we read (a page of numbers is a
// few tens of kilobytes).
const maxResponse = 1 << 20

// Account is one Twilio account's credentials: its Account SID and auth
// token. The token signs Twilio's webhooks too (see signature.go).
type Account struct {
	SID   string
	Token string // never logged, never put in an error
}

// String names the account without its token.
func (a Account) String() string { return a.SID }

// sidPattern is the shape of Twilio SIDs: two letters and 32 hex digits
// ("Call resource", "IncomingPhoneNumber resource"). SIDs go into request
// paths, so anything else is refused before a request is built.
var sidPattern = regexp.MustCompile(`^[A-Z]{2}[0-9a-fA-F]{32}$`)

func validSID(prefix, sid string) bool {
	return strings.HasPrefix(sid, prefix) && sidPattern.MatchString(sid)
}

// Client is the REST client of one Twilio account. It is cheap to make
// (one per request is fine) and safe for concurrent use.
//
// It is built on github.com/twilio/twilio-go's generated API (request
// parameters, paths and response models of the 2010-04-01 API), with our
// own transport underneath (twilio-go's client.BaseClient): twilio-go's
// ApiService has its base URL fixed to https://api.twilio.com and sends
// every request with context.Background(), reads TWILIO_EDGE and
// TWILIO_REGION from the environment, and reads response bodies without a
// bound. Our transport rewrites the base URL (so tests can point it at
// twiliotest on loopback), carries the caller's context (cancellation and
// deadlines), bounds the body, and turns Twilio's JSON error body into an
// *APIError.
type Client struct {
	acct Account
	base *url.URL
	http *http.Client
}

// NewClient returns a client of acct at baseURL ("" means
// DefaultAPIBaseURL) using hc (nil: a client with DefaultRequestTimeout).
func NewClient(acct Account, baseURL string, hc *http.Client) (*Client, error) {
	if !validSID("AC", acct.SID) {
		return nil, errors.New("twilio: the account SID must be AC followed by 32 hex digits")
	}
	if acct.Token == "" {
		return nil, errors.New("twilio: the auth token is empty")
	}
	if baseURL == "" {
		baseURL = DefaultAPIBaseURL
	}
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("twilio: the API base URL must be an http(s) URL, got %q", baseURL)
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	if hc == nil {
		hc = &http.Client{Timeout: DefaultRequestTimeout}
	}
	// Twilio answers some fetches with redirects; the generated code
	// expects the last response as it is (twilio-go's default client).
	cp := *hc
	cp.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &Client{acct: acct, base: u, http: &cp}, nil
}

// AccountSID is the client's account.
func (c *Client) AccountSID() string { return c.acct.SID }

// service is twilio-go's API bound to ctx for one call.
func (c *Client) service(ctx context.Context) *api.ApiService {
	// A RequestHandler made by hand has no edge or region (NewRequestHandler
	// would read them from the environment).
	return api.NewApiService(&twclient.RequestHandler{Client: &transport{ctx: ctx, c: c}})
}

// transport is twilio-go's client.BaseClient over c, for one context. It
// holds the context because BaseClient.SendRequest takes none: a transport
// lives for one Client method call.
type transport struct {
	ctx context.Context //nolint:containedctx // see above: twilio-go's BaseClient has no context parameter
	c   *Client
}

func (t *transport) AccountSid() string       { return t.c.acct.SID }
func (t *transport) SetTimeout(time.Duration) {}
func (t *transport) SetOauth(twclient.OAuth)  {}
func (t *transport) OAuth() twclient.OAuth    { return nil }
func (t *transport) userAgent() string {
	return "switchboard (twilio-go " + twclient.LibraryVersion + ")"
}
func (t *transport) rewrite(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("twilio: request URL: %w", err)
	}
	u.Scheme, u.Host, u.User = t.c.base.Scheme, t.c.base.Host, nil
	u.Path = t.c.base.Path + u.Path
	u.RawPath = ""
	return u, nil
}

// SendRequest sends one request of the generated API. data goes in the
// query of GET and DELETE and as a form body otherwise, as twilio-go does.
func (t *transport) SendRequest(method, rawURL string, data url.Values, headers map[string]any, body ...byte) (*http.Response, error) {
	u, err := t.rewrite(rawURL)
	if err != nil {
		return nil, err
	}
	var rd io.Reader
	switch method {
	case http.MethodGet, http.MethodDelete:
		if len(data) > 0 {
			u.RawQuery = data.Encode()
		}
	default:
		rd = strings.NewReader(data.Encode())
	}
	// The caller's deadline, else DefaultRequestTimeout; the body's Close
	// releases the context.
	ctx, cancel := t.ctx, context.CancelFunc(func() {})
	if _, ok := ctx.Deadline(); !ok {
		ctx, cancel = context.WithTimeout(ctx, DefaultRequestTimeout)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), rd)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("twilio: %s %s: %w", method, u.Path, err)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", t.userAgent())
	req.SetBasicAuth(t.c.acct.SID, t.c.acct.Token)
	res, err := t.c.http.Do(req)
	if err != nil {
		cancel()
		// net/http errors name the URL, which holds no credentials (they
		// travel in the Authorization header).
		return nil, &TransportError{Method: method, Path: u.Path, Err: err}
	}
	if res.StatusCode < 200 || res.StatusCode >= 400 {
		defer cancel()
		defer res.Body.Close()
		return nil, decodeAPIError(res)
	}
	res.Body = &limitedBody{Reader: io.LimitReader(res.Body, maxResponse), body: res.Body, cancel: cancel}
	return res, nil
}

// limitedBody bounds a response body and releases its context on Close.
type limitedBody struct {
	io.Reader
	body   io.Closer
	cancel context.CancelFunc
}

func (b *limitedBody) Close() error {
	err := b.body.Close()
	b.cancel()
	return err
}

// TransportError is a REST request that got no answer from Twilio: a
// network failure or a timeout. It is retryable (ClassifyError).
type TransportError struct {
	Method, Path string
	Err          error
}

func (e *TransportError) Error() string {
	return fmt.Sprintf("twilio: %s %s: %v", e.Method, e.Path, e.Err)
}

func (e *TransportError) Unwrap() error { return e.Err }

// APIError is Twilio's answer to a failed request: the HTTP status and the
// JSON error body ({"code", "message", "more_info", "status"}, see "Twilio
// API responses", https://www.twilio.com/docs/usage/twilios-response and
// the error dictionary, https://www.twilio.com/docs/api/errors).
type APIError struct {
	Status   int    `json:"status"`
	Code     int    `json:"code"`
	Message  string `json:"message"`
	MoreInfo string `json:"more_info"`
}

func (e *APIError) Error() string {
	msg := fmt.Sprintf("twilio: HTTP %d", e.Status)
	if e.Code != 0 {
		msg += fmt.Sprintf(", error %d", e.Code)
	}
	if e.Message != "" {
		msg += ": " + e.Message
	}
	return msg
}

func decodeAPIError(res *http.Response) *APIError {
	e := &APIError{}
	b, _ := io.ReadAll(io.LimitReader(res.Body, 64<<10))
	if json.Unmarshal(b, e) != nil || e.Message == "" {
		e.Message = http.StatusText(res.StatusCode)
	}
	e.Status = res.StatusCode // the HTTP status wins over the body's
	return e
}

// Twilio error codes the classifier knows (https://www.twilio.com/docs/api/errors).
const (
	CodeAuthenticate        = 20003 // "Authentication Error"
	CodeNotFound            = 20404 // "The requested resource was not found"
	CodeTooManyRequests     = 20429
	CodeInvalidFrom         = 21212 // "Invalid 'From' Phone Number"
	CodeFromNotVerified     = 21210 // "'From' phone number not verified"
	CodeInvalidTo           = 21211 // "Invalid 'To' Phone Number"
	CodeToUnreachable       = 21214 // "'To' phone number cannot be reached"
	CodeGeoPermission       = 21215 // "Geo Permission configuration is not permitting call"
	CodeToNotValid          = 21217 // "Phone number does not appear to be valid"
	CodeCallNotInProgress   = 21220 // "Invalid call state" (update of an ended call)
	CodeNumberInvalid       = 21421 // "PhoneNumber is invalid"
	CodeNumberNotAvailable  = 21422 // "PhoneNumber is not available"
	CodeAccountNotActive    = 20005 // "Account not active"
	CodeQueueOverflow       = 30001
	CodeInternalServerError = 20500
)

// ErrorKind is what a failed request concerns, for the REST layer's answer.
type ErrorKind string

const (
	// KindCredentials: the account SID or auth token is wrong (or the
	// account is suspended); the field to blame is the auth token.
	KindCredentials ErrorKind = "credentials"
	// KindNumberUnavailable: the number to buy is taken or not offered.
	KindNumberUnavailable ErrorKind = "number-unavailable"
	// KindFrom: the caller id (a number of the account) was refused.
	KindFrom ErrorKind = "from"
	// KindTo: the destination is not a valid or reachable number.
	KindTo ErrorKind = "to"
	// KindNotFound: the number or call does not exist in the account.
	KindNotFound ErrorKind = "not-found"
	// KindRateLimited: Twilio asked us to slow down (retryable).
	KindRateLimited ErrorKind = "rate-limited"
	// KindUnavailable: Twilio failed (5xx) or did not answer (retryable).
	KindUnavailable ErrorKind = "unavailable"
	// KindRejected: any other refusal of the request.
	KindRejected ErrorKind = "rejected"
)

// ErrorClass is ClassifyError's verdict.
type ErrorClass struct {
	Kind ErrorKind
	// Field is the request field the error concerns, in the names of
	// Switchboard's API: "authToken", "number", "from", "to"; empty when
	// it concerns none.
	Field string
	// Retryable: the same request may succeed later.
	Retryable bool
	// Status and Code are Twilio's (0 when there was no answer).
	Status, Code int
}

// ClassifyError says what err, from a Client method, concerns. The table
// (one place):
//
//	401, 20003, 20005                  credentials        authToken
//	21421, 21422                       number-unavailable number
//	21210, 21212                       from               from
//	21211, 21214, 21215, 21217         to                 to
//	404, 20404                         not-found
//	429, 20429                         rate-limited                   retryable
//	5xx, no answer, timeout            unavailable                    retryable
//	other 4xx                          rejected
func ClassifyError(err error) ErrorClass {
	var ae *APIError
	if !errors.As(err, &ae) {
		var te *TransportError
		if errors.As(err, &te) || errors.Is(err, context.DeadlineExceeded) {
			return ErrorClass{Kind: KindUnavailable, Retryable: true}
		}
		var ne net.Error
		if errors.As(err, &ne) {
			return ErrorClass{Kind: KindUnavailable, Retryable: true}
		}
		return ErrorClass{Kind: KindRejected}
	}
	c := ErrorClass{Status: ae.Status, Code: ae.Code}
	switch {
	case ae.Status == http.StatusUnauthorized || ae.Code == CodeAuthenticate || ae.Code == CodeAccountNotActive:
		c.Kind, c.Field = KindCredentials, "authToken"
	case ae.Code == CodeNumberNotAvailable || ae.Code == CodeNumberInvalid:
		c.Kind, c.Field = KindNumberUnavailable, "number"
	case ae.Code == CodeFromNotVerified || ae.Code == CodeInvalidFrom:
		c.Kind, c.Field = KindFrom, "from"
	case ae.Code == CodeInvalidTo || ae.Code == CodeToUnreachable || ae.Code == CodeToNotValid || ae.Code == CodeGeoPermission:
		c.Kind, c.Field = KindTo, "to"
	case ae.Status == http.StatusNotFound || ae.Code == CodeNotFound:
		c.Kind = KindNotFound
	case ae.Status == http.StatusTooManyRequests || ae.Code == CodeTooManyRequests:
		c.Kind, c.Retryable = KindRateLimited, true
	case ae.Status >= 500:
		c.Kind, c.Retryable = KindUnavailable, true
	default:
		c.Kind = KindRejected
	}
	return c
}

// AccountInfo is what CheckCredentials learns of the account.
type AccountInfo struct {
	SID          string
	FriendlyName string
	// Status is active, suspended or closed.
	Status string
}

// CheckCredentials fetches the account ("Account resource",
// https://www.twilio.com/docs/iam/api/account): it fails with an
// *APIError of KindCredentials when the SID or token is wrong, and with
// an error of KindCredentials too when the account is not active.
func (c *Client) CheckCredentials(ctx context.Context) (AccountInfo, error) {
	a, err := c.service(ctx).FetchAccount(c.acct.SID)
	if err != nil {
		return AccountInfo{}, fmt.Errorf("twilio: checking the credentials of account %s: %w", c.acct.SID, err)
	}
	info := AccountInfo{SID: str(a.Sid), FriendlyName: str(a.FriendlyName), Status: str(a.Status)}
	if info.Status != "" && info.Status != "active" {
		return info, fmt.Errorf("twilio: account %s is %s: %w", c.acct.SID, info.Status,
			&APIError{Status: http.StatusUnauthorized, Code: CodeAccountNotActive, Message: "Account not active"})
	}
	return info, nil
}

func str(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// NumberQuery filters a search of local numbers for sale
// ("AvailablePhoneNumber Local resource",
// https://www.twilio.com/docs/phone-numbers/api/availablephonenumberlocal-resource).
type NumberQuery struct {
	// Country is the ISO 3166-1 alpha-2 country, e.g. US (required).
	Country string
	// AreaCode restricts to one area code (US and Canada), 0 for any.
	AreaCode int
	// Contains is a pattern of digits and letters, * for any one digit.
	Contains string
	// Limit is the most numbers returned (1-50, default 20).
	Limit int
}

var countryPattern = regexp.MustCompile(`^[A-Z]{2}$`)

// SearchNumbers lists local voice numbers for sale in one page of Twilio's
// answer (Twilio returns at most 30 numbers and no further pages for a
// search, so one page is all there is).
func (c *Client) SearchNumbers(ctx context.Context, q NumberQuery) ([]telephony.Number, error) {
	country := strings.ToUpper(q.Country)
	if !countryPattern.MatchString(country) {
		return nil, fmt.Errorf("twilio: country must be an ISO 3166-1 alpha-2 code such as US, got %q", q.Country)
	}
	limit := q.Limit
	if limit <= 0 || limit > 50 {
		limit = 20
	}
	params := &api.ListAvailablePhoneNumberLocalParams{}
	params.SetPageSize(limit)
	params.SetVoiceEnabled(true)
	if q.AreaCode > 0 {
		params.SetAreaCode(q.AreaCode)
	}
	if q.Contains != "" {
		params.SetContains(q.Contains)
	}
	page, err := c.service(ctx).PageAvailablePhoneNumberLocal(country, params, "", "")
	if err != nil {
		return nil, fmt.Errorf("twilio: searching numbers in %s: %w", country, err)
	}
	out := make([]telephony.Number, 0, len(page.AvailablePhoneNumbers))
	for _, n := range page.AvailablePhoneNumbers {
		if len(out) == limit {
			break
		}
		num := telephony.Number{Number: str(n.PhoneNumber), Provider: Name, Region: str(n.IsoCountry), Capabilities: []string{"voice"}}
		if num.Region == "" {
			num.Region = country
		}
		num.Locality = str(n.Locality)
		if r := str(n.Region); r != "" {
			if num.Locality != "" {
				num.Locality += ", "
			}
			num.Locality += r
		}
		out = append(out, num)
	}
	return out, nil
}

// OwnedNumber is a number of the account ("IncomingPhoneNumber resource",
// https://www.twilio.com/docs/phone-numbers/api/incomingphonenumber-resource).
type OwnedNumber struct {
	SID            string // PN…
	Number         string // E.164
	VoiceURL       string
	StatusCallback string
}

func owned(n *api.ApiV2010IncomingPhoneNumber) OwnedNumber {
	return OwnedNumber{SID: str(n.Sid), Number: str(n.PhoneNumber), VoiceURL: str(n.VoiceUrl), StatusCallback: str(n.StatusCallback)}
}

// BuyNumber buys number (E.164) for the account and points its voice
// webhook at voiceURL (POST) and its status callback at statusCallback
// (POST; "" for none). A number someone else bought first fails with
// KindNumberUnavailable (21422).
func (c *Client) BuyNumber(ctx context.Context, number, voiceURL, statusCallback string) (OwnedNumber, error) {
	params := &api.CreateIncomingPhoneNumberParams{}
	params.SetPhoneNumber(number)
	params.SetVoiceUrl(voiceURL)
	params.SetVoiceMethod(http.MethodPost)
	if statusCallback != "" {
		params.SetStatusCallback(statusCallback)
		params.SetStatusCallbackMethod(http.MethodPost)
	}
	n, err := c.service(ctx).CreateIncomingPhoneNumber(params)
	if err != nil {
		return OwnedNumber{}, fmt.Errorf("twilio: buying %s: %w", number, err)
	}
	return owned(n), nil
}

// ErrNotOwned is returned by FindNumber for a number the account does not
// have.
var ErrNotOwned = errors.New("twilio: the number is not one of the account's")

// FindNumber finds number (E.164) among the account's numbers, to import
// a number bought outside Switchboard.
func (c *Client) FindNumber(ctx context.Context, number string) (OwnedNumber, error) {
	params := &api.ListIncomingPhoneNumberParams{}
	params.SetPhoneNumber(number)
	params.SetPageSize(20)
	page, err := c.service(ctx).PageIncomingPhoneNumber(params, "", "")
	if err != nil {
		return OwnedNumber{}, fmt.Errorf("twilio: looking up %s: %w", number, err)
	}
	for i := range page.IncomingPhoneNumbers {
		// The filter matches patterns too: keep the exact number.
		if n := &page.IncomingPhoneNumbers[i]; str(n.PhoneNumber) == number {
			return owned(n), nil
		}
	}
	return OwnedNumber{}, fmt.Errorf("%w: %s", ErrNotOwned, number)
}

// SetVoiceURL points an owned number's voice webhook at voiceURL (POST)
// and its status callback at statusCallback ("" leaves it).
func (c *Client) SetVoiceURL(ctx context.Context, numberSID, voiceURL, statusCallback string) (OwnedNumber, error) {
	if !validSID("PN", numberSID) {
		return OwnedNumber{}, fmt.Errorf("twilio: %q is not a phone number SID (PN…)", numberSID)
	}
	params := &api.UpdateIncomingPhoneNumberParams{}
	params.SetVoiceUrl(voiceURL)
	params.SetVoiceMethod(http.MethodPost)
	if statusCallback != "" {
		params.SetStatusCallback(statusCallback)
		params.SetStatusCallbackMethod(http.MethodPost)
	}
	n, err := c.service(ctx).UpdateIncomingPhoneNumber(numberSID, params)
	if err != nil {
		return OwnedNumber{}, fmt.Errorf("twilio: setting the voice URL of %s: %w", numberSID, err)
	}
	return owned(n), nil
}

// ReleaseNumber gives an owned number back to Twilio. A number already
// gone (404) counts as released.
func (c *Client) ReleaseNumber(ctx context.Context, numberSID string) error {
	if !validSID("PN", numberSID) {
		return fmt.Errorf("twilio: %q is not a phone number SID (PN…)", numberSID)
	}
	err := c.service(ctx).DeleteIncomingPhoneNumber(numberSID, nil)
	if err != nil && ClassifyError(err).Kind != KindNotFound {
		return fmt.Errorf("twilio: releasing %s: %w", numberSID, err)
	}
	return nil
}

// CallStatusEvents are the status callback events a call asks for
// ("Call resource", StatusCallbackEvent: each in its own parameter).
var CallStatusEvents = []string{"initiated", "ringing", "answered", "completed"}

// CallParams is a call to create ("Call resource", "Create a Call
// resource", https://www.twilio.com/docs/voice/api/call-resource).
type CallParams struct {
	To, From string
	// URL is fetched (POST) for the call's TwiML once it is answered
	// (after answering machine detection, with AnsweredBy). If both URL
	// and Twiml are set, Twilio ignores Twiml.
	URL   string
	Twiml string
	// StatusCallback receives CallStatusEvents (POST).
	StatusCallback string
	// MachineDetection is "", "Enable" or "DetectMessageEnd".
	MachineDetection string
	// Timeout is how long the call may ring (Twilio: 60 s default, 600
	// at most); 0 leaves Twilio's default.
	Timeout time.Duration
}

// CallInfo is a created or updated call.
type CallInfo struct {
	SID    string // CA…
	Status string
}

// CreateCall places a call. Refusals of the numbers are classified
// KindFrom and KindTo (ClassifyError).
func (c *Client) CreateCall(ctx context.Context, p CallParams) (CallInfo, error) {
	params := &api.CreateCallParams{}
	params.SetTo(p.To)
	params.SetFrom(p.From)
	if p.URL != "" {
		params.SetUrl(p.URL)
		params.SetMethod(http.MethodPost)
	} else {
		params.SetTwiml(p.Twiml)
	}
	if p.StatusCallback != "" {
		params.SetStatusCallback(p.StatusCallback)
		params.SetStatusCallbackMethod(http.MethodPost)
		params.SetStatusCallbackEvent(CallStatusEvents)
	}
	if p.MachineDetection != "" {
		params.SetMachineDetection(p.MachineDetection)
	}
	if p.Timeout > 0 {
		params.SetTimeout(int(min(p.Timeout, 600*time.Second) / time.Second))
	}
	call, err := c.service(ctx).CreateCall(params)
	if err != nil {
		return CallInfo{}, fmt.Errorf("twilio: calling %s from %s: %w", p.To, p.From, err)
	}
	return CallInfo{SID: str(call.Sid), Status: str(call.Status)}, nil
}

// CallUpdate changes a live call: new TwiML (a transfer's <Dial>), or
// Status "completed" (hang up an answered call) or "canceled" (stop a
// queued or ringing one).
type CallUpdate struct {
	Twiml  string
	Status string
}

// UpdateCall applies u to call callSID. Updating a call that has ended
// fails with code 21220.
func (c *Client) UpdateCall(ctx context.Context, callSID string, u CallUpdate) (CallInfo, error) {
	if !validSID("CA", callSID) {
		return CallInfo{}, fmt.Errorf("twilio: %q is not a call SID (CA…)", callSID)
	}
	params := &api.UpdateCallParams{}
	if u.Twiml != "" {
		params.SetTwiml(u.Twiml)
	}
	if u.Status != "" {
		params.SetStatus(u.Status)
	}
	call, err := c.service(ctx).UpdateCall(callSID, params)
	if err != nil {
		return CallInfo{}, fmt.Errorf("twilio: updating call %s: %w", callSID, err)
	}
	return CallInfo{SID: str(call.Sid), Status: str(call.Status)}, nil
}

// callEnded reports whether err says the call is already over (an update
// of an ended call).
func callEnded(err error) bool {
	var ae *APIError
	return errors.As(err, &ae) && (ae.Code == CodeCallNotInProgress || ae.Status == http.StatusNotFound)
}
