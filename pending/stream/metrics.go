package stream

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the publisher's Prometheus instruments. A nil *Metrics
// records nothing.
type Metrics struct {
	subscribers prometheus.Gauge
	publishedC  prometheus.Counter
	sentMsgs    prometheus.Counter
	sentBytes   prometheus.Counter
	drops       *prometheus.CounterVec
	refusedC    prometheus.Counter
	skippedC    *prometheus.CounterVec
	encode      prometheus.Histogram
}

// NewPublisherMetrics creates the publisher's instruments
// (tipnode_stream_pub_*) and registers them on reg (nil: not registered).
func NewPublisherMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		subscribers: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "tipnode", Subsystem: "stream_pub", Name: "subscribers",
			Help: "Connected subscribers of the pre-confirmation stream (/preconfirmations)."}),
		publishedC: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "tipnode", Subsystem: "stream_pub", Name: "messages_published_total",
			Help: "Pre-confirmation messages encoded and fanned out (once each, whatever the number of subscribers)."}),
		sentMsgs: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "tipnode", Subsystem: "stream_pub", Name: "messages_sent_total",
			Help: "Messages written to subscribers."}),
		sentBytes: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "tipnode", Subsystem: "stream_pub", Name: "bytes_sent_total",
			Help: "Message bytes written to subscribers."}),
		drops: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "tipnode", Subsystem: "stream_pub", Name: "subscribers_dropped_total",
			Help: "Subscribers dropped: queue (did not keep up: close 1008), write (a write failed or timed out)."}, []string{"reason"}),
		refusedC: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "tipnode", Subsystem: "stream_pub", Name: "subscribers_refused_total",
			Help: "Connections refused because MaxSubscribers were connected."}),
		skippedC: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "tipnode", Subsystem: "stream_pub", Name: "skipped_total",
			Help: "Snapshots not streamed (the stream resumed at the next block), by cause."}, []string{"reason"}),
		encode: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: "tipnode", Subsystem: "stream_pub", Name: "encode_seconds",
			Help: "Time to encode one snapshot into its message (receipts root, JSON).", Buckets: prometheus.ExponentialBuckets(10e-6, 2, 16)}),
	}
	if reg != nil {
		reg.MustRegister(m.subscribers, m.publishedC, m.sentMsgs, m.sentBytes, m.drops, m.refusedC, m.skippedC, m.encode)
	}
	return m
}

func (m *Metrics) setSubscribers(n int) {
	if m != nil {
		m.subscribers.Set(float64(n))
	}
}

func (m *Metrics) published() {
	if m != nil {
		m.publishedC.Inc()
	}
}

func (m *Metrics) sent(bytes int) {
	if m != nil {
		m.sentMsgs.Inc()
		m.sentBytes.Add(float64(bytes))
	}
}

func (m *Metrics) drop(reason string) {
	if m != nil {
		m.drops.WithLabelValues(reason).Inc()
	}
}

func (m *Metrics) refused() {
	if m != nil {
		m.refusedC.Inc()
	}
}

func (m *Metrics) skipped(reason string) {
	if m != nil {
		m.skippedC.WithLabelValues(reason).Inc()
	}
}

func (m *Metrics) encoded(d time.Duration) {
	if m != nil {
		m.encode.Observe(d.Seconds())
	}
}
