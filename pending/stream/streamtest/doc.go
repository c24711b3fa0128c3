// Package streamtest holds test doubles for the pre-confirmation stream:
// Server, a websocket endpoint a test drives frame by frame (refuse
// connections, cut them, stop answering pings), and Proxy, a websocket
// proxy between an upstream stream and its clients that drops, duplicates,
// reorders and delays messages and cuts connections under the test's
// control, with seeded randomness so that a failing run can be replayed.
//
// Both listen on 127.0.0.1 and are closed by the test's Cleanup. They are
// safe for concurrent use. Nothing outside tests imports this package.
package streamtest
