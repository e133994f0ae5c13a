// Command vendorhash prints the vendorHash that nixpkgs' buildGoModule
// expects for this module, computed without Nix; with -w it also writes it
// into modules/package.nix. scripts/vendor-hash [-w] runs it (from
// anywhere inside the module).
//
// buildGoModule fetches dependencies in a separate fixed-output derivation
// (goModules). Its build phase runs `go mod vendor` in the source tree and its
// install phase copies the resulting vendor directory, modules.txt included,
// to $out unchanged. Nix then hashes $out recursively: the SHA-256 of the NAR
// serialisation of the directory, written in SRI form ("sha256-" followed by
// standard base64). Compute repeats those two steps: `go mod vendor -o` into a
// temporary directory, then NARHash over it.
//
// The result depends on go.mod, go.sum and the import lists of every package in
// the module (test files and all build tags included), so it changes whenever a
// dependency is added or dropped. The pinned value lives in modules/package.nix;
// the test here fails when it is stale and names the command that
// fixes it (scripts/vendor-hash -w).
//
// `go mod vendor` needs every vendored module in the module cache. Whatever is
// missing is downloaded from GOPROXY, so the first run on a fresh machine uses
// the network.
package main
