package doctest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Check reports how out fails e, or nil when it shows what e says.
func (e Expect) Check(out string) error {
	rest := strings.TrimSpace(out)
	if e.Status != 0 {
		first, after, _ := strings.Cut(rest, " ")
		if first != strconv.Itoa(e.Status) {
			return fmt.Errorf("status: got %q, want %d", first, e.Status)
		}
		rest = strings.TrimSpace(after)
	}
	if e.Contains != "" && !strings.Contains(out, e.Contains) {
		return fmt.Errorf("the output does not contain %q", e.Contains)
	}
	if e.HasJSON {
		got, err := firstJSON(rest)
		if err != nil {
			return err
		}
		if err := Match(got, e.JSON, "$"); err != nil {
			return err
		}
	}
	return nil
}

// firstJSON decodes the first JSON value of s (what follows is ignored:
// a trailing newline, a second answer).
func firstJSON(s string) (any, error) {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("the output is not JSON: %v", err)
	}
	return v, nil
}

// Match reports where got fails to contain want (path names the place):
// an object contains want's members (others may be there too), an array
// contains want's elements in order (others may come between), a string
// matches want with each "…" standing for any text, and numbers, booleans
// and null are equal.
func Match(got, want any, path string) error {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return fmt.Errorf("%s: got %s, want an object", path, show(got))
		}
		for k, wv := range w {
			gv, ok := g[k]
			if !ok {
				return fmt.Errorf("%s: no member %q (got %s)", path, k, show(got))
			}
			if err := Match(gv, wv, path+"."+k); err != nil {
				return err
			}
		}
		return nil
	case []any:
		g, ok := got.([]any)
		if !ok {
			return fmt.Errorf("%s: got %s, want an array", path, show(got))
		}
		i := 0
		for j, wv := range w {
			for ; i < len(g); i++ {
				if Match(g[i], wv, path) == nil {
					break
				}
			}
			if i == len(g) {
				return fmt.Errorf("%s: no element %d (%s) in order (got %s)", path, j, show(wv), show(got))
			}
			i++
		}
		return nil
	case string:
		g, ok := got.(string)
		if !ok {
			return fmt.Errorf("%s: got %s, want a string matching %q", path, show(got), w)
		}
		if !glob(w).MatchString(g) {
			return fmt.Errorf("%s: got %q, want %q", path, g, w)
		}
		return nil
	case float64:
		n, ok := got.(json.Number)
		if !ok {
			return fmt.Errorf("%s: got %s, want %v", path, show(got), w)
		}
		f, err := n.Float64()
		if err != nil || f != w {
			return fmt.Errorf("%s: got %s, want %v", path, n, w)
		}
		return nil
	default: // bool, nil
		if got != want {
			return fmt.Errorf("%s: got %s, want %s", path, show(got), show(want))
		}
		return nil
	}
}

// glob turns a string with "…" wildcards into an anchored expression.
func glob(w string) *regexp.Regexp {
	parts := strings.Split(w, "…")
	for i, p := range parts {
		parts[i] = regexp.QuoteMeta(p)
	}
	return regexp.MustCompile(`(?s)^` + strings.Join(parts, ".*") + `$`)
}

// show prints v as JSON, cut to a readable length.
func show(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Sprint(v)
	}
	s := strings.TrimSpace(b.String())
	if len(s) > 600 {
		s = s[:600] + "…"
	}
	return s
}

// MatchShape reports where got fails to have the shape of want, an
// example answer whose values come from another run: every member of
// want's objects is in got's (others may be there too) with the same JSON
// type, recursively; an array's elements have the shape of want's first
// element; a null on either side matches any value (a field that is null
// until something happens). Only what an example fixes is compared by
// value: the envelope's status and an error's code. Members named in free
// hold objects keyed by data (metadata, counts by state): only their being
// objects is compared.
func MatchShape(got, want any, path string, free map[string]bool) error {
	if got == nil || want == nil {
		return nil
	}
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return fmt.Errorf("%s: got %s, want an object", path, show(got))
		}
		for k, wv := range w {
			gv, ok := g[k]
			if !ok {
				return fmt.Errorf("%s: no member %q (got %s)", path, k, show(got))
			}
			if (path == "$" && k == "status") || (path == "$.error" && k == "code") {
				if err := Match(gv, wv, path+"."+k); err != nil {
					return err
				}
				continue
			}
			if _, isObj := wv.(map[string]any); isObj && free[k] {
				if _, ok := gv.(map[string]any); !ok && gv != nil {
					return fmt.Errorf("%s.%s: got %s, want an object", path, k, show(gv))
				}
				continue
			}
			if err := MatchShape(gv, wv, path+"."+k, free); err != nil {
				return err
			}
		}
		return nil
	case []any:
		g, ok := got.([]any)
		if !ok {
			return fmt.Errorf("%s: got %s, want an array", path, show(got))
		}
		for i := 0; i < len(w) && i < len(g); i++ {
			if err := MatchShape(g[i], w[i], fmt.Sprintf("%s[%d]", path, i), free); err != nil {
				return err
			}
		}
		return nil
	case string:
		if _, ok := got.(string); !ok {
			return fmt.Errorf("%s: got %s, want a string", path, show(got))
		}
	case float64:
		if _, ok := got.(json.Number); !ok {
			return fmt.Errorf("%s: got %s, want a number", path, show(got))
		}
	case bool:
		if _, ok := got.(bool); !ok {
			return fmt.Errorf("%s: got %s, want a boolean", path, show(got))
		}
	}
	return nil
}
