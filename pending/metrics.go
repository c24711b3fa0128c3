package pending

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the pending layer's Prometheus instruments. A nil *Metrics
// records nothing, so every component takes one optionally.
type Metrics struct {
	snapshotBuild  prometheus.Histogram
	readable       prometheus.Histogram
	seal           prometheus.Histogram
	preconfs       prometheus.Counter
	txsPreconfed   prometheus.Counter
	txsDropped     prometheus.Counter
	blocks         prometheus.Counter
	poolAdded      prometheus.Counter
	poolRejected   *prometheus.CounterVec
	poolSize       prometheus.Gauge
	pendingTxs     prometheus.Gauge
	snapshotLayers prometheus.Gauge
	staleReads     prometheus.Counter
}

// latencyBuckets span 50 µs .. ~3.3 s.
var latencyBuckets = prometheus.ExponentialBuckets(50e-6, 2, 17)

// NewMetrics creates the instruments and registers them on reg (nil: not
// registered). snapshotAge, when non-nil, backs the snapshot-age gauge
// (evaluated at scrape time).
func NewMetrics(reg prometheus.Registerer, snapshotAge func() float64) *Metrics {
	m := &Metrics{
		snapshotBuild: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: "tipnode", Subsystem: "pending", Name: "snapshot_build_seconds",
			Help:    "Time of a pre-confirmation: executing what its last step takes, building and journaling the snapshot, swapping it in.",
			Buckets: latencyBuckets,
		}),
		readable: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: "tipnode", Subsystem: "pending", Name: "tx_arrival_to_readable_seconds",
			Help:    "Time from a transaction's admission to the pool to the publication of the snapshot holding its state.",
			Buckets: latencyBuckets,
		}),
		seal: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: "tipnode", Subsystem: "pending", Name: "seal_seconds",
			Help:    "Time to seal the pending block, write it to the store and rebase.",
			Buckets: latencyBuckets,
		}),
		preconfs: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "tipnode", Subsystem: "pending", Name: "preconfirmations_total",
			Help: "Snapshots published with new pre-confirmed transactions.",
		}),
		txsPreconfed: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "tipnode", Subsystem: "pending", Name: "txs_preconfirmed_total",
			Help: "Transactions pre-confirmed.",
		}),
		txsDropped: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "tipnode", Subsystem: "pending", Name: "txs_dropped_total",
			Help: "Pooled transactions dropped by the sequencer because they could not be executed.",
		}),
		blocks: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "tipnode", Subsystem: "pending", Name: "blocks_sealed_total",
			Help: "Blocks sealed into the store.",
		}),
		poolAdded: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "tipnode", Subsystem: "txpool", Name: "added_total",
			Help: "Transactions admitted to the pool.",
		}),
		poolRejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "tipnode", Subsystem: "txpool", Name: "rejected_total",
			Help: "Transactions refused by the pool, by reason.",
		}, []string{"reason"}),
		poolSize: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: "tipnode", Subsystem: "txpool", Name: "transactions",
			Help: "Transactions held by the pool.",
		}),
		pendingTxs: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: "tipnode", Subsystem: "pending", Name: "block_transactions",
			Help: "Transactions pre-confirmed in the current pending block.",
		}),
		snapshotLayers: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: "tipnode", Subsystem: "pending", Name: "snapshot_layers",
			Help: "Diff layers of the current snapshot (read depth).",
		}),
		staleReads: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "tipnode", Subsystem: "pending", Name: "stale_snapshots_total",
			Help: "Pending snapshots dropped (or refused at publication) because their anchor left the canonical chain; reads then serve the canonical head.",
		}),
	}
	if reg != nil {
		reg.MustRegister(m.snapshotBuild, m.readable, m.seal, m.preconfs, m.txsPreconfed, m.txsDropped,
			m.blocks, m.poolAdded, m.poolRejected, m.poolSize, m.pendingTxs, m.snapshotLayers, m.staleReads)
		if snapshotAge != nil {
			reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
				Namespace: "tipnode", Subsystem: "pending", Name: "snapshot_age_seconds",
				Help: "Age of the current pending snapshot.",
			}, snapshotAge))
		}
	}
	return m
}

// ObserveBuild records a pre-confirmation that took d (its last step, building, journaling and swapping the snapshot in).
func (m *Metrics) ObserveBuild(d time.Duration) {
	if m != nil {
		m.snapshotBuild.Observe(d.Seconds())
		m.preconfs.Inc()
	}
}

// ObserveReadable records a transaction pre-confirmed d after its admission to the pool.
func (m *Metrics) ObserveReadable(d time.Duration) {
	if m != nil {
		m.readable.Observe(d.Seconds())
		m.txsPreconfed.Inc()
	}
}

// ObserveSeal records a block sealed (written and rebased) in d.
func (m *Metrics) ObserveSeal(d time.Duration) {
	if m != nil {
		m.seal.Observe(d.Seconds())
		m.blocks.Inc()
	}
}

// TxDropped counts a pooled transaction the sequencer dropped because it could not be executed.
func (m *Metrics) TxDropped() {
	if m != nil {
		m.txsDropped.Inc()
	}
}

func (m *Metrics) snapshot(s *Snapshot) {
	if m != nil {
		m.pendingTxs.Set(float64(len(s.txs)))
		m.snapshotLayers.Set(float64(s.Depth()))
	}
}

// PoolAdded counts a transaction admitted to the pool, which now holds size.
func (m *Metrics) PoolAdded(size int) {
	if m != nil {
		m.poolAdded.Inc()
		m.poolSize.Set(float64(size))
	}
}

// PoolRejected counts a transaction the pool refused, by reason.
func (m *Metrics) PoolRejected(reason string) {
	if m != nil {
		m.poolRejected.WithLabelValues(reason).Inc()
	}
}

// PoolSized sets the number of transactions the pool holds.
func (m *Metrics) PoolSized(size int) {
	if m != nil {
		m.poolSize.Set(float64(size))
	}
}

func (m *Metrics) stale() {
	if m != nil {
		m.staleReads.Inc()
	}
}
