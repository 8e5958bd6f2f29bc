package main

import (
	"fmt"
	"image/color"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// writeQuietPlot draws ibgda_put_quiet (put + completion, median and p99)
// against the QP count, ctx quiet and PE-wide quiet as two curves, into a
// PNG file.
func writeQuietPlot(path string, rows []Row, subtitle string) error {
	p := plot.New()
	p.Title.Text = "ibgda_put_quiet: 8 B put + quiet vs QPs (soft NIC = emulation)"
	p.X.Label.Text = "configured QPs"
	p.Y.Label.Text = "latency (us)"
	p.Legend.Top, p.Legend.Left = true, true
	p.Add(plotter.NewGrid())
	series := []struct {
		scope, label string
		c            color.Color
	}{
		{"ctx", "ctx quiet (QP 0 only)", color.RGBA{A: 255}},
		{"pe", "PE-wide quiet (every QP)", color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 255}},
	}
	ymax, n := 0.0, 0
	for _, s := range series {
		var med, p99 plotter.XYs
		for _, r := range rows {
			if r.Name != "ibgda_put_quiet" || r.Scope != s.scope {
				continue
			}
			q, err := strconv.Atoi(strings.TrimPrefix(r.Config, "qps="))
			if err != nil {
				continue
			}
			med = append(med, plotter.XY{X: float64(q), Y: r.MedianUS})
			p99 = append(p99, plotter.XY{X: float64(q), Y: r.P99US})
			ymax = max(ymax, r.P99US)
		}
		if len(med) == 0 {
			continue
		}
		for _, xys := range []plotter.XYs{med, p99} {
			slices.SortFunc(xys, func(a, b plotter.XY) int { return int(a.X - b.X) })
		}
		l, pts, err := plotter.NewLinePoints(med)
		if err != nil {
			return fmt.Errorf("plot %s: %v", s.scope, err)
		}
		l.Color, pts.Color, l.Width, pts.Radius = s.c, s.c, vg.Points(2.5), vg.Points(2.5)
		l2, err := plotter.NewLine(p99)
		if err != nil {
			return fmt.Errorf("plot %s: %v", s.scope, err)
		}
		l2.Color, l2.Width, l2.Dashes = s.c, vg.Points(1), []vg.Length{vg.Points(4), vg.Points(3)}
		p.Add(l, pts, l2)
		p.Legend.Add(s.label+" median", l, pts)
		p.Legend.Add(s.label+" p99", l2)
		n++
	}
	if n == 0 {
		p.Title.Text += " (no data)"
		p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = 1, 16, 0, 10
	} else {
		p.Y.Min, p.Y.Max = 0, ymax*1.4
	}
	const w, h = 9 * vg.Inch, 6 * vg.Inch
	img := vgimg.New(w, h)
	dc := draw.New(img)
	if subtitle != "" {
		sty := p.Title.TextStyle
		sty.Font.Size = vg.Points(10)
		sty.XAlign, sty.YAlign = draw.XCenter, draw.YTop
		dc.FillText(sty, vg.Point{X: dc.Center().X, Y: dc.Max.Y - vg.Points(4)}, subtitle)
		dc = draw.Crop(dc, 0, 0, 0, -vg.Points(20))
	}
	p.Draw(dc)
	return savePNG(path, img)
}
