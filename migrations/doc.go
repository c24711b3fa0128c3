// Package migrations upgrades a tipnode store from the format version it
// records (store.FormatVersion) to store.FormatCurrent, one numbered version
// at a time.
//
// # Model
//
// All lists one Migration per format version 1..store.FormatCurrent, in
// order; Migration{Version: v} turns a store at v-1 into a store at v.
// Version 1 is store.FormatInitial: migrating a store that records no
// version but holds keys (it predates the formats) to it only records
// version 1. A new store (no version, no key) is not migrated: Run records
// store.FormatCurrent at once, and logs nothing at info level; only an
// upgrade of an existing store logs "migrating" / "migrated" per version. store.Open refuses stores below
// store.FormatMinSupported (store.ErrSchemaTooOld), so Run never meets them.
//
// A migration runs as a sequence of steps. Each step stages its changes in a
// store.RawBatch; Run commits that batch atomically (and durably) together
// with either the step's progress cursor (key store.MigrationCursorKey(v)),
// or, on the last step, the new format version and the cursor's deletion. A
// step is therefore all-or-nothing, and an interrupted migration resumes
// from the last committed cursor. Applying migrations to a store that is
// already current changes nothing.
//
// Steps must be idempotent with respect to their cursor: re-running a step
// from the same cursor must produce the same result (it will, if the process
// dies before the commit).
//
// # Invariants
//
//   - Exactly one migration per version, versions contiguous from 1.
//   - The recorded version only moves forward, one at a time.
//   - A store whose recorded version is newer than the binary is refused
//     (store.ErrSchemaTooNew) by store.Open and by Run.
//
// # Concurrency
//
// Run must be the only user of the store while it runs (call it right after
// store.Open, before serving). It is synchronous and starts no goroutines.
package migrations
