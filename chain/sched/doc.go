// Package sched holds the pieces of tipnode's one-CPU scheduling design:
// how a node limited to one CPU (GOMAXPROCS 1) keeps answering reads while
// it writes blocks and runs long EVM work.
//
// On one P, a goroutine in a blocking system call (an fsync) keeps the P
// until the call returns or sysmon retakes it (up to 10 ms), and a
// goroutine that yields with runtime.Gosched is rescheduled before the
// network is polled: every read would wait for the disk, or for the whole
// of a computation. Two pieces answer that:
//
//   - SpareP: a section of work (a store write, a pre-confirmation, a
//     seal) runs with a second P, raised for the section only, on an OS
//     thread whose nice value is raised so that a reader's thread preempts
//     it (threadprio_*.go). chain.Writer.WithSpareP and NeedsSpareP decide
//     when; --writer.nice sets the nice value.
//   - NetYield: long CPU work on the one P (the sequencer's execution, a
//     seal without a spare P) yields by waiting for the runtime's next
//     network poll, so that requests that arrived meanwhile run first.
//
// The node's clock (chain.Clock) stays in chain: it is the injectable time
// source of every background loop, not part of this design. pending's
// doc.go describes how the sequencer uses both pieces. sched imports no
// other tipnode package: chain and pending import it.
package sched
