package simulate

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"

	"golang.org/x/text/encoding/unicode"
	"golang.org/x/text/transform"
)

// MaxFileSize is the largest fleet file (or standard input) read, in bytes as stored. A fleet
// of ten thousand clusters with their inventories stays well below it; anything larger is far
// more likely a wrong file (a disk image, /dev/zero) than a fleet, and is refused before it is
// read in full, so that it cannot exhaust the memory of the machine.
const MaxFileSize = 64 << 20

// maxFileSizeText is MaxFileSize as messages say it.
const maxFileSizeText = "64 MiB"

// readChunk is how much is read and checked at a time: a binary file is refused after its
// first chunk.
const readChunk = 32 << 10

// readText reads a fleet file's text: UTF-8, with or without a byte order mark, or UTF-16 with
// one (as some Windows editors save), returned as UTF-8 without the mark. It refuses input
// larger than MaxFileSize and input that is not text — bytes that are not UTF-8, or control
// characters that neither YAML nor JSON allows — saying where, without repeating the bytes.
func readText(r io.Reader, source string) ([]byte, error) {
	counted := &countingReader{r: io.LimitReader(r, MaxFileSize+1)}
	br := bufio.NewReaderSize(counted, readChunk)
	// A short file yields fewer than 3 bytes and an EOF here, which is not an error.
	bom, _ := br.Peek(3)
	var text io.Reader = br
	encoding := "UTF-8"
	switch {
	case bytes.HasPrefix(bom, []byte{0xEF, 0xBB, 0xBF}):
		_, _ = br.Discard(3)
	case bytes.HasPrefix(bom, []byte{0xFF, 0xFE}):
		encoding = "UTF-16 (little-endian)"
		text = transform.NewReader(br, unicode.UTF16(unicode.LittleEndian, unicode.ExpectBOM).NewDecoder())
	case bytes.HasPrefix(bom, []byte{0xFE, 0xFF}):
		encoding = "UTF-16 (big-endian)"
		text = transform.NewReader(br, unicode.UTF16(unicode.BigEndian, unicode.ExpectBOM).NewDecoder())
	}
	var out bytes.Buffer
	line := 1
	chunk := make([]byte, readChunk)
	for {
		n, err := text.Read(chunk)
		if counted.n > MaxFileSize {
			return nil, fmt.Errorf("%s: larger than %s: a fleet file holds at most %s (is it the file you meant?)", source, maxFileSizeText, maxFileSizeText)
		}
		if n > 0 {
			if bad, at := controlByte(chunk[:n]); at >= 0 {
				lineOf := line + bytes.Count(chunk[:at], []byte{'\n'})
				return nil, fmt.Errorf("%s: is not a YAML or JSON text: line %d holds the control character 0x%02X%s", source, lineOf, bad, hint(out.Len()+at, bad))
			}
			line += bytes.Count(chunk[:n], []byte{'\n'})
			out.Write(chunk[:n])
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: reading %s text: %w", source, encoding, err)
		}
	}
	b := out.Bytes()
	if !utf8.Valid(b) {
		at := invalidUTF8(b)
		return nil, fmt.Errorf("%s: is not a YAML or JSON text: line %d holds bytes that are not UTF-8 (save the file as UTF-8)", source, 1+bytes.Count(b[:at], []byte{'\n'}))
	}
	return b, nil
}

// hint says what a NUL near the start of a file usually means.
func hint(offset int, b byte) string {
	if b == 0 && offset < 2 {
		return " (UTF-16 without a byte order mark, or a binary file? save it as UTF-8)"
	}
	return " (is it a binary file?)"
}

// controlByte returns the first byte of p that YAML and JSON text never holds — a C0 control
// character other than tab, line feed and carriage return, or DEL — and its offset, or -1.
// These bytes are never part of a multi-byte UTF-8 sequence, so a chunk is checked alone.
func controlByte(p []byte) (byte, int) {
	for i, c := range p {
		if (c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7F {
			return c, i
		}
	}
	return 0, -1
}

func invalidUTF8(b []byte) int {
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size == 1 {
			return i
		}
		i += size
	}
	return len(b)
}

// countingReader counts the bytes read through it: the size limit is on the stored file, not
// on its text once decoded.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}
