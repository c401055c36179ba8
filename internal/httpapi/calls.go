package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"

	"switchboard/internal/apperr"
	"switchboard/internal/call"
	"switchboard/internal/callctl"
	"switchboard/internal/catalog"
	"switchboard/internal/id"
	"switchboard/internal/jsonobj"
	"switchboard/internal/phone"
	"switchboard/internal/store"
	"switchboard/internal/vars"
	"switchboard/internal/view"
)

// GatewayPath is the websocket path of web calls.
const GatewayPath = view.GatewayPath

func (s *Server) listCalls(ctx context.Context, r *request) (response, error) {
	q := newQuery(r.URL.Query(), "page", "pageSize", "type", "status", "direction", "createdAfter", "createdBefore")
	f := store.CallFilter{Page: q.page()}
	if t := q.v.Get("type"); t != "" {
		if t != string(call.Web) && t != string(call.Phone) {
			q.errs.Add("type", "must be web or phone")
		}
		f.Type = call.Type(t)
	}
	if st := q.v.Get("status"); st != "" {
		v, ok := call.ParseStatus(st)
		if !ok {
			q.errs.Add("status", "must be 0-3 or one of queued, ringing, in-progress, ended")
		}
		f.Status = &v
	}
	if d := q.v.Get("direction"); d != "" {
		if d != string(call.Outbound) && d != string(call.Inbound) {
			q.errs.Add("direction", "must be outbound or inbound")
		}
		f.Direction = call.Direction(d)
	}
	f.CreatedAfter, f.CreatedBefore = q.time("createdAfter"), q.time("createdBefore")
	if err := q.errs.Err(); err != nil {
		return response{}, err
	}
	calls, total, err := s.store.ListCalls(ctx, r.orgID, f)
	if err != nil {
		return response{}, err
	}
	views := make([]callView, len(calls))
	for i, c := range calls {
		views[i] = s.viewCall(c)
	}
	resp := ok(http.StatusOK, "calls", views)
	resp.body.Pagination = pageOf(f.Page, total)
	return resp, nil
}

func (s *Server) initiateWebCall(ctx context.Context, r *request) (response, error) {
	o, err := parseObject(r.body)
	if err != nil {
		return response{}, err
	}
	assistantID := o.Str("assistantId", true)
	typ := o.Str("type", false)
	variables := requestVariables(o)
	o.Done()
	if typ != "" && typ != string(call.Web) {
		o.Errs.Add("type", "unsupported type %q: only web is accepted here; place phone calls with POST /v1/calls/phone/initiate", typ)
	}
	if assistantID != "" && !id.Valid(id.Assistant, assistantID) {
		// The contract has no 404 here: an unknown assistant is a 400 (callctl).
		o.Errs.Add("assistantId", "assistant not found")
	}
	if err := o.Errs.Err(); err != nil {
		return response{}, err
	}
	req := callctl.WebCall{OrgID: r.orgID, AssistantID: assistantID, Variables: variables}
	if r.pub != nil {
		// Checked before any lookup: the key learns nothing of the
		// organization's other assistants.
		if !r.pub.AllowsAssistant(assistantID) {
			return response{}, &apperr.Error{Kind: apperr.PermissionDenied, Message: "this publishable key may not start calls for this assistant",
				Fields: []apperr.FieldError{{Field: "assistantId", Message: "is not one of the publishable key's assistants"}}}
		}
		req.PublicKeyID = r.pub.ID
	}
	c, err := s.calls.StartWebCall(ctx, req)
	if err != nil {
		return response{}, err
	}
	// data.id is the new resource's id on every create (docs/api.md,
	// "Envelope and errors"); callId and gateway are the contract's.
	resp := ok(http.StatusCreated, "web call created; connect a websocket to gateway.url", createdID{ID: c.ID})
	resp.body.CallID = c.ID
	resp.body.Gateway = &gateway{Transport: "websocket", Path: GatewayPath, URL: s.gatewayURL(c)}
	return resp, nil
}

// gatewayURL is {ws_base_url}/new-web-call/connection?assistant_id=…&call_id=….
func (s *Server) gatewayURL(c call.Call) string { return view.GatewayURL(s.cfg.PublicURL, c) }

func (s *Server) initiatePhoneCall(ctx context.Context, r *request) (response, error) {
	o, err := parseObject(r.body)
	if err != nil {
		return response{}, err
	}
	pid := o.Str("phone_purchase_id", true)
	to := o.Str("phoneNumber", true)
	provider := o.Str("provider", false)
	variables := requestVariables(o)
	o.Done()
	if to != "" {
		n, err := phone.NormalizeE164(to)
		if err != nil {
			o.Errs.Add("phoneNumber", "%s", err.Error())
		}
		to = n
	}
	if provider != "" {
		if _, ok := s.calls.Provider(provider); !ok {
			names := s.calls.ProviderNames()
			slices.Sort(names)
			o.Errs.Add("provider", "%s", catalog.Check(catalog.Telephony, provider, names))
		}
	}
	if err := o.Errs.Err(); err != nil {
		return response{}, err
	}
	var unknown unknownIDs
	unknown.check("phone_purchase_id", pid, id.Purchase, "phone purchase")
	if err := unknown.err(); err != nil {
		return response{}, err
	}
	c, err := s.calls.PlacePhoneCall(ctx, callctl.PhoneCall{OrgID: r.orgID, PurchaseID: pid, To: to, Provider: provider, Variables: variables})
	if err != nil {
		return response{}, onField(err, "phone_purchase_id")
	}
	resp := ok(http.StatusCreated, "phone call initiated", s.viewCall(c))
	resp.body.CallID = c.ID
	return resp, nil
}

// ownCall reads the path's call, 404 for ids that cannot exist.
func (s *Server) ownCall(ctx context.Context, r *request) (call.Call, error) {
	cid, err := pathID(r, "id", id.Call, "call")
	if err != nil {
		return call.Call{}, err
	}
	return s.store.GetCall(ctx, r.orgID, cid)
}

// getCall shows the call with the latency summary of its voice turns (the
// one endpoint that reads the turns for it; listings and webhooks do not).
func (s *Server) getCall(ctx context.Context, r *request) (response, error) {
	c, err := s.ownCall(ctx, r)
	if err != nil {
		return response{}, err
	}
	turns, err := s.store.ListTurns(ctx, r.orgID, c.ID)
	if err != nil {
		return response{}, err
	}
	return ok(http.StatusOK, "call", view.CallDetail{Call: s.viewCall(c), Latency: view.SummarizeLatency(turns)}), nil
}

type turnView struct {
	Seq         int      `json:"seq"`
	Role        string   `json:"role"`
	Text        string   `json:"text"`
	StartedAt   ts       `json:"startedAt"`
	EndedAt     ts       `json:"endedAt"`
	Interrupted bool     `json:"interrupted"`
	LatencyMs   *float64 `json:"latencyMs"`
	// Latency is where a voice reply's time went; null for other turns.
	Latency *view.Latency `json:"latency"`
}

func (s *Server) getTranscripts(ctx context.Context, r *request) (response, error) {
	c, err := s.ownCall(ctx, r)
	if err != nil {
		return response{}, err
	}
	turns, err := s.store.ListTurns(ctx, r.orgID, c.ID)
	if err != nil {
		return response{}, err
	}
	out := make([]turnView, len(turns))
	for i, t := range turns {
		out[i] = turnView{Seq: t.Seq, Role: t.Role, Text: t.Text, StartedAt: ts(t.StartedAt), EndedAt: ts(t.EndedAt), Interrupted: t.Interrupted}
		if t.Role == call.RoleAssistant && t.Latency > 0 {
			l := view.Millis(t.Latency)
			out[i].LatencyMs = &l
		}
		if t.Role == call.RoleAssistant {
			out[i].Latency = view.NewLatency(t.Breakdown)
		}
	}
	return ok(http.StatusOK, "transcript", out), nil
}

type analysisView struct {
	CallID            string          `json:"callId"`
	State             string          `json:"state"`
	Summary           *string         `json:"summary"`
	Sentiment         json.RawMessage `json:"sentiment"`
	SuccessEvaluation json.RawMessage `json:"successEvaluation"`
	StructuredData    json.RawMessage `json:"structuredData"`
	Notes             json.RawMessage `json:"notes,omitempty"`
	// SuccessReasoning and Model are an analysis by the model's.
	SuccessReasoning string          `json:"successReasoning,omitempty"`
	Model            json.RawMessage `json:"model,omitempty"`
	Error            string          `json:"error,omitempty"`
	UpdatedAt        ts              `json:"updatedAt"`
}

func (s *Server) getAnalysis(ctx context.Context, r *request) (response, error) {
	c, err := s.ownCall(ctx, r)
	if err != nil {
		return response{}, err
	}
	null := json.RawMessage("null")
	v := analysisView{CallID: c.ID, State: store.AnalysisPending, Sentiment: null, SuccessEvaluation: null, StructuredData: null}
	a, err := s.store.GetAnalysis(ctx, r.orgID, c.ID)
	switch {
	case apperr.Is(err, apperr.NotFound):
		// The call has not ended yet: its analysis is still to come.
	case err != nil:
		return response{}, err
	default:
		v.State, v.Error, v.UpdatedAt = a.State, a.Error, ts(a.UpdatedAt)
		if a.State == store.AnalysisReady {
			var res struct {
				Summary           string          `json:"summary"`
				Sentiment         json.RawMessage `json:"sentiment"`
				SuccessEvaluation json.RawMessage `json:"successEvaluation"`
				StructuredData    json.RawMessage `json:"structuredData"`
				Notes             json.RawMessage `json:"notes"`
				SuccessReasoning  string          `json:"successReasoning"`
				Model             json.RawMessage `json:"model"`
			}
			if err := json.Unmarshal(a.Result, &res); err != nil {
				return response{}, err
			}
			v.Summary = &res.Summary
			v.Sentiment, v.SuccessEvaluation, v.StructuredData, v.Notes = orNull(res.Sentiment), orNull(res.SuccessEvaluation), orNull(res.StructuredData), res.Notes
			v.SuccessReasoning, v.Model = res.SuccessReasoning, res.Model
		}
	}
	return ok(http.StatusOK, "analysis", v), nil
}

func orNull(m json.RawMessage) json.RawMessage {
	if len(m) == 0 {
		return json.RawMessage("null")
	}
	return m
}

// getRecording streams the call's recording (audio/wav, with its length;
// ranges work): 404 when the call has none, or is another organization's.
func (s *Server) getRecording(ctx context.Context, r *request) (response, error) {
	c, err := s.ownCall(ctx, r)
	if err != nil {
		return response{}, err
	}
	if c.Recording == "" || s.cfg.Recordings == nil {
		return response{}, apperr.NotFoundf("call %s has no recording", c.ID)
	}
	f, fi, err := s.cfg.Recordings.Open(c.Recording)
	if err != nil {
		return response{}, err
	}
	return response{status: http.StatusOK, stream: func(w http.ResponseWriter, req *http.Request) {
		defer func() { _ = f.Close() }()
		w.Header().Set("Content-Type", "audio/wav")
		w.Header().Set("Content-Disposition", `attachment; filename="`+c.ID+`.wav"`)
		http.ServeContent(w, req, "", fi.ModTime(), f)
	}}, nil
}

// requestVariables reads a call request's variables (docs/api.md,
// "Variables"); its problems are o's errors, named by the variable.
func requestVariables(o *jsonobj.Object) vars.Values {
	raw := o.RawObject("variables")
	v, problems := vars.Request("variables", raw)
	for _, p := range problems {
		o.Errs.Add(p.Field, "%s", p.Message)
	}
	return v
}
