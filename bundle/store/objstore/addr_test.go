package objstore

import (
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	good := map[string]Addr{
		"s3://bkt":                               {Bucket: "bkt"},
		"s3://bkt/":                              {Bucket: "bkt"},
		"s3://my.bucket-1/a/b/?region=eu-west-1": {Bucket: "my.bucket-1", Prefix: "a/b", Region: "eu-west-1"},
		"s3://bkt/p?endpoint=http://127.0.0.1:9000&use_path_style=true": {Bucket: "bkt", Prefix: "p", Endpoint: "http://127.0.0.1:9000", PathStyle: true},
		"s3://bkt/p?endpoint=https://s3.example.org/":                   {Bucket: "bkt", Prefix: "p", Endpoint: "https://s3.example.org"},
	}
	for s, want := range good {
		a, err := Parse(s)
		if err != nil {
			t.Errorf("Parse(%q): %v", s, err)
			continue
		}
		want.raw = s
		if *a != want {
			t.Errorf("Parse(%q) = %+v, want %+v", s, *a, want)
		}
	}
	bad := map[string]string{
		"s3://":                             "no bucket",
		"s3://Bkt/p":                        "lowercase",
		"s3://bk":                           "3 to 63",
		"s3://bkt:9000/p":                   "endpoint=",
		"s3://-bkt/p":                       "starts and ends",
		"s3://key:secret@bkt/p":             "credentials",
		"s3://bkt/a//b":                     "empty",
		"s3://bkt/a/../b":                   `".."`,
		"s3://bkt/p?endpoint=ftp://h":       "want http(s)",
		"s3://bkt/p?endpoint=http://h/path": "no path",
		"s3://bkt/p?regoin=x":               "unknown parameter \"regoin\"",
		"s3://bkt/p?region=a&region=b":      "2 times",
		"s3://bkt/p?use_path_style=yes":     "want true or false",
		"s3://bkt/p#x":                      "fragment",
		"gs://bkt/p":                        "unknown scheme \"gs\"",
		"s3://bkt/a b":                      "space",
	}
	for s, want := range bad {
		_, err := Parse(s)
		if err == nil {
			t.Errorf("Parse(%q) succeeded", s)
			continue
		}
		if !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "\nhint: ") {
			t.Errorf("Parse(%q): %v\nwant %q and a hint", s, err, want)
		}
	}
	if _, err := Parse("s3://bkt/" + strings.Repeat("a", 600)); err == nil || !strings.Contains(err.Error(), "longer than 512") {
		t.Errorf("long prefix: %v", err)
	}
}

func TestIsObject(t *testing.T) {
	for s, want := range map[string]bool{"s3://b": true, "S3://b": true, "gs://b": true, "/srv/airgap": false, "s3:": false, "./s3:/x": false, "a b://c": false} {
		if IsObject(s) != want {
			t.Errorf("IsObject(%q) = %v", s, !want)
		}
	}
}
