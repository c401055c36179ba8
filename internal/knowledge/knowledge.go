// Package knowledge owns what a knowledge base's documents become before
// they are indexed (docs/ARCHITECTURE.md, "Knowledge bases"): plain text
// from Markdown (FromMarkdown), FAQ pairs from JSON or CSV (ParseFAQ), and
// the passages search ranks (Chunk, FAQChunks). It is the first part of
// the knowledge bases to land: the store's indexes, the API, the
// searchKnowledge tool and the flow node use it next.
package knowledge

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Chunking defaults: passages of about ChunkSize characters, the last
// ChunkOverlap characters of one repeated at the start of the next, so a
// sentence cut at a boundary is whole in one of them.
const (
	ChunkSize    = 800
	ChunkOverlap = 100
	// MaxChunks bounds one document's passages.
	MaxChunks = 5000
	// MaxFAQPairs bounds one FAQ document.
	MaxFAQPairs = 5000
)

// ErrTooLarge is a document that makes more than MaxChunks passages.
var ErrTooLarge = errors.New("knowledge: the document makes more than 5000 passages; split it")

// Chunk cuts text into passages of at most size characters (runes), on
// paragraph boundaries where it can, else on sentence boundaries, else on
// spaces; each passage after the first starts with up to overlap
// characters of the one before, from a word boundary. Whitespace inside a
// paragraph is collapsed; empty text gives no passages.
func Chunk(text string, size, overlap int) ([]string, error) {
	if size <= 0 {
		size = ChunkSize
	}
	if overlap < 0 || overlap >= size/2 {
		overlap = min(ChunkOverlap, size/4)
	}
	var pieces []string // paragraphs, or parts of long ones, each ≤ size
	for _, para := range paragraphs(text) {
		pieces = append(pieces, split(para, size)...)
	}
	runes := utf8.RuneCountInString
	var out []string
	cur := ""
	for _, p := range pieces {
		switch {
		case cur == "":
			cur = p
		case runes(cur)+2+runes(p) <= size:
			cur += "\n\n" + p
		default:
			if len(out) == MaxChunks {
				return nil, ErrTooLarge
			}
			out = append(out, cur)
			cur = lastWords(cur, overlap)
			if cur == "" || runes(cur)+3+runes(p) > size {
				cur = p
			} else {
				cur += " … " + p
			}
		}
	}
	if cur != "" {
		if len(out) == MaxChunks {
			return nil, ErrTooLarge
		}
		out = append(out, cur)
	}
	return out, nil
}

// paragraphs splits text on blank lines, collapsing the whitespace within.
func paragraphs(text string) []string {
	text = strings.ReplaceAll(text, "\r\n", "\n")
	var out []string
	for _, p := range regexp.MustCompile(`\n[ \t]*\n`).Split(text, -1) {
		if p = strings.Join(strings.Fields(p), " "); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// sentenceEnd finds the ends of sentences: ".", "!" or "?" then a space.
var sentenceEnd = regexp.MustCompile(`[.!?]["')\]]?\s`)

// split cuts a long paragraph into parts of at most size runes: at
// sentence ends, else at spaces, else anywhere. It stops after
// MaxChunks+1 parts (Chunk then refuses the document).
func split(p string, size int) []string {
	var out []string
	for p != "" && len(out) <= MaxChunks {
		limit := byteIndex(p, size)
		if limit == len(p) {
			out = append(out, p)
			break
		}
		cut := -1
		if ms := sentenceEnd.FindAllStringIndex(p[:limit], -1); len(ms) > 0 {
			cut = ms[len(ms)-1][1]
		}
		if cut <= 0 {
			cut = strings.LastIndexFunc(p[:limit], unicode.IsSpace) + 1
		}
		if cut <= 0 {
			cut = limit
		}
		if part := strings.TrimSpace(p[:cut]); part != "" {
			out = append(out, part)
		}
		p = strings.TrimLeftFunc(p[cut:], unicode.IsSpace)
	}
	return out
}

// byteIndex is the byte offset of rune n of s (len(s) past the end); it
// reads at most n runes.
func byteIndex(s string, n int) int {
	i := 0
	for j := range s {
		if i == n {
			return j
		}
		i++
	}
	return len(s)
}

// lastWords is the end of s, at most n runes, from a word boundary.
func lastWords(s string, n int) string {
	if n <= 0 {
		return ""
	}
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	tail := string(r[len(r)-n:])
	if i := strings.IndexFunc(tail, unicode.IsSpace); i >= 0 {
		tail = tail[i:]
	}
	return strings.TrimSpace(tail)
}

var (
	mdFence   = regexp.MustCompile("(?m)^```.*$")
	mdHeading = regexp.MustCompile(`(?m)^#{1,6}\s+`)
	mdQuote   = regexp.MustCompile(`(?m)^>\s?`)
	mdBullet  = regexp.MustCompile(`(?m)^\s*(?:[-*+]|\d+[.)])\s+`)
	mdImage   = regexp.MustCompile(`!\[([^\]]*)\]\([^)]*\)`)
	mdLink    = regexp.MustCompile(`\[([^\]]+)\]\([^)]*\)`)
	mdEmph    = regexp.MustCompile(`(\*\*|__|\*|_|~~|` + "`" + `)([^*_~` + "`" + `\n]+)(\*\*|__|\*|_|~~|` + "`" + `)`)
	mdRule    = regexp.MustCompile(`(?m)^\s*(?:-{3,}|\*{3,}|_{3,})\s*$`)
	mdTable   = regexp.MustCompile(`(?m)^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$`)
)

// FromMarkdown is Markdown's text as it reads: headings, lists and quotes
// keep their words without their marks, links and images their text,
// emphasis and code their content; table rows become lines of cells.
func FromMarkdown(md string) string {
	s := strings.ReplaceAll(md, "\r\n", "\n")
	s = mdFence.ReplaceAllString(s, "")
	s = mdRule.ReplaceAllString(s, "")
	s = mdTable.ReplaceAllString(s, "")
	s = mdHeading.ReplaceAllString(s, "")
	s = mdQuote.ReplaceAllString(s, "")
	s = mdBullet.ReplaceAllString(s, "")
	s = mdImage.ReplaceAllString(s, "$1")
	s = mdLink.ReplaceAllString(s, "$1")
	for range 3 { // nested emphasis
		s = mdEmph.ReplaceAllString(s, "$2")
	}
	var b strings.Builder
	for _, line := range strings.Split(s, "\n") {
		if t := strings.TrimSpace(line); strings.HasPrefix(t, "|") && strings.HasSuffix(t, "|") {
			cells := strings.Split(strings.Trim(t, "|"), "|")
			for i := range cells {
				cells[i] = strings.TrimSpace(cells[i])
			}
			line = strings.Join(cells, " · ")
		}
		b.WriteString(line)
		b.WriteByte('\n')
	}
	return strings.TrimSpace(b.String())
}

// Pair is one question and its answer.
type Pair struct {
	Question string `json:"question"`
	Answer   string `json:"answer"`
}

// ParseFAQ reads FAQ pairs: a JSON array of {question, answer}, or CSV
// with a header row naming the columns question and answer (others are
// ignored). Each pair needs both; problems name the pair ("pairs[3]",
// "row 4").
func ParseFAQ(body []byte, isCSV bool) ([]Pair, error) {
	var pairs []Pair
	if isCSV {
		r := csv.NewReader(bytes.NewReader(body))
		r.FieldsPerRecord = -1
		header, err := r.Read()
		if err != nil {
			return nil, fmt.Errorf("the CSV has no header row: %v", err)
		}
		q, a := -1, -1
		for i, h := range header {
			switch strings.ToLower(strings.TrimSpace(strings.TrimPrefix(h, "\ufeff"))) {
			case "question":
				q = i
			case "answer":
				a = i
			}
		}
		if q < 0 || a < 0 {
			return nil, errors.New("the CSV header must name the columns question and answer")
		}
		for row := 2; ; row++ {
			rec, err := r.Read()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return nil, fmt.Errorf("row %d: %v", row, err)
			}
			p := Pair{}
			if q < len(rec) {
				p.Question = strings.TrimSpace(rec[q])
			}
			if a < len(rec) {
				p.Answer = strings.TrimSpace(rec[a])
			}
			if p.Question == "" || p.Answer == "" {
				return nil, fmt.Errorf("row %d: a pair needs a question and an answer", row)
			}
			if pairs = append(pairs, p); len(pairs) > MaxFAQPairs {
				return nil, fmt.Errorf("more than %d pairs", MaxFAQPairs)
			}
		}
	} else {
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&pairs); err != nil {
			return nil, fmt.Errorf("FAQ JSON must be an array of {\"question\", \"answer\"}: %v", err)
		}
		if len(pairs) > MaxFAQPairs {
			return nil, fmt.Errorf("more than %d pairs", MaxFAQPairs)
		}
		for i := range pairs {
			pairs[i].Question, pairs[i].Answer = strings.TrimSpace(pairs[i].Question), strings.TrimSpace(pairs[i].Answer)
			if pairs[i].Question == "" || pairs[i].Answer == "" {
				return nil, fmt.Errorf("pairs[%d]: a pair needs a question and an answer", i)
			}
		}
	}
	if len(pairs) == 0 {
		return nil, errors.New("the FAQ holds no pairs")
	}
	return pairs, nil
}

// FAQChunks is one passage per pair: its question, then its answer.
func FAQChunks(pairs []Pair) []string {
	out := make([]string, len(pairs))
	for i, p := range pairs {
		out[i] = "Q: " + p.Question + "\nA: " + p.Answer
	}
	return out
}
