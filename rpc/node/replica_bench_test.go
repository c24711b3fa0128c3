package node_test

import (
	"bytes"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/tipnode/tipnode/pending/pendingtest"
)

// BenchmarkReplicaCall: eth_call over HTTP on a read replica (parallel
// callers, keep-alive) at `pending` and at `latest`, while the sequencer
// pre-confirms a transfer 10 times a second (wall clock) and the replica
// replays the stream and imports the sealed blocks. Reports calls/s of
// each tag; compare the two sub-benchmarks for the ratio.
func BenchmarkReplicaCall(b *testing.B) {
	for _, tag := range []string{"latest", "pending"} {
		b.Run(tag, func(b *testing.B) {
			e := newEnvWith(b, envOptions{stream: true})
			rep := startReplica(b, e.url, wsURL(e.url, "/preconfirmations"), replicaOptions{})
			if err := e.Pool.Add(e.Tx(0, nil, big.NewInt(0), 200_000, pendingtest.InitCode(pairRuntime))); err != nil {
				b.Fatal(err)
			}
			e.Tick(1)
			contract := crypto.CreateAddress(e.Accs[0].Address, 0)
			stop, done := make(chan struct{}), make(chan struct{})
			var msgs atomic.Int64
			go func() { // 10 pre-confirmations a second
				defer close(done)
				tk := time.NewTicker(100 * time.Millisecond)
				defer tk.Stop()
				to := common.Address{0xbb}
				for {
					select {
					case <-stop:
						return
					case <-tk.C:
					}
					if err := e.Pool.Add(e.Tx(1, &to, big.NewInt(1), 21_000, nil)); err != nil {
						return
					}
					e.Clock.Advance(e.Cfg.PreconfInterval)
					e.Seq.Sync()
					msgs.Add(1)
					if rep.clock.Timers() > 0 {
						rep.clock.Advance(rep.poll)
					}
				}
			}()
			body := []byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"eth_call","params":[{"to":"%s","data":"0x"},"%s"]}`, contract.Hex(), tag))
			tr := &http.Transport{MaxIdleConnsPerHost: 64}
			defer tr.CloseIdleConnections()
			c := &http.Client{Transport: tr}
			var bad atomic.Int64
			b.ResetTimer()
			t0 := time.Now()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					resp, err := c.Post(rep.url, "application/json", bytes.NewReader(body))
					if err != nil {
						bad.Add(1)
						continue
					}
					out, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					if !bytes.Contains(out, []byte(`"result"`)) {
						bad.Add(1)
					}
				}
			})
			el := time.Since(t0)
			b.StopTimer()
			close(stop)
			<-done
			if bad.Load() > 0 {
				b.Fatalf("%d failed calls", bad.Load())
			}
			b.ReportMetric(float64(b.N)/el.Seconds(), "calls/s")
			b.ReportMetric(float64(msgs.Load())/el.Seconds(), "msgs/s")
		})
	}
}
