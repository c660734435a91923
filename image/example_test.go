package image_test

import (
	"context"
	"fmt"
	"log"

	"github.com/airlock-sandbox/airlock/image"
)

func ExampleParseRef() {
	r, err := image.ParseRef("./alpine-oci@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef")
	fmt.Println(r.Path, r.Digest.Hex[:12], err)
	_, err = image.ParseRef("./alpine-oci:latest")
	fmt.Println(err)
	// Output:
	// ./alpine-oci 0123456789ab <nil>
	// image: bad image reference "./alpine-oci:latest": missing digest (want PATH@sha256:<64 hex digits>)
}

func ExamplePrepare() {
	ref, err := image.ParseRef("./alpine-oci@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef")
	if err != nil {
		log.Fatal(err)
	}
	// "" caches under $XDG_CACHE_HOME/airlock/images; the zero Options
	// leave every file owned by the calling user (rootless).
	p, err := image.Prepare(context.Background(), ref, "", image.Options{})
	if err != nil {
		log.Fatal(err) // e.g. image: layer digest mismatch (layer 1 of 2): expected sha256:..., got sha256:...
	}
	fmt.Println(p.Rootfs, p.Digest, p.Config.Config.Entrypoint)
}
