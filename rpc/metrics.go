package rpc

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// stats are the transport's counters (atomic; exported by Collector).
type stats struct {
	slowConsumer atomic.Uint64
	outputLimit  atomic.Uint64
	tooBig       atomic.Uint64
	idle         atomic.Uint64
	bodyTimeouts atomic.Uint64
}

func (s *stats) disconnect(reason string) {
	switch reason {
	case disconnectSlowConsumer:
		s.slowConsumer.Add(1)
	case disconnectOutputLimit:
		s.outputLimit.Add(1)
	case disconnectTooBig:
		s.tooBig.Add(1)
	case disconnectIdle:
		s.idle.Add(1)
	}
}

// Stats is a snapshot of the transport's limit counters (see Collector for
// their meaning).
type Stats struct {
	OpenConns, Addresses int
	Refused              map[string]uint64 // by reason: max_conns, per_address, reserve
	Disconnects          map[string]uint64 // by reason: slow_consumer, output_limit, message_too_big, idle
	QueuedOutputBytes    int64
	OutputRefused        uint64
	BodyTimeouts         uint64
	CallWaits            uint64 // calls that waited for their address's MaxCallsPerIP slot
}

// Stats returns the current counters.
func (s *Server) Stats() Stats {
	open, addrs := s.conns.counts()
	st := Stats{
		OpenConns: open, Addresses: addrs,
		Refused: make(map[string]uint64),
		Disconnects: map[string]uint64{
			disconnectSlowConsumer: s.stats.slowConsumer.Load(),
			disconnectOutputLimit:  s.stats.outputLimit.Load(),
			disconnectTooBig:       s.stats.tooBig.Load(),
			disconnectIdle:         s.stats.idle.Load(),
		},
		QueuedOutputBytes: s.output.used.Load(),
		OutputRefused:     s.output.refused.Load(),
		BodyTimeouts:      s.stats.bodyTimeouts.Load(),
		CallWaits:         s.calls.waits.Load(),
	}
	for r, n := range s.conns.refused {
		st.Refused[r] = n.Load()
	}
	return st
}

// Collector returns a Prometheus collector of the transport's limits:
//
//	tipnode_rpc_connections_open                gauge   open TCP connections accepted by Start/Serve
//	tipnode_rpc_connection_addresses            gauge   client addresses holding them
//	tipnode_rpc_connections_refused_total       counter by reason: max_conns, per_address, reserve
//	tipnode_rpc_ws_disconnects_total            counter websockets closed for a limit, by reason:
//	                                                    slow_consumer (1008), output_limit (1013),
//	                                                    message_too_big (1009), idle (1000)
//	tipnode_rpc_output_queued_bytes             gauge   output held for clients (MaxQueuedOutput)
//	tipnode_rpc_output_refused_total            counter HTTP responses refused by MaxQueuedOutput
//	tipnode_rpc_request_read_timeouts_total     counter HTTP bodies not received within ReadTimeout
//	tipnode_rpc_calls_waited_total              counter calls that waited for their address's MaxCallsPerIP slot
//
// The node registers it in its registry; the transport has no global
// metrics.
func (s *Server) Collector() prometheus.Collector { return serverCollector{s} }

var (
	descOpen        = prometheus.NewDesc("tipnode_rpc_connections_open", "Open TCP connections accepted by the JSON-RPC listener.", nil, nil)
	descAddrs       = prometheus.NewDesc("tipnode_rpc_connection_addresses", "Client addresses holding open JSON-RPC connections.", nil, nil)
	descRefused     = prometheus.NewDesc("tipnode_rpc_connections_refused_total", "Connections refused at accept, by limit.", []string{"reason"}, nil)
	descDisconnects = prometheus.NewDesc("tipnode_rpc_ws_disconnects_total", "Websockets closed by the server for a limit, by reason.", []string{"reason"}, nil)
	descQueued      = prometheus.NewDesc("tipnode_rpc_output_queued_bytes", "Output held for clients: websocket queues and HTTP responses being written.", nil, nil)
	descOutRefused  = prometheus.NewDesc("tipnode_rpc_output_refused_total", "HTTP responses refused because the server's queued output was full.", nil, nil)
	descBodyTimeout = prometheus.NewDesc("tipnode_rpc_request_read_timeouts_total", "HTTP requests whose body was not received within the read timeout.", nil, nil)
	descCallWaits   = prometheus.NewDesc("tipnode_rpc_calls_waited_total", "Calls that waited for a slot of their client address (MaxCallsPerIP).", nil, nil)
)

type serverCollector struct{ s *Server }

func (c serverCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descOpen, descAddrs, descRefused, descDisconnects, descQueued, descOutRefused, descBodyTimeout, descCallWaits} {
		ch <- d
	}
}

func (c serverCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.s.Stats()
	ch <- prometheus.MustNewConstMetric(descOpen, prometheus.GaugeValue, float64(st.OpenConns))
	ch <- prometheus.MustNewConstMetric(descAddrs, prometheus.GaugeValue, float64(st.Addresses))
	for r, n := range st.Refused {
		ch <- prometheus.MustNewConstMetric(descRefused, prometheus.CounterValue, float64(n), r)
	}
	for r, n := range st.Disconnects {
		ch <- prometheus.MustNewConstMetric(descDisconnects, prometheus.CounterValue, float64(n), r)
	}
	ch <- prometheus.MustNewConstMetric(descQueued, prometheus.GaugeValue, float64(st.QueuedOutputBytes))
	ch <- prometheus.MustNewConstMetric(descOutRefused, prometheus.CounterValue, float64(st.OutputRefused))
	ch <- prometheus.MustNewConstMetric(descBodyTimeout, prometheus.CounterValue, float64(st.BodyTimeouts))
	ch <- prometheus.MustNewConstMetric(descCallWaits, prometheus.CounterValue, float64(st.CallWaits))
}
