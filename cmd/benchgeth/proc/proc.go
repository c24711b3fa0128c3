package proc

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// userHZ is the unit of utime and stime in /proc/PID/stat.
const userHZ = 100

// CPUTime is the user+system CPU time a process has used so far (pid 0 =
// this process).
func CPUTime(pid int) (time.Duration, error) {
	data, err := os.ReadFile(statPath(pid, "stat"))
	if err != nil {
		return 0, err
	}
	return parseStatCPU(data)
}

func statPath(pid int, file string) string {
	if pid == 0 {
		return "/proc/self/" + file
	}
	return fmt.Sprintf("/proc/%d/%s", pid, file)
}

// parseStatCPU reads utime and stime (fields 14 and 15) of a
// /proc/PID/stat line. The command name (field 2) may hold spaces and
// parentheses, so fields are counted after its last ')'.
func parseStatCPU(data []byte) (time.Duration, error) {
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0, fmt.Errorf("%w: no command name", ErrStat)
	}
	f := strings.Fields(string(data[i+1:]))
	// f[0] is field 3 (state); utime is field 14 -> f[11], stime f[12].
	if len(f) < 13 {
		return 0, fmt.Errorf("%w: %d fields", ErrStat, len(f)+2)
	}
	utime, err1 := strconv.ParseUint(f[11], 10, 64)
	stime, err2 := strconv.ParseUint(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("%w: utime %q stime %q", ErrStat, f[11], f[12])
	}
	return time.Duration(utime+stime) * time.Second / userHZ, nil
}

// RSS is the resident set size of a process in bytes (VmRSS).
func RSS(pid int) (int64, error) {
	data, err := os.ReadFile(statPath(pid, "status"))
	if err != nil {
		return 0, err
	}
	return parseRSS(data)
}

func parseRSS(data []byte) (int64, error) {
	for _, line := range strings.Split(string(data), "\n") {
		rest, ok := strings.CutPrefix(line, "VmRSS:")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			return 0, fmt.Errorf("%w: VmRSS line %q", ErrStat, line)
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%w: VmRSS line %q", ErrStat, line)
		}
		return kb << 10, nil
	}
	return 0, fmt.Errorf("%w: no VmRSS", ErrStat)
}

// DirSize is the total apparent size of the regular files under dir.
func DirSize(dir string) (int64, error) {
	var total int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			info, err := d.Info()
			if err != nil {
				return err
			}
			total += info.Size()
		}
		return nil
	})
	return total, err
}

// PinSelf restricts every thread of this process to cpus. Threads created
// later inherit the mask from the thread that creates them, so calling it
// early (before the program starts work) pins the whole process.
func PinSelf(cpus []int) error {
	var set unix.CPUSet
	for _, c := range cpus {
		set.Set(c)
	}
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return err
	}
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		if err := unix.SchedSetaffinity(tid, &set); err != nil {
			return fmt.Errorf("pin thread %d to %v: %w", tid, cpus, err)
		}
	}
	return nil
}

// CPUList formats cpus for taskset -c ("0,2,3").
func CPUList(cpus []int) string {
	s := make([]string, len(cpus))
	for i, c := range cpus {
		s[i] = strconv.Itoa(c)
	}
	return strings.Join(s, ",")
}

// ParseCPUList parses "0,2,3" or "0-3" style lists.
func ParseCPUList(s string) ([]int, error) {
	var out []int
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil || a < 0 {
			return nil, fmt.Errorf("cpu list %q: bad cpu %q", s, part)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a {
				return nil, fmt.Errorf("cpu list %q: bad range %q", s, part)
			}
		}
		for c := a; c <= b; c++ {
			out = append(out, c)
		}
	}
	return out, nil
}

// CPUBusy is the time cpus have spent busy since boot (user, nice, system,
// irq, softirq and steal of /proc/stat; idle and iowait excluded), by any
// process.
func CPUBusy(cpus []int) (time.Duration, error) {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, err
	}
	return parseCPUBusy(data, cpus)
}

func parseCPUBusy(data []byte, cpus []int) (time.Duration, error) {
	want := map[string]bool{}
	for _, c := range cpus {
		want["cpu"+strconv.Itoa(c)] = true
	}
	var ticks uint64
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) < 9 || !want[f[0]] {
			continue
		}
		delete(want, f[0])
		for i, v := range f[1:9] {
			if i == 3 || i == 4 { // idle, iowait
				continue
			}
			n, err := strconv.ParseUint(v, 10, 64)
			if err != nil {
				return 0, fmt.Errorf("%w: /proc/stat %s", ErrStat, f[0])
			}
			ticks += n
		}
	}
	if len(want) > 0 {
		return 0, fmt.Errorf("%w: /proc/stat has no line for cpus %v", ErrStat, cpus)
	}
	return time.Duration(ticks) * time.Second / userHZ, nil
}
