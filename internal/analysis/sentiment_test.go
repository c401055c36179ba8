package analysis

import (
	"math"
	"strings"
	"testing"
)

func user(texts ...string) []Turn {
	var out []Turn
	for _, t := range texts {
		out = append(out, Turn{Role: RoleUser, Text: t})
	}
	return out
}

func TestScoreLabels(t *testing.T) {
	tests := []struct {
		name  string
		turns []Turn
		want  string
	}{
		{"empty transcript", nil, Neutral},
		{"blank turns", user("", "   "), Neutral},
		{"positive", user("That was great, thanks so much, really helpful!"), Positive},
		{"positive phrase", user("You went above and beyond, top notch."), Positive},
		{"negative", user("This is ridiculous. I've been on hold for an hour and I want to cancel."), Negative},
		{"negative complaint", user("Terrible service, a complete waste of time. I'm so frustrated."), Negative},
		{"negated positive", user("That was not good."), Negative},
		{"negated like", user("I don't like this plan."), Negative},
		{"never helpful", user("Your staff were never helpful."), Negative},
		{"negated negative", user("Honestly it's not bad."), Positive},
		{"negation ends at a comma", user("No, that's great."), Positive},
		{"no thanks is neutral", user("No thank you."), Neutral},
		{"request is neutral", user("I'd like to book a table for Friday."), Neutral},
		{"but weighs the end", user("It was slow at first but they fixed it."), Positive},
		{"intensified negative", user("I am really very annoyed."), Negative},
		{"can't wait is positive", user("I can't wait for the delivery!"), Positive},
		{"not working is negative", user("The internet is not working again."), Negative},
		{"assistant-only politeness", []Turn{
			{RoleAssistant, "Thank you so much for calling! It's a pleasure, you're wonderful, have a great day!"},
			{RoleUser, "I need to change my address."},
			{RoleAssistant, "Perfect, I'm happy to help, thanks!"},
		}, Neutral},
		{"assistant cannot cheer up an angry caller", []Turn{
			{RoleAssistant, "Great to hear from you! Happy to help!"},
			{RoleUser, "Your billing is a nightmare and I was overcharged again."},
			{RoleAssistant, "Wonderful, thank you so much, perfect!"},
		}, Negative},
	}
	for _, tt := range tests {
		got := Score(tt.turns)
		if got.Label != tt.want {
			t.Errorf("%s: Score(%q) = %+v, want label %s", tt.name, tt.turns, got, tt.want)
		}
		if got.Score < -1 || got.Score > 1 {
			t.Errorf("%s: Score(%q).Score = %v, want within -1..1", tt.name, tt.turns, got.Score)
		}
	}
}

func TestScoreIntensifiersAndNegation(t *testing.T) {
	tests := []struct {
		stronger, weaker string
	}{
		{"very good", "good"},
		{"really really good", "really good"},
		{"so frustrated", "frustrated"}, // compared by magnitude
		{"good", "slightly good"},
		{"good", "not good"}, // negation damps as it flips
		{"terrible", "not terrible"},
		{"a waste of time", "a waste"},
	}
	for _, tt := range tests {
		s, w := Score(user(tt.stronger)).Score, Score(user(tt.weaker)).Score
		if math.Abs(s) <= math.Abs(w) {
			t.Errorf("Score(%q) = %v, Score(%q) = %v, want the first stronger", tt.stronger, s, tt.weaker, w)
		}
	}
	flips := []string{"good", "helpful", "terrible", "like it", "happy"}
	for _, w := range flips {
		plain, negated := Score(user(w)).Score, Score(user("not "+w)).Score
		if plain*negated >= 0 {
			t.Errorf("Score(%q) = %v, Score(%q) = %v, want opposite signs", w, plain, "not "+w, negated)
		}
	}
	// Negation reaches three words, no further.
	scope := []struct {
		in   string
		sign float64
	}{
		{"not at all helpful", -1}, // third word after "not"
		{"I did not think the staff were helpful", 1},
		{"I was not, helpful as they were, convinced", 1}, // a comma ends the scope
	}
	for _, tt := range scope {
		if got := Score(user(tt.in)).Score; got*tt.sign <= 0 {
			t.Errorf("Score(%q) = %v, want sign %v", tt.in, got, tt.sign)
		}
	}
}

func TestSentimentOf(t *testing.T) {
	tests := []struct {
		sum  float64
		want Sentiment
	}{
		{0, Sentiment{Neutral, 0}},
		{0.1, Sentiment{Neutral, 0.0258}},
		{0.2, Sentiment{Positive, 0.0516}},
		{-0.2, Sentiment{Negative, -0.0516}},
		{3, Sentiment{Positive, 0.6124}},
		{-3, Sentiment{Negative, -0.6124}},
		{1000, Sentiment{Positive, 1}},
	}
	for _, tt := range tests {
		if got := sentimentOf(tt.sum); got != tt.want {
			t.Errorf("sentimentOf(%v) = %+v, want %+v", tt.sum, got, tt.want)
		}
	}
}

func TestLexicon(t *testing.T) {
	if n := len(lexicon); n < 300 || n > 600 {
		t.Errorf("len(lexicon) = %d, want 300..600", n)
	}
	for k, v := range lexicon {
		if v < -3 || v > 3 {
			t.Errorf("lexicon[%q] = %d, want -3..3", k, v)
		}
		if k != strings.ToLower(k) || k != strings.Join(words(k), " ") {
			t.Errorf("lexicon key %q, want lower-case words as tokenize splits them (%q)", k, strings.Join(words(k), " "))
		}
	}
	for k := range intensifiers {
		if _, dup := lexicon[k]; dup {
			t.Errorf("%q is both an intensifier and a lexicon entry", k)
		}
	}
	for _, w := range []string{"great", "perfect", "thanks", "helpful", "frustrated", "terrible", "cancel", "complaint", "waste", "ridiculous"} {
		if _, ok := lexicon[w]; !ok {
			t.Errorf("lexicon[%q] missing", w)
		}
	}
}

func FuzzScore(f *testing.F) {
	f.Add("not very good, but great!")
	f.Add("no no no never not")
	f.Add("\xff so so so so")
	f.Fuzz(func(t *testing.T, text string) {
		got := Score(user(text))
		if got.Score < -1 || got.Score > 1 || math.IsNaN(got.Score) {
			t.Fatalf("Score(%q) = %+v, want within -1..1", text, got)
		}
		if got != Score(user(text)) {
			t.Fatalf("Score(%q) is not deterministic", text)
		}
	})
}
