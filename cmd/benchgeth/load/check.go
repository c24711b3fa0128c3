package load

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Check decides whether a response body is a success.
type Check int

const (
	// CheckResult: a single response with a non-null result.
	CheckResult Check = iota
	// CheckRevert: a single response with an error whose message says
	// "execution reverted".
	CheckRevert
	// CheckSimulate: an eth_simulateV1 result whose every call has status
	// 0x1.
	CheckSimulate
	// CheckBatch: an array of responses, each with a non-null result.
	CheckBatch
)

type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

type response struct {
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *rpcError       `json:"error"`
}

// Failure is why a response is not a success; Kind groups failures in the
// report ("rpc error -32000", "http 503", "timeout"...).
type Failure struct {
	Kind   string
	Detail string
}

func (f *Failure) Error() string { return f.Kind + ": " + f.Detail }

func badResponse(format string, args ...any) *Failure {
	return &Failure{Kind: ErrBadResponse.Error(), Detail: fmt.Sprintf(format, args...)}
}

func rpcFailure(e *rpcError) *Failure {
	return &Failure{Kind: fmt.Sprintf("rpc error %d", e.Code), Detail: e.Message}
}

// checkBody checks a response body; it returns the response id (single
// responses) for the websocket client to match requests.
func checkBody(c Check, body []byte) (json.RawMessage, *Failure) {
	if c == CheckBatch {
		var rs []response
		if err := json.Unmarshal(body, &rs); err != nil {
			return nil, badResponse("%v: %.200s", err, body)
		}
		if len(rs) == 0 {
			return nil, badResponse("empty batch")
		}
		for _, r := range rs {
			if f := checkResult(&r); f != nil {
				return nil, f
			}
		}
		return nil, nil
	}
	var r response
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, badResponse("%v: %.200s", err, body)
	}
	switch c {
	case CheckRevert:
		if r.Error == nil {
			return r.ID, badResponse("want a revert, got result %.100s", r.Result)
		}
		if !strings.Contains(r.Error.Message, "execution reverted") {
			return r.ID, rpcFailure(r.Error)
		}
		return r.ID, nil
	case CheckSimulate:
		if f := checkResult(&r); f != nil {
			return r.ID, f
		}
		var blocks []struct {
			Calls []struct {
				Status string    `json:"status"`
				Error  *rpcError `json:"error"`
			} `json:"calls"`
		}
		if err := json.Unmarshal(r.Result, &blocks); err != nil || len(blocks) == 0 {
			return r.ID, badResponse("simulate result: %v: %.200s", err, r.Result)
		}
		for i, b := range blocks {
			for j, call := range b.Calls {
				if call.Status != "0x1" {
					detail := ""
					if call.Error != nil {
						detail = call.Error.Message
					}
					return r.ID, &Failure{Kind: "simulated call failed", Detail: fmt.Sprintf("block %d call %d: status %s %s", i, j, call.Status, detail)}
				}
			}
		}
		return r.ID, nil
	default:
		return r.ID, checkResult(&r)
	}
}

func checkResult(r *response) *Failure {
	if r.Error != nil {
		return rpcFailure(r.Error)
	}
	if len(r.Result) == 0 || string(r.Result) == "null" {
		return badResponse("no result")
	}
	return nil
}
