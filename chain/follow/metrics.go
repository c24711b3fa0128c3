package follow

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the follower's Prometheus instruments. A nil *Metrics
// records nothing.
type Metrics struct {
	upstreamHead prometheus.Gauge
	lagBlocks    prometheus.Gauge
	lagSeconds   prometheus.Gauge
	importTime   prometheus.Histogram
	headDelay    prometheus.Histogram
	blocks       prometheus.Counter
	reorgs       prometheus.Counter
	reorgDepth   prometheus.Histogram
	errors       *prometheus.CounterVec
	fetched      *prometheus.CounterVec
	reconnects   prometheus.Counter
	stopped      prometheus.Gauge
}

// NewMetrics creates the instruments and registers them on reg (nil: not
// registered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	gauge := func(name, help string) prometheus.Gauge {
		return prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "tipnode", Subsystem: "follow", Name: name, Help: help})
	}
	counter := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Namespace: "tipnode", Subsystem: "follow", Name: name, Help: help})
	}
	hist := func(name, help string, buckets []float64) prometheus.Histogram {
		return prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: "tipnode", Subsystem: "follow", Name: name, Help: help, Buckets: buckets})
	}
	m := &Metrics{
		upstreamHead: gauge("upstream_head", "Number of the upstream's latest head as last seen."),
		lagBlocks:    gauge("head_lag_blocks", "Upstream head number minus our head number."),
		lagSeconds:   gauge("head_lag_seconds", "Upstream head timestamp minus our head timestamp."),
		importTime: hist("block_import_seconds", "Time to verify, execute and write one followed block.",
			prometheus.ExponentialBuckets(100e-6, 2, 18)),
		headDelay: hist("head_delay_seconds", "Time from seeing an upstream head to having it imported.",
			prometheus.ExponentialBuckets(1e-3, 2, 16)),
		blocks: counter("blocks_imported_total", "Blocks imported from the upstream (reorgs included)."),
		reorgs: counter("reorgs_total", "Reorgs followed."),
		reorgDepth: hist("reorg_depth_blocks", "Blocks removed by each reorg followed.",
			[]float64{1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 128}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "tipnode", Subsystem: "follow", Name: "upstream_errors_total",
			Help: "Upstream faults, by kind (request, response, unknown_block, verification, write, fatal; pruned: the fatal one was an upstream without the history this node needs)."}, []string{"kind"}),
		fetched: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "tipnode", Subsystem: "follow", Name: "blocks_fetched_total",
			Help: "Blocks fetched from the upstream, by format (raw: debug_getRawBlock, json: eth_getBlockByNumber)."}, []string{"format"}),
		reconnects: counter("reconnects_total", "Reconnections to the upstream after a fault."),
		stopped:    gauge("stopped", "1 when following stopped on a fatal error (reorg too deep, divergence, genesis mismatch, an upstream without the history this node needs)."),
	}
	if reg != nil {
		reg.MustRegister(m.upstreamHead, m.lagBlocks, m.lagSeconds, m.importTime, m.headDelay, m.blocks,
			m.reorgs, m.reorgDepth, m.errors, m.fetched, m.reconnects, m.stopped)
	}
	return m
}

func (m *Metrics) lag(upNumber, ourNumber, upTime, ourTime uint64) {
	if m == nil {
		return
	}
	m.upstreamHead.Set(float64(upNumber))
	m.lagBlocks.Set(float64(max(upNumber, ourNumber) - ourNumber))
	m.lagSeconds.Set(float64(max(upTime, ourTime) - ourTime))
}

func (m *Metrics) imported(d time.Duration) {
	if m == nil {
		return
	}
	m.blocks.Inc()
	m.importTime.Observe(d.Seconds())
}

func (m *Metrics) delay(d time.Duration) {
	if m != nil {
		m.headDelay.Observe(d.Seconds())
	}
}

func (m *Metrics) reorg(depth uint64, added int) {
	if m == nil {
		return
	}
	m.reorgs.Inc()
	m.reorgDepth.Observe(float64(depth))
	m.blocks.Add(float64(added))
}

func (m *Metrics) fault(kind string) {
	if m != nil {
		m.errors.WithLabelValues(kind).Inc()
	}
}

func (m *Metrics) reconnect() {
	if m != nil {
		m.reconnects.Inc()
	}
}

func (m *Metrics) stop() {
	if m != nil {
		m.stopped.Set(1)
	}
}

func (m *Metrics) fetch(format string, n int) {
	if m != nil {
		m.fetched.WithLabelValues(format).Add(float64(n))
	}
}
