// Package twiliotest is a fake Twilio on loopback, for the twilio
// package's tests and end-to-end tests of the service: it speaks Twilio's
// documented wire protocols as a real account would see them, written
// here from the documentation rather than from the twilio package (so
// that the two check each other):
//
//   - the REST API (2010-04-01) for one or more accounts, with HTTP Basic
//     authentication (AccountSid:AuthToken) and Twilio's JSON error body:
//     Accounts, AvailablePhoneNumbers/{Country}/Local, IncomingPhoneNumbers
//     (create, list by PhoneNumber, update, delete) and Calls (create,
//     update: Twiml, Status);
//   - the call side: every call created runs a scriptable callee (Callee:
//     busy, no answer, failure, a human, or a machine with an AMD result)
//     that posts signed status callbacks, fetches the call's TwiML (signed
//     POST to its Url) and runs it: <Connect><Stream> opens the Media
//     Streams websocket (signed upgrade) and plays both ways in real time,
//     <Dial> records a transfer, <Hangup/> and <Reject/> end the call;
//   - inbound calls to a bought number (Server.Dial): a signed POST to its
//     VoiceUrl, then its TwiML as above.
//
// Everything a call received (audio, marks echoed, clears, DTMF tones
// heard) is recorded on its Call for assertions. All goroutines belong to
// the Server and end with Close.
//
// Pages cited: "Twilio API responses" (error body), "Webhooks security"
// (X-Twilio-Signature), "Call resource" (create, update, status callback
// parameters, StatusCallbackEvent), "Answering Machine Detection"
// (AnsweredBy), "AvailablePhoneNumber Local resource", "IncomingPhoneNumber
// resource", "TwiML Voice: <Stream>", "TwiML Voice: <Connect>", "TwiML
// Voice: <Dial>", "Media Streams - WebSocket Messages".
package twiliotest

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha1" //nolint:gosec // Twilio's signature is HMAC-SHA1
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// APIVersion is the REST API version of every path and webhook.
const APIVersion = "2010-04-01"

// Error is a REST error as Twilio sends it ("Twilio API responses": a JSON
// body with code, message, more_info and status).
type Error struct {
	Status  int    `json:"status"`
	Code    int    `json:"code"`
	Message string `json:"message"`
	// MoreInfo is the error's page: https://www.twilio.com/docs/errors/<code>.
	MoreInfo string `json:"more_info"`
}

func apiError(status, code int, msg string) *Error {
	return &Error{Status: status, Code: code, Message: msg, MoreInfo: fmt.Sprintf("https://www.twilio.com/docs/errors/%d", code)}
}

// AvailableNumber is a number for sale.
type AvailableNumber struct {
	Number   string // E.164
	Country  string // ISO 3166-1 alpha-2, e.g. US
	Locality string
	Region   string // state or province, e.g. MA
}

// Number is a number an account owns.
type Number struct {
	SID            string
	Number         string
	VoiceURL       string
	VoiceMethod    string
	StatusCallback string
}

type account struct {
	sid, token, name string
	numbers          map[string]*Number // by SID
}

// Server is the fake Twilio. Make it with New; Close it.
type Server struct {
	// URL is the REST API's base URL (http://127.0.0.1:port), to give the
	// twilio package as its API base URL.
	URL string

	srv *httptest.Server
	hc  *http.Client
	// ctx is the server's lifetime (like http.Server's BaseContext): the
	// root of every call's goroutine and request, canceled by Close.
	ctx    context.Context //nolint:containedctx // the server's lifetime, canceled by Close
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu        sync.Mutex
	accounts  map[string]*account
	available []AvailableNumber
	calls     map[string]*Call
	callees   map[string]Callee // by To
	fail      func(r *http.Request) *Error
	newCalls  chan *Call
}

// New starts a fake Twilio on loopback.
func New() *Server {
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{
		hc:       &http.Client{Timeout: 10 * time.Second},
		ctx:      ctx,
		cancel:   cancel,
		accounts: map[string]*account{},
		calls:    map[string]*Call{},
		callees:  map[string]Callee{},
		newCalls: make(chan *Call, 256),
	}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serveREST))
	s.URL = s.srv.URL
	return s
}

// Close ends every call (their streams close), waits for all of the
// fake's goroutines and stops the REST server.
func (s *Server) Close() {
	s.cancel()
	s.wg.Wait()
	s.srv.Close()
	s.hc.CloseIdleConnections()
}

// sid makes a SID: prefix and 32 hex digits.
func sid(prefix string) string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// NewAccount creates an account and returns its Account SID and auth token.
func (s *Server) NewAccount() (accountSID, authToken string) {
	var b [16]byte
	_, _ = rand.Read(b[:])
	a := &account{sid: sid("AC"), token: hex.EncodeToString(b[:]), name: "Test account", numbers: map[string]*Number{}}
	s.mu.Lock()
	s.accounts[a.sid] = a
	s.mu.Unlock()
	return a.sid, a.token
}

// AddAvailable puts numbers up for sale.
func (s *Server) AddAvailable(nums ...AvailableNumber) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.available = append(s.available, nums...)
}

// AddOwned gives account accountSID a number bought outside Switchboard
// (to import), with voiceURL; it returns the number's SID.
func (s *Server) AddOwned(accountSID, number, voiceURL string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.accounts[accountSID]
	if a == nil {
		return ""
	}
	n := &Number{SID: sid("PN"), Number: number, VoiceURL: voiceURL, VoiceMethod: http.MethodPost}
	a.numbers[n.SID] = n
	return n.SID
}

// Numbers lists account accountSID's numbers, by number.
func (s *Server) Numbers(accountSID string) []Number {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Number
	if a := s.accounts[accountSID]; a != nil {
		for _, n := range a.numbers {
			out = append(out, *n)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Number < out[j].Number })
	return out
}

// FailRequests makes the REST API answer fn's error to the requests for
// which it returns one (nil to stop): 5xx, rate limits, refusals.
func (s *Server) FailRequests(fn func(r *http.Request) *Error) {
	s.mu.Lock()
	s.fail = fn
	s.mu.Unlock()
}

// Sign computes X-Twilio-Signature: base64 of HMAC-SHA1 keyed by the auth
// token over the URL followed by the POST parameters sorted by name, each
// name followed by its value ("Webhooks security").
func Sign(token, fullURL string, params url.Values) string {
	keys := make([]string, 0, len(params))
	for k := range params {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString(fullURL)
	for _, k := range keys {
		for _, v := range params[k] {
			b.WriteString(k)
			b.WriteString(v)
		}
	}
	mac := hmac.New(sha1.New, []byte(token))
	mac.Write([]byte(b.String()))
	return base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// post sends a signed webhook (form POST) and returns the response body.
func (s *Server) post(ctx context.Context, token, to string, form url.Values) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, to, strings.NewReader(form.Encode()))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("X-Twilio-Signature", Sign(token, to, form))
	req.Header.Set("User-Agent", "TwilioProxy/1.1")
	res, err := s.hc.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer res.Body.Close()
	var buf strings.Builder
	_, err = copyLimited(&buf, res, 1<<20)
	return res.StatusCode, []byte(buf.String()), err
}

func copyLimited(dst *strings.Builder, res *http.Response, n int64) (int64, error) {
	b := make([]byte, 4096)
	var total int64
	for total < n {
		k, err := res.Body.Read(b)
		dst.Write(b[:k])
		total += int64(k)
		if err != nil {
			return total, nil //nolint:nilerr // EOF or a cut body: what came is the answer
		}
	}
	return total, nil
}

// --- REST ---

var (
	accountPath = regexp.MustCompile(`^/2010-04-01/Accounts/(AC[0-9a-f]{32})(\.json|/.*)$`)
	e164        = regexp.MustCompile(`^\+[1-9][0-9]{7,14}$`)
)

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, e *Error) { writeJSON(w, e.Status, e) }

func (s *Server) serveREST(w http.ResponseWriter, r *http.Request) {
	m := accountPath.FindStringSubmatch(r.URL.Path)
	if m == nil {
		writeError(w, apiError(http.StatusNotFound, 20404, "The requested resource "+r.URL.Path+" was not found"))
		return
	}
	user, pass, ok := r.BasicAuth()
	s.mu.Lock()
	a := s.accounts[m[1]]
	authed := ok && a != nil && user == a.sid && hmac.Equal([]byte(pass), []byte(a.token))
	fail := s.fail
	s.mu.Unlock()
	if !authed {
		w.Header().Set("WWW-Authenticate", `Basic realm="Twilio API"`)
		writeError(w, apiError(http.StatusUnauthorized, 20003, "Authenticate"))
		return
	}
	if fail != nil {
		if e := fail(r); e != nil {
			writeError(w, e)
			return
		}
	}
	if err := r.ParseForm(); err != nil {
		writeError(w, apiError(http.StatusBadRequest, 20001, "Bad form"))
		return
	}
	rest := m[2]
	switch {
	case rest == ".json" && r.Method == http.MethodGet:
		writeJSON(w, http.StatusOK, map[string]any{
			"sid": a.sid, "friendly_name": a.name, "status": "active", "type": "Full",
			"owner_account_sid": a.sid, "uri": "/2010-04-01/Accounts/" + a.sid + ".json",
		})
	case strings.HasPrefix(rest, "/AvailablePhoneNumbers/") && strings.HasSuffix(rest, "/Local.json") && r.Method == http.MethodGet:
		s.searchNumbers(w, r, a, strings.TrimSuffix(strings.TrimPrefix(rest, "/AvailablePhoneNumbers/"), "/Local.json"))
	case rest == "/IncomingPhoneNumbers.json" && r.Method == http.MethodPost:
		s.buyNumber(w, r, a)
	case rest == "/IncomingPhoneNumbers.json" && r.Method == http.MethodGet:
		s.listNumbers(w, r, a)
	case strings.HasPrefix(rest, "/IncomingPhoneNumbers/") && strings.HasSuffix(rest, ".json"):
		s.number(w, r, a, strings.TrimSuffix(strings.TrimPrefix(rest, "/IncomingPhoneNumbers/"), ".json"))
	case rest == "/Calls.json" && r.Method == http.MethodPost:
		s.createCall(w, r, a)
	case strings.HasPrefix(rest, "/Calls/") && strings.HasSuffix(rest, ".json") && r.Method == http.MethodPost:
		s.updateCall(w, r, a, strings.TrimSuffix(strings.TrimPrefix(rest, "/Calls/"), ".json"))
	default:
		writeError(w, apiError(http.StatusNotFound, 20404, "The requested resource "+r.URL.Path+" was not found"))
	}
}

// keypad maps letters of a Contains pattern to digits, as Twilio does
// ("AvailablePhoneNumber Local resource": Contains).
func keypad(c rune) rune {
	const keys = "22233344455566677778889999"
	if c >= 'A' && c <= 'Z' {
		return rune(keys[c-'A'])
	}
	if c >= 'a' && c <= 'z' {
		return rune(keys[c-'a'])
	}
	return c
}

func containsPattern(num, pattern string) bool {
	var p []rune
	for _, c := range pattern {
		p = append(p, keypad(c))
	}
	digits := strings.TrimPrefix(num, "+")
	for i := 0; i+len(p) <= len(digits); i++ {
		ok := true
		for j, c := range p {
			if c != '*' && rune(digits[i+j]) != c {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}

func page(uri string, size int) map[string]any {
	return map[string]any{
		"uri": uri, "first_page_uri": uri, "next_page_uri": nil, "previous_page_uri": nil,
		"page": 0, "page_size": size, "start": 0, "end": 0,
	}
}

func (s *Server) searchNumbers(w http.ResponseWriter, r *http.Request, a *account, country string) {
	q := r.Form
	size := 50
	if n, err := strconv.Atoi(q.Get("PageSize")); err == nil && n > 0 && n <= 1000 {
		size = n
	}
	area := q.Get("AreaCode")
	s.mu.Lock()
	list := []map[string]any{}
	known := false
	for _, n := range s.available {
		if n.Country != country {
			continue
		}
		known = true
		if area != "" && !strings.HasPrefix(n.Number, "+1"+area) {
			continue
		}
		if c := q.Get("Contains"); c != "" && !containsPattern(n.Number, c) {
			continue
		}
		if len(list) == size {
			break
		}
		list = append(list, map[string]any{
			"friendly_name": n.Number, "phone_number": n.Number, "locality": n.Locality, "region": n.Region,
			"iso_country": n.Country, "address_requirements": "none", "beta": false,
			"capabilities": map[string]bool{"voice": true, "sms": true, "mms": true, "fax": false},
		})
	}
	s.mu.Unlock()
	if !known {
		writeError(w, apiError(http.StatusNotFound, 20404, "The requested resource "+r.URL.Path+" was not found"))
		return
	}
	body := page(r.URL.Path, size)
	body["available_phone_numbers"] = list
	body["end"] = max(len(list)-1, 0)
	writeJSON(w, http.StatusOK, body)
}

func numberJSON(a *account, n *Number) map[string]any {
	return map[string]any{
		"sid": n.SID, "account_sid": a.sid, "phone_number": n.Number, "friendly_name": n.Number,
		"voice_url": n.VoiceURL, "voice_method": n.VoiceMethod, "status_callback": n.StatusCallback,
		"status_callback_method": http.MethodPost, "api_version": APIVersion,
		"capabilities": map[string]bool{"voice": true, "sms": true, "mms": true, "fax": false},
		"uri":          "/2010-04-01/Accounts/" + a.sid + "/IncomingPhoneNumbers/" + n.SID + ".json",
	}
}

func (s *Server) buyNumber(w http.ResponseWriter, r *http.Request, a *account) {
	num := r.PostForm.Get("PhoneNumber")
	s.mu.Lock()
	defer s.mu.Unlock()
	idx := -1
	for i, n := range s.available {
		if n.Number == num {
			idx = i
			break
		}
	}
	if idx < 0 {
		writeError(w, apiError(http.StatusBadRequest, 21422, "PhoneNumber "+num+" is not available."))
		return
	}
	s.available = append(s.available[:idx], s.available[idx+1:]...)
	n := &Number{SID: sid("PN"), Number: num, VoiceURL: r.PostForm.Get("VoiceUrl"), VoiceMethod: r.PostForm.Get("VoiceMethod"), StatusCallback: r.PostForm.Get("StatusCallback")}
	if n.VoiceMethod == "" {
		n.VoiceMethod = http.MethodPost
	}
	a.numbers[n.SID] = n
	writeJSON(w, http.StatusCreated, numberJSON(a, n))
}

func (s *Server) listNumbers(w http.ResponseWriter, r *http.Request, a *account) {
	want := r.Form.Get("PhoneNumber")
	s.mu.Lock()
	list := []map[string]any{}
	for _, n := range a.numbers {
		if want == "" || n.Number == want {
			list = append(list, numberJSON(a, n))
		}
	}
	s.mu.Unlock()
	body := page(r.URL.Path, 50)
	body["incoming_phone_numbers"] = list
	writeJSON(w, http.StatusOK, body)
}

func (s *Server) number(w http.ResponseWriter, r *http.Request, a *account, pn string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := a.numbers[pn]
	if n == nil {
		writeError(w, apiError(http.StatusNotFound, 20404, "The requested resource "+r.URL.Path+" was not found"))
		return
	}
	switch r.Method {
	case http.MethodPost:
		if v, ok := r.PostForm["VoiceUrl"]; ok {
			n.VoiceURL = v[0]
		}
		if v, ok := r.PostForm["VoiceMethod"]; ok {
			n.VoiceMethod = v[0]
		}
		if v, ok := r.PostForm["StatusCallback"]; ok {
			n.StatusCallback = v[0]
		}
		writeJSON(w, http.StatusOK, numberJSON(a, n))
	case http.MethodGet:
		writeJSON(w, http.StatusOK, numberJSON(a, n))
	case http.MethodDelete:
		delete(a.numbers, pn)
		w.WriteHeader(http.StatusNoContent)
	default:
		writeError(w, apiError(http.StatusMethodNotAllowed, 20004, "Method not allowed"))
	}
}

// ownerOfLocked returns the account owning number and the number, under s.mu.
func (s *Server) ownerOfLocked(number string) (*account, *Number) {
	for _, a := range s.accounts {
		for _, n := range a.numbers {
			if n.Number == number {
				return a, n
			}
		}
	}
	return nil, nil
}
