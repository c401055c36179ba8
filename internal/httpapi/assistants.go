package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"

	"context"
	"net/http"
	"switchboard/internal/analysis"
	"switchboard/internal/apperr"
	"switchboard/internal/flow"
	"switchboard/internal/webhook"

	"switchboard/internal/assistant"
	"switchboard/internal/id"
)

// applyAssistant sets the fields present in o onto a. Absent fields keep
// their value; null resets a field to its default.
func (s *Server) applyAssistant(o *object, a *assistant.Assistant) {
	def := assistant.Defaults(s.cfg.Providers)
	str := func(key string, dst *string, dflt string) {
		if o.present(key) {
			*dst = o.str(key, false)
			if *dst == "" {
				*dst = dflt
			}
		}
	}
	integer := func(key string, dst *int, dflt int) {
		if o.present(key) {
			*dst = o.integer(key, false, dflt)
		}
	}
	str("name", &a.Name, "")
	str("firstMessage", &a.FirstMessage, "")
	str("systemPrompt", &a.SystemPrompt, "")
	str("language", &a.Language, def.Language)
	if o.present("voice") {
		a.Voice = def.Voice
		if c := o.child("voice"); c != nil {
			str2 := func(k string, dst *string, d string) {
				if v := c.str(k, false); v != "" {
					*dst = v
				} else {
					*dst = d
				}
			}
			str2("provider", &a.Voice.Provider, def.Voice.Provider)
			str2("voiceId", &a.Voice.VoiceID, "")
			if fc := c.child("fallback"); fc != nil {
				a.Voice.Fallback = &assistant.VoiceFallback{Provider: fc.str("provider", true), VoiceID: fc.str("voiceId", false)}
				fc.done()
			}
			c.done()
		}
	}
	if o.present("transcriber") {
		a.Transcriber = def.Transcriber
		if c := o.child("transcriber"); c != nil {
			if v := c.str("provider", false); v != "" {
				a.Transcriber.Provider = v
			}
			a.Transcriber.Model = c.str("model", false)
			a.Transcriber.Language = c.str("language", false)
			if fc := c.child("fallback"); fc != nil {
				a.Transcriber.Fallback = &assistant.TranscriberFallback{
					Provider: fc.str("provider", true), Model: fc.str("model", false), Language: fc.str("language", false),
				}
				fc.done()
			}
			c.done()
		}
	}
	if o.present("endpointing") {
		a.Endpointing = def.Endpointing
		if c := o.child("endpointing"); c != nil {
			a.Endpointing = assistant.Endpointing{
				SilenceMs:     c.integer("silenceMs", false, 0),
				MinSpeechMs:   c.integer("minSpeechMs", false, 0),
				MaxWaitMs:     c.integer("maxWaitMs", false, 0),
				FastSilenceMs: c.integer("fastSilenceMs", false, 0),
			}
			c.done()
		}
	}
	if o.present("bargeIn") {
		a.BargeIn = def.BargeIn
		if c := o.child("bargeIn"); c != nil {
			a.BargeIn = assistant.BargeIn{Disabled: c.boolean("disabled"), MinSpeechMs: c.integer("minSpeechMs", false, 0)}
			c.done()
		}
	}
	if o.present("model") {
		a.Model = def.Model
		if c := o.child("model"); c != nil {
			a.Model.Provider = c.str("provider", true)
			a.Model.Model = c.str("model", false)
			a.Model.Temperature = c.number("temperature")
			a.Model.MaxTokens = c.integer("maxTokens", false, 0)
			c.done()
		}
	}
	if o.present("flow") {
		a.Flow = o.rawObject("flow")
	}
	if o.present("endCallPhrases") {
		a.EndCallPhrases = o.strings("endCallPhrases", false)
		if a.EndCallPhrases == nil {
			a.EndCallPhrases = []string{}
		}
	}
	integer("maxDurationSeconds", &a.MaxDurationSeconds, def.MaxDurationSeconds)
	integer("silenceTimeoutSeconds", &a.SilenceTimeoutSeconds, def.SilenceTimeoutSeconds)
	if o.present("tools") {
		a.Tools = []assistant.Tool{}
		for _, it := range o.objects("tools", false) {
			if it == nil {
				continue
			}
			t := assistant.Tool{
				Name:           it.str("name", true),
				Description:    it.str("description", false),
				URL:            it.str("url", true),
				Parameters:     it.rawObject("parameters"),
				TimeoutSeconds: it.integer("timeoutSeconds", false, 10),
			}
			if len(t.Parameters) == 0 {
				t.Parameters = json.RawMessage(`{"type":"object","properties":{}}`)
			}
			it.done()
			a.Tools = append(a.Tools, t)
		}
	}
	if o.present("transfer") {
		a.Transfer = def.Transfer
		if c := o.child("transfer"); c != nil {
			a.Transfer.Destinations = []assistant.TransferDestination{}
			for _, it := range c.objects("destinations", false) {
				if it == nil {
					continue
				}
				a.Transfer.Destinations = append(a.Transfer.Destinations, assistant.TransferDestination{
					Destination: it.str("destination", true),
					Description: it.str("description", false),
					Message:     it.str("message", false),
				})
				it.done()
			}
			c.done()
		}
	}
	if o.present("recording") {
		a.Recording = def.Recording
		if c := o.child("recording"); c != nil {
			a.Recording.Enabled = c.boolean("enabled")
			c.done()
		}
	}
	if o.present("voicemail") {
		a.Voicemail = def.Voicemail
		if c := o.child("voicemail"); c != nil {
			a.Voicemail.Detect = c.boolean("detect")
			if v := c.str("action", false); v != "" {
				a.Voicemail.Action = v
			}
			a.Voicemail.Message = c.str("message", false)
			c.done()
		}
	}
	if o.present("analysisPlan") {
		a.AnalysisPlan = assistant.AnalysisPlan{}
		if c := o.child("analysisPlan"); c != nil {
			a.AnalysisPlan.SummaryPrompt = c.str("summaryPrompt", false)
			a.AnalysisPlan.SuccessEvaluationRubric = c.str("successEvaluationRubric", false)
			a.AnalysisPlan.StructuredDataSchema = c.rawObject("structuredDataSchema")
			c.done()
		}
	}
	o.done()
}

// checkAssistant adds what only the server can check: the flow graph (and
// its transfer destinations), the analysis schema, and tool URLs against
// the SSRF guard.
func (s *Server) checkAssistant(ctx context.Context, a *assistant.Assistant, f *apperr.Fields) {
	if len(a.Flow) > 0 && string(a.Flow) != "null" && !f.Has("flow") {
		fl, err := flow.Parse(a.Flow)
		if err != nil {
			var e *apperr.Error
			if errors.As(err, &e) && len(e.Fields) > 0 {
				*f = append(*f, e.Fields...)
			} else {
				f.Add("flow", "%s", err.Error())
			}
		}
		if fl != nil { // transfer nodes: the number or URI itself, as for transfer.destinations
			for _, nid := range slices.Sorted(maps.Keys(fl.Nodes)) {
				if n := fl.Nodes[nid]; n.Destination != "" {
					if err := assistant.CheckDestination(n.Destination); err != nil {
						f.Add("flow.nodes."+nid+".destination", "%s", err.Error())
					}
				}
			}
		}
	}
	if sc := a.AnalysisPlan.StructuredDataSchema; len(sc) > 0 && !f.Has("analysisPlan.structuredDataSchema") {
		if err := analysis.ValidSchema(sc); err != nil {
			f.Add("analysisPlan.structuredDataSchema", "%s", err.Error())
		}
	}
	for i, t := range a.Tools {
		field := fmt.Sprintf("tools[%d].url", i)
		if f.Has(field) {
			continue
		}
		if err := s.cfg.Webhooks.CheckURL(ctx, t.URL); err != nil {
			f.Add(field, "%s", err.Error())
		}
	}
}

func (s *Server) createAssistant(ctx context.Context, r *request) (response, error) {
	o, err := parseObject(r.body)
	if err != nil {
		return response{}, err
	}
	a := assistant.Defaults(s.cfg.Providers)
	if !o.present("name") {
		o.errs.Add("name", "is required")
	}
	s.applyAssistant(o, &a)
	if len(*o.errs) == 0 {
		a.Validate(s.cfg.Providers, o.errs)
		s.checkAssistant(ctx, &a, o.errs)
	}
	if err := o.errs.Err(); err != nil {
		return response{}, err
	}
	now := s.now().UTC()
	a.ID, a.OrgID, a.CreatedAt, a.UpdatedAt = id.New(id.Assistant), r.orgID, now, now
	a.ToolSecret = webhook.NewSecret()
	if err := s.store.CreateAssistant(ctx, a); err != nil {
		return response{}, err
	}
	return ok(http.StatusCreated, "assistant created", viewAssistant(a)), nil
}

func (s *Server) listAssistants(ctx context.Context, r *request) (response, error) {
	q := newQuery(r.URL.Query(), "page", "pageSize")
	pg := q.page()
	if err := q.errs.Err(); err != nil {
		return response{}, err
	}
	list, total, err := s.store.ListAssistants(ctx, r.orgID, pg)
	if err != nil {
		return response{}, err
	}
	resp := ok(http.StatusOK, "assistants", viewAll(list, viewAssistant))
	resp.body.Pagination = pageOf(pg, total)
	return resp, nil
}

func (s *Server) getAssistant(ctx context.Context, r *request) (response, error) {
	aid, err := pathID(r, "id", id.Assistant, "assistant")
	if err != nil {
		return response{}, err
	}
	a, err := s.store.GetAssistant(ctx, r.orgID, aid)
	if err != nil {
		return response{}, err
	}
	return ok(http.StatusOK, "assistant", viewAssistant(a)), nil
}

func (s *Server) updateAssistant(ctx context.Context, r *request) (response, error) {
	o, err := parseObject(r.body)
	if err != nil {
		return response{}, err
	}
	aid, err := pathID(r, "id", id.Assistant, "assistant")
	if err != nil {
		return response{}, err
	}
	a, err := s.store.GetAssistant(ctx, r.orgID, aid)
	if err != nil {
		return response{}, err
	}
	s.applyAssistant(o, &a)
	if len(*o.errs) == 0 {
		a.Validate(s.cfg.Providers, o.errs)
		s.checkAssistant(ctx, &a, o.errs)
	}
	if err := o.errs.Err(); err != nil {
		return response{}, err
	}
	a.UpdatedAt = s.now().UTC()
	if a.ToolSecret == "" { // created before tool secrets existed
		a.ToolSecret = webhook.NewSecret()
	}
	if err := s.store.UpdateAssistant(ctx, a); err != nil {
		return response{}, err
	}
	return ok(http.StatusOK, "assistant updated", viewAssistant(a)), nil
}

func (s *Server) deleteAssistant(ctx context.Context, r *request) (response, error) {
	aid, err := pathID(r, "id", id.Assistant, "assistant")
	if err != nil {
		return response{}, err
	}
	if err := s.store.DeleteAssistant(ctx, r.orgID, aid); err != nil {
		return response{}, err
	}
	return ok(http.StatusOK, "assistant deleted", nil), nil
}
