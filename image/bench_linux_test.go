package image

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// benchImage is a few-MB image: two layers of 8 KiB files (half random,
// half text), directories, symlinks, hardlinks and whiteouts.
func benchImage(b *testing.B) (Ref, v1.Image, int64) {
	b.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	mk := func(layer, n int) []ent {
		var es []ent
		for d := range 10 {
			es = append(es, dir(fmt.Sprintf("usr/lib/l%d/d%d/", layer, d)))
		}
		for i := range n {
			body := make([]byte, 8<<10)
			if i%2 == 0 {
				for j := range body {
					body[j] = byte(rng.Uint32())
				}
			} else {
				for j := range body {
					body[j] = "abcdefgh ijklmnop\n"[j%18]
				}
			}
			p := fmt.Sprintf("usr/lib/l%d/d%d/f%d", layer, i%10, i)
			es = append(es, file(p, string(body)))
			if i%20 == 0 {
				es = append(es, symlink(p+".so", fmt.Sprintf("f%d", i)), hardlink(p+".hl", p))
			}
		}
		return es
	}
	l2 := mk(2, 100)
	for i := 0; i < 300; i += 30 {
		l2 = append(l2, file(fmt.Sprintf("usr/lib/l1/d%d/.wh.f%d", i%10, i), ""))
	}
	img := imageOf(b, layerOf(b, mk(1, 300)...), layerOf(b, l2...))
	dir := writeLayout(b, b.TempDir(), img)
	var size int64
	for _, d := range layerDigests(b, img) {
		fi, _ := os.Stat(blobPath(dir, d))
		size += fi.Size()
	}
	return Ref{Path: dir, Digest: digestOf(b, img)}, img, size
}

func BenchmarkVerify(b *testing.B) {
	ref, _, size := benchImage(b)
	b.SetBytes(size)
	for b.Loop() {
		if _, err := Verify(context.Background(), ref); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPrepareCold: resolve, unpack (hashing as it goes), syncfs and
// rename into a fresh cache each time.
func BenchmarkPrepareCold(b *testing.B) {
	ref, _, size := benchImage(b)
	b.SetBytes(size)
	base := b.TempDir()
	i := 0
	for b.Loop() {
		cache := filepath.Join(base, fmt.Sprint(i))
		i++
		if _, err := Prepare(context.Background(), ref, cache, Options{}); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		os.RemoveAll(cache)
		b.StartTimer()
	}
}

// BenchmarkPrepareWarm: the cached path (manifest and config verified,
// marker checked), what every run after the first pays.
func BenchmarkPrepareWarm(b *testing.B) {
	ref, _, _ := benchImage(b)
	cache := b.TempDir()
	if _, err := Prepare(context.Background(), ref, cache, Options{}); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		p, err := Prepare(context.Background(), ref, cache, Options{})
		if err != nil || !p.Cached {
			b.Fatal(err)
		}
	}
}

// BenchmarkPeerGNUTar: the peer, GNU tar extracting the same two gzip
// layers (no digest checks, no whiteouts, path checks of its own).
func BenchmarkPeerGNUTar(b *testing.B) {
	tarBin, err := exec.LookPath("tar")
	if err != nil {
		b.Skip("tar not installed")
	}
	ref, img, size := benchImage(b)
	b.SetBytes(size)
	base := b.TempDir()
	i := 0
	for b.Loop() {
		dst := filepath.Join(base, fmt.Sprint(i))
		i++
		os.Mkdir(dst, 0o700)
		for _, d := range layerDigests(b, img) {
			if out, err := exec.Command(tarBin, "-xzf", blobPath(ref.Path, d), "-C", dst).CombinedOutput(); err != nil {
				b.Fatalf("%v: %s", err, out)
			}
		}
		b.StopTimer()
		os.RemoveAll(dst)
		b.StartTimer()
	}
}

// BenchmarkExtractOnly: the layers streamed, hashed and extracted, without
// the cache's syncfs and rename (the part comparable with the peer).
func BenchmarkExtractOnly(b *testing.B) {
	ref, _, size := benchImage(b)
	v, err := resolve(context.Background(), ref)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(size)
	base := b.TempDir()
	i := 0
	for b.Loop() {
		dst := filepath.Join(base, fmt.Sprint(i))
		i++
		if _, err := extractAll(context.Background(), v, dst, Options{}); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		os.RemoveAll(dst)
		b.StartTimer()
	}
}
