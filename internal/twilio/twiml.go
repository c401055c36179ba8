package twilio

import (
	"encoding/xml"
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// TwiML documents Switchboard answers with. They are written by hand with
// every attribute and text escaped (encoding/xml.EscapeText): the four
// shapes are fixed, and golden tests hold them byte for byte.

const xmlHeader = `<?xml version="1.0" encoding="UTF-8"?>`

// Param is a <Parameter> of a <Stream>: it reaches the websocket server in
// the start message's customParameters.
type Param struct{ Name, Value string }

func escape(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}

// StreamTwiML connects the call to a bidirectional Media Stream at
// streamURL: <Connect><Stream url="wss://…"> with one <Parameter> per
// param ("TwiML Voice: <Stream>",
// https://www.twilio.com/docs/voice/twiml/stream). The url must not carry
// a query string — Twilio does not support one — so values travel as
// Parameters; a URL with a query is refused. Nothing follows <Connect>:
// when the websocket closes, the call ends ("TwiML Voice: <Connect>").
func StreamTwiML(streamURL string, params ...Param) (string, error) {
	u, err := url.Parse(streamURL)
	if err != nil || (u.Scheme != "wss" && u.Scheme != "ws") || u.Host == "" {
		return "", fmt.Errorf("twilio: the stream URL must be a ws(s) URL, got %q", streamURL)
	}
	if u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
		return "", errors.New("twilio: the stream URL must have no query string (Twilio's <Stream> does not support one): pass values as Parameters")
	}
	var b strings.Builder
	b.WriteString(xmlHeader)
	b.WriteString(`<Response><Connect><Stream url="`)
	b.WriteString(escape(streamURL))
	b.WriteString(`">`)
	for _, p := range params {
		b.WriteString(`<Parameter name="`)
		b.WriteString(escape(p.Name))
		b.WriteString(`" value="`)
		b.WriteString(escape(p.Value))
		b.WriteString(`"/>`)
	}
	b.WriteString(`</Stream></Connect></Response>`)
	return b.String(), nil
}

// DialTwiML hands the call to destination ("TwiML Voice: <Dial>",
// https://www.twilio.com/docs/voice/twiml/dial): an E.164 number as the
// text of <Dial>, a sip: or sips: URI in a <Sip> noun
// ("TwiML Voice: <Sip>").
func DialTwiML(destination string) (string, error) {
	d := strings.TrimSpace(destination)
	low := strings.ToLower(d)
	var inner string
	switch {
	case strings.HasPrefix(low, "sip:") || strings.HasPrefix(low, "sips:"):
		if len(d) > 512 || strings.ContainsAny(d, " \t\r\n<>\"") {
			return "", fmt.Errorf("twilio: transfer destination %q is not a SIP URI", destination)
		}
		inner = "<Sip>" + escape(d) + "</Sip>"
	case isE164(d):
		inner = escape(d)
	default:
		return "", fmt.Errorf("twilio: transfer destination %q is neither an E.164 number (+…) nor a sip: URI", destination)
	}
	return xmlHeader + "<Response><Dial>" + inner + "</Dial></Response>", nil
}

// isE164 reports whether s is + and 8 to 15 digits, the first not 0.
func isE164(s string) bool {
	if len(s) < 9 || len(s) > 16 || s[0] != '+' || s[1] == '0' {
		return false
	}
	for i := 1; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// HangupTwiML ends the call ("TwiML Voice: <Hangup>").
func HangupTwiML() string { return xmlHeader + "<Response><Hangup/></Response>" }

// RejectTwiML refuses an incoming call without answering it, so it costs
// nothing ("TwiML Voice: <Reject>"; the caller hears a busy signal or "not
// in service", by Twilio's default reason "rejected").
func RejectTwiML() string { return xmlHeader + "<Response><Reject/></Response>" }

// BusyTwiML refuses an incoming call with a busy signal, unanswered
// (https://www.twilio.com/docs/voice/twiml/reject: reason "busy"; the
// call ends busy): the organization's routing said busy.
func BusyTwiML() string { return xmlHeader + `<Response><Reject reason="busy"/></Response>` }

// ForwardTwiML connects an incoming call to number (E.164) instead of an
// assistant (TwiML Voice <Dial>): the organization's routing forwarded it.
func ForwardTwiML(number string) string {
	return xmlHeader + "<Response><Dial>" + escape(number) + "</Dial></Response>"
}
