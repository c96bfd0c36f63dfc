package ui

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
)

const (
	lagSamplesMax = 120  // samples kept per (user, group)
	lagGroupsMax  = 1000 // (user, group) rings kept
	// lagSampleGap is the least time between two samples of one ring: a
	// page and its refresh arriving together add one sample, not two.
	lagSampleGap = 500 * time.Millisecond
)

type lagSample struct {
	at  time.Time
	lag int64
}

// lagRings keeps recent total-lag samples per (user, group). Keyed by
// user because what a user sees of a group's lag depends on its ACLs.
type lagRings struct {
	mu       sync.Mutex
	max, cap int
	rings    map[string][]lagSample
	order    []string // keys, oldest first, for eviction
}

func newLagRings(samplesMax, groupsMax int) *lagRings {
	return &lagRings{max: samplesMax, cap: groupsMax, rings: map[string][]lagSample{}}
}

func lagKey(user, group string) string { return user + "\x00" + group }

// add records a sample and returns a copy of the ring.
func (l *lagRings) add(user, group string, at time.Time, lag int64) []lagSample {
	k := lagKey(user, group)
	l.mu.Lock()
	defer l.mu.Unlock()
	ring, ok := l.rings[k]
	if !ok {
		if len(l.order) >= l.cap {
			delete(l.rings, l.order[0])
			l.order = l.order[1:]
		}
		l.order = append(l.order, k)
	}
	if n := len(ring); n > 0 && at.Sub(ring[n-1].at) < lagSampleGap {
		ring[n-1].lag = lag
	} else {
		ring = append(ring, lagSample{at: at, lag: lag})
	}
	if len(ring) > l.max {
		ring = append([]lagSample(nil), ring[len(ring)-l.max:]...)
	}
	l.rings[k] = ring
	return append([]lagSample(nil), ring...)
}

func (l *lagRings) get(user, group string) []lagSample {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]lagSample(nil), l.rings[lagKey(user, group)]...)
}

// chart is an inline SVG line chart of total lag over time.
type chart struct {
	Width, Height int
	Points        string // polyline points
	Dots          []chartDot
	MaxLabel      string
	FromLabel     string
	ToLabel       string
	Summary       string // the chart in words, for screen readers
	Samples       int
}

type chartDot struct {
	X, Y  int
	Title string
}

const (
	chartW, chartH = 600, 180
	chartPadL      = 48
	chartPadR      = 12
	chartPadT      = 12
	chartPadB      = 24
)

// lagChart lays out samples: x by time, y by lag from 0 to the maximum.
func lagChart(samples []lagSample) chart {
	c := chart{Width: chartW, Height: chartH, Samples: len(samples)}
	if len(samples) == 0 {
		c.Summary = "no samples yet"
		return c
	}
	var maxLag int64 = 1
	for _, s := range samples {
		maxLag = max(maxLag, s.lag)
	}
	t0, t1 := samples[0].at, samples[len(samples)-1].at
	span := t1.Sub(t0)
	plotW, plotH := chartW-chartPadL-chartPadR, chartH-chartPadT-chartPadB
	var pts []string
	for i, s := range samples {
		x := chartPadL
		if span > 0 {
			x += int(int64(plotW) * int64(s.at.Sub(t0)) / int64(span))
		} else if len(samples) > 1 {
			x += plotW * i / (len(samples) - 1)
		}
		y := chartPadT + plotH - int(int64(plotH)*max(s.lag, 0)/maxLag)
		pts = append(pts, strconv.Itoa(x)+","+strconv.Itoa(y))
		c.Dots = append(c.Dots, chartDot{X: x, Y: y, Title: fmt.Sprintf("%s: lag %d", s.at.UTC().Format("15:04:05"), s.lag)})
	}
	c.Points = strings.Join(pts, " ")
	c.MaxLabel = strconv.FormatInt(maxLag, 10)
	c.FromLabel, c.ToLabel = t0.UTC().Format("15:04:05"), t1.UTC().Format("15:04:05")
	first, last := samples[0].lag, samples[len(samples)-1].lag
	c.Summary = fmt.Sprintf("%d samples from %s to %s UTC; total lag went from %d to %d (peak %d)",
		len(samples), c.FromLabel, c.ToLabel, first, last, maxLag)
	return c
}
