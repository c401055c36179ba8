package sandbox

import (
	"strings"
)

// Persona is the simulated person who answers a sandbox call: it hears
// each assistant turn as text and answers from a script, so a sandbox call
// is a real two-sided conversation with no network.
type Persona interface {
	// Name identifies the persona in docs and logs.
	Name() string
	// Reply is what the callee says after the assistant's turn; hangup
	// ends the call after saying it (say may be empty).
	Reply(assistantText string) (say string, hangup bool)
	// Hear is Reply over audio: heard is what the callee's speech
	// recognizer made of the assistant's turn, which may be garbled.
	Hear(heard string) (say string, hangup bool)
	// Unheard is what the callee says over audio when the assistant
	// finished a turn and then stayed quiet while the callee's recognizer
	// gave it nothing to answer (it heard nothing, or nothing in time on a
	// loaded machine): what a person says into a silent phone.
	Unheard() (say string, hangup bool)
}

// Destination suffixes that choose a persona (the others are outcomes, see Place).
const (
	SuffixSilent    = "0005"
	SuffixImpatient = "0006"
)

// PersonaFor chooses the persona of a destination by its last four digits:
// …0005 never says anything (the assistant's silence timeout ends the
// call), …0006 hangs up after two answers, any other number is Alex, the
// default persona.
func PersonaFor(number string) Persona {
	switch {
	case strings.HasSuffix(number, SuffixSilent):
		return &silent{}
	case strings.HasSuffix(number, SuffixImpatient):
		return &alex{maxAnswers: 2, name: "impatient"}
	}
	return &alex{maxAnswers: 12, name: "alex"}
}

type silent struct{}

func (*silent) Name() string                { return "silent" }
func (*silent) Reply(string) (string, bool) { return "", false }
func (*silent) Hear(string) (string, bool)  { return "", false }
func (*silent) Unheard() (string, bool)     { return "", false }

// alex answers like a cooperative caller booking an appointment: a day
// when asked for a date, a time when asked for a time, yes to
// confirmations, and goodbye when the assistant says goodbye.
type alex struct {
	name       string
	answers    int
	maxAnswers int
	last       string // his last answer, said again when asked to
}

func (a *alex) Name() string { return a.name }

// script is checked in order; the first rule whose words appear wins.
var script = []struct {
	any    []string
	say    string
	hangup bool
}{
	{[]string{"goodbye", "good bye", "bye", "have a nice day", "have a great day", "take care"}, "Thanks, bye!", true},
	{[]string{"what day", "which day", "what date", "which date", "when would", "when do", "when can", "what day would", "day would suit", "date would"}, "Tomorrow, please.", false},
	{[]string{"what time", "which time", "what hour", "time would"}, "At 3 pm.", false},
	{[]string{"your name", "who am i speaking", "who is this", "may i have your name"}, "My name is Alex Smith.", false},
	{[]string{"phone number", "call you back on", "reach you"}, "You can reach me at 415 555 0123.", false},
	{[]string{"how can i help", "how may i help", "what can i do for you", "how can i assist", "what brings you"}, "I'd like to book an appointment, please.", false},
	{[]string{"is that right", "is that correct", "correct?", "right?", "confirm", "shall i", "should i", "would you like", "do you want", "is this", "is that", "can i", "may i", "okay?", "ok?"}, "Yes, that's right.", false},
	{[]string{"?"}, "Yes, please.", false},
}

func (a *alex) Reply(text string) (string, bool) {
	say, hangup := a.reply(text)
	if say != "" {
		a.last = say
	}
	return say, hangup
}

func (a *alex) reply(text string) (string, bool) {
	if say, hangup, ok := a.match(text); ok {
		return say, hangup
	}
	if a.answers == 0 {
		a.answers++
		return "Hi!", false
	}
	return "", false // a statement: Alex listens
}

// Hear: when no rule matches what Alex's recognizer heard (it misheard),
// he says what he wants, in words recognizers get right even on a phone
// line, then agrees with whatever was asked.
func (a *alex) Hear(heard string) (string, bool) {
	say, hangup := a.hear(heard)
	if say != "" {
		a.last = say
	}
	return say, hangup
}

func (a *alex) hear(heard string) (string, bool) {
	if say, hangup, ok := a.match(heard); ok {
		return say, hangup
	}
	if strings.TrimSpace(heard) == "" {
		return "", false
	}
	a.answers++
	if a.answers == 1 {
		return "I would like to book an appointment for tomorrow.", false
	}
	return "Yes, that's right.", false
}

// Unheard: Alex asks to hear it again, which counts as an answer (so a
// line that stays deaf ends by his answer limit, not by a loop).
func (a *alex) Unheard() (string, bool) {
	if a.answers >= a.maxAnswers {
		return "Sorry, I have to go now. Bye!", true
	}
	a.answers++
	return unheardAsk, false
}

// unheardAsk is what Alex says into a silent line.
const unheardAsk = "Sorry, I didn't hear you. Could you say that again?"

// askedAgain are the words of an assistant that did not catch what Alex
// said (conversation.MissedPrompt among them): he says it again.
var askedAgain = []string{"say it again", "say that again", "didn't catch", "repeat that"}

func containsAny(t string, words []string) bool {
	for _, w := range words {
		if strings.Contains(t, w) {
			return true
		}
	}
	return false
}

// match applies the script (and the answer limit) to text.
func (a *alex) match(text string) (say string, hangup, ok bool) {
	t := " " + strings.ToLower(text) + " "
	if a.answers >= a.maxAnswers {
		return "Sorry, I have to go now. Bye!", true, true
	}
	if a.last != "" && containsAny(t, askedAgain) { // the assistant lost his answer
		a.answers++
		return a.last, false, true
	}
	for _, rule := range script {
		for _, w := range rule.any {
			if strings.Contains(t, w) {
				if !rule.hangup {
					a.answers++
				}
				return rule.say, rule.hangup, true
			}
		}
	}
	return "", false, false
}
