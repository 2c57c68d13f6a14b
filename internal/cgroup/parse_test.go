package cgroup

import (
	"reflect"
	"strconv"
	"strings"
	"testing"
)

const hybridMountInfo = `31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
37 31 0:34 / /sys/fs/cgroup/freezer rw,relatime shared:9 - cgroup cgroup rw,freezer
39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,xattr,name=systemd
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw,nsdelegate
42 31 0:39 /docker/ab /sys/fs/cgroup/with\040space rw - cgroup cgroup rw,cpu,cpuacct
`

func TestParseMountInfo(t *testing.T) {
	got := parseMountInfo(hybridMountInfo)
	want := []mount{
		{root: "/", point: "/sys/fs/cgroup/cpu", ctrls: []string{"cpu"}},
		{root: "/", point: "/sys/fs/cgroup/memory", ctrls: []string{"memory"}},
		{root: "/", point: "/sys/fs/cgroup/freezer", ctrls: []string{"freezer"}},
		{root: "/", point: "/sys/fs/cgroup/pids", ctrls: []string{"pids"}},
		{root: "/", point: "/sys/fs/cgroup/systemd"},
		{root: "/", point: "/sys/fs/cgroup/unified", v2: true, nsdelegate: true},
		{root: "/docker/ab", point: "/sys/fs/cgroup/with space", ctrls: []string{"cpu", "cpuacct"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got  %+v\nwant %+v", got, want)
	}
}

func TestParseProcStat(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want procStat
		ok   bool
	}{
		{"1234 (sleep) S 1 1234 1234 0 -1 4194560 101 0 0 0 0 0 0 0 20 0 1 0 98765 2199552 128 18446744073709551615",
			procStat{comm: "sleep", state: 'S', ppid: 1, pgrp: 1234, session: 1234, flags: 4194560, start: 98765}, true},
		// A command name with spaces and parentheses; a dying process.
		{"7 (a) b) R 3 5 6 0 -1 4194308 0 0 0 0 0 0 0 0 20 0 1 0 42 0",
			procStat{comm: "a) b", state: 'R', ppid: 3, pgrp: 5, session: 6, flags: 4194308, start: 42}, true},
		{"7 (a) R 3 5", procStat{}, false},
		{"", procStat{}, false},
	} {
		got, ok := parseProcStat(tc.in)
		if ok != tc.ok || got != tc.want {
			t.Errorf("parseProcStat(%q) = %+v, %v; want %+v, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
	if !(procStat{state: 'S'}).live() || (procStat{state: 'R', flags: pfExiting}).live() || (procStat{state: 'Z'}).live() {
		t.Error("live: a sleeping process lives, a dying one and a zombie do not")
	}
}

func TestHasCapSysAdmin(t *testing.T) {
	for _, tc := range []struct {
		status string
		want   bool
	}{
		{"Name:\tx\nCapPrm:\t000001ffffffffff\nCapEff:\t000001ffffffffff\n", true},
		{"CapEff:\t0000000000200000\n", true},
		{"CapEff:\t00000000a80425fb\n", false}, // docker's default set
		{"CapEff:\tzz\n", false},
		{"", false},
	} {
		if got := hasCapSysAdmin(tc.status); got != tc.want {
			t.Errorf("hasCapSysAdmin(%q) = %v, want %v", tc.status, got, tc.want)
		}
	}
}

func TestParseProcCgroup(t *testing.T) {
	got := parseProcCgroup("9:name=systemd:/\n8:pids:/a\n4:memory:/process_api/x\n2:cpu,cpuacct:/\n0::/user.slice/u:1\nbad\n3:freezer:relative\n")
	want := []membership{
		{ctrls: []string{"pids"}, path: "/a"},
		{ctrls: []string{"memory"}, path: "/process_api/x"},
		{ctrls: []string{"cpu", "cpuacct"}, path: "/"},
		{v2: true, path: "/user.slice/u:1"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got  %+v\nwant %+v", got, want)
	}
	for _, tc := range []struct{ ctrl, want string }{{"", "/user.slice/u:1"}, {"pids", "/a"}, {"cpuacct", "/"}} {
		if p, ok := pathIn(got, tc.ctrl); !ok || p != tc.want {
			t.Errorf("pathIn(%q) = %q, %v; want %q", tc.ctrl, p, ok, tc.want)
		}
	}
	if _, ok := pathIn(got, "freezer"); ok {
		t.Error("freezer found though its line is malformed")
	}
}

func TestParseSize(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"0", 0, true}, {"4096", 4096, true}, {"512M", 512 << 20, true}, {"4g", 4 << 30, true},
		{"4GiB", 4 << 30, true}, {"2Ki", 2 << 10, true}, {"1T", 1 << 40, true}, {"max", -1, true},
		{"none", -1, true}, {"", 0, false}, {"-1", 0, false}, {"1.5G", 0, false}, {"G", 0, false},
		{"9999999999999T", 0, false}, {"12X", 0, false},
	} {
		got, err := ParseSize(tc.in)
		if (err == nil) != tc.ok || (tc.ok && got != tc.want) {
			t.Errorf("ParseSize(%q) = %d, %v; want %d ok=%v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

func TestSmallParsers(t *testing.T) {
	if n, ok := parseKeyed("populated 1\nfrozen 0\n", "frozen"); !ok || n != 0 {
		t.Errorf("frozen = %d %v", n, ok)
	}
	if _, ok := parseKeyed("populated x", "populated"); ok {
		t.Error("a non-number parsed")
	}
	if got := parsePids("12\n7\n\n-3\nx\n"); !reflect.DeepEqual(got, []int{12, 7}) {
		t.Errorf("pids %v", got)
	}
	if got := parseMemTotal("MemFree: 1 kB\nMemTotal:       24683776 kB\n"); got != 24683776<<10 {
		t.Errorf("MemTotal %d", got)
	}
	for _, bad := range []string{"MemTotal: 12", "MemTotal: x kB", "MemTotal: -5 kB", ""} {
		if got := parseMemTotal(bad); got != 0 {
			t.Errorf("parseMemTotal(%q) = %d", bad, got)
		}
	}
	for _, tc := range []struct {
		rel  string
		want bool
	}{{"6.18.44-fc-v669", true}, {"5.7.0", true}, {"5.6.19-arch", false}, {"4.19", false}, {"5.10rc1", true}, {"x", false}, {"", false}} {
		if got := kernelAtLeast(tc.rel, 5, 7); got != tc.want {
			t.Errorf("kernelAtLeast(%q) = %v", tc.rel, got)
		}
	}
}

// FuzzParseMountInfo: any input parses without panic into mounts whose
// fields are sane.
func FuzzParseMountInfo(f *testing.F) {
	f.Add(hybridMountInfo)
	f.Add("41 31 0:38 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n")
	f.Add("1 2 3 4 5 - cgroup\n\\0")
	f.Fuzz(func(t *testing.T, s string) {
		for _, m := range parseMountInfo(s) {
			if m.v2 && len(m.ctrls) > 0 {
				t.Fatalf("a cgroup2 mount with v1 controllers: %+v", m)
			}
			for _, c := range m.ctrls {
				if c == "" || strings.Contains(c, ",") {
					t.Fatalf("controller %q", c)
				}
			}
		}
	})
}

// FuzzParseProcCgroup: any input parses without panic, every path is absolute.
func FuzzParseProcCgroup(f *testing.F) {
	f.Add("9:name=systemd:/\n8:pids:/\n0::/\n")
	f.Add("0::/a:b\n1:cpu,cpuacct:/x (deleted)\n")
	f.Fuzz(func(t *testing.T, s string) {
		for _, m := range parseProcCgroup(s) {
			if !strings.HasPrefix(m.path, "/") {
				t.Fatalf("path %q", m.path)
			}
			if !m.v2 && len(m.ctrls) == 0 {
				t.Fatalf("a v1 line with no controller: %+v", m)
			}
		}
	})
}

// FuzzParseSize: a size that parses is -1 or non-negative, and what it
// prints back as plain bytes parses to itself.
func FuzzParseSize(f *testing.F) {
	for _, s := range []string{"0", "512M", "4GiB", "max", "1T", "-1", "9223372036854775807"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := ParseSize(s)
		if err != nil {
			return
		}
		if n < -1 {
			t.Fatalf("ParseSize(%q) = %d", s, n)
		}
		if n >= 0 {
			if back, err := ParseSize(strconv.FormatInt(n, 10)); err != nil || back != n {
				t.Fatalf("ParseSize(%q) = %d, but %d reads back as %d, %v", s, n, n, back, err)
			}
		}
	})
}
