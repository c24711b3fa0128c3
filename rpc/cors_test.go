package rpc

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/rs/zerolog"
)

func TestCORS(t *testing.T) {
	cases := []struct {
		name       string
		origins    []string
		origin     string
		preflight  bool
		wantAllow  string
		wantStatus int
	}{
		{"no config", nil, "https://app.example", false, "", http.StatusOK},
		{"allowed origin", []string{"https://app.example"}, "https://app.example", false, "https://app.example", http.StatusOK},
		{"other origin", []string{"https://app.example"}, "https://evil.example", false, "", http.StatusOK},
		{"wildcard", []string{"*"}, "https://any.example", false, "https://any.example", http.StatusOK},
		{"preflight", []string{"*"}, "https://any.example", true, "https://any.example", http.StatusNoContent},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.CORSOrigins = tc.origins
			s, err := NewServer(cfg, zerolog.Nop())
			if err != nil {
				t.Fatal(err)
			}
			s.Register("web3_clientVersion", func(context.Context, Params) (any, error) { return "x", nil })
			var req *http.Request
			if tc.preflight {
				req = httptest.NewRequest(http.MethodOptions, "/", nil)
				req.Header.Set("Access-Control-Request-Method", "POST")
			} else {
				req = httptest.NewRequest(http.MethodPost, "/", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"web3_clientVersion"}`))
				req.Header.Set("Content-Type", "application/json")
			}
			req.Header.Set("Origin", tc.origin)
			rec := httptest.NewRecorder()
			s.ServeHTTP(rec, req)
			if got := rec.Header().Get("Access-Control-Allow-Origin"); got != tc.wantAllow {
				t.Errorf("Allow-Origin %q, want %q", got, tc.wantAllow)
			}
			if rec.Code != tc.wantStatus {
				t.Errorf("status %d, want %d", rec.Code, tc.wantStatus)
			}
		})
	}
}
