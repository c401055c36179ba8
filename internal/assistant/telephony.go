package assistant

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"regexp"
	"strconv"
	"strings"

	"switchboard/internal/apperr"
	"switchboard/internal/phone"
)

// Transfer is where the assistant may hand a call over (a cold transfer:
// the assistant leaves the call). A model chooses among Destinations with
// the built-in transferCall tool; a flow's transfer node names one of them
// or a destination of its own.
type Transfer struct {
	Destinations []TransferDestination `json:"destinations"`
}

// TransferDestination is one place a call may be transferred to.
type TransferDestination struct {
	// Destination is a phone number in E.164 form or a sip:/sips: URI.
	Destination string `json:"destination"`
	// Description tells the model when to choose this destination.
	Description string `json:"description"`
	// Message is said to the caller just before the transfer; empty: none.
	Message string `json:"message"`
}

// MarshalJSON shows a missing list (assistants stored before transfers
// existed) as an empty one.
func (t Transfer) MarshalJSON() ([]byte, error) {
	type plain Transfer
	if t.Destinations == nil {
		t.Destinations = []TransferDestination{}
	}
	return json.Marshal(plain(t))
}

// Find returns the configured destination equal to dest.
func (t Transfer) Find(dest string) (TransferDestination, bool) {
	for _, d := range t.Destinations {
		if d.Destination == dest {
			return d, true
		}
	}
	return TransferDestination{}, false
}

// Recording says whether the assistant's calls are recorded (a two-channel
// WAV: the caller left, the assistant right).
type Recording struct {
	Enabled bool `json:"enabled"`
}

// Voicemail says what the assistant does when an outbound call reaches an
// answering machine: hang up, or leave Message after the beep and then
// hang up.
type Voicemail struct {
	// Detect turns answering-machine detection on for the assistant's
	// outbound phone calls (off by default: a person who answers with a
	// long sentence can be taken for a machine; docs/telephony.md).
	Detect bool `json:"detect"`
	// Action is VoicemailHangup (the default; empty means it too) or
	// VoicemailLeaveMessage.
	Action string `json:"action"`
	// Message is what is left on the machine; required for leaveMessage.
	Message string `json:"message"`
}

// Voicemail actions.
const (
	VoicemailHangup       = "hangup"
	VoicemailLeaveMessage = "leaveMessage"
)

// LeavesMessage reports whether a message is to be left on a machine.
func (v Voicemail) LeavesMessage() bool { return v.Action == VoicemailLeaveMessage }

// MarshalJSON shows the default action of assistants stored before the
// setting existed.
func (v Voicemail) MarshalJSON() ([]byte, error) {
	type plain Voicemail
	if v.Action == "" {
		v.Action = VoicemailHangup
	}
	return json.Marshal(plain(v))
}

// Bounds of the telephony settings.
const (
	MaxTransferDestinations = 10
	MaxDescriptionLen       = 1000
	MaxCallMessageLen       = 1000
	maxSIPURILen            = 256
)

// validateTelephony checks transfer and voicemail.
func (a *Assistant) validateTelephony(f *apperr.Fields) {
	ds := a.Transfer.Destinations
	if len(ds) > MaxTransferDestinations {
		f.Add("transfer.destinations", "must hold at most %d destinations, not %d", MaxTransferDestinations, len(ds))
	}
	seen := map[string]int{}
	for i, d := range ds {
		field := "transfer.destinations[" + strconv.Itoa(i) + "]."
		if err := CheckDestination(d.Destination); err != nil {
			f.Add(field+"destination", "%s", err.Error())
		} else if j, dup := seen[d.Destination]; dup {
			f.Add(field+"destination", "repeats transfer.destinations[%d].destination %q", j, d.Destination)
		} else {
			seen[d.Destination] = i
		}
		if len(d.Description) > MaxDescriptionLen {
			f.Add(field+"description", "must be at most %d bytes", MaxDescriptionLen)
		}
		if len(d.Message) > MaxCallMessageLen {
			f.Add(field+"message", "must be at most %d bytes", MaxCallMessageLen)
		}
	}
	v := a.Voicemail
	switch v.Action {
	case "", VoicemailHangup, VoicemailLeaveMessage:
	default:
		f.Add("voicemail.action", "must be %q or %q, not %q", VoicemailHangup, VoicemailLeaveMessage, v.Action)
	}
	switch {
	case len(v.Message) > MaxCallMessageLen:
		f.Add("voicemail.message", "must be at most %d bytes", MaxCallMessageLen)
	case v.LeavesMessage() && strings.TrimSpace(v.Message) == "":
		f.Add("voicemail.message", "is required and must not be blank when action is %q", VoicemailLeaveMessage)
	}
}

// CheckDestination reports whether dest is a destination a call can be
// transferred to: a phone number written exactly in E.164 form
// (+16175550123, valid for its country code), or a sip: or sips: URI
// (sip:desk@pbx.example.com, sip:+16175550123@trunk.example.com:5060;transport=tcp)
// without a password or headers.
func CheckDestination(dest string) error {
	lower := strings.ToLower(dest)
	switch {
	case dest == "":
		return fmt.Errorf("is required: a phone number in E.164 form (+16175550123) or a SIP URI (sip:desk@pbx.example.com)")
	case strings.HasPrefix(dest, "+"):
		n, err := phone.NormalizeE164(dest)
		if err != nil {
			return err
		}
		if n != dest {
			return fmt.Errorf("must be written in E.164 form without spaces or punctuation: %s", n)
		}
		return nil
	case strings.HasPrefix(lower, "sip:"):
		return checkSIPURI(dest[len("sip:"):])
	case strings.HasPrefix(lower, "sips:"):
		return checkSIPURI(dest[len("sips:"):])
	}
	return fmt.Errorf("must be a phone number in E.164 form (+16175550123) or a SIP URI (sip:desk@pbx.example.com)")
}

var (
	sipUser  = regexp.MustCompile(`^(?:[A-Za-z0-9\-_.!~*'()&=+$,]|%[0-9A-Fa-f]{2})+$`)
	sipParam = regexp.MustCompile(`^(?:[A-Za-z0-9\-_.!~*'()\[\]/:&+$]|%[0-9A-Fa-f]{2})+(?:=(?:[A-Za-z0-9\-_.!~*'()\[\]/:&+$]|%[0-9A-Fa-f]{2})+)?$`)
	dnsLabel = regexp.MustCompile(`^[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?$`)
)

// checkSIPURI checks what follows the scheme of a SIP URI:
// [user@]host[:port][;param[=value]]…
func checkSIPURI(rest string) error {
	const example = "e.g. sip:desk@pbx.example.com"
	if len(rest)+len("sips:") > maxSIPURILen {
		return fmt.Errorf("must be a SIP URI of at most %d bytes", maxSIPURILen)
	}
	if strings.Contains(rest, "?") {
		return fmt.Errorf("must be a SIP URI without headers (nothing after '?'), %s", example)
	}
	hostport, params, _ := strings.Cut(rest, ";")
	if params != "" || strings.HasSuffix(rest, ";") {
		for _, p := range strings.Split(params, ";") {
			if !sipParam.MatchString(p) {
				return fmt.Errorf("has a malformed URI parameter %q, %s;transport=tcp", p, example)
			}
		}
	}
	if user, host, ok := strings.Cut(hostport, "@"); ok {
		if strings.Contains(user, ":") {
			return fmt.Errorf("must not carry a password in the SIP URI")
		}
		if !sipUser.MatchString(user) {
			return fmt.Errorf("has a malformed user part %q in the SIP URI, %s", user, example)
		}
		hostport = host
	}
	host, port := hostport, ""
	if strings.HasPrefix(host, "[") { // [IPv6]:port
		end := strings.Index(host, "]")
		if end < 0 {
			return fmt.Errorf("has a malformed IPv6 host in the SIP URI")
		}
		host, port = hostport[1:end], hostport[end+1:]
		if a, err := netip.ParseAddr(host); err != nil || !a.Is6() || a.Zone() != "" {
			return fmt.Errorf("has a malformed IPv6 host %q in the SIP URI", host)
		}
		if port != "" && !strings.HasPrefix(port, ":") {
			return fmt.Errorf("has a malformed host in the SIP URI, %s", example)
		}
		port = strings.TrimPrefix(port, ":")
	} else {
		if i := strings.LastIndex(host, ":"); i >= 0 {
			host, port = host[:i], host[i+1:]
		}
		if !validHostname(host) {
			return fmt.Errorf("must name a host in the SIP URI (a domain name or an IP address), %s", example)
		}
	}
	if port != "" || strings.HasSuffix(hostport, ":") {
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 || port[0] == '0' || port[0] == '+' {
			return fmt.Errorf("has a port %q outside 1 to 65535 in the SIP URI", port)
		}
	}
	return nil
}

// validHostname reports whether host is an IPv4 address or a DNS name.
func validHostname(host string) bool {
	if host == "" || len(host) > 253 {
		return false
	}
	if a, err := netip.ParseAddr(host); err == nil {
		return a.Is4()
	}
	for _, label := range strings.Split(strings.TrimSuffix(host, "."), ".") {
		if !dnsLabel.MatchString(label) {
			return false
		}
	}
	return true
}
