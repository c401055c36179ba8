package assistant

import (
	"slices"

	"switchboard/internal/catalog"
)

// Choice is one provider of a role as a server offers it to assistants
// (GET /v1/providers, the dashboard's form).
type Choice struct {
	Name string `json:"name"`
	// Configured says the server runs it: an assistant may name it.
	Configured bool `json:"configured"`
	// Default marks what a new assistant gets when it names none (the
	// model: for an assistant without a flow).
	Default bool `json:"default"`
	// Enable says how to make the server run it (flags and environment
	// variables); empty when it is configured.
	Enable string `json:"enable,omitempty"`
}

// Choices are the providers of each role a build knows, in the
// catalog's order, as a server running p offers them.
type Choices struct {
	Model       []Choice `json:"model"`
	Voice       []Choice `json:"voice"`
	Transcriber []Choice `json:"transcriber"`
}

// Choices lists what p runs and what it could run, with the defaults.
func (p Providers) Choices() Choices {
	def := Defaults(p)
	return Choices{
		Model:       choices(catalog.Model, p.Model, def.Model.Provider),
		Voice:       choices(catalog.Voice, p.Voice, def.Voice.Provider),
		Transcriber: choices(catalog.Transcriber, p.Transcriber, def.Transcriber.Provider),
	}
}

func choices(role catalog.Role, configured []string, dflt string) []Choice {
	out := []Choice{}
	for _, name := range catalog.Known(role) {
		c := Choice{Name: name, Configured: slices.Contains(configured, name), Default: name == dflt}
		if !c.Configured {
			p, _ := catalog.Lookup(role, name)
			c.Enable = p.HowToEnable()
		}
		out = append(out, c)
	}
	return out
}
