package rpc

// The call log. Every call is logged at debug level: transport, remote
// address, method, duration (with its unit), code (0 = success) and, for
// a failed call, the error message. A request that timed out is also
// logged at warn level, at most once per timeoutWarnEvery, with the number
// of timeouts left unreported since the previous warning: timeouts mean the
// node is overloaded or a limit is too tight, and an operator should see
// them without one line per request. HTTP-level refusals (wrong method or
// content type) are logged at debug where they are answered.

import (
	"sync"
	"time"
)

// timeoutWarnEvery is the shortest interval between two warnings about
// timed-out requests.
const timeoutWarnEvery = 10 * time.Second

func (s *Server) logCall(ss *session, method string, d time.Duration, e *Error) {
	if e != nil && e.Code == CodeTimeout {
		if ok, suppressed := s.timeoutWarn.allow(); ok {
			s.log.Warn().Str("transport", ss.transport).Str("remote", ss.remote).Str("method", method).
				Stringer("duration", d).Int("unreported", suppressed).Stringer("limit", s.cfg.RequestTimeout).
				Msg("rpc request timed out")
		}
	}
	ev := s.log.Debug()
	if ev == nil {
		return
	}
	ev = ev.Str("transport", ss.transport).Str("remote", ss.remote).Str("method", method).Stringer("duration", d)
	if e == nil {
		ev.Int("code", 0).Msg("rpc call")
		return
	}
	ev.Int("code", e.Code).Str("error", e.Message).Msg("rpc call")
}

// rateLimiter lets one event through per interval and counts the others.
// Its zero value allows one per timeoutWarnEvery on the wall clock.
type rateLimiter struct {
	mu         sync.Mutex
	every      time.Duration    // 0: timeoutWarnEvery
	now        func() time.Time // nil: time.Now
	last       time.Time
	suppressed int
}

// allow reports whether this event may be logged and, if so, how many
// were held back since the last one that was.
func (l *rateLimiter) allow() (bool, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now, every := time.Now, l.every
	if l.now != nil {
		now = l.now
	}
	if every == 0 {
		every = timeoutWarnEvery
	}
	t := now()
	if !l.last.IsZero() && t.Sub(l.last) < every {
		l.suppressed++
		return false, 0
	}
	n := l.suppressed
	l.last, l.suppressed = t, 0
	return true, n
}
