// Package proc reads what cmd/benchgeth measures of a process from Linux's
// /proc (CPU time, resident memory, disk usage of a directory) and pins
// processes to CPUs.
//
// CPU time is utime+stime of /proc/PID/stat: it includes threads that have
// exited and is counted in clock ticks (USER_HZ, 100 per second on every
// Linux ABI Go supports), so a measurement window must span many ticks.
//
// Everything here is a plain function over the file system; safe for
// concurrent use.
package proc
