package main

import (
	"fmt"
	"image/color"
	"math"
	"os"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// panel is one chart of the plot: a row name against size.
type panel struct {
	name   string
	title  string
	ylabel string
	logY   bool
	y      func(Row) float64
}

var panels = []panel{
	{name: "put_lat", title: "put_lat: Put + Quiet (median)", ylabel: "latency (us)", logY: true,
		y: func(r Row) float64 { return r.MedianUS }},
	{name: "get_lat", title: "get_lat: Get (median)", ylabel: "latency (us)", logY: true,
		y: func(r Row) float64 { return r.MedianUS }},
	{name: "put_bw", title: "put_bw: 64 PutNBI + Quiet", ylabel: "bandwidth (GB/s)", logY: false,
		y: func(r Row) float64 { return r.BWGBs }},
}

// seriesColor gives goshmem black and the peers fixed colors, so plots of
// different runs read the same way.
func seriesColor(s string, i int) color.Color {
	switch s {
	case "goshmem":
		return color.RGBA{A: 255}
	case "openshmem/heap":
		return color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 255}
	case "openshmem/data":
		return color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 255}
	case "floor":
		return color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 255}
	}
	others := []color.RGBA{{R: 0xff, G: 0x7f, A: 255}, {R: 0x94, G: 0x67, B: 0xbd, A: 255}, {R: 0x8c, G: 0x56, B: 0x4b, A: 255}}
	return others[i%len(others)]
}

// sizeTicks marks powers of two, labelling every third (8, 64, 512, 4K...).
type sizeTicks struct{}

func (sizeTicks) Ticks(lo, hi float64) []plot.Tick {
	var ts []plot.Tick
	for e := math.Floor(math.Log2(lo)); math.Pow(2, e) <= hi*1.0001; e++ {
		v := math.Pow(2, e)
		if v < lo*0.9999 {
			continue
		}
		label := ""
		if int(e)%3 == 0 {
			label = fmtSize(int64(v))
		}
		ts = append(ts, plot.Tick{Value: v, Label: label})
	}
	return ts
}

// points returns (size, y) of the rows of one name, sorted by size,
// skipping non-positive values (a log axis cannot show them).
func points(rows []Row, name string, y func(Row) float64) plotter.XYs {
	var xys plotter.XYs
	for _, r := range rows {
		// Latency panels show thread scope (device rows also have warp and block).
		if name != "put_bw" && r.Scope != "" && r.Scope != "thread" {
			continue
		}
		if r.Name == name && r.Size > 0 && y(r) > 0 {
			xys = append(xys, plotter.XY{X: float64(r.Size), Y: y(r)})
		}
	}
	slices.SortFunc(xys, func(a, b plotter.XY) int { return int(a.X - b.X) })
	return xys
}

// WritePlot draws put_lat, get_lat (log-log) and put_bw (log-linear) side
// by side, goshmem and every peer series overlaid, into a PNG file.
func WritePlot(path string, d Dataset, subtitle string) error {
	series := append([]string{"goshmem"}, d.PeerOrder...)
	rowsOf := func(s string) []Row {
		if s == "goshmem" {
			return d.Ours
		}
		return d.Peers[s]
	}
	var plots []*plot.Plot
	for _, pn := range panels {
		p := plot.New()
		p.Title.Text = pn.title
		p.X.Label.Text = "size (B)"
		p.Y.Label.Text = pn.ylabel
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = sizeTicks{}
		if pn.logY {
			p.Y.Scale = plot.LogScale{}
			p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
		}
		p.Legend.Top = true
		p.Legend.Left = pn.logY
		p.Add(plotter.NewGrid())
		n, ymax := 0, 0.0
		for i, s := range series {
			xys := points(rowsOf(s), pn.name, pn.y)
			if len(xys) == 0 {
				continue
			}
			line, pts, err := plotter.NewLinePoints(xys)
			if err != nil {
				return fmt.Errorf("plot %s %s: %v", pn.name, s, err)
			}
			c := seriesColor(s, i)
			line.Color, pts.Color = c, c
			line.Width = vg.Points(1.5)
			pts.Radius = vg.Points(2)
			if s != "goshmem" {
				line.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
			} else {
				line.Width = vg.Points(2.5)
			}
			p.Add(line, pts)
			p.Legend.Add(s, line, pts)
			n++
			for _, xy := range xys {
				ymax = max(ymax, xy.Y)
			}
		}
		// Head room for the legend above the curves.
		if pn.logY {
			p.Y.Max = ymax * 8
		} else {
			p.Y.Min, p.Y.Max = 0, ymax*1.35
		}
		if n == 0 {
			p.Title.Text += " (no data)"
			// An empty log axis cannot be drawn: give it a range.
			p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = 8, 4<<20, 0.01, 100
		}
		plots = append(plots, p)
	}
	return writePanels(path, subtitle, plots, 18*vg.Inch)
}

// writePanels draws plots side by side, w wide and 6 inches high, under an
// optional one-line subtitle, into the PNG file path.
func writePanels(path, subtitle string, plots []*plot.Plot, w vg.Length) error {
	const h = 6 * vg.Inch
	img := vgimg.New(w, h)
	dc := draw.New(img)
	if subtitle != "" { // one line over the whole figure
		sty := plots[0].Title.TextStyle
		sty.Font.Size = vg.Points(11)
		sty.XAlign, sty.YAlign = draw.XCenter, draw.YTop
		dc.FillText(sty, vg.Point{X: dc.Center().X, Y: dc.Max.Y - vg.Points(4)}, subtitle)
		dc = draw.Crop(dc, 0, 0, 0, -vg.Points(22))
	}
	t := draw.Tiles{Rows: 1, Cols: len(plots), PadX: vg.Inch / 4, PadY: vg.Inch / 8,
		PadTop: vg.Inch / 8, PadBottom: vg.Inch / 8, PadLeft: vg.Inch / 8, PadRight: vg.Inch / 4}
	canvases := plot.Align([][]*plot.Plot{plots}, t, dc)
	for i, p := range plots {
		p.Draw(canvases[0][i])
	}
	return savePNG(path, img)
}

// savePNG writes img to the file path as PNG.
func savePNG(path string, img *vgimg.Canvas) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return fmt.Errorf("plot %s: %v", path, err)
	}
	return f.Close()
}
