package main

import (
	"fmt"
	"html"
	"math"
	"strings"
)

// A line chart in SVG, written without a library: the x axis in minutes of the run, bands
// shading the faults, one polyline a series.

// series is one line of a chart.
type series struct {
	name   string
	ys     []float64 // one per x; NaN is a gap
	dashed bool
}

// band shades a span of the x axis.
type band struct {
	from, to float64
	fill     string
}

// mark is a vertical line at one x.
type mark struct {
	at     float64
	stroke string
}

// chart is one SVG file.
type chart struct {
	title, unit string
	xs          []float64 // minutes
	lines       []series
	bands       []band
	marks       []mark
	legend      []string // lines of text under the title, explaining bands and marks
}

var palette = []string{"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22"}

const (
	chartW, chartH                       = 880, 340
	padLeft, padRight, padTop, padBottom = 70, 200, 50, 40
)

// svg renders the chart.
func (c chart) svg() string {
	var b strings.Builder
	plotW, plotH := float64(chartW-padLeft-padRight), float64(chartH-padTop-padBottom)
	xMax := 1.0
	if n := len(c.xs); n > 0 && c.xs[n-1] > 0 {
		xMax = c.xs[n-1]
	}
	yMax := 0.0
	for _, s := range c.lines {
		for _, y := range s.ys {
			if !math.IsNaN(y) && y > yMax {
				yMax = y
			}
		}
	}
	yMax = niceCeil(yMax * 1.05)
	x := func(v float64) float64 { return padLeft + v/xMax*plotW }
	y := func(v float64) float64 { return padTop + plotH - v/yMax*plotH }

	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="11">`+"\n", chartW, chartH, chartW, chartH)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", chartW, chartH)
	fmt.Fprintf(&b, `<text x="%d" y="18" font-size="14" font-weight="bold">%s</text>`+"\n", padLeft, html.EscapeString(c.title))
	for i, l := range c.legend {
		fmt.Fprintf(&b, `<text x="%d" y="%d" fill="#555">%s</text>`+"\n", padLeft, 32+12*i, html.EscapeString(l))
	}
	for _, bd := range c.bands {
		fmt.Fprintf(&b, `<rect x="%.1f" y="%d" width="%.1f" height="%.1f" fill="%s" fill-opacity="0.25"/>`+"\n",
			x(bd.from), padTop, math.Max(x(bd.to)-x(bd.from), 1), plotH, bd.fill)
	}
	for _, m := range c.marks {
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%.1f" stroke="%s" stroke-dasharray="2,3"/>`+"\n",
			x(m.at), padTop, x(m.at), padTop+plotH, m.stroke)
	}
	// Axes and ticks.
	fmt.Fprintf(&b, `<path d="M%d %d V%.1f H%.1f" fill="none" stroke="black"/>`+"\n", padLeft, padTop, padTop+plotH, padLeft+plotW)
	for i := 0; i <= 5; i++ {
		v := yMax * float64(i) / 5
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n", padLeft-6, y(v)+4, short(v))
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", padLeft, y(v), padLeft+plotW, y(v))
	}
	step := niceCeil(xMax / 10)
	for v := 0.0; v <= xMax+1e-9; v += step {
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", x(v), padTop+plotH+14, short(v))
	}
	fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">minutes</text>`+"\n", padLeft+plotW/2, chartH-6)
	fmt.Fprintf(&b, `<text x="14" y="%.1f" text-anchor="middle" transform="rotate(-90 14 %.1f)">%s</text>`+"\n",
		padTop+plotH/2, padTop+plotH/2, html.EscapeString(c.unit))
	for i, s := range c.lines {
		color := palette[i%len(palette)]
		var pts []string
		flush := func() {
			if len(pts) > 0 {
				dash := ""
				if s.dashed {
					dash = ` stroke-dasharray="6,4"`
				}
				fmt.Fprintf(&b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="1.5"%s/>`+"\n", strings.Join(pts, " "), color, dash)
				pts = nil
			}
		}
		for j, v := range s.ys {
			if j >= len(c.xs) || math.IsNaN(v) {
				flush()
				continue
			}
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(c.xs[j]), y(v)))
		}
		flush()
		ly := padTop + 14*i
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="%s" stroke-width="2"/>`+"\n", padLeft+plotW+10, ly, padLeft+plotW+28, ly, color)
		fmt.Fprintf(&b, `<text x="%.1f" y="%d">%s</text>`+"\n", padLeft+plotW+32, ly+4, html.EscapeString(s.name))
	}
	b.WriteString("</svg>\n")
	return b.String()
}

// niceCeil is the smallest of 1, 2 or 5 times a power of ten at or above v (1 for v <= 0).
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

// short writes a tick's value.
func short(v float64) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%gM", math.Round(v/1e5)/10)
	case v >= 1e4:
		return fmt.Sprintf("%gk", math.Round(v/100)/10)
	default:
		return fmt.Sprintf("%g", math.Round(v*100)/100)
	}
}
