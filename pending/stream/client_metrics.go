package stream

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// ClientMetrics are the stream client's Prometheus instruments. A nil
// *ClientMetrics records nothing.
type ClientMetrics struct {
	messages     prometheus.Counter
	bytes        prometheus.Counter
	decodeErrors *prometheus.CounterVec
	reconnects   prometheus.Counter
	disconnects  *prometheus.CounterVec
	connected    prometheus.Gauge
}

// NewClientMetrics creates the instruments and registers them on reg (nil:
// not registered).
func NewClientMetrics(reg prometheus.Registerer) *ClientMetrics {
	const ns, sub = "tipnode", "stream_client"
	m := &ClientMetrics{
		messages: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "messages_total",
			Help: "Pre-confirmation messages received and decoded (handed to the replica)."}),
		bytes: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "bytes_total",
			Help: "Bytes of websocket frames received (as sent: compressed frames count compressed)."}),
		decodeErrors: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "decode_errors_total",
			Help: "Frames refused by the decoder and skipped, by reason (frame_type, too_large, malformed, missing_field, bad_index, inconsistent)."}, []string{"reason"}),
		reconnects: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "reconnects_total",
			Help: "Connections to the stream established after the first one."}),
		disconnects: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "disconnects_total",
			Help: "Connections lost, by cause (conn_lost, pong_timeout, idle), and failed connection attempts (dial)."}, []string{"cause"}),
		connected: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "connected",
			Help: "1 while connected to the pre-confirmation stream."}),
	}
	if reg != nil {
		reg.MustRegister(m.messages, m.bytes, m.decodeErrors, m.reconnects, m.disconnects, m.connected)
	}
	return m
}

func (m *ClientMetrics) message(n int) {
	if m != nil {
		m.messages.Inc()
		m.bytes.Add(float64(n))
	}
}

func (m *ClientMetrics) frameBytes(n int) {
	if m != nil {
		m.bytes.Add(float64(n))
	}
}

func (m *ClientMetrics) decodeError(err error) {
	if m != nil {
		m.decodeErrors.WithLabelValues(decodeReason(err)).Inc()
	}
}

func (m *ClientMetrics) reconnect() {
	if m != nil {
		m.reconnects.Inc()
	}
}

func (m *ClientMetrics) disconnect(err error) {
	if m != nil {
		m.disconnects.WithLabelValues(downCause(err)).Inc()
	}
}

func (m *ClientMetrics) setConnected(up bool) {
	if m != nil {
		v := 0.0
		if up {
			v = 1
		}
		m.connected.Set(v)
	}
}

func decodeReason(err error) string {
	for _, r := range []struct {
		err    error
		reason string
	}{
		{ErrFrameType, "frame_type"}, {ErrTooLarge, "too_large"}, {ErrMissingField, "missing_field"},
		{ErrBadIndex, "bad_index"}, {ErrInconsistent, "inconsistent"}, {ErrMalformed, "malformed"},
	} {
		if errors.Is(err, r.err) {
			return r.reason
		}
	}
	return "other"
}

func downCause(err error) string {
	switch {
	case errors.Is(err, ErrDial):
		return "dial"
	case errors.Is(err, ErrPongTimeout):
		return "pong_timeout"
	case errors.Is(err, ErrIdle):
		return "idle"
	default:
		return "conn_lost"
	}
}
