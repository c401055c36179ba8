package analysis

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// booking is a restaurant booking as a web call transcribes it.
var booking = []Turn{
	{RoleAssistant, "Hi! Thanks for calling Bella's Bistro. How can I help you today?"},
	{RoleUser, "Hi. I'd like to book a table for four people."},
	{RoleAssistant, "Of course. What day would you like the table?"},
	{RoleUser, "Next Friday, March 14th, at 7 pm please."},
	{RoleAssistant, "Great. Can I have a name for the booking?"},
	{RoleUser, "It's Dana Whitfield."},
	{RoleAssistant, "Thank you, Dana. I've booked a table for four on Friday, March 14th at 7 pm under Whitfield."},
	{RoleUser, "Perfect, thanks!"},
	{RoleAssistant, "You're welcome. Goodbye!"},
}

// fillerSentences are sentences of booking that a summary must not pick.
var fillerSentences = []string{"Hi!", "Hi.", "Of course.", "Great.", "Perfect, thanks!", "You're welcome.", "Goodbye!", "How can I help you today?"}

func TestSummarizeBooking(t *testing.T) {
	for n := 1; n <= 6; n++ {
		got := Summarize(booking, n)
		lines := strings.Split(got, "\n")
		if sentences := countSentences(got); sentences > n || sentences == 0 {
			t.Errorf("Summarize(booking, %d) has %d sentences, want 1..%d:\n%s", n, sentences, n, got)
		}
		if !strings.Contains(got, "March 14th") {
			t.Errorf("Summarize(booking, %d) = %q, want the date March 14th in it", n, got)
		}
		for _, line := range lines {
			if !strings.HasPrefix(line, "Caller: ") && !strings.HasPrefix(line, "Assistant: ") {
				t.Errorf("Summarize(booking, %d) line %q, want a Caller:/Assistant: prefix", n, line)
			}
			body := line[strings.Index(line, ": ")+2:]
			for _, f := range fillerSentences {
				if strings.Contains(" "+body+" ", " "+f+" ") {
					t.Errorf("Summarize(booking, %d) picked filler %q in line %q", n, f, line)
				}
			}
		}
		if strings.Contains(got, "Hi") || strings.Contains(got, "Thanks") {
			t.Errorf("Summarize(booking, %d) = %q, want no greeting or thanks", n, got)
		}
	}
	want := "Caller: I'd like to book a table for four people.\n" +
		"Caller: Next Friday, March 14th, at 7 pm please.\n" +
		"Caller: It's Dana Whitfield.\n" +
		"Assistant: I've booked a table for four on Friday, March 14th at 7 pm under Whitfield."
	if got := Summarize(booking, 4); got != want {
		t.Errorf("Summarize(booking, 4) =\n%s\nwant\n%s", got, want)
	}
}

// countSentences counts the sentences of a rendered summary.
func countSentences(summary string) int {
	n := 0
	for _, line := range strings.Split(summary, "\n") {
		if _, body, ok := strings.Cut(line, ": "); ok {
			n += len(splitSentences(body))
		}
	}
	return n
}

func TestSummarizeKeepsCallerDate(t *testing.T) {
	// The account details outscore the short request, but the caller's date
	// must survive even a one-sentence summary.
	turns := []Turn{
		{RoleUser, "My account number is 4471 and invoice 2291 shows a charge of 89 dollars for the premium package upgrade."},
		{RoleAssistant, "I can see invoice 2291 for 89 dollars on account 4471 for the premium package upgrade."},
		{RoleUser, "Can someone call me back tomorrow?"},
	}
	if got := Summarize(turns, 1); got != "Caller: Can someone call me back tomorrow?" {
		t.Errorf("Summarize(account call, 1) = %q, want the caller's sentence with tomorrow", got)
	}
	if got := Summarize(turns, 2); !strings.Contains(got, "tomorrow") || !strings.Contains(got, "4471") {
		t.Errorf("Summarize(account call, 2) = %q, want the date sentence and the best account sentence", got)
	}
}

func TestSummarizeEdges(t *testing.T) {
	tests := []struct {
		name  string
		turns []Turn
		n     int
		want  string
	}{
		{"nil transcript", nil, 3, ""},
		{"empty turns", []Turn{{RoleUser, ""}, {RoleAssistant, "  "}}, 3, ""},
		{"punctuation only", []Turn{{RoleUser, "..."}, {RoleAssistant, "?!"}}, 3, ""},
		{"n zero", booking, 0, ""},
		{"n negative", booking, -2, ""},
		{"only filler is still summarised", []Turn{{RoleUser, "Hello?"}, {RoleAssistant, "Hi."}}, 1, "Caller: Hello?"},
		{"filler loses to anything else", []Turn{{RoleUser, "Okay. Thank you."}, {RoleUser, "The parcel is damaged."}}, 1, "Caller: The parcel is damaged."},
		{"one turn's sentences share a line", []Turn{{RoleUser, "My parcel 881 arrived damaged. The box was wet. Bye."}}, 2, "Caller: My parcel 881 arrived damaged. The box was wet."},
		{"unknown roles are skipped", []Turn{{"tool", "Booking 42 created for Friday."}, {RoleUser, "Book Friday."}}, 2, "Caller: Book Friday."},
		{"no punctuation is one sentence", []Turn{{RoleUser, "i need to move my appointment to monday the 3rd"}}, 1, "Caller: i need to move my appointment to monday the 3rd"},
	}
	for _, tt := range tests {
		if got := Summarize(tt.turns, tt.n); got != tt.want {
			t.Errorf("%s: Summarize(%q, %d) = %q, want %q", tt.name, tt.turns, tt.n, got, tt.want)
		}
	}
}

func TestSummarizeClipsLongSentences(t *testing.T) {
	long := strings.Repeat("the router keeps dropping the connection ", 30)
	got := Summarize([]Turn{{RoleUser, long}}, 1)
	body := strings.TrimPrefix(got, "Caller: ")
	if n := utf8.RuneCountInString(body); n > maxSentenceRunes || !strings.HasSuffix(body, "…") {
		t.Errorf("Summarize(%d-rune sentence) = %d runes ending %q, want at most %d ending with …", len(long), n, body[len(body)-8:], maxSentenceRunes)
	}
}

func TestSplitSentences(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"Hi. I'd like a table.", []string{"Hi.", "I'd like a table."}},
		{"It costs 3.5 dollars.", []string{"It costs 3.5 dollars."}},
		{"Come at 3 p.m. on Friday.", []string{"Come at 3 p.m. on Friday."}},
		{"Ask Dr. Smith. He knows.", []string{"Ask Dr. Smith.", "He knows."}},
		{"Really? yes! OK", []string{"Really?", "yes!", "OK"}},
		{"No. I said Monday.", []string{"No.", "I said Monday."}},
		{"line one\nline two", []string{"line one", "line two"}},
		{`He said "stop." Then left.`, []string{`He said "stop."`, "Then left."}},
		{"Wait...what? 2026-03-14 works.", []string{"Wait...what?", "2026-03-14 works."}},
	}
	for _, tt := range tests {
		got := splitSentences(tt.in)
		if strings.Join(got, "|") != strings.Join(tt.want, "|") || len(got) != len(tt.want) {
			t.Errorf("splitSentences(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestSentenceDates(t *testing.T) {
	tests := []struct {
		in   string
		date bool
	}{
		{"Next Friday works.", true},
		{"Can you call back tomorrow?", true},
		{"On the 14th.", true},
		{"The fifth of June.", true},
		{"2026-03-14", true},
		{"Any time on 3/14 is fine.", true},
		{"I may be late.", false},
		{"Anything else I can help you with today?", false},
		{"It was the first time.", false},
		{"I live on the 5th floor.", true}, // a known false positive: "on the 5th"
		{"See you next week.", true},
		{"Book it for May 2nd.", true},
	}
	for _, tt := range tests {
		s := &sentence{text: tt.in}
		features(s)
		if s.date != tt.date {
			t.Errorf("features(%q).date = %v, want %v", tt.in, s.date, tt.date)
		}
	}
}

func TestSentenceNames(t *testing.T) {
	tests := []struct {
		in   string
		name bool
	}{
		{"It's Dana Whitfield.", true},
		{"my name is dana", true},
		{"Dana here.", false}, // a sentence-initial capital is not evidence
		{"I'm fine.", false},
		{"The table for Friday.", false}, // days are dates, not names
	}
	for _, tt := range tests {
		s := &sentence{text: tt.in}
		features(s)
		if s.name != tt.name {
			t.Errorf("features(%q).name = %v, want %v", tt.in, s.name, tt.name)
		}
	}
}

func FuzzSummarize(f *testing.F) {
	for _, t := range booking {
		f.Add(t.Text, "Next Friday, March 14th. 3.5 p.m.! Dr. Who?", 3)
	}
	f.Add("\xff\xfe.", "…\n\n", 1)
	f.Fuzz(func(t *testing.T, a, b string, n int) {
		n %= 8
		turns := []Turn{{RoleUser, a}, {RoleAssistant, b}}
		got := Summarize(turns, n)
		if got != Summarize(turns, n) {
			t.Fatalf("Summarize(%q, %d) is not deterministic", turns, n)
		}
		if got == "" {
			return
		}
		lines := strings.Split(got, "\n")
		if n <= 0 || len(lines) > n {
			t.Fatalf("Summarize(%q, %d) = %d lines, want at most %d", turns, n, len(lines), n)
		}
		for _, l := range lines {
			if !strings.HasPrefix(l, "Caller: ") && !strings.HasPrefix(l, "Assistant: ") {
				t.Fatalf("Summarize(%q, %d) line %q has no speaker", turns, n, l)
			}
		}
	})
}
