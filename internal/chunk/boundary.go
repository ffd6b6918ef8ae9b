package chunk

import (
	"bytes"
	"unicode/utf8"
)

// cutPoint chooses where a chunk of at most maxB bytes of buf ends: after
// the last paragraph break, sentence end, line break or space that leaves
// at least lo bytes, else at the last rune boundary within maxB (or at
// maxB itself if the bytes there are not UTF-8).
func cutPoint(buf []byte, maxB, lo int) int {
	if len(buf) <= maxB {
		return len(buf)
	}
	w := buf[:maxB]
	if i := bytes.LastIndex(w[lo:], []byte("\n\n")); i >= 0 {
		return lo + i + 2
	}
	if i := lastSentenceEnd(w, lo); i > 0 {
		return i
	}
	if i := bytes.LastIndexByte(w[lo:], '\n'); i >= 0 {
		return lo + i + 1
	}
	if i := bytes.LastIndexAny(w[lo:], " \t"); i >= 0 {
		return lo + i + 1
	}
	for cut := maxB; cut > maxB-utf8.UTFMax && cut > 0; cut-- {
		if utf8.RuneStart(buf[cut]) {
			return cut
		}
	}
	return maxB
}

// lastSentenceEnd returns the position after the last ". ", "! ", "? " (or
// the same before a newline), or after an ideographic full stop, at or
// after lo in w; 0 if there is none.
func lastSentenceEnd(w []byte, lo int) int {
	for i := len(w) - 2; i >= lo; i-- {
		switch w[i] {
		case '.', '!', '?':
			if c := w[i+1]; c == ' ' || c == '\n' {
				return i + 2
			}
		case 0x82, 0x81: // "。" is E3 80 82, "！" EF BC 81, "？" EF BC 9F
			if i >= 2 && (w[i-2] == 0xe3 && w[i-1] == 0x80 && w[i] == 0x82 || w[i-2] == 0xef && w[i-1] == 0xbc && w[i] == 0x81) {
				return i + 1
			}
		case 0x9f:
			if i >= 2 && w[i-2] == 0xef && w[i-1] == 0xbc {
				return i + 1
			}
		}
	}
	return 0
}

// overlapStart chooses where the next chunk starts, in [cut-overB, cut]:
// the earliest sentence start in that span, else the earliest word start,
// else the first rune boundary.
func overlapStart(buf []byte, cut, overB int) int {
	lo := max(cut-overB, 0)
	if lo >= cut {
		return cut
	}
	span := buf[lo:cut]
	for i := 0; i+1 < len(span); i++ { // after ". " or a line break
		if (span[i] == '\n' || span[i] == ' ' && i > 0 && (span[i-1] == '.' || span[i-1] == '!' || span[i-1] == '?')) && span[i+1] != ' ' && span[i+1] != '\n' {
			return lo + i + 1
		}
	}
	for i := 0; i+1 < len(span); i++ {
		if (span[i] == ' ' || span[i] == '\t') && span[i+1] != ' ' && span[i+1] != '\t' {
			return lo + i + 1
		}
	}
	if lo > 0 && (buf[lo-1] == ' ' || buf[lo-1] == '\n') {
		return lo
	}
	for i := lo; i < cut && i < lo+utf8.UTFMax; i++ {
		if utf8.RuneStart(buf[i]) {
			return i
		}
	}
	return cut
}
