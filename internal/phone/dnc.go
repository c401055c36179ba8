package phone

import (
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"

	"switchboard/internal/apperr"
	"switchboard/internal/jsontext"
)

// DNCEntry is one number on an organization's do-not-call list: the
// dialer places no outbound call to it (the dial's claim checks the list,
// see store.Calls.CreateCall).
type DNCEntry struct {
	OrgID  string `json:"-"`
	Number string `json:"number"` // E.164
	Reason string `json:"reason"`
	// Source is how the number came on the list: DNCSourceAPI (someone
	// added it) or DNCSourceOptOut (the caller said an opt-out phrase).
	Source string `json:"source"`
	// CallID is the evidence of an opt-out: the call in which the caller
	// said it. Empty for numbers added through the API.
	CallID    string    `json:"callId,omitempty"`
	CreatedAt time.Time `json:"createdAt"`
}

// Sources of a DNCEntry.
const (
	DNCSourceAPI    = "api"
	DNCSourceOptOut = "opt-out"
)

// Bounds of the do-not-call list's requests.
const (
	// MaxDNCPerRequest bounds the numbers of one add.
	MaxDNCPerRequest = 1000
	// MaxDNCReason bounds an entry's reason, in bytes.
	MaxDNCReason = 500
	// MaxDNCSearch bounds a listing's search text.
	MaxDNCSearch = 16
)

// SuppressedCode is the error code of a dial to a listed number
// (apperr.Error.Code, sent as error.code).
const SuppressedCode = "suppressed"

// Suppressed is the error of a dial to a number on the organization's
// do-not-call list: a Conflict with code "suppressed" naming phoneNumber
// (the field of POST /v1/calls/phone/initiate).
func Suppressed(number string) error {
	return &apperr.Error{Kind: apperr.Conflict, Code: SuppressedCode,
		Message: fmt.Sprintf("%s is on the organization's do-not-call list; the call was not placed", number),
		Fields:  []apperr.FieldError{{Field: "phoneNumber", Message: "is on the do-not-call list (DELETE /v1/phone/dnc/{number} removes it)"}}}
}

// IsSuppressed reports whether err is the error of a dial to a listed number.
func IsSuppressed(err error) bool {
	var e *apperr.Error
	return errors.As(err, &e) && e.Kind == apperr.Conflict && e.Code == SuppressedCode
}

// CheckDNCNumbers validates and normalizes the numbers of an add (field
// names numbers[i]); it returns them in E.164, each once, in order, with
// the index in numbers of each (a repeated number keeps its first place).
func CheckDNCNumbers(numbers []string, errs *apperr.Fields) (out []string, at []int) {
	if len(numbers) == 0 {
		if !errs.Has("numbers") {
			errs.Add("numbers", "must hold at least one number")
		}
		return nil, nil
	}
	if len(numbers) > MaxDNCPerRequest {
		errs.Add("numbers", "must hold at most %d numbers per request", MaxDNCPerRequest)
		return nil, nil
	}
	seen := make(map[string]bool, len(numbers))
	for i, n := range numbers {
		e164, err := NormalizeE164(n)
		if err != nil {
			errs.Add(fmt.Sprintf("numbers[%d]", i), "%s", err.Error())
			continue
		}
		if !seen[e164] {
			seen[e164] = true
			out, at = append(out, e164), append(at, i)
		}
	}
	return out, at
}

// CheckDNCReason checks an add's reason (field reason).
func CheckDNCReason(reason string, errs *apperr.Fields) {
	if len(reason) > MaxDNCReason {
		errs.Add("reason", "must be at most %d bytes", MaxDNCReason)
	} else if p := jsontext.TextProblem(reason); p != "" {
		errs.Add("reason", "%s", p)
	}
}

// CheckDNCSearch checks a listing's search text (field search): digits,
// optionally after a leading plus, matched anywhere in the number.
func CheckDNCSearch(search string, errs *apperr.Fields) {
	digits := strings.TrimPrefix(search, "+")
	ok := len(search) <= MaxDNCSearch && digits != ""
	for _, r := range digits {
		if r < '0' || r > '9' {
			ok = false
		}
	}
	if search != "" && !ok {
		errs.Add("search", "must be digits, optionally after a leading plus, at most %d characters (e.g. +1415 or 5550123)", MaxDNCSearch)
	}
}

// NormalizePhrase is text as opt-out phrases are matched: lower case,
// every run of characters other than letters and digits one space, an
// apostrophe dropped ("Don't call me!" → "dont call me").
func NormalizePhrase(s string) string {
	var b strings.Builder
	space := true // no leading space
	for _, r := range strings.ToLower(s) {
		switch {
		case r == '\'' || r == '\u2019':
			continue
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
			space = false
		case !space:
			b.WriteByte(' ')
			space = true
		}
	}
	return strings.TrimSuffix(b.String(), " ")
}

// SaysOptOut reports whether a caller's turn says one of phrases (each
// matched as whole words, after NormalizePhrase of both).
func SaysOptOut(turn string, phrases []string) bool { return NewOptOuts(phrases).Said(turn) }

// OptOuts are opt-out phrases normalized once, for matching every caller
// turn of a call.
type OptOuts []string

// NewOptOuts normalizes phrases (NormalizePhrase), dropping blank ones.
func NewOptOuts(phrases []string) OptOuts {
	out := make(OptOuts, 0, len(phrases))
	for _, p := range phrases {
		if p = NormalizePhrase(p); p != "" {
			out = append(out, " "+p+" ")
		}
	}
	return out
}

// Said reports whether turn says one of the phrases, as whole words.
func (o OptOuts) Said(turn string) bool {
	if len(o) == 0 {
		return false
	}
	t := " " + NormalizePhrase(turn) + " "
	for _, p := range o {
		if strings.Contains(t, p) {
			return true
		}
	}
	return false
}
