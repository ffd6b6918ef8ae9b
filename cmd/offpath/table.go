package main

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// grid is a plain-text table whose columns are padded to their widest cell:
// text to the left, numbers to the right (text/tabwriter aligns every
// column the same way).
type grid struct {
	right []bool
	rows  [][]string
}

func (g *grid) add(cells ...string) { g.rows = append(g.rows, cells) }

func (g *grid) write(w io.Writer) error {
	widths := make([]int, len(g.right))
	for _, r := range g.rows {
		for i, c := range r {
			widths[i] = max(widths[i], utf8.RuneCountInString(c))
		}
	}
	var b strings.Builder
	for _, r := range g.rows {
		b.Reset()
		for i, c := range r {
			pad := strings.Repeat(" ", widths[i]-utf8.RuneCountInString(c))
			if i > 0 {
				b.WriteString("  ")
			}
			if g.right[i] {
				b.WriteString(pad + c)
			} else {
				b.WriteString(c + pad)
			}
		}
		if _, err := fmt.Fprintln(w, strings.TrimRight(b.String(), " ")); err != nil {
			return err
		}
	}
	return nil
}
