// Package phone is purchased numbers, their contacts, and the checks on
// phone numbers and time zones that every endpoint shares.
package phone

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
	_ "time/tzdata" // schedules and contacts name IANA zones; work without system tzdata

	"github.com/nyaruka/phonenumbers"
)

// Purchase is a number an organization bought from a provider, with the
// assistants that answer and place its calls.
type Purchase struct {
	ID                  string    `json:"id"`
	OrgID               string    `json:"-"`
	Number              string    `json:"number"`
	Provider            string    `json:"provider"`
	InboundAssistantID  string    `json:"inboundAssistantId"`
	OutboundAssistantID string    `json:"outboundAssistantId"`
	Message             string    `json:"message"`
	CreatedAt           time.Time `json:"createdAt"`
	UpdatedAt           time.Time `json:"updatedAt"`
}

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

// NormalizeE164 checks that s is a valid number written in international
// form with a leading plus and returns its canonical E.164 form.
func NormalizeE164(s string) (string, error) {
	s = strings.TrimSpace(s)
	if !strings.HasPrefix(s, "+") {
		return "", fmt.Errorf("must be in international E.164 format with a leading plus, e.g. +14155550123")
	}
	n, err := phonenumbers.Parse(s, "")
	if err != nil {
		return "", fmt.Errorf("is not a phone number: %v", err)
	}
	if !phonenumbers.IsValidNumber(n) {
		return "", fmt.Errorf("is not a valid phone number for its country code")
	}
	return phonenumbers.Format(n, phonenumbers.E164), nil
}

// CheckTimezone reports whether tz is an IANA time zone name such as
// "America/New_York". "UTC" is accepted; "Local" and "" are not.
func CheckTimezone(tz string) error {
	if tz == "" || tz == "Local" || strings.TrimSpace(tz) != tz {
		return fmt.Errorf("must be an IANA time zone name such as America/New_York")
	}
	if _, err := time.LoadLocation(tz); err != nil {
		return fmt.Errorf("unknown time zone %q: use an IANA name such as America/New_York", tz)
	}
	return nil
}
