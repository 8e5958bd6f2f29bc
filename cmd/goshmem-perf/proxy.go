package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"sort"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/goshmem/goshmem/shmem"
)

// `goshmem-perf proxy`: the CPU-proxy path (docs/proxy.md).
// Run with GOSHMEM_GPU_TRANSPORT=proxy (every peer through the proxy) under
// mpirun -np 2 with MPS when both PEs share a GPU. Rows (PE 0's view):
//   proxy_enqueue   issue cost of one 8 B p (ctx 0: multi-producer; ctx 1: tuned single producer;
//                   producer_ctx1: through goshmemx_proxy_producer_*, head in registers: one
//                   posted 16-byte store)
//   proxy_put_quiet p + ctx_quiet (put + completion)
//   proxy_rtt       p + wait round trip through ctx 1
//   proxy_rate      8 B nbi puts/s from -ctas CTAs on the default context (bw_gbs column: M msg/s)
//   proxy_loaded    round trip on -probe-ctx while -bg CTAs stream puts on the default context
// The worker/ring/batch/protocol settings come from GOSHMEM_PROXY_*; every
// row carries them as its variant (e.g. T1R4B16/tuned).
// `goshmem-perf proxy -plot-rates FILE.jsonl -o OUT.png` plots proxy_rate rows
// against workers T, one line per batch B and rings R.

type proxyOpts struct {
	module             string
	iters, warmup      int
	burst              int
	ctas, perCTA       int
	bg, probeCtx       int
	loadedPlain        bool
	rows               string
	json               bool
	plotRates, plotOut string
}

func runProxy(args []string, stdout, stderr io.Writer) int {
	var o proxyOpts
	fs := flag.NewFlagSet("proxy", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.module, "module", "bin/gpu/proxy.fatbin", "fatbin of bench/proxy/proxy.cu")
	fs.IntVar(&o.iters, "iters", 10000, "timed iterations of the latency rows")
	fs.IntVar(&o.warmup, "warmup", 1000, "untimed iterations first")
	fs.IntVar(&o.burst, "burst", 256, "enqueues between untimed quiets in proxy_enqueue (below GOSHMEM_PROXY_SLOTS)")
	fs.IntVar(&o.ctas, "ctas", 64, "CTAs of proxy_rate")
	fs.IntVar(&o.perCTA, "per-cta", 2000, "puts per CTA of proxy_rate")
	fs.IntVar(&o.bg, "bg", 64, "background CTAs of proxy_loaded")
	fs.IntVar(&o.probeCtx, "probe-ctx", 1, "device context of proxy_loaded's probe (0: shared with the background)")
	fs.BoolVar(&o.loadedPlain, "loaded-plain-launch", false, "diagnostic: launch px_loaded with an ordinary launch instead of a collective (cooperative) one")
	fs.StringVar(&o.rows, "rows", "enqueue,put_quiet,rtt,rate", "comma-separated rows: enqueue put_quiet rtt rate loaded")
	fs.BoolVar(&o.json, "json", false, "JSON lines on stdout")
	fs.StringVar(&o.plotRates, "plot-rates", "", "plot the proxy_rate rows of this JSON-lines `file` (no run)")
	fs.StringVar(&o.plotOut, "o", "proxy_rate.png", "output PNG of -plot-rates")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if o.plotRates != "" {
		if err := plotRates(o.plotRates, o.plotOut); err != nil {
			fmt.Fprintln(stderr, "goshmem-perf proxy:", err)
			return 1
		}
		return 0
	}
	want := map[string]bool{}
	for _, r := range splitComma(o.rows) {
		want[r] = true
	}
	if err := proxyRun(o, want, stdout, stderr); err != nil {
		fmt.Fprintln(stderr, "goshmem-perf proxy:", err)
		return 1
	}
	return 0
}

func splitComma(s string) []string {
	var out []string
	cur := ""
	for _, c := range s + "," {
		if c == ',' {
			if cur != "" {
				out = append(out, cur)
			}
			cur = ""
			continue
		}
		cur += string(c)
	}
	return out
}

func proxyVariant() string {
	get := func(k, def string) string {
		if v := os.Getenv(k); v != "" {
			return v
		}
		return def
	}
	return fmt.Sprintf("T%sR%sB%s/%s", get("GOSHMEM_PROXY_WORKERS", "1"), get("GOSHMEM_PROXY_RINGS", "4"),
		get("GOSHMEM_PROXY_BATCH", "16"), get("GOSHMEM_PROXY_MODE", "tuned"))
}

func proxyRun(o proxyOpts, want map[string]bool, stdout, stderr io.Writer) (err error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := shmem.Init(shmem.WithSymmetricSize(16 << 20)); err != nil {
		return err
	}
	defer func() {
		if ferr := shmem.Finalize(); err == nil {
			err = ferr
		}
	}()
	me, npes := shmem.MyPE(), shmem.NPEs()
	if npes != 2 {
		return fmt.Errorf("run with 2 PEs (mpirun -np 2), not %d", npes)
	}
	peer := 1 - me
	image, err := os.ReadFile(o.module)
	if err != nil {
		return err
	}
	mod, err := shmem.LoadModule(image)
	if err != nil {
		return err
	}
	k := map[string]*shmem.Kernel{}
	for _, n := range []string{"px_enqueue", "px_enqueue_producer", "px_put_quiet", "px_pingpong", "px_rate", "px_loaded"} {
		if k[n], err = mod.Kernel(n); err != nil {
			return err
		}
	}
	flag, _ := shmem.AllocDevice[uint64](64)
	dst, _ := shmem.AllocDevice[byte](1 << 16)
	src, _ := shmem.AllocDevice[byte](64)
	stop, _ := shmem.AllocDevice[int32](16)
	nmeta := max(2*o.ctas, 8, o.bg+1)
	meta, _ := shmem.AllocDevice[uint64](nmeta)
	counts, _ := shmem.AllocDevice[uint64](o.bg + 1)
	samples, err := shmem.AllocDevice[int64](o.iters)
	if err != nil {
		return err
	}
	variant := proxyVariant()
	var out RowWriter = NewTableWriter(stdout)
	if o.json {
		out = JSONWriter{w: stdout}
	}
	if me == 0 && !o.json {
		fmt.Fprintf(stdout, "# goshmem %s, proxy mode (GOSHMEM_GPU_TRANSPORT=%s), %s\n", versionString(), os.Getenv("GOSHMEM_GPU_TRANSPORT"), variant)
	}
	emit := func(r Row) {
		if me != 0 {
			return
		}
		r.Lib, r.Transport, r.Variant, r.Scope = "goshmem", "proxy", variant, "thread"
		out.Write(r)
	}
	one := shmem.LaunchConfig{Grid: shmem.Dim(1), Block: shmem.Dim(1)}
	summary := func(n int) (Summary, float64, error) {
		var m [4]uint64
		if err := shmem.Get(m[:], meta, 0, me); err != nil {
			return Summary{}, 0, err
		}
		host := make([]int64, n)
		if err := shmem.Get(host, samples, 0, me); err != nil {
			return Summary{}, 0, err
		}
		ghz := float64(m[3]-m[2]) / float64(m[1]-m[0])
		if !(ghz > 0) {
			ghz = 1.98
		}
		ns := make([]int64, n)
		for i, c := range host {
			ns[i] = int64(float64(c)/ghz*16 + 0.5)
		}
		s := Summarize(ns)
		s.Median /= 16
		s.P99 /= 16
		return s, ghz, nil
	}
	var base uint64
	// latency rows: PE 0's kernel alone (enqueue, put_quiet), both (rtt)
	if want["enqueue"] {
		for _, e := range []struct {
			kernel, name string
			ctx          int32
		}{
			{"px_enqueue_producer", "proxy_enqueue_producer_ctx1", 1},
			{"px_enqueue", "proxy_enqueue_ctx1", 1},
			{"px_enqueue", "proxy_enqueue_ctx0", 0},
		} {
			if me == 0 {
				if err := shmem.Launch(k[e.kernel], one, dst.DevicePtr(), int32(peer), e.ctx, int32(o.iters), int32(o.warmup), int32(o.burst), samples, meta); err != nil {
					return err
				}
				if err := shmem.Synchronize(); err != nil {
					return err
				}
				s, ghz, err := summary(o.iters)
				if err != nil {
					return err
				}
				emit(Row{Name: e.name, Size: 8, Iters: int64(o.iters), MedianUS: s.Median / 1000, P99US: s.P99 / 1000, Timing: clockTiming(ghz)})
			}
			if err := shmem.BarrierAll(); err != nil {
				return err
			}
		}
	}
	if want["put_quiet"] {
		if me == 0 {
			if err := shmem.Launch(k["px_put_quiet"], one, dst.DevicePtr(), int32(peer), int32(1), int32(o.iters), int32(o.warmup), samples, meta); err != nil {
				return err
			}
			if err := shmem.Synchronize(); err != nil {
				return err
			}
			s, ghz, err := summary(o.iters)
			if err != nil {
				return err
			}
			emit(Row{Name: "proxy_put_quiet", Size: 8, Iters: int64(o.iters), MedianUS: s.Median / 1000, P99US: s.P99 / 1000, Timing: clockTiming(ghz)})
		}
		if err := shmem.BarrierAll(); err != nil {
			return err
		}
	}
	if want["rtt"] {
		if err := shmem.LaunchCollective(k["px_pingpong"], one, flag.DevicePtr(), int32(me), int32(peer), int32(1), base, int32(o.iters), int32(o.warmup), samples, meta); err != nil {
			return err
		}
		if err := shmem.Synchronize(); err != nil {
			return err
		}
		base += uint64(o.iters + o.warmup)
		if me == 0 {
			s, ghz, err := summary(o.iters)
			if err != nil {
				return err
			}
			emit(Row{Name: "proxy_rtt", Size: 8, Iters: int64(o.iters), MedianUS: s.Median / 1000, P99US: s.P99 / 1000, Timing: clockTiming(ghz)})
		}
		if err := shmem.BarrierAll(); err != nil {
			return err
		}
	}
	if want["rate"] {
		cfg := shmem.LaunchConfig{Grid: shmem.Dim(uint32(o.ctas)), Block: shmem.Dim(32)}
		if me == 0 {
			if err := shmem.Launch(k["px_rate"], cfg, dst.DevicePtr(), src.DevicePtr(), int32(peer), int32(o.perCTA), meta); err != nil {
				return err
			}
			if err := shmem.Synchronize(); err != nil {
				return err
			}
			m := make([]uint64, 2*o.ctas)
			if err := shmem.Get(m, meta, 0, me); err != nil {
				return err
			}
			lo, hi := m[0], m[1]
			for b := 0; b < o.ctas; b++ {
				lo, hi = min(lo, m[2*b]), max(hi, m[2*b+1])
			}
			total := float64(o.ctas * o.perCTA)
			us := float64(hi-lo) / 1000
			emit(Row{Name: "proxy_rate", Size: 8, Iters: int64(total), MedianUS: us / total, BWGBs: total / us, // M msg/s
				Timing: fmt.Sprintf("globaltimer, %d CTAs x %d puts; bw_gbs column = M msg/s", o.ctas, o.perCTA)})
		}
		if err := shmem.BarrierAll(); err != nil {
			return err
		}
	}
	if want["loaded"] {
		if err := shmem.Put(stop, 0, []int32{0}, me); err != nil {
			return err
		}
		if err := shmem.BarrierAll(); err != nil {
			return err
		}
		cfg := shmem.LaunchConfig{Grid: shmem.Dim(uint32(o.bg + 1)), Block: shmem.Dim(32)}
		launch := shmem.LaunchCollective
		if o.loadedPlain {
			launch = shmem.Launch
		}
		if err := launch(k["px_loaded"], cfg, flag.DevicePtr(), dst.DevicePtr(), src.DevicePtr(), int32(me), int32(peer),
			int32(o.probeCtx), int32(o.bg), base, int32(o.iters), int32(o.warmup), stop.DevicePtr(), counts, samples, meta); err != nil {
			return err
		}
		if err := shmem.Synchronize(); err != nil {
			return err
		}
		base += uint64(o.iters + o.warmup)
		if me == 0 {
			s, ghz, err := summary(o.iters)
			if err != nil {
				return err
			}
			var m [2]uint64
			if err := shmem.Get(m[:], meta, 0, me); err != nil {
				return err
			}
			c := make([]uint64, o.bg)
			if err := shmem.Get(c, counts, 0, me); err != nil {
				return err
			}
			var puts uint64
			for _, v := range c {
				puts += v
			}
			mmsg := float64(puts) / (float64(m[1]-m[0]) / 1000)
			name := "proxy_loaded_reserved"
			if o.probeCtx == 0 {
				name = "proxy_loaded_shared"
			}
			emit(Row{Name: name, Size: 8, Iters: int64(o.iters), MedianUS: s.Median / 1000, P99US: s.P99 / 1000, BWGBs: mmsg,
				Timing: clockTiming(ghz) + fmt.Sprintf("; %d background CTAs carried %.2f M msg/s (bw_gbs column)", o.bg, mmsg)})
		}
		if err := shmem.BarrierAll(); err != nil {
			return err
		}
	}
	return nil
}

// plotRates plots proxy_rate (M msg/s) against workers T, a line per (R, B).
func plotRates(in, out string) error {
	rows, err := ReadRowsFile(in)
	if err != nil {
		return err
	}
	type key struct{ r, b, mode string }
	series := map[key]plotter.XYs{}
	for _, r := range rows {
		if r.Name != "proxy_rate" {
			continue
		}
		var t, rr, b int
		var mode string
		if _, err := fmt.Sscanf(r.Variant, "T%dR%dB%d/%s", &t, &rr, &b, &mode); err != nil {
			continue
		}
		kk := key{strconv.Itoa(rr), strconv.Itoa(b), mode}
		series[kk] = append(series[kk], plotter.XY{X: float64(t), Y: r.BWGBs})
	}
	if len(series) == 0 {
		return fmt.Errorf("%s: no proxy_rate rows", in)
	}
	p := plot.New()
	p.Title.Text = "goshmem proxy: 8 B message rate vs workers (H200, one node)"
	p.X.Label.Text = "proxy workers T"
	p.Y.Label.Text = "M msg/s"
	keys := make([]key, 0, len(series))
	for kk := range series {
		keys = append(keys, kk)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].r != keys[j].r {
			return keys[i].r < keys[j].r
		}
		return keys[i].b < keys[j].b
	})
	for i, kk := range keys {
		xy := series[kk]
		sort.Slice(xy, func(a, b int) bool { return xy[a].X < xy[b].X })
		l, pts, err := plotter.NewLinePoints(xy)
		if err != nil {
			return err
		}
		l.Color = seriesColor(kk.b, i)
		pts.Color = l.Color
		p.Add(l, pts)
		p.Legend.Add(fmt.Sprintf("R=%s B=%s %s", kk.r, kk.b, kk.mode), l)
	}
	p.Legend.Top = true
	return p.Save(7*vg.Inch, 4.5*vg.Inch, out)
}
