package verify

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Python's json.dumps writes float('nan') and float('inf') as the bare words
// NaN, Infinity and -Infinity. They are not JSON: llama-swap's parser rejects
// the whole body and records no metrics for the request. verify still wants to
// say which field was NaN rather than only "not JSON", so when a strict decode
// fails it retries with those words replaced by marker strings, and the field
// checks report a marker as the value it stands for.

// Markers standing in for the bare words. They contain a NUL, which a real
// JSON string from a server would have to escape, so they cannot clash with
// values a server sends.
const (
	markNaN    = "\x00NaN"
	markPosInf = "\x00Infinity"
	markNegInf = "\x00-Infinity"
)

// decodeJSON decodes data with numbers kept as json.Number. If data is only
// valid once bare NaN/Infinity words are allowed, it returns the value with
// markers in their place and nonStandard set.
func decodeJSON(data []byte) (v any, nonStandard bool, err error) {
	if v, err = decodeStrict(data); err == nil {
		return v, false, nil
	}
	fixed, changed := replaceBareNonFinite(data)
	if !changed {
		return nil, false, err
	}
	if v, err2 := decodeStrict(fixed); err2 == nil {
		return v, true, nil
	}
	return nil, false, err
}

func decodeStrict(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	// Decode stops after one value; anything but trailing space is an error.
	rest := data[dec.InputOffset():]
	if len(bytes.TrimSpace(rest)) != 0 {
		return nil, fmt.Errorf("data after the JSON value")
	}
	return v, nil
}

// replaceBareNonFinite replaces NaN, Infinity and -Infinity outside strings by
// quoted markers.
func replaceBareNonFinite(data []byte) ([]byte, bool) {
	var out bytes.Buffer
	changed := false
	inString, escaped := false, false
	for i := 0; i < len(data); i++ {
		c := data[i]
		if inString {
			out.WriteByte(c)
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		}
		if c == '"' {
			inString = true
			out.WriteByte(c)
			continue
		}
		matched := false
		for _, w := range [...]struct{ word, mark string }{
			{"-Infinity", markNegInf}, {"Infinity", markPosInf}, {"NaN", markNaN},
		} {
			if bytes.HasPrefix(data[i:], []byte(w.word)) {
				b, _ := json.Marshal(w.mark)
				out.Write(b)
				i += len(w.word) - 1
				matched, changed = true, true
				break
			}
		}
		if !matched {
			out.WriteByte(c)
		}
	}
	return out.Bytes(), changed
}
