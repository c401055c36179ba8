// Package phone holds the domain of an organization's phone numbers and
// whom they call, with the checks that the REST API and the dashboard
// share: purchased numbers (Purchase) and their contacts (Contact, the
// contacts CSV); connections, an organization's own SIP trunks and Twilio
// accounts (addresses, transports, credentials, inbound sources, number
// searches, transfer destinations); the do-not-call list and the opt-out
// phrases that add to it; and E.164 numbers and IANA time zones.
package phone

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/nyaruka/phonenumbers"
)

// Purchase is a number an organization bought from a provider, with the
// assistants that answer and place its calls.
type Purchase struct {
	ID                  string `json:"id"`
	OrgID               string `json:"-"`
	Number              string `json:"number"`
	Provider            string `json:"provider"`
	InboundAssistantID  string `json:"inboundAssistantId"`
	OutboundAssistantID string `json:"outboundAssistantId"`
	Message             string `json:"message"`
	// ConnectionID is the connection the number was bought on (SIP,
	// Twilio), empty for numbers of a provider's inventory (sandbox).
	ConnectionID string `json:"connectionId,omitempty"`
	// Imported is set for a number that was already the account's
	// (Twilio): releasing it gives it back to the account as it was
	// rather than releasing it at the provider.
	Imported  bool      `json:"imported,omitempty"`
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
}

// MaxPurchaseMessage bounds a purchase's Message, in bytes.
const MaxPurchaseMessage = 2000

// Contact is a person a purchased number may call.
type Contact struct {
	ID          string          `json:"id"`
	OrgID       string          `json:"-"`
	PurchaseID  string          `json:"phonePurchaseId"`
	Name        string          `json:"name"`
	PhoneNumber string          `json:"phoneNumber"`
	Timezone    string          `json:"timezone"`
	Metadata    json.RawMessage `json:"metadata"`
	CreatedAt   time.Time       `json:"createdAt"`
}

// NormalizeE164 checks that s is a phone number written in international
// form and returns its E.164 form. Spaces, hyphens and parentheses are
// accepted and dropped (+1 (415) 555-0123); anything else is refused rather
// than guessed at: libphonenumber alone takes "++14155550123" and
// "+14155550123x" (an extension) for numbers. What remains must be a plus
// and 2 to 15 digits, the first not 0, valid for its country code.
func NormalizeE164(s string) (string, error) {
	compact := strings.Map(func(r rune) rune {
		switch r {
		case ' ', '-', '(', ')':
			return -1
		}
		return r
	}, s)
	if !strings.HasPrefix(compact, "+") {
		return "", fmt.Errorf("must be in international E.164 format with a leading plus, e.g. +14155550123")
	}
	if !e164.MatchString(compact) {
		return "", fmt.Errorf("must be a plus and 2 to 15 digits, the first not 0 (spaces, hyphens and parentheses between them are ignored), e.g. +14155550123")
	}
	n, err := phonenumbers.Parse(compact, "")
	if err != nil {
		return "", fmt.Errorf("is not a phone number: %v", err)
	}
	if !phonenumbers.IsValidNumber(n) {
		return "", fmt.Errorf("is not a valid phone number for its country code")
	}
	return phonenumbers.Format(n, phonenumbers.E164), nil
}

// e164 is the shape of an E.164 number: ITU-T E.164 allows at most 15 digits.
var e164 = regexp.MustCompile(`^\+[1-9][0-9]{1,14}$`)
