package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"sandbox-executable/supervisor"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden.json from this tree")

// fill sets every field JSON can see in v (exported, not tagged "-") to a
// value that depends only on its kind: "x", 1, 1.5, true, one element per
// slice and map, pointers allocated. The documents built from it then carry
// every field, omitempty ones too, whatever the internal types are called.
func fill(v reflect.Value, depth int) {
	if depth > 12 {
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString("x")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(1)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		v.SetUint(1)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(1.5)
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		fill(p.Elem(), depth+1)
		v.Set(p)
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 1, 1)
		fill(s.Index(0), depth+1)
		v.Set(s)
	case reflect.Array:
		for i := 0; i < v.Len(); i++ {
			fill(v.Index(i), depth+1)
		}
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		k := reflect.New(v.Type().Key()).Elem()
		e := reflect.New(v.Type().Elem()).Elem()
		fill(k, depth+1)
		fill(e, depth+1)
		m.SetMapIndex(k, e)
		v.Set(m)
	case reflect.Struct:
		if v.Type() == reflect.TypeOf(time.Time{}) {
			v.Set(reflect.ValueOf(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)))
			return
		}
		for i := 0; i < v.NumField(); i++ {
			f := v.Type().Field(i)
			if !f.IsExported() || strings.HasPrefix(f.Tag.Get("json"), "-") {
				continue
			}
			fill(v.Field(i), depth+1)
		}
	}
}

func filled[T any]() *T {
	var v T
	fill(reflect.ValueOf(&v).Elem(), 0)
	return &v
}

// explainDoc is what --explain prints for pr (cmd/sandbox-executable).
func explainDoc(pr *supervisor.Prepared) any { return NewExplain(pr) }

// TestDocumentShape pins the JSON of --explain and of the report, every
// field set, byte for byte: the golden files were made from the code before
// report owned these structs (5ec6a07), so a rename of an internal field or
// a change of mapping that alters the public documents fails here.
func TestDocumentShape(t *testing.T) {
	in := Input{ToolVersion: "x", StartedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Program: []string{"x"},
		Explain: NewExplain(filled[supervisor.Prepared]()), Result: *filled[supervisor.Result](), DenialLog: "x", ObservedSeccomp: true}
	in.Result.Err = errors.New("x")
	for _, tc := range []struct {
		name string
		doc  any
	}{
		{"report", Build(in)},
		{"explain", explainDoc(filled[supervisor.Prepared]())},
	} {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		if err := enc.Encode(tc.doc); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		golden := "testdata/" + tc.name + ".golden.json"
		if *update {
			if err := os.WriteFile(golden, b.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(golden)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b.Bytes(), want) {
			t.Errorf("%s: the document differs from %s:\n%s", tc.name, golden, firstDiff(string(want), b.String()))
		}
	}
}

// firstDiff shows the first line where got differs from want.
func firstDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < len(w) || i < len(g); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			return "line " + strconv.Itoa(i+1) + ":\n want " + wl + "\n  got " + gl
		}
	}
	return ""
}
