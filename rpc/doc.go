// Package rpc is tipnode's JSON-RPC 2.0 transport: one listener serving HTTP
// POST (with CORS) and websocket sessions, request decoding and positional
// Params, eth_subscribe/eth_unsubscribe and Subscription, the limits and
// graceful stop, and every JSON-RPC error code of the node (errors.go) with
// the constructors of *Error values (codes are assigned only here). It knows
// nothing of blocks, state or transactions and imports none of tipnode's
// packages: the Ethereum methods are in rpc/eth, whose API.Register installs
// them on a Server and whose API.MapError is the Server's error mapper.
//
// # Model
//
// A Server maps method names to Handlers:
//
//	srv, err := rpc.NewServer(rpc.Config{}, log) // zero fields = defaults
//	srv.Register("eth_getBalance", func(ctx context.Context, p rpc.Params) (any, error) {
//		if err := p.AtMost(2); err != nil {
//			return nil, err
//		}
//		var addr common.Address
//		if err := p.Decode(0, "address", &addr); err != nil {
//			return nil, err // already "invalid argument 0 (address): …", -32602
//		}
//		block := "latest"
//		if _, err := p.DecodeOptional(1, "block", &block); err != nil { // absent/null: untouched
//			return nil, err
//		}
//		…
//		return value, nil // marshalled with encoding/json
//	})
//	srv.RegisterSubscription("newHeads", func(ctx context.Context, sub *rpc.Subscription, p rpc.Params) error {
//		if err := p.AtMost(0); err != nil { return err }
//		go feed(sub) // for { select { case h := <-heads: if sub.Notify(h) != nil { return } case <-sub.Done(): return } }
//		return nil
//	})
//	srv.Handle("/metrics", promhttp.Handler())
//	err = srv.Start()        // or srv.Serve(listener), or use srv as an http.Handler
//	…
//	err = srv.Stop(ctx)
//
// Handlers return (result, nil) or (nil, error). A result is encoded with
// encoding/json, except a RawResult: JSON the handler wrote itself, sent as
// is (encoding/json would validate and compact it once more). Errors
// become JSON-RPC errors: an *Error (see errors.go for constructors and every code used by
// tipnode) is sent as is; other errors go through the mapper set with
// SetErrorMapper, then ErrorCoder, then context.DeadlineExceeded becomes
// CodeTimeout (-32002), and anything else is CodeInternal (-32603). A
// panicking handler is recovered, logged with its stack, and answered -32603.
//
// # Wire format
//
// JSON-RPC 2.0 exactly: "jsonrpc" must be "2.0"; id may be a string, number
// (any size, echoed byte for byte) or null, and a request without an id
// member is a notification (executed, never answered). Params must be a
// positional array (absent/null = none); object params get -32602. A batch is
// answered with one array in request order, notifications omitted; an empty
// batch gets a single -32600 error; a batch of only notifications gets an
// empty HTTP 200 body (and nothing on a websocket). Invalid JSON gets -32700
// with id null, and so does a request whose string id is not valid Unicode
// (invalid UTF-8, an escaped lone surrogate): echoing it would make the
// answer invalid JSON.
//
// HTTP: any path not claimed by Handle serves JSON-RPC. Only POST is
// accepted (405 otherwise), with Content-Type application/json and at
// most a charset=utf-8 parameter (anything else, text/plain included, is
// 415 with a -32600 body: a web page can POST those cross-origin without a
// CORS preflight); responses are application/json. A request with
// "Upgrade: websocket" starts a websocket session on the same path; a bad
// upgrade gets 405 or 400 with a -32600 body (every HTTP refusal carries a
// JSON-RPC error and Content-Type application/json).
// HandleStream mounts a long-lived handler (a websocket feed of its own,
// as the node's /preconfirmations): its request context is cancelled when
// Stop begins, Stop waits for it to return, and its connections count
// against the listener's connection limits.
//
// Websocket: every text message is a request or batch, answered with one
// message. eth_subscribe / eth_unsubscribe are implemented here, only on
// websockets (over HTTP they answer -32601 "notifications not supported").
// eth_subscribe's params[0] selects the SubscribeHandler registered for that
// kind (unknown kind: -32601 "no \"KIND\" subscription in eth namespace",
// as go-ethereum answers); the result is the subscription id
// ("0x" + 32 hex digits); notifications are
// {"jsonrpc":"2.0","method":"eth_subscription","params":{"subscription":ID,"result":…}}
// and never reach the client before the eth_subscribe response.
// eth_unsubscribe answers true, or false for an unknown id.
//
// # Concurrency
//
// Start and Serve run fasthttp (fast.go): a keep-alive connection is served
// by one goroutine, and the plain JSON-RPC POST (POST /, Content-Type
// application/json, no upgrade, no CORS origin) is answered there without
// net/http; every other request (mounted handlers, websocket upgrades, other
// paths, CORS, the 405/415/503 answers) goes through fasthttpadaptor to
// ServeHTTP, the net/http handler, which is also what a Server used as an
// http.Handler runs. Over fasthttp an HTTP call's context is not cancelled
// when the client goes away (only at its deadline); over websockets and
// under net/http it is. Batch elements run
// concurrently, at most Config.BatchParallelism at a time per batch, while
// fewer handlers run than there are Ps (GOMAXPROCS); once every P has one,
// the next element runs on the batch's own goroutine, in turn (a goroutine
// of its own would only wait for a P, and its hand-offs cost about a tenth
// of a batch's CPU). Handlers parked in a wait (a full execution limiter,
// eth_sendRawTransactionSync) count as running for this. Each
// handler call runs on its own goroutine so that the deadline can be enforced
// even if the handler ignores ctx; a handler still running at the deadline is
// answered with CodeTimeout and its eventual result discarded, so handlers
// must honour ctx to free resources. Such a call's parameters are copied
// before the hand-off: once a message is answered, fasthttp reuses its
// buffer for the connection's next request. Methods installed with RegisterInline
// (constants, the in-memory head) run on the message's goroutine instead
// and are answered when they return; sent alone (not in a batch) they take
// no timeout timer and no per-address slot either. Methods registered with
// the HonoursContext option (eth_call, the state reads, eth_simulateV1...)
// declare that they return promptly once ctx is done: they also run on the
// message's goroutine (the hand-off and the switch back saved), keep the
// timeout, the slot and the limiter, and are answered when they return;
// a failure once ctx has ended is answered as the deadline would have been
// (CodeTimeout, or "request canceled"). Websocket message goroutines, batch
// element goroutines and handler goroutines are kept for later work once
// done (workers.go, at most 128 idle per Server, ended by Stop), so that a
// stack grown by a deep call (the EVM) is not grown again, by copying, on
// every request.
//
// A websocket has one reader goroutine, one writer goroutine (pings, the
// close frame, notifications), and up to
// Config.WSMaxInflight goroutines executing messages concurrently (so
// responses may come back in a different order than requests; clients match
// them by id). Responses and notifications share one outgoing queue and
// never wait for room: a message that does not fit disconnects the client
// (see Limits and Subscription). One goroutine at a time writes data
// frames, in queue order: a message's goroutine, having queued its response
// and released its execution slot, writes the queue out itself when no one
// is writing (saving a wake-up of the writer per message), else the writer
// does. Registration (Register,
// RegisterSubscription, Handle, SetErrorMapper) should happen before serving.
//
// Output accounting: every queued websocket message and every HTTP response
// being written holds its bytes in the server-wide budget
// (Config.MaxQueuedOutput) until written, dropped or the connection closes;
// connection admission holds one slot per open TCP connection and per
// client address until the connection closes.
//
// # Limits
//
// Every limit is in Config, answered with a clear error or close reason,
// counted (Server.Collector), and affects only the offending request or
// connection:
//
//   - MaxRequestBytes: HTTP 413 with -32005 "request body too large (limit N bytes)".
//     After a 413 or 431 the connection reads and discards the rest of
//     the request (at most 8 MiB, 2 s) before closing, so a client that
//     writes it all before reading sees the answer rather than a reset.
//
//   - MaxBatch: a single -32005 "batch too large" error.
//
//   - MaxResponseBytes: a response that does not fit is replaced by
//     -32005 "response too large (limit N bytes)". A batch's answers are
//     counted as they are produced, in element order, against it and
//     against MaxQueuedOutput (respBudget): the first that does not fit
//     spends the budget, and the elements not started yet get -32005 "…
//     not executed" without running, so a batch never holds much more than
//     one response. Handlers see what is left (Params.ResponseRoom) and
//     refuse before building a result that cannot fit
//     (Params.CheckResponse), which in a batch spends the budget too.
//
//   - RequestTimeout: per message (single request or whole batch); handler
//     contexts carry the deadline; -32002 "request timed out".
//
//   - ReadHeaderTimeout: headers not complete in time (slowloris, or a
//     connection that sends nothing): HTTP 408 with -32002 "request headers
//     not received within D", then closed.
//
//   - ReadTimeout: a body not received within it after the headers: HTTP
//     408 with -32002 "request not received within D", then closed.
//
//   - Request heads over 16 KiB: HTTP 431; malformed requests: HTTP 400.
//
//   - IdleTimeout: keep-alive connections idle between requests are closed.
//
//   - MaxConns, MaxConnsPerIP, ConnReserve/ConnReservePerIP: checked at
//     accept by Start/Serve; a refused connection gets HTTP 503 with a
//     -32005 body naming the limit, and is closed.
//
//   - WSMaxMessageBytes: the websocket is closed with status 1009 and the
//     reason "message too big (limit N bytes)".
//
//   - WSSendQueue, WSMaxQueuedBytes: a client whose queued output would pass
//     them is a slow consumer: its queue is dropped at once, and it is
//     closed with status 1008 "slow consumer: output queue over its limit
//     (…)" after the message being written (bounded by WSWriteTimeout).
//
//   - MaxQueuedOutput: when the server's output would pass it, the
//     websocket with the most queued output is closed with status 1013
//     "server output buffer full (…)"; an HTTP response that still does not
//     fit is replaced by HTTP 503 with -32005. A connection holding under
//     64 KiB is never refused.
//
//   - WSIdleTimeout: a websocket with no request for that long, nothing
//     executing and no subscription is closed with status 1000 "idle
//     timeout (…)". Subscribed connections stay; pings (WSPingInterval,
//     WSPongTimeout) close dead ones.
//
//   - MaxCallsPerIP: the calls one client address executes at once (batch
//     elements, and the join of a batch's answer, included) across its
//     connections; more wait in arrival order within their deadline. The
//     slot is taken before a batch element's goroutine starts and held
//     until its handler returns. A single inline call takes none. The
//     addresses' semaphores are sharded (32 locks), so different clients
//     share no lock; the server's count of running activities (for Stop)
//     is atomic.
//
// Handler-level limits: a Limiter bounds the concurrent executions of a
// class of methods with a queue and a wait deadline; RegisterLimited
// installs a method under one, and such methods do not count against
// MaxCallsPerIP (so methods outside the class never wait behind them).
//
// # Stop
//
// Stop is graceful: new connections and requests are refused (503), in-flight
// HTTP requests and websocket messages finish and their responses are
// written, websockets are then closed with status 1001 (ending their
// subscriptions), and Stop waits for running handlers, up to its context or
// Config.ShutdownTimeout, after which everything is closed forcibly.
//
// # Logging
//
// Every call is logged at debug level with transport, remote address,
// method, duration (with its unit), error code (0 = success) and a failed
// call's error message; HTTP-level refusals (method, content type, body
// too large or not received in time, unreadable body) at debug too. Timed-out requests are also warned about, at most once per 10
// s with the count of those not reported in between (calllog.go). Bodies
// are never logged. Handler faults (-32603) are logged at warn, panics at
// error with stack.
package rpc
