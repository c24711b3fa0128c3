package statedump

import (
	"bytes"
	"context"
	"testing"
)

// FuzzLoad: any input is either a verified dump or an error, never a panic
// or a hang (the dump and the headers file are outside input).
func FuzzLoad(f *testing.F) {
	f.Add([]byte("{\"root\":\"0x56e81f171bcc55a6ff8345e692c0f86e5b48e01b996cadc001622fb5e363b421\"}\n"))
	f.Add([]byte("{\"root\":\"0x00\"}\n{\"balance\":\"1\",\"nonce\":0,\"address\":\"0x1000000000000000000000000000000000000001\",\"storage\":{\"0x01\":\"02\"}}\n"))
	f.Add([]byte(`{"root":"6da8f636cdc85dbe8c1b5299e5db22f462c041febaf3b78cac1040152ee30b3b","accounts":{"0x0000000000000000000000000000000000000001":{"balance":"0x10","nonce":"0x1","code":"0x6000"}}}`))
	f.Add([]byte(`{"balance": "1", "nonce": 0,, }`))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		_, _ = Load(context.Background(), bytes.NewReader(data), newMemSink(), Config{TempDir: dir, MemBytes: 1 << 20})
		_, _ = ReadHeaders(bytes.NewReader(data), 3, 256)
	})
}
