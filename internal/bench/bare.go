package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"
)

// bareCall is an item of the bare handler's answer, the same shape as GET /v1/calls'
// (httpapi's envelope and callView, mirrored here field for field because
// those types are unexported).
type bareCall struct {
	ID              string  `json:"id"`
	Type            string  `json:"type"`
	Status          int     `json:"status"`
	StatusText      string  `json:"statusText"`
	Outcome         *string `json:"outcome"`
	EndedReason     *string `json:"endedReason"`
	AssistantID     string  `json:"assistantId"`
	PhonePurchaseID string  `json:"phonePurchaseId,omitempty"`
	From            string  `json:"from,omitempty"`
	To              string  `json:"to,omitempty"`
	Provider        string  `json:"provider,omitempty"`
	AttemptID       string  `json:"scheduleAttemptId,omitempty"`
	CreatedAt       *string `json:"createdAt"`
	UpdatedAt       *string `json:"updatedAt"`
	StartedAt       *string `json:"startedAt"`
	EndedAt         *string `json:"endedAt"`
	DurationSeconds float64 `json:"durationSeconds"`
}

type barePagination struct {
	Page     int `json:"page"`
	PageSize int `json:"pageSize"`
	Total    int `json:"total"`
}

// BarePage is a page of the listing as the API renders it.
type BarePage struct {
	Status     bool            `json:"status"`
	Message    string          `json:"message"`
	Data       []bareCall      `json:"data"`
	Pagination *barePagination `json:"pagination,omitempty"`
	RequestID  string          `json:"requestId"`
}

// ParsePage reads a GET /v1/calls body into the mirror types.
func ParsePage(body []byte) (BarePage, error) {
	var p BarePage
	if err := json.Unmarshal(body, &p); err != nil {
		return p, err
	}
	if !p.Status || p.Pagination == nil {
		return p, fmt.Errorf("not a listing page: %.200s", body)
	}
	return p, nil
}

// BareHandler is the comparison point: plain net/http that, per request,
// builds the envelope around an in-memory slice of calls and encodes it
// with encoding/json. No auth, routing table, database, logging or metrics.
func BareHandler(page BarePage) http.Handler {
	var n atomic.Uint64
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := page // shares Data read-only
		p.RequestID = "req_" + fmt.Sprintf("%026s", strconv.FormatUint(n.Add(1), 32))
		w.Header().Set("Content-Type", "application/json")
		if err := json.NewEncoder(w).Encode(p); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
		}
	})
}

// BareServer serves h on 127.0.0.1:0; stop it with Close.
type BareServer struct {
	URL string
	srv *http.Server
}

// StartBare starts the bare server.
func StartBare(ctx context.Context, h http.Handler) (*BareServer, error) {
	ln, err := new(net.ListenConfig).Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	go srv.Serve(ln) //nolint:errcheck // ErrServerClosed on Close
	return &BareServer{URL: "http://" + ln.Addr().String(), srv: srv}, nil
}

// Close stops the bare server.
func (b *BareServer) Close() error { return b.srv.Close() }
