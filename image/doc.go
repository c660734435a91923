// Package image verifies a pinned local container image and unpacks it,
// safely, into a content-addressed cache, for use as a sandbox's read-only
// root (`--image PATH@sha256:DIGEST`).
//
// # What is verified
//
// PATH is an OCI image layout directory, or a tar archive: `docker save`
// output (legacy, or with the OCI index docker 25+ adds) or an OCI archive.
// DIGEST pins, in order of preference:
//
//   - an image manifest: its blob must hash to DIGEST; the config and every
//     layer must match the digest and size the manifest gives them.
//   - an image index: it must hash to DIGEST and hold exactly one manifest
//     for linux/GOARCH, which is then verified as above. The index lists its
//     manifests by digest, so it pins them as firmly; none or several for
//     this platform is an error naming what the index holds.
//   - for a legacy docker-archive (no manifest blob in it), the image ID,
//     the config's digest: the config lists every layer's uncompressed
//     digest (rootfs.diff_ids), and each layer is hashed against it.
//
// index.json and manifest.json are not content-addressed and are never
// trusted: the pinned blob is read by digest. Every mismatch is a
// *MismatchError: "image: layer digest mismatch (layer 1 of 2): expected
// sha256:..., got sha256:...". go-containerregistry provides the formats
// (v1 types, layout, tarball); the hashing is done here, as bytes are read.
//
// # How it is unpacked
//
// Layers are applied in order into a temporary directory inside the cache,
// hashed as they stream (so a blob swapped after Verify is still caught),
// and the directory is renamed into place only when all of them matched.
// Extraction (Linux only; elsewhere it is refused) looks every path up
// from the root's fd with openat2(RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS):
//
//   - names that are absolute or have a ".." component are refused, and so
//     is the whole unpack (*EntryError, fixed Reason* wording);
//   - nothing is written through a symlink: an entry below a symlink is
//     refused; symlinks themselves may point anywhere, since they are only
//     resolved later inside the sandbox's root;
//   - a hardlink must name a file already extracted below the root;
//   - whiteouts (.wh.NAME) and opaque markers (.wh..wh..opq) remove what
//     lower layers made;
//   - device nodes and FIFOs are skipped: the sandbox mounts its own /dev;
//   - setuid/setgid bits are stripped: the sandbox runs with no_new_privs,
//     where they do nothing, and the host cache must hold no setuid file;
//   - extended attributes (file capabilities included) are not applied;
//   - ownership is not applied by default (every file is the unpacking
//     user's; see Ownership), which is also what makes rootless use work;
//   - decompressed bytes, written bytes and entries are capped (Options),
//     so a decompression bomb stops at the cap.
//
// # Trust model of the cache
//
// The cache (DefaultCacheDir, or a directory the caller passes) must be a
// directory owned by the user and writable by no one else; it is created
// 0700 and checked on each use. A cached entry is reused after a cheap
// check: the manifest and config are verified against the pin on every run
// and the entry's marker must name the same image. The cached files are
// not re-hashed: whoever can write the cache can already run code as this
// user, so the cache is inside that user's trust boundary. Options.Reverify
// removes that assumption for one run: it unpacks the image afresh from
// the verified blobs and compares the cached tree with it, failing with
// ErrCacheTampered on any difference.
package image
