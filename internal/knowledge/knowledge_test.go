package knowledge

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestChunk(t *testing.T) {
	if got, err := Chunk("  \n\n ", 0, -1); err != nil || len(got) != 0 {
		t.Errorf("Chunk(blank) = %q, %v", got, err)
	}
	short := "Our clinic opens at 9 am.\n\nWe close at 6 pm on weekdays."
	if got, _ := Chunk(short, 800, 100); len(got) != 1 || got[0] != "Our clinic opens at 9 am.\n\nWe close at 6 pm on weekdays." {
		t.Errorf("Chunk(short) = %q, want one passage keeping both paragraphs", got)
	}
	var b strings.Builder
	for i := range 60 {
		b.WriteString("Sentence number ")
		b.WriteString(strings.Repeat("x", i%7))
		b.WriteString(" tells about parking and opening hours. ")
		if i%10 == 9 {
			b.WriteString("\n\n")
		}
	}
	text := b.String()
	got, err := Chunk(text, 300, 60)
	if err != nil || len(got) < 5 {
		t.Fatalf("Chunk(long) = %d passages, %v", len(got), err)
	}
	for i, c := range got {
		if n := utf8.RuneCountInString(c); n > 300 {
			t.Errorf("passage %d has %d runes, over 300", i, n)
		}
		if i > 0 && !strings.Contains(c, " … ") && !strings.HasPrefix(c, "Sentence") {
			t.Errorf("passage %d starts mid-sentence without an overlap: %q", i, c[:min(40, len(c))])
		}
	}
	// Every word of the text is in some passage, in order.
	joined := strings.Join(got, " ")
	for _, w := range []string{"Sentence number tells", "Sentence number xxxxxx tells"} {
		if !strings.Contains(joined, w) {
			t.Errorf("the passages lost %q", w)
		}
	}
	// A paragraph with no spaces is still cut.
	if got, _ := Chunk(strings.Repeat("a", 1000), 300, 50); len(got) != 4 {
		t.Errorf("Chunk(one long word) = %d passages, want 4", len(got))
	}
	if _, err := Chunk(strings.Repeat("word ", 200000), 10, 0); !errors.Is(err, ErrTooLarge) {
		t.Errorf("Chunk(huge) = %v, want ErrTooLarge", err)
	}
}

func TestFromMarkdown(t *testing.T) {
	md := "# Opening hours\n\nWe open at **9 am** and close at _6 pm_.\n\n- Parking: see [the map](https://x.example/map)\n- ![logo](l.png) Free wifi\n\n> Closed on holidays.\n\n```\ncode stays\n```\n\n| Day | Hours |\n|---|---|\n| Sat | 10-2 |\n\n---\n"
	got := FromMarkdown(md)
	for _, want := range []string{"Opening hours", "We open at 9 am and close at 6 pm.", "Parking: see the map", "logo Free wifi", "Closed on holidays.", "code stays", "Sat · 10-2"} {
		if !strings.Contains(got, want) {
			t.Errorf("FromMarkdown lacks %q:\n%s", want, got)
		}
	}
	for _, gone := range []string{"#", "**", "https://", "```", "|---", "> "} {
		if strings.Contains(got, gone) {
			t.Errorf("FromMarkdown kept %q:\n%s", gone, got)
		}
	}
}

func TestParseFAQ(t *testing.T) {
	pairs, err := ParseFAQ([]byte(`[{"question":"When do you open?","answer":"At 9 am."},{"question":" Parking? ","answer":" Behind the building. "}]`), false)
	if err != nil || len(pairs) != 2 || pairs[1].Question != "Parking?" {
		t.Fatalf("ParseFAQ(JSON) = %+v, %v", pairs, err)
	}
	if c := FAQChunks(pairs); c[0] != "Q: When do you open?\nA: At 9 am." {
		t.Errorf("FAQChunks = %q", c)
	}
	pairs, err = ParseFAQ([]byte("\ufeffTopic,Question,Answer\nhours,When do you open?,At 9 am.\nparking,\"Parking, where?\",Behind.\n"), true)
	if err != nil || len(pairs) != 2 || pairs[1].Question != "Parking, where?" {
		t.Fatalf("ParseFAQ(CSV) = %+v, %v", pairs, err)
	}
	for _, tc := range []struct {
		body string
		csv  bool
		want string
	}{
		{`{"question":"q"}`, false, "must be an array"},
		{`[{"question":"q","answer":""}]`, false, "pairs[0]: a pair needs"},
		{`[{"question":"q","answer":"a","extra":1}]`, false, "unknown field"},
		{`[]`, false, "no pairs"},
		{"q,a\nx,y\n", true, "must name the columns question and answer"},
		{"question,answer\nx,\n", true, "row 2: a pair needs"},
		{"", true, "no header row"},
	} {
		if _, err := ParseFAQ([]byte(tc.body), tc.csv); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseFAQ(%q) = %v, want %q", tc.body, err, tc.want)
		}
	}
}
