package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"switchboard/internal/doctest"
	"switchboard/internal/nodetest"
)

// docID is an id as docs/api.md's examples write them: kind_ + 26 base32.
var docID = regexp.MustCompile(`\b(call|asst|pn|ct|sch|att|wh|msg|dlv|conn|pkey)_[a-z2-7]{26}\b`)

// TestAPIExamples runs docs/api.md's curl examples against a fresh server
// and holds each answer to the one the document prints under it: the
// same members with the same JSON types, recursively, the same envelope
// status and error code (doctest.MatchShape: the values are another
// run's). The examples' ids name resources of the document's own run;
// each is replaced by the test's resource of the same kind (an assistant,
// a number, contacts, an ended call, a schedule, a webhook, a
// connection), made before the examples run. Examples that remove what
// they name run last, latest first, after the schedules are canceled. An example the document cannot run here says why
// in a <!-- doctest: skip … --> comment above it; a shell block with
// neither an answer nor a "# ⇒" line is an illustration and is not run.
func TestAPIExamples(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the server: not in -short")
	}
	t.Parallel()
	serverBin(t, buildTags...) // before the deadline: a build on a loaded machine takes minutes; the README's build
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	mod, err := nodetest.ModuleDir()
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join(mod, "docs", "api.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks, err := doctest.Blocks(doc, "")
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	node := docServer(ctx, t, mod, work, buildTags, "--sandbox-ring-time", "100ms")
	distinct, seenIDs := map[string]int{}, map[string]bool{} // the document's distinct ids by kind
	for _, m := range docID.FindAllStringSubmatch(string(doc), -1) {
		if !seenIDs[m[0]] {
			seenIDs[m[0]] = true
			distinct[m[1]]++
		}
	}
	ids := apiFixtures(ctx, t, node.URL, node.Key, distinct["asst"], distinct["ct"])
	// Each distinct id of the document gets the next resource of its kind
	// (two contacts of one example stay two).
	replace, seen, next := []string{}, map[string]bool{}, map[string]int{}
	for _, m := range docID.FindAllStringSubmatch(string(doc), -1) {
		if list := ids[m[1]]; len(list) > 0 && !seen[m[0]] {
			seen[m[0]] = true
			replace = append(replace, m[0], list[next[m[1]]%len(list)])
			next[m[1]]++
		}
	}
	// The document's dates are its own run's, in the past now: each day
	// it asks for is moved to tomorrow or after, in the same order.
	var days []string
	for _, m := range regexp.MustCompile(`"(20\d\d-\d\d-\d\d)T`).FindAllStringSubmatch(string(doc), -1) {
		if !slices.Contains(days, m[1]) {
			days = append(days, m[1])
		}
	}
	slices.Sort(days)
	for i, d := range days {
		replace = append(replace, `"`+d+"T", `"`+time.Now().UTC().AddDate(0, 0, 1+i).Format("2006-01-02")+"T")
	}
	sh, err := doctest.NewShell(work, []string{"BASE=" + node.URL, "KEY=" + node.Key})
	if err != nil {
		t.Fatal(err)
	}
	defer sh.Close()
	r := &doctest.Runner{Shell: sh, Replace: replace, Timeout: 30 * time.Second}
	rep := strings.NewReplacer(replace...)
	var last []doctest.Block
	ran := 0
	run := func(b doctest.Block) {
		steps, err := doctest.Steps(ctx, b)
		if err != nil {
			t.Errorf("docs/api.md:%d: %v", b.Line, err)
			return
		}
		if b.Answer == "" {
			if err := r.Run(ctx, steps); err != nil {
				t.Errorf("docs/api.md (%s): %v", b.Heading, err)
			}
			ran++
			return
		}
		var want any
		if err := json.Unmarshal([]byte(rep.Replace(b.Answer)), &want); err != nil {
			t.Errorf("docs/api.md:%d: the example's answer is not JSON: %v", b.AnswerLine, err)
			return
		}
		cmd := make([]string, 0, len(steps))
		for _, st := range steps {
			cmd = append(cmd, rep.Replace(st.Command))
		}
		out, code, err := sh.Run(ctx, strings.Join(cmd, "\n"), 30*time.Second)
		if err == nil && code != 0 {
			err = fmt.Errorf("exit status %d", code)
		}
		if err == nil {
			var got any
			if got, err = firstJSONValue(out); err == nil {
				err = doctest.MatchShape(got, want, "$", apiDocMaps)
			}
		}
		if err != nil {
			t.Errorf("docs/api.md:%d (%s): the answer is not the example's (line %d): %v\nran:\n%s\nanswer:\n%s", b.Line, b.Heading, b.AnswerLine, err, strings.Join(cmd, "\n"), out)
		}
		ran++
	}
	for _, b := range blocks {
		hasExpect := strings.Contains(strings.Join(b.Lines, "\n"), "# ⇒")
		switch {
		case b.Skip != "":
			t.Logf("docs/api.md:%d (%s): not run: %s", b.Line, b.Heading, b.Skip)
		case b.Answer == "" && !hasExpect:
		case strings.Contains(strings.Join(b.Lines, "\n"), "-X DELETE"):
			last = append(last, b)
		default:
			run(b)
		}
	}
	// A number with a schedule still pending cannot be released (a 409):
	// cancel them first, as the API asks.
	var schedules struct{ Data []struct{ ID string } }
	if err := nodetest.Do(ctx, node.URL, node.Key, "GET", "/v1/phone/schedules?pageSize=100", nil, &schedules); err != nil {
		t.Fatal(err)
	}
	for _, sc := range schedules.Data {
		if err := nodetest.Do(ctx, node.URL, node.Key, "POST", "/v1/phone/schedules/"+sc.ID+"/cancel", nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	for i := len(last) - 1; i >= 0; i-- { // what a later example removes may hold what an earlier one does
		run(last[i])
	}
	if ran < 25 {
		t.Fatalf("ran %d of docs/api.md's examples; it has more: did their format change?", ran)
	}
	t.Logf("ran %d examples of docs/api.md", ran)
}

// apiDocMaps are the members whose objects are keyed by data, not by the
// API: a contact's metadata, counts by state or outcome, calls by number.
var apiDocMaps = map[string]bool{"metadata": true, "attemptCounts": true, "completed": true, "liveCalls": true}

// firstJSONValue decodes the first JSON value of out, numbers kept as
// json.Number (as doctest.MatchShape wants them).
func firstJSONValue(out string) (any, error) {
	dec := json.NewDecoder(strings.NewReader(out))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("the answer is not JSON: %v", err)
	}
	return v, nil
}

// apiFixtures makes the resources the examples name and returns their ids
// by kind: assistants and contacts as many as the document names (the
// first assistant on the number; the others free to be changed or
// deleted), one of every other kind.
func apiFixtures(ctx context.Context, t *testing.T, base, key string, assistants, contacts int) map[string][]string {
	t.Helper()
	do := func(method, path string, body any) map[string]any {
		t.Helper()
		var out map[string]any
		if err := nodetest.Do(ctx, base, key, method, path, body, &out); err != nil {
			t.Fatalf("fixture: %v", err)
		}
		return out
	}
	data := func(m map[string]any) map[string]any { d, _ := m["data"].(map[string]any); return d }
	ids := map[string]string{}
	ids["asst"] = data(do("POST", "/v1/assistants", map[string]any{"name": "Booking line", "model": map[string]any{"provider": "flow"},
		"flow": map[string]any{"start": "ask", "nodes": map[string]any{
			"ask": map[string]any{"type": "ask", "text": "What day would suit you?", "branches": []any{map[string]any{"match": map[string]any{"kind": "date"}, "capture": "date", "next": "bye"}}},
			"bye": map[string]any{"type": "end", "text": "Booked for {{date}}.", "success": true}}},
		"analysisPlan": map[string]any{"structuredDataSchema": map[string]any{"type": "object", "properties": map[string]any{"date": map[string]any{"type": "string", "format": "date"}}}},
	}))["id"].(string)
	ids["pn"] = data(do("POST", "/v1/phone/purchases", map[string]any{"number": "+14155550100", "provider": "sandbox"}))["id"].(string)
	people := []any{map[string]any{"name": "Ada", "phoneNumber": "+14155551234", "timezone": "America/Los_Angeles"}}
	for i := 1; i < max(contacts, 2); i++ {
		people = append(people, map[string]any{"name": fmt.Sprintf("Contact %d", i), "phoneNumber": fmt.Sprintf("+1212555%04d", 9800+i)})
	}
	var cts []string
	for _, c := range data(do("POST", "/v1/phone/contacts/"+ids["pn"], map[string]any{"contacts": people}))["created"].([]any) {
		cts = append(cts, c.(string))
	}
	ids["ct"] = cts[0]
	var more []string
	for i := 1; i < assistants; i++ {
		more = append(more, data(do("POST", "/v1/assistants", map[string]any{"name": fmt.Sprintf("Assistant %d", i), "model": map[string]any{"provider": "flow"},
			"flow": map[string]any{"start": "bye", "nodes": map[string]any{"bye": map[string]any{"type": "end", "text": "Goodbye."}}}}))["id"].(string))
	}
	do("POST", "/v1/phone/allocate-assistant", map[string]any{"id": ids["pn"], "inboundAssistantId": ids["asst"], "outboundAssistantId": ids["asst"]})
	ids["call"] = data(do("POST", "/v1/calls/phone/initiate", map[string]any{"phone_purchase_id": ids["pn"], "phoneNumber": "+14155551234"}))["id"].(string)
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(200 * time.Millisecond) {
		a := data(do("GET", "/v1/calls/"+ids["call"]+"/analysis", nil))
		if a["status"] == "done" || a["summary"] != nil && a["summary"] != "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("fixture: the call's analysis is not ready within a minute: %v", a)
		}
	}
	due := time.Now().Add(24 * time.Hour).UTC().Format("2006-01-02T15:04:05.000Z")
	sch := do("POST", "/v1/phone/schedule-call", map[string]any{"name": "Renewal reminders", "contacts_id": []any{ids["ct"]}, "phone_id": ids["pn"],
		"message": "Your plan renews soon", "dates": []any{due}, "timezone": "America/New_York"})
	ids["sch"] = sch["id"].(string)
	attempts := data(do("GET", "/v1/phone/schedules/"+ids["sch"], nil))["attempts"].([]any)
	ids["att"] = attempts[0].(map[string]any)["id"].(string)
	ids["wh"] = data(do("POST", "/v1/webhooks", map[string]any{"kind": "listener"}))["id"].(string)
	ids["conn"] = data(do("POST", "/v1/phone/connections", map[string]any{"provider": "sip", "name": "Main trunk",
		"sip": map[string]any{"address": "sip.example.com", "numbers": []any{"+16175550999"}}}))["id"].(string)
	ids["pkey"] = data(do("POST", "/v1/public-keys", map[string]any{"name": "Website", "assistantIds": []any{ids["asst"]}, "origins": []any{"https://www.example.com"}}))["id"].(string)
	lists := map[string][]string{}
	for k, v := range ids {
		lists[k] = []string{v}
	}
	lists["ct"] = cts
	lists["asst"] = append(lists["asst"], more...)
	return lists
}
