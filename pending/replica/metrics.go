package replica

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the driver's Prometheus instruments. A nil *Metrics records
// nothing.
type Metrics struct {
	messages   *prometheus.CounterVec
	resets     *prometheus.CounterVec
	mismatches *prometheus.CounterVec
	rebases    *prometheus.CounterVec
	depth      prometheus.Gauge
	exec       prometheus.Histogram
	readable   prometheus.Histogram
	lag        prometheus.Gauge
	fallback   prometheus.Gauge
	metaChecks prometheus.Counter
	metaDiffs  *prometheus.CounterVec
	parents    *prometheus.CounterVec
	frozens    *prometheus.CounterVec
	refused    *prometheus.CounterVec
	rootFails  prometheus.Counter
}

// latencyBuckets span 50 µs .. ~3.3 s.
var latencyBuckets = prometheus.ExponentialBuckets(50e-6, 2, 17)

// NewMetrics creates the instruments and registers them on reg (nil: not
// registered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		messages: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "tipnode", Subsystem: "replica", Name: "messages_total",
			Help: "Pre-confirmation messages received, by what the sequence validator made of them (append, next_block, restart, duplicate, gap, lower_index, not_started, beyond_window, canonical, closed, malformed, frozen, resume: the open block re-announced cut elsewhere, as a restarted sequencer re-emits it).",
		}, []string{"verdict"}),
		resets: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "tipnode", Subsystem: "replica", Name: "resets_total",
			Help: "Pending blocks dropped, by cause (restart, revoked, mismatch, execution, parent_hash, reorg, canonical_differs, canonical_mismatch, adopted_parent, disconnected).",
		}, []string{"cause"}),
		mismatches: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "tipnode", Subsystem: "replica", Name: "mismatches_total",
			Help: "Messages whose re-execution disagreed with the sequencer's totals, by field (gas_used, receipts_root, blob_gas_used, parent_hash; on an OP chain also base_fee, extra_data), and pending blocks that disagreed with the canonical block of their adopted hash (canonical_transactions, canonical_receipts_root, canonical_gas_used, canonical_state_root, ...).",
		}, []string{"field"}),
		rebases: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "tipnode", Subsystem: "replica", Name: "rebases_total",
			Help: "Pending blocks moved onto a new canonical block: rebased (without re-executing) or rebuilt (re-executed).",
		}, []string{"kind"}),
		depth: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: "tipnode", Subsystem: "replica", Name: "window_depth",
			Help: "Pending blocks held ahead of the canonical head.",
		}),
		exec: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: "tipnode", Subsystem: "replica", Name: "message_execution_seconds",
			Help:    "Time to execute one message's new transactions and verify its totals.",
			Buckets: latencyBuckets,
		}),
		readable: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: "tipnode", Subsystem: "replica", Name: "received_to_readable_seconds",
			Help:    "Time from a message's arrival to the publication of the snapshot holding its state.",
			Buckets: latencyBuckets,
		}),
		lag: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: "tipnode", Subsystem: "replica", Name: "stream_lag_seconds",
			Help: "Arrival time of the last message minus its block's timestamp.",
		}),
		fallback: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: "tipnode", Subsystem: "replica", Name: "fallback",
			Help: "1 while pending answers the canonical head because the stream is stale (no message for MaxAge, connected or not), else 0.",
		}),
		metaChecks: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "tipnode", Subsystem: "replica", Name: "metadata_checks_total",
			Help: "Messages whose metadata (receipts, new_account_balances: rollup-boost / op-rbuilder) was compared with the replica's execution.",
		}),
		metaDiffs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "tipnode", Subsystem: "replica", Name: "metadata_mismatches_total",
			Help: "Disagreements between a message's metadata and the replica's execution, by field (type, status, cumulative_gas_used, logs, deposit_nonce, deposit_receipt_version, receipt_unknown, balance, malformed); logged, never served.",
		}, []string{"field"}),
		parents: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "tipnode", Subsystem: "replica", Name: "adopted_parents_total",
			Help: "Pending blocks that took the hash the next block announced for them (no state root computed here), by outcome: adopted, then verified or mismatch against the canonical block of that hash.",
		}, []string{"outcome"}),
		frozens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "tipnode", Subsystem: "replica", Name: "frozen_blocks_total",
			Help: "Pending blocks that stopped receiving after a lost or foreign message (gap, lower_index, malformed), or that sealed to another hash than the next block announced (incomplete: a lost last message): served as far as they got; the next block waits for them to be canonical.",
		}, []string{"cause"}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "tipnode", Subsystem: "replica", Name: "unsupported_blocks_total",
			Help: "Pending blocks not replicated because they carry what this node does not execute, by reason (post_exec_tx: Lagoon's post-execution transaction).",
		}, []string{"reason"}),
		rootFails: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "tipnode", Subsystem: "replica", Name: "root_failures_total",
			Help: "Pending blocks whose state root this node could not compute (its state trie update failed: a store read error, a corrupt trie node), once per block: served without a state root and without checking the roots the stream announces; the seal computes the block's root from its whole diff.",
		}),
	}
	if reg != nil {
		reg.MustRegister(m.messages, m.resets, m.mismatches, m.rebases, m.depth, m.exec, m.readable, m.lag, m.fallback, m.metaChecks, m.metaDiffs,
			m.parents, m.frozens, m.refused, m.rootFails)
	}
	return m
}

func (m *Metrics) message(v verdict) {
	if m != nil {
		m.messages.WithLabelValues(v.String()).Inc()
	}
}

func (m *Metrics) reset(cause string) {
	if m != nil {
		m.resets.WithLabelValues(cause).Inc()
	}
}

func (m *Metrics) mismatch(field string) {
	if m != nil {
		m.mismatches.WithLabelValues(field).Inc()
	}
}

func (m *Metrics) rebase(kind string) {
	if m != nil {
		m.rebases.WithLabelValues(kind).Inc()
	}
}

func (m *Metrics) window(n int) {
	if m != nil {
		m.depth.Set(float64(n))
	}
}

func (m *Metrics) executed(d time.Duration) {
	if m != nil {
		m.exec.Observe(d.Seconds())
	}
}

func (m *Metrics) published(d time.Duration) {
	if m != nil {
		m.readable.Observe(d.Seconds())
	}
}

func (m *Metrics) streamLag(d time.Duration) {
	if m != nil {
		m.lag.Set(d.Seconds())
	}
}

func (m *Metrics) fallingBack(on bool) {
	if m != nil {
		v := 0.0
		if on {
			v = 1
		}
		m.fallback.Set(v)
	}
}

func (m *Metrics) metadataChecked() {
	if m != nil {
		m.metaChecks.Inc()
	}
}

func (m *Metrics) metadataMismatch(field string) {
	if m != nil {
		m.metaDiffs.WithLabelValues(field).Inc()
	}
}

func (m *Metrics) parent(outcome string) {
	if m != nil {
		m.parents.WithLabelValues(outcome).Inc()
	}
}

func (m *Metrics) frozen(cause string) {
	if m != nil {
		m.frozens.WithLabelValues(cause).Inc()
	}
}

func (m *Metrics) unsupported(reason string) {
	if m != nil {
		m.refused.WithLabelValues(reason).Inc()
	}
}

func (m *Metrics) rootFailure() {
	if m != nil {
		m.rootFails.Inc()
	}
}
