package node

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tipnode/tipnode/store"
)

var (
	descStoreFree     = prometheus.NewDesc("tipnode_store_free_bytes", "Free space of the filesystem holding the store.", nil, nil)
	descStoreMinFree  = prometheus.NewDesc("tipnode_store_min_free_bytes", "Free space below which store writes are refused (0: not guarded).", nil, nil)
	descStoreDiskFull = prometheus.NewDesc("tipnode_store_disk_full", "1 while the latest store write was refused for lack of disk space: the writer has stopped, reads go on.", nil, nil)
	descStoreRefused  = prometheus.NewDesc("tipnode_store_writes_refused_total", "Store writes refused by the free-space guard.", nil, nil)

	descStateCacheHits    = prometheus.NewDesc("tipnode_state_cache_hits_total", "State reads (accounts, slots, code) answered by the in-memory state cache.", nil, nil)
	descStateCacheMisses  = prometheus.NewDesc("tipnode_state_cache_misses_total", "State reads the state cache could not answer (read from Pebble).", nil, nil)
	descStateCacheEntries = prometheus.NewDesc("tipnode_state_cache_entries", "Entries in the state cache.", nil, nil)
	descStateCacheBytes   = prometheus.NewDesc("tipnode_state_cache_bytes", "Bytes held by the state cache.", nil, nil)
	descStateCacheMax     = prometheus.NewDesc("tipnode_state_cache_max_bytes", "Bound of the state cache (--cache.state; 0: disabled).", nil, nil)
	descForkFetched       = prometheus.NewDesc("tipnode_fork_fetched_total", "Accounts and slots a fork (tipnode dev --fork) fetched from its upstream.", nil, nil)
	descForkUnpersisted   = prometheus.NewDesc("tipnode_fork_unpersisted", "Fetched accounts and slots a fork has not written into its store yet (they go with the next sealed block).", nil, nil)
)

// storeCollector exports the store's free-space guard and state cache.
type storeCollector struct{ db *store.DB }

func (c storeCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descStoreFree
	ch <- descStoreMinFree
	ch <- descStoreDiskFull
	ch <- descStoreRefused
	ch <- descStateCacheHits
	ch <- descStateCacheMisses
	ch <- descStateCacheEntries
	ch <- descStateCacheBytes
	ch <- descStateCacheMax
	ch <- descForkFetched
	ch <- descForkUnpersisted
}

func (c storeCollector) Collect(ch chan<- prometheus.Metric) {
	if free, err := c.db.FreeBytes(); err == nil {
		ch <- prometheus.MustNewConstMetric(descStoreFree, prometheus.GaugeValue, float64(free))
	}
	ch <- prometheus.MustNewConstMetric(descStoreMinFree, prometheus.GaugeValue, float64(c.db.MinFreeBytes()))
	full := 0.0
	if c.db.DiskFull() != nil {
		full = 1
	}
	ch <- prometheus.MustNewConstMetric(descStoreDiskFull, prometheus.GaugeValue, full)
	ch <- prometheus.MustNewConstMetric(descStoreRefused, prometheus.CounterValue, float64(c.db.WritesRefused()))
	sc := c.db.StateCacheStats()
	ch <- prometheus.MustNewConstMetric(descStateCacheHits, prometheus.CounterValue, float64(sc.Hits))
	ch <- prometheus.MustNewConstMetric(descStateCacheMisses, prometheus.CounterValue, float64(sc.Misses))
	ch <- prometheus.MustNewConstMetric(descStateCacheEntries, prometheus.GaugeValue, float64(sc.Entries))
	ch <- prometheus.MustNewConstMetric(descStateCacheBytes, prometheus.GaugeValue, float64(sc.Bytes))
	ch <- prometheus.MustNewConstMetric(descStateCacheMax, prometheus.GaugeValue, float64(sc.MaxBytes))
	if c.db.Anchor().Fork != "" {
		fs := c.db.ForkStats()
		ch <- prometheus.MustNewConstMetric(descForkFetched, prometheus.CounterValue, float64(fs.Fetched))
		ch <- prometheus.MustNewConstMetric(descForkUnpersisted, prometheus.GaugeValue, float64(fs.Unpersisted))
	}
}
